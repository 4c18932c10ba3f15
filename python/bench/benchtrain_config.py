"""benchtrain's configurations and its command line (``tierfs bench train --help``), and the small
formatting helpers its other modules share."""

from __future__ import annotations

import argparse
from typing import List

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
