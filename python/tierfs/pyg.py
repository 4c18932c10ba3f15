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

Worker processes: keep ``num_workers=0`` (``filter_per_worker`` then changes nothing). tierfs already
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

from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import itertools
import threading
import warnings

import numpy as np
import torch
from torch import Tensor

with warnings.catch_warnings():
    # PyG 2.8 calls torch.jit.script when it is imported (torch_geometric/nn/pool/{select,connect}/
    # base.py), which torch deprecates with a DeprecationWarning (a FutureWarning in newer torch):
    # neither tierfs's call nor the user's, so `import tierfs.pyg` does not pass it on.
    warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated")
    import torch_geometric  # noqa: F401
from torch_geometric.data import Data, EdgeAttr, HeteroData, TensorAttr
from torch_geometric.data import FeatureStore as _PyGFeatureStore
from torch_geometric.data import GraphStore as _PyGGraphStore
from torch_geometric.data.graph_store import EdgeLayout
from torch_geometric.loader import LinkLoader as _PyGLinkLoader
from torch_geometric.sampler import BaseSampler, EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling, NodeSamplerInput, NumNeighbors, SamplerOutput
from torch_geometric.sampler.base import SubgraphType
from torch_geometric.typing import EdgeTypeStr

from . import errors
from .loader import Batch, Loader
from .pipeline import MAX_DEPTH, Pipeline, pipeline_stats
from .hetero import HeteroSample, HeteroSampler, edge_type_tuple, typed_csc
from .store import Store
from .frompyg import graph_attrs as _graph_attrs
from .edgeids import INPUT_EDGE_ID, _edge_feature_info, _input_to_csc, _map_input_ids, csc_edge_ids, input_edge_ids

