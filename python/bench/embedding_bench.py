#!/usr/bin/env python3
"""Trainable embeddings: seeds/s of a training loop whose table is 5x its cache (tierfs.Embedding,
on disk behind a host page cache of 1/--cache-ratio of the table) against the same loop with the
table in device memory (torch.nn.Embedding(sparse=True) + torch.optim.SparseAdam), issue 45.

    python python/bench/embedding_bench.py [--rows 1000000] [--dim 64] [--batch 1024] [--fanout 10]
        [--steps 50] [--device cuda] [--dir DIR] [--disk-iops N | --disk-json disk.json] [--out r.json]

A step: --batch seed ids and --fanout "neighbor" ids each, uniform over the rows (a sampled
neighborhood of a graph whose ids are in no useful order; the cache's worst case), their rows
gathered (a seed's row concatenated with the mean of its neighbors' rows), a linear classifier on
them, cross-entropy against labels of the seeds' ids, backward, Adam for the classifier and
SparseAdam for the table (lr 0.01). Both arms draw the same stream of ids; tierfs's warms up
longer (--warmup steps and until its cache is full, so that every miss evicts). The arm
"tierfs-reread" is tierfs's with the step reading the batch's slots again after the forward
(the module before its forward kept them), for --arms tierfs-reread,tierfs. The arm "tierfs-gpu"
is tierfs's with a device tier (``gpu_cache=``): the same cache budget (the table over
--cache-ratio) split, --gpu-share of it to the tier (the rows the store's placement ranks hottest,
with their state, on --device) and the rest to the host page cache. The tier needs a store, so
the arm opens a dataset of --rows nodes synthesized in --dir (`tierfs synth`; not timed) on
--device; without CUDA it runs with the tier on the host (a CPU store's tier is a host tensor),
for --arms memory,tierfs,tierfs-gpu.

Printed and written to --out (JSON): seeds/s of each arm and their ratio; the tierfs table's
cache counters over the timed steps (pages read and written a step; tierfs-gpu: also its tier's hits and misses, rows); the distinct 4 KiB pages a
step touches; the disk bound, the disk's 4 KiB IOPS over the pages a step reads plus writes
(measured, and the worst case of every distinct page read and written); the seconds to create
the table (its initial rows written and checkpointed, and opened) and one checkpoint after the
timed steps (the dirty pages and the page map: the changed pages only). The disk's IOPS: --disk-iops, else --disk-json (`tierfs bench
disk --json`), else `tierfs bench disk` on a small dataset synthesized in --dir.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List

import torch
import torch.nn.functional as F

import tierfs
from benchtrain_host import _find_cli, measure_disk

CLASSES = 16
SLOT_COPIES = 3  # adam: the row, exp_avg, exp_avg_sq
TIERFS_ARMS = ("tierfs", "tierfs-reread", "tierfs-gpu")
GPU_COUNTERS = ("hits", "misses")  # the device tier's, rows
COUNTERS = ("pages_read", "pages_written", "hits", "misses", "evictions")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch", type=int, default=1024, help="seeds a step")
    p.add_argument("--fanout", type=int, default=10, help="neighbor ids a seed")
    p.add_argument("--steps", type=int, default=50, help="timed steps an arm")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (tierfs: and until its cache is full)")
    p.add_argument("--cache-ratio", type=float, default=5.0, help="the table's bytes over its host cache's")
    p.add_argument("--gpu-share", type=float, default=0.5,
                   help="tierfs-gpu: the device tier's part of the cache budget (the rest: the host cache)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dir", default="", help="where the table goes (default: a temporary directory under /var/tmp)")
    p.add_argument("--disk-iops", type=float, default=0.0, help="4 KiB IOPS of the table's disk")
    p.add_argument("--disk-json", default="", help="`tierfs bench disk --json` of the table's disk")
    p.add_argument("--tierfs-bin", default="", help="the tierfs CLI (default: $TIERFS_BIN, build/tierfs, tierfs on PATH)")
    p.add_argument("--arms", default="memory,tierfs")
    p.add_argument("--repeat", type=int, default=1, help="runs of each arm, alternating; the median is reported")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--out", default="")
    return p.parse_args(argv)


def table_bytes(rows: int, dim: int) -> int:
    """The table's pages' bytes (embedding/pages.go: slots never span a page, an 8 B trailer)."""
    slot = dim * 4 * SLOT_COPIES
    page = (slot + 8 + 4095) // 4096 * 4096
    per_page = (page - 8) // slot
    return (rows + per_page - 1) // per_page * page


def batches(a: argparse.Namespace):
    gen = torch.Generator().manual_seed(a.seed)
    while True:
        yield torch.randint(0, a.rows, (a.batch, 1 + a.fanout), generator=gen)


def warm(arm: str, emb: Any, out: Dict[str, Any], k: int, a: argparse.Namespace) -> bool:
    """Whether step k is a warm-up step: the first --warmup, and for tierfs until its cache is
    full (every later miss evicts), at most 1,000 more."""
    if k < a.warmup:
        return True
    if arm not in TIERFS_ARMS or k >= a.warmup + 1000:
        return False
    st = emb.stats()  # cache_pages: its frames; misses - evictions: those filled
    return st["misses"] - st["evictions"] < st["cache_pages"]


def open_store(a: argparse.Namespace, root: str) -> Any:
    """A store of --rows nodes on --device (tierfs-gpu's device tier needs one): a dataset
    synthesized in root (features of dim 4, in-degree 1: the placement ranks by it)."""
    cli = _find_cli(a.tierfs_bin)
    if cli is None:
        raise SystemExit("embedding_bench: tierfs-gpu needs the tierfs CLI to synthesize its store (--tierfs-bin)")
    data = os.path.join(root, "store")
    if not os.path.exists(os.path.join(data, "manifest.json")):
        subprocess.run([cli, "synth", "--nodes", str(a.rows), "--dim", "4", "--avg-degree", "1", "--seed", str(a.seed + 1),
                        "--out", data, "--force"], check=True, capture_output=True)
    return tierfs.open(data, host_cache="1MiB", device=a.device)


def run(arm: str, a: argparse.Namespace, path: str, root: str = "") -> Dict[str, Any]:
    dev = torch.device(a.device)
    out: Dict[str, Any] = {"arm": arm}
    store = None
    if arm == "tierfs-gpu":
        t = time.perf_counter()
        store = open_store(a, root or os.path.dirname(path))
        out["store_s"] = time.perf_counter() - t
    t = time.perf_counter()
    if arm in TIERFS_ARMS:
        cache = int(table_bytes(a.rows, a.dim) / a.cache_ratio)
        gpu = int(cache * a.gpu_share) if arm == "tierfs-gpu" else 0
        emb = tierfs.Embedding(store, None, a.dim, path, optimizer="adam", lr=0.01, num_embeddings=None if store else a.rows,
                               seed=a.seed, host_cache=cache - gpu, gpu_cache=gpu or None)
        info = emb.info
        out.update(table_bytes=info["pages"] * info["page_bytes"], host_cache_bytes=info["host_cache_bytes"],
                   page_bytes=info["page_bytes"], rows_per_page=info["rows_per_page"], direct_io=info["direct_io"])
        if store is not None:
            g = emb.stats()["gpu"]
            out.update(gpu_cache_bytes=gpu, gpu_share=a.gpu_share, gpu_tier_device=g["device"],
                       gpu_capacity_rows=g["capacity_rows"], gpu_rows_held=g["rows_held"], gpu_bytes_held=g["bytes_held"])
        emb._keep_slots = arm != "tierfs-reread"  # tierfs-reread: the step reads the slots again
        opt_emb = emb
    else:
        emb = torch.nn.Embedding(a.rows, a.dim, sparse=True).to(dev)
        opt_emb = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    out["create_s"] = time.perf_counter() - t
    head = torch.nn.Linear(2 * a.dim, CLASSES).to(dev)
    opt = torch.optim.Adam(head.parameters(), lr=0.01)

    spent = {"gather": 0.0, "emb_step": 0.0}  # tierfs: its two calls, synchronous on the host

    def step(ids: torch.Tensor) -> torch.Tensor:
        ids = ids.to(dev)
        t0 = time.perf_counter()
        rows = emb(ids)
        spent["gather"] += time.perf_counter() - t0
        h = torch.cat([rows[:, 0], rows[:, 1:].mean(1)], dim=1)
        loss = F.cross_entropy(head(h), ids[:, 0] % CLASSES)
        opt.zero_grad()
        opt_emb.zero_grad()
        loss.backward()
        opt.step()
        t0 = time.perf_counter()
        opt_emb.step()
        spent["emb_step"] += time.perf_counter() - t0
        return loss

    it, k = batches(a), 0
    while warm(arm, emb, out, k, a):
        step(next(it))
        k += 1
    if dev.type == "cuda":
        torch.cuda.synchronize()
    out["warmup_steps"] = k
    before = emb.stats() if arm in TIERFS_ARMS else {}
    pages = 0
    spent.update(gather=0.0, emb_step=0.0)
    t = time.perf_counter()
    for _ in range(a.steps):
        ids = next(it)
        if arm in TIERFS_ARMS:
            pages += int(torch.unique(ids.reshape(-1) // out["rows_per_page"]).numel())
        loss = step(ids)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    out.update(seconds=dt, steps=a.steps, seeds_per_s=a.steps * a.batch / dt, loss=float(loss.detach()))
    if arm in TIERFS_ARMS:
        after = emb.stats()
        out["stats"] = {k: after[k] - before[k] for k in COUNTERS}  # the gauges (dirty, cache_pages): at the end
        out["stats_at_end"] = after
        if "gpu" in after:  # the device tier's rows served (hits) and not held (misses)
            out["gpu_stats"] = {k: after["gpu"][k] - before["gpu"][k] for k in GPU_COUNTERS}
            n = sum(out["gpu_stats"].values())
            out["gpu_hit_rate"] = out["gpu_stats"]["hits"] / n if n else None
        out["gather_s"], out["emb_step_s"] = spent["gather"], spent["emb_step"]
        out["distinct_pages_per_step"] = pages / a.steps
        out["pages_read_per_step"] = out["stats"]["pages_read"] / a.steps
        out["pages_written_per_step"] = out["stats"]["pages_written"] / a.steps
        out["write_ios_per_step"] = (after.get("write_ios", 0) - before.get("write_ios", 0)) / a.steps  # adjacent pages merge
        t = time.perf_counter()
        emb.checkpoint()
        out["checkpoint_s"] = time.perf_counter() - t
        emb.close()
    if store is not None:
        store.close()
    return out


def disk_iops(a: argparse.Namespace, root: str) -> Dict[str, Any]:
    """measure_disk (benchtrain's), on a dataset of 200k rows synthesized next to the table."""
    if a.disk_iops > 0 or a.disk_json:
        return measure_disk("", a)
    probe = os.path.join(root, "disk-probe")
    cli = _find_cli(a.tierfs_bin)
    if cli is None:
        return {"source": "none (no tierfs CLI: give --disk-iops)", "iops_4k": 0.0}
    subprocess.run([cli, "synth", "--nodes", "200000", "--dim", "128", "--avg-degree", "2", "--out", probe, "--force"],
                   check=True, capture_output=True)
    return measure_disk(probe, a)


def report_reread(res: Dict[str, Any], a: argparse.Namespace) -> None:
    """Prints tierfs-reread's pages and times a step, and tierfs's seeds/s over its."""
    r = res["tierfs-reread"]
    print(f"tierfs-reread: a step {r['pages_read_per_step']:,.0f} pages read + {r['pages_written_per_step']:,.0f} written "
          f"({r['distinct_pages_per_step']:,.0f} distinct); forward {r['gather_s'] / a.steps * 1e3:.1f} ms and step "
          f"{r['emb_step_s'] / a.steps * 1e3:.1f} ms a step")
    if "tierfs" in res:
        res["ratio_over_reread"] = res["tierfs"]["seeds_per_s"] / r["seeds_per_s"]
        print(f"tierfs / tierfs-reread: {res['ratio_over_reread']:.3f} (medians of {a.repeat}: "
              f"{[round(x) for x in res['tierfs']['repeats_seeds_per_s']]} / {[round(x) for x in r['repeats_seeds_per_s']]})")


def report_gpu(res: Dict[str, Any], a: argparse.Namespace) -> None:
    """Prints tierfs-gpu's caches, its counters (the page cache's and the device tier's), and its
    seeds/s over tierfs's and memory's."""
    r = res["tierfs-gpu"]
    g = r["gpu_stats"]
    rate = f"{r['gpu_hit_rate']:.3f}" if r["gpu_hit_rate"] is not None else "-"
    print(f"tierfs-gpu: device tier {r['gpu_cache_bytes'] / 2**20:,.1f} MiB on {r['gpu_tier_device']} "
          f"({r['gpu_rows_held']:,} of {a.rows:,} rows; --gpu-share {a.gpu_share}), host cache {r['host_cache_bytes'] / 2**20:,.1f} MiB; "
          f"a step: {r['pages_read_per_step']:,.0f} pages read + {r['pages_written_per_step']:,.0f} written "
          f"({r['distinct_pages_per_step']:,.0f} distinct); forward {r['gather_s'] / a.steps * 1e3:.1f} ms and step "
          f"{r['emb_step_s'] / a.steps * 1e3:.1f} ms a step; {r['warmup_steps']} warm-up steps; checkpoint {r['checkpoint_s']:.2f} s")
    print(f"tierfs-gpu stats over the timed steps: {json.dumps(r['stats'])}; device tier rows: {json.dumps(g)} "
          f"(hit rate {rate}); at the end: {json.dumps(r['stats_at_end'])}")
    for other, key in (("tierfs", "ratio_gpu_over_tierfs"), ("memory", "ratio_gpu_over_memory")):
        if other in res:
            res[key] = r["seeds_per_s"] / res[other]["seeds_per_s"]
            print(f"tierfs-gpu / {other}: {res[key]:.3f} (medians of {a.repeat})")


def main(argv=None) -> Dict[str, Any]:
    a = parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    base = a.dir or tempfile.mkdtemp(prefix="tierfs-embedding-bench-", dir="/var/tmp")
    os.makedirs(base, exist_ok=True)
    root = tempfile.mkdtemp(prefix="run-", dir=base)
    res: Dict[str, Any] = {"args": vars(a), "device": a.device}
    if a.device.startswith("cuda"):
        res["gpu"] = torch.cuda.get_device_name()
    runs: Dict[str, List[Dict[str, Any]]] = {arm: [] for arm in a.arms.split(",")}
    for rep in range(a.repeat):
        for arm in runs:
            r = run(arm, a, os.path.join(root, f"table-{rep}"), root)
            shutil.rmtree(os.path.join(root, f"table-{rep}"), ignore_errors=True)
            runs[arm].append(r)
            print(f"{arm}: {r['seeds_per_s']:,.0f} seeds/s ({r['steps']} steps in {r['seconds']:.2f} s; "
                  f"created in {r['create_s']:.2f} s)", flush=True)
    for arm, rs in runs.items():  # the run of median seeds/s
        res[arm] = sorted(rs, key=lambda r: r["seeds_per_s"])[len(rs) // 2]
        res[arm]["repeats_seeds_per_s"] = [r["seeds_per_s"] for r in rs]
    if "tierfs" in res:
        r = res["tierfs"]
        disk = disk_iops(a, root)
        res["disk"] = disk
        iops = float(disk.get("iops_4k") or 0.0)
        io = r["pages_read_per_step"] + r["pages_written_per_step"]
        res["disk_bound_seeds_per_s"] = iops / io * a.batch if io and iops else None
        res["disk_bound_worst_seeds_per_s"] = iops / (2 * r["distinct_pages_per_step"]) * a.batch if iops else None
        print(f"tierfs table {r['table_bytes'] / 2**20:,.1f} MiB, host cache {r['host_cache_bytes'] / 2**20:,.1f} MiB, "
              f"direct_io {r['direct_io']}; a step: {r['distinct_pages_per_step']:,.0f} distinct pages, "
              f"{r['pages_read_per_step']:,.0f} read + {r['pages_written_per_step']:,.0f} written; forward {r['gather_s'] / a.steps * 1e3:.1f} ms "
              f"and step {r['emb_step_s'] / a.steps * 1e3:.1f} ms a step; {r['warmup_steps']} warm-up steps; checkpoint {r['checkpoint_s']:.2f} s")
        print(f"tierfs stats over the timed steps: {json.dumps(r['stats'])}; at the end: {json.dumps(r['stats_at_end'])}")
        if iops:
            print(f"disk: {iops:,.0f} 4 KiB IOPS ({disk['source']}); bound {res['disk_bound_seeds_per_s']:,.0f} seeds/s "
                  f"(every distinct page read and written: {res['disk_bound_worst_seeds_per_s']:,.0f})")
        if "memory" in res:
            res["ratio"] = r["seeds_per_s"] / res["memory"]["seeds_per_s"]
            print(f"tierfs / memory: {res['ratio']:.3f} (medians of {a.repeat})")
    if "tierfs-reread" in res:
        report_reread(res, a)
    if "tierfs-gpu" in res:
        report_gpu(res, a)
    shutil.rmtree(root, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
