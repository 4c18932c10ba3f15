"""Mixed gather on the GPU: tierfs (GPU tier 10% + host tier 20% of rows, rest on SSD) against
torch.index_select on a pinned host tensor of all rows (then copied to the GPU), and against all
rows in GPU memory, on power-law ids (the nodes of 2-hop neighborhoods of random seeds).

    python3 python/bench/gpu_mixed.py DATASET [--batches 30] [--seeds 1024]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import tierfs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=1024)
    ap.add_argument("--fanouts", default="15,10")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    fanouts = [int(f) for f in a.fanouts.split(",")]
    dev = torch.device("cuda:0")
    rng = np.random.default_rng(1)

    with tierfs.open(a.dataset) as host_store:
        n, dim, rb = host_store.num_nodes(), host_store.dim, host_store.row_bytes
        sampler = host_store.sampler(fanouts, seed=1)
        batches = [np.asarray(sampler.sample(rng.integers(0, n, size=a.seeds)).nodes) for _ in range(a.batches)]
        x_pinned = torch.empty((n, dim), dtype=host_store.torch_dtype, pin_memory=True)
        host_store.gather(torch.arange(n), out=x_pinned)
    rows = sum(len(b) for b in batches)
    ids_cpu = [torch.from_numpy(b) for b in batches]
    ids_dev = [t.to(dev) for t in ids_cpu]
    print(f"{a.dataset}: {n} nodes, {rb}-byte rows; {a.batches} batches of {a.seeds} seeds, fanouts {fanouts}: {rows / a.batches:.0f} ids a batch")

    def timed(name, fn):
        fn(0)  # warm up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(len(batches)):
            fn(i)
        torch.cuda.synchronize()
        sec = time.perf_counter() - t0
        r = dict(name=name, rows_per_s=rows / sec, gb_per_s=rows * rb / sec / 1e9, seconds=sec)
        print(f"  {name:34s} {r['rows_per_s']:12.0f} rows/s {r['gb_per_s']:7.2f} GB/s")
        return r

    results = []
    staging = torch.empty((max(len(b) for b in batches), dim), dtype=x_pinned.dtype, pin_memory=True)

    def pinned_index_select(i):
        ids = ids_cpu[i]
        out = staging[: len(ids)]
        torch.index_select(x_pinned, 0, ids, out=out)
        return out.to(dev, non_blocking=True)

    results.append(timed("torch index_select, pinned host", pinned_index_select))
    x_dev = x_pinned.to(dev)
    results.append(timed("torch index_select, all in GPU mem", lambda i: x_dev.index_select(0, ids_dev[i])))
    del x_dev
    torch.cuda.empty_cache()
    with tierfs.open(a.dataset, device=dev, gpu_cache=n * rb // 10, host_cache=n * (rb + 16) // 5) as s:
        results.append(timed("tierfs gpu 10% + host 20% + ssd", lambda i: s.gather(ids_cpu[i])))
        tiers = {t["tier"]: t["hits"] for t in s.stats()["tiers"]}
    with tierfs.open(a.dataset, device=dev, gpu_cache=n * rb // 10, host_cache=n * (rb + 16)) as s:
        results.append(timed("tierfs gpu 10% + host 90% (no disk)", lambda i: s.gather(ids_cpu[i])))
    total = sum(tiers.values())
    print("  tierfs hit shares: " + ", ".join(f"{k} {v / total:.2f}" for k, v in tiers.items()))
    base = results[0]["rows_per_s"]
    for r in results:
        r["vs_pinned_index_select"] = r["rows_per_s"] / base
    for r in results[2:]:
        print(f"  {r['name']}: {r['rows_per_s'] / base:.2f} of pinned index_select, {r['rows_per_s'] / results[1]['rows_per_s']:.3f} of all in GPU memory")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(results=results, tier_hits=tiers), f, indent=2)


if __name__ == "__main__":
    main()
