#!/usr/bin/env python3
"""Link-task parity on real data for trainable embeddings (issue 45's second bar): paper–author
link prediction on ACM's bipartite paper–author graph, the authors' features learned, their
table in tierfs.Embedding (on disk, behind a host cache far smaller than the table, its rows in
the batches through tierfs.pyg.LinkNeighborLoader's embeddings=) against
torch.nn.Embedding(sparse=True) + torch.optim.SparseAdam in memory (rows looked up from the
batch's n_id). Papers keep their 1,902 binary features.

The paper–author edges are split once (fixed permutation): 10% held out for test, the rest the
graph and the training links. Per seed both arms start from the same model (torch.manual_seed)
and the same author rows (N(0, std²) from the seed), draw the same batches (binary negatives
from the sampler's seed, seed edges left out of their own neighbourhoods) and train
to_hetero(GraphSAGE) with Adam for the model and SparseAdam for the table; the score of a
(paper, author) pair is the dot product of their outputs. Test: the held-out links against as
many (paper, author) pairs that are no edge (fixed), AUC. Printed per seed: each arm's AUC, the
largest difference between the two final author tables, the tierfs table's cache counters, the
seconds of each arm. The bar: mean AUCs within 1 point.

    PYTHONPATH=python TIERFS_LIB=build/libtierfs.so .venv/bin/python -W ignore::UserWarning \\
        benchmarks/devvm-2026-12-02-embedding/acm_link_parity.py [--seeds 0 1 2 3 4] [--epochs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.nn import GraphSAGE, to_hetero

import tierfs
import tierfs.datasets
import tierfs.pyg

WRITES = ("paper", "to", "author")
REV = ("author", "to", "paper")


def split_graph(test_share: float):
    """ACM's papers (features) and authors (none) with the training paper–author edges both
    ways; the held-out edges and as many non-edges, fixed, as the test pairs and labels."""
    d = tierfs.datasets.acm(split=20, derived_x=False)
    ei = d[WRITES]
    r = np.random.default_rng(12345)
    perm = r.permutation(ei.shape[1])
    n_test = int(test_share * ei.shape[1])
    test, train = ei[:, perm[:n_test]], ei[:, np.sort(perm[n_test:])]
    n_paper, n_author = d["paper"]["num_nodes"], d["author"]["num_nodes"]
    edges = set((ei[0] * n_author + ei[1]).tolist())
    neg = []
    while len(neg) < n_test:
        p, a = int(r.integers(n_paper)), int(r.integers(n_author))
        if p * n_author + a not in edges:
            neg.append((p, a))
            edges.add(p * n_author + a)
    data = HeteroData()
    data["paper"].x = torch.from_numpy(d["paper"]["x"])
    data["author"].num_nodes = n_author
    data[WRITES].edge_index = torch.from_numpy(train)
    data[REV].edge_index = torch.from_numpy(train[::-1].copy())
    pairs = torch.cat([torch.from_numpy(test), torch.tensor(neg).T], dim=1)
    labels = torch.cat([torch.ones(n_test), torch.zeros(n_test)])
    return data, pairs, labels


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The area under the ROC curve: the Mann–Whitney statistic, ties counted half."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    _, inv, counts = np.unique(scores, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / counts)[inv]  # tied scores share their mean rank
    pos = labels == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def run(arm: str, store, data, pairs, labels, seed: int, args, root: Path) -> dict:
    """Trains one arm from seed; returns its test AUC, final author rows, stats, seconds."""
    t0 = time.perf_counter()
    n = data["author"].num_nodes
    rows = torch.randn(n, args.dim, generator=torch.Generator().manual_seed(seed * 101)) * args.init_std
    if arm == "tierfs":
        emb = tierfs.Embedding(store, "author", args.dim, root / f"author-{seed}", optimizer="adam", lr=args.emb_lr, init=rows, host_cache=args.author_cache)
        tables = {"author": emb}
        x_author = lambda b: b["author"].x  # noqa: E731  # the table's rows, from the loader
    else:
        emb = torch.nn.Embedding(n, args.dim, sparse=True)  # before manual_seed: both arms draw the same
        with torch.no_grad():
            emb.weight.copy_(rows)
        tables = None
        x_author = lambda b: emb(b["author"].n_id)  # noqa: E731
    nn = {et: args.fanouts for et in data.edge_types}

    def loader(edges, edge_label, batch_size, shuffle, neg):
        return tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(WRITES, edges), edge_label=edge_label, neg_sampling=neg,
                                             batch_size=batch_size, shuffle=shuffle, seed=seed, exclude_seed_edges=edges is None,
                                             reverse_edge_types={WRITES: REV}, embeddings=tables)

    def scores(b):
        h = model({"paper": b["paper"].x, "author": x_author(b)}, b.edge_index_dict)
        src, dst = b[WRITES].edge_label_index
        return (h["paper"][src] * h["author"][dst]).sum(-1)

    torch.manual_seed(seed)
    model = to_hetero(GraphSAGE(-1, args.hidden, num_layers=2, out_channels=args.hidden), data.metadata(), aggr="sum")
    with torch.no_grad():  # the lazy shapes
        scores(next(iter(loader(pairs[:, :8], labels[:8], 8, False, None))))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    emb_opt = emb if arm == "tierfs" else torch.optim.SparseAdam([emb.weight], lr=args.emb_lr)
    train = loader(None, None, args.batch_size, True, "binary")
    for _ in range(args.epochs):
        model.train()
        for b in train:
            opt.zero_grad()
            emb_opt.zero_grad()
            F.binary_cross_entropy_with_logits(scores(b), b[WRITES].edge_label).backward()
            opt.step()
            emb_opt.step()
    model.eval()
    out, lab = [], []
    with torch.no_grad():
        for b in loader(pairs, labels, 1000, False, None):
            out.append(scores(b))
            lab.append(b[WRITES].edge_label)
    res = {"auc": 100.0 * auc(torch.cat(out).numpy(), torch.cat(lab).numpy()), "seconds": time.perf_counter() - t0}
    ids = torch.arange(n)
    if arm == "tierfs":
        res["author"], res["stats"] = emb.read(ids), emb.stats()
        res["table_bytes"] = emb.info["pages"] * emb.info["page_bytes"]
        emb.close()
    else:
        res["author"] = emb.weight.detach().clone()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[5, 5])
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--dim", type=int, default=64, help="the learned rows' width")
    ap.add_argument("--init-std", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=0.005, help="Adam's lr for the model")
    ap.add_argument("--emb-lr", type=float, default=0.01, help="SparseAdam's lr for the table")
    ap.add_argument("--author-cache", type=int, default=256 << 10, help="the author table's host cache, bytes")
    ap.add_argument("--test-share", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data, pairs, labels = split_graph(args.test_share)
    aucs = {"tierfs": [], "torch": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = tierfs.open(tierfs.from_pyg(data, root / "acm-pa"), host_cache="4MiB")
        for s in args.seeds:
            a = run("tierfs", store, data, pairs, labels, s, args, root)
            b = run("torch", store, data, pairs, labels, s, args, root)
            aucs["tierfs"].append(a["auc"])
            aucs["torch"].append(b["auc"])
            diff = (a["author"] - b["author"]).abs().max().item()
            st = a["stats"]
            print(
                f"seed {s}: tierfs.Embedding AUC {a['auc']:.2f}% ({a['seconds']:.1f} s)  nn.Embedding {b['auc']:.2f}% "
                f"({b['seconds']:.1f} s)  author rows max |diff| {diff:.3g}  author table {a['table_bytes'] >> 10} KiB, "
                f"cache {st['cache_pages']} pages: misses {st['misses']} evictions {st['evictions']} pages_written {st['pages_written']}",
                flush=True,
            )
        store.close()
    mo, mt = statistics.mean(aucs["tierfs"]), statistics.mean(aucs["torch"])
    so, stt = statistics.pstdev(aucs["tierfs"]), statistics.pstdev(aucs["torch"])
    print(f"mean over {len(args.seeds)} seeds: tierfs.Embedding AUC {mo:.2f}% ± {so:.2f}  nn.Embedding {mt:.2f}% ± {stt:.2f}  "
          f"difference {mo - mt:+.2f} points")


if __name__ == "__main__":
    main()
