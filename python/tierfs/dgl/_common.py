"""What the modules of :mod:`tierfs.dgl` share: GraphBolt when it imports, the column names, id and
dtype conversions, the typed columns of a store, the edge-id maps, the reader pool."""

from __future__ import annotations

import concurrent.futures
import threading
import weakref

import numpy as np
import torch

import dgl  # noqa: F401 (DGL itself, a hard requirement, before GraphBolt, which may fail apart)

import tierfs
from tierfs import edgeids
from tierfs.hetero import edge_type_tuple


try:  # GraphBolt needs extra packages (torchdata, pydantic, ...) and a build for this torch.
    import dgl.graphbolt as gb
except Exception as _exc:  # pylint: disable=broad-except
    gb = None
    _GRAPHBOLT_ERROR = _exc
else:
    _GRAPHBOLT_ERROR = None


FEATURE = "feat"
LABEL = "label"


_TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
}


class ReadOnlyError(tierfs.NotSupportedError):
    """Raised by ``update``: a tierfs dataset is read-only once ingested (a
    ``tierfs.NotSupportedError``, so also a ``NotImplementedError`` as GraphBolt's base raises)."""


def _ids_tensor(ids) -> torch.Tensor:
    """ids (torch tensor on any device, numpy array, list, range, scalar) as a 1-D int64 CPU tensor."""
    if isinstance(ids, torch.Tensor):
        t = ids.detach()
        if t.dtype == torch.bool:
            raise tierfs.DTypeError("tierfs.dgl: ids must be integer node ids, not a boolean mask")
        if t.is_floating_point() or t.is_complex():
            raise tierfs.DTypeError(f"tierfs.dgl: ids must be integers, got dtype {t.dtype}")
        t = t.to("cpu", torch.int64)
    else:
        a = np.asarray(ids)
        if a.dtype == np.bool_:
            raise tierfs.DTypeError("tierfs.dgl: ids must be integer node ids, not a boolean mask")
        if a.size and a.dtype.kind not in "iu":
            raise tierfs.DTypeError(f"tierfs.dgl: ids must be integers, got dtype {a.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))
    return t.reshape(-1).contiguous()


def _as_tensor(values, dtype_name: str | None = None) -> torch.Tensor:
    """A store's answer (torch tensor or numpy array) as a torch tensor."""
    if isinstance(values, torch.Tensor):
        return values
    a = np.asarray(values)
    if dtype_name == "bfloat16" and a.dtype != np.float32:
        # numpy has no bfloat16: the bits arrive as 2-byte integers or raw void / ml_dtypes.
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _dtype_name(store) -> str:
    """The feature dtype's name ("float32", "bfloat16", ...); ``Store.dtype`` is the numpy dtype
    of gathered rows, which is uint16 for bfloat16."""
    return str(getattr(store, "dtype_name", None) or store.dtype)


def _torch_dtype(store) -> torch.dtype:
    name = _dtype_name(store)
    try:
        return _TORCH_DTYPES[name]
    except KeyError:
        raise tierfs.Error(f"tierfs.dgl: feature dtype {name!r} has no torch equivalent") from None


def _check_kind(kind: str) -> str:
    if kind not in ("feat", "label"):
        raise tierfs.InvalidArgumentError(f"tierfs.dgl: kind must be 'feat' or 'label', got {kind!r}")
    return kind


def _read_rows(store, kind: str, ids: torch.Tensor) -> torch.Tensor:
    """Rows of ids (1-D int64 CPU tensor) of the store's features (kind 'feat') or labels."""
    n = ids.numel()
    if kind == "label":
        if n == 0:
            return torch.empty((0,), dtype=torch.int64)
        return _as_tensor(store.labels(ids)).reshape(n).to(torch.int64)
    if n == 0:
        return torch.empty((0, int(store.dim)), dtype=_torch_dtype(store))
    return _as_tensor(store.gather(ids), _dtype_name(store)).reshape(n, int(store.dim))


def _is_hetero(store) -> bool:
    return bool(getattr(store, "is_hetero", False))


_NUMBERED = weakref.WeakKeyDictionary()  # store -> {edge type (None: the one): bool}


_NUMBERED_LOCK = threading.Lock()


_NUMBERED_CHUNK = 1 << 22


def _input_numbered(store, edge_type=None) -> bool:
    """Whether DGL's edge ids of ``edge_type`` are positions in the input (the input order numbers
    the edges: ingest's ``input_edge_id`` is a permutation of [0, count)), not tierfs's CSC
    positions. False where the dataset has no ``input_edge_id`` (the orders agree), after an
    undirected ingest (both directions stored under one input position) and where ingest dropped
    input edges (self loops): there no numbering of the edges follows the input. Ingest writes
    either a permutation or positions some of which repeat or are skipped, so the largest being
    count-1 tells them apart; read once per store and edge type (8 bytes an edge)."""
    key = None if edge_type is None else edge_type_tuple(edge_type)
    with _NUMBERED_LOCK:
        known = _NUMBERED.setdefault(store, {})
        if key in known:
            return known[key]
    info = edgeids._edge_feature_info(store, key)
    numbered = False
    if edgeids.INPUT_EDGE_ID in info:
        count = int(info[edgeids.INPUT_EDGE_ID]["rows"])
        top = -1
        for lo in range(0, count, _NUMBERED_CHUNK):
            ids = edgeids.input_edge_ids(store, torch.arange(lo, min(count, lo + _NUMBERED_CHUNK)), key)
            top = max(top, int(ids.max()))
        numbered = top == count - 1
    with _NUMBERED_LOCK:
        _NUMBERED.setdefault(store, {})[key] = numbered
    return numbered


def dgl_edge_ids(store, edge_ids, edge_type=None) -> torch.Tensor:
    """tierfs's edge ids (CSC positions: ``store.csc()``'s order, ``Sample.e_id``, the rows of
    ``store.gather(ids, feature=<edge feature>)``) of ``edge_type`` (None: the store's one) as
    DGL's edge ids, the ``dgl.EID`` of this module's blocks (see "Edge ids" in the module
    docstring). A 1-D int64 CPU tensor. :func:`csc_edge_ids` is the inverse."""
    ids = _ids_tensor(edge_ids)
    if ids.numel() == 0 or not _input_numbered(store, edge_type):
        return ids
    key = None if edge_type is None else edge_type_tuple(edge_type)
    return _ids_tensor(edgeids.input_edge_ids(store, ids, key))


def csc_edge_ids(store, edge_ids, edge_type=None) -> torch.Tensor:
    """DGL's edge ids (``dgl.EID`` of this module's blocks, :func:`dgl_graph`'s edges) of
    ``edge_type`` as tierfs's (CSC positions): the inverse of :func:`dgl_edge_ids`. Reads the
    whole input order of the edge type (8 bytes an edge) on every call where the two differ."""
    ids = _ids_tensor(edge_ids)
    if not _input_numbered(store, edge_type):
        return ids
    key = None if edge_type is None else edge_type_tuple(edge_type)
    inverse = edgeids._input_to_csc(store, key)
    return _ids_tensor(edgeids._map_input_ids(inverse, ids, "csc_edge_ids", "tierfs.dgl"))


def _input_order(store, edge_type, count: int):
    """Every edge's DGL edge id by CSC position (``order[csc] = dgl id``), or None where the two
    are the same numbering."""
    if count == 0 or not _input_numbered(store, edge_type):
        return None
    return dgl_edge_ids(store, torch.arange(count), edge_type)


_UNREAD = object()


class _TypedColumn:
    """One column of a heterogeneous store: a node type's feature (by name; None: its default)
    or labels, or an edge type's feature by edge id."""

    def __init__(self, store, kind: str, node_type, edge_type, name):
        if (node_type is None) == (edge_type is None):
            raise tierfs.InvalidArgumentError("tierfs.dgl: a typed column has a node_type or an edge_type, not both")
        self.store, self.kind, self.node_type, self.name = store, kind, node_type, name
        self._inverse = _UNREAD  # edge features: DGL's edge id -> CSC position (None: the same), read on first use
        self.edge_type = None if edge_type is None else edge_type_tuple(edge_type)
        types = store.types
        if self.edge_type is not None:
            if kind == LABEL:
                raise tierfs.InvalidArgumentError("tierfs.dgl: edge types have no labels")
            info = types["edge_types"].get(self.edge_type)
            if info is None:
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: the store has no edge type {self.edge_type}")
            self.count = int(info["count"])
        else:
            info = types["node_types"].get(node_type)
            if info is None:
                raise tierfs.KeyNotFoundError(
                    f"tierfs.dgl: the store has no node type {node_type!r} (it has {', '.join(types['node_types'])})"
                )
            self.count = int(info["count"])
        if kind == LABEL:
            if not info.get("labels"):
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: node type {node_type!r} has no labels")
            self.info = {"dtype": "int64", "scalar": True, "num_classes": int(info.get("num_classes") or 0)}
            return
        feats = info["features"]
        if name is None:
            name = next((n for n, f in feats.items() if f.get("default")), None) or next(iter(feats), None)
        if name not in feats:
            what = f"edge type {self.edge_type}" if self.edge_type else f"node type {node_type!r}"
            raise tierfs.KeyNotFoundError(f"tierfs.dgl: {what} has no feature {name!r} (it has {', '.join(feats) or 'none'})")
        self.name = name
        self.info = feats[name]

    def size(self) -> torch.Size:
        if self.kind == LABEL or self.info.get("scalar"):
            return torch.Size([])
        return torch.Size(self.info.get("shape") or [int(self.info["dim"])])

    def read(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of ids (1-D int64 CPU tensor)."""
        n = ids.numel()
        if self.kind == LABEL:
            if n == 0:
                return torch.empty((0,), dtype=torch.int64)
            return _as_tensor(self.store.labels(ids, node_type=self.node_type)).reshape(n).to(torch.int64)
        dtype = _TORCH_DTYPES.get(self.info["dtype"])
        if dtype is None:
            raise tierfs.Error(f"tierfs.dgl: feature dtype {self.info['dtype']!r} has no torch equivalent")
        shape = (n,) + tuple(self.size())
        if n == 0:
            return torch.empty(shape, dtype=dtype)
        if self.edge_type is not None:
            # Rows are read by DGL's edge ids: through the inverse of the input order where those
            # are input positions.
            if self._inverse is _UNREAD:
                numbered = _input_numbered(self.store, self.edge_type)
                self._inverse = edgeids._input_to_csc(self.store, self.edge_type) if numbered else None
            ids = edgeids._map_input_ids(self._inverse, ids, f"edge type {self.edge_type} feature {self.name!r}", "tierfs.dgl")
            rows = self.store.gather(ids, edge_type=self.edge_type, feature=self.name)
        else:
            rows = self.store.gather(ids, node_type=self.node_type, feature=self.name)
        return _as_tensor(rows, self.info["dtype"]).reshape(shape)


_executor = None


_executor_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The worker threads of read_async (tierfs gathers release the GIL)."""
    global _executor  # pylint: disable=global-statement
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="tierfs-dgl"
            )
        return _executor


_side_streams = {}


def _side_stream(device: torch.device):
    with _executor_lock:
        s = _side_streams.get(device)
        if s is None:
            s = _side_streams[device] = torch.cuda.Stream(device=device)
        return s


class _Future:
    """What the last stage of read_async yields: ``wait()`` returns the values (call it once)."""

    def __init__(self, future: concurrent.futures.Future, device: torch.device | None):
        self._future = future
        self._device = device

    def wait(self) -> torch.Tensor:
        values = self._future.result()
        if self._device is not None and values.device != self._device:
            values = values.to(self._device)
        self._future = None  # drop the reference; waiting twice is undefined, as in GraphBolt
        return values
