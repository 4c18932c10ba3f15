"""PyTorch Geometric (2.6–2.8) integration: a remote-backend FeatureStore and GraphStore backed
by a :class:`tierfs.Store`, and a :class:`NeighborSampler` that samples in the core.

PyG's own ``NeighborSampler`` needs pyg-lib or torch-sparse, which are not on PyPI; this one
needs neither::

    import tierfs, tierfs.pyg, torch
    from torch_geometric.loader import NodeLoader

    store = tierfs.open("/data/cora", host_cache="64MB")
    fs, gs = tierfs.pyg.stores(store)
    loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, [25, 10]),
                        input_nodes=torch.from_numpy(store.split("train")), batch_size=1024,
                        shuffle=True)
    for batch in loader:           # batch.x, batch.y, batch.edge_index, batch.batch_size
        ...

Per batch, the loader makes one native sampling call (``sample_from_nodes``) and
``FeatureStore._multi_get_tensor`` makes one native gather for every requested ``x`` (plus one
label read when ``y`` is requested).

Worker processes: the Go runtime the library holds does not survive ``fork()`` (a forked
worker raises :class:`tierfs.ForkedProcessError`), so this module's loaders start none:
``NeighborLoader(..., num_workers=N)`` and ``LinkNeighborLoader(..., num_workers=N)`` have N
of tierfs's pipeline threads do a worker's job (sample in order, gather with the GIL released,
make the ``Data`` and run ``transform``), and their batches are those of ``num_workers=0``.
PyG's own loaders over :func:`stores` take workers started by ``spawn`` or ``forkserver``
(``multiprocessing_context="forkserver"``): the stores and the sampler pickle as (path,
options) and reopen in each worker (its own host cache, topology and IO stacks); each worker's
sampler counts its own calls, so with two or more the samples differ from ``num_workers=0``'s.
To overlap loading with training, wrap a PyG loader in :func:`tierfs.prefetch` (a background
thread), or use this module's :class:`NeighborLoader`: PyG's NeighborLoader arguments, the
same ``Data`` batches, from tierfs's pipeline (sampling ahead, several gathers in flight) and,
with ``planned_epochs``, from planned epochs (docs/planned.md)::

    loader = tierfs.pyg.NeighborLoader(store, [25, 10], input_nodes="train", batch_size=1024,
                                       shuffle=True, planned_epochs=2)

Link prediction: :class:`LinkNeighborLoader` is PyG's ``LinkLoader`` over :func:`stores` with
:class:`NeighborSampler`, whose ``sample_from_edges`` draws the negatives and the neighborhood of
the seed edges in one native call::

    loader = tierfs.pyg.LinkNeighborLoader(store, [10, 10], edge_label_index=train_edges,
                                           neg_sampling="binary", batch_size=1024, shuffle=True)
    for batch in loader:           # batch.x, batch.edge_index, batch.edge_label_index, batch.edge_label
        ...

On a heterogeneous dataset the seed edges name their type and ``num_neighbors`` is a dict; the
batches are ``HeteroData`` as PyG lays them out (label edges under the edge type)::

    loader = tierfs.pyg.LinkNeighborLoader(store, {et: [10, 5] for et in store.edge_types},
                                           edge_label_index=(("paper", "to", "author"), train_edges),
                                           neg_sampling="binary", batch_size=1024)
    for batch in loader:           # batch["paper", "to", "author"].edge_label_index, ...
        ...

Heterogeneous datasets (several node or edge types, e.g. ``tierfs.from_pyg(hetero_data, out)``)
take PyG's dict ``num_neighbors`` and ``input_nodes=(node type, ...)``, and give ``HeteroData``
batches and ``HeteroSamplerOutput`` samples; the stores key tensors by node type and edge type::

    loader = tierfs.pyg.NeighborLoader(store, {et: [10, 10] for et in store.edge_types},
                                       input_nodes=("paper", "train"), batch_size=1024)
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # PyG 2.8 calls torch.jit.script when it is imported (torch_geometric/nn/pool/{select,connect}/
    # base.py), which torch deprecates with a DeprecationWarning (a FutureWarning in newer torch):
    # neither tierfs's call nor the user's, so `import tierfs.pyg` does not pass it on.
    warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated")
    import torch_geometric  # noqa: F401

from ..edgeids import INPUT_EDGE_ID, csc_edge_ids, input_edge_ids
from .stores import EDGE_TYPE, FeatureStore, GraphStore, stores
from .sampler import NeighborSampler, num_neighbors_of
from .loader import LinkNeighborLoader, NeighborLoader

__all__ = [
    "EDGE_TYPE",
    "INPUT_EDGE_ID",
    "FeatureStore",
    "GraphStore",
    "LinkNeighborLoader",
    "NeighborLoader",
    "NeighborSampler",
    "csc_edge_ids",
    "input_edge_ids",
    "num_neighbors_of",
    "stores",
]
