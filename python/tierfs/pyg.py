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
:class:`NeighborLoader`: PyG's NeighborLoader arguments, the same ``Data`` batches, from
tierfs's pipeline (sampling ahead, several gathers in flight) and, with ``planned_epochs``,
from planned epochs (docs/planned.md)::

    loader = tierfs.pyg.NeighborLoader(store, [25, 10], input_nodes="train", batch_size=1024,
                                       shuffle=True, planned_epochs=2)
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

__all__ = ["EDGE_TYPE", "FeatureStore", "GraphStore", "NeighborLoader", "NeighborSampler", "stores"]

#: The one edge type of a tierfs dataset, the ``group_name`` of its edge features.
EDGE_TYPE = ("node", "to", "node")


def _unwrap(store: Any) -> Store:
    if isinstance(store, Store):
        return store
    inner = getattr(store, "store", None)
    if isinstance(inner, Store):
        return inner
    raise TypeError(f"want a tierfs.Store (or a tierfs.pyg store), got {type(store).__name__}")


class FeatureStore(_PyGFeatureStore):
    """Read-only PyG ``FeatureStore`` over a :class:`tierfs.Store`.

    Node attributes (``group_name=None``): the store's feature as ``x``, the dataset's other node
    features by their names (``TensorAttr(None, "h")``), and, where the dataset has labels, the
    labels as ``y``. Edge features (``edge_attr``, ``edge_weight``, ...) by their names with
    ``group_name`` :data:`EDGE_TYPE` (or None; feature names are unique), indexed by edge id
    (``batch.e_id``). Tensors come back on the store's device (``tierfs.open(..., device=)``),
    or on the index's device for CUDA indices. A scalar feature (one value a row, as edge
    weights) gives a 1-D tensor.

    ``_multi_get_tensor`` serves all requested attributes of one feature with one native gather
    (their indices concatenated): the store's feature through its tiers, the others from disk.
    ``_get_tensor_size`` reads no data. ``get_all_tensor_attrs`` lists the node attributes only
    (PyG's loaders index every listed attribute by node id); ``get_all_edge_tensor_attrs`` the
    edge ones. Picklable (the store reopens in the receiving process).
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
        """The feature name attr reads ("" for the labels)."""
        name = attr.attr_name
        features = self.store.features
        g = attr.group_name
        if g is not None:
            if not (isinstance(g, (tuple, list)) and tuple(g) == EDGE_TYPE):
                raise KeyError(f"tierfs holds one node type (group_name=None) and one edge type ({EDGE_TYPE}), not {attr.group_name!r}")
            if name not in features or features[name]["of"] != "edge":
                raise KeyError(f"tierfs store has no edge attribute {name!r} (it has {self._names('edge')})")
            return name
        if name == self.x_name:
            return self.store.feature_name
        if name == self.y_name and self.store.num_classes > 0:
            return ""
        if name in features:
            return name
        raise KeyError(f"tierfs store has no tensor attribute {name!r} (it has {self._names('node') + self._names('edge')})")

    def _names(self, of: str) -> List[str]:
        """Attribute names of node ("node") or edge ("edge") attributes."""
        default = self.store.feature_name
        if of == "edge":
            return [n for n, f in self.store.features.items() if f["of"] == "edge"]
        names = [self.x_name] + [n for n, f in self.store.features.items() if f["of"] == "node" and n != default and n != self.x_name]
        return names + ([self.y_name] if self.store.num_classes > 0 else [])

    def _rows(self, kind: str) -> int:
        return self.store.num_nodes if kind == "" else int(self.store.features[kind]["rows"])

    def _index(self, index: Any, n: int) -> Tuple[Tensor, bool]:
        """(1-D int64 CPU or CUDA tensor of ids of n rows, whether the attr asked for one row)."""
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
        for kind in dict.fromkeys(kinds):
            which = [i for i, k in enumerate(kinds) if k == kind]
            # One native call per feature: distinct index tensors concatenated, results split.
            unique: dict = {}
            for i in which:
                unique.setdefault(id(attrs[i].index), []).append(i)
            indices, single = [], []
            for pos in unique.values():
                idx, one = self._index(attrs[pos[0]].index, self._rows(kind))
                indices.append(idx)
                single.append(one)
            if len(indices) > 1:
                dev = indices[0].device
                ids = torch.cat([t.to(dev) for t in indices])
            else:
                ids = indices[0]
            out = self.store.labels(ids) if kind == "" else self.store.gather(ids, feature=kind)
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
        row: Tuple[int, ...] = ()
        if kind != "":
            f = self.store.features[kind]
            row = () if f["scalar"] else (int(f["dim"]),)
        n = self._rows(kind)
        index = attr.index if attr.is_set("index") else None
        if index is None or (isinstance(index, slice) and index == slice(None)):
            rows = n
        elif isinstance(index, (int, np.integer)):
            return row
        elif isinstance(index, slice):
            rows = len(range(*index.indices(n)))
        elif isinstance(index, Tensor) and index.dtype == torch.bool:
            rows = int(index.sum())
        else:
            rows = len(index)
        return (rows,) + row

    def get_all_tensor_attrs(self) -> List[TensorAttr]:
        """The node attributes: ``x``, the other node features, and with labels ``y``."""
        return [self._tensor_attr_cls.cast(None, name) for name in self._names("node")]

    def get_all_edge_tensor_attrs(self) -> List[TensorAttr]:
        """The edge features, with ``group_name`` :data:`EDGE_TYPE`; index them by edge id."""
        return [self._tensor_attr_cls.cast(EDGE_TYPE, name) for name in self._names("edge")]

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
    ``num_sampled_nodes``/``num_sampled_edges`` per hop (for ``trim_to_layer``), ``edge`` the
    sampled edges' ids (PyG's loaders set ``batch.e_id`` from it) and ``batch=None`` (not
    disjoint).

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
            edge=s.e_id,
            batch=None,
            num_sampled_nodes=s.nodes_per_hop.tolist(),
            num_sampled_edges=s.edges_per_hop.tolist(),
            metadata=(index.input_id, index.time),
        )

    def sample_from_edges(self, index: Any, neg_sampling: Any = None) -> Any:
        raise NotImplementedError("tierfs.pyg.NeighborSampler samples from nodes only (no link loaders yet)")

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborSampler(num_neighbors={self.num_neighbors}, replace={self.replace}, seed={self.seed})"


# PyG NeighborLoader arguments that have no meaning here, and the value that is fine to pass.
_PYG_ONLY = {
    "input_time": None,
    "subgraph_type": "directional",
    "disjoint": False,
    "temporal_strategy": "uniform",
    "time_attr": None,
    "weight_attr": None,
    "transform_sampler_output": None,
    "is_sorted": False,
    "filter_per_worker": None,
    "neighbor_sampler": None,
    "directed": True,
    "num_workers": 0,
    "pin_memory": False,
    "persistent_workers": False,
}


def _input_nodes(store: Store, input_nodes: Any) -> Tensor:
    """PyG's input_nodes forms as int64 CPU ids: None (every node), a split name ("valid" is
    "val"), a bool mask of num_nodes, or ids (numpy, torch, list)."""
    n = store.num_nodes
    if input_nodes is None:
        return torch.arange(n)
    if isinstance(input_nodes, str):
        name = "val" if input_nodes == "valid" and "valid" not in store.split_names else input_nodes
        if name not in store.split_names:
            raise errors.KeyNotFoundError(f"tierfs.pyg.NeighborLoader: input_nodes {input_nodes!r} is not a split of this dataset (it has {store.split_names})")
        return torch.from_numpy(store.split(name))
    if isinstance(input_nodes, tuple):
        raise errors.NotSupportedError(f"tierfs.pyg.NeighborLoader: input_nodes {input_nodes!r}: tierfs holds one node type; pass the ids, a mask or a split name")
    if isinstance(input_nodes, (list, range)):
        input_nodes = np.asarray(input_nodes) if len(input_nodes) else np.empty(0, dtype=np.int64)
    if isinstance(input_nodes, np.ndarray):
        input_nodes = torch.from_numpy(input_nodes)
    if not isinstance(input_nodes, Tensor):
        raise errors.DTypeError(f"tierfs.pyg.NeighborLoader: input_nodes must be None, a split name, a mask or node ids, got {type(input_nodes).__name__}")
    t = input_nodes.detach().cpu()
    if t.dtype == torch.bool:
        if t.dim() != 1 or t.numel() != n:
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: a mask as input_nodes needs one entry per node ({n}), got shape {tuple(t.shape)}")
        return t.nonzero().view(-1)
    if t.is_floating_point() or t.is_complex():
        raise errors.DTypeError(f"tierfs.pyg.NeighborLoader: input_nodes must be integer ids or a bool mask, got {t.dtype}")
    if t.dim() != 1:
        raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: input_nodes must be 1-D, got shape {tuple(t.shape)}")
    t = t.to(torch.int64)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
        bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
        raise errors.OutOfRangeError(f"tierfs.pyg.NeighborLoader: input_nodes holds {bad}, outside [0, {n})")
    return t


class NeighborLoader:
    """PyG's ``NeighborLoader`` over a tierfs dataset, on tierfs's pipelined loader.

    Takes PyG's arguments that apply — ``num_neighbors``, ``input_nodes`` (None for every node, a
    split name such as ``"train"`` or ``"valid"``, a bool mask, or ids as numpy, torch or a
    list), ``replace``, ``transform``, ``batch_size``, ``shuffle``, ``drop_last`` — and yields the
    ``Data`` that PyG's ``NodeLoader`` over :func:`stores` with this module's
    :class:`NeighborSampler` gives: ``x``, ``y`` (every sampled node's label), ``edge_index``,
    ``n_id``, ``e_id`` (the sampled edges' ids in the dataset, its CSC positions),
    ``num_sampled_nodes``, ``num_sampled_edges``, ``input_id``, ``batch_size``, and the dataset's
    other features by name: node features by ``n_id``, edge features (``edge_attr``,
    ``edge_weight``, ...) by ``e_id``, each read from disk with one gather a batch (only the
    store's own feature, ``x``, is cached in tiers). With ``shuffle=False`` and the same sampler
    ``seed`` the batches equal PyG's NodeLoader's, field for field.

    Batches come from a :class:`tierfs.Loader`: sampled ahead, ``prefetch`` gathers in flight,
    ``Data`` (and ``transform``) made on the pipeline's threads; :meth:`stats` says which stage
    bounds the epoch. With ``shuffle=True`` each epoch's order comes from ``shuffle_seed`` and the
    epoch; ``planned_epochs=K`` plans K epochs up front and replays them (docs/planned.md).

    PyG arguments that do not apply (temporal sampling, disjoint subgraphs, edge weights, worker
    processes, ...) raise :class:`tierfs.NotSupportedError` unless they have their default value.

    Args:
        data: a :class:`tierfs.Store`, or the ``(FeatureStore, GraphStore)`` of :func:`stores`.
        num_neighbors: neighbors per node per hop; -1 takes all.
        seed: the sampler's seed (batch i samples with ``seed + i``).
        shuffle_seed, prefetch, planned_epochs, plan_dir, plan_disk_budget: as :class:`tierfs.Loader`.
    """

    def __init__(
        self,
        data: Any,
        num_neighbors: Sequence[int],
        input_nodes: Any = None,
        replace: bool = False,
        transform: Any = None,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        shuffle_seed: int = 0,
        prefetch: int = 4,
        planned_epochs: int = 0,
        plan_dir: Optional[str] = None,
        plan_disk_budget: Any = None,
        **pyg_kwargs: Any,
    ) -> None:
        for name, value in pyg_kwargs.items():
            if name not in _PYG_ONLY:
                raise TypeError(f"tierfs.pyg.NeighborLoader got an unexpected argument {name!r}")
            if value != _PYG_ONLY[name] and not (name == "filter_per_worker" and value is False):
                raise errors.NotSupportedError(
                    f"tierfs.pyg.NeighborLoader: {name}={value!r} is not supported (tierfs samples uniformly, "
                    f"directed, on its own threads in this process); leave it at {_PYG_ONLY[name]!r}"
                )
        if isinstance(data, tuple):
            data = data[0]
        self.store = _unwrap(data)
        if isinstance(num_neighbors, int) or not len(num_neighbors):
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: num_neighbors must be a list of neighbors per hop, got {num_neighbors!r}")
        seeds = _input_nodes(self.store, input_nodes)
        self.input_nodes = seeds
        self.transform = transform
        # input_id of a batch: its seeds' positions in input_nodes (any position of a repeated id).
        self._sorter = torch.argsort(seeds, stable=True)
        self._sorted = seeds[self._sorter]
        self._labels = self.store.num_classes > 0
        # The dataset's other features, read from disk per batch (only the store's own has tiers).
        features = self.store.features
        self._node_features = [n for n, f in features.items() if f["of"] == "node" and not f["default"] and n not in ("x", "y")]
        self._edge_features = [n for n, f in features.items() if f["of"] == "edge"]
        sampler = self.store.sampler([int(k) for k in num_neighbors], replace=replace, seed=seed)
        self.loader = Loader(
            self.store, sampler, seeds, batch_size, shuffle=shuffle, drop_last=drop_last, prefetch=prefetch,
            seed=shuffle_seed, labels=False, planned_epochs=planned_epochs, plan_dir=plan_dir,
            plan_disk_budget=plan_disk_budget, transform=self._to_data,
        )

    def _to_data(self, b: Batch) -> Any:
        s = b.sample
        nodes = s.nodes
        data = Data(edge_index=torch.stack([s.row, s.col]), x=b.x)
        if self._labels:
            data.y = self.store.labels(nodes)
        data.n_id = nodes
        data.e_id = s.e_id
        data.num_nodes = int(nodes.shape[0])
        for name in self._node_features:
            data[name] = self.store.gather(nodes, feature=name)
        for name in self._edge_features:
            data[name] = self.store.gather(s.e_id, feature=name)
        data.num_sampled_nodes = s.nodes_per_hop.tolist()
        data.num_sampled_edges = s.edges_per_hop.tolist()
        seeds = torch.as_tensor(b.seeds)
        data.input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data.batch_size = int(seeds.shape[0])
        return data if self.transform is None else self.transform(data)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Data]:
        return iter(self.loader)

    def stats(self) -> Dict[str, Any]:
        """The latest epoch's pipeline stats (:meth:`tierfs.Loader.stats`)."""
        return self.loader.stats()

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborLoader({self.loader!r})"
