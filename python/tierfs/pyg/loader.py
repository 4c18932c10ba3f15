"""PyG's loaders over tierfs: ``NeighborLoader`` (node batches on tierfs's pipeline) and
``LinkNeighborLoader`` (PyG's ``LinkLoader`` with tierfs's sampler and planned epochs)."""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData
from torch_geometric.loader import LinkLoader as _PyGLinkLoader
from torch_geometric.sampler import HeteroSamplerOutput, NegativeSampling, SamplerOutput

from .. import _options, errors
from ..loader import Batch, Loader
from ..pipeline import Pipeline, pipeline_stats
from ..planrounds import PlanRounds, per_plan_budget
from ..sampler import typed_csc
from ..hetero import edge_type_tuple
from ..store import Store
from ..frompyg import graph_attrs as _graph_attrs
from ..edgeids import INPUT_EDGE_ID, input_edge_ids
from .stores import EDGE_TYPE, FeatureStore, GraphStore, _PlannedFeatureStore, _unwrap, with_row_shape
from .sampler import NeighborSampler, _PYG_ONLY, _hetero_input_nodes, _input_nodes, _link_sample_to_torch, num_neighbors_of
from .loaderargs import _LINK_TAKES, _PYG_NAMES, _PYG_OWN, _as_is, _check_time, _link_input, _loader_options, _pin_memory, _pinned, _refuse_pyg_only
from .subgraph import BIDIRECTIONAL, DIRECTIONAL, INDUCED, InducedEdges, bidirectional_edges, bidirectional_typed, subgraph_type_of


def _tables(store: Store, data: Any, embeddings: Optional[Dict[Any, Any]], loader: str) -> Dict[Any, Any]:
    """A loader's tables: ``embeddings=``, and those of a :func:`stores` FeatureStore given as
    ``data``, checked (``tierfs.embedding.loader_tables``)."""
    given = dict(getattr(data[0], "embeddings", None) or {}) if isinstance(data, tuple) else {}
    given.update(embeddings or {})
    if not given:
        return {}
    from ..embedding import loader_tables

    return loader_tables(store, given, f"tierfs.pyg.{loader}")


def _nodes(data: Any, t: Any) -> Any:
    """The batch's nodes of type ``t`` (None: a Data's)."""
    if t is None:
        return data.n_id
    return data[t].n_id if t in data.node_types and "n_id" in data[t] else None  # data[t] would add the type


def _with_rows(tables: Dict[Any, Any], data: Any, device: Any, transform: Any) -> Any:
    """``data`` with the tables' rows of its nodes as ``x`` of their type, gathered now (the
    caller's thread, as the batch is handed over: after every step taken on earlier batches),
    then ``transform``."""
    from ..embedding import rows_of

    for t, rows in rows_of(tables, lambda t: _nodes(data, t), device).items():
        if t is None:
            data.x = rows
        else:
            data[t].x = rows
    return data if transform is None else transform(data)


def _warm(tables: Dict[Any, Any], data: Any) -> Any:
    """Reads the batch's table rows on the pipeline thread, so their pages are cached when the
    batch is handed over; returns ``data``."""
    from ..embedding import warm

    warm(tables, lambda t: _nodes(data, t))
    return data


