#!/usr/bin/env python3
"""tierfs against an in-memory torch tensor, with every row in tierfs's GPU tier; both sides of
each ratio are measured in the same run.

1. Gather: ``torch.index_select(X, 0, ids)`` on a CUDA tensor X of all rows (a) against
   ``store.gather(ids)`` with CUDA ids (b, ``tfs_gather_device_ids``: the ids stay on the GPU) and
   with CPU ids (c, ``tfs_gather_device``: host ids, device destination), on uniform random ids
   (torch.randint on the device, seed printed). max(K, 2M / ids) back-to-back calls per timing,
   synchronized once at the end, (a), (b) and (c) taking turns; median of --reps timings after
   warm-up. (b) and (c) are checked bit for bit
   against (a) once per size. Reported: rows/s of each, b/a and c/a.
2. GraphSAGE end to end (PyG GraphSAGE, mean aggregation, hidden 256, Adam, cross-entropy on
   the seeds' labels), batches of 1024 train seeds, tierfs's sampler (on the GPU with
   --gpu-topology device) for both loops, same seeds, same model init. Loop A fetches features as
   ``X[n_id]`` (index_select), loop B as ``store.gather(n_id)``; n_id is moved to the device the
   same way in both. --e2e-batches timed after 5 warm-up batches; the loops alternate A, B for
   --e2e-rounds rounds and the median run of each counts; seeds/s of each and B/A.

    PYTHONPATH=python TIERFS_LIB=build/libtierfs.so \\
        python3 python/bench/tier_bench.py DATASET_DIR [--json out.json] \\
        [--sizes 10000,100000,1000000] [--e2e-batches 60] [--skip-e2e]

DATASET_DIR: e.g. ``build/tierfs synth --out DIR --nodes N --dim 128 --avg-degree 15``. The GPU
path needs build/libtierfs_cuda.so (``make cuda``). ``--device cpu`` runs the same logic on the
host (every row in the host tier; (b) and (c) are then both CPU ids) as a smoke test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import tierfs


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset")
    p.add_argument("--json", default="", help="write the results here")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (smoke test)")
    p.add_argument("--sizes", default="10000,100000,1000000", help="ids per gather")
    p.add_argument("--k", type=int, default=50, help="back-to-back gathers per timing")
    p.add_argument("--reps", type=int, default=7, help="timings per measurement (median reported)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random ids, batch order, sampler and model")
    p.add_argument("--e2e-batches", type=int, default=60, help="timed batches per loop")
    p.add_argument("--warmup-batches", type=int, default=5)
    p.add_argument("--e2e-rounds", type=int, default=5, help="alternating A, B runs per fanout (median reported)")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fanouts", default="25,10/15,10,5", help="fanout lists for part 2, separated by /")
    p.add_argument("--gpu-topology", default="device", choices=["device", "pinned", "none"], help="where tierfs samples (none: on the host)")
    p.add_argument("--skip-e2e", action="store_true")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    X, rb = load_rows(a.dataset, dev)
    n = X.shape[0]
    store, tier, topo = open_store(a, dev, n, rb)
    dev_name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    print(f"{store}\n{n} nodes, {rb}-byte rows ({store.dtype_name}), every row in the {tier} tier; {dev_name}, torch {torch.__version__}")
    report = dict(dataset=a.dataset, nodes=n, dim=X.shape[1], dtype=store.dtype_name, device=str(dev), device_name=dev_name,
                  torch=torch.__version__, tier=tier, gpu_topology=topo, seed=a.seed, k=a.k, reps=a.reps)
    gathers = gather_part(a, store, X, dev, sync)
    report["gather"] = gathers
    report["device_gather_path"] = store._device_gather  # True: the native device gathers ran (no staging fallback)
    report["e2e"] = [] if a.skip_e2e else e2e_part(a, store, X, dev, topo, sync)

    st = store.stats()
    report["store_stats"] = dict(gpu=st["gpu"], tiers=st["tiers"], gathers=st["gathers"], samples=st["samples"])
    hits = {t["tier"]: t["hits"] for t in st["tiers"]}
    print(f"\ntierfs: {st['gathers']} gathers, tier hits {hits}, device gathers {st['gpu'].get('device_gathers', 0)}")
    if not all(r["equal_device_ids"] and r["equal_host_ids"] for r in gathers):
        print("WARNING: a tierfs gather differed from index_select", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {a.json}")
    store.close()
    return 0


def load_rows(dataset: str, dev: torch.device):
    """Every row of the dataset in a tensor on dev (the in-memory peer), read from the SSD tier
    by a plain host store; and the dataset's row bytes."""
    with tierfs.open(dataset, host_cache=0) as plain:
        n, dim, rb = plain.num_nodes(), plain.dim, plain.row_bytes
        xc = torch.empty((n, dim), dtype=plain.torch_dtype)
        for lo in range(0, n, 1 << 16):
            plain.gather(torch.arange(lo, min(n, lo + (1 << 16))), out=xc[lo : lo + (1 << 16)])
    return xc.to(dev), rb


