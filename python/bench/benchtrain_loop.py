"""benchtrain's training loop: one run of a configuration (warm-up, then the timed window), the
model step, and the figures of the run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from benchtrain_config import (
    GPU_MEMORY_CONFIGS,
    LOADER_CONFIGS,
    MEMMAP_CONFIGS,
    MEMORY_CONFIGS,
    PLANNED_CONFIGS,
    PREFETCHED_CONFIGS,
    TIERED_CONFIGS,
)
from benchtrain_host import _proc_read_bytes, _SmiSampler


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


class TrainLoop:
    """Bench's runs (a mixin of Bench: they use its stores, model, device and options)."""

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
