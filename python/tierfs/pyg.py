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

Worker processes: keep ``num_workers=0`` (and pass ``filter_per_worker=False``). tierfs already
samples and gathers on the Go runtime's threads with the GIL released, so workers add nothing
but copies: each worker would reopen the store (its own host cache, topology and IO stacks),
and a worker *forked* from a process that loaded the library cannot call it at all (the Go
runtime does not survive ``fork()``; tierfs raises :class:`tierfs.ForkedProcessError` there).
If you must use workers, pass ``multiprocessing_context="spawn"``: the stores and the sampler
pickle as (path, options) and reopen in each worker. To overlap loading with training, wrap the
loader in :func:`tierfs.prefetch` (a background thread), or use this module's
:class:`NodeLoader`: the same ``Data`` batches from tierfs's pipeline (sampling ahead, several
gathers in flight) and, with ``planned_epochs``, from planned epochs (docs/planned.md)::

    loader = tierfs.pyg.NodeLoader(store, [25, 10], input_nodes=store.split("train"),
                                   batch_size=1024, shuffle=True, planned_epochs=2)
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, EdgeAttr, TensorAttr
from torch_geometric.data import FeatureStore as _PyGFeatureStore
from torch_geometric.data import GraphStore as _PyGGraphStore
from torch_geometric.data.graph_store import EdgeLayout
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput

from . import errors
from .loader import Batch, Loader
from .store import Store

__all__ = ["FeatureStore", "GraphStore", "NeighborSampler", "NodeLoader", "stores"]


def _unwrap(store: Any) -> Store:
    if isinstance(store, Store):
        return store
    inner = getattr(store, "store", None)
    if isinstance(inner, Store):
        return inner
    raise TypeError(f"want a tierfs.Store (or a tierfs.pyg store), got {type(store).__name__}")


