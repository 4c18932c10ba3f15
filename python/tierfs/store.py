"""Store and Sampler: the numpy/torch face of the C API (capi/tierfs.h). Made by
:func:`tierfs.open` (``_open.py``, which also opens distributed stores); the ids and strings
they pass are converted in ``_args.py``, samples copied out in ``_sample.py``.

Every method makes a constant number of native calls per batch (a gather is one ``tfs_gather``),
never one per node. ctypes releases the GIL during each call.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from ctypes import byref, c_int64, c_void_p
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native, _options, _util, errors
from ._args import IdsLike, _c_str, _fanouts, _Ids, _ids, _torch
from ._native import check, lib
from ._progress import _progress_callback
from ._sample import Sample
from .epochs import PlannedEpochs
from .sampler import Sampler
from .seedshare import SeedShare
from .hetero import EdgeType, HeteroSampler, edge_type_key, edge_type_tuple, fanouts_by_key, typed_csc, typed_labels, typed_split

__all__ = ["Store", "Sampler", "Sample", "GatherFuture", "IdsLike"]


# numpy dtype of each feature dtype. numpy itself has no bfloat16: numpy outputs are
# ml_dtypes.bfloat16 arrays where ml_dtypes is installed (``pip install ml_dtypes``), else uint16
# holding the bits (``.view(torch.bfloat16)`` on ``torch.from_numpy`` of it gives the values).
def _bfloat16_numpy() -> np.dtype:
    try:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return np.dtype(np.uint16)


_NUMPY_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": _bfloat16_numpy(),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}


# Store -------------------------------------------------------------------------------------


def _reopen(path: str, options: Dict[str, Any]) -> "Store":
    return Store(path, **options)


class Store:
    """An open tierfs dataset: gather feature rows, read labels and splits, sample.

    Made by :func:`tierfs.open`. Safe to use from several threads at once (each call is one
    native call that releases the GIL). Close it with :meth:`close` or a ``with`` block; calls on
    a closed store raise :class:`tierfs.ClosedError`.

    Pickling a store pickles its path and options; unpickling opens the dataset again in the
    receiving process (its own caches), which is what ``spawn`` worker processes get.
    """

    @_options.document
    def __init__(
        self,
        path: Union[str, os.PathLike],
        host_cache: _util.SizeLike = None,
        gpu_cache: _util.SizeLike = None,
        device: Any = "cpu",
        **options: Any,
    ) -> None:
        """Opens the dataset directory ``path`` (use :func:`tierfs.open`, which documents the
        arguments and also opens distributed stores).

        ``options`` are the core's store options (``tfs_store_options_json``), with
        ``host_cache`` and ``gpu_cache`` also taken by position:

            {store_options}
        """
        _native.check_process()
        self._handle: Optional[int] = None
        self._path = os.fspath(path)
        self._options = dict(
            host_cache=host_cache,
            gpu_cache=gpu_cache,
            device=str(device) if not isinstance(device, str) else device,
            **options,
        )
        self._device_type, self._device_index = _util.parse_device(device)
        if self._device_type == "cuda":
            torch = _torch()
            if not torch.cuda.is_available() or self._device_index >= torch.cuda.device_count():
                raise errors.NotSupportedError(
                    f"tierfs: device {device!r} requested, but torch sees "
                    f"{torch.cuda.device_count() if torch.cuda.is_available() else 'no'} CUDA device(s)"
                )
        self._host_cache_bytes = _util.parse_size(host_cache, "host_cache")
        gpu_cache_bytes = _util.parse_size(gpu_cache, "gpu_cache")
        request = _options.encode(
            dict(options, host_cache=self._host_cache_bytes, gpu_cache=gpu_cache_bytes),
            self._device_index if self._device_type == "cuda" else 0,
        )
        handle = c_void_p()
        check(lib.tfs_open_json(_c_str(self._path, "path"), request, byref(handle)))
        self._handle = handle.value
        if gpu_cache_bytes or options.get("gpu_topology"):
            gpu = self.stats().get("gpu", {})
            if not gpu.get("available"):
                import warnings

                warnings.warn(
                    f"tierfs: the GPU path is unavailable ({gpu.get('reason', 'unknown')}); "
                    "gpu_cache and gpu_topology are ignored and rows are served from the host",
                    RuntimeWarning,
                    stacklevel=3,
                )
        info = _native.StoreInfo()
        info.struct_size = _native.ctypes.sizeof(_native.StoreInfo)
        try:
            check(lib.tfs_store_info_get(self._handle, byref(info)))
        except BaseException:
            self.close()
            raise
        self._num_nodes = int(info.num_nodes)
        self._num_edges = int(info.num_edges)
        self._dim = int(info.dim)
        self._row_bytes = int(info.row_bytes)
        self._num_classes = int(info.num_classes)
        self._dtype_name = info.dtype.decode()
        self._io_backend = info.io_backend.decode()
        if self._dtype_name == "" and self._dim == 0:  # a dataset without node features: gathers of its feature are refused
            self._np_dtype: Optional[np.dtype] = None
        elif self._dtype_name not in _NUMPY_DTYPES:
            self.close()
            raise errors.VersionError(f"tierfs: feature dtype {self._dtype_name!r} is not known to this package")
        else:
            self._np_dtype = _NUMPY_DTYPES[self._dtype_name]
        self._device_gather: Optional[bool] = None  # tfs_gather_device works? None: not tried
        self._cuda_ids: Any = None  # _cuda_ids_setup's answer, once asked
        self._manifest: Optional[dict] = None
        self._features: Optional[Dict[str, Dict[str, Any]]] = None
        self._types: Optional[Dict[str, Any]] = None

    # properties ------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The dataset directory."""
        return self._path

    @property
    def num_nodes(self) -> int:
        """Number of nodes (feature rows)."""
        return self._num_nodes

    @property
    def num_edges(self) -> int:
        """Number of edges (0 without topology)."""
        return self._num_edges

    @property
    def dim(self) -> int:
        """Feature elements per row."""
        return self._dim

    @property
    def row_bytes(self) -> int:
        """Bytes per feature row."""
        return self._row_bytes

    @property
    def num_classes(self) -> int:
        """Number of label classes (0 without labels)."""
        return self._num_classes

    @property
    def dtype(self) -> np.dtype:
        """numpy dtype of gathered rows: for bfloat16 ``ml_dtypes.bfloat16`` where ml_dtypes is
        installed, else ``uint16`` holding the bits. None for a dataset without node features."""
        return self._np_dtype

    @property
    def dtype_name(self) -> str:
        """The feature dtype as the dataset names it: "float32", "bfloat16", ... ("" for a dataset
        without node features)."""
        return self._dtype_name

    @property
    def torch_dtype(self):
        """torch dtype of gathered rows (``torch.bfloat16`` for bfloat16); None for a dataset
        without node features."""
        return getattr(_torch(), self._dtype_name) if self._dtype_name else None

    @property
    def device(self) -> str:
        """Where gathers return rows: "cpu" or "cuda:N"."""
        return "cpu" if self._device_type == "cpu" else f"cuda:{self._device_index}"

    @property
    def io_backend(self) -> str:
        """How disk reads are served: "io_uring" or "pread"."""
        return self._io_backend

    @property
    def host_cache_bytes(self) -> int:
        """The host tier budget in bytes."""
        return self._host_cache_bytes

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._handle is None

    @property
    def manifest(self) -> dict:
        """The dataset's manifest.json, parsed (read on first use)."""
        if self._manifest is None:
            with builtins.open(os.path.join(self._path, "manifest.json")) as f:
                self._manifest = json.load(f)
        return self._manifest

    @property
    def split_names(self) -> List[str]:
        """Names of the dataset's splits ("train", "val", "test" where present)."""
        nts = self.manifest.get("node_types") or [{}]
        return sorted((nts[0].get("splits") or {}).keys())

    def _h(self) -> int:
        _native.check_process()
        h = self._handle
        if h is None:
            raise errors.ClosedError(f"tierfs: store {self._path} is closed")
        return h

    # output placement ------------------------------------------------------------------

    def _out_device(self, ids: _Ids):
        """None for numpy output, else the torch device of the output."""
        if ids.kind == "torch" and ids.device is not None and ids.device.type == "cuda":
            return ids.device
        if self._device_type == "cuda":
            return _torch().device("cuda", self._device_index)
        if ids.kind == "torch":
            return _torch().device("cpu")
        return None

    # gather ----------------------------------------------------------------------------

    def gather(
        self,
        ids: IdsLike,
        out: Any = None,
        feature: Optional[str] = None,
        node_type: Optional[str] = None,
        edge_type: Optional[EdgeType] = None,
    ) -> Any:
        """Feature rows of ``ids``: an ``(n, dim)`` array, ``out[i] = row(ids[i])``.

        One native call for the whole batch; ids may repeat and come in any order.

        Args:
            ids: a 1-D integer numpy array, torch tensor (CPU or CUDA), list of ints, or one int
                (then the result is the ``(dim,)`` row).
            out: optional preallocated, C-contiguous buffer of shape ``(n, dim)`` and the store's
                dtype (numpy: :attr:`dtype`; torch: :attr:`torch_dtype`), on the host or a CUDA
                device; rows are written there and ``out`` is returned.
            feature: another feature of the dataset (see :attr:`features`): a node feature by
                node ids, or an edge feature by edge ids (``Sample.e_id``). Its rows are read
                from disk through the store's IO stacks, uncached (only the store's own feature
                has tiers), and land on the host (then on the device the result goes to); a
                scalar feature (edge weights) gives shape ``(n,)``; ``out`` must be a host
                array. None (or the store's feature name) is the store's feature.
            node_type: in a dataset of several node types (see :attr:`node_types`), the type
                ``ids`` are ids of (local ids, as PyG's); its default feature (``feature=None``)
                goes through that type's memory tiers, on the GPU for CUDA ids of a CUDA store.
                None is the store's own type (the first with features).
            edge_type: with ``feature``, an edge feature of that edge type (``(src, rel, dst)``
                or ``"src:rel:dst"``) by its edge ids (``HeteroSample.edge``).

        Returns:
            numpy ids give a numpy array; torch ids a torch tensor on the ids' device (CPU ids on
            a CUDA store: on the store's device); lists give numpy arrays. On a store opened with
            ``device="cuda:N"`` the result is always a CUDA tensor.

        Raises:
            IndexError/ValueError (tierfs.OutOfRangeError): an id outside ``[0, num_nodes)``.
            TypeError (tierfs.DTypeError): ids that are not integers, or ``out`` of another dtype.
            tierfs.ClosedError: the store is closed.
            KeyError (tierfs.KeyNotFoundError): no feature named ``feature``.
        """
        h = self._h()
        if edge_type is not None or (node_type is not None and node_type != self.node_type):
            return self._gather_typed(h, ids, out, feature, node_type, edge_type)
        if feature is not None and feature != self.feature_name:
            return self._gather_feature(h, feature, ids, out)
        done = self._gather_device_ids(h, ids, out)
        if done is not None:
            return done
        ids_ = _ids(ids)
        n = ids_.array.shape[0]
        shape = (self._dim,) if ids_.scalar else (n, self._dim)
        if out is not None:
            self._check_out(out, shape)
            if isinstance(out, np.ndarray):
                self._gather_host(h, ids_.array, out)
            elif out.device.type == "cpu":
                self._gather_host(h, ids_.array, out)
            else:
                self._gather_cuda(h, ids_.array, out)
            return out
        dev = self._out_device(ids_)
        if dev is None:
            result = np.empty(shape, dtype=self._np_dtype)
            self._gather_host(h, ids_.array, result)
            return result
        torch = _torch()
        if dev.type == "cpu":
            result = torch.empty(shape, dtype=self.torch_dtype)
            self._gather_host(h, ids_.array, result)
            return result
        result = torch.empty(shape, dtype=self.torch_dtype, device=dev)
        self._gather_cuda(h, ids_.array, result)
        return result

    def _gather_feature(self, h: int, name: str, ids: IdsLike, out: Any) -> Any:
        """gather of a feature other than the store's: one tfs_gather_feature into host memory."""
        info = self.features.get(name) if isinstance(name, str) else None
        if info is None:
            if not isinstance(name, str):
                raise errors.DTypeError(f"feature must be a str, got {type(name).__name__}")
            raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no feature {name!r} (it has {', '.join(self.features)})")
        name_c = _c_str(name, "feature")
        return self._gather_rows(name, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather_feature(h, name_c, ids_p, n, dst, nbytes))

    def _gather_rows(self, name: str, info: Dict[str, Any], ids: IdsLike, out: Any, call: Any) -> Any:
        """Rows of ``ids`` of the feature ``info`` describes, written to the host by
        ``call(ids, n, dst, dst_bytes)`` (one native call), then moved where gather's result goes."""
        ids_ = _ids(ids)
        n = ids_.array.shape[0]
        dtype_name = info["dtype"]
        if dtype_name not in _NUMPY_DTYPES:
            raise errors.VersionError(f"tierfs: feature {name!r} has dtype {dtype_name!r}, not known to this package")
        row = () if info["scalar"] else (int(info["dim"]),)
        shape = row if ids_.scalar else (n,) + row
        np_dtype = _NUMPY_DTYPES[dtype_name]
        if out is not None:
            if _util.is_tensor(out) and out.device.type != "cpu":
                raise errors.InvalidArgumentError(f"out for feature {name!r} must be in host memory (its rows are read from disk to the host)")
            self._check_out(out, shape, np_dtype, dtype_name)
            result = out
        else:
            dev = self._out_device(ids_)
            if dev is None:
                result = np.empty(shape, dtype=np_dtype)
            else:
                result = _torch().empty(shape, dtype=getattr(_torch(), dtype_name))
        if n:
            check(call(ids_.array.ctypes.data, n, _native.addr(result), n * int(info["row_bytes"])))
        if out is None and _util.is_tensor(result):
            dev = self._out_device(ids_)
            if dev is not None and dev.type != "cpu":
                result = result.to(dev)
        return result

    def _gather_typed(self, h: int, ids: IdsLike, out: Any, feature: Optional[str], node_type: Optional[str], edge_type: Optional[EdgeType]) -> Any:
        """gather of a node type's or an edge type's feature: one tfs_gather_typed (or, for CUDA
        ids of a type's default feature, tfs_gather_typed_device_ids) or tfs_gather_edge_feature."""
        if edge_type is not None:
            if node_type is not None:
                raise errors.InvalidArgumentError("tierfs: gather takes node_type or edge_type, not both")
            if feature is None:
                raise errors.InvalidArgumentError("tierfs: gather with edge_type needs feature=, the edge feature's name")
            key = edge_type_key(edge_type)
            info = self._edge_type_info(key)["features"].get(feature)
            if info is None:
                raise errors.KeyNotFoundError(f"tierfs: edge type {edge_type_tuple(key)} has no feature {feature!r} (it has {', '.join(self._edge_type_info(key)['features']) or 'none'})")
            key_c, name_c = key.encode(), _c_str(feature, "feature")
            return self._gather_rows(feature, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather_edge_feature(h, key_c, name_c, ids_p, n, dst, nbytes))
        t = self._node_type_info(node_type)
        feats = t["features"]
        if feature is None:
            feature = next((name for name, f in feats.items() if f["default"]), None)
            if feature is None:
                raise errors.KeyNotFoundError(f"tierfs: node type {node_type!r} has no features")
        info = feats.get(feature) if isinstance(feature, str) else None
        if info is None:
            raise errors.KeyNotFoundError(f"tierfs: node type {node_type!r} has no feature {feature!r} (it has {', '.join(feats) or 'none'})")
        nt_c, name_c = _c_str(node_type, "node_type"), _c_str(feature, "feature")
        if info["default"] and out is None and self._device_type == "cuda" and _util.is_tensor(ids) and ids.is_cuda and ids.dim() == 1:
            done = self._gather_typed_device_ids(h, nt_c, ids, info)
            if done is not None:
                return done
        return self._gather_rows(feature, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather_typed(h, nt_c, name_c, ids_p, n, dst, nbytes))

    def _gather_typed_device_ids(self, h: int, nt_c: bytes, ids: Any, info: Dict[str, Any]) -> Any:
        """A type's default feature for CUDA ids on the GPU (its tier stack's split kernel), or
        None where the library has no CUDA path."""
        torch = _torch()
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            return None  # _ids raises the error
        n = ids.shape[0]
        out = torch.empty((n, int(info["dim"])), dtype=getattr(torch, info["dtype"]), device=ids.device)
        if n == 0:
            return out
        t = ids.to(torch.int64).contiguous()
        status = lib.tfs_gather_typed_device_ids(h, nt_c, t.data_ptr(), n, out.data_ptr(), n * int(info["row_bytes"]), torch.cuda.current_stream(ids.device).cuda_stream)
        if status == errors.ENOTSUP:
            return None
        check(status)
        if t is not ids:
            t.record_stream(torch.cuda.current_stream(ids.device))
        return out

    # types ---------------------------------------------------------------------------------

    @property
    def types(self) -> Dict[str, Any]:
        """The dataset's node and edge types: ``{"node_types": {name: {"count", "features":
        {name: {...}}, "labels", "num_classes", "splits": {name: count}}}, "edge_types":
        {(src, rel, dst): {"count", "features": {...}}}, "typed": bool}``. A homogeneous dataset
        has one node type (and at most one edge type) and ``typed`` False; ``typed`` is True when
        the dataset's maker named its types (several types, a one-type ``HeteroData`` or GraphBolt
        dataset)."""
        if self._types is None:
            h = self._h()
            raw = _native.read_json(lambda buf, cap, needed: lib.tfs_types_json(h, buf, cap, needed))
            node_types = {}
            for t in raw["node_types"]:
                t["features"] = {f.pop("name"): f for f in t["features"]}
                node_types[t.pop("name")] = t
            edge_types = {}
            for e in raw["edge_types"]:
                e["features"] = {f.pop("name"): f for f in e["features"]}
                edge_types[(e["src"], e["rel"], e["dst"])] = e
            self._types = {"node_types": node_types, "edge_types": edge_types, "typed": bool(raw["typed"])}
        return self._types

    @property
    def node_types(self) -> List[str]:
        """The dataset's node type names, in its order."""
        return list(self.types["node_types"])

    @property
    def edge_types(self) -> List[tuple]:
        """The dataset's edge types as PyG's ``(src, rel, dst)`` tuples, in its order."""
        return list(self.types["edge_types"])

    @property
    def node_type(self) -> str:
        """The node type this store's own calls (``gather`` without ``node_type``, ``labels``,
        ``split``) serve: the dataset's first node type with features (its first node type when
        none has features: a dataset ingested from edges alone)."""
        types = self.types["node_types"]
        return next((name for name, t in types.items() if any(f["default"] for f in t["features"].values())), next(iter(types)))

    @property
    def is_hetero(self) -> bool:
        """True for a dataset of named types (``types["typed"]``): several node or edge types, or
        one typed type (a one-type ``HeteroData`` or GraphBolt dataset keeps its names). Front
        ends serve it as PyG's ``HeteroData`` and GraphBolt's typed keys."""
        return self.types["typed"]

    def num_nodes_of(self, node_type: str) -> int:
        """Number of nodes of ``node_type``."""
        return int(self._node_type_info(node_type)["count"])

    def num_edges_of(self, edge_type: EdgeType) -> int:
        """Number of edges of ``edge_type``."""
        return int(self._edge_type_info(edge_type_key(edge_type))["count"])

    def _node_type_info(self, node_type: Any) -> Dict[str, Any]:
        if not isinstance(node_type, str):
            raise errors.DTypeError(f"tierfs: node_type must be a str, got {type(node_type).__name__}")
        t = self.types["node_types"].get(node_type)
        if t is None:
            raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no node type {node_type!r} (it has {', '.join(self.types['node_types'])})")
        return t

    def _edge_type_info(self, key: str) -> Dict[str, Any]:
        e = self.types["edge_types"].get(edge_type_tuple(key))
        if e is None:
            raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no edge type {edge_type_tuple(key)} (it has {', '.join(map(str, self.types['edge_types'])) or 'none'})")
        return e

    @property
    def features(self) -> Dict[str, Dict[str, Any]]:
        """The dataset's features by name, node features first: ``{"of": "node" | "edge",
        "dtype", "dim", "row_bytes", "rows", "scalar", "default"}``. ``default`` marks the
        feature :meth:`gather` serves (with the tiers); the others are read with
        ``gather(ids, feature=name)``; edge features are indexed by edge id (``Sample.e_id``)."""
        if self._features is None:
            h = self._h()
            listed = _native.read_json(lambda buf, cap, needed: lib.tfs_features_json(h, buf, cap, needed))
            self._features = {f.pop("name"): f for f in listed}
        return self._features

    @property
    def feature_name(self) -> Optional[str]:
        """The name of the feature :meth:`gather` serves; None for a dataset without node
        features (PyG's ``Data`` without ``x``), which serves its topology, labels, splits and
        edge features, and whose ``gather(ids)`` raises :class:`tierfs.KeyNotFoundError`."""
        return next((name for name, f in self.features.items() if f["default"]), None)

    def gather_async(self, ids: IdsLike, out: Any = None, feature: Optional[str] = None) -> "GatherFuture":
        """Starts :meth:`gather` of ``ids`` (into ``out``) on a background thread and returns at
        once a :class:`GatherFuture`; its ``wait()`` returns what ``gather`` would (as GraphBolt's
        ``read_async`` and kvikio's ``IOFuture``). The ids are copied before this returns, so the
        caller may reuse them; ``out`` must stay alive until ``wait()``. Errors are raised by
        ``wait()``. On a CUDA store the rows are ordered before work the caller's current stream
        queues after ``wait()``."""
        ids_ = _ids(ids)
        frozen: Any = ids_.array.copy()
        if ids_.scalar:
            frozen = ids if not isinstance(ids, np.ndarray) else ids.copy()
        elif ids_.kind == "torch":  # back on the ids' device, so the result lands where gather's would
            frozen = _torch().from_numpy(frozen).to(ids_.device)
        return GatherFuture(_gather_pool().submit(self._gather_for_future, frozen, out, feature), self._device_type == "cuda")

    def _gather_for_future(self, ids: Any, out: Any, feature: Optional[str] = None) -> tuple:
        rows = self.gather(ids, out, feature)
        event = None
        if _util.is_tensor(rows) and rows.is_cuda:
            torch = _torch()
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(rows.device))
        return rows, event

    def _check_out(self, out: Any, shape: tuple, np_dtype: Any = None, dtype_name: Optional[str] = None) -> None:
        np_dtype = self._np_dtype if np_dtype is None else np_dtype
        dtype_name = self._dtype_name if dtype_name is None else dtype_name
        if isinstance(out, np.ndarray):
            if out.dtype != np_dtype and not (dtype_name == "bfloat16" and out.dtype == np.uint16):
                raise errors.DTypeError(f"out has dtype {out.dtype}; the rows are {np_dtype} ({dtype_name})")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise errors.InvalidArgumentError("out must be a C-contiguous, writeable array")
            got = out.shape
        elif _util.is_tensor(out):
            if out.dtype != getattr(_torch(), dtype_name):
                raise errors.DTypeError(f"out has dtype {out.dtype}; the rows are {getattr(_torch(), dtype_name)}")
            if not out.is_contiguous():
                raise errors.InvalidArgumentError("out must be a contiguous tensor")
            if out.requires_grad:
                raise errors.InvalidArgumentError("out must not require grad")
            got = tuple(out.shape)
        else:
            raise errors.DTypeError(f"out must be a numpy array or a torch tensor, got {type(out).__name__}")
        if tuple(got) != tuple(shape):
            raise errors.InvalidArgumentError(f"out has shape {tuple(got)}; the gather needs {tuple(shape)}")

    def _gather_host(self, h: int, ids: np.ndarray, out: Any) -> None:
        n = ids.shape[0]
        if n == 0:
            return
        check(lib.tfs_gather(h, ids.ctypes.data, n, _native.addr(out), n * self._row_bytes))

    def _gather_device_ids(self, h: int, ids: Any, out: Any) -> Any:
        """Gathers CUDA-tensor ids on this store's GPU without moving them to the host (split on
        the GPU): the result, or None where this path does not apply. Per-batch cost matters
        here (a small batch of cached rows takes microseconds), so what does not change is
        looked up once."""
        fast = self._cuda_ids
        if fast is None:
            fast = self._cuda_ids = self._cuda_ids_setup()
        if fast is False or self._device_gather is False:
            return None
        torch, tensor_type, int64, dtype, device, raw_stream = fast
        if not isinstance(ids, tensor_type) or not ids.is_cuda or ids.get_device() != device.index or ids.dim() != 1:
            return None
        if ids.dtype is not int64 and (ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool):
            return None  # _ids raises the error
        n = ids.shape[0]
        if out is None:
            out = torch.empty((n, self._dim), dtype=dtype, device=device)
        else:
            self._check_out(out, (n, self._dim))
            if not isinstance(out, tensor_type) or out.device != device:
                return None
        if n == 0:
            return out
        t = ids if ids.dtype is int64 and ids.is_contiguous() else ids.to(int64).contiguous()
        status = lib.tfs_gather_device_ids(h, t.data_ptr(), n, out.data_ptr(), n * self._row_bytes, raw_stream(device.index))
        if status:
            if status == errors.ENOTSUP:
                self._device_gather = False
                return None
            check(status)
        self._device_gather = True
        if t is not ids:  # the kernel may still read the converted copy
            t.record_stream(torch.cuda.current_stream(device))
        return out

    def _cuda_ids_setup(self) -> Any:
        """What _gather_device_ids needs, or False where CUDA-tensor ids cannot be gathered on
        the GPU (a CPU store, no torch)."""
        torch = _util.torch_module()
        if self._device_type != "cuda" or torch is None:
            return False
        getter = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if getter is None:
            def getter(index: int) -> int:
                return torch.cuda.current_stream(index).cuda_stream
        return (torch, torch.Tensor, torch.int64, self.torch_dtype, torch.device("cuda", self._device_index), getter)

    def _gather_cuda(self, h: int, ids: np.ndarray, out: Any) -> None:
        n = ids.shape[0]
        if n == 0:
            return
        torch = _torch()
        if self._device_gather is not False:
            stream = torch.cuda.current_stream(out.device).cuda_stream
            status = lib.tfs_gather_device(h, ids.ctypes.data, n, out.data_ptr(), n * self._row_bytes, stream)
            if status == 0:
                self._device_gather = True
                return
            if status != errors.ENOTSUP:
                check(status)
            self._device_gather = False
        # No CUDA path in the library: gather into pinned host memory, copy asynchronously.
        staging = torch.empty(tuple(out.shape), dtype=out.dtype, pin_memory=True)
        self._gather_host(h, ids, staging)
        out.copy_(staging, non_blocking=True)

    # labels and splits -----------------------------------------------------------------

    def labels(self, ids: IdsLike, node_type: Optional[str] = None) -> Any:
        """Labels (int64, -1 where unlabelled) of ``ids`` (of ``node_type``; None: the store's
        own), of the same kind as :meth:`gather`'s output. One native call."""
        h = self._h()
        ids_ = _ids(ids)
        n = ids_.array.shape[0]
        if node_type is not None and node_type != self.node_type:
            result = typed_labels(self, node_type, ids_.array)
        else:
            result = np.empty(n, dtype=np.int64)
            if n:
                check(lib.tfs_labels(h, ids_.array.ctypes.data, n, result.ctypes.data))
        if ids_.scalar:
            result = result.reshape(())
        dev = self._out_device(ids_)
        if dev is None:
            return result
        t = _torch().from_numpy(result)
        return t if dev.type == "cpu" else t.to(dev)

    def split(self, name: str, node_type: Optional[str] = None) -> np.ndarray:
        """Node ids (int64 numpy array) of the split ``name`` ("train", "val", "test") of
        ``node_type`` (None: the store's own).

        Raises:
            KeyError (tierfs.KeyNotFoundError): the dataset has no such split.
        """
        if node_type is not None and node_type != self.node_type:
            return typed_split(self, node_type, name)
        h = self._h()
        count = c_int64(0)
        check(lib.tfs_split(h, _c_str(name, "split name"), None, 0, byref(count)))
        out = np.empty(count.value, dtype=np.int64)
        if count.value:
            check(lib.tfs_split(h, _c_str(name, "split name"), out.ctypes.data, count.value, byref(count)))
        return out

    # edge splits (link prediction) ---------------------------------------------------

    def edge_splits(self, edge_type: Optional[EdgeType] = None) -> Dict[str, Dict[str, Any]]:
        """The edge splits of ``edge_type`` (None: the dataset's only edge type) by name:
        ``{"count": seed edges, "labels": "int64" | "float32" (absent: none), "neg_per_seed":
        negative destinations per seed (0: none)}``; ``{}`` when it has none."""
        h = self._h()
        key = None if edge_type is None else _c_str(edge_type_key(edge_type), "edge type")
        return _native.read_json(lambda buf, cap, needed: lib.tfs_edge_splits_json(h, key, buf, cap, needed))

    def _edge_split(self, split: str, edge_type: Optional[EdgeType], part: str) -> tuple:
        info = self.edge_splits(edge_type).get(split) if isinstance(split, str) else None
        if info is None:
            # Let the core name what is missing (TFS_ENOENT lists the splits the type has).
            info = {"count": 0}
        key = None if edge_type is None else _c_str(edge_type_key(edge_type), "edge type")
        n = int(info["count"])
        index = labels = neg = None
        if part == "index":
            index = np.empty((2, n), dtype=np.int64)
            if info.get("labels"):
                labels = np.empty(n, dtype=np.dtype(info["labels"]))
        else:
            k = int(info.get("neg_per_seed", 0))
            neg = np.empty((n, k), dtype=np.int64) if k else np.empty((n, 1), dtype=np.int64)
        check(lib.tfs_edge_split_copy(self._h(), key, _c_str(split, "split name"), n,
                                      None if index is None else index.ctypes.data,
                                      None if labels is None else labels.ctypes.data,
                                      None if neg is None else neg.ctypes.data))
        return index, labels, neg

    def edge_split(self, split: str, edge_type: Optional[EdgeType] = None) -> tuple:
        """The seed edges of split ``split`` ("train", "val", "test") of ``edge_type`` (PyG's
        tuple or ``"src:rel:dst"``; None: the dataset's only edge type) as PyG's link loaders
        take them: ``(edge_label_index, edge_label)``, torch tensors — ``edge_label_index`` of
        shape ``[2, n]`` (int64; row 0 ids of the source node type, row 1 of the destination
        type), ``edge_label`` of shape ``[n]`` in the dtype it was ingested as (float32 or
        int64), or None when the split has no labels (every seed a positive, as OGB's splits).
        ``tierfs.pyg.LinkNeighborLoader(data, edge_label_index=..., edge_label=...)`` takes them
        as they are.

        Raises:
            KeyError (tierfs.KeyNotFoundError): no such split or edge type.
        """
        index, labels, _ = self._edge_split(split, edge_type, "index")
        torch = _torch()
        return torch.from_numpy(index), None if labels is None else torch.from_numpy(labels)

    def edge_split_negatives(self, split: str, edge_type: Optional[EdgeType] = None) -> Any:
        """The negative destination candidates of split ``split`` of ``edge_type`` (OGB's
        ``target_node_neg``): an int64 torch tensor ``[n, k]``, row i seed edge i's k candidates
        (ids of the destination node type).

        Raises:
            KeyError (tierfs.KeyNotFoundError): no such split or edge type, or the split has no
                negatives.
        """
        _, _, neg = self._edge_split(split, edge_type, "neg")
        return _torch().from_numpy(neg)

    # sampling --------------------------------------------------------------------------

    def sampler(
        self,
        fanouts: Union[Sequence[int], Dict[Any, Sequence[int]]],
        replace: bool = False,
        seed: int = 0,
        workers: int = 0,
    ) -> Union["Sampler", HeteroSampler]:
        """A k-hop uniform neighbor sampler over this store's topology.

        Args:
            fanouts: neighbors to sample per node, per hop (e.g. ``[25, 10]``); -1 takes every
                neighbor. A dict ``{edge type: [per hop]}`` (PyG's dict ``num_neighbors``; every
                edge type of the dataset, one length) gives a :class:`tierfs.HeteroSampler`.
            replace: sample with replacement.
            seed: each :meth:`Sampler.sample` call uses ``seed + call number``, so batches
                differ but runs repeat.
            workers: goroutines choosing neighbors (0: number of CPUs). Results do not depend
                on it.
        """
        if isinstance(fanouts, dict):
            return HeteroSampler(self, fanouts, replace=replace, seed=seed, workers=workers)
        return Sampler(self, fanouts, replace=replace, seed=seed, workers=workers)

    @property
    def _loader_share(self) -> SeedShare:
        """What a :class:`tierfs.Loader` asks this store about its seeds and the order of its
        gathers (:mod:`tierfs.seedshare`): here one process's, every seed."""
        return SeedShare(self)

    def plan_epochs(
        self,
        fanouts: Any,
        batch_size: int,
        epochs: int,
        seeds: Any = None,
        plan_dir: Optional[Union[str, os.PathLike]] = None,
        disk_budget: Any = None,
        replace: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        shuffle_seed: int = 0,
        replan: bool = True,
        workers: int = 0,
        place_tiers: bool = True,
        node_type: Optional[str] = None,
        seed_edges: Any = None,
        edge_label: Any = None,
        neg_sampling: Any = None,
        amount: Union[int, float] = 1,
        strict: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
        reverse_edge_types: Optional[Mapping[Any, Any]] = None,
        seed_orders: Any = None,
        elsewhere: Any = None,
        first_epoch: int = 0,
        pack_method: Optional[str] = None,
        pack_memory: Any = None,
    ) -> Any:
        """Plans ``epochs`` epochs (DiskGNN's packed reads; docs/planned.md) and opens the plan.

        The plan covers the training epochs ``[first_epoch, first_epoch + epochs)``: planned
        epoch k is epoch ``first_epoch + k`` (its order and its batches' sampling seeds derive
        from that number), so plans of consecutive ranges never repeat an epoch.

        Each epoch permutes ``seeds`` (default: the "train" split) by ``shuffle_seed`` in the
        core, samples every batch with a seed derived from ``seed``, and packs the rows of its
        sample that no memory tier holds into ``plan_dir`` (default: a new temporary directory,
        removed when the plan is closed).
        A plan already there for the same inputs is reused; a stale or missing one is made
        again (``replan=False`` raises instead). ``epochs`` is 1 to 1024. ``disk_budget`` (bytes or
        "20GB") plans as many epochs as fit, at least one; without it, epochs the size of the first
        that would not fit the free disk are refused. ``place_tiers`` first refills the memory tiers with the rows
        the planned epochs read most (the best static placement for exactly these batches; it
        costs one sampling pass, again when the plan is reopened). Returns a
        :class:`tierfs.PlannedEpochs`.

        On a dataset of several types, ``fanouts`` as ``{edge type: [per hop]}`` (every edge
        type, as :meth:`sampler` takes them) plans batches of ``seeds`` of ``node_type`` (default
        seeds: its "train" split) sampled as a :class:`tierfs.HeteroSampler` of ``seed`` samples
        them (batch b of planned epoch e: its first sample with the seed the core derives from
        ``seed``, e and b), packing per batch the rows of every node type with features.

        With ``seed_edges`` (a ``(2, n)`` array or tensor of (src, dst) pairs, or the name of a
        stored edge split, its labels with it; on a heterogeneous dataset ``(edge type, either)``)
        the batches are of seed edges (link prediction): each epoch permutes them, and batch b of
        planned epoch e is what ``sampler(fanouts, seed=s).sample_from_edges(...)`` gives for its
        seed edges with ``edge_label``, ``neg_sampling``, ``amount``, ``strict``,
        ``exclude_seed_edges`` and ``undirected`` (``reverse_edge_types`` on a heterogeneous
        dataset), ``s`` the seed the core derives from ``seed``, e and b: the same negatives,
        subgraph and rows. ``plan.seeds(e, b)`` are then the positions of the batch's seed edges.

        ``seed_orders`` (instead of ``seeds``: ``epochs`` arrays of one length) gives each
        planned epoch's seed nodes in their order (no shuffle: a distributed rank's share of each
        epoch). ``elsewhere`` (ids, or ``{node type: ids}``) are rows another process serves (a
        distributed rank's rows owned by its peers): never packed, and left unwritten by the
        plan's host gathers (``gather_device`` writes them only where a memory tier holds them)
        for the caller to fill; a plan made with another set is stale.

        ``pack_method`` says how planning reads the rows it packs (docs/planned.md, "Packing: a
        scan of the feature file"): ``"scan"`` (each window's rows in one ascending pass over the
        feature files, large reads), ``"random"`` (a read a row, batch by batch), or None / ``""``
        to choose per window by the disk model. ``pack_memory`` (bytes or "256MB"; None or 0: 1
        GiB) bounds the distinct rows of a window; planning holds two, and a scan reads the feature
        files once a window. Neither changes the packed bytes nor the plan's fingerprint (a plan
        made with other values is reused); ``report["pack_method"]`` and
        ``report["pack_windows"]`` say what planning did. Another method, or a negative or
        unparsable size, raises :class:`tierfs.InvalidArgumentError` naming the option.
        """
        return PlannedEpochs(
            self, fanouts, batch_size, epochs, seeds=seeds,
            plan_dir=None if plan_dir is None else os.fspath(plan_dir), disk_budget=disk_budget,
            replace=replace, drop_last=drop_last, seed=seed, shuffle_seed=shuffle_seed,
            replan=replan, workers=workers, place_tiers=place_tiers, node_type=node_type,
            seed_edges=seed_edges, edge_label=edge_label, neg_sampling=neg_sampling, amount=amount, strict=strict,
            exclude_seed_edges=exclude_seed_edges, undirected=undirected, reverse_edge_types=reverse_edge_types,
            seed_orders=seed_orders, elsewhere=elsewhere,
            first_epoch=first_epoch, pack_method=pack_method, pack_memory=pack_memory,
        )

    def csc(self, chunk_size: int = 1 << 20, edge_type: Optional[EdgeType] = None) -> tuple:
        """The whole topology as CSC: ``(indptr, indices)``, int64 numpy arrays, the
        in-neighbors of node v being ``indices[indptr[v]:indptr[v+1]]`` in stored order.
        With ``edge_type``, that edge type's: CSC over its dst type, indices of its src type,
        position = edge id (one native sampling call over every dst node).

        Cost: materializes all edges in memory (8 bytes per edge plus 8 per node, twice that
        while it is built), through sampling every neighbor of ``chunk_size`` nodes per native
        call. Meant for small graphs, tests and conversions; training samples instead.
        """
        if edge_type is not None:
            return typed_csc(self, edge_type)
        self._h()
        n = self._num_nodes
        indptr = np.zeros(n + 1, dtype=np.int64)
        parts = []
        s = self.sampler([-1])
        try:
            for lo in range(0, n, chunk_size):
                hi = min(n, lo + chunk_size)
                sample = s.sample(np.arange(lo, hi, dtype=np.int64))
                indptr[lo + 1 : hi + 1] = np.bincount(sample.col, minlength=hi - lo)
                parts.append(sample.nodes[sample.row])
        finally:
            s.close()
        np.cumsum(indptr, out=indptr)
        indices = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        return indptr, indices

    # placement, stats, mount -----------------------------------------------------------

    def place(
        self,
        hotness: Optional[Any] = None,
        *,
        fanouts: Optional[Sequence[int]] = None,
        batch_size: Optional[int] = None,
        policy: str = "unified",
        epochs: Optional[int] = None,
        batches: Optional[int] = None,
        recompute: bool = False,
        host_bytes: Optional[int] = None,
        gpu_bytes: Optional[int] = None,
        progress: Any = None,
        node_type: Optional[str] = None,
        seed: int = 0,
    ) -> Optional[Dict[str, Any]]:
        """Refills the host tier by ``hotness`` (one count per node, higher is hotter; values
        are clipped to uint32), or by in-degree when None. Waits for running gathers and blocks
        new ones while it runs.

        With ``fanouts`` (and ``batch_size``) it places topology and features together instead,
        as ``tierfs place``: it loads the placement saved in the dataset directory when it was
        made for the dataset as it is and for these inputs, otherwise profiles ``epochs`` epochs
        of the train split (else of every node), each in a fresh order as a loader visits them
        (None: until the held-out estimate converges, at most 8; ``batches`` profiles that many
        batches instead), plans under
        ``policy`` ("unified", "unified-pcie", "topology-first", "features-first", "degree",
        "random", "none") and saves it there (``recompute`` forces this); then applies it to
        this store. The budgets are the store's caches unless ``host_bytes`` / ``gpu_bytes``
        are given. Returns the report as a dict (the JSON of ``tierfs place --json``):
        ``source`` ("loaded", "replanned", "computed"), ``loaded``, ``file``, ``usage`` (per
        kind and tier), ``comparison`` (per policy: ``pcie_bytes_per_batch``,
        ``ssd_bytes_per_batch``, memory taken, ``chosen``), ...
        ``progress`` (a planned placement only) is as :func:`tierfs.ingest`'s: True for a bar,
        or ``callable(stage, done, total)``, called with ``("profile", batches sampled, batches
        planned so far)``.

        With ``fanouts`` a dict (a heterogeneous graph: ``{edge type: [per hop]}`` as
        :meth:`sampler` takes), it profiles ``batches`` batches (default 100) of ``batch_size``
        seeds of ``node_type``'s train split as a shuffling loader visits them, counts how often
        each (type, row) is reached, and fills each type's GPU then host tier with its most
        reached rows, within the type's share of the budgets (split by feature bytes). Returns
        ``{"batches", "seconds", "node_types": {type: {"rows_reached", "memory_rows",
        "reached_in_memory"}}}``. The placement is not saved.

        Raises:
            ValueError (tierfs.InvalidArgumentError): hotness together with fanouts, fanouts
                without batch_size, a bad policy, budget or size, or a plan whose feature rows
                do not fit the store's caches.
        """
        if isinstance(fanouts, dict):
            if hotness is not None or batch_size is None:
                raise errors.InvalidArgumentError("a heterogeneous placement needs fanouts and batch_size, and no hotness")
            if policy != "unified" or epochs is not None or host_bytes is not None or gpu_bytes is not None or recompute:
                raise errors.NotSupportedError("a heterogeneous placement profiles batches= batches and fills each type's share of the store's caches; policy, epochs, budgets and recompute are one-type options")
            req_h = {
                "node_type": node_type if node_type is not None else self.node_type,
                "fanouts": fanouts_by_key(fanouts),
                "batch_size": int(batch_size),
                "batches": int(batches) if batches is not None else 100,
                "seed": int(seed) & 0xFFFFFFFFFFFFFFFF,
            }
            request_h = json.dumps(req_h).encode()
            h = self._h()
            return _native.read_json(lambda buf, cap, needed: lib.tfs_place_hetero_json(h, request_h, buf, cap, needed))
        if fanouts is not None or batch_size is not None:
            if hotness is not None:
                raise errors.InvalidArgumentError("give hotness or fanouts (a planned placement), not both")
            if fanouts is None or batch_size is None:
                raise errors.InvalidArgumentError("a planned placement needs both fanouts and batch_size")
            req: Dict[str, Any] = dict(
                fanouts=_fanouts(fanouts), batch_size=int(batch_size), policy=str(policy), recompute=bool(recompute)
            )
            if epochs is not None:
                req["epochs"] = int(epochs)
            if batches is not None:
                req["batches"] = int(batches)
            if host_bytes is not None:
                req["host_bytes"] = int(_util.parse_size(host_bytes)) if isinstance(host_bytes, str) else int(host_bytes)
            if gpu_bytes is not None:
                req["gpu_bytes"] = int(_util.parse_size(gpu_bytes)) if isinstance(gpu_bytes, str) else int(gpu_bytes)
            request = json.dumps(req).encode()
            h = self._h()
            cb, errs = _progress_callback(progress)
            if cb is None:
                return _native.read_json(lambda buf, cap, needed: lib.tfs_place_json(h, request, buf, cap, needed), 1 << 16)
            report = _native.read_json(lambda buf, cap, needed: lib.tfs_place_json_progress(h, request, cb, None, buf, cap, needed), 1 << 16)
            if errs:
                raise errs[0]
            return report
        if progress is not None and progress is not False:
            raise errors.InvalidArgumentError("progress is for a planned placement (fanouts and batch_size); placing by hotness is one quick pass")
        h = self._h()
        if hotness is None:
            check(lib.tfs_place(h, None, 0))
            return
        arr = self._hotness_array(hotness)
        check(lib.tfs_place(h, arr.ctypes.data, arr.shape[0]))

    def hottest(self, k: int, hotness: Optional[Any] = None, node_type: Optional[str] = None) -> np.ndarray:
        """The (at most) ``k`` node ids :meth:`place` would put in memory, hottest first (int64
        numpy array): ranked by ``hotness`` (one count per node, ties to the smaller id), or
        when None by the applied placement (``place(fanouts=...)``), else by in-degree (in a
        dataset of several types: by how often the type's nodes are neighbors). With
        ``node_type``, that type's tier stack and ids (``hotness`` one count per node of it).
        One native call; :mod:`tierfs.distributed` decides ownership from this order."""
        h = self._h()
        k = int(k)
        if k < 0:
            raise errors.InvalidArgumentError(f"hottest: k = {k} is negative")
        typed = node_type is not None and node_type != self.node_type
        rows = self.num_nodes_of(node_type) if typed else self._num_nodes
        k = min(k, rows)
        hot = None if hotness is None else self._hotness_array(hotness, rows, node_type if typed else None)
        out = np.empty(k, dtype=np.int64)
        count = c_int64(0)
        hot_p, hot_n = (None, 0) if hot is None else (hot.ctypes.data, hot.shape[0])
        if typed:
            check(lib.tfs_hottest_typed(h, _c_str(node_type, "node_type"), hot_p, hot_n, k, out.ctypes.data, byref(count)))
        else:
            check(lib.tfs_hottest(h, hot_p, hot_n, k, out.ctypes.data, byref(count)))
        return out[: count.value]

    def profile_reads(
        self, fanouts: Any, batch_size: int, batches: Optional[int] = None, seeds: Optional[IdsLike] = None,
        seed: int = 0, replace: bool = False, node_type: Optional[str] = None,
    ) -> Any:
        """How often a loader's batches read each feature row (one uint32 count per node),
        placing nothing: pre-samples ``batches`` batches of ``batch_size`` ``seeds`` (None: the
        train split, else every node) with ``fanouts``, the first epoch in the order given and
        later ones reshuffled (None: one epoch), and counts for each node the batches that read
        its row, seeds included. These are the counts :meth:`place` (``fanouts=``) plans from;
        :meth:`tierfs.DistributedStore.place` sums every rank's counts of its own seeds. ``seed``
        seeds the sampling. One native call (``tfs_profile_reads``).

        With ``fanouts`` a dict (a graph of several types: ``{edge type: [per hop]}`` as
        :meth:`sampler` takes) the seeds are of ``node_type`` (None: the store's type; default
        seeds its train split), sampled as :meth:`place` profiles them — full batches of a fresh
        permutation per pass, as a shuffling loader with ``drop_last`` (None: one pass, at least
        one batch) — and the result is ``{node type: counts}`` for every node type with features
        (``tfs_profile_reads_hetero``).

        Raises:
            ValueError (tierfs.InvalidArgumentError): empty fanouts, batch_size or batches below
                1, no seeds (the message names the argument).
            IndexError (tierfs.OutOfRangeError): a seed out of range.
        """
        hetero = isinstance(fanouts, dict)
        fo: Any = fanouts_by_key(fanouts) if hetero else _fanouts(fanouts)
        if not fo:
            raise errors.InvalidArgumentError("profile_reads: fanouts is empty; give one fanout per hop")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise errors.InvalidArgumentError(f"profile_reads: batch_size = {batch_size!r}; want a positive int")
        if batches is not None and (isinstance(batches, bool) or not isinstance(batches, (int, np.integer)) or batches < 1):
            raise errors.InvalidArgumentError(f"profile_reads: batches = {batches!r}; want a positive int (None: one epoch of the seeds)")
        nt = self.node_type if node_type is None else node_type
        if seeds is None:
            if hetero:
                seeds = self.split("train", node_type=nt)
            else:
                seeds = self.split("train") if "train" in self.split_names else np.arange(self._num_nodes, dtype=np.int64)
        arr = _ids(seeds, "seeds").array
        if arr.shape[0] == 0:
            raise errors.InvalidArgumentError("profile_reads: seeds is empty: no batches to profile")
        req: Dict[str, Any] = dict(fanouts=fo, batch_size=int(batch_size), batches=int(batches or 0),
                                   seed=int(seed) & 0xFFFFFFFFFFFFFFFF, replace=bool(replace))
        if not hetero:
            counts = np.empty(self._num_nodes, dtype=np.uint32)
            check(lib.tfs_profile_reads(self._h(), arr.ctypes.data, arr.shape[0], json.dumps(req).encode(), counts.ctypes.data, counts.shape[0]))
            return counts
        req["node_type"] = nt
        infos = self.types["node_types"]
        out = {t: np.zeros(int(info["count"]), dtype=np.uint32) for t, info in infos.items()
               if any(f["default"] for f in info["features"].values())}
        ptrs = (c_void_p * len(infos))(*[out[t].ctypes.data if t in out and out[t].shape[0] else None for t in infos])
        lens = np.array([int(info["count"]) for info in infos.values()], dtype=np.int64)
        check(lib.tfs_profile_reads_hetero(self._h(), arr.ctypes.data, arr.shape[0], json.dumps(req).encode(), ptrs, lens.ctypes.data, len(infos)))
        return out

    def place_ids(self, ids: IdsLike, node_type: Optional[str] = None) -> None:
        """Refills the memory tiers (of ``node_type``'s tier stack; None: the store's own) with
        ``ids`` in the order given: the GPU tier takes the first rows it holds, the host tier the
        next; ids beyond both are not cached. The ids must be distinct and in range. Waits for
        running gathers and blocks new ones while it runs."""
        h = self._h()
        arr = _ids(ids, "place_ids ids").array
        ptr = arr.ctypes.data if arr.shape[0] else None
        if node_type is not None and node_type != self.node_type:
            self._node_type_info(node_type)
            check(lib.tfs_place_ids_typed(h, _c_str(node_type, "node_type"), ptr, arr.shape[0]))
            return
        check(lib.tfs_place_ids(h, ptr, arr.shape[0]))

    def _hotness_array(self, hotness: Any, rows: Optional[int] = None, node_type: Optional[str] = None) -> np.ndarray:
        rows = self._num_nodes if rows is None else rows
        if _util.is_tensor(hotness):
            hotness = hotness.detach().cpu().numpy()
        arr = np.asarray(hotness)
        if arr.ndim != 1 or arr.shape[0] != rows:
            of = "" if node_type is None else f" of node type {node_type!r}"
            raise errors.InvalidArgumentError(f"hotness must have one entry per node{of} ({rows}), got shape {arr.shape}")
        if arr.dtype != np.uint32:
            if arr.dtype.kind not in "iuf":
                raise errors.DTypeError(f"hotness must be numbers, got {arr.dtype}")
            arr = np.clip(arr, 0, np.iinfo(np.uint32).max).astype(np.uint32)
        return np.ascontiguousarray(arr)

    def stats(self) -> Dict[str, Any]:
        """Counters since open, as a dict: ``gathers``, ``rows_gathered``, per-tier
        ``rows_held`` / ``hits`` / ``bytes_served`` (``tiers``), disk IO (``io``: ``requests``,
        ``reads``, ``bytes_requested``, ``bytes_read``, latency histogram), ``samples``. On a
        store of several node types with features these are the whole store's (summed over the
        types), and ``node_types`` holds each type's own."""
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_stats_json(h, buf, cap, needed))

    def advise(
        self,
        fanouts: Sequence[int],
        batch_size: int,
        ssd_price: float,
        machine_price: float,
        *,
        budget: Optional[float] = None,
        max_ssds: int = 8,
        measure: bool = False,
        train_ms: float = 0.0,
        ssd_iops: Optional[float] = None,
        pcie_gbps: Optional[float] = None,
        alpha_us: Optional[float] = None,
        block_cost: Optional[float] = None,
        batches: int = 20,
        seed: int = 1,
        replace: bool = False,
        mode: Optional[str] = None,
        current_ssds: Optional[int] = None,
        check: bool = False,
    ) -> Dict[str, Any]:
        """How many SSDs to buy: Hyperion's throughput-per-dollar model, as ``tierfs advise``.

        Runs this store's sampler and gather for ``batches`` batches of ``batch_size`` seeds
        (its caches as they are), counts the rows and disk reads each tier serves per batch,
        and predicts, for 1..``max_ssds`` SSDs, ``T_ssd = N_ssd / (IOPS * Q) + alpha``,
        ``T_pcie = bytes / link throughput``, the batch time, seeds/s and TPC (seeds/s per unit
        of price, ``ssd_price * Q + machine_price``). ``measure`` probes the disk and the host
        memory path of this machine (about 2 s); otherwise throughputs come from ``ssd_iops``
        (per SSD), ``pcie_gbps`` (GB/s), ``alpha_us`` and ``block_cost`` (the cost of each block
        past a merged read's first, in single-block reads) or their defaults. ``check`` times
        fresh batches afterwards and compares. Takes seconds; releases the GIL.

        Returns the report as a dict (the JSON of ``tierfs advise --json``): ``configs`` (one
        per SSD count: ``t_ssd_s``, ``t_pcie_s``, ``t_sample_s``, ``t_train_s``, ``t_batch_s``,
        ``bottleneck``, ``seeds_per_s``, ``tpc``, ``price``, ``within_budget``),
        ``recommended_ssds``, ``recommended``, ``current``, ``workload``, ``machine``,
        ``prices``, ``formula``, ``notes`` and, with ``check``, ``check``.

        Raises:
            ValueError (tierfs.InvalidArgumentError): a zero or negative price, size or
                throughput, or a budget that affords no configuration.
        """
        req: Dict[str, Any] = dict(
            fanouts=_fanouts(fanouts),
            batch_size=int(batch_size),
            ssd_price=float(ssd_price),
            machine_price=float(machine_price),
            max_ssds=int(max_ssds),
            measure=bool(measure),
            train_ms=float(train_ms),
            batches=int(batches),
            seed=int(seed),
            replace=bool(replace),
            check=bool(check),
        )
        for key, val in (("budget", budget), ("ssd_iops", ssd_iops), ("pcie_gbps", pcie_gbps), ("alpha_us", alpha_us), ("block_cost", block_cost)):
            if val is not None:
                req[key] = float(val)
        if mode is not None:
            req["mode"] = str(mode)
        if current_ssds is not None:
            req["current_ssds"] = int(current_ssds)
        request = json.dumps(req).encode()
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_advise_json(h, request, buf, cap, needed), 1 << 16)

    def mount(self, path: Union[str, os.PathLike]) -> None:
        """Mounts a read-only FUSE view of this store at ``path``: manifest.json, live
        stats.json, tiers/{gpu,host,ssd}/, nodes/<id>/...; unmounted by :meth:`unmount` or
        :meth:`close`."""
        check(lib.tfs_mount(self._h(), _c_str(os.fspath(path), "mount path")))

    def unmount(self) -> None:
        """Unmounts what :meth:`mount` mounted."""
        check(lib.tfs_unmount(self._h()))

    # lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the store (unmounting it if mounted) after calls in flight finish. Later calls
        raise :class:`tierfs.ClosedError`; closing again does nothing."""
        h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            check(lib.tfs_close(h))

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __reduce__(self):
        if self._handle is None:
            raise errors.ClosedError(f"tierfs: cannot pickle the closed store {self._path}")
        return (_reopen, (self._path, self._options))

    def __repr__(self) -> str:
        if self._handle is None:
            return f"<tierfs.Store {self._path!r} closed>"
        parts = [
            f"nodes={self._num_nodes}",
            f"edges={self._num_edges}",
            f"dim={self._dim}",
            f"dtype={self._dtype_name}",
        ]
        if self._num_classes:
            parts.append(f"classes={self._num_classes}")
        parts += [
            f"host_cache={_util.format_bytes(self._host_cache_bytes)}",
            f"device={self.device}",
            f"io={self._io_backend}",
        ]
        return f"<tierfs.Store {self._path!r} " + " ".join(parts) + ">"


# Asynchronous gathers ---------------------------------------------------------------------

_gather_executor: Optional[Any] = None
_gather_executor_lock = threading.Lock()


def _gather_pool() -> Any:
    """The threads of gather_async (gathers release the GIL; four keep several in flight)."""
    global _gather_executor  # pylint: disable=global-statement
    with _gather_executor_lock:
        if _gather_executor is None:
            import concurrent.futures

            _gather_executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="tierfs-gather")
        return _gather_executor


class GatherFuture:
    """A gather in flight (:meth:`Store.gather_async`)."""

    __slots__ = ("_future", "_cuda")

    def __init__(self, future: Any, cuda: bool) -> None:
        self._future = future
        self._cuda = cuda

    def done(self) -> bool:
        """Whether the gather has finished (then :meth:`wait` does not block)."""
        return self._future.done()

    def wait(self, timeout: Optional[float] = None) -> Any:
        """The gathered rows, once they are in place; raises the gather's error, or
        TimeoutError after ``timeout`` seconds."""
        rows, event = self._future.result(timeout)
        if event is not None:
            _torch().cuda.current_stream(rows.device).wait_event(event)
            rows.record_stream(_torch().cuda.current_stream(rows.device))
        return rows

    result = wait
