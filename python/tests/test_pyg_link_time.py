"""Disjoint and temporal link sampling (issue 42 item 7; PyG's ``LinkNeighborLoader(disjoint=True,
time_attr=, edge_label_time=)``). PyG's edge_sample with disjoint=True makes every endpoint of a
seed edge and negative the seed of its own tree — one node type: ``cat([src, dst])`` with the
negatives appended to each side, triplet negative j of seed edge i at ``j * n + i`` — and maps
each node to its tree's index mod the seed edges; with ``edge_label_time`` a tree samples at its
seed edge's time, repeated over the negatives (``edge_label_time.repeat(1 + ceil(amount))``).
pyg-lib is not installable here, so PyG's own tests are carried over and the expected samples
are written out by test_pyg_temporal's plain reference of pyg-lib's rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402
from test_pyg_temporal import _reference  # noqa: E402


def _store(tmp_path, data):
    return tierfs.open(tierfs.from_pyg(data, tmp_path / "ds"))


def _random_edge_index(r, num_src, num_dst, num_edges):
    """torch_geometric.testing.get_random_edge_index, drawn from r."""
    return torch.from_numpy(np.stack([r.integers(0, num_src, num_edges), r.integers(0, num_dst, num_edges)]))


def test_temporal_homo_link_neighbor_loader(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_temporal_homo_link_neighbor_loader (batch
    size 1): every batch's nodes are no later than its seed edge's time; and each batch is the
    reference's two trees (src's, dst's) at that time, both of batch 0. The seed edges are given
    (PyG's default, data.edge_index; tierfs's edge_label_index=None takes them in CSC order)."""
    r = rng()
    data = Data(x=torch.randn(10, 5), edge_index=torch.from_numpy(r.integers(0, 10, (2, 123))), time=torch.arange(10))
    edge_label_time = torch.max(data.time[data.edge_index[0]], data.time[data.edge_index[1]])
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1], edge_label_index=data.edge_index, time_attr="time", edge_label=torch.ones(data.num_edges),
                                               edge_label_time=edge_label_time, batch_size=1, shuffle=True)
        for batch in loader:
            assert batch.edge_label_index.size() == (2, 1)
            assert batch.edge_label_time.size() == (1,)
            assert batch.edge_label.size() == (1,)
            assert torch.all(batch.time <= batch.edge_label_time), f"seed {SEED}"
            (i,) = batch.input_id.tolist()
            src, dst = (int(v) for v in data.edge_index[:, i])
            t = int(edge_label_time[i])
            node, tree, row, col, _ = _reference(data.edge_index, [src, dst], [t, t], [-1], node_time=data.time)
            assert batch.n_id.tolist() == node and batch.batch.tolist() == [b % 1 for b in tree], f"seed {SEED}"
            assert batch.edge_index.tolist() == [row, col] and batch.edge_label_index.tolist() == [[0], [1]]


