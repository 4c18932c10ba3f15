"""The gathers of :class:`tierfs.Store` (``gather``, ``gather_async`` and the calls behind them:
a feature's rows into numpy or torch, on the host or into CUDA memory, typed or not), moved here
from store.py as they were; :class:`tierfs.Store` takes them as its methods (``self`` a store).
Also the feature dtypes' numpy types and :class:`GatherFuture`."""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional

import numpy as np

from . import _native, _util, errors
from ._args import IdsLike, _c_str, _ids, _torch
from ._native import check, lib
from .hetero import EdgeType, edge_type_key, edge_type_tuple

__all__ = ["GatherFuture"]


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


def dtype_name(dtype: Any, what: str) -> str:
    """The tierfs name of a dtype given by name (``"float16"``), as a numpy dtype or type
    (``np.float16``) or as a torch dtype (``torch.bfloat16``)."""
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        return str(dtype).rsplit(".", 1)[-1]
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise errors.DTypeError(f"{what}: want a dtype name (\"float16\"), a numpy or a torch dtype, got {dtype!r}") from None


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


# Store's gathers ---------------------------------------------------------------------------


def gather(
    self,
    ids: IdsLike,
    out: Any = None,
    feature: Optional[str] = None,
    node_type: Optional[str] = None,
    edge_type: Optional[EdgeType] = None,
    dtype: Any = None,
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
            or ``"src:rel:dst"``) by its edge ids (``Sample.edge``).
        dtype: the dtype to return the rows in (``torch.float32``, ``np.float32``,
            ``"float32"``, ...); None: the stored dtype (:attr:`dtype_name`; a dataset ingested
            with ``store_dtype="float16"`` returns float16). The rows are read and cached at the
            stored dtype and cast once they arrive, where they are: on the GPU for a CUDA
            result. ``out``, where given, is then of this dtype.

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
    if dtype is None:
        return _gather_stored(self, ids, out, feature, node_type, edge_type)
    return cast_rows(_gather_stored(self, ids, None, feature, node_type, edge_type), dtype, out)


def _gather_stored(self, ids: IdsLike, out: Any, feature: Optional[str], node_type: Optional[str], edge_type: Optional[EdgeType]) -> Any:
    """gather at the stored dtype."""
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


def cast_rows(rows: Any, dtype: Any, out: Any) -> Any:
    """rows (a gather's result) as ``dtype``, cast where they lie (a CUDA tensor on its GPU);
    written into ``out`` (of that dtype and shape) where given."""
    name = dtype_name(dtype, "gather: dtype")
    if name not in _NUMPY_DTYPES:
        raise errors.DTypeError(f"gather: dtype {name!r} is not a feature dtype (want one of {', '.join(_NUMPY_DTYPES)})")
    if _util.is_tensor(rows):
        torch = _torch()
        want = getattr(torch, name)
        if out is None:
            return rows.to(want)
        if not _util.is_tensor(out) or out.dtype != want or tuple(out.shape) != tuple(rows.shape):
            raise errors.DTypeError(f"gather: out must be a {want} tensor of shape {tuple(rows.shape)}, got {getattr(out, 'dtype', type(out).__name__)} {tuple(getattr(out, 'shape', ()))}")
        return out.copy_(rows)
    want_np = _NUMPY_DTYPES[name]
    if rows.dtype == np.uint16 and _NUMPY_DTYPES["bfloat16"] == np.uint16 and name != "bfloat16":
        rows = (rows.astype(np.uint32) << 16).view(np.float32)  # bfloat16 bits without ml_dtypes: widened exactly
    if out is None:
        return rows.astype(want_np, copy=False)
    if not isinstance(out, np.ndarray) or out.dtype != want_np or out.shape != rows.shape:
        raise errors.DTypeError(f"gather: out must be a {want_np} array of shape {rows.shape}, got {getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', ())}")
    np.copyto(out, rows, casting="unsafe")
    return out


def _gather_feature(self, h: int, name: str, ids: IdsLike, out: Any) -> Any:
    """gather of a feature other than the store's: one tfs_gather (a node feature of the store's
    type) or tfs_gather_edge_feature (of the only edge type) into host memory."""
    info = self.features.get(name) if isinstance(name, str) else None
    if info is None:
        if not isinstance(name, str):
            raise errors.DTypeError(f"feature must be a str, got {type(name).__name__}")
        raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no feature {name!r} (it has {', '.join(self.features)})")
    name_c, nt_c = _c_str(name, "feature"), self._nt_c
    if info["of"] == "edge":
        return self._gather_rows(name, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather_edge_feature(h, None, name_c, ids_p, n, dst, nbytes))
    return self._gather_rows(name, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather(h, nt_c, name_c, ids_p, n, dst, nbytes))


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
    """gather of a node type's or an edge type's feature: one tfs_gather (or, for CUDA ids of a
    type's default feature, tfs_gather_device_ids) or tfs_gather_edge_feature."""
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
    return self._gather_rows(feature, info, ids, out, lambda ids_p, n, dst, nbytes: lib.tfs_gather(h, nt_c, name_c, ids_p, n, dst, nbytes))


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
    status = lib.tfs_gather_device_ids(h, nt_c, t.data_ptr(), n, out.data_ptr(), n * int(info["row_bytes"]), torch.cuda.current_stream(ids.device).cuda_stream)
    if status == errors.ENOTSUP:
        return None
    check(status)
    if t is not ids:
        t.record_stream(torch.cuda.current_stream(ids.device))
    return out


def gather_async(self, ids: IdsLike, out: Any = None, feature: Optional[str] = None, dtype: Any = None) -> "GatherFuture":
    """Starts :meth:`gather` of ``ids`` (into ``out``) on a background thread and returns at
    once a :class:`GatherFuture`; its ``wait()`` returns what ``gather`` would (as GraphBolt's
    ``read_async`` and kvikio's ``IOFuture``). The ids are copied before this returns, so the
    caller may reuse them; ``out`` must stay alive until ``wait()``. Errors are raised by
    ``wait()``. On a CUDA store the rows are ordered before work the caller's current stream
    queues after ``wait()``. ``dtype`` as :meth:`gather`'s."""
    ids_ = _ids(ids)
    frozen: Any = ids_.array.copy()
    if ids_.scalar:
        frozen = ids if not isinstance(ids, np.ndarray) else ids.copy()
    elif ids_.kind == "torch":  # back on the ids' device, so the result lands where gather's would
        frozen = _torch().from_numpy(frozen).to(ids_.device)
    return GatherFuture(_gather_pool().submit(self._gather_for_future, frozen, out, feature, dtype), self._device_type == "cuda")


def _gather_for_future(self, ids: Any, out: Any, feature: Optional[str] = None, dtype: Any = None) -> tuple:
    rows = self.gather(ids, out, feature, dtype=dtype)
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
    check(lib.tfs_gather(h, self._nt_c, None, ids.ctypes.data, n, _native.addr(out), n * self._row_bytes))


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
    status = lib.tfs_gather_device_ids(h, self._nt_c, t.data_ptr(), n, out.data_ptr(), n * self._row_bytes, raw_stream(device.index))
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
        status = lib.tfs_gather_device(h, self._nt_c, ids.ctypes.data, n, out.data_ptr(), n * self._row_bytes, stream)
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
