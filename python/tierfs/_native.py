"""Loading of libtierfs.so and its ctypes declarations (capi/tierfs.h).

The library is loaded once per process, at ``import tierfs``. It runs a Go runtime, so:

* it is never loaded twice (a second copy of this module, e.g. the source tree and an installed
  package both imported, reuses the first copy's handle, kept on the ``sys`` module);
* a process must not fork after loading it: a ``fork()`` copies only the calling thread, and the
  Go runtime's other threads (scheduler, garbage collector, IO) do not exist in the child. Every
  call checks for that and raises :class:`tierfs.ForkedProcessError` in a forked child instead of
  hanging. Worker processes must use the ``spawn`` start method.

ctypes releases the GIL for the duration of every call into the library, so gathers and
samples in one thread run while other Python threads (training) go on.

Where the library is looked for, in order:

1. ``$TIERFS_LIB`` (a path to a prebuilt ``libtierfs.so``; the GPU machines, which have no Go,
   use this);
2. ``tierfs/_lib/libtierfs.so`` inside the installed package (``pip install ./python`` builds it);
3. ``build/libtierfs.so`` of the source checkout (``make lib``), when running from the tree.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any

import numpy as np

from . import errors as _errors

ABI_VERSION = 2
LIB_NAME = "libtierfs.so"

# Range of each C integer type that crosses the ABI: ctypes would wrap a value outside it
# silently (2**32 + 4 as an int32 is 4), so every value is checked first.
_INT_RANGES = {
    c_int32: (-(1 << 31), (1 << 31) - 1, "a 32-bit signed integer"),
    c_int: (-(1 << 31), (1 << 31) - 1, "a 32-bit signed integer"),
    c_int64: (-(1 << 63), (1 << 63) - 1, "a 64-bit signed integer"),
    c_uint64: (0, (1 << 64) - 1, "a 64-bit unsigned integer"),
    c_size_t: (0, (1 << 64) - 1, "a 64-bit unsigned integer"),
}


def check_value(ctype: Any, value: Any, what: str) -> None:
    """Raises InvalidArgumentError when value would not cross the C ABI as ctype unchanged: an
    integer outside the type's range, or a string with a NUL character (C would cut it there)."""
    if ctype is c_char_p:
        if isinstance(value, (bytes, bytearray)) and b"\0" in value:
            raise _errors.InvalidArgumentError(f"tierfs: {what} contains a NUL character: {bytes(value)!r}")
        return
    rng = _INT_RANGES.get(ctype)
    if rng is not None and isinstance(value, int) and not rng[0] <= value <= rng[1]:
        raise _errors.InvalidArgumentError(f"tierfs: {what} = {value} does not fit {rng[2]}")


class _Checked(Structure):
    """A C struct whose fields check what is assigned (check_value), naming the field."""

    def __setattr__(self, name: str, value: Any) -> None:
        for field, ctype in type(self)._fields_:
            if field == name:
                check_value(ctype, value, name)
                break
        super().__setattr__(name, value)


class OpenOptions(_Checked):
    """tfs_open_options."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("feature", c_char_p),
        ("host_cache_bytes", c_int64),
        ("topology_memory_bytes", c_int64),
        ("io_backend", c_char_p),
        ("queue_depth", c_int32),
        ("max_concurrent_io", c_int32),
        ("unverified_reads", c_int32),
        ("device", c_int32),
        ("gpu_cache_bytes", c_int64),
        ("gpu_topology", c_char_p),
        ("host_policy", c_char_p),
        ("coalesce_gap", c_int32),
        ("read_align", c_int32),
    ]


class StoreInfo(Structure):
    """tfs_store_info."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("num_nodes", c_int64),
        ("num_edges", c_int64),
        ("dim", c_int64),
        ("row_bytes", c_int64),
        ("num_classes", c_int64),
        ("dtype", c_char * 16),
        ("io_backend", c_char * 16),
    ]


class SamplerOptions(_Checked):
    """tfs_sampler_options."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("fanouts", POINTER(c_int32)),
        ("num_hops", c_int32),
        ("replace", c_int32),
        ("seed", c_uint64),
        ("workers", c_int32),
    ]


class IoOptions(_Checked):
    """tfs_io_options."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("backend", c_char_p),
        ("block_size", c_int32),
        ("queue_depth", c_int32),
        ("max_io_bytes", c_int32),
        ("staging_bytes", c_int64),
        ("no_coalesce", c_int32),
        ("device", c_int32),
        ("coalesce_gap", c_int32),
    ]