def test_temporal_hetero_link_neighbor_loader(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_temporal_hetero_link_neighbor_loader: time_attr
    without edge_label_time is PyG's ValueError; with both (binary negatives, ratio 0.5) each of
    the 32 seed edges has its own batch and the authors' times lie within the seed edges'."""
    r = rng(1)
    data = HeteroData()
    data["paper"].x = torch.arange(100, dtype=torch.float32).view(-1, 1)
    data["paper"].time = torch.arange(data["paper"].num_nodes) - 200
    data["author"].x = torch.arange(100, 300, dtype=torch.float32).view(-1, 1)
    data["author"].time = torch.arange(data["author"].num_nodes)
    data["paper", "to", "paper"].edge_index = _random_edge_index(r, 100, 100, 500)
    data["paper", "to", "author"].edge_index = _random_edge_index(r, 100, 200, 1000)
    data["author", "to", "paper"].edge_index = _random_edge_index(r, 200, 100, 1000)
    with _store(tmp_path, data) as store:
        with pytest.raises(ValueError, match=r"'edge_label_time' is not set"):
            tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=("paper", "paper"), batch_size=32, time_attr="time")
        edge_time = torch.arange(data["paper", "paper"].edge_index.size(1))
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=("paper", "paper"), edge_label_time=edge_time,
                                               batch_size=32, time_attr="time", neg_sampling_ratio=0.5, drop_last=True)
        batches = 0
        for batch in loader:
            assert int(batch["paper"].batch.max()) + 1 == 32
            edge_label_time = batch["paper", "to", "paper"].edge_label_time
            assert edge_label_time.size() == (32 + 16,)  # edge_label_time repeated over the negatives, as PyG's
            assert edge_label_time.max() >= batch["author"].time.max(), f"seed {SEED}"
            assert edge_label_time.min() >= batch["author"].time.min()
            batches += 1
        assert batches == 500 // 32


@pytest.mark.parametrize("disjoint,temporal", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("amount", [1, 2])
def test_homo_link_neighbor_loader_triplet(tmp_path, disjoint, temporal, amount):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_triplet: the
    indices point at the seed edges' endpoints and negatives; disjoint, the seeds come first in
    PyG's order and batch is each one's seed edge; in time, no tree is later than its seed time."""
    r = rng(2)
    data = Data(x=torch.arange(100, dtype=torch.float32).view(-1, 1), edge_index=_random_edge_index(r, 100, 100, 400))
    edge_label_index = _random_edge_index(r, 100, 100, 500)
    time_attr = edge_label_time = None
    if temporal:
        time_attr, data.time = "time", torch.arange(data.num_nodes)
        edge_label_time = torch.max(data.time[edge_label_index[0]], data.time[edge_label_index[1]]) + 50
    batch_size = 20
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, batch_size=batch_size, edge_label_index=edge_label_index,
                                               edge_label_time=edge_label_time, time_attr=time_attr, disjoint=disjoint,
                                               neg_sampling=dict(mode="triplet", amount=amount), shuffle=True)
        assert str(loader) == "LinkNeighborLoader()"
        assert len(loader) == 500 / batch_size
        for batch in loader:
            x = batch.x.view(-1).long()
            assert torch.equal(x[batch.src_index], edge_label_index[0, batch.input_id])
            assert torch.equal(x[batch.dst_pos_index], edge_label_index[1, batch.input_id])
            assert batch.dst_neg_index.size() == ((batch_size,) if amount == 1 else (batch_size, amount))
            assert batch.dst_neg_index.min() >= 0 and batch.dst_neg_index.max() < batch.num_nodes
            if disjoint:
                assert batch.src_index.min() == 0 and batch.src_index.max() == batch_size - 1
                assert batch.dst_pos_index.min() == batch_size and batch.dst_pos_index.max() == 2 * batch_size - 1
                max_seed_nodes = 2 * batch_size + batch_size * amount
                assert batch.dst_neg_index.min() == 2 * batch_size and batch.dst_neg_index.max() == max_seed_nodes - 1
                assert batch.batch.min() == 0 and batch.batch.max() == batch_size - 1
                for i in range(0, max_seed_nodes, batch_size):
                    assert torch.equal(batch.batch[i:i + batch_size], torch.arange(batch_size))
            if temporal:
                for i in range(batch_size):
                    assert batch.time[batch.batch == i].max() <= batch.seed_time[i], f"seed {SEED}"


@pytest.mark.parametrize("disjoint,temporal", [(True, False), (True, True)])
def test_hetero_link_neighbor_loader_triplet(tmp_path, disjoint, temporal):
    """test/loader/test_link_neighbor_loader.py::test_hetero_link_neighbor_loader_triplet (amount
    2; without its src_weight/dst_weight: tierfs draws negatives uniformly): the same layout per
    node type, ``paper``'s seeds first."""
    r, amount, batch_size = rng(3), 2, 20
    data = HeteroData()
    data["paper"].x = torch.arange(100, dtype=torch.float32).view(-1, 1)
    data["author"].x = torch.arange(100, 300, dtype=torch.float32).view(-1, 1)
    data["paper", "to", "paper"].edge_index = _random_edge_index(r, 100, 100, 400)
    edge_label_index = _random_edge_index(r, 100, 100, 500)
    data["paper", "to", "author"].edge_index = _random_edge_index(r, 100, 200, 1000)
    data["author", "to", "paper"].edge_index = _random_edge_index(r, 200, 100, 1000)
    time_attr = edge_label_time = None
    if temporal:
        time_attr = "time"
        data["paper"].time, data["author"].time = torch.arange(100), torch.arange(200)
        edge_label_time = torch.max(data["paper"].time[edge_label_index[0]], data["paper"].time[edge_label_index[1]]) + 50
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, batch_size=batch_size, edge_label_index=(("paper", "to", "paper"), edge_label_index),
                                               edge_label_time=edge_label_time, time_attr=time_attr, disjoint=disjoint,
                                               neg_sampling=dict(mode="triplet", amount=amount), shuffle=True)
        assert len(loader) == 500 / batch_size
        for batch in loader:
            node_store, edge_store = batch["paper"], batch["paper", "to", "paper"]
            x = node_store.x.view(-1).long()
            assert torch.equal(x[node_store.src_index], edge_label_index[0, edge_store.input_id])
            assert torch.equal(x[node_store.dst_pos_index], edge_label_index[1, edge_store.input_id])
            assert node_store.dst_neg_index.size() == (batch_size, amount)
            assert node_store.src_index.min() == 0 and node_store.src_index.max() == batch_size - 1
            assert node_store.dst_pos_index.min() == batch_size and node_store.dst_pos_index.max() == 2 * batch_size - 1
            max_seed_nodes = 2 * batch_size + batch_size * amount
            assert node_store.dst_neg_index.min() == 2 * batch_size and node_store.dst_neg_index.max() == max_seed_nodes - 1
            assert node_store.batch.min() == 0 and node_store.batch.max() == batch_size - 1
            for i in range(0, max_seed_nodes, batch_size):
                assert torch.equal(node_store.batch[i:i + batch_size], torch.arange(batch_size))
            if temporal:
                for i in range(batch_size):
                    assert node_store.time[node_store.batch == i].max() <= node_store.seed_time[i], f"seed {SEED}"