class NeighborLoader:
    """PyG's ``NeighborLoader`` over a tierfs dataset, on tierfs's pipelined loader.

    A heterogeneous dataset takes ``num_neighbors`` per edge type (a dict or PyG's
    ``NumNeighbors``) and ``input_nodes=(node type, ids | bool mask | split name | None)`` and
    yields ``HeteroData`` laid out as PyG's ``NodeLoader`` over :func:`stores` with this module's
    :class:`NeighborSampler` lays it out: per node type its default feature (through its tiers,
    under its own name, ``x`` for ``from_pyg``'s ``data[t].x``), its other features, ``y`` where it has labels, ``n_id``, ``num_sampled_nodes``; per
    edge type ``edge_index``, ``e_id``, ``num_sampled_edges`` and its edge features by
    ``e_id``; ``input_id`` and ``batch_size`` on the seeds' type. With ``planned_epochs`` the
    plan packs every node type with features (docs/planned.md, "Several node types").

    Takes PyG's arguments that apply — ``num_neighbors``, ``input_nodes`` (None for every node, a
    split name such as ``"train"`` or ``"valid"``, a bool mask, or ids as numpy, torch or a
    list), ``replace``, ``transform``, ``batch_size``, ``shuffle``, ``drop_last`` — and yields the
    ``Data`` that PyG's ``NodeLoader`` over :func:`stores` with this module's
    :class:`NeighborSampler` gives: the store's feature under its own name (``x`` for
    ``from_pyg``'s ``data.x``; 1-D where it is one value a node), ``y`` (every sampled node's
    label), ``edge_index``,
    ``n_id``, ``e_id`` (the sampled edges' positions in the ingested ``edge_index``, as PyG's
    in-memory loaders give them; :func:`csc_edge_ids` maps them to tierfs's edge ids, the CSC
    positions of :meth:`tierfs.Store.csc`, and :class:`tierfs.Sampler` samples carry those),
    ``num_sampled_nodes``, ``num_sampled_edges``, ``input_id``, ``batch_size``, and the dataset's
    other features by name: node features by ``n_id``, edge features (``edge_attr``,
    ``edge_weight``, ...) by ``e_id``, each read from disk with one gather a batch (only the
    store's own feature, ``x``, is cached in tiers). With ``shuffle=False`` and the same sampler
    ``seed`` the batches equal PyG's NodeLoader's, field for field.

    Batches come from a :class:`tierfs.Loader`: sampled ahead, ``prefetch`` gathers in flight,
    ``Data`` (and ``transform``) made on the pipeline's threads; :meth:`stats` says which stage
    bounds the epoch. With ``shuffle=True`` each epoch's order comes from ``shuffle_seed`` and the
    epoch; ``planned_epochs=K`` serves planned epochs, the next K planned while the current K
    train (``reuse_samples=True``: K planned once and replayed; docs/planned.md).

    ``num_workers=N`` starts no process (the library's Go runtime must not fork): N of the
    pipeline's threads make the batches a worker would (``prefetch=N`` unless ``prefetch`` is
    given), the batches those of ``num_workers=0``; ``persistent_workers`` and
    ``multiprocessing_context`` change nothing. DataLoader's ``prefetch_factor=F`` keeps
    ``max(N, 1) * F`` batches in flight (``prefetch``, unless given) and ``pin_memory=True``
    pins each batch's tensors after ``transform`` (on the host with CUDA present; a store on a
    GPU makes its batches there). ``weight_attr`` draws neighbors in proportion
    to an edge feature, as pyg-lib does (:meth:`tierfs.Store.sampler`'s ``weight``; not with
    ``planned_epochs``). ``disjoint=True`` gives every seed its own tree, as PyG's (a node
    reached from two seeds is a node of each; ``batch`` holds each node's seed index, per node
    type in ``HeteroData``): not with ``planned_epochs``. ``time_attr`` samples in time as PyG's
    (pyg-lib's rule; :meth:`tierfs.Store.sampler`'s ``time``): a node feature is node-level
    time, an edge feature edge-level time; each seed's tree takes only neighbors of time at most
    the seed's — ``input_time`` (one integer a seed, as ``input_nodes`` resolves; an edge-level
    time needs it), else the seed's own node time — ``temporal_strategy="uniform"`` among them or
    the ``"last"`` ones; batches are disjoint (``batch``) and carry ``seed_time`` where
    ``input_time`` is given (on the seeds' type in ``HeteroData``), as PyG's. Not with
    ``planned_epochs`` or ``weight_attr``. ``subgraph_type="bidirectional"``
    (or PyG's ``SubgraphType``) gives every sampled edge with its reverse, as PyG's
    (:mod:`tierfs.pyg.subgraph`: no per-hop counts; on a heterogeneous dataset no ``e_id`` or
    edge features on the edge types made bidirectional); ``"induced"`` every graph edge among
    the sampled nodes, as torch-sparse's (no per-hop counts; not with ``disjoint``).
    PyG arguments that do not apply raise
    :class:`tierfs.NotSupportedError` unless they have their default value
    (``filter_per_worker`` any). As
    PyG's ``NodeLoader``, ``loader(index)`` is the batch of the input nodes at positions
    ``index``. ``input_id`` holds the seeds' positions in given ids, or their node ids for a mask
    or split name, as PyG's. Graph-level attributes of the ``Data`` that :func:`tierfs.from_pyg`
    wrote the dataset from in this process (``data.some_scalar``, a graph-level tensor) are on
    every batch, as PyG's in-memory loaders put them; the dataset format does not store them, so
    a dataset opened from disk in another process (or written otherwise) yields batches without
    them.

    ``embeddings={node type: tierfs.Embedding}`` (``None`` for a one-type store), or a
    :func:`stores` FeatureStore with embeddings given as ``data``: each batch's ``x`` of those
    featureless types is the table's rows of its ``n_id``, with autograd, gathered as the batch
    is handed over (after every step taken on earlier batches: exact however far ahead the
    pipeline runs), then ``transform`` (:class:`tierfs.Loader`, docs/embedding.md).

    Args:
        data: a :class:`tierfs.Store`, or the ``(FeatureStore, GraphStore)`` of :func:`stores`.
        num_neighbors: neighbors per node per hop; -1 takes all. A dict per edge type (or
            ``NumNeighbors``) for a heterogeneous dataset.
        seed: the sampler's seed (batch i samples with ``seed + i``).
        batch_size, shuffle, drop_last, transform: PyG's, at PyG's defaults.

    The loader options, keywords as :class:`tierfs.Loader`'s (``shuffle_seed`` is its ``seed``):

        {loader_options}
    """

    def __init__(
        self,
        data: Any,
        num_neighbors: Any,
        input_nodes: Any = None,
        replace: bool = False,
        transform: Any = None,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        weight_attr: Optional[str] = None,
        disjoint: bool = False,
        time_attr: Optional[str] = None,
        temporal_strategy: str = "uniform",
        input_time: Any = None,
        embeddings: Optional[Dict[Any, Any]] = None,
        subgraph_type: Any = DIRECTIONAL,
        **kwargs: Any,
    ) -> None:
        self.subgraph_type = subgraph_type_of(subgraph_type, "tierfs.pyg.NeighborLoader", disjoint)
        self._bidirectional = self.subgraph_type == BIDIRECTIONAL
        options = _loader_options("NeighborLoader", kwargs, shuffle=shuffle, drop_last=drop_last)
        _check_time("NeighborLoader", data, time_attr, temporal_strategy, input_time, options["planned_epochs"])
        self.time_attr, self.temporal_strategy, self.input_time = time_attr, temporal_strategy, None
        if weight_attr is not None and options["planned_epochs"]:
            raise errors.NotSupportedError("tierfs.pyg.NeighborLoader: weight_attr with planned_epochs: planned epochs sample uniformly; leave one out")
        if disjoint and options["planned_epochs"]:
            raise errors.NotSupportedError("tierfs.pyg.NeighborLoader: disjoint=True with planned_epochs: planned epochs are not disjoint; leave one out")
        options["labels"] = False  # y comes from the batch's nodes, as PyG's (_to_data)
        self.store = _unwrap(data[0] if isinstance(data, tuple) else data)
        self.embeddings = _tables(self.store, data, embeddings, "NeighborLoader")
        self._induced = InducedEdges(self.store) if self.subgraph_type == INDUCED else None
        self._pin = _pin_memory("NeighborLoader", kwargs, self.store)
        unknown = sorted(set(kwargs) - set(_PYG_ONLY))
        if unknown:
            raise TypeError(f"tierfs.pyg.NeighborLoader got an unexpected argument {unknown[0]!r}")
        _refuse_pyg_only("NeighborLoader", kwargs)
        if isinstance(num_neighbors, int):  # [] is zero hops (the seeds alone), as PyG takes it
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: num_neighbors must be a list of neighbors per hop, got {num_neighbors!r}")
        self.transform = transform
        self.num_neighbors = num_neighbors_of(self.store, num_neighbors)
        self._replace, self._seed, self._weight, self._call_sampler = replace, seed, weight_attr, None
        self.disjoint = bool(disjoint) or time_attr is not None  # temporal implies disjoint, as in PyG
        if self.store.is_hetero:
            self.input_type, seeds = _hetero_input_nodes(self.store, input_nodes)
            self.input_nodes = seeds
            # PyG's input_id: a mask's (a split's) seeds are their own ids, given ids their positions.
            nodes = input_nodes[1] if isinstance(input_nodes, tuple) else None
            self._ids_are_input_id = isinstance(nodes, str) or (isinstance(nodes, (Tensor, np.ndarray)) and nodes.dtype in (torch.bool, np.bool_))
            self._fs = FeatureStore(self.store)
            self._graph_attrs = _graph_attrs(self.store.path)  # what from_pyg held of the HeteroData, for every batch
            # input_id of a planned batch (which carries no positions): any position of each seed.
            self._sorter = torch.argsort(seeds, stable=True)
            self._sorted = seeds[self._sorter]
            self.input_time = None if input_time is None else torch.as_tensor(input_time).view(-1).cpu()
            self.loader = Loader(self.store, self._sampler(), seeds, batch_size, transform=self._to_hetero_data, node_type=self.input_type,
                                 seed_time=self.input_time, **options)
            self._deliver_rows()
            return
        self.input_type = None
        seeds = _input_nodes(self.store, input_nodes)
        self.input_nodes = seeds
        # PyG's input_id: a mask's (a split's) seeds are their own ids, given ids their positions.
        self._ids_are_input_id = isinstance(input_nodes, str) or (isinstance(input_nodes, (Tensor, np.ndarray)) and input_nodes.dtype in (torch.bool, np.bool_))
        # input_id of a batch: its seeds' positions in input_nodes (the loader's; under planned
        # epochs, which do not carry them, any position of a repeated id).
        self._sorter = torch.argsort(seeds, stable=True)
        self._sorted = seeds[self._sorter]
        self._labels = self.store.num_classes > 0
        # The dataset's other features, read from disk per batch (only the store's own has tiers).
        features = self.store.features
        self._x_name = self.store.feature_name  # served under its own name, as FeatureStore does; None: no node features
        self._x_scalar = self._x_name is not None and bool(features[self._x_name]["scalar"])  # one value a node: 1-D, as PyG serves a 1-D x
        self._node_features = [n for n, f in features.items() if f["of"] == "node" and not f["default"] and n not in ("x", "y")]
        self._edge_features = [n for n, f in features.items() if f["of"] == "edge" and n != INPUT_EDGE_ID]
        self._graph_attrs = _graph_attrs(self.store.path)  # what from_pyg held of the Data, for every batch
        self.input_time = None if input_time is None else torch.as_tensor(input_time).view(-1).cpu()
        sampler = self._sampler()
        self.loader = Loader(self.store, sampler, seeds, batch_size, transform=self._to_data, seed_time=self.input_time, **options)
        self._deliver_rows()

    def _sampler(self) -> Any:
        """A sampler of the loader's options."""
        return self.store.sampler(self.num_neighbors, replace=self._replace, seed=self._seed, weight=self._weight, disjoint=self.disjoint,
                                  time=self.time_attr, temporal_strategy=self.temporal_strategy)

    def _deliver_rows(self) -> None:
        """With tables: their rows (then ``transform``) go on each batch as it is handed over."""
        if self.embeddings:
            self.loader._deliver = lambda data: _pinned(_with_rows(self.embeddings, data, self.store.device, self.transform), self._pin)

    def _finish(self, data: Any) -> Any:
        """``transform`` of a batch made on the pipeline thread; with tables, their rows' pages
        read ahead and ``transform`` left to the batch's delivery."""
        if self.embeddings:
            return _warm(self.embeddings, data)
        return _pinned(data if self.transform is None else self.transform(data), self._pin)

    def _to_data(self, b: Batch) -> Any:
        s = b.sample if self._induced is None else self._induced.sample(b.sample)
        nodes = s.nodes
        row, col, edge = bidirectional_edges(s.row, s.col, s.e_id) if self._bidirectional else (s.row, s.col, s.e_id)
        data = Data(edge_index=torch.stack([row, col]))
        for name, value in self._graph_attrs.items():  # as PyG's filter_data: the same objects on every batch
            data[name] = value
        features = self.store.features  # rows of more than one dimension in their shape, as the FeatureStore serves them
        if self._x_name is not None:
            data[self._x_name] = b.x.view(-1) if self._x_scalar else with_row_shape(b.x, features[self._x_name])
        if self._labels:
            data.y = self.store.labels(nodes)
        data.n_id = nodes
        data.e_id = input_edge_ids(self.store, edge)
        data.num_nodes = int(nodes.shape[0])
        for name in self._node_features:
            data[name] = with_row_shape(self.store.gather(nodes, feature=name), features[name])
        for name in self._edge_features:
            data[name] = with_row_shape(self.store.gather(edge, feature=name), features[name])
        if self.subgraph_type == DIRECTIONAL:  # PyG's bidirectional and induced batches have no per-hop counts
            data.num_sampled_nodes = s.nodes_per_hop.tolist()
            data.num_sampled_edges = s.edges_per_hop.tolist()
        if s.batch is not None:  # disjoint: each node's seed index, as PyG's NodeLoader sets it
            data.batch = s.batch[next(iter(s.batch))]
        if self.input_time is not None and b.positions is not None:  # PyG's NodeLoader: the input's seed times
            data.seed_time = self.input_time[torch.as_tensor(b.positions)]
        seeds = torch.as_tensor(b.seeds)
        if self._ids_are_input_id:
            data.input_id = seeds
        elif b.positions is not None:
            data.input_id = b.positions
        else:
            data.input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data.batch_size = int(seeds.shape[0])
        return self._finish(data)

    def _to_hetero_data(self, b: Batch) -> Any:
        """A HeteroData as PyG's NodeLoader makes it from FeatureStore/GraphStore
        (filter_custom_hetero_store, then filter_fn), plus the edge features by e_id."""
        s = b.sample if self._induced is None else self._induced.sample(b.sample)
        store = self.store
        data = HeteroData()
        for name, value in self._graph_attrs.items():  # as PyG's filter_hetero_data: the same objects on every batch
            setattr(data, name, value)
        for t in store.node_types:
            ids = s.node[t]
            data[t].num_nodes = int(ids.shape[0])  # PyG's in-memory loader sets it on every type
            names = self._fs._type_names(t)
            feats = store.types["node_types"][t]["features"]
            for name in names:
                if name == self._fs.x_of(t):  # one value a node stays 1-D, as PyG serves it
                    data[t][name] = b.x[t].view(-1) if feats.get(name, {}).get("scalar") else with_row_shape(b.x[t], feats.get(name))
                elif name == self._fs.y_name:
                    data[t][name] = store.labels(ids, node_type=t)
                else:
                    data[t][name] = with_row_shape(store.gather(ids, node_type=t, feature=name), feats.get(name))
        # bidirectional: PyG's, no edge ids (so no edge features) where it turned edges
        rows, cols, edges = bidirectional_typed(s.rows, s.cols, s.edge) if self._bidirectional else (s.rows, s.cols, s.edge)
        for et in store.edge_types:
            data[et].edge_index = torch.stack([rows[et], cols[et]])
        for t, ids in s.node.items():
            data[t].n_id = ids
        for et, e in edges.items():
            if e is not None:
                data[et].e_id = input_edge_ids(store, e, et)
        for et, info in store.types["edge_types"].items():
            for name in info["features"]:
                if name != INPUT_EDGE_ID and edges[et] is not None:
                    data[et][name] = with_row_shape(store.gather(edges[et], edge_type=et, feature=name), info["features"][name])
        if s.batch is not None:  # disjoint: each node's seed index per type, as PyG's NodeLoader sets it
            data.set_value_dict("batch", s.batch)
        if self.subgraph_type == DIRECTIONAL:  # PyG's bidirectional and induced batches have no per-hop counts
            data.set_value_dict("num_sampled_nodes", s.num_sampled_nodes)
            data.set_value_dict("num_sampled_edges", s.num_sampled_edges)
        if self.input_time is not None and b.positions is not None:  # PyG's NodeLoader: the input's seed times
            data[self.input_type].seed_time = self.input_time[torch.as_tensor(b.positions)]
        seeds = torch.as_tensor(b.seeds)
        if self._ids_are_input_id:
            data[self.input_type].input_id = seeds
        elif b.positions is not None:
            data[self.input_type].input_id = b.positions
        else:
            data[self.input_type].input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data[self.input_type].batch_size = int(seeds.shape[0])
        return self._finish(data)

    def __len__(self) -> int:
        return len(self.loader)

    def __call__(self, index: Any) -> Union[Data, HeteroData]:
        """The batch of the seeds at positions ``index`` of ``input_nodes``, as PyG's
        ``NodeLoader.__call__`` (``loader([0, 5])``), made in the calling thread. Calls sample
        with a sampler of their own (its k-th call draws with ``seed + k``), so they do not
        change the batches iteration gives."""
        positions = torch.as_tensor(np.asarray(index) if isinstance(index, (list, range)) else index, dtype=torch.long).view(-1).cpu()
        n = int(self.input_nodes.shape[0])
        if positions.numel() and (int(positions.min()) < -n or int(positions.max()) >= n):
            raise errors.OutOfRangeError(f"tierfs.pyg.NeighborLoader: index {index!r} is outside the {n} input nodes")
        positions = positions % n if n else positions
        seeds = self.input_nodes[positions]
        if self._call_sampler is None:
            self._call_sampler = self._sampler()
        seed_time = None if self.input_time is None else self.input_time[positions]
        if self.input_type is not None:
            sample = self._call_sampler.sample(seeds, self.input_type, seed_time=seed_time)
        else:
            sample = self._call_sampler.sample(seeds, seed_time=seed_time)
        data = self.loader._gather(0, (seeds, sample, positions))
        return data if self.loader._deliver is None else self.loader._deliver(data)

    def __iter__(self) -> Iterator[Union[Data, HeteroData]]:
        return iter(self.loader)

    def stats(self) -> Dict[str, Any]:
        """The latest epoch's pipeline stats (:meth:`tierfs.Loader.stats`)."""
        return self.loader.stats()

    def __str__(self) -> str:
        return "NeighborLoader()"  # PyG's form (its tests check str(loader)); repr says more

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborLoader({self.loader!r})"