class FeatureStore(_PyGFeatureStore):
    """Read-only PyG ``FeatureStore`` over a :class:`tierfs.Store`.

    Holds the node features as attribute ``x`` (``group_name=None``) and, where the dataset has
    labels, the labels as ``y``. Tensors come back on the store's device (``tierfs.open(...,
    device=)``), or on the index's device for CUDA indices.

    ``_multi_get_tensor`` serves all requested ``x`` attributes with one native gather (their
    indices concatenated) and all ``y`` attributes with one label read. ``_get_tensor_size``
    reads no data. Picklable (the store reopens in the receiving process).
    """

    def __init__(self, store: Store, x: str = "x", y: str = "y") -> None:
        super().__init__()
        self.store = store
        self.x_name = x
        self.y_name = y

    # PyG CRUD --------------------------------------------------------------------------

    def _put_tensor(self, tensor: Any, attr: TensorAttr) -> bool:
        raise errors.NotSupportedError(
            "tierfs.pyg.FeatureStore is read-only; build datasets with tierfs.ingest()"
        )

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        return False

    def _get_tensor(self, attr: TensorAttr) -> Optional[Tensor]:
        return self._multi_get_tensor([attr])[0]

    def get_tensor(self, *args: Any, convert_type: bool = False, **kwargs: Any) -> Any:
        """As PyG's, with an unset ``group_name`` meaning the one node type (None) and an unset
        ``index`` every row: ``get_tensor(attr_name="x", index=ids)`` and ``fs[None, "x"]`` work."""
        attr = self._tensor_attr_cls.cast(*args, **kwargs)
        if not attr.is_set("group_name"):
            attr.group_name = None
        if not attr.is_set("index"):
            attr.index = None
        return super().get_tensor(attr, convert_type=convert_type)

    def __getitem__(self, key: Any) -> Any:
        """``fs[None, "x"]`` is the whole column and ``fs[None, "x", ids]`` its rows (PyG would give
        a view for the former); other partial keys give PyG's views."""
        attr = self._tensor_attr_cls.cast(key)
        if attr.is_set("group_name") and attr.is_set("attr_name") and not attr.is_set("index"):
            attr.index = None
        return super().__getitem__(attr)

    def _kind(self, attr: TensorAttr) -> str:
        if attr.group_name is not None:
            raise KeyError(f"tierfs holds one node type (group_name=None), not {attr.group_name!r}")
        if attr.attr_name == self.x_name:
            return "x"
        if attr.attr_name == self.y_name and self.store.num_classes > 0:
            return "y"
        raise KeyError(f"tierfs store has no tensor attribute {attr.attr_name!r} (it has {self._names()})")

    def _names(self) -> List[str]:
        return [self.x_name] + ([self.y_name] if self.store.num_classes > 0 else [])

    def _index(self, index: Any) -> Tuple[Tensor, bool]:
        """(1-D int64 CPU or CUDA tensor of node ids, whether the attr asked for one row)."""
        n = self.store.num_nodes
        if index is None or (isinstance(index, slice) and index == slice(None)):
            return torch.arange(n), False
        if isinstance(index, slice):
            return torch.arange(n)[index], False
        if isinstance(index, (int, np.integer)):
            return torch.tensor([int(index)]), True
        if isinstance(index, np.ndarray):
            index = torch.from_numpy(index)
        if isinstance(index, Tensor):
            if index.dtype == torch.bool:
                return index.nonzero().view(-1), False
            return index.view(-1), False
        return torch.as_tensor(index, dtype=torch.long).view(-1), False

    def _multi_get_tensor(self, attrs: List[TensorAttr]) -> List[Optional[Tensor]]:
        kinds = [self._kind(a) for a in attrs]
        results: List[Optional[Tensor]] = [None] * len(attrs)
        for kind in ("x", "y"):
            which = [i for i, k in enumerate(kinds) if k == kind]
            if not which:
                continue
            # One native call per kind: distinct index tensors concatenated, results split.
            unique: dict = {}
            for i in which:
                unique.setdefault(id(attrs[i].index), []).append(i)
            indices, single = [], []
            for pos in unique.values():
                idx, one = self._index(attrs[pos[0]].index)
                indices.append(idx)
                single.append(one)
            if len(indices) > 1:
                dev = indices[0].device
                ids = torch.cat([t.to(dev) for t in indices])
            else:
                ids = indices[0]
            out = self.store.gather(ids) if kind == "x" else self.store.labels(ids)
            if not isinstance(out, Tensor):
                out = torch.from_numpy(out)
            parts = out.split([t.numel() for t in indices]) if len(indices) > 1 else [out]
            for pos, part, one in zip(unique.values(), parts, single):
                for i in pos:
                    results[i] = part[0] if one else part
        return results

    def _get_tensor_size(self, attr: TensorAttr) -> Optional[Tuple[int, ...]]:
        try:
            kind = self._kind(attr)
        except KeyError:
            return None
        index = attr.index if attr.is_set("index") else None
        if index is None or (isinstance(index, slice) and index == slice(None)):
            rows = self.store.num_nodes
        elif isinstance(index, (int, np.integer)):
            return (self.store.dim,) if kind == "x" else ()
        elif isinstance(index, slice):
            rows = len(range(*index.indices(self.store.num_nodes)))
        elif isinstance(index, Tensor) and index.dtype == torch.bool:
            rows = int(index.sum())
        else:
            rows = len(index)
        return (rows, self.store.dim) if kind == "x" else (rows,)

    def get_all_tensor_attrs(self) -> List[TensorAttr]:
        """``x`` (node features) and, with labels, ``y``; node attributes only."""
        return [self._tensor_attr_cls.cast(None, name) for name in self._names()]

    def __repr__(self) -> str:
        return f"tierfs.pyg.FeatureStore({self.store!r})"


