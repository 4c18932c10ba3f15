#!/usr/bin/env python3
"""Heterogeneous training throughput: tierfs against the best in-memory loop (issue 25).

    python python/bench/hetero_train.py DATASET [--fanouts 10,5] [--batch 1024] [--model rgcn]

Both loops train the same model (R-GCN: a HeteroConv of GraphConv per edge type, or R-GAT with
GATConv; hidden 256) on batches of the seed type's train split, with the same tierfs
heterogeneous sampler on a thread, so sampling overlaps training in both:

* memory: every node type's features in a CUDA tensor, gathered by index_select on a side stream
  while the previous batch trains (the best in-memory loop a user would write);
* tierfs: a store with GPU and host tiers of --gpu-frac / --host-frac of the feature bytes (split
  over the types by the session), each type's rows gathered on the GPU (tfs_gather_device_ids)
  on a side stream while the previous batch trains.

Printed and written to --out (JSON): seeds/s of each and their ratio, per node type the rows a
batch reads from the SSD and the hindsight bar (the rows a batch would read from the SSD if each
type's memory tiers had held, with the same capacity, exactly the rows the measured batches read
most), and the IO reads a batch. Runs --repeat times, alternating the two loops.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import threading
import time
from typing import Any, Dict, List

import numpy as np
import torch

import tierfs


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset")
    p.add_argument("--seed-type", default="paper")
    p.add_argument("--fanouts", default="10,5", help="per hop, for every edge type")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--batches", type=int, default=40, help="timed batches a run")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--model", choices=["rgcn", "rgat"], default="rgcn")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--gpu-frac", type=float, default=0.1)
    p.add_argument("--host-frac", type=float, default=0.2)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--place-batches", type=int, default=0,
                   help="place every type's memory tiers by a profile of this many batches first (store.place with a dict of fanouts; 0: the ranking at open)")
    p.add_argument("--gpu-topology", default="", choices=["", "device", "pinned"],
                   help="sample on the GPU with every edge type's topology there (both loops; empty: the host sampler)")
    p.add_argument("--drop-caches", action="store_true", help="drop the page cache before each tierfs run (root)")
    p.add_argument("--arms", default="memory,tierfs",
                   help="loops to time, alternating: memory, tierfs (on demand) and planned (one epoch of the timed batches' seeds planned first)")
    p.add_argument("--fetch-threads", type=int, default=1, help="fetch threads of every arm, each on its own CUDA stream")
    p.add_argument("--plan-dir", default="", help="where the planned arm's plan goes (default: a temporary directory)")
    p.add_argument("--disk-bps", type=float, default=0.0,
                   help="the disk's sequential read bandwidth, bytes/s (`tierfs bench disk`), for the planned arm's bound")
    p.add_argument("--out", default="")
    return p.parse_args(argv)


class Model(torch.nn.Module):
    def __init__(self, edge_types: List[tuple], seed_type: str, hidden: int, classes: int, hops: int, kind: str):
        super().__init__()
        from torch_geometric.nn import GATConv, GraphConv, HeteroConv, Linear

        def conv():
            if kind == "rgat":
                return GATConv((-1, -1), hidden // 4, heads=4, add_self_loops=False)
            return GraphConv((-1, -1), hidden, aggr="mean")

        self.convs = torch.nn.ModuleList(HeteroConv({et: conv() for et in edge_types}, aggr="sum") for _ in range(hops))
        self.seed_type = seed_type
        self.head = Linear(hidden, classes)

    def forward(self, x: Dict[str, torch.Tensor], edges: Dict[tuple, torch.Tensor], batch: int) -> torch.Tensor:
        x = {t: v.float() for t, v in x.items()}  # half-precision rows (store_dtype) cast on the device; float32 as it is
        for conv in self.convs:
            # a type no message reached at the previous layer has no representation: its edge
            # types sit this layer out
            out = conv(x, {et: e for et, e in edges.items() if et[0] in x and et[2] in x})
            x = {t: torch.relu(v) for t, v in out.items()}
        return self.head(x[self.seed_type][:batch])


def feature_bytes(store: tierfs.Store) -> int:
    total = 0
    for t in store.types["node_types"].values():
        for f in t["features"].values():
            if f["default"]:
                total += int(f["rows"]) * int(f["row_bytes"])
    return total


def load_in_gpu(path: str, store: tierfs.Store, device: torch.device) -> Dict[str, torch.Tensor]:
    """Every type's default feature as a CUDA tensor, read from its file (row-packed layouts) or
    gathered in chunks through tierfs."""
    with open(os.path.join(path, "manifest.json")) as f:
        m = json.load(f)
    out = {}
    for nt in m["node_types"]:
        if not nt.get("features"):
            continue
        spec = nt["features"][0]
        n, dim, rb = int(nt["count"]), int(spec["dim"]), int(spec["row_bytes"])
        dtype = getattr(torch, spec["dtype"])
        t = torch.empty((n, dim), dtype=dtype, device=device)
        packed = len(spec["files"]) == 1 and (spec.get("rows_per_block") or 0) * rb == m["block_size"] and not spec.get("in_place")
        if packed:
            arr = np.memmap(os.path.join(path, spec["files"][0]), dtype=np.uint8, mode="r", shape=(n * rb,))
            chunk = max(1, (256 << 20) // rb)
            for lo in range(0, n, chunk):
                hi = min(n, lo + chunk)
                host = torch.from_numpy(np.array(arr[lo * rb:hi * rb])).view(dtype).view(hi - lo, dim)
                t[lo:hi].copy_(host)
        else:
            for lo in range(0, n, 1 << 20):
                ids = np.arange(lo, min(n, lo + (1 << 20)))
                t[lo:lo + len(ids)].copy_(torch.as_tensor(store.gather(ids, node_type=nt["name"])))
        out[nt["name"]] = t
    return out


def on_demand(a, sampler_factory, order):
    """draw(i) of the on-demand arms: batch i's seeds (consecutive slices of order) and their sample."""
    sampler = sampler_factory()

    def draw(i):
        lo = (i * a.batch) % max(1, len(order) - a.batch)
        b = order[lo:lo + a.batch]
        return b, sampler.sample(b, node_type=a.seed_type)
    return draw


