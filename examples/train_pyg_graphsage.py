#!/usr/bin/env python3
"""Train PyG's GraphSAGE through tierfs: features on the SSD tier behind a small host cache,
neighbor sampling in the tierfs core (no pyg-lib / torch-sparse needed).

    python examples/train_pyg_graphsage.py                          # a small synthetic graph, in seconds
    python examples/train_pyg_graphsage.py --synth 200000 --epochs 3 --host-cache 16MB
    python examples/train_pyg_graphsage.py --dataset cora --compare-in-memory --seeds 5
    python examples/train_pyg_graphsage.py --device cuda            # where a GPU is

Datasets are written under ./tierfs-examples/ of the working directory (or --data) and reused
from there. The synthetic graph needs nothing but tierfs; Planetoid Cora (--dataset cora) is
converted from its raw ind.cora.* files (--cora-source; nothing is downloaded).

With --compare-in-memory every seed also trains the same model on the same split with all
features in one torch tensor (PyG's in-memory ``Data``), with the same sampler and the same
seeds, and the mean test accuracies of both are printed: training through tierfs must match
training in memory (the features are the same bytes, so the runs coincide on CPU).

Loaders run with num_workers=0: tierfs samples and gathers on its own threads with the GIL
released, and the library (a Go runtime) must never be used in a forked worker. Pass --prefetch
to overlap batch i+1's sampling and gathering with batch i's training on a background thread.

--tierfs-loader trains the tierfs run with tierfs.pyg.NeighborLoader instead (the pipelined
loader: sampling ahead, several gathers in flight; its own shuffle, so the runs no longer
coincide with the in-memory ones) and prints which stage bounds each epoch;
--planned-epochs K adds planned epochs (docs/planned.md):

    python examples/train_pyg_graphsage.py --synth 200000 --tierfs-loader --planned-epochs 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
try:
    import tierfs
except ImportError:  # running from a checkout without installing: use python/ and build/
    sys.path.insert(0, str(REPO / "python"))
    import tierfs
import tierfs.datasets
import tierfs.pyg
from torch_geometric.data import Data
from torch_geometric.loader import NodeLoader
from torch_geometric.nn import GraphSAGE

SYNTH_NODES = 2000  # nodes of the default synthetic graph: an epoch takes well under a second


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=["synth", "cora"], default="synth",
                   help="synth: a synthetic power-law graph (--synth N nodes); cora: Planetoid Cora from its raw files (default: synth)")
    p.add_argument("--data", default=None,
                   help="dataset directory, reused when it holds a dataset (default: ./tierfs-examples/synth-N-DIM-CLASSES or ./tierfs-examples/cora)")
    p.add_argument("--cora-source", default=None,
                   help="--dataset cora: folder of the raw ind.cora.* files (default: $TIERFS_DATASETS/planetoid-cora/raw, else "
                        "shared/datasets/planetoid-cora/raw in a parent folder of the tierfs package or of the working directory)")
    p.add_argument("--synth", type=int, default=None, metavar="N",
                   help=f"nodes of the synthetic graph (default: {SYNTH_NODES}); implies --dataset synth")
    p.add_argument("--avg-degree", type=float, default=10, help="--synth: average in-degree")
    p.add_argument("--dim", type=int, default=128, help="--synth: feature dimension")
    p.add_argument("--classes", type=int, default=4, help="--synth: classes")
    p.add_argument("--host-cache", default="2MB", help="host tier size (Cora's features are 15.5 MB; default 2MB)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--epochs", type=int, default=None, help="default: 50 for Cora, 20 for a synthetic graph of up to 20,000 nodes, else 3")
    p.add_argument("--batch-size", type=int, default=None, help="default: 32 for Cora and a synthetic graph of up to 20,000 nodes, else 1024")
    p.add_argument("--fanouts", default="10,10", help="neighbors per hop for training, e.g. 25,10")
    p.add_argument("--eval-fanouts", default=None, help="neighbors per hop for testing (default: -1,-1 for Cora, the training fanouts for the synthetic graph)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--seeds", type=int, default=1, help="train with seeds 0..N-1 and average the test accuracy")
    p.add_argument("--compare-in-memory", action="store_true", help="also train with all features in a torch tensor and compare")
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many batches (0: all)")
    p.add_argument("--prefetch", type=int, default=0, help="batches to prepare ahead on a background thread (0: none)")
    p.add_argument("--tierfs-loader", action="store_true", help="train the tierfs run with tierfs.pyg.NeighborLoader (pipelined)")
    p.add_argument("--planned-epochs", type=int, default=0, help="with --tierfs-loader: plan this many epochs up front (0: sample every epoch)")
    p.add_argument("--quiet", action="store_true", help="print no per-epoch lines")
    p.add_argument("--check", action="store_true", help="exit 1 unless tierfs and in-memory mean accuracies are within one point")
    args = p.parse_args(argv)
    if args.synth is not None:
        if args.dataset == "cora":
            p.error("--synth N and --dataset cora exclude each other")
        args.dataset = "synth"
    if args.dataset == "synth" and not args.synth:
        args.synth = SYNTH_NODES
    if args.dataset == "cora":
        args.synth = 0
    return args


def fanouts(s):
    return [int(k) for k in s.split(",")]


def prepare(args):
    if args.synth:
        out = Path(args.data or Path("tierfs-examples") / f"synth-{args.synth}-{args.dim}-{args.classes}")
        if not (out / "manifest.json").exists():
            t = time.perf_counter()
            tierfs.synth(out, nodes=args.synth, avg_degree=args.avg_degree, dim=args.dim, classes=args.classes, seed=1)
            print(f"synthesized {args.synth} nodes into {out} in {time.perf_counter() - t:.1f} s")
        return str(out)
    out = Path(args.data or Path("tierfs-examples") / "cora")
    try:
        return tierfs.datasets.cora(out, source=args.cora_source)
    except (tierfs.NotFoundError, FileNotFoundError) as e:
        sys.exit(f"{sys.argv[0]}: --dataset cora: {e}\n(pass --cora-source DIR with the raw ind.cora.* files, "
                 "or leave out --dataset cora to train on the built-in synthetic graph)")


def loaders(data, store, args, seed, train, test):
    """Training and test NodeLoaders over `data` (tierfs stores or an in-memory Data), both with
    tierfs's sampler seeded by `seed`."""
    if args.tierfs_loader and data is not None and isinstance(data, tuple):
        train_loader = tierfs.pyg.NeighborLoader(
            store, fanouts(args.fanouts), train, batch_size=args.batch_size, shuffle=True, seed=seed,
            shuffle_seed=seed, planned_epochs=args.planned_epochs,
        )
    else:
        train_loader = NodeLoader(
            data,
            node_sampler=tierfs.pyg.NeighborSampler(store, fanouts(args.fanouts), seed=seed),
            input_nodes=train,
            batch_size=args.batch_size,
            shuffle=True,
            filter_per_worker=False,
        )
    test_loader = NodeLoader(
        data,
        node_sampler=tierfs.pyg.NeighborSampler(store, fanouts(args.eval_fanouts), seed=seed + 1000),
        input_nodes=test,
        batch_size=max(args.batch_size, 512),
        shuffle=False,
        filter_per_worker=False,
    )
    return train_loader, test_loader