class GraphStore(_PyGGraphStore):
    """Read-only PyG ``GraphStore`` over a :class:`tierfs.Store`'s topology.

    Advertises one edge type (``edge_type=None``) in CSC layout with ``size=(N, N)``. The
    :class:`NeighborSampler` never reads edges through it. Asking for the edge index
    (``get_edge_index``, ``coo()``, ``csr()``, ``csc()``) materializes the whole topology in
    memory (:meth:`tierfs.Store.csc`: 8 bytes per edge and per node, more for COO/CSR); it is
    not cached, so keep the result if you need it twice.
    """

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def _put_edge_index(self, edge_index: Any, edge_attr: EdgeAttr) -> bool:
        raise errors.NotSupportedError("tierfs.pyg.GraphStore is read-only; build datasets with tierfs.ingest()")

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        return False

    def get_all_edge_attrs(self) -> List[EdgeAttr]:
        if self.store.num_edges == 0:
            return []
        n = self.store.num_nodes
        return [EdgeAttr(None, EdgeLayout.CSC, is_sorted=True, size=(n, n))]

    def _get_edge_index(self, edge_attr: EdgeAttr) -> Optional[Tuple[Tensor, Tensor]]:
        if edge_attr.edge_type is not None or self.store.num_edges == 0:
            return None
        indptr, indices = self.store.csc()
        n = self.store.num_nodes
        if edge_attr.layout == EdgeLayout.CSC:
            return torch.from_numpy(indices), torch.from_numpy(indptr)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        if edge_attr.layout == EdgeLayout.COO:
            return torch.from_numpy(indices), torch.from_numpy(dst)
        order = np.argsort(indices, kind="stable")  # CSR: by source
        rowptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(indices, minlength=n), out=rowptr[1:])
        return torch.from_numpy(rowptr), torch.from_numpy(dst[order])

    def __repr__(self) -> str:
        return f"tierfs.pyg.GraphStore({self.store!r})"


def stores(store: Store) -> Tuple[FeatureStore, GraphStore]:
    """``(FeatureStore(store), GraphStore(store))``, the ``data`` argument of PyG loaders."""
    return FeatureStore(store), GraphStore(store)


class NeighborSampler(BaseSampler):
    """Uniform k-hop neighbor sampling in the tierfs core, as a PyG ``BaseSampler``.

    ``sample_from_nodes`` is one native call per batch and returns a ``SamplerOutput`` with
    ``node`` (seeds first, in input order), ``row``/``col`` (local ids; messages flow row → col),
    ``num_sampled_nodes``/``num_sampled_edges`` per hop (for ``trim_to_layer``), ``edge=None``
    (no edge ids) and ``batch=None`` (not disjoint).

    Args:
        store: a :class:`tierfs.Store` (or one of this module's stores).
        num_neighbors: neighbors per node per hop, e.g. ``[25, 10]``; -1 takes all.
        replace: sample with replacement.
        seed: the i-th call samples with ``seed + i``: same seed, same batches.
        workers: goroutines of the sampler (0: CPUs); results do not depend on it.
    """

    def __init__(
        self,
        store: Union[Store, FeatureStore, GraphStore],
        num_neighbors: Sequence[int],
        replace: bool = False,
        seed: int = 0,
        workers: int = 0,
    ) -> None:
        super().__init__()
        self.store = _unwrap(store)
        self.num_neighbors = [int(k) for k in num_neighbors]
        self.replace = bool(replace)
        self.seed = int(seed)
        self.sampler = self.store.sampler(self.num_neighbors, replace=replace, seed=seed, workers=workers)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput:
        if index.input_type is not None:
            raise ValueError(f"tierfs holds one node type; got input_type {index.input_type!r}")
        seeds = index.node
        if seeds.device.type != "cpu":
            seeds = seeds.cpu()
        s = self.sampler.sample(seeds)
        return SamplerOutput(
            node=s.nodes,
            row=s.row,
            col=s.col,
            edge=None,
            batch=None,
            num_sampled_nodes=s.nodes_per_hop.tolist(),
            num_sampled_edges=s.edges_per_hop.tolist(),
            metadata=(index.input_id, index.time),
        )

    def sample_from_edges(self, index: Any, neg_sampling: Any = None) -> Any:
        raise NotImplementedError("tierfs.pyg.NeighborSampler samples from nodes only (no link loaders yet)")

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborSampler(num_neighbors={self.num_neighbors}, replace={self.replace}, seed={self.seed})"