def run(a, store, draw, fetch, model, device, record: Dict[str, list] | None) -> float:
    """One pipelined run: a sampling thread (draw(i) -> (seeds, sample)), --fetch-threads fetch
    threads each on its own stream (fetch(i, seeds, sample)), training on this one. Returns
    seeds/s over the timed batches."""
    n_batches = a.warmup + a.batches
    q_s: "queue.Queue" = queue.Queue(maxsize=4)
    q_f: "queue.Queue" = queue.Queue(maxsize=2)
    left = [a.fetch_threads]  # fetch threads still running; the last one records stats1
    lock = threading.Lock()

    def sample_loop():
        for i in range(n_batches):
            q_s.put((i, *draw(i)))
        for _ in range(a.fetch_threads):
            q_s.put(None)

    def mark(key: str, stream) -> None:
        if stream is not None:
            stream.synchronize()
        record["stats" + key] = store.stats()  # 0: before the first timed batch's gather, 1: after the last's
        if "plan_stats" in record:
            record["plan" + key] = record["plan_stats"]()

    def fetch_loop():
        stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        while True:
            item = q_s.get()
            if item is None:
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                    if last and record is not None:
                        mark("1", stream)
                if last:  # the others may still be fetching: the training loop's end is the last fetch's
                    q_f.put(None)
                return
            i, b, smp = item
            if record is not None:
                if i == a.warmup:
                    mark("0", stream)
                record["samples"].append({t: np.asarray(v) for t, v in smp.node.items()})
            ctx = torch.cuda.stream(stream) if stream is not None else _null()
            with ctx:
                x, edges, y = fetch(i, b, smp)
                ev = None
                if stream is not None:
                    ev = torch.cuda.Event()
                    ev.record(stream)
            q_f.put((x, edges, y, ev, len(b)))

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    threads = [threading.Thread(target=sample_loop, daemon=True)] + [threading.Thread(target=fetch_loop, daemon=True) for _ in range(a.fetch_threads)]
    for t in threads:
        t.start()
    start = None
    done = 0
    for i in range(n_batches):
        if i == a.warmup:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
        item = q_f.get()
        x, edges, y, ev, nb = item
        if ev is not None:
            main = torch.cuda.current_stream(device)
            main.wait_event(ev)
            # made on the fetch stream, used (and freed) on this one: the allocator must not hand
            # their memory to the fetch stream's next batch before this batch's kernels are done
            for t in [*x.values(), *edges.values(), y]:
                t.record_stream(main)
        opt.zero_grad(set_to_none=True)
        out = model(x, edges, nb)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            done += nb
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    for t in threads:
        t.join()
    return done / elapsed


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def hindsight(samples: List[Dict[str, np.ndarray]], capacity: Dict[str, int]) -> Dict[str, float]:
    """Per type, SSD rows a batch if the memory tiers had held the type's most-read rows."""
    out = {}
    for t, cap in capacity.items():
        ids = [s[t] for s in samples if t in s and len(s[t])]
        if not ids:
            out[t] = 0.0
            continue
        counts = np.bincount(np.concatenate(ids))
        top = np.sort(counts)[::-1][:cap].sum() if cap > 0 else 0
        out[t] = float(counts.sum() - top) / len(samples)
    return out


