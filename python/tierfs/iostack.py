"""tierfs's asynchronous IO stack from Python (``tfs_io_*``): reads of arbitrary byte ranges of a
fixed set of files, through io_uring with O_DIRECT (pread where io_uring is unavailable), into
numpy arrays, torch tensors (CPU or, on a stack opened with ``device``, CUDA) or bytearrays.

    with tierfs.IOStack(["/data/a.bin", "/data/b.bin"]) as io:
        rows = np.empty((3, 128), np.float32)
        io.submit([(0, 4096, rows[0]), (1, 0, rows[1]), (0, 1 << 20, rows[2])])
        io.complete()                       # every destination holds its bytes now

Submit queues reads and never waits; complete waits for every read submitted since the last
complete. Destinations are used in place: keep them alive and untouched until ``complete``
returns (the stack holds a reference to each until then). Offsets and lengths need no
alignment. One IOStack serves one caller at a time; open one per thread for parallel IO.
"""

from __future__ import annotations

import os
from ctypes import byref, c_char_p, c_void_p
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import _native, _util, errors
from ._native import check, lib

__all__ = ["IOStack"]


def _dst_of(dst: Any, what: str) -> Tuple[int, int, bool]:
    """(address, bytes, on a device) of a writable, contiguous destination."""
    if isinstance(dst, np.ndarray):
        if not dst.flags.c_contiguous or not dst.flags.writeable:
            raise errors.InvalidArgumentError(f"{what}: a numpy destination must be C-contiguous and writeable")
        return dst.ctypes.data, dst.nbytes, False
    if _util.is_tensor(dst):
        if not dst.is_contiguous():
            raise errors.InvalidArgumentError(f"{what}: a tensor destination must be contiguous")
        return dst.data_ptr(), dst.numel() * dst.element_size(), dst.device.type == "cuda"
    if isinstance(dst, bytearray):
        arr = np.frombuffer(dst, dtype=np.uint8)
        return arr.ctypes.data, len(dst), False
    raise errors.DTypeError(f"{what}: want a numpy array, a torch tensor or a bytearray, got {type(dst).__name__}")


class IOStack(_native.Closeable):
    """An open set of files and the IO stack that reads them (see the module doc).

    Args:
        paths: the files, indexed 0..n-1 in requests.
        backend: "io_uring" or "pread" to force one (default: io_uring where it works).
        block_size, queue_depth, max_io_bytes, staging_bytes: as ``tfs_io_options`` (0: defaults:
            4096, 128, 128 KiB, queue_depth x max_io_bytes).
        coalesce: merge requests that share or touch blocks into one read (default True);
            ``coalesce_gap`` also merges ranges at most this many bytes apart.
        device: a CUDA ordinal whose memory destinations may be in (default: host only).
    """

    def __init__(
        self,
        paths: Sequence[Any],
        backend: Optional[str] = None,
        block_size: int = 0,
        queue_depth: int = 0,
        max_io_bytes: int = 0,
        staging_bytes: int = 0,
        coalesce: bool = True,
        coalesce_gap: int = 0,
        device: Optional[int] = None,
    ) -> None:
        _native.check_process()
        self._handle: Optional[int] = None
        names = [os.fspath(p) for p in paths]
        if not names:
            raise errors.InvalidArgumentError("IOStack: no files")
        encoded = []
        for i, p in enumerate(names):
            b = p.encode()
            _native.check_value(c_char_p, b, f"paths[{i}]")
            encoded.append(b)
        arr = (c_char_p * len(encoded))(*encoded)
        opts = _native.IoOptions()
        opts.struct_size = _native.ctypes.sizeof(_native.IoOptions)
        opts.backend = backend.encode() if backend else None
        opts.block_size = int(block_size)
        opts.queue_depth = int(queue_depth)
        opts.max_io_bytes = int(max_io_bytes)
        opts.staging_bytes = int(staging_bytes)
        opts.no_coalesce = 0 if coalesce else 1
        opts.device = -1 if device is None else int(device)
        opts.coalesce_gap = int(coalesce_gap)
        handle = c_void_p()
        check(lib.tfs_io_open(arr, len(encoded), byref(opts), byref(handle)))
        self._handle = handle.value
        self.paths: List[str] = names
        self._pending: List[Any] = []  # destinations in use until complete()

    def _h(self) -> int:
        if self._handle is None:
            raise errors.ClosedError("tierfs: the IOStack is closed")
        return self._handle

    def submit(self, requests: Iterable[Tuple[int, int, Any]]) -> None:
        """Queues reads: each request is ``(file, offset, dst)``, reading ``len(dst)`` bytes (its
        byte size) at ``offset`` of ``paths[file]`` into ``dst``. Checks every request first;
        on a bad one (raised, naming it) nothing is queued. Never waits for IO."""
        reqs = list(requests)
        arr = (_native.IoRequest * max(1, len(reqs)))()
        for i, r in enumerate(reqs):
            try:
                file, offset, dst = r
            except (TypeError, ValueError):
                raise errors.InvalidArgumentError(f"IOStack.submit: requests[{i}] must be (file, offset, dst), got {r!r}") from None
            addr, nbytes, on_device = _dst_of(dst, f"IOStack.submit: requests[{i}]")
            arr[i].file, arr[i].offset, arr[i].length = int(file), int(offset), nbytes
            arr[i].dst, arr[i].dst_is_device = addr, 1 if on_device else 0
        check(lib.tfs_io_submit(self._h(), arr if reqs else None, len(reqs)))
        self._pending.extend(r[2] for r in reqs)

    def complete(self, cuda_stream: Any = None) -> None:
        """Waits for every read submitted since the last complete; host destinations hold their
        bytes when it returns, device copies are ordered on ``cuda_stream`` (a
        ``torch.cuda.Stream`` or its handle; default: the legacy default stream)."""
        stream = getattr(cuda_stream, "cuda_stream", cuda_stream) or None
        try:
            check(lib.tfs_io_complete(self._h(), stream))
        finally:
            self._pending.clear()

    def read(self, file: int, offset: int, length: int) -> np.ndarray:
        """``length`` bytes at ``offset`` of ``paths[file]`` as a uint8 array (submit + complete)."""
        out = np.empty(int(length), dtype=np.uint8)
        self.submit([(file, offset, out)])
        self.complete()
        return out

    def stats(self) -> Dict[str, Any]:
        """The stack's counters (``tfs_io_stats_json``): requests, reads, bytes requested and
        read, the latency histogram, pending requests."""
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_io_stats_json(h, buf, cap, needed), 1 << 12)

    def close(self) -> None:
        """Drops requests not yet completed (waiting for reads in flight), frees the staging and
        closes the files. Closing twice is fine."""
        h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            lib.tfs_io_close(h)
        self._pending.clear()

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{len(self.paths)} file(s)"
        return f"<tierfs.IOStack {state}>"