class NodeLoader:
    """PyG mini-batches from tierfs's pipelined loader: each batch is the ``Data`` that
    ``torch_geometric.loader.NodeLoader`` over :func:`stores` with this module's
    :class:`NeighborSampler` gives (``x``, ``y`` of every sampled node, ``edge_index``, ``n_id``,
    ``num_sampled_nodes``, ``num_sampled_edges``, ``input_id``, ``batch_size``), made by a
    :class:`tierfs.Loader`: sampled ahead, several gathers in flight (``prefetch``), ``Data``
    built on the pipeline's threads.

    With ``shuffle=False`` and the same sampler ``seed`` its batches equal PyG's NodeLoader's.
    With ``shuffle=True`` the order of each epoch comes from ``shuffle_seed`` and the epoch
    (as :class:`tierfs.Loader`); ``planned_epochs=K`` plans K epochs up front and replays them
    (docs/planned.md), reading each batch's disk rows with a few large reads.

    Args:
        store: a :class:`tierfs.Store` (or one of this module's stores).
        num_neighbors: neighbors per node per hop.
        input_nodes: the seed node ids (numpy, torch or list).
        batch_size, shuffle, drop_last: as PyG's loaders.
        replace, seed: the sampler's (see :class:`NeighborSampler`).
        shuffle_seed, prefetch, planned_epochs, plan_dir, plan_disk_budget: as :class:`tierfs.Loader`.
    """

    def __init__(
        self,
        store: Union[Store, "FeatureStore", "GraphStore"],
        num_neighbors: Sequence[int],
        input_nodes: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        replace: bool = False,
        seed: int = 0,
        shuffle_seed: int = 0,
        prefetch: int = 4,
        planned_epochs: int = 0,
        plan_dir: Optional[str] = None,
        plan_disk_budget: Any = None,
    ) -> None:
        self.store = _unwrap(store)
        seeds = torch.as_tensor(np.asarray(input_nodes.cpu() if isinstance(input_nodes, Tensor) else input_nodes, dtype=np.int64))
        self.input_nodes = seeds
        # input_id of a batch: its seeds' positions in input_nodes (any position of a repeated id).
        self._sorter = torch.argsort(seeds, stable=True)
        self._sorted = seeds[self._sorter]
        self._labels = self.store.num_classes > 0
        sampler = self.store.sampler([int(k) for k in num_neighbors], replace=replace, seed=seed)
        self.loader = Loader(
            self.store, sampler, seeds, batch_size, shuffle=shuffle, drop_last=drop_last, prefetch=prefetch,
            seed=shuffle_seed, labels=False, planned_epochs=planned_epochs, plan_dir=plan_dir,
            plan_disk_budget=plan_disk_budget, transform=self._to_data,
        )

    def _to_data(self, b: Batch) -> Data:
        s = b.sample
        nodes = s.nodes
        data = Data(edge_index=torch.stack([s.row, s.col]), x=b.x)
        if self._labels:
            data.y = self.store.labels(nodes)
        data.n_id = nodes
        data.num_nodes = int(nodes.shape[0])
        data.num_sampled_nodes = s.nodes_per_hop.tolist()
        data.num_sampled_edges = s.edges_per_hop.tolist()
        seeds = torch.as_tensor(b.seeds)
        data.input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data.batch_size = int(seeds.shape[0])
        return data

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Data]:
        return iter(self.loader)

    def stats(self) -> Dict[str, Any]:
        """The latest epoch's pipeline stats (:meth:`tierfs.Loader.stats`)."""
        return self.loader.stats()

    def __repr__(self) -> str:
        return f"tierfs.pyg.NodeLoader({self.loader!r})"