def main(argv=None) -> Dict[str, Any]:
    a = parse_args(argv)
    arms = a.arms.split(",")
    if not set(arms) <= {"memory", "tierfs", "planned"}:
        raise SystemExit(f"--arms {a.arms}: want memory, tierfs and planned")
    device = torch.device(a.device)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    probe = tierfs.open(a.dataset)
    total = feature_bytes(probe)
    edge_types = probe.edge_types
    classes = int(probe.types["node_types"][a.seed_type]["num_classes"])
    seeds = probe.split("train", node_type=a.seed_type)
    probe.close()
    cuda = device.type == "cuda"
    store = tierfs.open(a.dataset, device=a.device if cuda else None, gpu_cache=int(total * a.gpu_frac) if cuda else 0,
                        host_cache=int(total * a.host_frac), gpu_topology=(a.gpu_topology or None) if cuda else None)
    num_neighbors = {et: fanouts for et in edge_types}
    make_sampler = lambda: store.sampler(num_neighbors, seed=1)  # noqa: E731
    placed = None
    if a.place_batches:
        placed = store.place(fanouts=num_neighbors, batch_size=a.batch, batches=a.place_batches, node_type=a.seed_type, seed=7)
        print(f"placed by a profile of {placed['batches']} batches in {placed['seconds']:.1f} s: "
              + ", ".join(f"{t} {r['reached_in_memory']:,}/{r['rows_reached']:,} reached rows in memory" for t, r in placed["node_types"].items()), flush=True)
    labels_np = torch.as_tensor(store.labels(np.arange(store.num_nodes(a.seed_type)), node_type=a.seed_type)).cpu().numpy()
    seeds = seeds[labels_np[seeds] >= 0]  # unlabelled seeds have no loss
    all_labels = torch.as_tensor(labels_np).to(device)
    t0 = time.perf_counter()
    feats = load_in_gpu(a.dataset, store, device)
    load_s = time.perf_counter() - t0

    def edges_of(smp) -> Dict[tuple, torch.Tensor]:
        return {et: torch.from_numpy(np.stack([smp.row[et], smp.col[et]])).to(device, non_blocking=True) for et in edge_types if len(smp.row[et])}

    def fetch_memory(i, b, smp):
        x = {t: feats[t].index_select(0, torch.from_numpy(ids).to(device, non_blocking=True)) for t, ids in smp.node.items() if len(ids) and t in feats}
        return x, edges_of(smp), all_labels[torch.from_numpy(b).to(device)]

    def fetch_tierfs(i, b, smp):
        x = {}
        for t, ids in smp.node.items():
            if len(ids) and t in feats:
                x[t] = store.gather(torch.from_numpy(ids).to(device, non_blocking=True) if cuda else ids, node_type=t)
                if not cuda:
                    x[t] = torch.as_tensor(x[t])
        return x, edges_of(smp), all_labels[torch.from_numpy(b).to(device)]

    torch.manual_seed(0)
    model = Model(edge_types, a.seed_type, a.hidden, classes, len(fanouts), a.model).to(device)
    # lazy (-1) input sizes: one forward on a real batch
    smp0 = make_sampler().sample(seeds[: a.batch], node_type=a.seed_type)
    x0, e0, _ = fetch_memory(0, seeds[: a.batch], smp0)
    with torch.no_grad():
        model(x0, e0, min(a.batch, len(seeds)))

    results: Dict[str, Any] = {"dataset": a.dataset, "fanouts": fanouts, "batch": a.batch, "model": a.model, "hidden": a.hidden,
                               "feature_bytes": total, "gpu_cache": int(total * a.gpu_frac) if cuda else 0, "arms": arms,
                               "host_cache": int(total * a.host_frac), "gpu_topology": a.gpu_topology, "load_into_gpu_s": load_s, "placed": placed, "runs": []}
    if cuda:
        results["gpu"] = torch.cuda.get_device_name(device)
    order = np.random.default_rng(0).permutation(seeds)
    plan = None
    if "planned" in arms:
        plan, results["plan"] = plan_batches(a, store, num_neighbors, order[: (a.warmup + a.batches) * a.batch])

    def fetch_planned(i, b, smp):
        x = {t: plan.gather_device(0, i, ids, node_type=t) if cuda else torch.as_tensor(plan.gather(0, i, ids, node_type=t))
             for t, ids in smp.node.items() if len(ids) and t in feats}
        return x, edges_of(smp), all_labels[torch.from_numpy(b).to(device)]

    fetches = {"memory": fetch_memory, "tierfs": fetch_tierfs, "planned": fetch_planned}
    for r in range(a.repeat):
        row: Dict[str, Any] = {}
        for arm in arms:
            if arm != "memory":
                drop_caches(a, row)
            draw = planned_draw(plan, a.seed_type) if arm == "planned" else on_demand(a, make_sampler, order)
            rec: Dict[str, Any] = {"samples": [], **({"plan_stats": plan.stats} if arm == "planned" else {})}
            row[arm] = run(a, store, draw, fetches[arm], model, device, None if arm == "memory" else rec)
            if arm != "memory":
                row[arm + "_ratio"] = row[arm] / row["memory"] if "memory" in row else None
                row[arm + "_report"] = tier_report(a, rec, feats, plan if arm == "planned" else None)
        results["runs"].append(row)
        print(f"run {r}: " + ", ".join(f"{arm} {row[arm]:,.0f} seeds/s" + (f" ({row[arm + '_ratio']:.3f} of memory)" if row.get(arm + "_ratio") else "") for arm in arms), flush=True)
        for arm in arms:
            if arm + "_report" in row:
                print_report(a, arm, row[arm + "_report"])
    for arm in arms:
        if arm != "memory" and "memory" in arms:
            results[f"median_{arm}_ratio"] = float(np.median([x[arm + "_ratio"] for x in results["runs"]]))
            print(f"median {arm} / memory: {results[f'median_{arm}_ratio']:.3f} over {a.repeat} runs")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    if plan is not None:
        plan.close()
    store.close()
    return results