@pytest.mark.parametrize("neg", [None, "binary", "triplet"])
@pytest.mark.parametrize("temporal", [False, True])
def test_disjoint_link_random_graphs(tmp_path, neg, temporal):
    """Random graphs, every neighbor: the disjoint link sample is the reference's trees of PyG's
    seeds (the sample's own negatives), at PyG's seed times in time (edge_label_time repeated,
    binary amount 1.5: PyG's uneven layout), batch mod the seed edges; its label index and
    metadata are PyG's disjoint ones; negatives in node time are no later than their seed edge."""
    r = rng(4)
    n, m, p = 50, 300, 6
    data = Data(x=torch.zeros(n, 1), edge_index=torch.from_numpy(r.integers(0, n, (2, m))), num_nodes=n, time=torch.from_numpy(r.integers(0, 30, n)))
    src, dst = torch.from_numpy(r.integers(0, n, p)), torch.from_numpy(r.integers(0, n, p))
    elt = torch.from_numpy(r.integers(0, 32, p)) if temporal else None
    amount = {None: 1, "binary": 1.5, "triplet": 2}[neg]
    neg_sampling = None if neg is None else NegativeSampling(neg, amount)
    with _store(tmp_path, data) as store:
        sampler = tierfs.pyg.NeighborSampler(store, [-1, -1], seed=SEED, disjoint=True, time_attr="time" if temporal else None)
        out = sampler.sample_from_edges(EdgeSamplerInput(input_id=torch.arange(p), row=src, col=dst, time=elt), neg_sampling=neg_sampling)
        num_neg = 0 if neg is None else math.ceil(p * amount)
        sides = 2 * p + num_neg if neg == "triplet" else 2 * (p + num_neg)
        seeds = out.node[:sides].tolist()
        assert seeds[:p] == src.tolist(), f"seed {SEED}"
        dst_at = p if neg == "triplet" else p + num_neg  # the destinations after the sources' side
        assert seeds[dst_at:dst_at + p] == dst.tolist()
        times = [0] * sides
        if temporal:
            half = elt.repeat(1 + math.ceil(amount))
            times = torch.cat([elt, half[:p + num_neg]]).tolist() if neg == "triplet" else torch.cat([half[:p + num_neg]] * 2).tolist()
            negatives = range(2 * p, sides) if neg == "triplet" else [*range(p, p + num_neg), *range(2 * p + num_neg, sides)]
            earliest = int(data.time.argmin())  # PyG's fallback
            for k in negatives:  # a negative's tree time is its seed edge's
                assert data.time[seeds[k]] <= times[k] or seeds[k] == earliest, f"seed {SEED}"
        kw = dict(node_time=data.time) if temporal else dict(node_time=torch.zeros(n, dtype=torch.long))
        node, tree, row, col, eid = _reference(data.edge_index, seeds, times, [-1, -1], **kw)
        assert out.node.tolist() == node and out.batch.tolist() == [b % p for b in tree], f"seed {SEED}"
        assert out.row.tolist() == row and out.col.tolist() == col and out.edge.tolist() == eid
        if neg == "triplet":
            _, src_index, dst_pos_index, dst_neg_index, src_time = out.metadata
            assert src_index.tolist() == list(range(p)) and dst_pos_index.tolist() == list(range(p, 2 * p))
            assert dst_neg_index.tolist() == torch.arange(2 * p, sides).view(-1, p).t().tolist()
        else:
            _, edge_label_index, _, src_time = out.metadata
            assert edge_label_index.tolist() == torch.arange(sides).view(2, -1).tolist()
        if temporal:
            assert src_time.tolist() == (elt.tolist() if neg == "triplet" else times[:p + num_neg])
        else:
            assert src_time is None


