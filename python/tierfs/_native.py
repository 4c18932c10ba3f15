"""Loading of libtierfs.so, declared by the generated _abi.py (from capi/tierfs.h).

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
from ctypes import c_char_p, c_size_t
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from . import _abi
from . import errors as _errors
from ._abi import STRUCTS, IoOptions, IoRequest, OpenOptions, ProgressFn, StoreInfo  # noqa: F401
from ._cabi import INT_RANGES, check_value  # noqa: F401

# The declarations (argtypes, restype, structs, constants) are generated from capi/tierfs.h into
# _abi.py by pybind/gen_binding.py (`make binding`); nothing here repeats them.
ABI_VERSION = _abi.TFS_ABI_VERSION
LIB_NAME = "libtierfs.so"


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
    checked = [(i, t) for i, t in enumerate(argtypes) if t is c_char_p or t in INT_RANGES]
    if not checked:
        return fn

    def call(*args: Any) -> Any:
        for i, t in checked:
            if i < len(args):
                check_value(t, args[i], f"{name} argument {i + 1}")
        return fn(*args)

    call.__name__ = name
    call.argtypes, call.restype = fn.argtypes, fn.restype
    return call


def _declare(cdll: ctypes.CDLL) -> _Lib:
    lib = _Lib(cdll)
    for name, (restype, argtypes) in _abi.FUNCTIONS.items():
        try:
            fn = getattr(cdll, name)
        except AttributeError as e:
            raise ImportError(f"tierfs: {cdll._name} does not export {name}: {e}") from None
        fn.argtypes = argtypes
        fn.restype = restype
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
            "multiprocessing_context='spawn') or multiprocessing.get_context('spawn'). "
            "tierfs.pyg's loaders take num_workers=N as N threads of their own pipeline and "
            "start no process."
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


class Finalized:
    """A native object that closes when collected: ``__del__`` calls its ``close()`` (which
    frees the handle; closing again does nothing), errors ignored."""

    def close(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


_C = TypeVar("_C", bound="Closeable")


class Closeable(Finalized):
    """A :class:`Finalized` native object that is also a context manager: ``with`` closes it."""

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