class LinkNeighborLoader(_PyGLinkLoader):
    """PyG's ``LinkNeighborLoader`` over a tierfs dataset: PyG's own ``LinkLoader`` over
    :func:`stores` with this module's :class:`NeighborSampler` (one native call a batch samples
    around the seed edges and draws the negatives), run on tierfs's pipeline (``prefetch``), so
    batches are exactly what that loader gives: ``Data`` with ``x``, ``y``, ``edge_index``, ``n_id``, ``e_id``, ``num_sampled_nodes``,
    ``num_sampled_edges``, ``input_id`` and ``edge_label_index``, ``edge_label`` (no negatives,
    ``"binary"``) or ``src_index``, ``dst_pos_index``, ``dst_neg_index`` (``"triplet"``). As in
    PyG, with binary negatives labels starting at 0 are shifted by 1 (0 is the negatives'), and
    without ``edge_label`` they are float 1s and 0s. A heterogeneous dataset takes
    ``edge_label_index=(edge type, tensor)`` (src ids of its source type, dst ids of its
    destination type) and dict ``num_neighbors`` and yields ``HeteroData`` as PyG lays it out:
    ``edge_label_index``/``edge_label``/``input_id`` under the edge type, triplets' ``src_index``
    under the source node type and ``dst_pos_index``/``dst_neg_index`` under the destination's.

    Args:
        data: a :class:`tierfs.Store`, a dataset path, or the ``(FeatureStore, GraphStore)`` of
            :func:`stores`.
        num_neighbors: neighbors per node per hop; -1 takes all (a heterogeneous dataset: a
            dict ``{edge type: [per hop]}``).
        edge_label_index: the seed edges, a (2, n) tensor (or ``(edge type, tensor)``); None
            (or ``(edge type, None)``) takes every edge of the dataset (of the type), in CSC order.
            The edge type in PyG's forms; given seed edges may be of a type the dataset has no
            edges of, between two of its node types, as PyG takes them.
        edge_label: one label a seed edge.
        neg_sampling: None, ``"binary"``, ``"triplet"`` or PyG's ``NegativeSampling``.
        neg_sampling_ratio: binary negatives per seed edge (PyG's older argument).
        replace, seed: the sampler's (batch i samples with ``seed + i``).
        disjoint: every endpoint of a seed edge and negative its own tree, PyG's
            ``disjoint=True`` layout (``batch``: each node's seed edge, as PyG numbers it).
        time_attr, temporal_strategy, edge_label_time: PyG's temporal link sampling (both or
            neither of ``time_attr`` and ``edge_label_time``, PyG's rule): a seed edge's
            endpoints' trees, and its negatives', take only neighbors of time at most its
            ``edge_label_time``; batches carry ``edge_label_time`` (triplets: ``seed_time``).
            Disjoint; as :class:`NeighborLoader`'s ``time_attr``.
        strict_negatives, exclude_seed_edges, undirected, reverse_edge_types: as
            :class:`NeighborSampler`'s (beyond PyG; off, the batches are PyG's).
        subgraph_type: PyG's ``"directional"``, ``"bidirectional"`` or ``"induced"`` (as
            :class:`NeighborSampler`'s).
        **kwargs: PyG ``LinkLoader``/``DataLoader`` arguments (``batch_size``, ``shuffle``,
            ``drop_last``, ``transform``, ...); ``num_workers=N`` starts no process: N of the
            pipeline's threads do the workers' job (``prefetch=N`` unless given; the batches
            are those of ``num_workers=0``); ``prefetch_factor`` and ``pin_memory`` as
            :class:`NeighborLoader`'s; and the loader options below.

    With ``planned_epochs=K`` (and ``shuffle=True``) the loader plans epochs of seed edge
    batches (:meth:`tierfs.Store.plan_epochs` with ``seed_edges``) in rounds of K, as
    :class:`tierfs.Loader` does (docs/planned.md, "Planning while training"): epochs ``[0, K)``
    when it is made, then each next K on a background thread while the current K train, the
    finished round's plan closed and its directory removed. Epoch e is planned epoch e, fresh:
    the core's order of the seed edges from ``shuffle_seed`` and e, each batch exactly what PyG's
    ``LinkLoader`` over this module's sampler makes of the same seed edges when the sampler
    draws with the batch's seed (``BatchSampleSeed(seed, e, b)``: negatives, subgraph,
    ``input_id``, labels), its rows of the default feature read from the plan's packed files.
    ``reuse_samples=True`` plans K epochs once (in ``plan_dir`` itself, kept for a later run)
    and epoch e replays planned epoch e mod K: the same negatives and neighbourhoods every K
    epochs. ``stats()["plans"]`` gives the rounds (as :meth:`tierfs.Loader.stats`);
    :meth:`close` stops the planner and removes the rounds' directories. Every epoch, planned or
    not, comes from a :class:`tierfs.pipeline.Pipeline`: one thread samples the batches in
    order, ``prefetch`` threads read their features and make them (``filter_fn``,
    ``transform``), the caller receives them in order; :meth:`stats` says which stage bounds the
    epoch. Without a plan the seed edges' batches are the ones PyG's ``DataLoader`` draws (its
    batch sampler; with ``shuffle`` the same torch RNG draws, made when the epoch starts), so the
    batches are exactly those of PyG's ``LinkLoader`` over :func:`stores` with this sampler.

    ``embeddings=`` (or a :func:`stores` FeatureStore with embeddings as ``data``) puts the
    tables' rows of the batch's ``n_id`` as ``x`` of their featureless types, as
    :class:`NeighborLoader` does: gathered as each batch is handed over, then ``transform``.

    The loader options it takes, keywords as :class:`tierfs.Loader`'s (``shuffle_seed`` is its ``seed``):

        {loader_options}
    """

    def __init__(
        self,
        data: Any,
        num_neighbors: Any,
        edge_label_index: Any = None,
        edge_label: Optional[Tensor] = None,
        neg_sampling: Any = None,
        neg_sampling_ratio: Optional[Union[int, float]] = None,
        replace: bool = False,
        seed: int = 0,
        strict_negatives: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
        reverse_edge_types: Optional[Dict[Any, Any]] = None,
        weight_attr: Optional[str] = None,
        embeddings: Optional[Dict[Any, Any]] = None,
        subgraph_type: Any = DIRECTIONAL,
        edge_label_time: Optional[Tensor] = None,
        disjoint: bool = False,
        time_attr: Optional[str] = None,
        temporal_strategy: str = "uniform",
        **kwargs: Any,
    ) -> None:
        options = _loader_options("LinkNeighborLoader", kwargs, _LINK_TAKES)
        planned_epochs, reuse = options["planned_epochs"], options["reuse_samples"]
        if (edge_label_time is not None) != (time_attr is not None):  # PyG's ValueError
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.LinkNeighborLoader: Received conflicting 'edge_label_time' and 'time_attr' arguments: 'edge_label_time' is "
                f"{'set' if edge_label_time is not None else 'not set'} while 'time_attr' is {'set' if time_attr is not None else 'not set'}. "
                f"Both arguments must be provided for temporal sampling.")
        _check_time("LinkNeighborLoader", data, time_attr, temporal_strategy, None, planned_epochs)
        if disjoint and planned_epochs:
            raise errors.NotSupportedError("tierfs.pyg.LinkNeighborLoader: disjoint=True with planned_epochs: planned epochs are not disjoint; leave one out")
        if weight_attr is not None and planned_epochs:
            raise errors.NotSupportedError("tierfs.pyg.LinkNeighborLoader: weight_attr with planned_epochs: planned epochs sample uniformly; leave one out")
        if planned_epochs == "auto":
            raise errors.NotSupportedError('tierfs.pyg.LinkNeighborLoader: planned_epochs="auto" is tierfs.Loader\'s; give K (plan rounds of K epochs)')
        if planned_epochs and not kwargs.get("shuffle", False):
            raise errors.InvalidArgumentError("planned_epochs needs shuffle=True (each planned epoch is its own order)")
        if reuse and not planned_epochs:
            raise errors.InvalidArgumentError("tierfs.pyg.LinkNeighborLoader: reuse_samples=True needs planned_epochs=K: it replays the K planned epochs")
        _refuse_pyg_only("LinkNeighborLoader", kwargs)  # and takes them out of what DataLoader gets
        if isinstance(data, str):
            from .._open import open as _open

            data = _open(data)
        store = _unwrap(data[0] if isinstance(data, tuple) else data)
        tables = _tables(store, data, embeddings, "LinkNeighborLoader")
        pin = _pin_memory("LinkNeighborLoader", kwargs, store)
        if isinstance(neg_sampling, str):
            neg_sampling = NegativeSampling(neg_sampling)
        if neg_sampling_ratio is not None and not (isinstance(neg_sampling_ratio, (int, float)) and not isinstance(neg_sampling_ratio, bool) and neg_sampling_ratio >= 0):
            raise errors.InvalidArgumentError(f"neg_sampling_ratio = {neg_sampling_ratio!r}: want binary negatives per seed edge > 0")
        edge_type, edge_label_index = _link_input(store, edge_label_index)
        fs = _PlannedFeatureStore(store) if planned_epochs else FeatureStore(store)
        if edge_label_index is None:
            indptr, indices = typed_csc(store, edge_type) if store.is_hetero else store.csc()
            col = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
            edge_label_index = torch.stack([torch.from_numpy(np.asarray(indices, dtype=np.int64)), torch.from_numpy(col)])
            inverse = fs._input_to_csc(edge_type if store.is_hetero else None)  # the FeatureStore's, read once for the edge features too
            if inverse is not None:  # PyG's input_id counts positions in the input's edges: give them in its order
                edge_label_index = edge_label_index[:, inverse[inverse >= 0]]
        edge_label_index = torch.as_tensor(edge_label_index)
        if edge_label_index.dim() != 2 or edge_label_index.size(0) != 2:
            raise errors.InvalidArgumentError(f"edge_label_index: want a (2, n) tensor of seed edges, got shape {tuple(edge_label_index.shape)}")
        if edge_label is not None and len(edge_label) != edge_label_index.size(1):
            raise errors.InvalidArgumentError(f"edge_label: {len(edge_label)} labels for {edge_label_index.size(1)} seed edges (edge_label_index); give one a seed edge")
        self.store = store
        self.link_neighbor_sampler = NeighborSampler(store, num_neighbors, replace=replace, seed=seed, strict_negatives=strict_negatives,
                                                     exclude_seed_edges=exclude_seed_edges, undirected=undirected,
                                                     reverse_edge_types=reverse_edge_types, weight_attr=weight_attr, disjoint=disjoint,
                                                     time_attr=time_attr, temporal_strategy=temporal_strategy, subgraph_type=subgraph_type)
        super().__init__(
            (fs, GraphStore(store)), link_sampler=self.link_neighbor_sampler, edge_label_index=(edge_type, edge_label_index),
            edge_label=edge_label, edge_label_time=edge_label_time, neg_sampling=neg_sampling, neg_sampling_ratio=neg_sampling_ratio,
            filter_per_worker=kwargs.pop("filter_per_worker", False), **kwargs,
        )
        # With tables, PyG's filter_fn makes batches without transform: their rows, then
        # transform, go on as each is handed over (_with_rows).
        self.embeddings, self._table_transform = tables, None
        if tables:
            self._table_transform, self.transform = self.transform, None
        self._pin = pin
        self._fs = fs
        # The edge features a batch's sampled edges carry, by edge type (None: a one-type store's).
        if store.is_hetero:
            self._edge_features = {edge_type_tuple(et): [n for n in info["features"] if n != INPUT_EDGE_ID] for et, info in store.types["edge_types"].items()}
        else:
            self._edge_features = {None: [n for n, f in store.features.items() if f["of"] == "edge" and n != INPUT_EDGE_ID]}
        self.plan: Any = None  # the plan serving the latest epoch (its round's)
        self.prefetch = options["prefetch"]
        self._epoch = 0
        self._pipeline: Any = None  # the latest epoch's Pipeline, weakly
        self._run: Any = None  # its shared state, for stats()
        self._rounds: Optional[PlanRounds] = None
        self._planned = bool(planned_epochs)
        if planned_epochs:
            self._start_plans(edge_type, planned_epochs, options)

    def _start_plans(self, edge_type: Tuple[str, str, str], epochs: int, options: Dict[str, Any]) -> None:
        """Plans rounds of ``epochs`` epochs of the seed edges (:class:`tierfs.planrounds.PlanRounds`),
        the first now."""
        store, sp, inp = self.store, self.link_neighbor_sampler, self.input_data
        reuse = options["reuse_samples"]
        # The plans' seed edges and labels are the ones PyG's collate_fn hands the sampler
        # (binary labels shifted by 1 where they start at 0).
        edges = torch.stack([inp.row, inp.col])
        args = dict(
            disk_budget=per_plan_budget(options["plan_disk_budget"], reuse), pack_method=options["plan_pack_method"],
            pack_memory=options["plan_pack_memory"], replace=sp.replace, drop_last=self.drop_last, seed=sp.seed,
            shuffle_seed=options["seed"], seed_edges=(edge_type, edges) if store.is_hetero else edges, edge_label=inp.label,
            neg_sampling=self.neg_sampling, **sp.link_options,
        )
        fanouts, batch_size = sp.num_neighbors, self.batch_size

        def make(first: int, directory: Optional[str], place_tiers: bool) -> Any:
            # Not a method: the planning thread must not keep the loader alive.
            return store.plan_epochs(fanouts, batch_size, epochs, plan_dir=directory, place_tiers=place_tiers, first_epoch=first, **args)

        self._rounds = PlanRounds(make, epochs, 0, options["plan_dir"], reuse, where="tierfs.pyg.LinkNeighborLoader")
        self.plan = self._rounds.plan
        self._batches = self.plan.batches_per_epoch

    def close(self) -> None:
        """Stops the latest epoch's pipeline and the planner (a round being planned is
        cancelled), closes the plans and removes the rounds' directories (not a
        ``reuse_samples`` plan in ``plan_dir``). A planned loader cannot be iterated after it."""
        previous = self._pipeline() if self._pipeline is not None else None
        if previous is not None:
            previous.close()
        rounds, self._rounds, self.plan = self._rounds, None, None
        if rounds is not None:
            rounds.close()

    def __enter__(self) -> "LinkNeighborLoader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        return self._batches if self._planned else super().__len__()

    def _with_edge_features(self, data: Any) -> Any:
        """A link batch with its sampled edges' features by ``e_id``, as PyG's in-memory
        LinkLoader gives them (PyG's remote-backend filter reads node features only)."""
        for et, names in self._edge_features.items():
            part = data if et is None else (data[et] if et in data.edge_types else None)
            if part is None or "e_id" not in part:
                continue
            for name in names:
                part[name] = self._fs.get_tensor(group_name=EDGE_TYPE if et is None else et, attr_name=name, index=part.e_id)
        return data

    def __iter__(self) -> Pipeline:
        """An epoch's batches from a :class:`tierfs.pipeline.Pipeline` (close it, or break out
        of the loop, to stop its threads mid-epoch)."""
        cuda = torch.device(self.store.device) if self.store.device != "cpu" else None
        plan = None
        if not self._planned:
            n = len(self.batch_sampler)
            batches = self._seed_edge_batches()
            sample = lambda b: self._sample(next(batches))  # noqa: E731  # the sampling thread asks in order
            make = lambda b, out: _pinned(self._with_edge_features(self.filter_fn(out)), self._pin)  # noqa: E731
        else:
            if self._rounds is None:
                raise errors.ClosedError("tierfs.pyg.LinkNeighborLoader: the loader is closed (its plans with it)")
            previous = self._pipeline() if self._pipeline is not None else None
            if previous is not None:  # before a round boundary closes the plan it reads
                previous.close()
            epoch = self._epoch
            plan = self.plan = self._rounds.plan_for(epoch)
            self._epoch += 1
            n = plan.batches_per_epoch
            sample = lambda b: self._planned_sample(plan, epoch, b)  # noqa: E731
            make = lambda b, sampled: _pinned(self._with_edge_features(self._planned_make(plan, epoch, b, sampled)), self._pin)  # noqa: E731
        deliver = None
        if self.embeddings:
            made, make = make, lambda b, sampled: _warm(self.embeddings, made(b, sampled))  # noqa: E731
            deliver = lambda data: _with_rows(self.embeddings, data, self.store.device, self._table_transform)  # noqa: E731
        pipeline = Pipeline(n, sample, make, self.prefetch, store=self.store, cuda_device=cuda, name="tierfs-link-loader", plan=plan, deliver=deliver)
        # Weakly: a loop the caller breaks out of stops its threads once the iterator is dropped.
        self._pipeline, self._run = weakref.ref(pipeline), pipeline._st
        return pipeline

    def _seed_edge_batches(self) -> Iterator[List[int]]:
        """This epoch's batches of seed edges (their positions in ``input_data``), as PyG's
        ``DataLoader`` draws them: its batch sampler and generator, with the same torch RNG draws
        (the DataLoader iterator's base seed, then a shuffling sampler's seed), made here in the
        caller's thread when the epoch starts, not later on the sampling thread, where they
        would race with the caller's own draws."""
        it = iter(torch.utils.data.DataLoader(self.dataset, batch_sampler=self.batch_sampler, collate_fn=_as_is, generator=self.generator))
        first = next(it, None)
        return it if first is None else itertools.chain([first], it)

    def _sample(self, index: List[int]) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """PyG's ``collate_fn`` without its ``filter_fn``: the sample of the seed edges at
        ``index`` of ``input_data`` (one native call)."""
        return self.link_sampler.sample_from_edges(self.input_data[index], neg_sampling=self.neg_sampling)

    def stats(self) -> Dict[str, Any]:
        """The latest epoch's pipeline stats (:func:`tierfs.pipeline.pipeline_stats`: stages,
        ``bound``, ``bound_why``); with planned epochs ``plans``, the rounds as
        :meth:`tierfs.Loader.stats` gives them. Empty before the first epoch."""
        st = pipeline_stats(self._run) if self._run is not None else {}
        if st and self._rounds is not None:
            st["plans"] = self._rounds.stats(self._epoch)
        return st

    def planned_batch(self, epoch: int, batch: int) -> Union[Data, HeteroData]:
        """Batch ``batch`` of epoch ``epoch`` of a planned loader (``planned_epochs``), made in
        the calling thread: the plan's sample of its seed edges through PyG's ``filter_fn``, the
        default feature's rows from the plan. ``epoch`` is one of the round serving the latest
        epoch (any, with ``reuse_samples``). Iterating the loader makes the same batches on a
        :class:`tierfs.pipeline.Pipeline`: the next ones sampled and read ``prefetch`` at once."""
        plan = self.plan
        if not self._planned:
            raise errors.InvalidArgumentError("tierfs.pyg.LinkNeighborLoader: planned_batch needs planned_epochs")
        if plan is None:
            raise errors.ClosedError("tierfs.pyg.LinkNeighborLoader: the loader is closed (its plans with it)")
        first, end = plan.first_epoch, plan.first_epoch + plan.planned
        if not self._rounds.reuse and not first <= epoch < end:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.LinkNeighborLoader: planned_batch({epoch}, {batch}): the round serving holds epochs {first} to {end - 1} "
                f"(the loader plans the next round as it iterates; reuse_samples=True replays one)")
        data = self._planned_make(plan, epoch, batch, self._planned_sample(plan, epoch, batch))
        return _with_rows(self.embeddings, data, self.store.device, self._table_transform) if self.embeddings else data

    def _planned_sample(self, plan: Any, epoch: int, batch: int) -> Tuple[Tensor, Any]:
        return torch.from_numpy(plan.seeds(epoch, batch)), _link_sample_to_torch(plan.sample(epoch, batch))

    def _planned_make(self, plan: Any, epoch: int, batch: int, sampled: Tuple[Tensor, Any]) -> Union[Data, HeteroData]:
        pos, sample = sampled
        fs = self.data[0]
        if sample.typed:
            fs.batch = {t: (sample.node[t], plan.gather(epoch, batch, sample.node[t].numpy(), node_type=t)) for t in plan.node_types}
        else:
            fs.batch = {None: (sample.nodes, plan.gather(epoch, batch, sample.nodes.numpy()))}
        try:
            return self.filter_fn(self.link_neighbor_sampler._link_output(self.input_data[pos], sample, self.neg_sampling))
        finally:
            fs.batch = {}

    def __str__(self) -> str:
        return "LinkNeighborLoader()"  # PyG's form (its tests check str(loader)); repr says more

    def __repr__(self) -> str:
        return f"tierfs.pyg.LinkNeighborLoader({self.store!r}, num_neighbors={self.link_neighbor_sampler.num_neighbors})"


_options.document(NeighborLoader, "loader", skip=("labels", *_PYG_OWN), rename=_PYG_NAMES)
_options.document(LinkNeighborLoader, "loader", rename=_PYG_NAMES, takes=_LINK_TAKES)
