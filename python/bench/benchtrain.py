"""``tierfs bench train``: end-to-end GNN training throughput of every feature path in one run.

One model step per batch (PyG GraphSAGE or GCN, hidden 256, Adam, cross-entropy on the seeds'
labels), the same batches (train seeds in one seeded order, the tierfs sampler with one seed,
sample call i drawing batch i) and the same model init for every configuration:

  memory-gpu        features in a CUDA tensor; a thread samples the next --depth batches, copies
                    them to the GPU and gathers their rows (``index_select``) on a side stream
                    while the model trains: the best in-memory loop a user would write, the
                    limit; cpu: a host tensor
  memory-gpu-serial the same, sampling and gathering each batch inline (no overlap)
  memory-pinned     features in a pinned host tensor, ``index_select`` on the host into a pinned
                    buffer, then ``.to(device, non_blocking=True)``
  tierfs-cached     a tierfs store whose GPU tier holds every row (cpu: the host tier), in
                    memory-gpu's loop: only the gather differs (the store's, of device ids)
  tierfs-serial     GPU tier 10% + host tier 20% of the feature bytes (``--cache-fractions``),
                    placed with ``store.place``; sample and gather inline in the training loop
  tierfs-pipelined  the same store through ``tierfs.Loader(..., prefetch=--depth)``
  tierfs-planned    the same store, planned epochs (docs/planned.md): each batch's disk rows
                    packed and read in a few large reads; prefetched like the pipelined loader
  tierfs-rounds     a whole run: ``tierfs.Loader(planned_epochs=K)`` (K = --replan-epochs) trains
                    --run-epochs whole epochs of fresh samples, each round of K epochs planned
                    while the round before trains; its seeds/s counts every wait for planning
                    after the first plan (not in the default --configs: it trains whole epochs)
  memmap-cold       ``np.memmap`` of the feature file, its page cache dropped before timing
  memmap-budget     the same inside a cgroup v2 memory limit of the tierfs memory budget (only
                    where such a limit can be applied; else skipped with the reason)

The sampler is tierfs's for every configuration (on the GPU, with the topology in device memory,
when the device is CUDA), so the configurations differ only in where features come from.
Per configuration: seeds/s over a fixed number of timed batches (after warm-up; a time cap per
configuration may cut them short; with --repeats R the median of R runs, the configurations
interleaved in rotated order, after one untimed warm-up round), the epoch time it implies,
per-stage times, the GPU's busy share, rows and bytes per tier per batch, SSD rows per batch and
the disk bound (4 KiB IOPS of ``tierfs bench disk`` / distinct 4 KiB blocks read per batch *
batch size). docs/bench-train.md explains the output.

    tierfs bench train DATASET [--device cuda] [--repeats 3] [--json out.json] [--plots DIR]
    tierfs bench train --plot-only out.json --plots DIR

A benchmark of the source tree, not part of the shipped package: the CLI built there
(build/tierfs) runs this file with the tree's package (python/) on PYTHONPATH; without the CLI,
``PYTHONPATH=python:python/bench TIERFS_LIB=build/libtierfs.so python3 -m benchtrain DATASET``.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

CONFIGS = [
    "memory-gpu",
    "memory-gpu-serial",
    "memory-pinned",
    "tierfs-cached",
    "tierfs-serial",
    "tierfs-pipelined",
    "tierfs-planned",
    "tierfs-rounds",
    "memmap-cold",
    "memmap-budget",
]
MEMORY_CONFIGS = ("memory-gpu", "memory-gpu-serial", "memory-pinned")
GPU_MEMORY_CONFIGS = ("memory-gpu", "memory-gpu-serial")
# Default --configs: every configuration but tierfs-rounds, which trains whole epochs.
DEFAULT_CONFIGS = [c for c in CONFIGS if c != "tierfs-rounds"]
TIERED_CONFIGS = ("tierfs-serial", "tierfs-pipelined", "tierfs-planned", "tierfs-rounds")
MEMMAP_CONFIGS = ("memmap-cold", "memmap-budget")
# Run after the others, in their own order (each plans, and its first plan re-places the tiers).
PLANNED_CONFIGS = ("tierfs-planned", "tierfs-rounds")
LOADER_CONFIGS = ("tierfs-pipelined",) + PLANNED_CONFIGS
PREFETCHED_CONFIGS = ("memory-gpu", "tierfs-cached") + LOADER_CONFIGS


# arguments -----------------------------------------------------------------------------------


def _list(s: str, conv=str) -> list:
    return [conv(v) for v in s.split(",") if v.strip()]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="tierfs bench train",
        description="End-to-end GNN training seeds/s: in-memory, tierfs (cached, 10/20 serial, pipelined, planned) and np.memmap, in one run.",
    )
    p.add_argument("dataset", nargs="?", help="a tierfs dataset directory (tierfs synth / ingest)")
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS), help="configurations to run, comma-separated (default: all but tierfs-rounds)")
    p.add_argument("--models", default="sage,gcn", help="sage (GraphSAGE, mean) and/or gcn")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="25,10/15,10,5", help="fanout lists separated by /")
    p.add_argument("--batch-sizes", default="1024,8000")
    p.add_argument("--batches", type=int, default=20, help="timed batches per configuration (after warm-up)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up batches per configuration")
    p.add_argument("--repeats", type=int, default=1,
                   help="runs of every configuration, interleaved: repeat k runs each once, the order rotated by k; "
                        "figures are per-configuration medians, every repeat's kept in the JSON")
    p.add_argument("--max-seconds", type=float, default=30.0,
                   help="cap on the timed batches of one configuration: stop after the batch that passes it (at least one timed batch)")
    p.add_argument("--time-budget", type=float, default=0.0,
                   help="seconds for the whole run: configurations that would start later are reported as skipped (0: no limit)")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    p.add_argument("--cache-fractions", default="0.1,0.2",
                   help="GPU tier, host tier of the tierfs-serial/pipelined/planned store as fractions of the feature bytes (cpu: both in the host tier)")
    p.add_argument("--sweep-host", default="", help="host-tier fractions for the seeds/s-vs-cache-size sweep (tierfs-pipelined), e.g. 0.05,0.1,0.2,0.4")
    p.add_argument("--sweep-combo", default="", help="model:fanouts:batch of the sweep (default: the first of each list)")
    p.add_argument("--io-backend", default=None,
                   help="io_backend of the tierfs 10/20 store (io_uring, pread, gpu-uring; default: the store's pick); gpu-uring implies --unverified-reads")
    p.add_argument("--unverified-reads", action="store_true",
                   help="open the tierfs 10/20 store with unverified_reads=True (disk reads not checked against checksums; what verification costs end to end)")
    p.add_argument("--depth", type=int, default=None,
                   help="prefetch depth of the pipelined and planned loaders (default: tierfs.Loader's prefetch default)")
    p.add_argument("--place-epochs", type=int, default=None, help="epochs store.place profiles (default: until converged)")
    p.add_argument("--planned-epoch", choices=["timed", "full"], default="timed",
                   help="timed: plan only the warm-up + timed batches, memory tiers as placed for the other tierfs configurations; "
                        "full: tierfs.Loader(planned_epochs=1) over the whole train split, tiers placed for the plan")
    p.add_argument("--replan-epochs", type=int, default=1,
                   help="with --planned-epoch full: epochs of the timed later round (a Loader's planned_epochs=K; K epochs that fit a packing window are packed by one pass of the feature file)")
    p.add_argument("--run-epochs", type=int, default=8,
                   help="tierfs-rounds: whole epochs trained, planned in rounds of --replan-epochs (the first round before training, each later one beside the round before)")
    p.add_argument("--plan-pack-memory", default=None,
                   help="pack_memory of the plans (the packer's window, e.g. 1GiB; default: the core's)")
    p.add_argument("--plan-dir", default="", help="where plans are written (default: a temporary directory beside the dataset)")
    p.add_argument("--drop-caches", action="store_true", help="also `echo 3 > /proc/sys/vm/drop_caches` (root) before the memmap runs; reported if it fails")
    p.add_argument("--memmap-headroom", default="1GiB", help="memmap-budget: the cgroup limit is the tierfs memory budget plus this (the run's own allocations)")
    p.add_argument("--tierfs-bin", default="", help="the tierfs CLI for `tierfs bench disk` (default: $TIERFS_BIN, build/tierfs, tierfs on PATH)")
    p.add_argument("--disk-iops", type=float, default=0.0, help="use this 4 KiB IOPS instead of measuring the disk")
    p.add_argument("--disk-json", default="", help="use the probe of `tierfs bench disk --json FILE` instead of measuring the disk")
    p.add_argument("--seed", type=int, default=1, help="seed of the batch order, the sampler and the model init")
    p.add_argument("--json", default="", help="write the report here")
    p.add_argument("--plots", default="", help="write the PNG plots into this directory")
    p.add_argument("--plot-only", default="", metavar="JSON", help="only draw the plots of a report written by --json")
    a = p.parse_args(argv)
    if not a.plot_only and not a.dataset:
        p.error("DATASET is required (or --plot-only JSON)")
    a.configs = _list(a.configs)
    unknown = [c for c in a.configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
    a.models = _list(a.models)
    for m in a.models:
        if m not in ("sage", "gcn"):
            p.error(f"unknown model {m!r}: sage or gcn")
    a.fanouts = [_list(f, int) for f in a.fanouts.split("/") if f]
    a.batch_sizes = _list(a.batch_sizes, int)
    fr = _list(a.cache_fractions, float)
    if len(fr) != 2:
        p.error("--cache-fractions wants two fractions: GPU tier, host tier")
    a.gpu_frac, a.host_frac = fr
    a.sweep_host = _list(a.sweep_host, float)
    if a.batches < 1 or a.warmup < 0 or (a.depth is not None and a.depth < 1) or a.repeats < 1 or a.run_epochs < 1 or a.replan_epochs < 1:
        p.error("--batches, --depth, --repeats, --run-epochs and --replan-epochs must be at least 1, --warmup at least 0")
    return a


# small helpers -------------------------------------------------------------------------------


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _parse_size(s: str) -> int:
    from tierfs import parse_size

    return int(parse_size(s, "size"))


def _combo_name(model: str, fanouts: List[int], batch: int) -> str:
    return f"{model} [{','.join(map(str, fanouts))}] b{batch}"


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


# the run -----------------------------------------------------------------------------------------


@dataclass
class _Window:
    """The timed batches of one run, from the first after the warm-up: their counters."""

    t0: Optional[float] = None  # its start (perf_counter); None until it starts
    io0: Optional[int] = None  # the process's bytes read from disk at the start
    smi: Optional[_SmiSampler] = None
    timed: int = 0
    fetch_s: float = 0.0  # host seconds waiting for the batches
    train_s: float = 0.0  # host seconds in the training steps
    nodes: int = 0
    edges: int = 0
    events: List[Tuple[Any, Any]] = field(default_factory=list)  # CUDA events around each step
    wall: float = 0.0
    smi_util: Optional[float] = None


class Bench:
    def __init__(self, a: argparse.Namespace):
        import torch

        import tierfs

        if a.depth is None:
            a.depth = tierfs._options.defaults("loader")["prefetch"]
        self.a = a
        self.torch = torch
        self.tierfs = tierfs
        dev = torch.device(a.device)
        self.cuda = dev.type == "cuda"
        if self.cuda:
            if not torch.cuda.is_available():
                raise SystemExit("benchtrain: --device cuda, but torch sees no CUDA device (use --device cpu)")
            if dev.index is None:
                dev = torch.device("cuda", torch.cuda.current_device())
        self.dev = dev
        self.sync = torch.cuda.synchronize if self.cuda else (lambda: None)
        self.report: Dict[str, Any] = {}
        self.results: List[Dict[str, Any]] = []
        self.stores: Dict[str, Any] = {}
        self.t_start = time.perf_counter()

    def over_budget(self) -> str:
        b = self.a.time_budget
        if b and time.perf_counter() - self.t_start > b:
            return f"time budget: {b:g} s spent before it started (--time-budget)"
        return ""

    def _uuid(self) -> str:
        """The GPU's UUID for nvidia-smi -i where CUDA_VISIBLE_DEVICES renumbers devices."""
        if not os.environ.get("CUDA_VISIBLE_DEVICES"):
            return ""
        u = str(getattr(self.torch.cuda.get_device_properties(self.dev), "uuid", "") or "")
        return u if len(u) >= 32 else ""

    # setup ----------------------------------------------------------------------------------

    def setup(self) -> None:
        a, torch, tierfs = self.a, self.torch, self.tierfs
        t0 = time.perf_counter()
        with tierfs.open(a.dataset) as plain:
            self.n, self.dim, self.rb = plain.num_nodes(), plain.dim, plain.row_bytes
            self.m = plain.num_edges()
            self.classes = plain.num_classes
            self.np_dtype, self.torch_dtype = plain.dtype, plain.torch_dtype
            self.train = plain.split("train")
            self.Y = plain.labels(torch.arange(self.n)).to(self.dev)
        self.feat_bytes = self.n * self.rb
        self.disk = measure_disk(a.dataset, a)
        print(f"disk: {self.disk['iops_4k']:,.0f} random {self.disk.get('read_size', 4096)}-byte reads/s ({self.disk['source']})")

        need_x = any(c in a.configs for c in MEMORY_CONFIGS)
        self.X_host = self.X_dev = None
        if need_x:
            t = time.perf_counter()
            mm = _Memmap(a.dataset, self.np_dtype, self.dim)
            x = torch.empty((self.n, self.dim), dtype=self.torch_dtype, pin_memory=self.cuda)
            mm.copy_into(x.numpy() if self.torch_dtype != torch.bfloat16 else x.view(torch.int16).numpy().view(np.uint16))
            mm.close()
            _evict(mm.path)
            self.X_host = x
            if any(c in a.configs for c in GPU_MEMORY_CONFIGS):
                self.X_dev = x.to(self.dev) if self.cuda else x
            print(f"features in memory: {_fmt_bytes(self.feat_bytes)} {'pinned host' if self.cuda else 'host'}"
                  f"{' + device' if self.cuda and self.X_dev is not None else ''} ({time.perf_counter() - t:.1f} s)")

        topo = "device" if self.cuda else None
        # The GPU sampler needs the whole topology in memory, whatever the default budget (1 GiB).
        topo_mem = max(1 << 30, (self.n + 1) * 8 + self.m * 8 + (64 << 20)) if self.cuda else None
        t = time.perf_counter()
        if self.cuda:  # every row in the GPU tier; its GPU sampler serves every configuration
            self.stores["cached"] = tierfs.open(a.dataset, gpu_cache=self.feat_bytes + (64 << 20), device=self.dev, gpu_topology=topo,
                                                topology_memory=topo_mem)
        else:
            self.stores["cached"] = tierfs.open(a.dataset, host_cache=self.n * (self.rb + 64) + (64 << 20))
        held = {t_["tier"]: t_["rows_held"] for t_ in self.stores["cached"].stats()["tiers"]}
        tier = "gpu" if self.cuda else "host"
        if self.cuda and not self.stores["cached"].stats()["gpu"].get("available"):
            raise SystemExit(f"benchtrain: the tierfs GPU path is unavailable ({self.stores['cached'].stats()['gpu'].get('reason')}); `make cuda`")
        if held.get(tier) != self.n and "tierfs-cached" in a.configs:
            print(f"WARNING: the cached store's {tier} tier holds {held.get(tier)} of {self.n} rows", file=sys.stderr)
        print(f"tierfs-cached store: every row in the {tier} tier{', topology on the GPU' if topo else ''} ({time.perf_counter() - t:.1f} s)")

        need_tiered = any(c in a.configs for c in TIERED_CONFIGS) or bool(a.sweep_host)
        if need_tiered:
            t = time.perf_counter()
            host_max = max([a.host_frac] + a.sweep_host)
            unverified = a.unverified_reads or a.io_backend == "gpu-uring"  # GPU-submitted reads are not checked
            if self.cuda:
                self.stores["tiered"] = tierfs.open(a.dataset, gpu_cache=int(a.gpu_frac * self.feat_bytes), host_cache=int(host_max * self.feat_bytes),
                                                    device=self.dev, gpu_topology=topo, topology_memory=topo_mem, io_backend=a.io_backend,
                                                    unverified_reads=unverified)
            else:  # no GPU tier: its share goes to the host tier, so the memory budget is the same
                self.stores["tiered"] = tierfs.open(a.dataset, host_cache=int((a.gpu_frac + host_max) * self.feat_bytes), io_backend=a.io_backend,
                                                    unverified_reads=unverified)
            io = self.stores["tiered"].stats().get("io", {})
            ring = f", gpu-uring: {io['gpu_uring']}" if io.get("gpu_uring") else ""
            print(f"tierfs 10/20 store opened ({time.perf_counter() - t:.1f} s; io {self.stores['tiered'].io_backend}{ring}; reads {'unverified' if unverified else 'verified'})")
        self.budget_bytes = int((a.gpu_frac + a.host_frac) * self.feat_bytes)

        dev_name = torch.cuda.get_device_name(self.dev) if self.cuda else "cpu"
        self.report.update(
            dataset=os.path.abspath(a.dataset), nodes=self.n, dim=self.dim, row_bytes=self.rb, dtype=str(self.np_dtype),
            feature_bytes=self.feat_bytes, train_seeds=int(len(self.train)), classes=self.classes, device=str(self.dev),
            device_name=dev_name, torch=torch.__version__, cpus=os.cpu_count(), seed=a.seed, hidden=a.hidden, depth=a.depth,
            warmup=a.warmup, batches=a.batches, repeats=a.repeats, max_seconds=a.max_seconds, gpu_fraction=a.gpu_frac if self.cuda else 0.0,
            host_fraction=a.host_frac if self.cuda else a.gpu_frac + a.host_frac, memory_budget_bytes=self.budget_bytes,
            planned_epoch=a.planned_epoch, unverified_reads=bool(a.unverified_reads or a.io_backend == "gpu-uring"), disk=self.disk, setup_seconds=time.perf_counter() - t0,
            sampler="tierfs, on the GPU (topology in device memory)" if self.cuda else "tierfs, on the host",
        )

    # pieces of a run --------------------------------------------------------------------------

    def order(self, need: int) -> np.ndarray:
        """The first ``need`` train seeds of the shuffled order (the same for every configuration;
        tierfs.Loader's order for epoch 0 of seed --seed, repeated epochs if one is too short)."""
        parts, e, have = [], 0, 0
        while have < need:
            rng = np.random.default_rng([self.a.seed, e])
            parts.append(self.train[rng.permutation(len(self.train))])
            have += len(self.train)
            e += 1
        return np.concatenate(parts)[:need]

    def model(self, kind: str, hops: int):
        torch = self.torch
        from torch_geometric.nn import GCN, GraphSAGE

        torch.manual_seed(self.a.seed)
        cls = GraphSAGE if kind == "sage" else GCN
        m = cls(self.dim, self.a.hidden, num_layers=hops, out_channels=max(self.classes, 2)).to(self.dev)
        return m, torch.optim.Adam(m.parameters(), lr=1e-3)

    def fetchers(self, cfg: str, fanouts: List[int], batch: int, seeds: np.ndarray, stage: Dict[str, float], extra: Dict[str, Any]):
        """An iterator of (seeds, nodes, row, col, x on the device) for cfg; serial ones add their
        sample/gather seconds to ``stage``."""
        torch, dev = self.torch, self.dev
        nb = -(-len(seeds) // batch)
        chunks = [torch.from_numpy(seeds[i * batch : (i + 1) * batch]) for i in range(nb)]
        cached = self.stores["cached"]
        if cfg == "memory-gpu-serial":
            X = self.X_dev
            return self.serial_batches(cached, fanouts, chunks, stage, lambda nodes: torch.index_select(X, 0, nodes.to(dev, non_blocking=True)))
        if cfg == "memory-gpu":
            X = self.X_dev
            return self.overlapped(cached, fanouts, chunks, extra, lambda nodes: torch.index_select(X, 0, nodes))
        # The same loop, the rows from the store's GPU tier (device ids: the split runs on the GPU).
        if cfg == "tierfs-cached":
            return self.overlapped(cached, fanouts, chunks, extra, cached.gather)
        if cfg == "memory-pinned":
            return self.serial_batches(cached, fanouts, chunks, stage, self.pinned_gather())
        if cfg == "tierfs-serial":
            st = self.stores["tiered"]
            return self.serial_batches(st, fanouts, chunks, stage, lambda nodes: st.gather(nodes.to(dev, non_blocking=True)))
        if cfg in MEMMAP_CONFIGS:
            def mgather(nodes):
                return torch.from_numpy(extra["memmap"].gather(nodes.numpy())).to(dev, non_blocking=True)

            return self.serial_batches(cached, fanouts, chunks, stage, mgather)
        if cfg == "tierfs-pipelined":
            st = self.stores["tiered"]
            sampler = st.sampler(fanouts, seed=self.a.seed)
            loader = self.tierfs.Loader(st, sampler, torch.from_numpy(seeds), batch, shuffle=False, prefetch=self.a.depth, labels=False)
            extra["loader"] = loader
            extra["closers"].append(sampler.close)
            return self.loader_batches(loader, 1, extra)
        if cfg in PLANNED_CONFIGS:
            plan = extra["plan"]
            if isinstance(plan, self.tierfs.Loader):  # --planned-epoch full, tierfs-rounds: the loader itself
                # tierfs-rounds: epoch after epoch, as a user's loop
                return self.loader_batches(plan, extra.get("epochs", 1), extra)
            return self.plan_batches(plan, extra)
        raise AssertionError(cfg)

    def serial_batches(self, store, fanouts: List[int], chunks: List[Any], stage: Dict[str, float], gather: Callable[[Any], Any]) -> Iterator[Tuple]:
        """The serial loop: each batch sampled, then its rows gathered with ``gather(nodes)``,
        inline; their seconds go to ``stage``. The sampler opens at the first batch."""
        sampler = store.sampler(fanouts, seed=self.a.seed)
        try:
            for s_ids in chunks:
                t = time.perf_counter()
                s = sampler.sample(s_ids)
                t2 = time.perf_counter()
                x = gather(s.nodes)
                stage["sample"] += t2 - t
                stage["gather"] += time.perf_counter() - t2
                yield s_ids, s.nodes, s.row, s.col, x
        finally:
            sampler.close()

    def pinned_gather(self) -> Callable[[Any], Any]:
        """memory-pinned's gather: ``index_select`` of the host tensor into one of two pinned
        buffers, taking turns, then copied to the device without waiting (cpu: the buffer)."""
        torch, dev, X = self.torch, self.dev, self.X_host
        bufs: List[Any] = [None, None]  # two pinned buffers, taking turns
        done: List[Any] = [None, None]  # the event after the copy out of each
        turn = [0]

        def pinned(nodes):
            k, j = nodes.shape[0], turn[0]
            turn[0] ^= 1
            if done[j] is not None:  # its previous copy to the device must have finished
                done[j].synchronize()
            if bufs[j] is None or bufs[j].shape[0] < k:
                bufs[j] = torch.empty((int(k * 1.25) + 1, self.dim), dtype=X.dtype, pin_memory=self.cuda)
            out = bufs[j][:k]
            torch.index_select(X, 0, nodes, out=out)
            if not self.cuda:
                return out
            x = out.to(dev, non_blocking=True)
            done[j] = torch.cuda.Event()
            done[j].record()
            return x

        return pinned

    def loader_batches(self, loader, epochs: int, extra: Dict[str, Any]) -> Iterator[Tuple]:
        """A tierfs.Loader's batches, ``epochs`` epochs of them; each epoch's iterator is closed
        first of ``extra["closers"]``."""
        for _ in range(epochs):
            it = iter(loader)
            extra["closers"].insert(0, getattr(it, "close", lambda: None))
            for b in it:
                s = b.sample
                yield b.seeds, s.nodes, s.row, s.col, b.x

    def plan_batches(self, plan, extra: Dict[str, Any]) -> Iterator[Tuple]:
        """Epoch 0 of a plan (tierfs-planned: the warm-up and timed batches), prefetched --depth
        ahead as tierfs.Loader serves a plan; on CUDA the training stream waits for each batch's
        event before it uses the batch."""
        side = self.torch.cuda.Stream(device=self.dev) if self.cuda else None
        pf = self.tierfs.prefetch(self.planned_batches(plan, side), self.a.depth)
        extra["closers"].insert(0, pf.close)
        return self.on_training_stream(pf)

    def planned_batches(self, plan, side) -> Iterator[Tuple]:
        """As tierfs.Loader serves a plan on a CUDA store: the batch's rows by the planned device
        gather (packed rows scattered on the GPU), its sample moved from pinned memory, both on
        the side stream, with the event the training stream then waits for (None: no side
        stream, host arrays)."""
        torch, dev = self.torch, self.dev
        for i in range(plan.batches_per_epoch):
            if side is None:
                s_ids, s, x = plan.load(0, i)
                yield torch.from_numpy(s_ids), torch.from_numpy(s.nodes), torch.from_numpy(s.row), torch.from_numpy(s.col), torch.from_numpy(x), None
                continue
            s = plan.sample(0, i)
            with torch.cuda.stream(side):
                x = plan.gather_device(0, i, s.nodes)
                ids, nodes, row, col = (torch.from_numpy(v).pin_memory().to(dev, non_blocking=True) for v in (s.nodes[: s.num_seeds], s.nodes, s.row, s.col))
                done = torch.cuda.Event()
                done.record(side)
            yield ids, nodes, row, col, x, done

    def overlapped(self, store, fanouts: List[int], chunks: List[Any], extra: Dict[str, Any], gather: Callable[[Any], Any]) -> Iterator[Tuple]:
        """memory-gpu, the best in-memory loop: one thread (``tierfs.prefetch``, up to --depth
        batches ahead) samples each batch, copies the sample to the device from pinned memory
        and gathers its rows with ``gather(nodes)`` (``index_select`` of the CUDA tensor;
        tierfs-cached: the store's gather of device ids), both on a CUDA side stream; the training
        loop only makes its stream wait for the batch's event (GraphBolt's feature fetch on its
        own stream, apex's data_prefetcher). A thread, not "launch batch i+1's sampling, then
        train batch i": the sampler returns host arrays, so its call blocks until the GPU
        sampler's kernels and the copy back are done; the native call releases the GIL, and
        the thread holds it only for a few short torch calls a batch. The thread's seconds
        and batches go to ``extra["thread_busy"]``."""
        torch, dev = self.torch, self.dev
        sampler = store.sampler(fanouts, seed=self.a.seed)
        extra["closers"].append(sampler.close)
        busy = extra["thread_busy"] = dict(sample=0.0, gather=0.0, batches=0)
        side = torch.cuda.Stream(device=dev) if self.cuda else None

        def prepared():
            for s_ids in chunks:
                t = time.perf_counter()
                s = sampler.sample(s_ids)
                t2 = time.perf_counter()
                if side is None:
                    item = (s_ids, s.nodes, s.row, s.col, gather(s.nodes), None)
                else:
                    with torch.cuda.stream(side):
                        ids, nodes, row, col = (v.pin_memory().to(dev, non_blocking=True) for v in (s_ids, s.nodes, s.row, s.col))
                        x = gather(nodes)
                        done = torch.cuda.Event()
                        done.record(side)
                    item = (ids, nodes, row, col, x, done)
                busy["sample"] += t2 - t
                busy["gather"] += time.perf_counter() - t2
                busy["batches"] += 1
                yield item

        pf = self.tierfs.prefetch(prepared(), self.a.depth)
        extra["closers"].insert(0, pf.close)
        return self.on_training_stream(pf)

    def on_training_stream(self, batches: Iterator[Tuple]) -> Iterator[Tuple]:
        """Batches a side stream prepared, each (tensors..., its event), handed to the training
        stream: it waits for the event (the side stream's copies and gather), and the tensors are
        marked in use there, so their memory is not handed out early. Event None (no side
        stream, cpu): the tensors as they are."""
        torch, dev = self.torch, self.dev
        for *batch, done in batches:
            if done is not None:
                current = torch.cuda.current_stream(dev)
                current.wait_event(done)
                for t_ in batch:
                    t_.record_stream(current)
            yield tuple(batch)

    def run(self, cfg: str, model_kind: str, fanouts: List[int], batch: int, extra: Dict[str, Any], warmup_only: bool = False) -> Dict[str, Any]:
        """One run of cfg: --warmup untimed batches, then --batches timed ones. ``warmup_only``:
        at least one untimed batch and nothing timed (the warm-up round); returns {}."""
        a = self.a
        # memmap: no warm-up batches (they would read the file cold once more; the model and the
        # GPU were warmed by the configurations before it)
        W, N = (0 if cfg in MEMMAP_CONFIGS else a.warmup), extra.get("batches", a.batches)
        max_seconds = extra.get("max_seconds", a.max_seconds)
        if warmup_only:
            W = max(W, 1)
        seeds = extra.get("seeds")
        if seeds is None:
            seeds = self.order((W + N) * batch)
        stage = dict(sample=0.0, gather=0.0)
        extra.setdefault("closers", [])
        model, opt = self.model(model_kind, len(fanouts))
        tier_store = self.stores.get("tiered") if cfg in TIERED_CONFIGS else (self.stores["cached"] if cfg == "tierfs-cached" else None)
        plan = extra.get("plan") if cfg in PLANNED_CONFIGS else None
        plan_stats = self.plan_stats(cfg, plan)
        # Tier counters over every batch of the run (warm-up included), read before the fetcher
        # starts: a prefetching one gathers ahead at once, so a later or narrower window would
        # miss some of its batches (all of them in a run shorter than the prefetch depth).
        st0 = tier_store.stats() if tier_store is not None else None
        pl0 = plan_stats() if plan_stats else None
        it = self.fetchers(cfg, fanouts, batch, seeds, stage, extra)
        losses: List[Any] = []  # every batch's, warm-up included: batch i is losses[i]
        try:
            w = self.train_batches(cfg, it, model, opt, W, N, max_seconds, stage, extra, losses, warmup_only)
        finally:
            for c in extra["closers"]:
                try:
                    c()
                except Exception:
                    pass
            extra["closers"] = []
        if warmup_only:
            return {}
        if w.timed == 0 or w.wall <= 0:
            return dict(config=cfg, error="no timed batch")
        r = self.result(cfg, model_kind, fanouts, batch, W, w, losses, stage, extra)
        self.add_loader_stats(r, cfg, plan, extra)
        if tier_store is not None and st0 is not None and cfg not in PLANNED_CONFIGS:
            self.add_tier_rows(r, tier_store.stats(), st0)
        if plan_stats is not None and pl0 is not None:
            self.add_plan_rows(r, plan_stats(), pl0, extra)
        self.add_memory_rows(r, cfg, w, extra)
        return r

    def plan_stats(self, cfg: str, plan) -> Optional[Callable[[], Dict[str, Any]]]:
        """The stats call of the plan a planned run serves (None: no plan, or tierfs-rounds, which
        serves several plans, one a round: its loader's stats say what they did)."""
        if cfg == "tierfs-rounds":
            return None
        plan_obj = getattr(plan, "plan", None) if isinstance(plan, self.tierfs.Loader) else plan
        return plan_obj.stats if plan_obj is not None and hasattr(plan_obj, "stats") else None

    def train_batches(self, cfg: str, it: Iterator[Tuple], model, opt, W: int, N: int, max_seconds: float, stage: Dict[str, float],
                      extra: Dict[str, Any], losses: List[Any], warmup_only: bool) -> _Window:
        """The training loop of a run: W warm-up batches (fewer if they pass max_seconds / 2 from
        the end of the first), then up to N timed ones (stopping after the one that passes
        max_seconds), each a model step on the batch from ``it``; every batch's loss is appended
        to ``losses``. ``warmup_only``: stops where the timed batches would start."""
        w = _Window()
        warm_t = None  # the end of the first batch: the warm-up cap counts from there
        i = 0
        while True:
            if i == W or (w.t0 is None and warm_t is not None and time.perf_counter() - warm_t > max_seconds / 2):
                if warmup_only:
                    break
                if w.t0 is None:  # the timed window starts here
                    self.start_window(cfg, w, stage, extra)
            if w.t0 is not None and (w.timed >= N or (w.timed >= 1 and time.perf_counter() - w.t0 > max_seconds)):
                break
            tf = time.perf_counter()
            try:
                s_ids, nodes, row, col, x = next(it)
            except StopIteration:
                break
            tt = time.perf_counter()
            loss, events = self.step(model, opt, s_ids, row, col, x, timed=w.t0 is not None)
            losses.append(loss)
            if w.t0 is not None:
                if events is not None:
                    w.events.append(events)
                w.fetch_s += tt - tf
                w.train_s += time.perf_counter() - tt
                w.nodes += int(nodes.shape[0])
                w.edges += int(row.shape[0])
                w.timed += 1
            if warm_t is None:
                warm_t = time.perf_counter()
            i += 1
        self.sync()
        if w.t0 is not None:
            w.wall = time.perf_counter() - w.t0
        if w.smi is not None:
            w.smi_util = w.smi.stop()
        return w

    def start_window(self, cfg: str, w: _Window, stage: Dict[str, float], extra: Dict[str, Any]) -> None:
        """The timed window starts: memmap's file made cold, the device synchronized, the stage
        seconds zeroed, the process's read bytes noted and the nvidia-smi sampler started."""
        if cfg in MEMMAP_CONFIGS:
            extra["cold"](extra)
        self.sync()
        for k in stage:
            stage[k] = 0.0
        w.io0 = _proc_read_bytes()
        if self.cuda:
            w.smi = _SmiSampler(self.dev.index, self._uuid())
        w.t0 = time.perf_counter()

    def step(self, model, opt, s_ids, row, col, x, timed: bool) -> Tuple[Any, Optional[Tuple[Any, Any]]]:
        """One training step on a batch: cross-entropy on its seeds' labels, Adam. Returns the
        loss (detached) and, on CUDA when ``timed``, the CUDA events around the step."""
        torch, dev = self.torch, self.dev
        edge_index = torch.stack([row, col]).to(dev, non_blocking=True)
        y = self.Y[s_ids.to(dev, non_blocking=True)]
        e0 = None
        if self.cuda and timed:
            e0 = torch.cuda.Event(enable_timing=True)
            e0.record()
        out = model(x.float(), edge_index)[: s_ids.shape[0]]
        loss = torch.nn.functional.cross_entropy(out, y, ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if e0 is None:
            return loss.detach(), None
        e1 = torch.cuda.Event(enable_timing=True)
        e1.record()
        return loss.detach(), (e0, e1)

    def result(self, cfg: str, model_kind: str, fanouts: List[int], batch: int, W: int, w: _Window, losses: List[Any],
               stage: Dict[str, float], extra: Dict[str, Any]) -> Dict[str, Any]:
        """A run's figures from its timed window: seeds/s, the epoch time it implies, per-stage
        times a batch and the GPU's busy share."""
        timed, wall = w.timed, w.wall
        gpu_busy = sum(e0.elapsed_time(e1) for e0, e1 in w.events) / 1e3 if w.events else None
        r: Dict[str, Any] = dict(
            config=cfg, model=model_kind, fanouts=fanouts, batch_size=batch, timed_batches=timed, warmup_batches=W,
            seconds=wall, seeds_per_s=timed * batch / wall, batch_ms=1e3 * wall / timed,
            epoch_seconds=len(self.train) / (timed * batch / wall), nodes_per_batch=w.nodes / timed, edges_per_batch=w.edges / timed,
            losses=[float(v) for v in losses],
        )
        stages = {"fetch": w.fetch_s, "train_host": w.train_s}
        if "thread_busy" in extra:  # memory-gpu, tierfs-cached: its thread's mean a batch over every batch it made
            tb = extra["thread_busy"]
            stages.update({k: tb[k] / max(1, tb["batches"]) * timed for k in ("sample", "gather")})
        elif cfg not in LOADER_CONFIGS:  # the loaders' stages are in loader_stats
            stages.update(sample=stage["sample"], gather=stage["gather"])
        if cfg in PREFETCHED_CONFIGS:
            stages["wait"] = w.fetch_s  # the training loop blocked on the prefetched batches
        r["stage_ms_per_batch"] = {k: 1e3 * v / timed for k, v in stages.items()}
        if gpu_busy is not None:
            r["stage_ms_per_batch"]["train_gpu"] = 1e3 * gpu_busy / timed
        r["gpu_util_events"] = gpu_busy / wall if gpu_busy is not None else None
        r["gpu_util_smi"] = w.smi_util
        r["train_share"] = w.train_s / wall  # host time in the training step / wall (cpu: the useful share)
        return r

    def add_loader_stats(self, r: Dict[str, Any], cfg: str, plan, extra: Dict[str, Any]) -> None:
        """The loader's own stats (tierfs-pipelined, and planned runs served by a Loader); for
        tierfs-rounds, the rounds it planned and how long training waited for them."""
        loader = extra.get("loader") if cfg == "tierfs-pipelined" else (plan if isinstance(plan, self.tierfs.Loader) else None)
        if loader is not None and hasattr(loader, "stats"):
            try:
                r["loader_stats"] = loader.stats()
            except Exception as e:  # report, do not fail the run
                r["loader_stats"] = {"error": str(e)}
        if cfg == "tierfs-rounds":  # the whole run's rounds: planned, and waited for after the first
            plans = (r.get("loader_stats") or {}).get("plans") or {}
            rounds = plans.get("rounds") or []
            r.update(first_plan_seconds=extra.get("plan_seconds"), run_epochs=extra.get("epochs"), epochs_per_round=plans.get("epochs_per_plan"),
                     rounds=len(rounds), later_waits=sum(bool(x.get("waited")) for x in rounds[1:]),
                     later_wait_seconds=sum(x.get("wait_s") or 0.0 for x in rounds[1:]))

    def add_tier_rows(self, r: Dict[str, Any], st1: Dict[str, Any], st0: Dict[str, Any]) -> None:
        """Rows and bytes per tier per batch, and the disk's reads, from the store's counters
        before (st0) and after (st1) the run."""
        g = max(1, st1["gathers"] - st0["gathers"])
        h0 = {t["tier"]: t for t in st0["tiers"]}
        rows = {t["tier"]: (t["hits"] - h0[t["tier"]]["hits"]) / g for t in st1["tiers"]}
        r["rows_per_batch"] = rows
        r["bytes_per_batch"] = {k: v * self.rb for k, v in rows.items()}
        r["gathers_counted"] = g
        io_0, io_1 = st0.get("io", {}), st1.get("io", {})
        r["disk_reads_per_batch"] = (io_1.get("reads", 0) - io_0.get("reads", 0)) / g
        r["disk_bytes_per_batch"] = (io_1.get("bytes_read", 0) - io_0.get("bytes_read", 0)) / g
        r["disk_blocks_per_batch"] = r["disk_bytes_per_batch"] / 4096  # distinct 4 KiB blocks read
        r["ssd_rows_per_batch"] = rows.get("ssd", 0.0)

    def add_plan_rows(self, r: Dict[str, Any], pl1: Dict[str, Any], pl0: Dict[str, Any], extra: Dict[str, Any]) -> None:
        """A planned run's rows per batch from its plan's counters before (pl0) and after (pl1):
        a plan's gathers are not in store.stats(); and the time planning took."""
        d = {k: (pl1[k] - pl0.get(k, 0)) for k in pl1 if isinstance(pl1[k], (int, float)) and not isinstance(pl1[k], bool)}
        r["plan_stats_delta"] = d
        nb = d.get("batches") or 0
        if nb:
            r["rows_per_batch"] = {"memory": r["nodes_per_batch"] - d.get("rows", 0) / nb, "ssd_packed": d.get("rows", 0) / nb}
            r["bytes_per_batch"] = {k: v * self.rb for k, v in r["rows_per_batch"].items()}
            r["packed_rows_per_batch"] = d.get("rows", 0) / nb
            r["disk_reads_per_batch"] = d.get("reads", 0) / nb
            r["disk_bytes_per_batch"] = d.get("bytes_read", 0) / nb
        r["plan_setup_seconds"] = extra.get("plan_seconds")
        if "replan_seconds" in extra:
            r["replan_seconds"], r["replan_report"], r["replan_epochs"] = extra["replan_seconds"], extra["replan_report"], extra["replan_epochs"]
            r["replan_open_seconds"], r["replan_remove_seconds"] = extra["replan_open_seconds"], extra["replan_remove_seconds"]
        r["plan_note"] = extra.get("plan_note", "")

    def add_memory_rows(self, r: Dict[str, Any], cfg: str, w: _Window, extra: Dict[str, Any]) -> None:
        """Where the in-memory and memmap configurations' rows came from; memmap's disk bytes a
        batch (the process's reads over the timed window) and its cold-cache notes."""
        if cfg in MEMORY_CONFIGS:
            where = "gpu" if (cfg in GPU_MEMORY_CONFIGS and self.cuda) else "host"
            r["rows_per_batch"] = {where: r["nodes_per_batch"]}
            r["bytes_per_batch"] = {where: r["nodes_per_batch"] * self.rb}
        if cfg in MEMMAP_CONFIGS:
            io1 = _proc_read_bytes()
            r["rows_per_batch"] = {"page_cache_or_disk": r["nodes_per_batch"]}
            r["bytes_per_batch"] = {"page_cache_or_disk": r["nodes_per_batch"] * self.rb}
            if w.io0 is not None and io1 is not None:
                r["disk_bytes_per_batch"] = (io1 - w.io0) / w.timed
            r.update({k: extra[k] for k in ("resident_before", "cold_note", "memory_limit", "memory_limit_note") if k in extra})

    # the whole table --------------------------------------------------------------------------

    def place(self, fanouts: List[int], batch: int, host_frac: float) -> Dict[str, Any]:
        st = self.stores["tiered"]
        kw = dict(fanouts=fanouts, batch_size=batch)
        if self.a.place_epochs:
            kw["epochs"] = self.a.place_epochs
        if self.cuda:
            kw.update(gpu_bytes=int(self.a.gpu_frac * self.feat_bytes), host_bytes=int(host_frac * self.feat_bytes))
        else:
            kw.update(host_bytes=int((self.a.gpu_frac + host_frac) * self.feat_bytes))
        t = time.perf_counter()
        rep = st.place(**kw)
        held = {t_["tier"]: t_["rows_held"] for t_ in st.stats()["tiers"]}
        took = time.perf_counter() - t
        print(f"  placed [{','.join(map(str, fanouts))}] b{batch}, host {host_frac:g}: {rep.get('source')} in {took:.1f} s; "
              f"rows held gpu {held.get('gpu', 0):,} host {held.get('host', 0):,}")
        return dict(source=rep.get("source"), seconds=took, rows_held=held, profile_batches=rep.get("profile_batches"), policy=rep.get("policy"))

    def make_plan(self, fanouts: List[int], batch: int, extra: Dict[str, Any]) -> None:
        a, st = self.a, self.stores["tiered"]
        plan_dir = a.plan_dir or tempfile.mkdtemp(prefix="tierfs-benchtrain-plan-", dir=os.path.dirname(os.path.abspath(a.dataset)))
        made = not a.plan_dir
        t = time.perf_counter()
        if a.planned_epoch == "full":
            extra["plan"] = self.tierfs.Loader(st, st.sampler(fanouts, seed=a.seed), self.torch.from_numpy(self.train), batch,
                                               shuffle=True, prefetch=a.depth, seed=a.seed, labels=False, planned_epochs=1, plan_dir=plan_dir,
                                               reuse_samples=True, plan_pack_memory=a.plan_pack_memory)  # one plan, no planner beside the timed batches
            extra["plan_note"] = "whole train split planned (tierfs.Loader planned_epochs=1); memory tiers placed for the plan; the core's batch order"
        else:
            seeds = self.order((a.warmup + a.batches) * batch)
            extra["plan"] = st.plan_epochs(fanouts, batch, 1, seeds=seeds, plan_dir=plan_dir, seed=a.seed, shuffle_seed=a.seed, place_tiers=False)
            extra["plan_note"] = "only the warm-up + timed batches' seeds planned (the core's order of them); memory tiers as placed for tierfs-serial"
        extra["plan_seconds"] = time.perf_counter() - t
        extra["plan_dir"] = plan_dir if made else ""
        print(f"  planned {'the whole epoch' if a.planned_epoch == 'full' else 'the timed batches'} in {extra['plan_seconds']:.1f} s")
        if a.planned_epoch == "full":
            # A later round of planned_epochs=K plans against the tiers the first placed: time one
            # (the next K epochs, fresh samples), as the Loader's planner would beside training.
            t1 = time.perf_counter()
            replan_dir = tempfile.mkdtemp(prefix="tierfs-benchtrain-replan-", dir=os.path.dirname(os.path.abspath(a.dataset)))
            try:
                with st.plan_epochs(fanouts, batch, a.replan_epochs, seeds=self.train, plan_dir=replan_dir, seed=a.seed, shuffle_seed=a.seed,
                                    place_tiers=False, first_epoch=1, pack_memory=a.plan_pack_memory) as replan:
                    rep = dict(replan.report)
                    extra["replan_open_seconds"] = time.perf_counter() - t1
            finally:
                t2 = time.perf_counter()
                shutil.rmtree(replan_dir, ignore_errors=True)
                extra["replan_remove_seconds"] = time.perf_counter() - t2
            # The planner thread's time for a round: planning it, and removing the round before
            # (a Loader's planner removes the finished round's files before it plans the next).
            extra["replan_seconds"] = time.perf_counter() - t1
            extra["replan_epochs"] = a.replan_epochs
            from tierfs.planrounds import _REPORT_KEYS  # the keys a Loader's round records

            extra["replan_report"] = {k: rep[k] for k in _REPORT_KEYS + ("pack_method", "pack_windows", "rows_per_batch") if k in rep}
            print(f"  planned the next {a.replan_epochs} epoch(s) against the placed tiers in {extra['replan_seconds']:.1f} s, "
                  f"{rep.get('rows_per_batch', {}).get('mean', 0):,.0f} packed rows a batch in {rep.get('pack_windows', 0)} window(s) "
                  f"(sampling {rep.get('sample_seconds', 0):.1f} s over the planner's threads, reading {rep.get('read_seconds', 0):.1f} s, "
                  f"writing {rep.get('write_seconds', 0):.1f} s; the core {rep.get('seconds', 0):.1f} s of the "
                  f"{extra['replan_open_seconds']:.1f} s call, removing its files {extra['replan_remove_seconds']:.1f} s)")

    def close_plan(self, extra: Dict[str, Any]) -> None:
        plan = extra.pop("plan", None)
        p = getattr(plan, "plan", plan)
        if p is not None:
            p.close()
        if extra.get("plan_dir"):
            shutil.rmtree(extra["plan_dir"], ignore_errors=True)

    def memmap_extra(self, cfg: str) -> Dict[str, Any]:
        extra: Dict[str, Any] = {}
        mm = _Memmap(self.a.dataset, self.np_dtype, self.dim)
        extra["memmap"] = mm
        extra["closers"] = []

        def cold(ex):
            notes = []
            if self.a.drop_caches:
                why = _drop_caches()
                notes.append(why or "drop_caches: 3 written")
            mm.unmap_pages()
            _evict(mm.path)
            notes.append("madvise + posix_fadvise(DONTNEED) on the feature file")
            ex["resident_before"] = mm.resident()
            ex["cold_note"] = "; ".join(notes)

        extra["cold"] = cold
        return extra

    def run_all(self) -> None:
        """Per fanouts and batch size (the tiers placed once), per model: a warm-up round, then
        --repeats rounds of every configuration but tierfs-planned, round k in the order rotated
        by k, then tierfs-planned's repeats (after the others: a plan may re-place the tiers).
        Appends one result per configuration: the median of its repeats."""
        a = self.a
        groups = list(itertools.product([tuple(f) for f in a.fanouts], a.batch_sizes))
        rows = [c for c in a.configs if c not in PLANNED_CONFIGS]
        for fan, batch in groups:
            fanouts = list(fan)
            placed = None
            if any(c in a.configs for c in TIERED_CONFIGS) and not self.over_budget():
                placed = self.place(fanouts, batch, a.host_frac)
            for model in a.models:
                name = _combo_name(model, fanouts, batch)
                print(f"\n== {name}: {a.warmup} warm-up + {a.batches} timed batches per configuration (cap {a.max_seconds:g} s)"
                      + (f", {a.repeats} repeats in rotated order" if a.repeats > 1 else ""))
                self.warm_up(rows, model, fanouts, batch)
                runs: Dict[str, List[Dict[str, Any]]] = {c: [] for c in rows}
                for k in range(a.repeats):
                    for pos, cfg in enumerate(_rotated(rows, k)):
                        runs[cfg].append(dict(self._one(cfg, model, fanouts, batch, placed, repeat=k), position=pos))
                self._keep(rows, runs)
            if "tierfs-planned" in a.configs:
                extra: Dict[str, Any] = {}
                if not self.over_budget():
                    self.make_plan(fanouts, batch, extra)
                try:
                    for model in a.models:
                        planned = [self._one("tierfs-planned", model, fanouts, batch, placed, dict(extra, closers=[]), repeat=k)
                                   for k in range(a.repeats)]
                        self._keep(["tierfs-planned"], {"tierfs-planned": planned})
                finally:
                    self.close_plan(extra)
            if "tierfs-rounds" in a.configs:
                for model in a.models:
                    self.run_rounds(model, fanouts, batch, placed)

    def run_rounds(self, model: str, fanouts: List[int], batch: int, placed: Optional[Dict[str, Any]]) -> None:
        """tierfs-rounds, once: a Loader with planned_epochs=--replan-epochs (fresh samples) made,
        which plans its first round and places the tiers for it (timed apart: the one wait for
        planning a run must have), then --run-epochs whole epochs trained through it, its later
        rounds planned on its planner thread meanwhile. The timed batches start after --warmup."""
        a, st = self.a, self.stores.get("tiered")
        extra: Dict[str, Any] = {"closers": []}
        loader = sampler = plan_dir = None
        try:
            if st is not None and not self.over_budget():
                plan_dir = tempfile.mkdtemp(prefix="tierfs-benchtrain-rounds-", dir=os.path.dirname(os.path.abspath(a.dataset)))
                sampler = st.sampler(fanouts, seed=a.seed)
                t = time.perf_counter()
                loader = self.tierfs.Loader(st, sampler, self.torch.from_numpy(self.train), batch, shuffle=True, prefetch=a.depth, seed=a.seed,
                                            labels=False, planned_epochs=a.replan_epochs, plan_dir=plan_dir, plan_pack_memory=a.plan_pack_memory)
                extra.update(plan=loader, plan_seconds=time.perf_counter() - t, epochs=a.run_epochs,
                             batches=max(1, a.run_epochs * len(loader) - a.warmup), max_seconds=float("inf"))
                print(f"  tierfs-rounds: planned the first {a.replan_epochs} epoch(s), tiers placed for them, in {extra['plan_seconds']:.1f} s; "
                      f"training {a.run_epochs} epochs of {len(loader)} batches")
            r = self._one("tierfs-rounds", model, fanouts, batch, placed, extra)
        finally:
            if loader is not None:
                loader.close()
            if sampler is not None:
                sampler.close()
            if plan_dir is not None:
                shutil.rmtree(plan_dir, ignore_errors=True)
        self._keep(["tierfs-rounds"], {"tierfs-rounds": [r]})

    def warm_up(self, rows: List[str], model: str, fanouts: List[int], batch: int) -> None:
        """The warm-up round: the limit's loop (memory-gpu, else the first configuration that
        needs no setup of its own) runs its warm-up batches untimed, so what a process or a new
        model shape pays once (CUDA context, lazy kernel loading, the allocator's first growth)
        falls on no timed run, whichever configuration comes first."""
        cands = [c for c in rows if c not in MEMMAP_CONFIGS and (c not in TIERED_CONFIGS or "tiered" in self.stores)]
        if not cands or self.over_budget():
            return
        cfg = "memory-gpu" if "memory-gpu" in cands else cands[0]
        t = time.perf_counter()
        self.run(cfg, model, fanouts, batch, {"closers": []}, warmup_only=True)
        print(f"warm-up round: {cfg}, {max(self.a.warmup, 1)} untimed batches ({time.perf_counter() - t:.1f} s)")

    def _keep(self, rows: List[str], runs: Dict[str, List[Dict[str, Any]]]) -> None:
        merged = [merge_repeats(runs[c]) for c in rows if runs[c]]
        self.results.extend(merged)
        if self.a.repeats > 1:
            print(f"median of {self.a.repeats} repeats (every repeat's seeds/s, in repeat order):")
            for r in merged:
                if r.get("seeds_per_s"):
                    each = ", ".join("-" if v is None else f"{v:,.0f}" for v in r["seeds_per_s_repeats"])
                    print(f"{r['config']:18} {r['seeds_per_s']:10,.0f}   [{each}]")
                else:
                    print(f"{r['config']:18} skipped: {r.get('skipped') or r.get('error')}")

    def _one(self, cfg, model, fanouts, batch, placed, extra=None, repeat: int = 0) -> Dict[str, Any]:
        t = time.perf_counter()
        extra = {} if extra is None else extra
        extra.setdefault("closers", [])
        if cfg in MEMMAP_CONFIGS:
            extra.update(self.memmap_extra(cfg))
        limit = None
        try:
            if self.over_budget():
                r = dict(config=cfg, skipped=self.over_budget())
            elif cfg == "memmap-budget":
                headroom = _parse_size(self.a.memmap_headroom)
                limit = _MemoryLimit(self.budget_bytes + headroom)
                limit.__enter__()
                extra["memory_limit"] = limit.limit
                if limit.reason:
                    r = dict(config=cfg, model=model, fanouts=fanouts, batch_size=batch, skipped=limit.reason)
                else:
                    extra["memory_limit_note"] = f"cgroup v2 memory.max = budget {_fmt_bytes(self.budget_bytes)} + headroom {_fmt_bytes(headroom)}"
                    r = self.run(cfg, model, fanouts, batch, extra)
            elif cfg in TIERED_CONFIGS and "tiered" not in self.stores:
                r = dict(config=cfg, skipped="no tiered store")
            else:
                r = self.run(cfg, model, fanouts, batch, extra)
        finally:
            if limit is not None:
                limit.__exit__(None, None, None)
            if "memmap" in extra:
                extra["memmap"].close()
                extra.pop("memmap")
        r.update(model=model, fanouts=fanouts, batch_size=batch, elapsed_seconds=time.perf_counter() - t)
        if placed and cfg in TIERED_CONFIGS:
            r["placement"] = placed
        r["repeat"] = repeat
        _print_row(r, repeat if self.a.repeats > 1 else None)
        return r

    def sweep(self) -> None:
        a = self.a
        if not a.sweep_host or "tiered" not in self.stores:
            return
        if a.sweep_combo:
            m, f, b = a.sweep_combo.split(":")
            model, fanouts, batch = m, _list(f, int), int(b)
        else:
            model, fanouts, batch = a.models[0], a.fanouts[0], a.batch_sizes[0]
        print(f"\n== sweep: tierfs-pipelined, {_combo_name(model, fanouts, batch)}, GPU tier {a.gpu_frac if self.cuda else 0:g}, host tier "
              f"{', '.join(f'{h:g}' for h in a.sweep_host)} of the feature bytes")
        rows = []
        for h in a.sweep_host:
            if self.over_budget():
                print(f"  host {h:5.2f}: skipped: {self.over_budget()}")
                continue
            placed = self.place(fanouts, batch, h)
            t = time.perf_counter()
            r = self.run("tierfs-pipelined", model, fanouts, batch, {"closers": []})
            r.update(host_fraction=h if self.cuda else a.gpu_frac + h, gpu_fraction=a.gpu_frac if self.cuda else 0.0,
                     placement=placed, elapsed_seconds=time.perf_counter() - t)
            rows.append(r)
            print(f"  host {h:5.2f}: {r.get('seeds_per_s', 0):12,.0f} seeds/s, SSD rows/batch {r.get('ssd_rows_per_batch', 0):10,.0f} "
                  f"({r['elapsed_seconds']:.1f} s)")
        self.report["sweep"] = dict(model=model, fanouts=fanouts, batch_size=batch, points=rows)

    def close(self) -> None:
        for s in self.stores.values():
            s.close()


def _rotated(rows: List[str], k: int) -> List[str]:
    """Repeat k's order: rows rotated left by k, so each row takes every position in turn."""
    k %= max(1, len(rows))
    return rows[k:] + rows[:k]


def merge_repeats(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One configuration's result over its repeats: seeds/s (and the batch and epoch times) the
    median of the repeats that ran, every other figure from the repeat nearest that median (the
    earlier one on a tie); ``seeds_per_s_repeats`` lists every repeat's figure in repeat order
    (None where one did not run) and ``repeats`` holds every repeat's whole result. With no
    repeat that ran, the first repeat's result (its skip reason or error)."""
    ran = [r for r in runs if r.get("seeds_per_s")]
    base = runs[0]
    if ran:
        med = float(statistics.median(r["seeds_per_s"] for r in ran))
        base = min(ran, key=lambda r: (abs(r["seeds_per_s"] - med), r.get("repeat", 0)))
    out = dict(base)
    out["repeats"] = runs
    out["seeds_per_s_repeats"] = [r.get("seeds_per_s") for r in runs]
    if ran:
        scale = base["seeds_per_s"] / med
        out.update(seeds_per_s=med, batch_ms=base["batch_ms"] * scale, epoch_seconds=base["epoch_seconds"] * scale,
                   median_of=len(ran), figures_from_repeat=base.get("repeat", 0))
    return out


# report ----------------------------------------------------------------------------------------


def _print_header() -> None:
    print(f"{'configuration':18} {'seeds/s':>10} {'epoch s':>9} {'batch ms':>9} {'sample':>8} {'gather':>8} {'wait':>8} "
          f"{'train':>8} {'GPU ev':>7} {'GPU smi':>7} {'SSD rows':>9} {'elapsed':>8}")


def _print_row(r: Dict[str, Any], repeat: Optional[int] = None) -> None:
    name = r["config"] if repeat is None else f"{r['config']} #{repeat}"
    if r.get("skipped") or r.get("error"):
        print(f"{name:18} skipped: {r.get('skipped') or r.get('error')}")
        return
    s = r["stage_ms_per_batch"]
    pct = lambda v: "-" if v is None else f"{100 * v:.0f}%"  # noqa: E731
    ms = lambda k: f"{s[k]:.1f}" if k in s else "-"  # noqa: E731
    ssd = r.get("ssd_rows_per_batch", r.get("packed_rows_per_batch"))
    train = s.get("train_gpu", s.get("train_host"))
    print(f"{name:18} {r['seeds_per_s']:10,.0f} {r['epoch_seconds']:9.1f} {r['batch_ms']:9.1f} {ms('sample'):>8} {ms('gather'):>8} "
          f"{ms('wait'):>8} {train:8.1f} {pct(r.get('gpu_util_events')):>7} {pct(r.get('gpu_util_smi')):>7} "
          f"{'-' if ssd is None else f'{ssd:,.0f}':>9} {r['elapsed_seconds']:7.1f}s  ({r['timed_batches']} batches)")


def _ratio_by_repeat(rs: Dict[str, Dict[str, Any]], num: str, den: str) -> Optional[List[Optional[float]]]:
    """num ÷ den in each repeat (the two ran in the same round), or None without repeats."""
    a, b = rs.get(num, {}).get("repeats"), rs.get(den, {}).get("repeats")
    if not a or not b or len(a) < 2:
        return None
    return [x.get("seeds_per_s") / y["seeds_per_s"] if x.get("seeds_per_s") and y.get("seeds_per_s") else None for x, y in zip(a, b)]


def summarize(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per (model, fanouts, batch): the disk bound and the headline ratios, each of medians over
    the repeats (the limit is memory-gpu's median); with repeats, ``by_repeat`` gives the ratios
    to the limit within each round."""
    iops = (report.get("disk") or {}).get("iops_4k")
    combos: Dict[Tuple, Dict[str, Dict]] = {}
    for r in report["results"]:
        combos.setdefault((r["model"], tuple(r["fanouts"]), r["batch_size"]), {})[r["config"]] = r
    out = []
    for (model, fan, batch), rs in combos.items():
        sps = {c: r.get("seeds_per_s") for c, r in rs.items() if r.get("seeds_per_s")}
        ssd = next((rs[c].get("ssd_rows_per_batch") for c in ("tierfs-serial", "tierfs-pipelined") if c in rs and rs[c].get("ssd_rows_per_batch") is not None), None)
        # The disk bound counts distinct 4 KiB reads: several small rows of one block are one
        # read, a row across two blocks two. Older reports have rows only.
        blocks = next((rs[c].get("disk_blocks_per_batch") for c in ("tierfs-serial", "tierfs-pipelined") if c in rs and rs[c].get("disk_blocks_per_batch") is not None), ssd)
        bound = iops / blocks * batch if iops and blocks else None
        h: Dict[str, Any] = dict(model=model, fanouts=list(fan), batch_size=batch, ssd_rows_per_batch=ssd, disk_blocks_per_batch=blocks, disk_bound_seeds_per_s=bound)
        if iops and ssd == 0:
            h["disk_bound_note"] = "no SSD rows: the memory tiers held every row gathered"
        mem = sps.get("memory-gpu")
        if sps.get("memory-gpu-serial") and mem:
            h["memory_gpu_overlap_gain"] = mem / sps["memory-gpu-serial"]
        pipe = sps.get("tierfs-pipelined")
        if pipe and (mem or bound):
            lim = min(x for x in (mem, bound) if x)
            h["pipelined_over_limit"] = pipe / lim
            h["limit"] = "memory-gpu" if lim == mem else "disk bound"
        if sps.get("tierfs-cached") and mem:
            h["cached_over_memory_gpu"] = sps["tierfs-cached"] / mem
        for peer in ("memmap-cold", "memmap-budget"):
            if pipe and sps.get(peer):
                h[f"pipelined_over_{peer.replace('-', '_')}"] = pipe / sps[peer]
        if sps.get("tierfs-planned") and pipe:
            h["planned_over_pipelined"] = sps["tierfs-planned"] / pipe
        plan_s = rs.get("tierfs-planned", {}).get("plan_setup_seconds")
        if plan_s and mem:  # issue 27: planning keeps up when a batch plans faster than the limit trains one
            planned = (report.get("train_seeds", 0) // batch if report.get("planned_epoch") == "full"
                       else report.get("warmup", 0) + report.get("batches", 0))
            if planned:
                h["planning_over_limit"] = (plan_s / planned) / (batch / mem)
                replan_s = rs.get("tierfs-planned", {}).get("replan_seconds")
                if replan_s and report.get("planned_epoch") == "full":  # a later round of K epochs: no placement
                    k = rs["tierfs-planned"].get("replan_epochs", 1)
                    h["replanning_over_limit"] = (replan_s / (k * planned)) / (batch / mem)
                    h["replan_epochs"] = k
        rounds = rs.get("tierfs-rounds", {})
        if sps.get("tierfs-rounds") and mem:  # a whole run of fresh planned epochs against the limit
            h["rounds_over_limit"] = sps["tierfs-rounds"] / mem
            h.update({k: rounds.get(k) for k in ("run_epochs", "epochs_per_round", "later_waits", "later_wait_seconds", "first_plan_seconds")})
        by = {k: v for k, v in (("memory_gpu_overlap_gain", _ratio_by_repeat(rs, "memory-gpu", "memory-gpu-serial")),
                                ("cached_over_memory_gpu", _ratio_by_repeat(rs, "tierfs-cached", "memory-gpu")),
                                ("pipelined_over_memory_gpu", _ratio_by_repeat(rs, "tierfs-pipelined", "memory-gpu"))) if v}
        if by:
            h["by_repeat"] = by
        # same batches, same init: the loss of batch i of every configuration but planned, in
        # every repeat, agrees
        ls = [x["losses"] for c, r in rs.items() if c not in PLANNED_CONFIGS for x in r.get("repeats", [r]) if x.get("losses")]
        if len(ls) > 1:
            k = min(len(x) for x in ls)
            h["max_loss_diff"] = max(abs(x[i] - ls[0][i]) for x in ls for i in range(k)) if k else None
        out.append(h)
    return out


def print_summary(heads: List[Dict[str, Any]]) -> None:
    print("\nheadline (per model, fanouts, batch; medians over the repeats):")
    print(f"{'':28} {'SSD rows':>9} {'disk bound':>11} {'pipelined /':>12} {'cached /':>9} {'mem-gpu /':>9} {'tierfs /':>9} {'tierfs /':>9} {'max |dloss|':>11}")
    print(f"{'':28} {'per batch':>9} {'seeds/s':>11} {'min(mem,disk)':>12} {'mem-gpu':>9} {'serial':>9} {'mm-cold':>9} {'mm-budget':>9}")
    f = lambda v, p=3: "-" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))  # noqa: E731
    for h in heads:
        b = h.get("disk_bound_seeds_per_s")
        print(f"{_combo_name(h['model'], h['fanouts'], h['batch_size']):28} {f(h.get('ssd_rows_per_batch'), 0):>9} "
              f"{'-' if b is None else f'{b:,.0f}':>11} {f(h.get('pipelined_over_limit')):>12} "
              f"{f(h.get('cached_over_memory_gpu')):>9} {f(h.get('memory_gpu_overlap_gain')):>9} "
              f"{f(h.get('pipelined_over_memmap_cold')):>9} {f(h.get('pipelined_over_memmap_budget')):>9} "
              f"{f(h.get('max_loss_diff'), 2) if h.get('max_loss_diff') is None else format(h['max_loss_diff'], '.1e'):>11}")
        for k, vs in h.get("by_repeat", {}).items():
            print(f"{'':30}{k} by repeat: {', '.join(f(v) for v in vs)}")
        if h.get("planning_over_limit") is not None:
            print(f"{'':30}planning a batch / the limit training one: {f(h['planning_over_limit'])} (<= 1: planning keeps up)")
        if h.get("replanning_over_limit") is not None:
            print(f"{'':30}the same for a later round of {h.get('replan_epochs', 1)} epoch(s) (tiers already placed): {f(h['replanning_over_limit'])}")
        if h.get("rounds_over_limit") is not None:
            print(f"{'':30}a run of {h['run_epochs']} epochs planned in rounds of {h['epochs_per_round']} / the limit: {f(h['rounds_over_limit'])} "
                  f"(the first plan {h['first_plan_seconds']:.1f} s before it; training waited for {h['later_waits']} later round(s), "
                  f"{h['later_wait_seconds']:.1f} s)")


# plots -------------------------------------------------------------------------------------------


def plots(report: Dict[str, Any], outdir: str) -> List[str]:
    """epoch-time.png, stages.png and (with a sweep) seeds-vs-cache.png in outdir; [] without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: plots skipped; `python -m tierfs.benchtrain --plot-only out.json --plots DIR` on a machine with it")
        return []
    os.makedirs(outdir, exist_ok=True)
    ok = [r for r in report["results"] if r.get("seeds_per_s")]
    combos = list(dict.fromkeys(_combo_name(r["model"], r["fanouts"], r["batch_size"]) for r in ok))
    configs = [c for c in CONFIGS if any(r["config"] == c for r in ok)]
    written = []
    cols = min(4, max(1, len(combos)))
    rows_ = -(-len(combos) // cols) if combos else 1
    title = f"{report.get('device_name', '')}, {report.get('nodes', 0):,} nodes x {report.get('row_bytes', 0)} B"

    # 1. epoch time by configuration
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.4 * rows_), squeeze=False)
    for k, combo in enumerate(combos):
        ax = axes[k // cols][k % cols]
        rs = {r["config"]: r for r in ok if _combo_name(r["model"], r["fanouts"], r["batch_size"]) == combo}
        names = [c for c in configs if c in rs]
        ax.barh(names, [rs[c]["epoch_seconds"] for c in names], color=[f"C{configs.index(c)}" for c in names])
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_title(combo, fontsize=9)
        ax.set_xlabel("epoch time, s (log)")
        ax.tick_params(labelsize=8)
    for k in range(len(combos), rows_ * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle(f"Epoch time by configuration ({title})", fontsize=10)
    fig.tight_layout()
    p = os.path.join(outdir, "epoch-time.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)

    # 2. stage breakdown (ms per batch, stacked)
    stages = ["sample", "gather", "wait", "train"]
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.4 * rows_), squeeze=False)
    for k, combo in enumerate(combos):
        ax = axes[k // cols][k % cols]
        rs = {r["config"]: r for r in ok if _combo_name(r["model"], r["fanouts"], r["batch_size"]) == combo}
        names = [c for c in configs if c in rs]
        left = np.zeros(len(names))
        for j, s in enumerate(stages):
            vals = []
            for c in names:
                sm = rs[c]["stage_ms_per_batch"]
                if s == "train":
                    vals.append(sm.get("train_host", 0.0))
                elif s in ("sample", "gather") and "wait" in sm:
                    vals.append(0.0)  # memory-gpu's run on its thread, off the loop's path: its wait shows them
                else:
                    vals.append(sm.get(s, 0.0))
            ax.barh(names, vals, left=left, label=s, color=f"C{j}")
            left += np.array(vals)
        ax.plot([rs[c]["batch_ms"] for c in names], names, "k|", markersize=12, label="batch wall")
        ax.invert_yaxis()
        ax.set_title(combo, fontsize=9)
        ax.set_xlabel("ms per batch (host time in each stage)")
        ax.tick_params(labelsize=8)
        if k == 0:
            ax.legend(fontsize=7)
    for k in range(len(combos), rows_ * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle(f"Stage breakdown ({title})", fontsize=10)
    fig.tight_layout()
    p = os.path.join(outdir, "stages.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)

    # 3. seeds/s vs host cache size
    sw = report.get("sweep")
    if sw and sw.get("points"):
        pts = [r for r in sw["points"] if r.get("seeds_per_s")]
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        ax.plot([100 * r["host_fraction"] for r in pts], [r["seeds_per_s"] for r in pts], "o-", label="tierfs-pipelined")
        combo = _combo_name(sw["model"], sw["fanouts"], sw["batch_size"])
        ref = {r["config"]: r for r in ok if _combo_name(r["model"], r["fanouts"], r["batch_size"]) == combo}
        for c, style in (("memory-gpu", "--"), ("memmap-cold", ":")):
            if c in ref:
                ax.axhline(ref[c]["seeds_per_s"], linestyle=style, color="gray", label=c)
        iops = (report.get("disk") or {}).get("iops_4k")
        if iops:
            per = [(r, r.get("disk_blocks_per_batch") or r.get("ssd_rows_per_batch")) for r in pts]
            xs = [100 * r["host_fraction"] for r, b in per if b]
            ys = [iops / b * sw["batch_size"] for r, b in per if b]
            if xs:
                ax.plot(xs, ys, "x:", color="C3", label="disk bound")
        ax.set_xlabel(f"host tier, % of feature bytes (GPU tier {100 * pts[0].get('gpu_fraction', 0):g}%)" if pts else "host tier %")
        ax.set_ylabel("seeds/s")
        ax.set_yscale("log")
        ax.set_title(f"seeds/s vs cache size: {combo}", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = os.path.join(outdir, "seeds-vs-cache.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    for p in written:
        print(f"wrote {p}")
    return written


# main ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.plot_only:
        with open(a.plot_only) as f:
            report = json.load(f)
        plots(report, a.plots or os.path.dirname(os.path.abspath(a.plot_only)))
        return 0
    t_all = time.perf_counter()
    print(f"tierfs bench train: seed {a.seed} (batch order, sampler, model init); configurations {', '.join(a.configs)}")
    b = Bench(a)
    try:
        b.setup()
        r = b.report
        print(f"{r['nodes']:,} nodes x {r['row_bytes']} B ({_fmt_bytes(r['feature_bytes'])} of features), {r['train_seeds']:,} train seeds; "
              f"{r['device_name']}, torch {r['torch']}, {r['cpus']} CPUs; sampler: {r['sampler']}; setup {r['setup_seconds']:.1f} s")
        print("columns: ms per batch of host time in each stage (wait: blocked on the loader); train = GPU time of the step when on CUDA;"
              " GPU ev = CUDA-event busy share of the step, smi = nvidia-smi utilization")
        _print_header()
        b.run_all()
        b.sweep()
    finally:
        b.report["results"] = b.results
        b.close()
    report = b.report
    report["summary"] = summarize(report)
    report["total_seconds"] = time.perf_counter() - t_all
    print_summary(report["summary"])
    print(f"\ntotal {report['total_seconds']:.1f} s")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
        print(f"wrote {a.json}")
    if a.plots:
        plots(report, a.plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
