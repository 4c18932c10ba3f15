#!/usr/bin/env python3
"""Per-batch overhead of the Python layer.

1. A gather of 1M ids (uniform, every row in the host tier so the disk is out of the picture):
   Go's own figure (`tierfs bench gather --dist uniform`, "host tier"), the raw ctypes call
   `tfs_gather` into a preallocated numpy buffer, and the wrapper `Store.gather` with numpy,
   torch and list ids; plus the fixed cost per call at a small batch.
2. Mini-batch loading over the same in-memory store: tierfs's sampler alone, sampler + gather,
   tierfs.Loader (prefetching), and PyG's NodeLoader with tierfs's NeighborSampler over the
   tierfs FeatureStore/GraphStore and over an in-memory PyG Data.

    python python/bench/overhead.py                 # 1M nodes, dim 32 (~5 min on 2 cores)
    python python/bench/overhead.py --quick         # smaller, for smoke tests
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
try:
    import tierfs
except ImportError:
    sys.path.insert(0, str(REPO / "python"))
    import tierfs
import tierfs.pyg  # noqa: E402  (imports torch and torch_geometric)
import torch  # noqa: E402
from tierfs import _native
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402


def timeit(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def go_gather_seconds(cli, path, batch, batches):
    """Go's seconds per gather of `batch` uniform ids: {"host tier": s, "in-memory reference": s},
    or a string saying why there is no figure."""
    if not cli or not os.access(cli, os.X_OK):
        return f"CLI not built ({cli}; make build)"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        r = subprocess.run(
            [cli, "bench", "gather", path, "--dist", "uniform", "--batch", str(batch), "--batches", str(batches), "--json", f.name],
            capture_output=True, text=True,
        )
        if r.returncode != 0:
            return f"tierfs bench failed: {r.stderr.strip()[:200]}"
        with open(f.name) as fh:
            res = json.load(fh)["results"]
    out = {x["name"]: batch / x["rows_per_s"] for x in res if x["name"] in ("host tier", "in-memory reference") and x["rows_per_s"] > 0}
    return out or "tierfs bench ran no host-tier configuration (dataset too large for memory)"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--batch", type=int, default=1_000_000, help="ids per gather in part 1")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--small-batch", type=int, default=1024)
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--seeds-per-batch", type=int, default=1024)
    p.add_argument("--loader-batches", type=int, default=40)
    p.add_argument("--data", default=None, help="dataset directory (default: build/bench/overhead-N-D, made with tierfs.synth)")
    p.add_argument("--cli", default=str(REPO / "build" / "tierfs"))
    p.add_argument("--quick", action="store_true", help="100k nodes, 100k-id batches, fewer repetitions")
    args = p.parse_args(argv)
    if args.quick:
        args.nodes, args.batch, args.reps, args.loader_batches = 100_000, 100_000, 3, 10
    return args


def main(argv=None):
    args = parse_args(argv)
    path = args.data or str(REPO / "build" / "bench" / f"overhead-{args.nodes}-{args.dim}")
    if not os.path.exists(os.path.join(path, "manifest.json")):
        tierfs.synth(path, nodes=args.nodes, avg_degree=10, dim=args.dim, seed=1)
    store = tierfs.open(path, host_cache=args.nodes * (args.dim * 4 + 64) + (64 << 20))
    st = {t["tier"]: t for t in store.stats()["tiers"]}
    assert st["host"]["rows_held"] == store.num_nodes(), f"host tier holds {st['host']['rows_held']} of {store.num_nodes()} rows"
    rng = np.random.default_rng(1)
    gather_part(store, path, args, rng)
    loader_part(store, args, rng)
    store.close()
    return 0


def gather_part(store, path, args, rng):
    """Part 1: a gather of --batch uniform ids through Go, ctypes and the wrapper, and the fixed
    cost per call at --small-batch ids; prints both tables."""
    ids = rng.integers(0, store.num_nodes(), args.batch)
    out = np.empty((args.batch, store.dim), store.dtype)
    h = store._handle
    lib = _native.lib
    nbytes = args.batch * store.row_bytes

    def raw():
        st = lib.tfs_gather(h, None, None, ids.ctypes.data, args.batch, out.ctypes.data, nbytes)
        assert st == 0

    tids = torch.from_numpy(ids)
    lids = ids.tolist()
    rows = []
    t_raw = timeit(raw, args.reps)
    go = go_gather_seconds(args.cli, path, args.batch, max(3, args.reps))
    if isinstance(go, dict):
        if "host tier" in go:
            rows.append(("Go Store.Gather, host tier (tierfs bench)", go["host tier"], None))
        if "in-memory reference" in go:
            rows.append(("Go plain in-memory gather (tierfs bench)", go["in-memory reference"], None))
    rows.append(("ctypes tfs_gather, preallocated numpy out", t_raw, None))
    rows.append(("store.gather(numpy ids, out=buffer)", timeit(lambda: store.gather(ids, out=out), args.reps), None))
    rows.append(("store.gather(numpy ids) -> new numpy", timeit(lambda: store.gather(ids), args.reps), None))
    rows.append(("store.gather(torch ids) -> new tensor", timeit(lambda: store.gather(tids), args.reps), None))
    rows.append(("store.gather(list of ints)", timeit(lambda: store.gather(lids), max(1, args.reps // 2)), None))

    small = ids[: args.small_batch].copy()
    sout = np.empty((args.small_batch, store.dim), store.dtype)
    sb = args.small_batch * store.row_bytes

    def raw_small():
        lib.tfs_gather(h, None, None, small.ctypes.data, args.small_batch, sout.ctypes.data, sb)

    n_small = 2000
    t_raw_small = timeit(lambda: [raw_small() for _ in range(n_small)], 3) / n_small
    t_wrap_small = timeit(lambda: [store.gather(small, out=sout) for _ in range(n_small)], 3) / n_small
    t_alloc_small = timeit(lambda: [store.gather(small) for _ in range(n_small)], 3) / n_small

    print(f"\n{store}")
    print(f"\n1) gather of {args.batch:,} uniform ids ({args.batch * store.row_bytes / 1e6:.0f} MB), every row in the host tier; median of {args.reps}")
    print(f"{'path':48} {'ms/gather':>10} {'Mrows/s':>9} {'vs ctypes':>10}")
    if isinstance(go, str):
        print(f"{'Go (tierfs bench gather)':48} {'n/a':>10}  ({go})")
    for name, t, _ in rows:
        print(f"{name:48} {t * 1e3:10.2f} {args.batch / t / 1e6:9.2f} {t / t_raw:9.2f}x")
    print(f"\n   fixed cost per call at {args.small_batch} ids (mean of {n_small} calls):")
    print(f"{'ctypes tfs_gather':48} {t_raw_small * 1e6:10.1f} us")
    print(f"{'store.gather(ids, out=buffer)':48} {t_wrap_small * 1e6:10.1f} us  (+{(t_wrap_small - t_raw_small) * 1e6:.1f} us Python)")
    print(f"{'store.gather(ids) -> new numpy':48} {t_alloc_small * 1e6:10.1f} us  (+{(t_alloc_small - t_raw_small) * 1e6:.1f} us Python)")


def loader_part(store, args, rng):
    """Part 2: batches/s of --loader-batches mini-batches through tierfs's sampler, tierfs.Loader
    and PyG's NodeLoader (over tierfs's stores and over an in-memory Data); prints the table."""
    fan = [int(k) for k in args.fanouts.split(",")]
    B, nb = args.seeds_per_batch, args.loader_batches
    seeds = torch.from_numpy(rng.permutation(store.num_nodes())[: B * nb])
    res = []

    def measure(name, make_iter):
        list(zip(range(2), make_iter()))  # warm-up
        t = time.perf_counter()
        n = sum(1 for _ in make_iter())
        dt = time.perf_counter() - t
        res.append((name, n / dt, n))

    sampler = store.sampler(fan, seed=1)

    def sample_only():
        for i in range(nb):
            yield sampler.sample(seeds[i * B : (i + 1) * B])

    def sample_gather():
        for i in range(nb):
            s = sampler.sample(seeds[i * B : (i + 1) * B])
            yield store.gather(s.nodes), store.labels(s.nodes[:B])

    measure("tierfs sampler.sample", sample_only)
    measure("tierfs sample + gather + labels (one thread)", sample_gather)
    measure("tierfs.Loader (prefetch 2)", lambda: tierfs.Loader(store, sampler, seeds, B, shuffle=False, prefetch=2))
    fs, gs = tierfs.pyg.stores(store)
    mk = lambda data: NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, fan, seed=1), input_nodes=seeds, batch_size=B, filter_per_worker=False)  # noqa: E731
    measure("PyG NodeLoader((FeatureStore, GraphStore))", lambda: mk((fs, gs)))
    measure("  same, wrapped in tierfs.prefetch(depth 2)", lambda: tierfs.prefetch(mk((fs, gs)), 2))
    everyone = torch.arange(store.num_nodes())
    indptr, indices = store.csc()
    dst = torch.repeat_interleave(everyone, torch.from_numpy(indptr).diff())
    data = Data(x=store.gather(everyone), y=store.labels(everyone), edge_index=torch.stack([torch.from_numpy(indices), dst]))
    measure("PyG NodeLoader(in-memory Data), tierfs sampler", lambda: mk(data))

    print(f"\n2) mini-batches of {B} seeds, fanouts {fan}, {nb} batches, in-memory store ({torch.get_num_threads()} torch threads)")
    print(f"{'loader':48} {'batches/s':>10} {'vs sampler':>11}")
    base = res[0][1]
    for name, bps, _n in res:
        print(f"{name:48} {bps:10.1f} {bps / base:10.2f}x")


if __name__ == "__main__":
    sys.exit(main())