def run(name, data, store, args, seed, train, test, device):
    torch.manual_seed(seed)
    model = GraphSAGE(store.dim, args.hidden, num_layers=len(fanouts(args.fanouts)), out_channels=store.num_classes, dropout=args.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    train_loader, test_loader = loaders(data, store, args, seed, train, test)

    def batches(loader):
        pipelined = isinstance(loader, tierfs.pyg.NeighborLoader)
        it = tierfs.prefetch(loader, args.prefetch) if args.prefetch and not pipelined else iter(loader)
        for i, batch in enumerate(it):
            if args.max_batches and i >= args.max_batches:
                if hasattr(it, "close"):
                    it.close()
                break
            yield batch.to(device, non_blocking=True)

    for epoch in range(1, args.epochs + 1):
        model.train()
        t0, total, count, nb = time.perf_counter(), 0.0, 0, 0
        for batch in batches(train_loader):
            x = batch.x if batch.x.is_floating_point() else batch.x.float()
            opt.zero_grad()
            out = model(x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * batch.batch_size
            count += batch.batch_size
            nb += 1
        dt = time.perf_counter() - t0
        if not args.quiet:
            bound = ""
            if isinstance(train_loader, tierfs.pyg.NeighborLoader):
                st = train_loader.stats()
                busy = {k: f"{v['occupancy']:.2f}" for k, v in st["stages"].items()}
                bound = f"  bound: {st['bound']} (occupancy {busy})"
            print(f"seed {seed} [{name:9}] epoch {epoch:3d}  loss {total / max(count, 1):.4f}  {nb} batches  {dt:.2f} s ({nb / dt:.1f} batches/s){bound}", flush=True)

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in batches(test_loader):
            x = batch.x if batch.x.is_floating_point() else batch.x.float()
            pred = model(x, batch.edge_index)[: batch.batch_size].argmax(-1)
            correct += int((pred == batch.y[: batch.batch_size]).sum())
            total += batch.batch_size
    acc = correct / max(total, 1)
    print(f"seed {seed} [{name:9}] test accuracy {acc:.4f} ({correct}/{total})", flush=True)
    return acc


def main(argv=None):
    args = parse_args(argv)
    # Tiny gradients late in training turn into denormal floats, which slow CPU math 5-10x.
    torch.set_flush_denormal(True)
    small = args.synth and args.synth <= 10 * SYNTH_NODES  # a few hundred training nodes: small batches, more epochs
    if args.epochs is None:
        args.epochs = (20 if small else 3) if args.synth else 50
    if args.batch_size is None:
        args.batch_size = (32 if small else 1024) if args.synth else 32
    if args.eval_fanouts is None:
        args.eval_fanouts = args.fanouts if args.synth else ",".join(["-1"] * len(fanouts(args.fanouts)))
    device = torch.device(args.device)
    path = prepare(args)

    store = tierfs.open(path, host_cache=args.host_cache, device=args.device)
    print(store)
    fs, gs = tierfs.pyg.stores(store)
    train = torch.from_numpy(store.split("train"))
    test = torch.from_numpy(store.split("test"))
    print(f"train {len(train)} nodes, test {len(test)} nodes, fanouts {args.fanouts}, batch size {args.batch_size}, {args.epochs} epochs, device {device}")

    memory = None
    if args.compare_in_memory:
        # All features in one torch tensor; the edge index for PyG's Data (the sampler is
        # tierfs's either way).
        indptr, indices = store.csc()
        dst = torch.repeat_interleave(torch.arange(store.num_nodes()), torch.from_numpy(indptr).diff())
        with tierfs.open(path, host_cache=0) as plain:
            everyone = torch.arange(store.num_nodes())
            x, y = plain.gather(everyone), plain.labels(everyone)  # torch ids: torch tensors
        memory = Data(x=x, y=y, edge_index=torch.stack([torch.from_numpy(indices), dst]))

    accs = {"tierfs": [], "in-memory": []}
    t = time.perf_counter()
    for seed in range(args.seeds):
        accs["tierfs"].append(run("tierfs", (fs, gs), store, args, seed, train, test, device))
        if memory is not None:
            accs["in-memory"].append(run("in-memory", memory, store, args, seed, train, test, device))
    elapsed = time.perf_counter() - t

    st = store.stats()
    tiers = {tt["tier"]: tt for tt in st["tiers"]}
    hits = {k: v["hits"] for k, v in tiers.items()}
    print(f"tierfs gathers: {st['gathers']} calls, {st['rows_gathered']} rows; tier hits {hits}; io {st['io']['reads']} reads, {st['io']['bytes_read'] / 1e6:.1f} MB")

    def summary(v):
        return f"{statistics.mean(v):.4f}" + (f" ± {statistics.stdev(v):.4f}" if len(v) > 1 else "")

    print(f"\nmean test accuracy over {args.seeds} seed(s) ({elapsed:.1f} s):")
    print(f"  tierfs    (SSD tier + {args.host_cache} host cache): {summary(accs['tierfs'])}")
    ok = True
    if memory is not None:
        diff = 100 * (statistics.mean(accs["tierfs"]) - statistics.mean(accs["in-memory"]))
        print(f"  in-memory (features in a torch tensor):     {summary(accs['in-memory'])}")
        print(f"  difference: {diff:+.2f} points")
        ok = abs(diff) <= 1.0
    store.close()
    if args.check and not ok:
        print("FAIL: tierfs and in-memory accuracies differ by more than one point", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
