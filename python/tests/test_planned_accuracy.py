"""Planned epochs train as well as fresh sampling: GraphSAGE on Planetoid Cora and on a synthetic
graph, K=2 planned epochs replayed over 20 epochs vs a new sample every epoch, test accuracy
averaged over seeds."""

from __future__ import annotations

import statistics

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv

import tierfs

EPOCHS, SEEDS, K = 20, 3, 2


class SAGE(torch.nn.Module):
    def __init__(self, dim: int, hidden: int, classes: int):
        super().__init__()
        self.c1, self.c2 = SAGEConv(dim, hidden), SAGEConv(hidden, classes)

    def forward(self, x, edge_index):
        x = F.dropout(F.relu(self.c1(x, edge_index)), 0.5, self.training)
        return self.c2(x, edge_index)


def train_and_test(store, seed: int, planned: int, plan_dir, batch_size: int = 32) -> float:
    torch.manual_seed(seed)
    model = SAGE(store.dim, 64, store.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train = torch.from_numpy(store.split("train"))
    loader = tierfs.Loader(store, store.sampler([10, 10], seed=seed), train, batch_size=batch_size, seed=seed,
                           planned_epochs=planned, plan_dir=plan_dir, reuse_samples=bool(planned))
    for _ in range(EPOCHS):
        model.train()
        for b in loader:
            opt.zero_grad()
            out = model(b.x.float(), b.sample.edge_index)[: b.batch_size]
            F.cross_entropy(out, b.y).backward()
            opt.step()
    loader.close()
    model.eval()
    test = torch.from_numpy(store.split("test"))
    correct = 0
    with torch.no_grad():
        for b in tierfs.Loader(store, store.sampler([-1, -1]), test, batch_size=1000, shuffle=False):
            pred = model(b.x.float(), b.sample.edge_index)[: b.batch_size].argmax(-1)
            correct += int((pred == b.y).sum())
    return correct / len(test)


def test_planned_accuracy_matches_fresh(cora_dir, tmp_path):
    store = tierfs.open(cora_dir, host_cache="2MB")  # most rows on the SSD tier: packed
    fresh = [train_and_test(store, s, 0, None) for s in range(SEEDS)]
    planned = [train_and_test(store, s, K, str(tmp_path / f"plan{s}")) for s in range(SEEDS)]
    f, p = statistics.mean(fresh), statistics.mean(planned)
    print(f"Cora GraphSAGE test accuracy over {SEEDS} seeds, {EPOCHS} epochs: fresh sampling {f:.4f} "
          f"{np.round(fresh, 3).tolist()}, planned K={K} {p:.4f} {np.round(planned, 3).tolist()}")
    assert f > 0.6 and abs(p - f) <= 0.03
    store.close()


def test_planned_accuracy_matches_fresh_synthetic(tmp_path):
    # A power-law graph with community locality; features are a class centroid plus noise.
    ds = tierfs.synth(tmp_path / "ds", nodes=20000, avg_degree=8, dim=32, classes=8, seed=5,
                      train_frac=0.1, val_frac=0.0, test_frac=0.2, degree_exponent=2.5, locality=0.5)
    store = tierfs.open(ds, host_cache="256KB")
    fresh = [train_and_test(store, s, 0, None, batch_size=128) for s in range(SEEDS)]
    planned = [train_and_test(store, s, K, str(tmp_path / f"plan{s}"), batch_size=128) for s in range(SEEDS)]
    f, p = statistics.mean(fresh), statistics.mean(planned)
    print(f"synthetic GraphSAGE test accuracy over {SEEDS} seeds, {EPOCHS} epochs: fresh sampling {f:.4f} "
          f"{np.round(fresh, 3).tolist()}, planned K={K} {p:.4f} {np.round(planned, 3).tolist()}")
    assert f > 0.3 and abs(p - f) <= 0.03
    store.close()