class IoRequest(_Checked):
    """tfs_io_request."""

    _fields_ = [
        ("file", c_int32),
        ("offset", c_int64),
        ("length", c_int64),
        ("dst", c_void_p),
        ("dst_is_device", c_int32),
    ]


# C struct name (capi/tierfs.h) -> its ctypes class. pybind/check_abi.py (python/tests/
# test_abi_layout.py) checks every struct of the header against this: field names, order, types,
# and offsets and sizes as the C compiler lays them out.
STRUCTS: dict[str, type[Structure]] = {
    "tfs_open_options": OpenOptions,
    "tfs_store_info": StoreInfo,
    "tfs_sampler_options": SamplerOptions,
    "tfs_io_options": IoOptions,
    "tfs_io_request": IoRequest,
}


#: tfs_progress_fn: (ctx, stage, done, total).
PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, c_int64, c_int64)

# (name, argtypes). Every function returns tfs_status (int) unless listed in _RESTYPES. Typed
# arrays are passed as c_void_p (an address: addr() of a numpy array or torch tensor).
_SIGNATURES: list[tuple[str, list]] = [
    ("tfs_abi_version", []),
    ("tfs_last_error", []),
    ("tfs_open", [c_char_p, POINTER(OpenOptions), POINTER(c_void_p)]),
    ("tfs_open_json", [c_char_p, c_char_p, POINTER(c_void_p)]),
    ("tfs_store_options_json", [c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_close", [c_void_p]),
    ("tfs_store_info_get", [c_void_p, POINTER(StoreInfo)]),
    ("tfs_gather", [c_void_p, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_features_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_gather_feature", [c_void_p, c_char_p, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_gather_device", [c_void_p, c_void_p, c_int64, c_void_p, c_int64, c_void_p]),
    ("tfs_gather_device_ids", [c_void_p, c_void_p, c_int64, c_void_p, c_int64, c_void_p]),
    ("tfs_labels", [c_void_p, c_void_p, c_int64, c_void_p]),
    ("tfs_split", [c_void_p, c_char_p, c_void_p, c_int64, POINTER(c_int64)]),
    ("tfs_place", [c_void_p, c_void_p, c_int64]),
    ("tfs_hottest", [c_void_p, c_void_p, c_int64, c_int64, c_void_p, POINTER(c_int64)]),
    ("tfs_place_ids", [c_void_p, c_void_p, c_int64]),
    ("tfs_profile_reads", [c_void_p, c_void_p, c_int64, c_char_p, c_void_p, c_int64]),
    ("tfs_profile_reads_hetero", [c_void_p, c_void_p, c_int64, c_char_p, c_void_p, c_void_p, c_int64]),
    ("tfs_stats_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_advise_json", [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_place_json", [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_place_json_progress", [c_void_p, c_char_p, PROGRESS_FN, c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_sampler_create", [c_void_p, POINTER(SamplerOptions), POINTER(c_void_p)]),
    ("tfs_sampler_free", [c_void_p]),
    ("tfs_sample", [c_void_p, c_void_p, c_int64, POINTER(c_void_p)]),
    ("tfs_sample_sizes", [c_void_p, POINTER(c_int64), POINTER(c_int64), POINTER(c_int32)]),
    ("tfs_sample_copy", [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    ("tfs_sample_edge_ids", [c_void_p, c_void_p]),
    ("tfs_sample_free", [c_void_p]),
    ("tfs_sample_edges", [c_void_p, c_void_p, c_void_p, c_void_p, c_int64, c_char_p, POINTER(c_void_p)]),
    ("tfs_sample_link_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_sample_link_copy", [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    ("tfs_epochs_open", [c_void_p, c_char_p, c_void_p, c_int64, POINTER(c_void_p)]),
    ("tfs_epochs_open_elsewhere", [c_void_p, c_char_p, c_void_p, c_int64, c_void_p, c_int64, POINTER(c_void_p)]),
    ("tfs_epochs_close", [c_void_p]),
    ("tfs_epochs_cancel", [c_char_p, POINTER(c_int)]),
    ("tfs_epochs_info_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_epochs_sample", [c_void_p, c_int64, c_int64, POINTER(c_void_p)]),
    ("tfs_epochs_gather", [c_void_p, c_int64, c_int64, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_epochs_seeds", [c_void_p, c_int64, c_int64, c_void_p, c_int64, POINTER(c_int64)]),
    ("tfs_synth", [c_char_p]),
    ("tfs_ingest", [c_char_p]),
    ("tfs_synth_progress", [c_char_p, PROGRESS_FN, c_void_p]),
    ("tfs_ingest_progress", [c_char_p, PROGRESS_FN, c_void_p]),
    ("tfs_verify_json", [c_char_p, c_char_p, PROGRESS_FN, c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_upgrade", [c_char_p, PROGRESS_FN, c_void_p, POINTER(c_int32)]),
    ("tfs_mount", [c_void_p, c_char_p]),
    ("tfs_unmount", [c_void_p]),
    ("tfs_io_open", [POINTER(c_char_p), c_int32, POINTER(IoOptions), POINTER(c_void_p)]),
    ("tfs_io_submit", [c_void_p, c_void_p, c_int64]),
    ("tfs_io_complete", [c_void_p, c_void_p]),
    ("tfs_io_stats_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_io_close", [c_void_p]),
    ("tfs_types_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_gather_typed", [c_void_p, c_char_p, c_char_p, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_gather_typed_device_ids", [c_void_p, c_char_p, c_void_p, c_int64, c_void_p, c_int64, c_void_p]),
    ("tfs_gather_edge_feature", [c_void_p, c_char_p, c_char_p, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_labels_typed", [c_void_p, c_char_p, c_void_p, c_int64, c_void_p]),
    ("tfs_split_typed", [c_void_p, c_char_p, c_char_p, c_void_p, c_int64, POINTER(c_int64)]),
    ("tfs_hottest_typed", [c_void_p, c_char_p, c_void_p, c_int64, c_int64, c_void_p, POINTER(c_int64)]),
    ("tfs_place_ids_typed", [c_void_p, c_char_p, c_void_p, c_int64]),
    ("tfs_edge_splits_json", [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_edge_split_copy", [c_void_p, c_char_p, c_char_p, c_int64, c_void_p, c_void_p, c_void_p]),
    ("tfs_share_host_tier", [c_void_p, c_char_p, c_char_p, c_void_p, c_int64]),
    ("tfs_map_host_tier", [c_void_p, c_char_p, c_char_p]),
    ("tfs_hetero_sampler_create", [c_void_p, c_char_p, POINTER(c_void_p)]),
    ("tfs_hetero_sampler_free", [c_void_p]),
    ("tfs_hetero_sample", [c_void_p, c_char_p, c_void_p, c_int64, POINTER(c_void_p)]),
    ("tfs_hetero_sample_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_hetero_sample_nodes", [c_void_p, c_char_p, c_void_p]),
    ("tfs_hetero_sample_edges", [c_void_p, c_char_p, c_void_p, c_void_p, c_void_p]),
    ("tfs_hetero_sample_free", [c_void_p]),
    ("tfs_epochs_sample_hetero", [c_void_p, c_int64, c_int64, POINTER(c_void_p)]),
    ("tfs_epochs_gather_typed", [c_void_p, c_int64, c_int64, c_char_p, c_void_p, c_int64, c_void_p, c_int64]),
    ("tfs_epochs_gather_device", [c_void_p, c_int64, c_int64, c_char_p, c_void_p, c_int64, c_void_p, c_int64, c_void_p]),
    ("tfs_hetero_sample_from_edges", [c_void_p, c_char_p, c_void_p, c_void_p, c_void_p, c_int64, c_char_p, POINTER(c_void_p)]),
    ("tfs_hetero_sample_link_json", [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("tfs_hetero_sample_link_copy", [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    ("tfs_place_hetero_json", [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(c_size_t)]),
]
_RESTYPES = {"tfs_abi_version": c_int, "tfs_last_error": c_char_p}


def candidate_paths() -> list[tuple[str, Path]]:
    """Where the library is looked for, in order, as (origin, path)."""
    out: list[tuple[str, Path]] = []
    env = os.environ.get("TIERFS_LIB")
    if env:
        out.append(("$TIERFS_LIB", Path(env).expanduser()))
    pkg = Path(__file__).resolve().parent
    out.append(("installed package", pkg / "_lib" / LIB_NAME))
    # Source checkout: <repo>/python/tierfs/_native.py -> <repo>/build/libtierfs.so
    out.append(("source tree (make lib)", pkg.parent.parent / "build" / LIB_NAME))
    return out


def _find_library() -> Path:
    tried = []
    cands = candidate_paths()
    for origin, path in cands:
        if path.is_file():
            return path
        tried.append(f"  {origin}: {path}")
        if origin == "$TIERFS_LIB":
            # An explicit path that is wrong is an error, not a cue to look elsewhere.
            break
    raise ImportError(
        "tierfs: cannot find the native library libtierfs.so. Looked in:\n"
        + "\n".join(tried)
        + "\nBuild it with `make lib` in the repository (needs Go), install the package with "
        "`pip install ./python` (builds it), or set TIERFS_LIB to a prebuilt libtierfs.so."
    )


class _Lib:
    """The library's functions, each checking its integer and string arguments (check_value)
    before ctypes converts them."""

    def __init__(self, cdll: ctypes.CDLL) -> None:
        self._name = cdll._name
        self._cdll = cdll


def _guard(name: str, fn: Any, argtypes: list) -> Any:
    checked = [(i, t) for i, t in enumerate(argtypes) if t is c_char_p or t in _INT_RANGES]
    if not checked:
        return fn

    def call(*args: Any) -> Any:
        for i, t in checked:
            if i < len(args):
                check_value(t, args[i], f"{name} argument {i + 1}")
        return fn(*args)

    call.__name__ = name
    call.argtypes, call.restype = fn.argtypes, fn.restype  # what the ABI check reads
    return call


def _declare(cdll: ctypes.CDLL) -> _Lib:
    lib = _Lib(cdll)
    for name, argtypes in _SIGNATURES:
        try:
            fn = getattr(cdll, name)
        except AttributeError as e:
            raise ImportError(f"tierfs: {cdll._name} does not export {name}: {e}") from None
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, c_int)
        setattr(lib, name, _guard(name, fn, argtypes))
    return lib


def _load() -> tuple[_Lib, Path]:
    prior = getattr(sys, "_tierfs_native", None)
    if prior is not None:  # loaded by another copy of this package in this process
        return prior
    path = _find_library()
    try:
        cdll = ctypes.CDLL(str(path))
    except OSError as e:
        raise ImportError(f"tierfs: cannot load {path}: {e}") from None
    lib = _declare(cdll)
    version = lib.tfs_abi_version()
    if version != ABI_VERSION:
        raise ImportError(
            f"tierfs: {path} has C ABI version {version}; this Python package needs {ABI_VERSION}. "
            "Rebuild the library and the package from the same checkout."
        )
    sys._tierfs_native = (lib, path)  # type: ignore[attr-defined]
    return lib, path


lib, lib_path = _load()

# Fork guard -------------------------------------------------------------------------------
_loaded_pid = os.getpid()
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_process() -> None:
    """Raises ForkedProcessError in a process forked after the library was loaded."""
    if _forked:
        raise _errors.ForkedProcessError(
            f"tierfs: this process (pid {os.getpid()}) was forked from pid {_loaded_pid} after "
            "libtierfs (a Go runtime) was loaded; the runtime does not survive fork(). Start "
            "worker processes with the 'spawn' method: torch DataLoader(..., "
            "multiprocessing_context='spawn') or multiprocessing.get_context('spawn'); with "
            "PyG loaders keep num_workers=0 (tierfs samples and gathers on its own threads)."
        )


def last_error() -> str:
    msg = lib.tfs_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status: int) -> None:
    """Raises the exception for a non-zero status, with the calling thread's last error."""
    if status != 0:
        raise _errors.from_status(status, last_error())


def read_json(fill: Any, cap: int = 1 << 14) -> Any:
    """The JSON answer of a tfs_*_json call: fill(buf, cap, byref(needed)) returns a status and
    says in needed how many bytes the answer takes; a buffer too small is grown and the call made
    again (the library keeps the answer, so the retry redoes no work)."""
    while True:
        buf = ctypes.create_string_buffer(cap)
        needed = c_size_t(0)
        check(fill(buf, cap, ctypes.byref(needed)))
        if needed.value <= cap:
            return json.loads(buf.value.decode())
        cap = needed.value


def addr(obj) -> int:
    """Address of a numpy array's or torch tensor's first element (0 for an empty one)."""
    if isinstance(obj, np.ndarray):
        return obj.ctypes.data
    return obj.data_ptr()
