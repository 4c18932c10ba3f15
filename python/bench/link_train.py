#!/usr/bin/env python3
"""Link-prediction training throughput: tierfs against the best in-memory loop (issue 26).

    python python/bench/link_train.py DATASET [--fanouts 10,5] [--batch 1024] [--gpu-frac 0.1 --host-frac 0.2]

Both loops train the same link predictor (PyG GraphSAGE, hidden 256, a dot-product decoder,
binary cross-entropy) on batches of seed edges drawn from the graph, with one negative
destination a seed edge ("binary", ratio 1) and the seed edges left out of their own
neighborhoods, sampled by the same tierfs sampler (``sample_from_edges``) on a thread, so
sampling overlaps training in both:

* memory: the features in a CUDA tensor, gathered by index_select on a side stream while the
  previous batch trains (the best in-memory loop a user would write);
* tierfs: a store with GPU and host tiers of --gpu-frac / --host-frac of the feature bytes
  (placed with ``store.place`` unless --no-place), its rows gathered on the GPU on a side stream
  while the previous batch trains.

Printed and written to --out (JSON): seed edges/s of each and their ratio, the rows a batch
reads and how many of them come from the SSD, the distinct 4 KiB blocks read a batch, and the
disk bound when --disk-iops is given. Runs --repeat times, alternating the two loops.
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import time
from typing import Any, Dict, Optional

import numpy as np
import torch

import tierfs


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset")
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--batch", type=int, default=1024, help="seed edges a batch (each with one negative)")
    p.add_argument("--batches", type=int, default=30, help="timed batches a run")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--gpu-frac", type=float, default=0.1)
    p.add_argument("--host-frac", type=float, default=0.2)
    p.add_argument("--no-place", action="store_true", help="keep the ranking at open instead of store.place(fanouts, batch)")
    p.add_argument("--disk-iops", type=float, default=0.0, help="4 KiB IOPS of the disk, for the disk bound")
    p.add_argument("--drop-caches", action="store_true", help="drop the page cache before each tierfs run (root)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--arms", default="memory,tierfs",
                   help="loops to time, alternating: memory, tierfs (on demand) and planned (one epoch of the timed batches' seed edges planned first)")
    p.add_argument("--disk-bps", type=float, default=0.0,
                   help="the disk's sequential read bandwidth, bytes/s (`tierfs bench disk`), for the planned arm's bound")
    p.add_argument("--plan-dir", default="", help="where the planned arm's plan goes (default: a temporary directory)")
    p.add_argument("--out", default="")
    return p.parse_args(argv)


class LinkModel(torch.nn.Module):
    def __init__(self, dim: int, hidden: int, layers: int):
        super().__init__()
        from torch_geometric.nn import GraphSAGE

        self.gnn = GraphSAGE(dim, hidden, num_layers=layers)

    def forward(self, x, edge_index, edge_label_index):
        h = self.gnn(x, edge_index)
        return (h[edge_label_index[0]] * h[edge_label_index[1]]).sum(-1)


def seed_edges(store, n: int, seed: int) -> tuple:
    """n edges of the graph, found by sampling one in-neighbor of random nodes."""
    rng = np.random.default_rng(seed)
    sp = store.sampler([1], seed=seed)
    src, dst = [], []
    while sum(len(s) for s in src) < n:
        s = sp.sample(rng.integers(0, store.num_nodes(), 4 * n))
        nodes = np.asarray(s.nodes)
        src.append(nodes[np.asarray(s.row)])
        dst.append(nodes[np.asarray(s.col)])
    sp.close()
    return np.concatenate(src)[:n], np.concatenate(dst)[:n]


def on_demand(a, sampler, src, dst):
    """draw(i) of the on-demand arms: the sample of seed edges [i*batch, (i+1)*batch)."""
    def draw(i):
        lo = i * a.batch
        return sampler.sample_from_edges(src[lo:lo + a.batch], dst[lo:lo + a.batch], neg_sampling="binary", exclude_seed_edges=True)
    return draw


def run(a, store, draw, fetch, model, device, record: Optional[Dict[str, Any]]) -> float:
    """One pipelined run: a sampling thread (draw(i) -> LinkSample), a fetch thread on its own
    stream (fetch(i, nodes)), training on this one. Returns seed edges/s over the timed batches."""
    n_batches = a.warmup + a.batches
    q_s: "queue.Queue" = queue.Queue(maxsize=4)
    q_f: "queue.Queue" = queue.Queue(maxsize=2)

    def sample_loop():
        for i in range(n_batches):
            q_s.put((i, draw(i)))
        q_s.put(None)

    stream = torch.cuda.Stream(device) if device.type == "cuda" else None

    def fetch_loop():
        fetched = 0
        while True:
            item = q_s.get()
            if item is None:
                if record is not None:
                    if stream is not None:
                        stream.synchronize()
                    record["stats1"] = store.stats()
                    record["plan1"] = record["plan_stats"]()
                q_f.put(None)
                return
            i, s = item
            if record is not None and fetched == a.warmup:
                if stream is not None:
                    stream.synchronize()
                record["stats0"] = store.stats()
                record["plan0"] = record["plan_stats"]()
            if record is not None and fetched >= a.warmup:
                record["rows"].append(len(s.nodes))
            fetched += 1
            with (torch.cuda.stream(stream) if stream is not None else _Null()):
                x = fetch(i, np.asarray(s.nodes))
                ei = torch.from_numpy(np.stack([np.asarray(s.row), np.asarray(s.col)])).to(device, non_blocking=True)
                eli = torch.from_numpy(np.asarray(s.edge_label_index)).to(device, non_blocking=True)
                lab = torch.from_numpy(np.asarray(s.edge_label)).to(device, non_blocking=True)
                ev = None
                if stream is not None:
                    ev = torch.cuda.Event()
                    ev.record(stream)
            q_f.put((x, ei, eli, lab, ev))

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    threads = [threading.Thread(target=sample_loop, daemon=True), threading.Thread(target=fetch_loop, daemon=True)]
    for t in threads:
        t.start()
    start, done = None, 0
    for i in range(n_batches):
        if i == a.warmup:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
        x, ei, eli, lab, ev = q_f.get()
        if ev is not None:
            main = torch.cuda.current_stream(device)
            main.wait_event(ev)
            for t in (x, ei, eli, lab):
                t.record_stream(main)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x.float(), ei, eli), lab.float())
        loss.backward()
        opt.step()
        if i >= a.warmup:
            done += a.batch
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    for t in threads:
        t.join()
    return done / elapsed


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None) -> Dict[str, Any]:
    a = parse_args(argv)
    arms = a.arms.split(",")
    if not set(arms) <= {"memory", "tierfs", "planned"}:
        raise SystemExit(f"--arms {a.arms}: want memory, tierfs and planned")
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    fanouts = [int(f) for f in a.fanouts.split(",")]
    probe = tierfs.open(a.dataset)
    total = probe.num_nodes() * probe.row_bytes
    src, dst = seed_edges(probe, (a.warmup + a.batches) * a.batch, seed=11)
    probe.close()
    store = tierfs.open(a.dataset, device=a.device if cuda else None, gpu_cache=int(total * a.gpu_frac) if cuda else 0,
                        host_cache=int(total * a.host_frac), gpu_topology="device" if cuda else None,
                        topology_memory=64 << 30)
    placed = None
    if not a.no_place:
        t0 = time.perf_counter()
        placed = store.place(fanouts=fanouts, batch_size=a.batch)
        placed = {"seconds": time.perf_counter() - t0, **({k: v for k, v in placed.items() if not isinstance(v, (list, dict))} if isinstance(placed, dict) else {})}
    t0 = time.perf_counter()
    x_all = torch.empty((store.num_nodes(), store.dim), dtype=getattr(torch, str(store.dtype)), device=device)
    for lo in range(0, store.num_nodes(), 1 << 20):
        ids = np.arange(lo, min(store.num_nodes(), lo + (1 << 20)))
        x_all[lo:lo + len(ids)].copy_(torch.as_tensor(store.gather(ids)))
    load_s = time.perf_counter() - t0

    def fetch_memory(i, nodes):
        return x_all.index_select(0, torch.from_numpy(nodes).to(device, non_blocking=True))

    def fetch_tierfs(i, nodes):
        return torch.as_tensor(store.gather(torch.from_numpy(nodes).to(device, non_blocking=True) if cuda else nodes))

    def fetch_planned(i, nodes):
        return plan.gather_device(0, i, nodes) if cuda else torch.as_tensor(plan.gather(0, i, nodes))

    results: Dict[str, Any] = {"dataset": a.dataset, "fanouts": fanouts, "batch": a.batch, "hidden": a.hidden, "feature_bytes": total,
                               "gpu_cache": int(total * a.gpu_frac) if cuda else 0, "host_cache": int(total * a.host_frac),
                               "placed": placed, "load_into_gpu_s": load_s, "arms": arms, "runs": []}
    if cuda:
        results["gpu"] = torch.cuda.get_device_name(device)
    plan = None
    if "planned" in arms:
        t0 = time.perf_counter()
        plan = store.plan_epochs(fanouts, a.batch, 1, seed_edges=np.stack([src, dst]), neg_sampling="binary", exclude_seed_edges=True,
                                 seed=1, shuffle_seed=3, drop_last=True, plan_dir=a.plan_dir or None,
                                 place_tiers=False)  # as hetero_train's plan: the tiers keep what they hold
        results["plan"] = {"plan_s": time.perf_counter() - t0, "stats": plan.stats()}
        print(f"planned {plan.batches_per_epoch} batches in {results['plan']['plan_s']:.1f} s", flush=True)
    fetches = {"memory": fetch_memory, "tierfs": fetch_tierfs, "planned": fetch_planned}
    sampler = store.sampler(fanouts, seed=1)
    for r in range(a.repeat):
        row: Dict[str, Any] = {}
        for arm in arms:
            if arm != "memory" and a.drop_caches:
                try:
                    with open("/proc/sys/vm/drop_caches", "w") as f:
                        f.write("3\n")
                except OSError as e:
                    row["drop_caches"] = str(e)
            torch.manual_seed(0)
            model = LinkModel(store.dim, a.hidden, len(fanouts)).to(device)
            draw = (lambda i: plan.sample(0, i)) if arm == "planned" else on_demand(a, sampler, src, dst)
            rec: Dict[str, Any] = {"rows": [], "plan_stats": plan.stats if arm == "planned" else dict}
            row[arm] = run(a, store, draw, fetches[arm], model, device, rec)
            if arm != "memory":
                row[arm + "_ratio"] = row[arm] / row["memory"] if "memory" in row else None
                row[arm + "_report"] = read_report(a, rec)
        results["runs"].append(row)
        print(f"run {r}: " + ", ".join(f"{arm} {row[arm]:,.0f} seed edges/s" + (f" ({row[arm + '_ratio']:.3f} of memory)" if row.get(arm + "_ratio") else "") for arm in arms), flush=True)
        for arm in arms:
            if arm + "_report" in row:
                print("   " + arm + ": " + ", ".join(f"{k} {v:,.1f}" for k, v in row[arm + "_report"].items()), flush=True)
    for arm in arms:
        if arm != "memory" and "memory" in arms:
            results[f"median_{arm}_ratio"] = float(np.median([x[arm + "_ratio"] for x in results["runs"]]))
            print(f"median {arm} / memory: {results[f'median_{arm}_ratio']:.3f} over {a.repeat} runs")
    sampler.close()
    if plan is not None:
        plan.close()
    store.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    return results


def read_report(a, rec: Dict[str, Any]) -> Dict[str, float]:
    """What the timed batches read: rows a batch and from the SSD, distinct 4 KiB blocks (the
    on-demand disk bound at --disk-iops), packed bytes a batch (the planned bound at --disk-bps)."""
    s0, s1, p0, p1 = rec["stats0"], rec["stats1"], rec["plan0"], rec["plan1"]
    h0 = {t["tier"]: t["hits"] for t in s0["tiers"]}
    h1 = {t["tier"]: t["hits"] for t in s1["tiers"]}
    out = {"rows_per_batch": float(np.mean(rec["rows"])), "ssd_rows_per_batch": (h1["ssd"] - h0["ssd"]) / a.batches,
           "disk_blocks_per_batch": (s1["io"]["bytes_read"] - s0["io"]["bytes_read"]) / 4096 / a.batches}
    if a.disk_iops and out["disk_blocks_per_batch"] > 0:
        out["disk_bound_edges_per_s"] = a.disk_iops / out["disk_blocks_per_batch"] * a.batch
    if p1:
        out["packed_mb_per_batch"] = (p1["bytes_read"] - p0["bytes_read"]) / a.batches / 1e6
        out["sample_mb_per_batch"] = (p1["sample_bytes_read"] - p0["sample_bytes_read"]) / a.batches / 1e6
        if a.disk_bps:
            mb = out["packed_mb_per_batch"] + out["sample_mb_per_batch"] + out["disk_blocks_per_batch"] * 4096 / 1e6
            out["planned_bound_edges_per_s"] = a.disk_bps / max(mb * 1e6, 1.0) * a.batch
    return out


if __name__ == "__main__":
    main()
