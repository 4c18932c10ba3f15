"""What the C ABI takes from Python: node ids as contiguous int64 arrays, strings as bytes.

Shared by the modules that call the library (store, epochs, build, distributed, loader); it
imports none of them.
"""

from __future__ import annotations

from ctypes import c_char_p
import operator
from typing import Any, List

import numpy as np

from . import _native, _util, errors

#: What gather, labels and sample accept as node ids: a 1-D integer numpy array, a torch tensor
#: (CPU or CUDA), a list/tuple/range of ints, or one int.
IdsLike = Any


def _torch():
    import torch

    return torch


class _Ids:
    """Node ids as a contiguous int64 numpy array, plus what kind of object they came as."""

    __slots__ = ("array", "kind", "device", "scalar")

    def __init__(self, array: np.ndarray, kind: str, device: Any = None, scalar: bool = False):
        self.array = array  # 1-D, int64, C-contiguous, on the host
        self.kind = kind  # "numpy", "torch" or "list"
        self.device = device  # torch device of torch ids
        self.scalar = scalar


def _ids(ids: IdsLike, what: str = "ids") -> _Ids:
    if isinstance(ids, np.ndarray):
        return _Ids(_np_ids(ids, what), "numpy", scalar=ids.ndim == 0)
    if _util.is_tensor(ids):
        torch = _torch()
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise errors.DTypeError(f"{what} must be integers, got a tensor of {ids.dtype}")
        if ids.dim() > 1:
            raise errors.InvalidArgumentError(f"{what} must be 1-D, got a tensor of shape {tuple(ids.shape)}")
        scalar = ids.dim() == 0
        t = ids.detach().reshape(-1)
        if t.device.type != "cpu":
            t = t.cpu()
        arr = t.to(torch.int64).contiguous().numpy()
        return _Ids(arr, "torch", ids.device, scalar)
    if isinstance(ids, (bool, np.bool_)):
        raise errors.DTypeError(f"{what} must be integers, got {ids!r}")
    if isinstance(ids, (int, np.integer)):
        return _Ids(np.array([int(ids)], dtype=np.int64), "numpy", scalar=True)
    if isinstance(ids, (list, tuple, range)):
        if len(ids) == 0:
            return _Ids(np.empty(0, dtype=np.int64), "list")
        arr = np.asarray(ids)
        if arr.dtype == object:  # ints beyond 64 bits (numpy keeps them as objects), or not ints
            for i, v in enumerate(ids):
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and not -(1 << 63) <= int(v) < (1 << 63):
                    raise errors.OutOfRangeError(f"{what}[{i}] = {v} is out of range")
        return _Ids(_np_ids(arr, what), "list")
    raise errors.DTypeError(
        f"{what}: want a numpy array, a torch tensor, a list of ints or an int; got {type(ids).__name__}"
    )


def _np_ids(arr: np.ndarray, what: str) -> np.ndarray:
    if arr.dtype.kind not in "iu":
        raise errors.DTypeError(f"{what} must be integers, got an array of {arr.dtype}")
    if arr.ndim != 1:
        if arr.ndim == 0:
            arr = arr.reshape(1)
        else:
            raise errors.InvalidArgumentError(f"{what} must be 1-D, got an array of shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise errors.OutOfRangeError(f"{what}: id {int(arr.max())} is out of range")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _c_str(value: str, what: str) -> bytes:
    """value encoded for the C ABI; a NUL character (where C would cut the string) is refused."""
    b = value.encode()
    _native.check_value(c_char_p, b, what)
    return b


def _is_int(v: Any) -> bool:
    """Whether v is an int (Python's or numpy's), not a bool."""
    return not isinstance(v, bool) and isinstance(v, (int, np.integer))


def _check_batching(who: str, batch_size: Any, batches: Any, of: str) -> None:
    """Refuses a batch_size that is not a positive int, or batches neither None nor one, naming
    the call (who) and what None means: one epoch of ``of``."""
    if not _is_int(batch_size) or batch_size < 1:
        raise errors.InvalidArgumentError(f"{who}: batch_size = {batch_size!r}; want a positive int")
    if batches is not None and (not _is_int(batches) or batches < 1):
        raise errors.InvalidArgumentError(f"{who}: batches = {batches!r}; want a positive int (None: one epoch of {of})")


def _fanouts(fanouts: Any, what: str = "fanouts") -> List[int]:
    """Fanouts (one per hop) as a list of ints, from one int or a sequence of ints (numpy or
    0-d torch integers too). A value that is not a whole number is refused, naming it, instead of
    being truncated: 1.5 is an InvalidArgumentError (2.0 is taken as 2), a string or bool a
    DTypeError."""
    if isinstance(fanouts, (int, np.integer)) and not isinstance(fanouts, (bool, np.bool_)):
        fanouts = [fanouts]
    if isinstance(fanouts, (str, bytes)) or not hasattr(fanouts, "__iter__"):
        raise errors.DTypeError(f"{what} must be a sequence of ints, one per hop; got {fanouts!r}")
    out: List[int] = []
    for i, f in enumerate(fanouts):
        if isinstance(f, (bool, np.bool_)):
            raise errors.DTypeError(f"{what}[{i}] must be an int, got {f!r}")
        try:
            out.append(operator.index(f))
            continue
        except TypeError:
            pass
        if isinstance(f, (float, np.floating)) or (_util.is_tensor(f) and f.is_floating_point()):
            v = float(f)
            if v.is_integer():
                out.append(int(v))
                continue
            raise errors.InvalidArgumentError(f"{what}[{i}] = {v!r} is not a whole number of neighbors")
        raise errors.DTypeError(f"{what}[{i}] must be an int, got {type(f).__name__} {f!r}")
    return out
