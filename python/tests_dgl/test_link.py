"""Link prediction through tierfs.dgl, against DGL's own link sampling on the same graph.

tierfs.dgl.NeighborSampler under DGL's ``as_edge_prediction_sampler`` (exclude="self",
"reverse_id" with reverse_eids, Uniform negatives) over ``dgl.dataloading.DataLoader``: each
block is the same draw as without exclusion, less exactly the excluded edge ids. tierfs.dgl's
own EdgePredictionSampler (the core's link sampling, no graph in memory): pair and negative
graphs laid out as DGL's, Uniform(k) negatives (the positive's source, a destination in range),
seed edges (and reverses) absent from every block, and the output layer seeded-equal to DGL's
wrapper around the same tierfs sampler and the same negatives. Seeds are printed.

The graph is undirected (each pair once each way, no self loops, no parallel edges), so DGL's
exclusion by edge id and tierfs's by pair mean the same edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import dgl
import dgl.dataloading
import tierfs
import tierfs.dgl as tdgl

N = 600
DIM = 16
CLASSES = 4


@dataclass
class UGraph:
    dir: str
    x: np.ndarray
    src: np.ndarray  # CSC order: edge id i is (src[i], dst[i])
    dst: np.ndarray
    reverse_eids: torch.Tensor  # edge id of (dst[i], src[i])
    test_pairs: np.ndarray  # (2, m) held-out pairs, not in the graph, each once


def _rng(name, seed=None):
    seed = np.random.SeedSequence().entropy % (1 << 32) if seed is None else seed
    print(f"{name}: seed {seed}")
    return np.random.default_rng(seed)


def make_ugraph(root, seed=11) -> UGraph:
    """A homophilous undirected graph (most pairs within a class; features a class centroid plus
    noise), some pairs held out for testing."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, N)
    x = (rng.normal(0, 1, (CLASSES, DIM))[y] + rng.normal(0, 1.2, (N, DIM))).astype(np.float32)
    by_class = [np.flatnonzero(y == c) for c in range(CLASSES)]
    pairs = set()
    for v in range(N):
        for _ in range(int(rng.integers(1, 6))):
            u = int(rng.choice(by_class[y[v]])) if rng.random() < 0.9 else int(rng.integers(0, N))
            if u != v:
                pairs.add((min(u, v), max(u, v)))
    pairs = np.array(sorted(pairs), dtype=np.int64)
    pairs = pairs[rng.permutation(len(pairs))]
    test = pairs[: len(pairs) // 10]
    train = pairs[len(pairs) // 10 :]
    src = np.r_[train[:, 0], train[:, 1]]
    dst = np.r_[train[:, 1], train[:, 0]]
    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "edges.npy", np.stack([src, dst]))
    np.save(root / "features.npy", x)
    out = str(root / "dataset")
    tierfs.ingest(out, edges=str(root / "edges.npy"), features=str(root / "features.npy"))
    order = np.argsort(dst, kind="stable")  # the CSC tierfs builds: edge id = CSC position
    src, dst = src[order], dst[order]
    eid = {(int(u), int(v)): i for i, (u, v) in enumerate(zip(src, dst))}
    rev = torch.tensor([eid[(int(v), int(u))] for u, v in zip(src, dst)], dtype=torch.int64)
    return UGraph(out, x, src, dst, rev, test.T.copy())


@pytest.fixture(scope="module")
def ug(tmp_path_factory):
    return make_ugraph(tmp_path_factory.mktemp("tierfs-dgl-link"))


@pytest.fixture(scope="module")
def ustore(ug):
    s = tierfs.open(ug.dir, host_cache="1MB")
    yield s
    s.close()


def _eids(block):
    return block.edata[dgl.EID]


def test_dgl_graph_is_the_csc(ug, ustore):
    g = tdgl.dgl_graph(ustore)
    s, d = g.edges()
    np.testing.assert_array_equal(s.numpy(), ug.src)
    np.testing.assert_array_equal(d.numpy(), ug.dst)


# --------------------------------------------------------------------------------------------
# tierfs.dgl.NeighborSampler under DGL's as_edge_prediction_sampler


@pytest.mark.parametrize("exclude", [None, "self", "reverse_id"])
def test_neighbor_sampler_under_dgl_edge_prediction(ug, ustore, exclude):
    """DGL's wrapper hands tierfs's sampler the seeds and exclude_eids; every block is the draw
    of the same seeds without exclusion, less exactly the excluded edge ids (fanout -1 at the
    seeds: every seed edge is drawn there, so each excluded one is really dropped)."""
    g = tdgl.dgl_graph(ustore)
    rng = _rng(f"edge prediction exclude={exclude}")
    eids = torch.from_numpy(rng.choice(g.num_edges(), 96, replace=False))
    fanouts = [3, -1]
    edge_sampler = dgl.dataloading.as_edge_prediction_sampler(
        tdgl.NeighborSampler(ustore, fanouts, seed=5),
        exclude=exclude,
        reverse_eids=ug.reverse_eids,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(2),
    )
    reference = tdgl.NeighborSampler(ustore, fanouts, seed=5)  # called in the same order
    loader = dgl.dataloading.DataLoader(g, eids, edge_sampler, batch_size=32, shuffle=False)
    batches = 0
    for input_nodes, pair, neg, blocks in loader:
        batch = pair.edata[dgl.EID]
        seeds = pair.ndata[dgl.NID]
        assert neg.num_edges() == 2 * batch.numel()
        assert torch.equal(blocks[-1].dstdata[dgl.NID], seeds)
        assert torch.equal(input_nodes, blocks[0].srcdata[dgl.NID])
        excluded = {None: batch[:0], "self": batch, "reverse_id": torch.cat([batch, ug.reverse_eids[batch]])}[exclude]
        ref_input, _, ref_blocks = reference.sample(seeds)
        assert torch.equal(input_nodes, ref_input)
        assert set(excluded.tolist()) <= set(_eids(ref_blocks[-1]).tolist())
        for got, want in zip(blocks, ref_blocks):
            w = _eids(want)
            assert torch.equal(_eids(got), w[~torch.isin(w, excluded)])
            assert torch.equal(got.srcdata[dgl.NID], want.srcdata[dgl.NID])
            assert got.num_dst_nodes() == want.num_dst_nodes()
            s, d = got.edges()
            ws, wd = want.edges()
            keep = ~torch.isin(w, excluded)
            assert torch.equal(s, ws[keep]) and torch.equal(d, wd[keep])
        batches += 1
    assert batches == 3