def drop_caches(a, row: Dict[str, Any]) -> None:
    if a.drop_caches:
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError as e:
            row["drop_caches"] = str(e)


def plan_batches(a, store, num_neighbors, seeds):
    """One planned epoch of seeds (the timed run's batches: warm-up and timed), packed; returns
    the plan and what planning took."""
    t0 = time.perf_counter()
    # The plan covers only the timed batches: placing the tiers by its hotness would cache what a
    # whole epoch's plan could not, so the tiers keep what they hold (as the on-demand arm's).
    plan = store.plan_epochs(num_neighbors, a.batch, 1, seeds=seeds, node_type=a.seed_type, seed=1, drop_last=True,
                             plan_dir=a.plan_dir or None, place_tiers=False)
    info = {"plan_s": time.perf_counter() - t0, "stats": plan.stats()}
    print(f"planned {plan.batches_per_epoch} batches in {info['plan_s']:.1f} s", flush=True)
    return plan, info


def planned_draw(plan, seed_type):
    """draw(i) of the planned arm: batch i of planned epoch 0, its seeds and stored sample."""
    def draw(i):
        smp = plan.sample(0, i)
        return smp.node[seed_type][: smp.num_seeds], smp
    return draw


def tier_report(a, rec, feats, plan) -> Dict[str, Any]:
    """What the timed batches read: per type its rows and SSD rows a batch against the hindsight
    bar; IO reads and bytes a batch; for the planned arm, the packed bytes a batch and the bound
    they allow at --disk-bps (seeds/s)."""
    s0, s1 = rec["stats0"], rec["stats1"]
    timed = rec["samples"][a.warmup:a.warmup + a.batches]
    per_type, capacity = {}, {}
    for t in feats:
        t0s = {x["tier"]: x for x in s0["node_types"][t]["tiers"]} if "node_types" in s0 else {x["tier"]: x for x in s0["tiers"]}
        t1s = {x["tier"]: x for x in s1["node_types"][t]["tiers"]} if "node_types" in s1 else {x["tier"]: x for x in s1["tiers"]}
        capacity[t] = int(t1s["gpu"]["rows_held"] + t1s["host"]["rows_held"])
        per_type[t] = {"ssd_rows_per_batch": (t1s["ssd"]["hits"] - t0s["ssd"]["hits"]) / a.batches,
                       "rows_per_batch": float(np.mean([len(s.get(t, [])) for s in timed])),
                       "memory_rows": capacity[t]}
    for t, v in hindsight(timed, capacity).items():
        per_type[t]["hindsight_ssd_rows_per_batch"] = v
    out: Dict[str, Any] = {"types": per_type, "io_reads_per_batch": (s1["io"]["reads"] - s0["io"]["reads"]) / a.batches,
                           "io_bytes_per_batch": (s1["io"]["bytes_read"] - s0["io"]["bytes_read"]) / a.batches}
    if plan is not None:
        p0, p1 = rec["plan0"], rec["plan1"]
        out["packed_bytes_per_batch"] = (p1["bytes_read"] - p0["bytes_read"]) / a.batches
        out["packed_reads_per_batch"] = (p1["reads"] - p0["reads"]) / a.batches
        out["sample_bytes_per_batch"] = (p1["sample_bytes_read"] - p0["sample_bytes_read"]) / a.batches
        if a.disk_bps:
            disk = out["packed_bytes_per_batch"] + out["sample_bytes_per_batch"] + out["io_bytes_per_batch"]
            out["disk_bound_seeds_per_s"] = a.disk_bps / max(disk, 1.0) * a.batch
    return out


def print_report(a, arm: str, rep: Dict[str, Any]) -> None:
    line = f"   {arm}: IO reads/batch {rep['io_reads_per_batch']:,.0f}, IO MB/batch {rep['io_bytes_per_batch'] / 1e6:,.1f}"
    if "packed_bytes_per_batch" in rep:
        line += f", packed MB/batch {rep['packed_bytes_per_batch'] / 1e6:,.1f} in {rep['packed_reads_per_batch']:,.1f} reads, samples MB/batch {rep['sample_bytes_per_batch'] / 1e6:,.1f}"
        if "disk_bound_seeds_per_s" in rep:
            line += f", disk bound {rep['disk_bound_seeds_per_s']:,.0f} seeds/s"
    print(line, flush=True)
    for t, v in rep["types"].items():
        print(f"   {t:12s} rows/batch {v['rows_per_batch']:>9,.0f}  SSD rows/batch {v['ssd_rows_per_batch']:>9,.0f}  "
              f"hindsight {v['hindsight_ssd_rows_per_batch']:>9,.0f}  memory rows {v['memory_rows']:,}", flush=True)


if __name__ == "__main__":
    main()
