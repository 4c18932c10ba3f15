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

This module holds Bench's setup and the order of the runs, and main; the modules beside it the
rest: benchtrain_config (the configurations, the command line), benchtrain_host (the feature file
through np.memmap, page-cache eviction, the cgroup memory limit, nvidia-smi, the disk probe),
benchtrain_fetch (each configuration's batches), benchtrain_loop (one run: the training loop and
its figures) and benchtrain_report (the medians of the repeats, the printed table and headline,
the plots).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import numpy as np

from benchtrain_config import (
    CONFIGS,
    DEFAULT_CONFIGS,
    GPU_MEMORY_CONFIGS,
    MEMMAP_CONFIGS,
    MEMORY_CONFIGS,
    PLANNED_CONFIGS,
    TIERED_CONFIGS,
    _combo_name,
    _fmt_bytes,
    _list,
    _parse_size,
    parse_args,
)
from benchtrain_fetch import FetchPaths
from benchtrain_host import _drop_caches, _evict, _Memmap, _MemoryLimit, measure_disk
from benchtrain_loop import TrainLoop
from benchtrain_report import _print_header, _print_row, merge_repeats, plots, print_summary, summarize

# What callers import from benchtrain, whichever module holds it (python/tests import _Memmap from
# here too).
__all__ = ["Bench", "CONFIGS", "DEFAULT_CONFIGS", "main", "parse_args"]


class Bench(FetchPaths, TrainLoop):
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
