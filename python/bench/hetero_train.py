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


def run(a, store, sampler_factory, seeds, labels_of, fetch, model, device, record: Dict[str, list] | None) -> float:
    """One pipelined run: a sampling thread, a fetch thread on its own stream, training on this one.
    Returns seeds/s over the timed batches."""
    n_batches = a.warmup + a.batches
    sampler = sampler_factory()
    q_s: "queue.Queue" = queue.Queue(maxsize=4)
    q_f: "queue.Queue" = queue.Queue(maxsize=2)
    order = np.random.default_rng(0).permutation(seeds)

    def sample_loop():
        for i in range(n_batches):
            lo = (i * a.batch) % max(1, len(order) - a.batch)
            b = order[lo:lo + a.batch]
            q_s.put((b, sampler.sample(b, node_type=a.seed_type)))
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
                    record["stats1"] = store.stats()  # after the last timed batch's gather
                q_f.put(None)
                return
            b, smp = item
            if record is not None:
                if fetched == a.warmup:
                    if stream is not None:
                        stream.synchronize()
                    record["stats0"] = store.stats()  # before the first timed batch's gather
                record["samples"].append({t: np.asarray(v) for t, v in smp.node.items()})
            fetched += 1
            ctx = torch.cuda.stream(stream) if stream is not None else _null()
            with ctx:
                x, edges, y = fetch(b, smp)
                ev = None
                if stream is not None:
                    ev = torch.cuda.Event()
                    ev.record(stream)
            q_f.put((x, edges, y, ev, len(b)))

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    threads = [threading.Thread(target=sample_loop, daemon=True), threading.Thread(target=fetch_loop, daemon=True)]
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

    def fetch_memory(b, smp):
        x = {t: feats[t].index_select(0, torch.from_numpy(ids).to(device, non_blocking=True)) for t, ids in smp.node.items() if len(ids) and t in feats}
        return x, edges_of(smp), all_labels[torch.from_numpy(b).to(device)]

    def fetch_tierfs(b, smp):
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
    x0, e0, _ = fetch_memory(seeds[: a.batch], smp0)
    with torch.no_grad():
        model(x0, e0, min(a.batch, len(seeds)))

    results: Dict[str, Any] = {"dataset": a.dataset, "fanouts": fanouts, "batch": a.batch, "model": a.model, "hidden": a.hidden,
                               "feature_bytes": total, "gpu_cache": int(total * a.gpu_frac) if cuda else 0,
                               "host_cache": int(total * a.host_frac), "gpu_topology": a.gpu_topology, "load_into_gpu_s": load_s, "placed": placed, "runs": []}
    if cuda:
        results["gpu"] = torch.cuda.get_device_name(device)
    for r in range(a.repeat):
        row: Dict[str, Any] = {}
        row["memory"] = run(a, store, make_sampler, seeds, None, fetch_memory, model, device, None)
        if a.drop_caches:
            try:
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
            except OSError as e:
                row["drop_caches"] = str(e)
        rec: Dict[str, list] = {"samples": []}
        row["tierfs"] = run(a, store, make_sampler, seeds, None, fetch_tierfs, model, device, rec)
        row["ratio"] = row["tierfs"] / row["memory"]
        s0, s1 = rec["stats0"], rec["stats1"]
        timed = rec["samples"][a.warmup:a.warmup + a.batches]
        per_type = {}
        capacity = {}
        for t in feats:
            t0s = {x["tier"]: x for x in s0["node_types"][t]["tiers"]} if "node_types" in s0 else {x["tier"]: x for x in s0["tiers"]}
            t1s = {x["tier"]: x for x in s1["node_types"][t]["tiers"]} if "node_types" in s1 else {x["tier"]: x for x in s1["tiers"]}
            capacity[t] = int(t1s["gpu"]["rows_held"] + t1s["host"]["rows_held"])
            per_type[t] = {"ssd_rows_per_batch": (t1s["ssd"]["hits"] - t0s["ssd"]["hits"]) / a.batches,
                           "rows_per_batch": float(np.mean([len(s.get(t, [])) for s in timed])),
                           "memory_rows": capacity[t]}
        for t, v in hindsight(timed, capacity).items():
            per_type[t]["hindsight_ssd_rows_per_batch"] = v
        row["types"] = per_type
        row["io_reads_per_batch"] = (s1["io"]["reads"] - s0["io"]["reads"]) / a.batches
        results["runs"].append(row)
        print(f"run {r}: memory {row['memory']:,.0f} seeds/s, tierfs {row['tierfs']:,.0f} seeds/s, ratio {row['ratio']:.3f}, "
              f"IO reads/batch {row['io_reads_per_batch']:,.0f}", flush=True)
        for t, v in per_type.items():
            print(f"   {t:12s} rows/batch {v['rows_per_batch']:>9,.0f}  SSD rows/batch {v['ssd_rows_per_batch']:>9,.0f}  "
                  f"hindsight {v['hindsight_ssd_rows_per_batch']:>9,.0f}  memory rows {v['memory_rows']:,}", flush=True)
    ratios = [r["ratio"] for r in results["runs"]]
    results["median_ratio"] = float(np.median(ratios))
    print(f"median tierfs / memory: {results['median_ratio']:.3f} over {len(ratios)} runs")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    store.close()
    return results


if __name__ == "__main__":
    main()
