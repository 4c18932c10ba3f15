"""tierfs's stores as PyG's remote backend: ``FeatureStore`` (node attributes by ``group_name`` = node
type, edge attributes by edge type), ``GraphStore`` (CSC per edge type, its permutation to the input
edge order), ``stores``."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import EdgeAttr, TensorAttr
from torch_geometric.data import FeatureStore as _PyGFeatureStore
from torch_geometric.data import GraphStore as _PyGGraphStore
from torch_geometric.data.graph_store import EdgeLayout

from .. import errors
from ..sampler import typed_csc
from ..store import Store
from ..edgeids import INPUT_EDGE_ID, _edge_feature_info, _input_to_csc, _map_input_ids, input_edge_ids


#: The one edge type of a tierfs dataset, the ``group_name`` of its edge features.
EDGE_TYPE = ("node", "to", "node")


def with_row_shape(rows: Any, info: Optional[Dict[str, Any]]) -> Any:
    """rows (n, dim) of a feature (its manifest entry ``info``) in the shape it was stored with:
    (n, a, b, ...) for a feature of rows of more than one dimension (the manifest's ``shape``,
    GraphBolt's), else as they are."""
    shape = info.get("shape") if info else None
    if not shape or rows.ndim != 2:
        return rows
    return rows.reshape((rows.shape[0],) + tuple(int(d) for d in shape))


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
    weights) gives a 1-D tensor, a feature of rows of more than one dimension (GraphBolt's
    ``(N, a, b)``, :func:`tierfs.from_graphbolt`) its rows in that shape.

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

    ``embeddings={node_type: tierfs.Embedding}`` (``None`` for a one-type store) serves a
    featureless type's ``x`` (``x=``'s name) from a trainable table: ``get_tensor`` and the
    loaders' batches read its rows as they are (no gradient: train through ``emb(batch[t].n_id)``),
    ``put_tensor`` / ``update_tensor`` write rows (``index`` the ids, unset or None every row; the
    optimizer state is kept). The dataset's attributes are immutable: a put of one raises
    ``NotSupportedError`` naming it. A store with embeddings does not pickle (a table is open in
    one process).
    """

    def __init__(self, store: Store, x: Optional[str] = None, y: str = "y", embeddings: Optional[Dict[Any, Any]] = None) -> None:
        super().__init__()
        self.store = store
        self.x_name = x
        self.y_name = y
        self._inverse: Dict[Any, Optional[Tensor]] = {}  # edge type -> _input_to_csc, read once
        self.embeddings: Dict[Any, Any] = {}
        for t, emb in (embeddings or {}).items():
            self._attach(t, emb)

    def _attach(self, node_type: Any, emb: Any) -> None:
        """Serves emb's rows as node_type's x (``x=``'s name, else "x"); a featureless type only."""
        from ..embedding import Embedding

        if not isinstance(emb, Embedding):
            raise TypeError(f"tierfs.pyg.FeatureStore: embeddings[{node_type!r}] is a {type(emb).__name__}, want a tierfs.Embedding")
        if self.store.is_hetero:
            if node_type not in self.store.types["node_types"]:
                raise KeyError(f"tierfs.pyg.FeatureStore: embeddings for node type {node_type!r}: the dataset has no such type (it has {list(self.store.node_types)})")
        elif node_type is not None:
            raise KeyError(f"tierfs.pyg.FeatureStore: embeddings for node type {node_type!r}: a one-type store's group_name is None")
        has = self.x_of(node_type)
        if has is not None:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.FeatureStore: embeddings for node type {node_type!r}: it has the dataset's feature {has!r}; a table serves a featureless type's x"
            )
        of = emb.info.get("node_type")
        if of is not None and self.store.is_hetero and of != node_type:
            raise errors.InvalidArgumentError(f"tierfs.pyg.FeatureStore: embeddings[{node_type!r}] is a table of node type {of!r}")
        n = self.store.num_nodes(node_type)
        if emb.num_embeddings != n:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.FeatureStore: embeddings[{node_type!r}] has {emb.num_embeddings} rows, node type {node_type!r} has {n} nodes"
            )
        self.embeddings[node_type] = emb

    def _table_name(self) -> str:
        """The attribute name of an embedding table's rows: ``x=``'s, else "x"."""
        return self.x_name if self.x_name is not None else "x"

    def __getstate__(self) -> Dict[str, Any]:
        if self.embeddings:
            raise errors.NotSupportedError(
                "tierfs.pyg.FeatureStore with embeddings does not pickle (a table is open in one process at a time); "
                "use PyG's loaders with num_workers=0 or tierfs's loaders' threads"
            )
        return self.__dict__

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

    def put_tensor(self, tensor: Any, *args: Any, **kwargs: Any) -> bool:
        """Writes rows of an attribute served by a :class:`tierfs.Embedding` (``embeddings=``):
        ``index`` the ids (unset or None: every row), ``tensor`` their rows (the optimizer state
        is kept). The dataset's attributes are immutable: putting one raises NotSupportedError,
        and so does an attribute the store does not serve (tierfs adds none)."""
        attr = self._tensor_attr_cls.cast(*args, **kwargs)
        if not attr.is_set("group_name"):
            attr.group_name = None
        if not attr.is_set("index"):
            attr.index = None
        return super().put_tensor(tensor, attr)

    def update_tensor(self, tensor: Any, *args: Any, **kwargs: Any) -> bool:
        """As :meth:`put_tensor` (a table's rows are written in place; nothing is removed)."""
        return self.put_tensor(tensor, *args, **kwargs)

    def _put_tensor(self, tensor: Any, attr: TensorAttr) -> bool:
        try:
            src = self._source(attr)
        except KeyError as e:
            raise errors.NotSupportedError(
                f"tierfs.pyg.FeatureStore: cannot put attribute {attr.attr_name!r} of {attr.group_name!r}: {e.args[0]}; "
                "the dataset is immutable (build datasets with tierfs.ingest()), and only a tierfs.Embedding "
                "given as embeddings= takes writes"
            ) from None
        of, t, name = src[0], src[1], attr.attr_name
        if of != "table":
            raise errors.NotSupportedError(
                f"tierfs.pyg.FeatureStore: attribute {name!r} of {t!r} is the dataset's and immutable; "
                "only a tierfs.Embedding given as embeddings= takes writes"
            )
        emb = self.embeddings[t]
        ids, one = self._index(attr.index, emb.num_embeddings)
        rows = torch.as_tensor(tensor)
        want = (emb.embedding_dim,) if one else (ids.numel(), emb.embedding_dim)
        if tuple(rows.shape) != want:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.FeatureStore: put of attribute {name!r} of {t!r}: a tensor of shape {tuple(rows.shape)}, want {want}"
            )
        emb.write(ids, rows.detach())
        return True

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        return False

    def _get_tensor(self, attr: TensorAttr) -> Optional[Tensor]:
        return self._multi_get_tensor([attr])[0]

    def get_tensor(self, *args: Any, convert_type: bool = False, **kwargs: Any) -> Any:
        """As PyG's, with an unset ``group_name`` meaning the one node type (None) and an unset
        ``index`` every row: ``get_tensor(attr_name="x", index=ids)`` works, and so does the view
        ``fs[None, "x"]`` called, ``fs[None, "x"]()``. Indexing is PyG's: ``fs[group, name, index]``
        a tensor (``index`` None or ``:`` for every row), a key without its index an ``AttrView``."""
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

    # A source is what an attribute reads: ("node", type, feature), ("label", type, "") or
    # ("edge", edge type, feature); type is None in a one-type store.

    def _source(self, attr: TensorAttr) -> Tuple[str, Any, str]:
        if self.store.is_hetero:
            return self._hetero_source(attr)
        name = attr.attr_name
        features = self.store.features
        g = attr.group_name
        if g is None and None in self.embeddings and name == self._table_name():
            return ("table", None, name)
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
        if g in self.embeddings and name == self._table_name():
            return ("table", g, name)
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
        if node_type in self.embeddings:
            x = self._table_name()
        names = ([x] if x is not None else []) + [n for n in feats if n != default and n != x]
        return names + ([self.y_name] if t["labels"] else [])

    def _names(self, of: str) -> List[str]:
        """Attribute names of node ("node") or edge ("edge") attributes of a one-type store."""
        default = self.store.feature_name
        if of == "edge":
            return [n for n, f in self.store.features.items() if f["of"] == "edge" and n != INPUT_EDGE_ID]
        x = self._table_name() if None in self.embeddings else self.x_of()
        names = ([x] if x is not None else []) + [n for n, f in self.store.features.items() if f["of"] == "node" and n != default and n != x]
        return names + ([self.y_name] if self.store.num_classes > 0 else [])

    def _info(self, src: Tuple[str, Any, str]) -> Optional[Dict[str, Any]]:
        """The feature a source reads (None for labels)."""
        of, t, name = src
        if of == "label":
            return None
        if of == "table":
            emb = self.embeddings[t]
            return {"rows": emb.num_embeddings, "dim": emb.embedding_dim, "scalar": False}
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
            return self.store.num_nodes(src[1])
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
        if of == "table":  # the table's rows, on the store's device (or a CUDA index's)
            out = self.embeddings[t].read(ids)
            return out if out.is_cuda or self.store.device == "cpu" else out.to(self.store.device)
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
        return with_row_shape(out, info)

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
        row: Tuple[int, ...] = () if info is None or info["scalar"] else tuple(int(d) for d in info.get("shape") or [info["dim"]])
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

    def __str__(self) -> str:
        return "FeatureStore()"  # PyG's form (its tests check str(store)); repr names the store

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
                EdgeAttr(et, EdgeLayout.CSC, is_sorted=True, size=(store.num_nodes(et[0]), store.num_nodes(et[2])))
                for et in store.edge_types
            ]
        n = self.store.num_nodes()  # one edge type, with or without edges (else PyG takes the store for heterogeneous)
        return [EdgeAttr(None, EdgeLayout.CSC, is_sorted=True, size=(n, n))]

    def _get_edge_index(self, edge_attr: EdgeAttr) -> Optional[Tuple[Tensor, Tensor]]:
        if self.store.is_hetero:
            et = edge_attr.edge_type
            if et is None or tuple(et) not in self.store.types["edge_types"]:
                return None
            et = tuple(et)
            indptr, indices = typed_csc(self.store, et)
            n_src, n_dst = self.store.num_nodes(et[0]), self.store.num_nodes(et[2])
        else:
            if edge_attr.edge_type is not None:
                return None
            if self.store.num_edges() == 0:
                indptr, indices = np.zeros(self.store.num_nodes() + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
            else:
                indptr, indices = self.store.csc()
            n_src = n_dst = self.store.num_nodes()
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
            count = self.store.num_edges(edge_type)
            order = input_edge_ids(self.store, torch.arange(count), edge_type)
            perm = order if perm is None else order[perm]
        return row, col, perm

    def __str__(self) -> str:
        return "GraphStore()"  # PyG's form (its tests check str(store)); repr names the store

    def __repr__(self) -> str:
        return f"tierfs.pyg.GraphStore({self.store!r})"


def stores(store: Store, embeddings: Optional[Dict[Any, Any]] = None) -> Tuple[FeatureStore, GraphStore]:
    """``(FeatureStore(store, embeddings=embeddings), GraphStore(store))``, the ``data`` argument
    of PyG loaders; ``embeddings`` maps featureless node types to the :class:`tierfs.Embedding`
    whose rows are their ``x``."""
    return FeatureStore(store, embeddings=embeddings), GraphStore(store)


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
            return with_row_shape(out, info)
        return super()._read(src, ids)

    def _default_name(self, t: Any) -> Optional[str]:
        if t is None:
            return self.store.feature_name
        return next((n for n, f in self.store.types["node_types"][t]["features"].items() if f["default"]), None)