def open_store(a, dev: torch.device, n: int, rb: int):
    """The store under test with every one of its n rows (rb bytes each) in the GPU tier (cpu: the
    host tier), the tier's name and where the sampler's topology lives (None: on the host).
    Exits when the GPU path is missing or the tier does not hold every row."""
    cuda = dev.type == "cuda"
    topo = a.gpu_topology if cuda and a.gpu_topology != "none" else None
    if cuda:  # every row in the GPU tier, no host tier
        store = tierfs.open(a.dataset, gpu_cache=n * rb, device=dev, gpu_topology=topo)
    else:  # every row in the host tier
        store = tierfs.open(a.dataset, host_cache=n * (rb + 64) + (64 << 20))
    st = store.stats()
    held = {t["tier"]: t["rows_held"] for t in st["tiers"]}
    tier = "gpu" if cuda else "host"
    if cuda and not st["gpu"].get("available"):
        sys.exit(f"tier_bench: the tierfs GPU path is unavailable ({st['gpu'].get('reason')}); build it with `make cuda`")
    if held.get(tier) != n:
        sys.exit(f"tier_bench: the {tier} tier holds {held.get(tier)} of {n} rows")
    return store, tier, topo


def timed(fns, k, reps, sync):
    """Median seconds of k back-to-back calls of each fn over reps timings; the fns take turns in
    every rep, so drift of the shared machine hits them alike."""
    for fn in fns:
        for _ in range(3):
            fn()
    ts = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            sync()
            t = time.perf_counter()
            for _ in range(k):
                fn()
            sync()
            ts[i].append(time.perf_counter() - t)
    return [statistics.median(x) for x in ts]


