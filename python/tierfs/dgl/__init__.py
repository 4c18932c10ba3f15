"""DGL integration of tierfs: features and sampled blocks served from a tierfs Store.

Two DGL APIs are covered.

GraphBolt (``dgl.graphbolt``)
    :class:`Feature` is a ``gb.Feature`` reading one column of a store (the node features, or the
    labels); :class:`FeatureStore` is a ``gb.BasicFeatureStore`` holding
    ``("node", None, "feat")`` and, when the dataset has labels, ``("node", None, "label")``. Hand
    it to ``gb.FeatureFetcher`` / ``datapipe.fetch_feature(store, node_feature_keys=["feat"])``.
    ``Feature.read_async`` / ``read_async_num_stages`` follow the staged protocol of GraphBolt 2.4's
    ``FeatureFetcher`` (the read runs on a worker thread, overlapped with the rest of the
    pipeline); older GraphBolt versions simply call ``read``. :class:`Dataset` is GraphBolt's
    ``Dataset`` over a tierfs dataset (what ``gb.OnDiskDataset(...).load()`` gives): ``feature``,
    ``graph``, ``all_nodes_set`` and ``tasks`` — a node classification task of the stored node
    splits (``seed_nodes`` / ``labels``) and a link prediction task of the stored edge splits
    (``node_pairs`` / ``labels`` / ``negative_dsts``): item sets named as GraphBolt 2.1's
    ``OnDiskDataset`` names them (``tierfs.from_graphbolt`` stores a GraphBolt task's sets there).

Classic (``dgl.dataloading``)
    :class:`NeighborSampler` is a ``dgl.dataloading.BlockSampler`` that samples with tierfs (so the
    topology may stay on disk) and returns ``(input_nodes, output_nodes, blocks)`` like
    ``dgl.dataloading.NeighborSampler``; :class:`FeatureStorage` is a ``dgl.storages.FeatureStorage``
    (``fetch(indices, device, pin_memory=False)``); :class:`GraphStorage` stands for the graph in
    ``dgl.dataloading.DataLoader`` so that it prefetches features and labels from the store, and
    :class:`DataLoader` is a small self-contained batch iterator that samples and gathers the next
    batch on a background thread while the current one trains.

Heterogeneous graphs (several node or edge types, ``store.is_hetero``)
    :class:`FeatureStore` keys every column as GraphBolt does: ``("node", ntype, name)`` for each
    node type's features and labels, ``("edge", "src:rel:dst", name)`` for edge features (by
    edge id). :class:`NeighborSampler` takes DGL's per-layer fanouts (an int, or a dict over
    every edge type) and seeds ``{ntype: ids}`` of one node type, and returns heterogeneous
    blocks (:func:`sample_to_blocks` of a typed sample: ``dgl.NID`` per node type, ``dgl.EID`` per edge
    type, laid out as ``dgl.to_block`` lays out the sampled frontier); :class:`DataLoader`
    takes ``{ntype: ids or split}`` and fills each type's default feature and the seeds'
    labels.

Link prediction (homogeneous stores; docs/dgl-link.md)
    :func:`as_edge_prediction_sampler` is DGL's, for a tierfs :class:`NeighborSampler`: it
    returns an :class:`EdgePredictionSampler`, which samples in tierfs's core (no graph in
    memory) and returns DGL's ``(input_nodes, pair_graph, neg_graph, blocks)`` for seed edges
    given as pairs, an ``(n, 2)`` tensor (GraphBolt's ``seeds``) or edge ids of a DGLGraph;
    negatives are DGL's ``Uniform(k)``, ``exclude`` is ``"self"`` or ``"reverse_id"`` (by pair,
    after the draw). :class:`LinkDataLoader` batches seed pairs and gathers their features;
    :meth:`EdgePredictionSampler.sample_minibatch` is a GraphBolt stage filling a ``gb.MiniBatch``
    of ``seeds`` (+ ``labels``) as GraphBolt's negative sampler, neighbor sampler and
    ``exclude_seed_edges`` do. :class:`NeighborSampler` also works inside DGL's own
    ``dgl.dataloading.as_edge_prediction_sampler`` over an in-memory graph
    (:func:`dgl_graph`): it drops the ``exclude_eids`` DGL hands it from every block.

Whole topology, for graphs that fit in memory: :func:`sampling_graph` (GraphBolt's
``FusedCSCSamplingGraph``, to use GraphBolt's own samplers with tierfs features) and
:func:`dgl_graph`.

Sampling semantics. ``fanouts`` follow DGL's order: ``fanouts[i]`` is for GNN layer ``i`` (input
layer first), so ``fanouts[-1]`` is applied to the seeds; tierfs itself is handed the reversed
list. tierfs samples each node once, at the hop where it is first reached (the seeds at hop 0),
and numbers the nodes seeds first, then the nodes each hop reached, so the nodes of hops 0..h are
a prefix of the sample's nodes. The block of layer ``i`` (``h = L-1-i``) has the nodes of hops
0..h as dst nodes and those of hops 0..h+1 as src nodes (dst nodes are a prefix of src nodes, as
DGL requires). With ``cumulative=True`` (the default) its edges are those sampled at hops 0..h: a
node keeps the neighbors it was sampled with in every layer, as PyG's NeighborLoader computes over
one sampled subgraph. With ``cumulative=False`` a block holds only the edges of its own hop, so
dst nodes reached before hop h have no in-edges there. Unlike ``dgl.dataloading.NeighborSampler``,
a node's neighbors are not drawn again for each layer.

Edge ids. Each block's ``edata[dgl.EID]`` holds its edges' positions in the input the dataset
was ingested from (the edge list of each edge type, as DGL numbers the edges of
``dgl.graph((src, dst))`` of it), the ``e_id`` :mod:`tierfs.pyg` batches carry; ``exclude_eids``,
:func:`dgl_graph`'s edges, the ``ORIGINAL_EDGE_ID`` of :func:`sampling_graph` and the edge
features of :class:`FeatureStore` use the same numbering. tierfs's own edge ids (positions in the
CSC it builds: ``store.csc()``'s order, ``Sample.e_id``, the rows of ``store.gather(ids,
feature=<edge feature>)``) stay reachable: :func:`csc_edge_ids` maps DGL's ids to them,
:func:`dgl_edge_ids` back, and ``sample_to_blocks(sample)`` without ``store`` keeps them. Where
no numbering follows the input — an undirected ingest (both directions of input edge i stored
under i), dropped self loops — DGL's ids are tierfs's CSC positions, consistently everywhere;
where the input order is unknown (``dedup``, synthetic graphs) or already by destination the two
are the same.

Processes: the tierfs library runs a Go runtime, which does not survive ``fork``. Worker
processes of ``dgl.dataloading.DataLoader`` / ``torch.utils.data.DataLoader`` must be started with
``multiprocessing_context="spawn"`` (the sampler pickles; each worker reopens the dataset) or not
at all (``num_workers=0``); a forked worker raises ``tierfs.ForkedProcessError``. GraphBolt's
``gb.DataLoader`` runs the feature fetcher in the main process, so tierfs features work with any
``num_workers`` there as long as the sampling stages do not call tierfs.

Tested with DGL 2.1.0 (the newest DGL wheel PyPI has for Linux) and torch 2.2.1.
"""

from __future__ import annotations

from ._common import ReadOnlyError, dgl_edge_ids, csc_edge_ids, FEATURE, LABEL
from .graphbolt import Feature, FeatureStore, Dataset, Task, sampling_graph
from .graph import FeatureStorage, GraphStorage, dgl_graph
from .blocks import sample_to_blocks
from .loader import NeighborSampler, DataLoader, EdgePredictionSampler, as_edge_prediction_sampler, LinkDataLoader

__all__ = [
    "Feature",
    "FeatureStore",
    "FeatureStorage",
    "GraphStorage",
    "NeighborSampler",
    "DataLoader",
    "EdgePredictionSampler",
    "as_edge_prediction_sampler",
    "LinkDataLoader",
    "Dataset",
    "Task",
    "ReadOnlyError",
    "sample_to_blocks",
    "sampling_graph",
    "dgl_graph",
    "dgl_edge_ids",
    "csc_edge_ids",
    "FEATURE",
    "LABEL",
]
