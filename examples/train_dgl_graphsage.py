#!/usr/bin/env python3
"""Train a 2-layer GraphSAGE (dgl.nn.SAGEConv) on blocks sampled by tierfs, with every feature
row gathered through tierfs (host tier + SSD), on a synthetic power-law graph or Planetoid Cora.
Prints the loss per epoch and the test accuracy.

    python examples/train_dgl_graphsage.py                     # a small synthetic graph, in seconds
    python examples/train_dgl_graphsage.py --synth-nodes 200000 --host-cache 16MB
    python examples/train_dgl_graphsage.py --dataset both      # Cora, then the synthetic graph

Datasets are written under ./tierfs-examples/dgl of the working directory (--workdir) and reused.

Needs DGL (``scripts/dgl_test.sh`` builds ``.venv-dgl``) and the tierfs package with its library:
``make lib`` and ``PYTHONPATH=python``. Cora is converted from its raw Planetoid files (nothing is
downloaded): ``--cora-source``, else ``$TIERFS_DATASETS/planetoid-cora/raw``, else
``shared/datasets/planetoid-cora/raw`` in a parent folder of the tierfs package or of the working
directory (a development checkout's ``../shared``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import tierfs

# DGL is imported by main, after the arguments are read, so that --help works without it.
dglnn = tdgl = None


def _import_dgl() -> None:
    global dglnn, tdgl
    try:
        import dgl.nn as dgl_nn
    except ImportError as e:
        raise SystemExit(f"train_dgl_graphsage.py needs DGL ({e}); scripts/dgl_test.sh builds .venv-dgl with it") from None
    import tierfs.dgl as tierfs_dgl

    dglnn, tdgl = dgl_nn, tierfs_dgl


class SAGE(torch.nn.Module):
    def __init__(self, in_dim: int, hidden: int, classes: int, dropout: float):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            [dglnn.SAGEConv(in_dim, hidden, "mean"), dglnn.SAGEConv(hidden, classes, "mean")]
        )
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i + 1 < len(self.layers):
                h = self.dropout(F.relu(h))
        return h


def evaluate(model, store, split, fanouts, device) -> float:
    model.eval()
    sampler = tdgl.NeighborSampler(store, fanouts, seed=12345)
    correct = total = 0
    with torch.no_grad():
        for _, _, blocks in tdgl.DataLoader(store, split, sampler, batch_size=1024, device=device):
            x = blocks[0].srcdata["feat"].float()
            y = blocks[-1].dstdata["label"]
            pred = model(blocks, x).argmax(1)
            keep = y >= 0
            correct += int((pred[keep] == y[keep]).sum())
            total += int(keep.sum())
    return correct / max(total, 1)


def train(name: str, path: str, args) -> float:
    device = torch.device(args.device)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    with tierfs.open(path, host_cache=args.host_cache) as store:
        print(f"[{name}] {store!r}")
        train_ids = store.split("train")
        print(
            f"[{name}] train {len(train_ids)}  val {len(store.split('val'))}  "
            f"test {len(store.split('test'))}  fanouts {fanouts}"
        )
        torch.manual_seed(args.seed)
        model = SAGE(store.dim, args.hidden, store.num_classes, args.dropout).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
        sampler = tdgl.NeighborSampler(store, fanouts, seed=args.seed)
        loader = tdgl.DataLoader(
            store, train_ids, sampler, batch_size=args.batch_size, shuffle=True, seed=args.seed,
            device=device,
        )
        for epoch in range(1, args.epochs + 1):
            model.train()
            t0 = time.perf_counter()
            total_loss, count = 0.0, 0
            for _, _, blocks in loader:
                x = blocks[0].srcdata["feat"].float()
                y = blocks[-1].dstdata["label"]
                keep = y >= 0
                loss = F.cross_entropy(model(blocks, x)[keep], y[keep])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total_loss += loss.item() * int(keep.sum())
                count += int(keep.sum())
            val = evaluate(model, store, "val", fanouts, device)
            print(
                f"[{name}] epoch {epoch:3d}  loss {total_loss / max(count, 1):.4f}  "
                f"val acc {val:.4f}  ({time.perf_counter() - t0:.2f}s)",
                flush=True,
            )
        test = evaluate(model, store, "test", fanouts, device)
        stats = store.stats()
        print(f"[{name}] test accuracy {test:.4f}")
        print(f"[{name}] tierfs stats: {summarize(stats)}")
        return test


def summarize(stats: dict) -> str:
    """gathers, rows, and the rows each tier served."""
    parts = [f"{k}={stats[k]}" for k in ("gathers", "rows_gathered", "samples") if k in stats]
    for t in stats.get("tiers") or []:
        if isinstance(t, dict) and "tier" in t:
            parts.append(f"{t['tier']}_hits={t.get('hits')}")
    io = stats.get("io") or {}
    if "reads" in io:
        parts.append(f"disk_reads={io['reads']}")
    return " ".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=["cora", "synth", "both"], default="synth",
                   help="synth: a synthetic power-law graph; cora: Planetoid Cora from its raw files; both (default: synth)")
    p.add_argument("--workdir", default="tierfs-examples/dgl", help="where datasets are written (default: tierfs-examples/dgl)")
    p.add_argument("--cora-source", default=None,
                   help="folder of the raw ind.cora.* files (default: $TIERFS_DATASETS/planetoid-cora/raw, else "
                        "shared/datasets/planetoid-cora/raw in a parent folder of the tierfs package or of the working directory)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--fanouts", default="10,10", help="per layer, input layer first")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--host-cache", default="4MB", help="tierfs host tier budget")
    p.add_argument("--synth-nodes", type=int, default=5000)
    p.add_argument("--synth-dim", type=int, default=64)
    p.add_argument("--synth-classes", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    _import_dgl()

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if args.dataset in ("cora", "both"):
        try:
            from tierfs.datasets import cora

            path = cora(str(work / "cora"), source=args.cora_source)
        except (tierfs.NotFoundError, FileNotFoundError) as e:
            if args.dataset == "cora":
                print(f"cora: {e}\n(pass --cora-source DIR with the raw ind.cora.* files, or --dataset synth)", file=sys.stderr)
                return 2
            print(f"[cora] skipped: {e}")
        else:
            train("cora", path, args)
    if args.dataset in ("synth", "both"):
        path = str(work / f"synth-{args.synth_nodes}-{args.synth_dim}-{args.synth_classes}")
        if not os.path.isfile(os.path.join(path, "manifest.json")):
            tierfs.synth(
                path, nodes=args.synth_nodes, avg_degree=10, dim=args.synth_dim,
                classes=args.synth_classes, seed=args.seed,
            )
        train("synth", path, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