def gather_part(a, store, X, dev, sync):
    """Part 1: index_select against the store's gather with device and host ids, at each of
    --sizes; prints the table, returns its rows."""
    n = X.shape[0]
    sizes = [int(s) for s in a.sizes.split(",")]
    gathers = []
    print(f"\n1) gather of uniform random ids: max({a.k}, 2M / ids) back-to-back calls per timing, the three taking turns, median of {a.reps}")
    print(f"{'ids':>10} {'seed':>5} {'index_select':>14} {'tierfs dev ids':>15} {'tierfs host ids':>16} {'b/a':>6} {'c/a':>6}  equal")
    print(f"{'':>10} {'':>5} {'(a) Mrows/s':>14} {'(b) Mrows/s':>15} {'(c) Mrows/s':>16}")
    for i, size in enumerate(sizes):
        seed = a.seed + i
        g = torch.Generator(device=dev).manual_seed(seed)
        ids = torch.randint(0, n, (size,), device=dev, dtype=torch.int64, generator=g)
        ids_cpu = ids.cpu()
        ref = torch.index_select(X, 0, ids)
        eq_b = torch.equal(store.gather(ids), ref)
        eq_c = torch.equal(store.gather(ids_cpu), ref)
        del ref
        k = max(a.k, 2_000_000 // size)  # small batches: more calls, so a timing is not a few ms
        t_a, t_b, t_c = timed([lambda: torch.index_select(X, 0, ids), lambda: store.gather(ids), lambda: store.gather(ids_cpu)], k, a.reps, sync)
        r = dict(ids=size, ids_seed=seed, calls=k, index_select_rows_per_s=size * k / t_a, tierfs_device_ids_rows_per_s=size * k / t_b,
                 tierfs_host_ids_rows_per_s=size * k / t_c, b_over_a=t_a / t_b, c_over_a=t_a / t_c,
                 equal_device_ids=eq_b, equal_host_ids=eq_c, seconds=dict(a=t_a, b=t_b, c=t_c))
        gathers.append(r)
        print(f"{size:10,d} {seed:5d} {r['index_select_rows_per_s'] / 1e6:14.1f} {r['tierfs_device_ids_rows_per_s'] / 1e6:15.1f} "
              f"{r['tierfs_host_ids_rows_per_s'] / 1e6:16.1f} {r['b_over_a']:6.3f} {r['c_over_a']:6.3f}  {eq_b and eq_c}")
    return gathers


def e2e_part(a, store, X, dev, topo, sync):
    """Part 2: GraphSAGE trained with features from X (A) and from the store (B), alternating,
    for each fanout list; prints the table, returns its rows."""
    B, warm, nb = a.batch_size, a.warmup_batches, a.e2e_batches
    Y = store.labels(torch.arange(X.shape[0])).to(dev)
    train = store.split("train")
    rng = np.random.default_rng(a.seed)
    need = (warm + nb) * B  # epochs of the train split, each shuffled, until every batch is full
    order = np.concatenate([rng.permutation(train) for _ in range(-(-need // len(train)))])[:need]
    batches = [torch.from_numpy(order[i * B : (i + 1) * B]) for i in range(warm + nb)]

    print(f"\n2) GraphSAGE (hidden {a.hidden}, Adam), batches of {B} train seeds, {nb} timed after {warm} warm-up; "
          f"sampler {'on the GPU (' + topo + ' topology)' if topo else 'on the host'}, seed {a.seed} (batch order, sampler, model)")
    print(f"{'fanouts':>10} {'A in-memory':>12} {'B tierfs':>10} {'B/A':>6}  max |loss A - loss B|")
    print(f"{'':>10} {'seeds/s':>12} {'seeds/s':>10}")
    e2e = []
    for fan in a.fanouts.split("/"):
        fanouts = [int(f) for f in fan.split(",")]
        # A, B alternating, --e2e-rounds times: the median of each (runs swing with the sampler
        # and the shared host; the first round also warms what both share).
        ra, rb_ = [], []
        for _ in range(a.e2e_rounds):
            ra.append(sage_run(a, store, X.shape[1], fanouts, batches, Y, dev, sync, lambda n_id: torch.index_select(X, 0, n_id)))
            rb_.append(sage_run(a, store, X.shape[1], fanouts, batches, Y, dev, sync, lambda n_id: store.gather(n_id)))
        sps_a, loss_a = sorted(ra)[len(ra) // 2]
        sps_b, loss_b = sorted(rb_)[len(rb_) // 2]
        print(f"{'':>10} runs A {[round(r[0]) for r in ra]}, B {[round(r[0]) for r in rb_]}")
        dloss = max(abs(x - y) for x, y in zip(loss_a, loss_b))
        e2e.append(dict(fanouts=fanouts, batch_size=B, batches=nb, warmup_batches=warm, in_memory_seeds_per_s=sps_a,
                        tierfs_seeds_per_s=sps_b, b_over_a=sps_b / sps_a, max_loss_diff=dloss, final_loss=[loss_a[-1], loss_b[-1]]))
        print(f"{fan:>10} {sps_a:12.0f} {sps_b:10.0f} {sps_b / sps_a:6.3f}  {dloss:.2e}")
    return e2e


def sage_run(a, store, dim, fanouts, batches, Y, dev, sync, fetch):
    """One training loop over batches (the first --warmup-batches untimed), features as
    ``fetch(n_id)``: (timed seeds/s, every batch's loss). Same seeds, sampler seed and model
    init in every run."""
    from torch_geometric.nn import GraphSAGE

    B, warm, nb = a.batch_size, a.warmup_batches, a.e2e_batches
    sampler = store.sampler(fanouts, seed=a.seed)  # sample call i uses seed + i: same batches
    torch.manual_seed(a.seed)
    model = GraphSAGE(dim, a.hidden, num_layers=len(fanouts), out_channels=store.num_classes).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses, t0 = [], 0.0
    for i, seeds in enumerate(batches):
        if i == warm:
            sync()
            t0 = time.perf_counter()
        s = sampler.sample(seeds)  # CPU seeds: CPU tensors (drawn on the GPU with gpu_topology)
        n_id = s.nodes.to(dev, non_blocking=True)
        edge_index = torch.stack([s.row, s.col]).to(dev, non_blocking=True)
        x = fetch(n_id).float()
        loss = F.cross_entropy(model(x, edge_index)[:B], Y[n_id[:B]])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    sync()
    dt = time.perf_counter() - t0
    sampler.close()
    return nb * B / dt, [float(v) for v in losses]


if __name__ == "__main__":
    sys.exit(main())
