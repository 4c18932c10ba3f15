#!/usr/bin/env python3
"""Training parity on real data for trainable embeddings (issue 45's second bar): ACM node
classification with the author and subject features learned instead of given, their tables in
tierfs.Embedding (on disk, behind a host cache far smaller than the table) against
torch.nn.Embedding(sparse=True) + torch.optim.SparseAdam in memory. Papers keep their 1,902
binary features.

Per seed both arms start from the same model (torch.manual_seed) and the same embedding rows
(N(0, std²) from the seed), draw the same batches (tierfs.pyg.NeighborLoader with the seed, the
featureless types' rows looked up from the batch's n_id) and train to_hetero(GraphSAGE) with
Adam for the model and SparseAdam for the tables. Printed per seed: test accuracy of each arm, the
largest difference between the two final author tables, the tierfs table's cache counters, the
seconds of each arm. The bar: means within 1 point.

    PYTHONPATH=python TIERFS_LIB=build/libtierfs.so .venv/bin/python \\
        benchmarks/devvm-2026-12-02-embedding/acm_parity.py [--seeds 0 1 2 3 4] [--epochs 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE, to_hetero

import tierfs
import tierfs.datasets
import tierfs.pyg

LEARNED = ("author", "subject")


def tables(arm: str, store, data, seed: int, args, root: Path) -> dict:
    """The learned types' tables of one arm, from the same initial rows."""
    out = {}
    for k, t in enumerate(LEARNED):
        n = data[t].num_nodes
        g = torch.Generator().manual_seed(seed * 101 + k)
        rows = torch.randn(n, args.dim, generator=g) * args.init_std
        if arm == "tierfs":
            cache = args.author_cache if t == "author" else 8192
            out[t] = tierfs.Embedding(store, t, args.dim, root / f"{t}-{seed}", optimizer="adam", lr=args.emb_lr, init=rows, host_cache=cache)
        else:
            e = torch.nn.Embedding(n, args.dim, sparse=True)
            with torch.no_grad():
                e.weight.copy_(rows)
            out[t] = e
    return out


def features(b, emb: dict) -> dict:
    x = {"paper": b["paper"].x}
    for t in LEARNED:
        x[t] = emb[t](b[t].n_id)
    return x


def run(arm: str, store, data, seed: int, args, root: Path) -> dict:
    """Trains one arm from seed; returns its test accuracy, final author rows, stats, seconds."""
    t0 = time.perf_counter()
    nn = {et: args.fanouts for et in data.edge_types}

    def loader(split, batch_size, shuffle, s):
        return tierfs.pyg.NeighborLoader(store, nn, input_nodes=("paper", split), batch_size=batch_size, shuffle=shuffle, seed=s, shuffle_seed=s)

    emb = tables(arm, store, data, seed, args, root)
    torch.manual_seed(seed)
    model = to_hetero(GraphSAGE(-1, args.hidden, num_layers=2, out_channels=3), data.metadata(), aggr="sum")
    with torch.no_grad():  # the lazy shapes
        b = next(iter(loader("train", 8, False, seed + 2)))
        torch.manual_seed(seed)
        model(features(b, emb), b.edge_index_dict)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    # what steps the tables: torch's SparseAdam over the nn.Embedding weights, or each tierfs.Embedding
    tables_opt = [torch.optim.SparseAdam([e.weight for e in emb.values()], lr=args.emb_lr)] if arm == "torch" else list(emb.values())
    train = loader("train", args.batch_size, True, seed)
    for _ in range(args.epochs):
        model.train()
        for b in train:
            opt.zero_grad()
            for e in tables_opt:
                e.zero_grad()
            n = b["paper"].batch_size
            out = model(features(b, emb), b.edge_index_dict)["paper"][:n]
            F.cross_entropy(out, b["paper"].y[:n]).backward()
            opt.step()
            for e in tables_opt:
                e.step()
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for b in loader("test", 500, False, seed + 1):
            n = b["paper"].batch_size
            pred = model(features(b, emb), b.edge_index_dict)["paper"][:n].argmax(-1)
            correct += int((pred == b["paper"].y[:n]).sum())
            total += n
    ids = torch.arange(data["author"].num_nodes)
    res = {"acc": 100.0 * correct / total, "seconds": time.perf_counter() - t0}
    if arm == "tierfs":
        res["author"] = emb["author"].read(ids)
        res["stats"] = emb["author"].stats()
        res["table_bytes"] = emb["author"].info["pages"] * emb["author"].info["page_bytes"]
        for e in emb.values():
            e.close()
    else:
        res["author"] = emb["author"].weight.detach().clone()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--split", type=int, default=60, help="HeCo's labelled papers per class (20, 40, 60)")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[5, 5])
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--dim", type=int, default=64, help="the learned rows' width")
    ap.add_argument("--init-std", type=float, default=0.1)
    ap.add_argument("--emb-lr", type=float, default=0.01, help="SparseAdam's lr for the tables")
    ap.add_argument("--author-cache", type=int, default=256 << 10, help="the author table's host cache, bytes")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = tierfs.datasets.acm(as_pyg=True, split=args.split, derived_x=False)
    accs = {"tierfs": [], "torch": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = tierfs.open(tierfs.from_pyg(data, root / "acm"), host_cache="4MiB")
        for s in args.seeds:
            a = run("tierfs", store, data, s, args, root)
            b = run("torch", store, data, s, args, root)
            accs["tierfs"].append(a["acc"])
            accs["torch"].append(b["acc"])
            diff = (a["author"] - b["author"]).abs().max().item()
            st = a["stats"]
            print(
                f"seed {s}: tierfs.Embedding {a['acc']:.1f}% ({a['seconds']:.1f} s)  nn.Embedding {b['acc']:.1f}% "
                f"({b['seconds']:.1f} s)  author rows max |diff| {diff:.3g}  author table {a['table_bytes'] >> 10} KiB, "
                f"cache {st['cache_pages']} pages: misses {st['misses']} evictions {st['evictions']} pages_written {st['pages_written']}",
                flush=True,
            )
        store.close()
    mo, mt = statistics.mean(accs["tierfs"]), statistics.mean(accs["torch"])
    so, stt = statistics.pstdev(accs["tierfs"]), statistics.pstdev(accs["torch"])
    print(f"mean over {len(args.seeds)} seeds: tierfs.Embedding {mo:.2f}% ± {so:.2f}  nn.Embedding {mt:.2f}% ± {stt:.2f}  "
          f"difference {mo - mt:+.2f} points")


if __name__ == "__main__":
    main()
