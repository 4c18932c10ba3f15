"""What one batch reads from the disk, float32 rows against the same values stored at float16
(issue 44 item 4), on an IGBH-shaped graph: the same batches ([10,5] per edge type, seeds from
the paper train split) gathered type by type through a store of each dataset, with the same host
tier in bytes (--host-frac of the float32 dataset's feature bytes, so the float16 tier holds twice
the rows), placed the same way. No model and no timing: reads and bytes a batch are what the disk
sees, the figures a loaded 2-core box can give.

    PYTHONPATH=python TIERFS_LIB=build/libtierfs.so .venv/bin/python \\
        benchmarks/devvm-2026-12-02-half/hetero_bytes.py F32_DATASET F16_DATASET"""

from __future__ import annotations

import argparse

import numpy as np

import tierfs


def feature_bytes(store) -> int:
    return sum(int(f["rows"]) * int(f["row_bytes"]) for t in store.types["node_types"].values() for f in t["features"].values() if f["default"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("datasets", nargs="+")
    p.add_argument("--host-frac", type=float, default=0.2)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seed-type", default="paper")
    a = p.parse_args()
    with tierfs.open(a.datasets[0]) as probe:
        budget = int(feature_bytes(probe) * a.host_frac)
        nn = {et: [10, 5] for et in probe.edge_types}
        seeds = np.random.default_rng(0).permutation(probe.split("train", node_type=a.seed_type))
    batches = [seeds[i * a.batch:(i + 1) * a.batch] for i in range(a.batches)]
    print(f"host tier {budget / 2**20:.0f} MiB for every dataset; {a.batches} batches of {a.batch} {a.seed_type} seeds, [10,5]")
    print("| features | feature bytes | host rows held | reads/batch | MiB read/batch | MiB requested/batch | rows/batch |")
    print("|---|---|---|---|---|---|---|")
    for path in a.datasets:
        with tierfs.open(path, host_cache=budget) as s:
            held = sum(next(t for t in s.stats()["node_types"][nt]["tiers"] if t["tier"] == "host")["rows_held"]
                       for nt in s.stats()["node_types"])
            smp = s.sampler(nn, seed=1)
            io0, rows = s.stats()["io"], 0
            for b in batches:
                sample = smp.sample(b, node_type=a.seed_type)
                for t, ids in sample.node.items():
                    if len(ids) and s.types["node_types"][t]["features"]:
                        s.gather(ids, node_type=t)
                        rows += len(ids)
            io1 = s.stats()["io"]
            dt = {f["dtype"] for t in s.types["node_types"].values() for f in t["features"].values() if f["default"]}
            n = len(batches)
            print(f"| {'/'.join(sorted(dt))} | {feature_bytes(s) / 2**20:,.0f} MiB | {held:,} | {(io1['reads'] - io0['reads']) / n:,.0f} | "
                  f"{(io1['bytes_read'] - io0['bytes_read']) / n / 2**20:,.1f} | {(io1['bytes_requested'] - io0['bytes_requested']) / n / 2**20:,.1f} | "
                  f"{rows / n:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
