"""Training parity for link prediction: a GraphSAGE encoder with a dot-product decoder on a
planted-partition graph, batches from tierfs.pyg.LinkNeighborLoader (features read from the
tierfs dataset) vs PyG's LinkLoader over the in-memory Data, both sampled (neighbors and binary
negatives) by tierfs.pyg.NeighborSampler with the same seed. Test AUC must agree within 0.01
and be well above chance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

import torch.nn.functional as F  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import LinkLoader  # noqa: E402
from torch_geometric.nn import GraphSAGE  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import rng  # noqa: E402

N, BLOCKS, DIM = 1200, 6, 16


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Edges mostly inside blocks; features a noisy copy of the block: links are predictable."""
    r = rng(21)
    block = r.integers(0, BLOCKS, N)
    src = r.integers(0, N, 12000)
    same = r.random(12000) < 0.85
    members = [np.flatnonzero(block == b) for b in range(BLOCKS)]
    dst = np.where(same, [r.choice(members[block[s]]) for s in src], r.integers(0, N, 12000))
    edges = np.stack([src, dst]).astype(np.int64)
    x = (np.eye(BLOCKS, DIM)[block] + 0.8 * r.standard_normal((N, DIM))).astype(np.float32)
    path = tierfs.ingest(tmp_path_factory.mktemp("link-train") / "g", edges, x)
    store = tierfs.open(path, host_cache="64KiB")
    perm = r.permutation(edges.shape[1])
    yield Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(edges), num_nodes=N), store, edges[:, perm[:9600]], edges[:, perm[9600:]]
    store.close()


def auc(score: torch.Tensor, label: torch.Tensor) -> float:
    """ROC AUC by ranks (ties averaged)."""
    order = score.argsort()
    ranks = torch.empty_like(score, dtype=torch.float64)
    s = score[order]
    _, inv, counts = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    ranks[order] = (starts[inv] + (counts[inv] + 1) / 2).to(torch.float64)
    pos = label > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def run(make_loader, seed: int) -> float:
    torch.manual_seed(seed)
    model = GraphSAGE(DIM, 32, num_layers=2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train = make_loader("train", seed)  # one loader: each epoch its own order and sampler seeds
    for _ in range(3):
        model.train()
        for b in train:
            opt.zero_grad()
            z = model(b.x, b.edge_index)
            out = (z[b.edge_label_index[0]] * z[b.edge_label_index[1]]).sum(-1)
            F.binary_cross_entropy_with_logits(out, b.edge_label).backward()
            opt.step()
    model.eval()
    scores, labels = [], []
    with torch.no_grad():
        for b in make_loader("test", seed + 1):
            z = model(b.x, b.edge_index)
            scores.append((z[b.edge_label_index[0]] * z[b.edge_label_index[1]]).sum(-1))
            labels.append(b.edge_label)
    return auc(torch.cat(scores), torch.cat(labels))


def test_link_prediction_auc_parity(planted):
    data, store, train, test = planted
    eli = {"train": torch.from_numpy(train), "test": torch.from_numpy(test)}

    def ours(split, seed):
        torch.manual_seed(seed)  # the DataLoader's shuffle order (nothing else in training draws)
        return tierfs.pyg.LinkNeighborLoader(store, [5, 5], edge_label_index=eli[split], neg_sampling="binary",
                                             batch_size=256, shuffle=split == "train", seed=seed)

    def theirs(split, seed):
        torch.manual_seed(seed)
        return LinkLoader(data, link_sampler=tierfs.pyg.NeighborSampler(store, [5, 5], seed=seed), edge_label_index=eli[split],
                          neg_sampling="binary", batch_size=256, shuffle=split == "train")

    a, b = run(ours, 3), run(theirs, 3)
    print(f"test AUC: tierfs {a:.4f}, in-memory {b:.4f}")
    assert a > 0.75 and b > 0.75
    assert abs(a - b) <= 0.01