__all__ = ["EDGE_TYPE", "INPUT_EDGE_ID", "FeatureStore", "GraphStore", "LinkNeighborLoader", "NeighborLoader", "NeighborSampler",
           "csc_edge_ids", "input_edge_ids", "num_neighbors_of", "stores"]

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

    Node attributes (``group_name=None``): the store's feature under its own name (``x`` for a
    dataset ingested from ``data.x`` or ``features=``, ``feat`` for a ``data.feat``: as PyG's
    in-memory ``Data`` names it; ``x=`` serves it under another name), the dataset's other node
    features by their names (``TensorAttr(None, "h")``), and, where the dataset has labels, the
    labels as ``y``. Edge features (``edge_attr``, ``edge_weight``, ...) by their names with
    ``group_name`` :data:`EDGE_TYPE` (or None; feature names are unique), indexed as PyG's
    in-memory ``data.edge_attr`` is: by position in the ingested ``edge_index`` (``batch.e_id``;
    :func:`input_edge_ids`). Tensors come back on the store's device (``tierfs.open(..., device=)``),
    or on the index's device for CUDA indices. A scalar feature (one value a row, as edge
    weights) gives a 1-D tensor.

    ``_multi_get_tensor`` serves all requested attributes of one feature with one native gather
    (their indices concatenated): the store's feature through its tiers, the others from disk.
    ``_get_tensor_size`` reads no data. ``get_all_tensor_attrs`` lists the node attributes only
    (PyG's loaders index every listed attribute by node id); ``get_all_edge_tensor_attrs`` the
    edge ones. Picklable (the store reopens in the receiving process).

    A heterogeneous store (``store.is_hetero``) keys node attributes by ``group_name`` = node
    type: its default feature (through its memory tiers) under its own name or ``x=``, its
    other features by name, ``y`` where the type has labels; edge features by ``group_name`` = the edge type's
    ``(src, rel, dst)``. ``_multi_get_tensor`` makes one native gather per (type, feature) in
    the request. A type or attribute the dataset lacks is a ``KeyError`` naming what it has.
    """

    def __init__(self, store: Store, x: Optional[str] = None, y: str = "y") -> None:
        super().__init__()
        self.store = store
        self.x_name = x
        self.y_name = y
        self._inverse: Dict[Any, Optional[Tensor]] = {}  # edge type -> _input_to_csc, read once

    def x_of(self, node_type: Optional[str] = None) -> Optional[str]:
        """The attribute name of the default feature of node_type (None: the one-type store's):
        its own name (``x`` for ``from_pyg``'s ``data.x``, ``feat`` for a ``data.feat``), or
        the ``x`` given to the constructor. None where the type has no features."""
        if node_type is None and not self.store.is_hetero:
            default: Optional[str] = self.store.feature_name
        else:
            feats = self.store.types["node_types"][node_type]["features"]
            default = next((n for n, f in feats.items() if f["default"]), None)
        if default is None:
            return None
        return self.x_name if self.x_name is not None else default

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

    def get_tensor_size(self, *args: Any, **kwargs: Any) -> Optional[Tuple[int, ...]]:
        """As PyG's, with an unset ``group_name`` meaning the one node type (None):
        ``get_tensor_size(attr_name="x")`` is the size of ``get_tensor(attr_name="x")``."""
        attr = self._tensor_attr_cls.cast(*args, **kwargs)
        if not attr.is_set("group_name"):
            attr.group_name = None
        if not attr.is_set("index"):
            attr.index = None
        return self._get_tensor_size(attr)

    def __getitem__(self, key: Any) -> Any:
        """``fs[None, "x"]`` is the whole column and ``fs[None, "x", ids]`` its rows (PyG would give
        a view for the former); other partial keys give PyG's views."""
        attr = self._tensor_attr_cls.cast(key)
        if attr.is_set("group_name") and attr.is_set("attr_name") and not attr.is_set("index"):
            attr.index = None
        return super().__getitem__(attr)

    # A source is what an attribute reads: ("node", type, feature), ("label", type, "") or
    # ("edge", edge type, feature); type is None in a one-type store.

    def _source(self, attr: TensorAttr) -> Tuple[str, Any, str]:
        if self.store.is_hetero:
            return self._hetero_source(attr)
        name = attr.attr_name
        features = self.store.features
        g = attr.group_name
        if g is not None:
            if not (isinstance(g, (tuple, list)) and tuple(g) == EDGE_TYPE):
                raise KeyError(f"tierfs holds one node type (group_name=None) and one edge type ({EDGE_TYPE}), not {attr.group_name!r}")
            if name not in features or features[name]["of"] != "edge" or name == INPUT_EDGE_ID:
                raise KeyError(f"tierfs store has no edge attribute {name!r} (it has {self._names('edge')})")
            return ("edge", None, name)
        if name == self.x_of():
            return ("node", None, self.store.feature_name)
        if name == self.y_name and self.store.num_classes > 0:
            return ("label", None, "")
        if name in features and name != INPUT_EDGE_ID:
            return (features[name]["of"], None, name)
        raise KeyError(f"tierfs store has no tensor attribute {name!r} (it has {self._names('node') + self._names('edge')})")

    def _hetero_source(self, attr: TensorAttr) -> Tuple[str, Any, str]:
        g, name = attr.group_name, attr.attr_name
        types = self.store.types
        if isinstance(g, (tuple, list)) and len(g) == 3:
            et = tuple(g)
            if et not in types["edge_types"]:
                raise KeyError(f"tierfs dataset has no edge type {et} (it has {list(types['edge_types'])})")
            feats = types["edge_types"][et]["features"]
            if name not in feats or name == INPUT_EDGE_ID:
                raise KeyError(f"tierfs edge type {et} has no attribute {name!r} (it has {[n for n in feats if n != INPUT_EDGE_ID]})")
            return ("edge", et, name)
        if g not in types["node_types"]:
            raise KeyError(f"tierfs dataset has no node type {g!r} (it has {list(types['node_types'])})")
        t = types["node_types"][g]
        default = next((n for n, f in t["features"].items() if f["default"]), None)
        if default is not None and name == self.x_of(g):
            return ("node", g, default)
        if name == self.y_name and t["labels"]:
            return ("label", g, "")
        if name in t["features"]:  # the default feature by its own name too
            return ("node", g, name)
        raise KeyError(f"tierfs node type {g!r} has no attribute {name!r} (it has {self._type_names(g)})")

    def _type_names(self, node_type: str) -> List[str]:
        """Attribute names of a node type of a heterogeneous store: x (its default feature), the
        other features, y where it has labels."""
        t = self.store.types["node_types"][node_type]
        feats = t["features"]
        default = next((n for n, f in feats.items() if f["default"]), None)
        x = self.x_of(node_type)
        names = ([x] if x is not None else []) + [n for n in feats if n != default and n != x]
        return names + ([self.y_name] if t["labels"] else [])

    def _names(self, of: str) -> List[str]:
        """Attribute names of node ("node") or edge ("edge") attributes of a one-type store."""
        default = self.store.feature_name
        if of == "edge":
            return [n for n, f in self.store.features.items() if f["of"] == "edge" and n != INPUT_EDGE_ID]
        x = self.x_of()
        names = ([x] if x is not None else []) + [n for n, f in self.store.features.items() if f["of"] == "node" and n != default and n != x]
        return names + ([self.y_name] if self.store.num_classes > 0 else [])

    def _info(self, src: Tuple[str, Any, str]) -> Optional[Dict[str, Any]]:
        """The feature a source reads (None for labels)."""
        of, t, name = src
        if of == "label":
            return None
        if t is None:
            return self.store.features[name]
        types = self.store.types["edge_types" if of == "edge" else "node_types"]
        return types[t]["features"][name]

    def _input_to_csc(self, edge_type: Any) -> Optional[Tensor]:
        if edge_type not in self._inverse:
            self._inverse[edge_type] = _input_to_csc(self.store, edge_type)
        return self._inverse[edge_type]

    def _rows(self, src: Tuple[str, Any, str]) -> int:
        info = self._info(src)
        if info is None:
            return self.store.num_nodes if src[1] is None else self.store.num_nodes_of(src[1])
        if src[0] == "edge":
            inverse = self._input_to_csc(src[1])
            if inverse is not None:
                return int(inverse.numel())
        return int(info["rows"])

    def _read(self, src: Tuple[str, Any, str], ids: Tensor) -> Any:
        """One native call: the source's rows of ids (edges: positions in the ingested edge_index)."""
        of, t, name = src
        if of == "label":
            return self.store.labels(ids, node_type=t)
        if of == "edge":
            ids = _map_input_ids(self._input_to_csc(t), ids, f"edge attribute {name!r}")
        if t is None:
            out = self.store.gather(ids, feature=name)
        elif of == "edge":
            out = self.store.gather(ids, edge_type=t, feature=name)
        else:
            out = self.store.gather(ids, node_type=t, feature=name)
        info = self._info(src)
        if info is not None and info["scalar"] and out.ndim == 2:  # the default feature's tiers give (n, 1)
            out = out.reshape(-1)
        return out

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
        sources = [self._source(a) for a in attrs]
        results: List[Optional[Tensor]] = [None] * len(attrs)
        for src in dict.fromkeys(sources):
            which = [i for i, k in enumerate(sources) if k == src]
            # One native call per (type, feature): distinct index tensors concatenated, results split.
            unique: dict = {}
            for i in which:
                unique.setdefault(id(attrs[i].index), []).append(i)
            indices, single = [], []
            for pos in unique.values():
                idx, one = self._index(attrs[pos[0]].index, self._rows(src))
                indices.append(idx)
                single.append(one)
            if len(indices) > 1:
                dev = indices[0].device
                ids = torch.cat([t.to(dev) for t in indices])
            else:
                ids = indices[0]
            out = self._read(src, ids)
            if not isinstance(out, Tensor):
                out = torch.from_numpy(out)
            parts = out.split([t.numel() for t in indices]) if len(indices) > 1 else [out]
            for pos, part, one in zip(unique.values(), parts, single):
                for i in pos:
                    results[i] = part[0] if one else part
        return results

    def _get_tensor_size(self, attr: TensorAttr) -> Optional[Tuple[int, ...]]:
        try:
            src = self._source(attr)
        except KeyError:
            return None
        info = self._info(src)
        row: Tuple[int, ...] = () if info is None or info["scalar"] else (int(info["dim"]),)
        n = self._rows(src)
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
        """The node attributes: ``x``, the other node features, and with labels ``y``; in a
        heterogeneous store those of every node type, its name the ``group_name``."""
        if self.store.is_hetero:
            return [self._tensor_attr_cls.cast(t, name) for t in self.store.node_types for name in self._type_names(t)]
        return [self._tensor_attr_cls.cast(None, name) for name in self._names("node")]

    def get_all_edge_tensor_attrs(self) -> List[TensorAttr]:
        """The edge features, with ``group_name`` their edge type (:data:`EDGE_TYPE` in a one-type
        store); index them by edge id."""
        if self.store.is_hetero:
            return [self._tensor_attr_cls.cast(et, name) for et, e in self.store.types["edge_types"].items() for name in e["features"] if name != INPUT_EDGE_ID]
        return [self._tensor_attr_cls.cast(EDGE_TYPE, name) for name in self._names("edge")]

    def __repr__(self) -> str:
        return f"tierfs.pyg.FeatureStore({self.store!r})"


class GraphStore(_PyGGraphStore):
    """Read-only PyG ``GraphStore`` over a :class:`tierfs.Store`'s topology.

    Advertises one edge type (``edge_type=None``) in CSC layout with ``size=(N, N)``, with or
    without edges (as PyG's in-memory ``Data``: a homogeneous graph); a heterogeneous store one ``EdgeAttr`` per edge type ``(src, rel, dst)``, CSC, ``size=(number
    of src nodes, number of dst nodes)``. The
    :class:`NeighborSampler` never reads edges through it. Asking for the edge index
    (``get_edge_index``, ``coo()``, ``csr()``, ``csc()``) materializes the whole topology in
    memory (:meth:`tierfs.Store.csc`: 8 bytes per edge and per node, more for COO/CSR); it is
    not cached, so keep the result if you need it twice. Its columns are in tierfs's edge id
    (CSC) order; :func:`input_edge_ids` gives each one's position in the ingested ``edge_index``,
    and ``csc()``, ``csr()`` and ``coo()`` return it as their permutation, as PyG's in-memory
    ``Data`` does: column p is input edge ``perm[p]``, the row of its edge features in
    :class:`FeatureStore` and what a PyG sampler's ``e_id`` then indexes.
    """

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def _put_edge_index(self, edge_index: Any, edge_attr: EdgeAttr) -> bool:
        raise errors.NotSupportedError("tierfs.pyg.GraphStore is read-only; build datasets with tierfs.ingest()")

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        return False

    def get_all_edge_attrs(self) -> List[EdgeAttr]:
        if self.store.is_hetero:
            store = self.store
            return [
                EdgeAttr(et, EdgeLayout.CSC, is_sorted=True, size=(store.num_nodes_of(et[0]), store.num_nodes_of(et[2])))
                for et in store.edge_types
            ]
        n = self.store.num_nodes  # one edge type, with or without edges (else PyG takes the store for heterogeneous)
        return [EdgeAttr(None, EdgeLayout.CSC, is_sorted=True, size=(n, n))]

    def _get_edge_index(self, edge_attr: EdgeAttr) -> Optional[Tuple[Tensor, Tensor]]:
        if self.store.is_hetero:
            et = edge_attr.edge_type
            if et is None or tuple(et) not in self.store.types["edge_types"]:
                return None
            et = tuple(et)
            indptr, indices = typed_csc(self.store, et)
            n_src, n_dst = self.store.num_nodes_of(et[0]), self.store.num_nodes_of(et[2])
        else:
            if edge_attr.edge_type is not None:
                return None
            if self.store.num_edges == 0:
                indptr, indices = np.zeros(self.store.num_nodes + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
            else:
                indptr, indices = self.store.csc()
            n_src = n_dst = self.store.num_nodes
        if edge_attr.layout == EdgeLayout.CSC:
            return torch.from_numpy(indices), torch.from_numpy(indptr)
        dst = np.repeat(np.arange(n_dst, dtype=np.int64), np.diff(indptr))
        if edge_attr.layout == EdgeLayout.COO:
            return torch.from_numpy(indices), torch.from_numpy(dst)
        order = np.argsort(indices, kind="stable")  # CSR: by source
        rowptr = np.zeros(n_src + 1, dtype=np.int64)
        np.cumsum(np.bincount(indices, minlength=n_src), out=rowptr[1:])
        return torch.from_numpy(rowptr), torch.from_numpy(dst[order])

    def _edge_to_layout(self, attr: EdgeAttr, layout: EdgeLayout, store: bool = False) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """PyG's conversion of attr's edges to layout, its permutation composed with the input
        edge order (None where edge ids are input positions already)."""
        if store:
            raise errors.NotSupportedError("tierfs.pyg.GraphStore is read-only: a converted layout cannot be stored (store=False)")
        row, col, perm = super()._edge_to_layout(attr, layout, False)
        edge_type = tuple(attr.edge_type) if self.store.is_hetero else None
        if INPUT_EDGE_ID in _edge_feature_info(self.store, edge_type):
            count = self.store.num_edges_of(edge_type) if self.store.is_hetero else self.store.num_edges
            order = input_edge_ids(self.store, torch.arange(count), edge_type)
            perm = order if perm is None else order[perm]
        return row, col, perm

    def __repr__(self) -> str:
        return f"tierfs.pyg.GraphStore({self.store!r})"


def stores(store: Store) -> Tuple[FeatureStore, GraphStore]:
    """``(FeatureStore(store), GraphStore(store))``, the ``data`` argument of PyG loaders."""
    return FeatureStore(store), GraphStore(store)


class _PlannedFeatureStore(FeatureStore):
    """The FeatureStore of a planned :class:`LinkNeighborLoader`: the default feature's rows of
    the batch being made come from its plan (``batch``: per node type, None for a one-type store,
    the batch's sampled nodes and their planned rows), every other read as FeatureStore's."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._local = threading.local()  # each pipeline thread makes its own batch

    @property
    def batch(self) -> Dict[Any, Tuple[Tensor, Any]]:
        return getattr(self._local, "batch", {})

    @batch.setter
    def batch(self, value: Dict[Any, Tuple[Tensor, Any]]) -> None:
        self._local.batch = value

    def __reduce__(self):
        return (FeatureStore, (self.store, self.x_name, self.y_name))

    def _read(self, src: Tuple[str, Any, str], ids: Tensor) -> Any:
        of, t, name = src
        hit = self.batch.get(t) if of == "node" else None
        if hit is not None and name == self._default_name(t) and ids.numel() == hit[0].numel() and torch.equal(ids.cpu(), hit[0]):
            out = torch.from_numpy(hit[1])
            if self.store.device != "cpu":
                out = out.to(self.store.device)
            info = self._info(src)
            if info is not None and info["scalar"] and out.ndim == 2:
                out = out.reshape(-1)
            return out
        return super()._read(src, ids)

    def _default_name(self, t: Any) -> Optional[str]:
        if t is None:
            return self.store.feature_name
        return next((n for n, f in self.store.types["node_types"][t]["features"].items() if f["default"]), None)


def _edge_type_of(key: Any) -> Tuple[str, str, str]:
    """An edge type key of num_neighbors as a tuple: PyG's tuple, its ``EdgeTypeStr``
    (``"src__rel__dst"``) or tierfs's ``"src:rel:dst"``."""
    if isinstance(key, EdgeTypeStr):
        return tuple(key.to_tuple())  # type: ignore[return-value]
    if isinstance(key, str) and ":" not in key and len(key.split("__")) == 3:
        return tuple(key.split("__"))  # type: ignore[return-value]
    return edge_type_tuple(key)


def _edge_type_key(key: Any) -> Optional[Tuple[str, str, str]]:
    """key as an edge type tuple, or None when it names none."""
    try:
        return _edge_type_of(key)
    except (errors.Error, TypeError, ValueError):
        return None


def _fanouts(value: Any, what: str) -> List[int]:
    """value as a list of int fanouts, or an InvalidArgumentError naming what."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise errors.InvalidArgumentError(f"tierfs.pyg: {what} must be a list of neighbors per hop (ints, -1 for all), got {value!r}")
    out = []
    for k in value:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) and not (isinstance(k, Tensor) and k.numel() == 1 and not k.is_floating_point()):
            raise errors.InvalidArgumentError(f"tierfs.pyg: {what} must be a list of neighbors per hop (ints, -1 for all), got {value!r}")
        out.append(int(k))
    return out


def num_neighbors_of(store: Store, num_neighbors: Any) -> Union[List[int], Dict[Tuple[str, str, str], List[int]]]:
    """PyG's ``num_neighbors`` resolved against a store: a list of fanouts per hop for a one-type
    store; for a heterogeneous one ``{edge type: [fanout per hop]}`` over every edge type of the
    dataset. Takes a list (every edge type alike), a dict keyed by edge type (tuples,
    ``EdgeTypeStr`` or ``"src:rel:dst"``) or PyG's ``NumNeighbors`` (its ``default`` fills the
    edge types the dict leaves out). An edge type the dataset lacks, one left out with no
    default, or hop counts that differ raise ``tierfs.InvalidArgumentError`` naming it."""
    default = None
    if isinstance(num_neighbors, NumNeighbors):
        default = num_neighbors.default
        num_neighbors = num_neighbors.values
    if isinstance(num_neighbors, (int, np.integer)) or isinstance(num_neighbors, (str, bytes)):
        raise errors.InvalidArgumentError(f"tierfs.pyg: num_neighbors must be a list of neighbors per hop or a dict of them per edge type, got {num_neighbors!r}")
    if not store.is_hetero:
        if isinstance(num_neighbors, Mapping):
            only = [tuple(et) for et in store.edge_types] or [EDGE_TYPE]
            keys = list(num_neighbors)
            if len(keys) != 1 or _edge_type_key(keys[0]) not in only:
                raise errors.InvalidArgumentError(
                    f"tierfs.pyg: num_neighbors {num_neighbors!r}: this dataset has one node type and one edge type ({only[0]}); "
                    f"pass a list of neighbors per hop (or a dict with that one edge type)")
            fanouts = num_neighbors[keys[0]]
            return _fanouts([fanouts] if isinstance(fanouts, (int, np.integer)) else fanouts, f"num_neighbors[{keys[0]!r}]")
        return _fanouts(num_neighbors, "num_neighbors")
    edge_types = [tuple(et) for et in store.edge_types]
    if not isinstance(num_neighbors, Mapping):
        per_hop = _fanouts(num_neighbors, "num_neighbors")
        return {et: list(per_hop) for et in edge_types}
    given: Dict[Tuple[str, str, str], List[int]] = {}
    for key, fanouts in num_neighbors.items():
        et = _edge_type_of(key)
        if et not in edge_types:
            raise errors.InvalidArgumentError(f"tierfs.pyg: num_neighbors names edge type {et}, which the dataset lacks (it has {', '.join(map(str, edge_types))})")
        given[et] = _fanouts([fanouts] if isinstance(fanouts, (int, np.integer)) else fanouts, f"num_neighbors[{key!r}]")
    out: Dict[Tuple[str, str, str], List[int]] = {}
    for et in edge_types:
        if et in given:
            out[et] = given[et]
        elif default is not None:
            out[et] = _fanouts(default, "num_neighbors.default")
        else:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg: num_neighbors has no fanouts for edge type {et} (give every edge type of the dataset, or "
                f"torch_geometric.sampler.NumNeighbors(values, default=[...]) for those left out)")
    hops = {len(v) for v in out.values()}
    if len(hops) > 1:
        raise errors.InvalidArgumentError(f"tierfs.pyg: num_neighbors must have the same number of hops for every edge type, got {out}")
    return out


class NeighborSampler(BaseSampler):
    """Uniform k-hop neighbor sampling in the tierfs core, as a PyG ``BaseSampler``.

    ``sample_from_nodes`` is one native call per batch and returns a ``SamplerOutput`` with
    ``node`` (seeds first, in input order), ``row``/``col`` (local ids; messages flow row → col),
    ``num_sampled_nodes``/``num_sampled_edges`` per hop (for ``trim_to_layer``), ``edge`` the
    sampled edges' positions in the ingested ``edge_index`` (PyG's loaders set ``batch.e_id``
    from it, so ``edge_attr[batch.e_id]`` of the user's own tensors is right, as in memory;
    :func:`csc_edge_ids` gives tierfs's CSC positions) and ``batch=None`` (not disjoint).

    On a heterogeneous store (``store.is_hetero``) ``num_neighbors`` is PyG's dict of fanouts
    per edge type (or a ``NumNeighbors``, or a list for every edge type; see
    :func:`num_neighbors_of`), the input's ``input_type`` names the seeds' node type, and
    ``sample_from_nodes`` returns a ``HeteroSamplerOutput`` laid out as PyG's NeighborSampler
    lays it out: per node type the sampled ids (seeds first, then by hop), per edge type
    ``row`` (src-type local ids), ``col`` (dst-type local ids) and ``edge`` (edge ids), counts
    per hop per type, ``batch=None``, ``metadata=(input_id, time)``.

    Args:
        store: a :class:`tierfs.Store` (or one of this module's stores).
        num_neighbors: neighbors per node per hop, e.g. ``[25, 10]``; -1 takes all. For a
            heterogeneous store, a dict ``{(src, rel, dst): [per hop]}`` or ``NumNeighbors``.
        replace: sample with replacement.
        seed: the i-th call samples with ``seed + i``: same seed, same batches.
        workers: goroutines of the sampler (0: CPUs); results do not depend on it.
        strict_negatives, exclude_seed_edges, undirected: link sampling only (beyond PyG):
            redraw negatives that are edges; leave the seed edges (and with ``undirected``
            their reverses) out of the sampled neighborhoods.
        reverse_edge_types: heterogeneous link sampling with ``exclude_seed_edges``:
            ``{edge type: the edge type holding its reverses}`` (DGL's ``reverse_etypes``; e.g.
            ``{("author", "writes", "paper"): ("paper", "rev_writes", "author")}``), whose
            reverses of the seed edges are left out too.
    """

    def __init__(
        self,
        store: Union[Store, FeatureStore, GraphStore],
        num_neighbors: Any,
        replace: bool = False,
        seed: int = 0,
        workers: int = 0,
        strict_negatives: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
        reverse_edge_types: Optional[Dict[Any, Any]] = None,
    ) -> None:
        super().__init__()
        self.store = _unwrap(store)
        self.num_neighbors = num_neighbors_of(self.store, num_neighbors)
        self.replace = bool(replace)
        self.seed = int(seed)
        if self.store.is_hetero:
            if undirected:
                raise errors.InvalidArgumentError("undirected: a heterogeneous store names the reverse of each edge type instead (reverse_edge_types={edge type: reverse edge type})")
            self.link_options: Dict[str, Any] = dict(strict=bool(strict_negatives), exclude_seed_edges=bool(exclude_seed_edges), reverse_edge_types=reverse_edge_types)
        else:
            if reverse_edge_types:
                raise errors.InvalidArgumentError("reverse_edge_types: a homogeneous store has one edge type; pass undirected=True when it holds each edge's reverse")
            self.link_options = dict(strict=bool(strict_negatives), exclude_seed_edges=bool(exclude_seed_edges), undirected=bool(undirected))
        self.sampler = self.store.sampler(self.num_neighbors, replace=replace, seed=seed, workers=workers)

    @property
    def is_hetero(self) -> bool:
        return isinstance(self.sampler, HeteroSampler)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> Union[SamplerOutput, HeteroSamplerOutput]:
        seeds = index.node
        if seeds.device.type != "cpu":
            seeds = seeds.cpu()
        if self.is_hetero:
            if index.input_type is None:
                raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborSampler: name the seeds' node type (input_type, one of {', '.join(self.store.node_types)})")
            h = self.sampler.sample(seeds, index.input_type)
            return HeteroSamplerOutput(
                node=h.node,
                row=h.row,
                col=h.col,
                edge=_input_edge_ids_by_type(self.store, h.edge),
                batch=None,
                num_sampled_nodes=h.num_sampled_nodes,
                num_sampled_edges=h.num_sampled_edges,
                metadata=(index.input_id, index.time),
            )
        if index.input_type is not None and index.input_type != self.store.node_type:
            raise ValueError(f"tierfs holds one node type; got input_type {index.input_type!r}")
        s = self.sampler.sample(seeds)
        return SamplerOutput(
            node=s.nodes,
            row=s.row,
            col=s.col,
            edge=input_edge_ids(self.store, s.e_id),
            batch=None,
            num_sampled_nodes=s.nodes_per_hop.tolist(),
            num_sampled_edges=s.edges_per_hop.tolist(),
            metadata=(index.input_id, index.time),
        )

    def sample_from_edges(self, inputs: EdgeSamplerInput, neg_sampling: Optional[NegativeSampling] = None) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """Samples around the seed edges ``(inputs.row[i], inputs.col[i])`` in one native call
        (:meth:`tierfs.Sampler.sample_from_edges`) and returns PyG's ``SamplerOutput`` as PyG's
        NeighborSampler's ``edge_sample`` (``disjoint=False``) lays it out: ``node`` the sorted
        distinct endpoints of the seed edges and negatives first, then each hop's new nodes;
        ``metadata = (input_id, edge_label_index, edge_label, None)`` without negatives or with
        ``"binary"`` ones, ``(input_id, src_index, dst_pos_index, dst_neg_index, None)`` with
        ``"triplet"`` ones. On a heterogeneous store ``inputs.input_type`` names the seed edges'
        type and the answer is a ``HeteroSamplerOutput`` (per node type, the sorted distinct
        endpoints of that type first) with the same metadata, sources as local ids of the edge
        type's source type, destinations of its destination type. No temporal sampling, no
        weighted negatives."""
        if inputs.time is not None:
            raise errors.NotSupportedError("tierfs.pyg.NeighborSampler: temporal link sampling (edge_label_time) is not supported")
        if self.is_hetero:
            return self._sample_hetero_from_edges(inputs, neg_sampling)
        if inputs.input_type is not None and tuple(inputs.input_type) != EDGE_TYPE:
            raise ValueError(f"tierfs holds one edge type, {EDGE_TYPE}; got input_type {inputs.input_type!r}")
        row, col = _host_pair(inputs)
        s = self.sampler.sample_from_edges(row, col, labels=inputs.label, neg_sampling=neg_sampling, **self.link_options)
        return self._link_output(inputs, s, neg_sampling)

    def _link_output(self, inputs: EdgeSamplerInput, s: Any, neg_sampling: Optional[NegativeSampling]) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """PyG's sampler output of the link sample s of the seed edges inputs (a
        :class:`tierfs.LinkSample` or :class:`tierfs.HeteroLinkSample`, torch tensors)."""
        metadata = _link_metadata(inputs, s, neg_sampling)
        if self.is_hetero:
            return self._hetero_link_output(s, metadata)
        return SamplerOutput(
            node=s.nodes,
            row=s.row,
            col=s.col,
            edge=input_edge_ids(self.store, s.e_id),
            batch=None,
            num_sampled_nodes=s.nodes_per_hop.tolist(),
            num_sampled_edges=s.edges_per_hop.tolist(),
            metadata=metadata,
        )

    def _sample_hetero_from_edges(self, inputs: EdgeSamplerInput, neg_sampling: Optional[NegativeSampling]) -> HeteroSamplerOutput:
        """sample_from_edges on a heterogeneous store (HeteroSampler.sample_from_edges)."""
        if inputs.input_type is None:
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborSampler: name the seed edges' type (input_type, one of {self.store.edge_types})")
        row, col = _host_pair(inputs)
        h = self.sampler.sample_from_edges(tuple(inputs.input_type), row, col, labels=inputs.label, neg_sampling=neg_sampling, **self.link_options)
        return self._hetero_link_output(h, _link_metadata(inputs, h, neg_sampling))

    def _hetero_link_output(self, h: Any, metadata: tuple) -> HeteroSamplerOutput:
        return HeteroSamplerOutput(
            node=h.node,
            row=h.row,
            col=h.col,
            edge=_input_edge_ids_by_type(self.store, h.edge),
            batch=None,
            num_sampled_nodes=h.num_sampled_nodes,
            num_sampled_edges=h.num_sampled_edges,
            metadata=metadata,
        )

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborSampler(num_neighbors={self.num_neighbors}, replace={self.replace}, seed={self.seed})"


def _host_pair(inputs: EdgeSamplerInput) -> tuple:
    """The seed edges' (row, col) on the host, where the sampler takes them."""
    row, col = inputs.row, inputs.col
    if row.device.type != "cpu":
        row, col = row.cpu(), col.cpu()
    return row, col


def _link_sample_to_torch(s: Any) -> Any:
    """A numpy LinkSample or HeteroLinkSample (a plan's) as the sampler gives it for CPU torch
    seed edges: every array a torch tensor."""
    def conv(a: Any) -> Any:
        return None if a is None else torch.from_numpy(np.ascontiguousarray(a))

    names = ["edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"]
    if isinstance(s, HeteroSample):
        for name in ("node", "row", "col", "edge"):
            setattr(s, name, {k: conv(v) for k, v in getattr(s, name).items()})
    else:
        names += ["nodes", "row", "col", "nodes_per_hop", "edges_per_hop", "e_id"]
    for name in names:
        setattr(s, name, conv(getattr(s, name)))
    return s


def _link_metadata(inputs: EdgeSamplerInput, s: Any, neg_sampling: Optional[NegativeSampling]) -> tuple:
    """The metadata PyG's LinkLoader expects of a link sample s (one type's or several types'):
    triplet (input_id, src_index, dst_pos_index, dst_neg_index, None), else (input_id,
    edge_label_index, edge_label, None) — the input's labels as they are without negatives."""
    if neg_sampling is not None and NegativeSampling.cast(neg_sampling).is_triplet():
        return (inputs.input_id, s.src_index, s.dst_pos_index, s.dst_neg_index, None)
    edge_label = s.edge_label
    if inputs.label is not None and neg_sampling is None:
        edge_label = inputs.label  # PyG passes the input's labels through as they are
    return (inputs.input_id, s.edge_label_index, edge_label, None)


def _input_edge_ids_by_type(store: Store, edges: Dict[Any, Any]) -> Dict[Any, Any]:
    """input_edge_ids of each edge type's sampled edge ids (None stays None)."""
    return {et: None if e is None else input_edge_ids(store, e, et) for et, e in edges.items()}


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


def _hetero_input_nodes(store: Store, input_nodes: Any) -> Tuple[str, Tensor]:
    """PyG's heterogeneous input_nodes, ``node_type`` or ``(node_type, None | split name | mask |
    ids)``, as (node type, int64 CPU ids)."""
    types = store.node_types
    if isinstance(input_nodes, str):
        input_nodes = (input_nodes, None)
    if not (isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str)):
        raise errors.InvalidArgumentError(
            f"tierfs.pyg.NeighborLoader: a heterogeneous dataset takes input_nodes=(node type, ids, mask, split name or None), got {input_nodes!r} (node types: {', '.join(types)})")
    node_type, nodes = input_nodes
    if node_type not in types:
        raise errors.KeyNotFoundError(f"tierfs.pyg.NeighborLoader: input_nodes names node type {node_type!r}, which the dataset lacks (it has {', '.join(types)})")
    return node_type, _input_nodes(store, nodes, node_type)


def _input_nodes(store: Store, input_nodes: Any, node_type: Optional[str] = None) -> Tensor:
    """PyG's input_nodes forms as int64 CPU ids (of node_type; None: the store's own): None
    (every node), a split name ("valid" is "val"), a bool mask of num_nodes, or ids (numpy,
    torch, list)."""
    n = store.num_nodes if node_type is None else store.num_nodes_of(node_type)
    if input_nodes is None:
        return torch.arange(n)
    if isinstance(input_nodes, str):
        names = store.split_names if node_type is None else list(store.types["node_types"][node_type]["splits"])
        name = "val" if input_nodes == "valid" and "valid" not in names else input_nodes
        if name not in names:
            of = "" if node_type is None else f" of node type {node_type!r}"
            raise errors.KeyNotFoundError(f"tierfs.pyg.NeighborLoader: input_nodes {input_nodes!r} is not a split{of} of this dataset (it has {names})")
        return torch.from_numpy(store.split(name, node_type=node_type))
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

    PyG arguments that do not apply (temporal sampling, disjoint subgraphs, edge weights, worker
    processes, ...) raise :class:`tierfs.NotSupportedError` unless they have their default value
    (PyG's ``SubgraphType.directional`` or ``"directional"``; ``filter_per_worker`` any). As
    PyG's ``NodeLoader``, ``loader(index)`` is the batch of the input nodes at positions
    ``index``. ``input_id`` holds the seeds' positions in given ids, or their node ids for a mask
    or split name, as PyG's. Graph-level attributes of the ``Data`` that :func:`tierfs.from_pyg`
    wrote the dataset from in this process (``data.some_scalar``, a graph-level tensor) are on
    every batch, as PyG's in-memory loaders put them; the dataset format does not store them, so
    a dataset opened from disk in another process (or written otherwise) yields batches without
    them.

    Args:
        data: a :class:`tierfs.Store`, or the ``(FeatureStore, GraphStore)`` of :func:`stores`.
        num_neighbors: neighbors per node per hop; -1 takes all. A dict per edge type (or
            ``NumNeighbors``) for a heterogeneous dataset.
        seed: the sampler's seed (batch i samples with ``seed + i``).
        shuffle_seed, prefetch, planned_epochs, plan_dir, plan_disk_budget, reuse_samples: as
            :class:`tierfs.Loader`.
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
        shuffle_seed: int = 0,
        prefetch: int = 4,
        planned_epochs: int = 0,
        plan_dir: Optional[str] = None,
        plan_disk_budget: Any = None,
        reuse_samples: bool = False,
        **pyg_kwargs: Any,
    ) -> None:
        for name, value in pyg_kwargs.items():
            if name not in _PYG_ONLY:
                raise TypeError(f"tierfs.pyg.NeighborLoader got an unexpected argument {name!r}")
            if name == "filter_per_worker" and value in (None, True, False):
                continue  # batches are made on the pipeline's threads, in this process, either way
            if name == "subgraph_type":
                try:  # PyG's default is the enum, which the string names
                    value = SubgraphType(value).value
                except ValueError:
                    pass
            if value != _PYG_ONLY[name]:
                raise errors.NotSupportedError(
                    f"tierfs.pyg.NeighborLoader: {name}={value!r} is not supported (tierfs samples uniformly, "
                    f"directed, on its own threads in this process); leave it at {_PYG_ONLY[name]!r}"
                )
        if isinstance(data, tuple):
            data = data[0]
        self.store = _unwrap(data)
        if isinstance(num_neighbors, int) or (not isinstance(num_neighbors, NumNeighbors) and hasattr(num_neighbors, "__len__") and not len(num_neighbors)):
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: num_neighbors must be a list of neighbors per hop, got {num_neighbors!r}")
        self.transform = transform
        self.num_neighbors = num_neighbors_of(self.store, num_neighbors)
        self._replace, self._seed, self._call_sampler = replace, seed, None
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
            sampler = self.store.sampler(self.num_neighbors, replace=replace, seed=seed)
            self.loader = Loader(
                self.store, sampler, seeds, batch_size, shuffle=shuffle, drop_last=drop_last, prefetch=prefetch,
                seed=shuffle_seed, labels=False, transform=self._to_hetero_data, node_type=self.input_type,
                planned_epochs=planned_epochs, plan_dir=plan_dir, plan_disk_budget=plan_disk_budget,
                reuse_samples=reuse_samples,
            )
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
        sampler = self.store.sampler(self.num_neighbors, replace=replace, seed=seed)
        self.loader = Loader(
            self.store, sampler, seeds, batch_size, shuffle=shuffle, drop_last=drop_last, prefetch=prefetch,
            seed=shuffle_seed, labels=False, planned_epochs=planned_epochs, plan_dir=plan_dir,
            plan_disk_budget=plan_disk_budget, reuse_samples=reuse_samples, transform=self._to_data,
        )

    def _to_data(self, b: Batch) -> Any:
        s = b.sample
        nodes = s.nodes
        data = Data(edge_index=torch.stack([s.row, s.col]))
        for name, value in self._graph_attrs.items():  # as PyG's filter_data: the same objects on every batch
            data[name] = value
        if self._x_name is not None:
            data[self._x_name] = b.x.view(-1) if self._x_scalar else b.x
        if self._labels:
            data.y = self.store.labels(nodes)
        data.n_id = nodes
        data.e_id = input_edge_ids(self.store, s.e_id)
        data.num_nodes = int(nodes.shape[0])
        for name in self._node_features:
            data[name] = self.store.gather(nodes, feature=name)
        for name in self._edge_features:
            data[name] = self.store.gather(s.e_id, feature=name)
        data.num_sampled_nodes = s.nodes_per_hop.tolist()
        data.num_sampled_edges = s.edges_per_hop.tolist()
        seeds = torch.as_tensor(b.seeds)
        if self._ids_are_input_id:
            data.input_id = seeds
        elif b.positions is not None:
            data.input_id = b.positions
        else:
            data.input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data.batch_size = int(seeds.shape[0])
        return data if self.transform is None else self.transform(data)

    def _to_hetero_data(self, b: Batch) -> Any:
        """A HeteroData as PyG's NodeLoader makes it from FeatureStore/GraphStore
        (filter_custom_hetero_store, then filter_fn), plus the edge features by e_id."""
        s = b.sample
        store = self.store
        data = HeteroData()
        for name, value in self._graph_attrs.items():  # as PyG's filter_hetero_data: the same objects on every batch
            setattr(data, name, value)
        for t in store.node_types:
            ids = s.node[t]
            data[t].num_nodes = int(ids.shape[0])  # PyG's in-memory loader sets it on every type
            names = self._fs._type_names(t)
            for name in names:
                if name == self._fs.x_of(t):
                    data[t][name] = b.x[t]
                elif name == self._fs.y_name:
                    data[t][name] = store.labels(ids, node_type=t)
                else:
                    data[t][name] = store.gather(ids, node_type=t, feature=name)
        for et in store.edge_types:
            data[et].edge_index = torch.stack([s.row[et], s.col[et]])
        for t, ids in s.node.items():
            data[t].n_id = ids
        for et, e in s.edge.items():
            if e is not None:
                data[et].e_id = input_edge_ids(store, e, et)
        for et, info in store.types["edge_types"].items():
            for name in info["features"]:
                if name != INPUT_EDGE_ID:
                    data[et][name] = store.gather(s.edge[et], edge_type=et, feature=name)
        data.set_value_dict("num_sampled_nodes", s.num_sampled_nodes)
        data.set_value_dict("num_sampled_edges", s.num_sampled_edges)
        seeds = torch.as_tensor(b.seeds)
        if self._ids_are_input_id:
            data[self.input_type].input_id = seeds
        elif b.positions is not None:
            data[self.input_type].input_id = b.positions
        else:
            data[self.input_type].input_id = self._sorter[torch.searchsorted(self._sorted, seeds)]
        data[self.input_type].batch_size = int(seeds.shape[0])
        return data if self.transform is None else self.transform(data)

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
            self._call_sampler = self.store.sampler(self.num_neighbors, replace=self._replace, seed=self._seed)
        if self.input_type is not None:
            sample = self._call_sampler.sample(seeds, self.input_type)
        else:
            sample = self._call_sampler.sample(seeds)
        return self.loader._gather(0, (seeds, sample, positions))

    def __iter__(self) -> Iterator[Union[Data, HeteroData]]:
        return iter(self.loader)

    def stats(self) -> Dict[str, Any]:
        """The latest epoch's pipeline stats (:meth:`tierfs.Loader.stats`)."""
        return self.loader.stats()

    def __repr__(self) -> str:
        return f"tierfs.pyg.NeighborLoader({self.loader!r})"


def _as_is(batch: List[int]) -> List[int]:
    """A DataLoader's collate_fn handing a batch's positions on as they are."""
    return batch


def _link_input(store: Store, edge_label_index: Any) -> Tuple[Tuple[str, str, str], Any]:
    """(edge type, seed edges or None) of LinkNeighborLoader's edge_label_index: a tensor, an
    edge type, or ``(edge type, tensor)``; a heterogeneous store needs the edge type (PyG's
    rule), a homogeneous one has :data:`EDGE_TYPE`."""
    if not store.is_hetero:
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:
            edge_label_index = edge_label_index[1]
        return EDGE_TYPE, edge_label_index
    types = store.edge_types
    if isinstance(edge_label_index, (tuple, list)) and len(edge_label_index) == 3 and all(isinstance(x, str) for x in edge_label_index):
        edge_type, edges = tuple(edge_label_index), None
    elif isinstance(edge_label_index, str):
        edge_type, edges = edge_type_tuple(edge_label_index), None
    elif isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:
        edge_type, edges = edge_type_tuple(edge_label_index[0]), edge_label_index[1]
    else:
        raise errors.InvalidArgumentError(
            f"tierfs.pyg.LinkNeighborLoader: a heterogeneous dataset takes edge_label_index=(edge type, (2, n) tensor or None) or an edge type, got {type(edge_label_index).__name__} (edge types: {types})")
    if edge_type not in types:
        raise errors.KeyNotFoundError(f"tierfs.pyg.LinkNeighborLoader: edge_label_index names edge type {edge_type!r}, which the dataset lacks (it has {types})")
    return edge_type, edges


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
        edge_label: one label a seed edge.
        neg_sampling: None, ``"binary"``, ``"triplet"`` or PyG's ``NegativeSampling``.
        neg_sampling_ratio: binary negatives per seed edge (PyG's older argument).
        replace, seed: the sampler's (batch i samples with ``seed + i``).
        strict_negatives, exclude_seed_edges, undirected, reverse_edge_types: as
            :class:`NeighborSampler`'s (beyond PyG; off, the batches are PyG's).
        planned_epochs, plan_dir, plan_disk_budget, shuffle_seed: with ``planned_epochs=K``
            (and ``shuffle=True``) the loader plans K epochs of seed edge batches up front
            (:meth:`tierfs.Store.plan_epochs` with ``seed_edges``; docs/planned.md) and epoch e
            replays planned epoch e mod K: the core's order of the seed edges from
            ``shuffle_seed`` and e, each batch exactly what PyG's ``LinkLoader`` over this
            module's sampler makes of the same seed edges when the sampler draws with the
            batch's seed (negatives, subgraph, ``input_id``, labels), its rows of the default
            feature read from the plan's packed files.
        prefetch: batches in flight (at most 256). Every epoch, planned or not, comes from a
            :class:`tierfs.pipeline.Pipeline`: one thread samples the batches in order, ``prefetch``
            threads read their features and make them (``filter_fn``, ``transform``), the caller
            receives them in order; :meth:`stats` says which stage bounds the epoch. Without a
            plan the seed edges' batches are the ones PyG's ``DataLoader`` draws (its batch
            sampler; with ``shuffle`` the same torch RNG draws, made when the epoch starts), so
            the batches are exactly those of PyG's ``LinkLoader`` over :func:`stores` with this
            sampler.
        **kwargs: PyG ``LinkLoader``/``DataLoader`` arguments (``batch_size``, ``shuffle``,
            ``drop_last``, ``transform``, ...); ``num_workers`` stays 0 (the pipeline's threads
            do that work).
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
        planned_epochs: int = 0,
        plan_dir: Optional[str] = None,
        plan_disk_budget: Any = None,
        shuffle_seed: int = 0,
        prefetch: int = 4,
        **kwargs: Any,
    ) -> None:
        if planned_epochs < 0:
            raise errors.InvalidArgumentError(f"planned_epochs {planned_epochs} must be 0 (sample every epoch) or at least 1")
        if planned_epochs and not kwargs.get("shuffle", False):
            raise errors.InvalidArgumentError("planned_epochs needs shuffle=True (each planned epoch is its own order)")
        if not 1 <= prefetch <= MAX_DEPTH:
            raise errors.InvalidArgumentError(f"prefetch {prefetch} must be from 1 to {MAX_DEPTH}: batches made at once, a thread each")
        for name in ("num_workers", "pin_memory", "persistent_workers"):
            if kwargs.get(name, _PYG_ONLY[name]) != _PYG_ONLY[name]:
                raise errors.NotSupportedError(
                    f"tierfs.pyg.LinkNeighborLoader: {name}={kwargs[name]!r} is not supported (batches are sampled and gathered "
                    f"on tierfs's pipeline threads in this process; prefetch= sets how many are in flight); leave it at {_PYG_ONLY[name]!r}")
        if isinstance(data, str):
            from ._open import open as _open

            data = _open(data)
        store = _unwrap(data[0] if isinstance(data, tuple) else data)
        if isinstance(neg_sampling, str):
            neg_sampling = NegativeSampling(neg_sampling)
        if neg_sampling_ratio is not None and not (isinstance(neg_sampling_ratio, (int, float)) and not isinstance(neg_sampling_ratio, bool) and neg_sampling_ratio >= 0):
            raise errors.InvalidArgumentError(f"neg_sampling_ratio = {neg_sampling_ratio!r}: want binary negatives per seed edge > 0")
        edge_type, edge_label_index = _link_input(store, edge_label_index)
        if edge_label_index is None:
            indptr, indices = typed_csc(store, edge_type) if store.is_hetero else store.csc()
            col = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
            edge_label_index = torch.stack([torch.from_numpy(np.asarray(indices, dtype=np.int64)), torch.from_numpy(col)])
        edge_label_index = torch.as_tensor(edge_label_index)
        if edge_label_index.dim() != 2 or edge_label_index.size(0) != 2:
            raise errors.InvalidArgumentError(f"edge_label_index: want a (2, n) tensor of seed edges, got shape {tuple(edge_label_index.shape)}")
        if edge_label is not None and len(edge_label) != edge_label_index.size(1):
            raise errors.InvalidArgumentError(f"edge_label: {len(edge_label)} labels for {edge_label_index.size(1)} seed edges (edge_label_index); give one a seed edge")
        self.store = store
        self.link_neighbor_sampler = NeighborSampler(store, num_neighbors, replace=replace, seed=seed, strict_negatives=strict_negatives,
                                                     exclude_seed_edges=exclude_seed_edges, undirected=undirected,
                                                     reverse_edge_types=reverse_edge_types)
        fs = _PlannedFeatureStore(store) if planned_epochs else FeatureStore(store)
        super().__init__(
            (fs, GraphStore(store)), link_sampler=self.link_neighbor_sampler, edge_label_index=(edge_type, edge_label_index),
            edge_label=edge_label, neg_sampling=neg_sampling, neg_sampling_ratio=neg_sampling_ratio,
            filter_per_worker=kwargs.pop("filter_per_worker", False), **kwargs,
        )
        self.plan: Any = None
        self.prefetch = int(prefetch)
        self._epoch = 0
        self._run: Any = None  # the latest epoch's pipeline state, for stats()
        if planned_epochs:
            sp, inp = self.link_neighbor_sampler, self.input_data
            # The plan's seed edges and labels are the ones PyG's collate_fn hands the sampler
            # (binary labels shifted by 1 where they start at 0).
            self.plan = store.plan_epochs(
                sp.num_neighbors, self.batch_size, planned_epochs, plan_dir=plan_dir, disk_budget=plan_disk_budget,
                replace=sp.replace, drop_last=self.drop_last, seed=sp.seed, shuffle_seed=shuffle_seed,
                seed_edges=(edge_type, torch.stack([inp.row, inp.col])) if store.is_hetero else torch.stack([inp.row, inp.col]),
                edge_label=inp.label, neg_sampling=self.neg_sampling, **sp.link_options,
            )

    def __len__(self) -> int:
        return self.plan.batches_per_epoch if self.plan is not None else super().__len__()

    def __iter__(self) -> Pipeline:
        """An epoch's batches from a :class:`tierfs.pipeline.Pipeline` (close it, or break out
        of the loop, to stop its threads mid-epoch)."""
        cuda = torch.device(self.store.device) if self.store.device != "cpu" else None
        if self.plan is None:
            n = len(self.batch_sampler)
            batches = self._seed_edge_batches()
            sample = lambda b: self._sample(next(batches))  # noqa: E731  # the sampling thread asks in order
            make = lambda b, out: self.filter_fn(out)  # noqa: E731
        else:
            epoch = self._epoch
            self._epoch += 1
            n = self.plan.batches_per_epoch
            sample = lambda b: self._planned_sample(epoch, b)  # noqa: E731
            make = lambda b, sampled: self._planned_make(epoch, b, sampled)  # noqa: E731
        pipeline = Pipeline(n, sample, make, self.prefetch, store=self.store, cuda_device=cuda, name="tierfs-link-loader")
        self._run = pipeline._st
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
        ``bound``, ``bound_why``); empty before the first epoch."""
        return pipeline_stats(self._run) if self._run is not None else {}

    def planned_batch(self, epoch: int, batch: int) -> Union[Data, HeteroData]:
        """Batch ``batch`` of epoch ``epoch`` of a planned loader (``planned_epochs``), made in
        the calling thread: the plan's sample of its seed edges through PyG's ``filter_fn``, the
        default feature's rows from the plan. Iterating the loader makes the same batches on a
        :class:`tierfs.pipeline.Pipeline`: the next ones sampled and read ``prefetch`` at once."""
        if self.plan is None:
            raise errors.InvalidArgumentError("tierfs.pyg.LinkNeighborLoader: planned_batch needs planned_epochs")
        return self._planned_make(epoch, batch, self._planned_sample(epoch, batch))

    def _planned_sample(self, epoch: int, batch: int) -> Tuple[Tensor, Any]:
        plan = self.plan
        return torch.from_numpy(plan.seeds(epoch, batch)), _link_sample_to_torch(plan.sample(epoch, batch))

    def _planned_make(self, epoch: int, batch: int, sampled: Tuple[Tensor, Any]) -> Union[Data, HeteroData]:
        plan = self.plan
        pos, sample = sampled
        fs = self.data[0]
        if isinstance(sample, HeteroSample):
            fs.batch = {t: (sample.node[t], plan.gather(epoch, batch, sample.node[t].numpy(), node_type=t)) for t in plan.node_types}
        else:
            fs.batch = {None: (sample.nodes, plan.gather(epoch, batch, sample.nodes.numpy()))}
        try:
            return self.filter_fn(self.link_neighbor_sampler._link_output(self.input_data[pos], sample, self.neg_sampling))
        finally:
            fs.batch = {}

    def __repr__(self) -> str:
        return f"tierfs.pyg.LinkNeighborLoader({self.store!r}, num_neighbors={self.link_neighbor_sampler.num_neighbors})"