def test_disjoint_link_two_node_types(tmp_path):
    """Seed edges between two node types (paper -> author), binary negatives, in node time: tree
    k is the k-th seed of each type (edge_sample's seed_dict: sources then negative sources,
    destinations then negative destinations), batch k mod the seed edges in both types, the label
    index the positions on both sides, and no node of tree k later than its seed edge's time."""
    r, p = rng(5), 8
    data = HeteroData()
    data["paper"].x, data["paper"].time = torch.zeros(60, 1), torch.from_numpy(r.integers(0, 30, 60))
    data["author"].x, data["author"].time = torch.zeros(40, 1), torch.from_numpy(r.integers(0, 30, 40))
    data["paper", "writes", "author"].edge_index = _random_edge_index(r, 60, 40, 300)
    data["author", "rev", "paper"].edge_index = _random_edge_index(r, 40, 60, 300)
    src, dst, elt = torch.from_numpy(r.integers(0, 60, p)), torch.from_numpy(r.integers(0, 40, p)), torch.from_numpy(r.integers(5, 32, p))
    with _store(tmp_path, data) as store:
        sampler = tierfs.pyg.NeighborSampler(store, {("paper", "writes", "author"): [-1, -1], ("author", "rev", "paper"): [-1, -1]}, seed=SEED, time_attr="time")
        et = ("paper", "writes", "author")
        out = sampler.sample_from_edges(EdgeSamplerInput(input_id=torch.arange(p), row=src, col=dst, time=elt, input_type=et), neg_sampling=NegativeSampling("binary", 1))
        _, edge_label_index, edge_label, src_time = out.metadata
        assert edge_label_index.tolist() == [list(range(2 * p))] * 2 and edge_label.tolist() == [1.0] * p + [0.0] * p
        assert src_time.tolist() == elt.repeat(2).tolist()
        assert out.node["paper"][:p].tolist() == src.tolist() and out.node["author"][:p].tolist() == dst.tolist(), f"seed {SEED}"
        for t in ("paper", "author"):
            batch = out.batch[t]
            assert batch[:2 * p].tolist() == [k % p for k in range(2 * p)]
            assert bool((data[t].time[out.node[t][2 * p:]] <= elt[batch[2 * p:]]).all()), f"seed {SEED}: {t} sampled after its tree's time"
            for k in range(p, 2 * p):  # negatives keep within their seed edge's time, or are the earliest node
                v = int(out.node[t][k])
                assert data[t].time[v] <= elt[k % p] or v == int(data[t].time.argmin()), f"seed {SEED}"


def test_link_time_refusals(tmp_path):
    """What tierfs refuses, by name: edge_label_time on a sampler that is not disjoint, a
    temporal sampler's seed edges without times, times for a plain sampler, strict negatives in
    node time, planned epochs (test_pyg_disjoint, test_pyg_temporal)."""
    data = Data(x=torch.zeros(5, 1), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]), num_nodes=5, time=torch.arange(5))
    with _store(tmp_path, data) as store:
        inputs = EdgeSamplerInput(input_id=None, row=torch.tensor([1]), col=torch.tensor([2]), time=torch.tensor([3]))
        with pytest.raises(tierfs.InvalidArgumentError, match="not disjoint"):
            tierfs.pyg.NeighborSampler(store, [1]).sample_from_edges(inputs)
        with pytest.raises(tierfs.InvalidArgumentError, match="edge_label_time"):
            tierfs.pyg.NeighborSampler(store, [1], time_attr="time").sample_from_edges(EdgeSamplerInput(input_id=None, row=torch.tensor([1]), col=torch.tensor([2])))
        with pytest.raises(tierfs.InvalidArgumentError, match="not temporal"):
            store.sampler([1], disjoint=True).sample_from_edges([1], [2], edge_label_time=[3])
        with pytest.raises(tierfs.InvalidArgumentError, match="strict"):
            store.sampler([1], time="time").sample_from_edges([1], [2], edge_label_time=[3], neg_sampling="binary", strict=True)
        with pytest.raises(tierfs.DTypeError, match="edge_label_time"):
            store.sampler([1], time="time").sample_from_edges([1], [2], edge_label_time=[3.5])
