"""Training smoke tests: a 2-layer GraphSAGE (dgl.nn.SAGEConv) on blocks sampled and features
gathered by tierfs learns; Cora through tierfs matches the raw Planetoid files; the example
script runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dgl.nn as dglnn
import tierfs
import tierfs.dgl as tdgl

from conftest import EXAMPLE, REPO, cora_raw_dir


class SAGE(torch.nn.Module):
    def __init__(self, in_dim, hidden, classes):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            [dglnn.SAGEConv(in_dim, hidden, "mean"), dglnn.SAGEConv(hidden, classes, "mean")]
        )

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i + 1 < len(self.layers):
                h = F.relu(h)
        return h


def _train(store, sampler, epochs, lr=0.01, batch_size=64):
    model = SAGE(store.dim, 32, store.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loader = tdgl.DataLoader(store, "train", sampler, batch_size=batch_size, shuffle=True)
    losses = []
    for _ in range(epochs):
        total, count = 0.0, 0
        model.train()
        for _, _, blocks in loader:
            y = blocks[-1].dstdata["label"]
            logits = model(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * y.numel()
            count += y.numel()
        losses.append(total / count)
    return model, losses


def _accuracy(model, store, sampler, split):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for _, _, blocks in tdgl.DataLoader(store, split, sampler, batch_size=256):
            pred = model(blocks, blocks[0].srcdata["feat"]).argmax(1)
            y = blocks[-1].dstdata["label"]
            correct += int((pred == y).sum())
            total += y.numel()
    return correct / total


def test_graphsage_loss_falls(graph, store):
    sampler = tdgl.NeighborSampler(store, [5, 5], seed=0)
    model, losses = _train(store, sampler, epochs=6)
    assert losses[-1] < 0.6 * losses[0], losses
    acc = _accuracy(model, store, tdgl.NeighborSampler(store, [10, 10], seed=1), "test")
    assert acc > 0.6, acc  # chance is 0.2


def test_graphsage_on_synthetic_store(tmp_path):
    path = tierfs.synth(str(tmp_path / "synth"), nodes=2000, avg_degree=6, dim=16, classes=4, seed=3)
    with tierfs.open(path, host_cache="256KB") as s:
        _, losses = _train(s, tdgl.NeighborSampler(s, [4, 4], seed=0), epochs=3, batch_size=128)
    assert all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0], losses


@pytest.mark.skipif(cora_raw_dir() is None, reason="no raw Planetoid Cora files (shared/datasets)")
def test_cora_through_tierfs_matches_raw(tmp_path):
    from tierfs.datasets import cora, read_planetoid

    raw = read_planetoid(cora_raw_dir(), "cora")
    path = cora(str(tmp_path / "cora"))
    with tierfs.open(path, host_cache=0) as s:
        assert (s.num_nodes(), s.dim, s.num_classes) == (2708, 1433, 7)
        fs = tdgl.FeatureStore(s)
        ids = torch.from_numpy(np.random.default_rng(0).integers(0, s.num_nodes(), 500))
        np.testing.assert_array_equal(fs.read("node", None, "feat", ids).numpy(), raw["x"][ids.numpy()])
        np.testing.assert_array_equal(fs.read("node", None, "label", ids).numpy(), raw["y"][ids.numpy()])
        np.testing.assert_array_equal(np.sort(s.split("test")), np.sort(raw["test"]))
        _, _, blocks = tdgl.NeighborSampler(s, [-1]).sample(torch.from_numpy(raw["test"][:50]))
        # Cora is stored undirected: every node's full neighborhood is its edge_index row.
        ei = raw["edge_index"]
        dst = blocks[0].dstdata["_ID"].numpy()
        deg = np.bincount(ei[1], minlength=s.num_nodes())
        np.testing.assert_array_equal(blocks[0].in_degrees().numpy(), deg[dst])


def test_example_script_runs(tmp_path):
    """The example end to end on its synthetic graph only (Cora is covered above)."""
    cmd = [
        sys.executable,
        str(EXAMPLE),
        "--dataset",
        "synth",
        "--epochs",
        "2",
        "--synth-nodes",
        "3000",
        "--workdir",
        str(tmp_path),
    ]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"epoch\s+2 +loss", run.stdout) and "test accuracy" in run.stdout, run.stdout


def test_example_script_runs_with_no_arguments(tmp_path):
    """As a new user runs it: no arguments, from an empty folder, no network; its datasets go under
    that folder (./tierfs-examples/dgl), nowhere in the checkout."""
    run = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test accuracy" in run.stdout, run.stdout
    assert (tmp_path / "tierfs-examples" / "dgl").is_dir()
    # argparse wraps help at the terminal's width, which may break the path at its hyphen
    help_ = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "200"})
    assert help_.returncode == 0 and "tierfs-examples/dgl" in help_.stdout, help_.stdout
