"""benchtrain's results: the repeats merged into medians, the printed table and headline, and the
plots."""

from __future__ import annotations

import os
import statistics
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from benchtrain_config import CONFIGS, PLANNED_CONFIGS, _combo_name


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
        print("no matplotlib: plots skipped; `python3 -m benchtrain --plot-only out.json --plots DIR` (python/bench on PYTHONPATH; "
              "or `tierfs bench train --plot-only ...`) on a machine with it")
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

