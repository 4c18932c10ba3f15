"""What benchtrain asks of the host: the feature file through ``np.memmap`` (the memmap
configurations' rows, and the in-memory ones' copy), its page cache evicted, a cgroup v2 memory
limit (memmap-budget), the process's disk reads, nvidia-smi's utilization, and the disk's 4 KiB
random-read IOPS (the disk bound)."""

from __future__ import annotations

import argparse
import ctypes
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np


def _feature_file(dataset: str) -> Tuple[str, int, int, int, int, int]:
    """(path, nodes, row_bytes, rows_per_block, block_size, data_offset) of the first feature file
    (data_offset: where row 0 starts, the header's length in a feature read in place)."""
    with open(os.path.join(dataset, "manifest.json")) as f:
        manifest = json.load(f)
    nt = manifest["node_types"][0]
    feat = nt["features"][0]
    if len(feat["files"]) != 1:
        raise SystemExit("benchtrain: the memmap configurations need a single-file feature (no --device-path striping)")
    path = feat["files"][0]
    path = path if os.path.isabs(path) else os.path.join(dataset, path)
    return path, int(nt["count"]), int(feat["row_bytes"]), int(feat.get("rows_per_block", 0)), int(manifest["block_size"]), int(feat.get("data_offset", 0))


class _Memmap:
    """Rows of the feature file through ``np.memmap`` (the kernel page cache, readahead)."""

    def __init__(self, dataset: str, dtype: np.dtype, dim: int):
        self.path, self.n, self.row, rpb, block, offset = _feature_file(dataset)
        self.mm = np.memmap(self.path, dtype=np.uint8, mode="r")
        self.dtype, self.dim = dtype, dim
        if rpb > 0:
            blocks = self.mm.size // block
            view = np.lib.stride_tricks.as_strided(self.mm, shape=(blocks, rpb, self.row), strides=(block, self.row, 1))
            self._get = lambda ids: view[ids // rpb, ids % rpb]
            self._contig = None
        else:
            view = self.mm[offset : offset + self.n * self.row].reshape(self.n, self.row)
            self._get = lambda ids: view[ids]
            self._contig = view

    def gather(self, ids: np.ndarray) -> np.ndarray:
        raw = np.ascontiguousarray(self._get(ids))
        return raw.view(self.dtype).reshape(len(ids), self.dim)

    def copy_into(self, out: np.ndarray, chunk: int = 1 << 18) -> None:
        """Every row, in order, into out (n, dim)."""
        for lo in range(0, self.n, chunk):
            ids = np.arange(lo, min(self.n, lo + chunk))
            if self._contig is not None:
                out[lo : lo + len(ids)] = self._contig[lo : lo + len(ids)].view(self.dtype).reshape(len(ids), self.dim)
            else:
                out[lo : lo + len(ids)] = self.gather(ids)

    def resident(self) -> Optional[float]:
        """Share of the file's pages in the page cache (mincore), None where it cannot be asked."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            page = os.sysconf("SC_PAGE_SIZE")
            size = self.mm.size
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            if libc.mincore(ctypes.c_void_p(self.mm.ctypes.data), ctypes.c_size_t(size), vec) != 0:
                return None
            return float(np.frombuffer(vec, dtype=np.uint8).__and__(1).mean())
        except Exception:
            return None

    def unmap_pages(self) -> None:
        """Drops this mapping's page-table entries (MADV_DONTNEED), so that evicting the file's
        page cache can take the pages this process touched."""
        import mmap

        mm = getattr(self.mm, "_mmap", None)
        if mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            mm.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        self.unmap_pages()
        mm = getattr(self.mm, "_mmap", None)
        self.mm = None
        self._get = self._contig = None
        if mm is not None:
            try:
                mm.close()
            except Exception:
                pass


def _evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _drop_caches() -> str:
    """'' when /proc/sys/vm/drop_caches took 3, else why not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return ""
    except OSError as e:
        return f"drop_caches: {e.strerror or e}"


def _proc_read_bytes() -> Optional[int]:
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class _MemoryLimit:
    """This process inside a fresh cgroup v2 with memory.max = limit, for a with block; page
    cache faulted in meanwhile is charged there. ``reason`` says why not where it cannot be."""

    def __init__(self, limit: int):
        self.limit = limit
        self.reason = ""
        self.child = self.parent = self.leaf = ""
        self.enabled = False
        root = "/sys/fs/cgroup"
        if not os.path.exists(os.path.join(root, "cgroup.controllers")):
            self.reason = "no cgroup v2 hierarchy at /sys/fs/cgroup (cgroup v1 or none): memory limit not applied"
            return
        try:
            with open("/proc/self/cgroup") as f:
                path = next(line.split("::", 1)[1].strip() for line in f if line.startswith("0::"))
        except (OSError, StopIteration):
            self.reason = "no cgroup v2 entry in /proc/self/cgroup"
            return
        self.parent = os.path.join(root, path.lstrip("/"))
        self.child = os.path.join(self.parent, f"tierfs-benchtrain-{os.getpid()}")

    def __enter__(self) -> "_MemoryLimit":
        if self.reason:
            return self
        try:
            os.mkdir(self.child)
            with open(os.path.join(self.child, "cgroup.controllers")) as f:
                if "memory" not in f.read().split():
                    self._enable_memory()
            with open(os.path.join(self.child, "memory.max"), "w") as f:
                f.write(str(self.limit))
            with open(os.path.join(self.child, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError as e:
            self.reason = f"cgroup v2 memory limit in {self.parent}: {e.strerror or e} (memory limit not applied)"
            self._cleanup()
        return self

    def _enable_memory(self) -> None:
        """Enables the memory controller for the parent's children. cgroup v2 refuses that (EBUSY)
        while the parent itself holds processes, as a container's own cgroup does: then every
        process of the parent moves into a leaf sibling first, as systemd does, and back at exit."""
        ctl = os.path.join(self.parent, "cgroup.subtree_control")
        try:
            with open(ctl, "w") as g:
                g.write("+memory")
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
        self.leaf = os.path.join(self.parent, f"tierfs-benchtrain-leaf-{os.getpid()}")
        os.mkdir(self.leaf)
        _move_all(self.parent, self.leaf)
        with open(ctl, "w") as g:
            g.write("+memory")
        self.enabled = True

    def _cleanup(self) -> None:
        for d in (self.child,):
            try:
                os.rmdir(d)
            except OSError:
                pass
        if self.leaf:  # undo _enable_memory: controller off, processes home, leaf gone
            try:
                if self.enabled:
                    with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as g:
                        g.write("-memory")
                _move_all(self.leaf, self.parent)
                os.rmdir(self.leaf)
            except OSError as e:
                print(f"benchtrain: could not undo the leaf cgroup {self.leaf}: {e.strerror or e}", file=sys.stderr)
            self.leaf, self.enabled = "", False

    def __exit__(self, *exc) -> None:
        if self.reason:
            return
        home = self.leaf or self.parent
        try:
            with open(os.path.join(home, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError as e:  # e.g. a parent with controllers enabled may hold no processes
            try:  # stay, without the limit
                with open(os.path.join(self.child, "memory.max"), "w") as f:
                    f.write("max")
                print(f"benchtrain: could not leave {self.child} ({e.strerror or e}); its limit is lifted", file=sys.stderr)
            except OSError as e2:
                print(f"benchtrain: could not leave {self.child} ({e}) nor lift its limit ({e2})", file=sys.stderr)
            return
        self._cleanup()


def _move_all(src: str, dst: str) -> None:
    """Moves every process of cgroup src into cgroup dst (kernel threads and processes that exit
    meanwhile are skipped); repeats while src still lists some (forks during the move)."""
    for _ in range(5):
        with open(os.path.join(src, "cgroup.procs")) as f:
            pids = [p for p in f.read().split() if p]
        if not pids:
            return
        for pid in pids:
            try:
                with open(os.path.join(dst, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError as e:
                if e.errno not in (errno.ESRCH, errno.EINVAL):
                    raise


class _SmiSampler:
    """``nvidia-smi --query-gpu=utilization.gpu -lms 100`` in the background; mean() of what it
    printed while running. Inert where nvidia-smi is missing."""

    def __init__(self, device_index: int, uuid: str = ""):
        self.values: List[float] = []
        self.proc = None
        self.note = ""
        exe = shutil.which("nvidia-smi")
        if not exe:
            self.note = "no nvidia-smi"
            return
        target = f"GPU-{uuid}" if uuid and not uuid.startswith("GPU-") else (uuid or str(device_index))
        cmd = [exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", target, "-lms", "100"]
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            self.note = f"nvidia-smi: {e}"
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.values.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self) -> Optional[float]:
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.thread.join(timeout=5)
        return float(np.mean(self.values)) / 100 if self.values else None


# the disk ----------------------------------------------------------------------------------------


def _find_cli(given: str) -> Optional[str]:
    for c in (given, os.environ.get("TIERFS_BIN", ""), os.path.join("build", "tierfs")):
        if c and os.access(c, os.X_OK):
            return c
    return shutil.which("tierfs")


def _disk_from_probe(path: str, source: str) -> Optional[Dict[str, Any]]:
    with open(path) as f:
        probe = json.load(f)["probe"]
    pts = probe.get("points", [])
    if not pts:
        return None
    best = min(pts, key=lambda p: abs(p["size"] - 4096))
    return dict(source=source, iops_4k=best["iops"], read_size=best["size"], queue_depth=probe.get("queue_depth"),
                file=probe.get("file"), points=[dict(size=p["size"], iops=p["iops"]) for p in pts])


def measure_disk(dataset: str, a: argparse.Namespace) -> Dict[str, Any]:
    """4 KiB random-read IOPS of the disk under the dataset: `tierfs bench disk --json`, else a
    short O_DIRECT pread probe from threads."""
    if a.disk_iops > 0:
        return dict(source="--disk-iops", iops_4k=a.disk_iops)
    if a.disk_json:
        got = _disk_from_probe(a.disk_json, f"{a.disk_json} (tierfs bench disk)")
        if got:
            return got
    cli = _find_cli(a.tierfs_bin)
    if cli:
        with tempfile.TemporaryDirectory(prefix="tierfs-benchtrain-") as d:
            out = os.path.join(d, "disk.json")
            t = time.perf_counter()
            r = subprocess.run([cli, "bench", "disk", dataset, "--json", out], capture_output=True, text=True)
            got = _disk_from_probe(out, f"{cli} bench disk") if r.returncode == 0 and os.path.exists(out) else None
            if got:
                got["seconds"] = time.perf_counter() - t
                return got
            print(f"benchtrain: `{cli} bench disk` failed ({r.stderr.strip()[-300:]}); probing from Python", file=sys.stderr)
    return _python_probe(dataset)


def _python_probe(dataset: str, seconds: float = 1.0, threads: int = 16) -> Dict[str, Any]:
    import mmap

    path = _feature_file(dataset)[0]
    size = os.path.getsize(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        how = "O_DIRECT"
    except OSError:
        fd = os.open(path, os.O_RDONLY)
        how = "page cache"
    blocks = max(1, size // 4096)
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        buf = mmap.mmap(-1, 4096)
        rng = np.random.default_rng([1, i])
        offs = rng.integers(0, blocks, 1 << 16) * 4096
        k = 0
        while time.perf_counter() < stop:
            os.preadv(fd, [buf], int(offs[k % len(offs)]))
            k += 1
        counts[i] = k

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    os.close(fd)
    return dict(source=f"python pread probe ({threads} threads, {how})", iops_4k=sum(counts) / dt, read_size=4096)
