"""Heterogeneous training: a 2-layer relational GraphSAGE (an input projection per node type,
one dgl.nn.SAGEConv per edge type, summed per destination type) on ACM's papers
(tierfs.datasets.acm, ingested through from_graphbolt), trained on tierfs blocks with tierfs
features, against the same model trained on the same tierfs samples with features and labels
from DGL's in-memory heterograph."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dgl
import dgl.nn as dglnn
import tierfs
import tierfs.dgl as tdgl

import hetero_data

PAPER = "paper"
FANOUTS = [5, 5]
EPOCHS = 4
SAMPLER_SEED = 17


class RelSAGE(torch.nn.Module):
    """A linear input projection per node type, then per layer one SAGEConv per canonical edge
    type, outputs summed per destination type."""

    def __init__(self, dims: dict, etypes, hidden: int, classes: int):
        super().__init__()
        self.project = torch.nn.ModuleDict({t: torch.nn.Linear(d, hidden) for t, d in dims.items()})
        self.layers = torch.nn.ModuleList()
        for out in (hidden, classes):
            convs = {}
            for src, rel, dst in etypes:
                convs[f"{src}:{rel}:{dst}"] = dglnn.SAGEConv((hidden, hidden), out, "mean")
            self.layers.append(torch.nn.ModuleDict(convs))

    def forward(self, blocks, x: dict) -> dict:
        h = {t: F.relu(self.project[t](v)) for t, v in x.items()}
        for l, (convs, block) in enumerate(zip(self.layers, blocks)):
            out = {}
            for e in block.canonical_etypes:
                src, _, dst = e
                if block.num_edges(e) == 0 or src not in h or dst not in h:
                    continue
                n_dst = block.num_dst_nodes(dst)
                y = convs[":".join(e)](block[e], (h[src], h[dst][:n_dst]))
                out[dst] = out[dst] + y if dst in out else y
            h = {t: F.relu(v) for t, v in out.items()} if l + 1 < len(self.layers) else out
        return h


@pytest.fixture(scope="module")
def acm(tmp_path_factory):
    g = hetero_data.acm(split=60)
    return hetero_data.ingest(g, tmp_path_factory.mktemp("tierfs-dgl-acm"))


def _run(store, acm_graph, in_memory):
    """Trains and tests; features and labels from the tierfs blocks, or (in_memory) from DGL's
    heterograph indexed by the blocks' dgl.NID. Both draw the same samples and batches."""
    torch.manual_seed(0)
    dims = {t: int(acm_graph.nodes[t].data["feat"].shape[1]) for t in acm_graph.ntypes}
    model = RelSAGE(dims, acm_graph.canonical_etypes, 32, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    names = {} if not in_memory else {"feature_name": None, "label_name": None}

    def inputs(input_nodes, output_nodes, blocks):
        if in_memory:
            x = {t: acm_graph.nodes[t].data["feat"][ids] for t, ids in input_nodes.items()}
            y = acm_graph.nodes[PAPER].data["label"][output_nodes[PAPER]]
        else:
            x = {t: blocks[0].srcnodes[t].data["feat"] for t in input_nodes}
            y = blocks[-1].dstnodes[PAPER].data["label"]
        return x, y

    train = tdgl.DataLoader(store, {PAPER: "train"}, tdgl.NeighborSampler(store, FANOUTS, seed=SAMPLER_SEED),
                            batch_size=32, shuffle=True, seed=3, **names)
    losses = []
    for _ in range(EPOCHS):
        model.train()
        total = 0.0
        for batch in train:
            x, y = inputs(*batch)
            loss = F.cross_entropy(model(batch[2], x)[PAPER], y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
        losses.append(total / len(train))
    model.eval()
    test = tdgl.DataLoader(store, {PAPER: "test"}, tdgl.NeighborSampler(store, FANOUTS, seed=SAMPLER_SEED + 1),
                           batch_size=500, **names)
    correct = count = 0
    with torch.no_grad():
        for batch in test:
            x, y = inputs(*batch)
            correct += int((model(batch[2], x)[PAPER].argmax(1) == y).sum())
            count += y.numel()
    return correct / count, losses


def test_acm_relational_sage_tierfs_vs_in_memory(acm):
    graph = acm.heterograph()
    with tierfs.open(acm.dir, host_cache="64MB") as store:
        start = time.perf_counter()
        acc_t, loss_t = _run(store, graph, in_memory=False)
        mid = time.perf_counter()
        acc_m, loss_m = _run(store, graph, in_memory=True)
        end = time.perf_counter()
    print(f"ACM relational SAGE, {EPOCHS} epochs, fanouts {FANOUTS}, sampler seed {SAMPLER_SEED}: "
          f"tierfs test accuracy {acc_t:.4f} ({mid - start:.1f} s), in-memory heterograph {acc_m:.4f} "
          f"({end - mid:.1f} s); losses {np.round(loss_t, 3).tolist()} vs {np.round(loss_m, 3).tolist()}")
    assert loss_t[-1] < loss_t[0]
    assert acc_t > 0.6, acc_t  # 3 classes; chance is ~0.5 (the largest class)
    assert abs(acc_t - acc_m) <= 0.01
