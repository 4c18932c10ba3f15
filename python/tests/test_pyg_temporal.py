"""Temporal sampling (issue 42 item 7; PyG's ``time_attr``, ``temporal_strategy``,
``input_time``). PyG's temporal loaders need pyg-lib (not installable here), so PyG's own
temporal tests are carried over with their expected output computed by a plain reference of
pyg-lib's rule (neighbor_kernel.cpp: a tree takes the neighbors whose node or edge time is at
most its seed's time, in time order — PyG sorts each neighborhood by time, stably — all of them,
a uniform draw, or for "last" the latest ``fanout``), and random graphs are checked against it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.sampler import NodeSamplerInput  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402


def _store(tmp_path, data):
    return tierfs.open(tierfs.from_pyg(data, tmp_path / "ds"))


def _reference(edge_index, seeds, seed_time, fanouts, node_time=None, edge_time=None, last=False):
    """pyg-lib's disjoint temporal sample where the draws are determined (every neighbor, or
    "last" without replacement), written out: (node, batch, row, col, edge input positions)."""
    src, dst = edge_index.tolist()
    lists = {}
    for i, (s, d) in enumerate(zip(src, dst)):
        lists.setdefault(d, []).append((s, i))

    def time_of(s, i):
        return int(node_time[s]) if node_time is not None else int(edge_time[i])

    node, batch = list(seeds), list(range(len(seeds)))
    local = {(b, v): k for k, (b, v) in enumerate(zip(batch, node))}
    row, col, eid, lo = [], [], [], 0
    for f in fanouts:
        hi = len(node)
        for target in range(lo, hi):
            b = batch[target]
            cand = sorted((p for p in lists.get(node[target], []) if time_of(*p) <= seed_time[b]), key=lambda p: time_of(*p))  # stable
            if last and f >= 0:
                cand = cand[max(0, len(cand) - f):]
            for s, i in cand:
                if (b, s) not in local:
                    local[(b, s)] = len(node)
                    node.append(s)
                    batch.append(b)
                row.append(local[(b, s)])
                col.append(target)
                eid.append(i)
        lo = hi
    return node, batch, row, col, eid


def _karate():
    from torch_geometric.datasets import KarateClub

    data = KarateClub()[0]
    data.time = torch.arange(data.num_nodes, 0, -1)
    return data


def test_temporal_custom_neighbor_loader_on_karate(tmp_path):
    """test/loader/test_neighbor_loader.py::test_temporal_custom_neighbor_loader_on_karate: the
    loader over the stores (time_attr="time", num_neighbors=[-1, -1], every node in one batch)
    gives the in-memory loader's batch['v'].time — here pyg-lib's, written out."""
    data = _karate()
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], time_attr="time", batch_size=128)
        batch = next(iter(loader))
        seeds = list(range(data.num_nodes))
        node, tree, row, col, eid = _reference(data.edge_index, seeds, data.time.tolist(), [-1, -1], node_time=data.time)
        assert batch.time.tolist() == data.time[node].tolist()
        assert batch.n_id.tolist() == node and batch.batch.tolist() == tree
        assert batch.edge_index.tolist() == [row, col] and batch.e_id.tolist() == eid
        assert batch.batch_size == data.num_nodes and "seed_time" not in batch


def test_temporal_hetero_neighbor_loader_on_karate(tmp_path):
    """test/loader/test_neighbor_loader.py::test_temporal_hetero_neighbor_loader_on_karate's
    assertion, on the one-type store: one seed a batch, no sampled node later than the seed."""
    data = _karate()
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], time_attr="time", batch_size=1)
        for batch in loader:
            mask = batch.time[0] >= batch.time[1:]
            assert torch.all(mask)


def test_edge_level_temporal_homo_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_edge_level_temporal_homo_neighbor_loader: with
    edge-level time and input_time 4, every batch's edge_time is its edges' and none passes 4."""
    edge_index = torch.tensor([
        [0, 1, 1, 2, 2, 3, 3, 4],
        [1, 0, 2, 1, 3, 2, 4, 3],
    ])
    edge_time = torch.arange(edge_index.size(1))
    data = Data(edge_index=edge_index, edge_time=edge_time, num_nodes=5)
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], input_time=torch.tensor([4, 4, 4, 4, 4]), time_attr="edge_time", batch_size=1)
        seen = 0
        for batch in loader:
            assert batch.edge_time.numel() == batch.num_edges
            if batch.edge_time.numel() > 0:
                assert batch.edge_time.max() <= 4
            assert batch.seed_time.tolist() == [4]
            seen += batch.num_edges
        assert seen > 0
        # the edges of time <= 4 are 0..4: node 0's tree (seed time 4) is 0 <- 1 (edge 1), then 1 <- 0, 2 (edges 0, 3; 0 is in the tree)
        b = loader([0])
        assert b.n_id.tolist() == [0, 1, 2] and b.e_id.tolist() == [1, 0, 3] and b.edge_time.tolist() == [1, 0, 3]


@pytest.mark.parametrize("level", ["node", "edge"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_random_graphs_against_reference(tmp_path, level, strategy):
    """Random graphs, node- and edge-level time, given and default seed times: "last" (and
    "uniform" with every neighbor) equals the reference exactly; "uniform" with a fanout draws
    min(fanout, qualifying) distinct qualifying neighbors of each node, in time order."""
    r = rng()
    n, m = 60, 400
    edge_index = torch.from_numpy(r.integers(0, n, size=(2, m)))
    node_time = torch.from_numpy(r.integers(0, 30, size=n))
    edge_time = torch.from_numpy(r.integers(0, 30, size=m))
    data = Data(x=torch.zeros(n, 1), edge_index=edge_index, num_nodes=n, time=node_time, edge_time=edge_time)
    seeds = torch.from_numpy(r.integers(0, n, size=12))
    seed_time = torch.from_numpy(r.integers(0, 32, size=12))
    name = "time" if level == "node" else "edge_time"
    kw = dict(node_time=node_time) if level == "node" else dict(edge_time=edge_time)
    fanouts = [3, 2] if strategy == "last" else [-1, -1]
    with _store(tmp_path, data) as store:
        for given in ([True, False] if level == "node" else [True]):
            times = seed_time if given else node_time[seeds]
            sampler = tierfs.pyg.NeighborSampler(store, fanouts, seed=SEED, time_attr=name, temporal_strategy=strategy)
            assert sampler.disjoint and sampler.is_temporal
            out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds, time=seed_time if given else None))
            node, batch, row, col, eid = _reference(edge_index, seeds.tolist(), times.tolist(), fanouts, last=strategy == "last", **kw)
            assert out.node.tolist() == node, f"seed {SEED}"
            assert out.batch.tolist() == batch and out.row.tolist() == row and out.col.tolist() == col and out.edge.tolist() == eid
        # uniform with a fanout: the rule, per node
        sampler = tierfs.pyg.NeighborSampler(store, [2, 2], seed=SEED, time_attr=name, temporal_strategy=strategy)
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds, time=seed_time))
        t = node_time[edge_index[0]] if level == "node" else edge_time  # each edge's time by the rule
        node, batch = out.node, out.batch
        for target in torch.unique(out.col).tolist():
            e = out.edge[out.col == target]
            limit = int(seed_time[batch[target]])
            qualifying = ((edge_index[1] == node[target]) & (t <= limit)).nonzero().view(-1)
            assert bool((t[e] <= limit).all()) and bool((edge_index[1, e] == node[target]).all()), f"seed {SEED}"
            assert e.numel() == min(2, qualifying.numel()) and torch.unique(e).numel() == e.numel()
            assert bool((t[e][1:] >= t[e][:-1]).all())  # time order
            if strategy == "last":  # the latest qualifying ones
                assert sorted(t[e].tolist()) == sorted(t[qualifying].tolist())[-e.numel():]


def test_store_sampler_seed_time(tmp_path):
    """Store.sampler(time=...): samples carry batch; seed_time moves the limit; Loader(seed_time=)
    samples each batch at its seeds' times."""
    data = _karate()
    with _store(tmp_path, data) as store:
        s = store.sampler([-1], time="time", seed=SEED)
        assert s.disjoint and s.time == "time" and "time='time'" in repr(s)
        late = s.sample(np.array([33]), seed_time=np.array([100]))
        early = s.sample(np.array([33]), seed_time=np.array([0]))
        assert len(late.nodes) > 1 and early.nodes.tolist() == [33] and early.batch[next(iter(early.batch))].tolist() == [0]
        with pytest.raises(tierfs.InvalidArgumentError, match="2 times for 1 seeds"):
            s.sample(np.array([33]), seed_time=np.array([1, 2]))
        with pytest.raises(tierfs.DTypeError, match="integers"):
            s.sample(np.array([33]), seed_time=np.array([1.5]))
        loader = tierfs.Loader(store, s, np.array([33, 33]), batch_size=2, shuffle=False, seed_time=np.array([100, 0]))
        b = next(iter(loader))
        assert (b.sample.batch[next(iter(b.sample.batch))] == 1).sum() == 1  # the second tree holds its seed alone


def test_temporal_refusals(tmp_path):
    """What tierfs refuses, by name: input_time without time_attr (PyG's error), an edge-level
    time without input_time, a float time, time with weight_attr or planned epochs (nodes and
    links), time_attr and edge_label_time not both given (PyG's error), and a strategy other
    than PyG's."""
    data = Data(x=torch.zeros(5, 1), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]), num_nodes=5,
                time=torch.arange(5), ftime=torch.arange(5, dtype=torch.float32), edge_time=torch.arange(3), w=torch.ones(3))
    with _store(tmp_path, data) as store:
        with pytest.raises(ValueError, match="Received conflicting 'input_time' and 'time_attr'"):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[1], input_time=torch.zeros(5, dtype=torch.long))
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[1], time_attr="edge_time")
        with pytest.raises(tierfs.InvalidArgumentError, match="input_time"):
            next(iter(loader))
        with pytest.raises(tierfs.InvalidArgumentError, match="integers"):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[1], time_attr="ftime")
        with pytest.raises(tierfs.InvalidArgumentError, match="weighted temporal"):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[1], time_attr="time", weight_attr="w")
        with pytest.raises(tierfs.NotSupportedError, match="planned_epochs"):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[1], time_attr="time", planned_epochs=1, shuffle=True)
        with pytest.raises(tierfs.InvalidArgumentError, match='"uniform" or "last"'):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[1], time_attr="time", temporal_strategy="first")
        with pytest.raises(ValueError, match="Received conflicting 'edge_label_time' and 'time_attr'"):
            tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[1], edge_label_index=torch.tensor([[0], [1]]), time_attr="time")
        with pytest.raises(ValueError, match="Received conflicting 'edge_label_time' and 'time_attr'"):
            tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[1], edge_label_index=torch.tensor([[0], [1]]), edge_label_time=torch.tensor([3]))
        with pytest.raises(tierfs.NotSupportedError, match="planned_epochs"):
            tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[1], edge_label_index=torch.tensor([[0], [1]]), edge_label_time=torch.tensor([3]),
                                          time_attr="time", planned_epochs=1, shuffle=True)


# heterogeneous temporal sampling (disjoint over every node type) ---------------------------------


def test_temporal_hetero_neighbor_loader_on_karate_typed(tmp_path):
    """test/loader/test_neighbor_loader.py::test_temporal_hetero_neighbor_loader_on_karate, as
    PyG runs it: a one-type HeteroData (kept typed), one seed a batch, no sampled node later than
    its seed."""
    from torch_geometric.data import HeteroData

    data = _karate()
    hetero_data = HeteroData()
    hetero_data["v"].x = data.x
    hetero_data["v"].time = torch.arange(data.num_nodes, 0, -1)
    hetero_data["v", "v"].edge_index = data.edge_index
    with _store(tmp_path, hetero_data) as store:
        assert store.is_hetero
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], input_nodes="v", time_attr="time", batch_size=1)
        n = 0
        for batch in loader:
            mask = batch["v"].time[0] >= batch["v"].time[1:]
            assert torch.all(mask)
            assert bool((batch["v"].batch == 0).all())
            n += 1
        assert n == data.num_nodes


def test_edge_level_temporal_hetero_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_edge_level_temporal_hetero_neighbor_loader."""
    from torch_geometric.data import HeteroData

    edge_index = torch.tensor([
        [0, 1, 1, 2, 2, 3, 3, 4],
        [1, 0, 2, 1, 3, 2, 4, 3],
    ])
    edge_time = torch.arange(edge_index.size(1))
    data = HeteroData()
    data["A"].num_nodes = 5
    data["A", "A"].edge_index = edge_index
    data["A", "A"].edge_time = edge_time
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], input_nodes="A", input_time=torch.tensor([4, 4, 4, 4, 4]), time_attr="edge_time", batch_size=1)
        for batch in loader:
            assert batch["A", "A"].edge_time.numel() == batch["A", "A"].num_edges
            if batch["A", "A"].edge_time.numel() > 0:
                assert batch["A", "A"].edge_time.max() <= 4
            assert batch["A"].seed_time.tolist() == [4]


def test_temporal_neighbor_loader_single_link(tmp_path):
    """test/loader/test_neighbor_loader.py::test_temporal_neighbor_loader_single_link: node time
    on types b and c only, input_time 0..9 for the seeds of type a; a's neighbors of type b
    (times 0..9) qualify, those of type c (times 1..10) do not."""
    from torch_geometric.data import HeteroData

    data = HeteroData()
    data["a"].x = torch.arange(10)
    data["b"].x = torch.arange(10)
    data["c"].x = torch.arange(10)
    data["b"].time = torch.arange(0, 10)
    data["c"].time = torch.arange(1, 11)
    data["a", "b"].edge_index = torch.arange(10).view(1, -1).repeat(2, 1)
    data["b", "a"].edge_index = torch.arange(10).view(1, -1).repeat(2, 1)
    data["a", "c"].edge_index = torch.arange(10).view(1, -1).repeat(2, 1)
    data["c", "a"].edge_index = torch.arange(10).view(1, -1).repeat(2, 1)
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1], input_nodes="a", time_attr="time", input_time=torch.arange(0, 10), batch_size=10)
        batch = next(iter(loader))
        assert batch["a"].num_nodes == 10
        assert batch["b"].num_nodes == 10
        assert batch["c"].num_nodes == 0
        # PyG's disjoint layout: batch per node type, each b node in its seed's tree
        assert batch["b"].batch.tolist() == list(range(10)) and batch["c"].batch.tolist() == []
        assert batch["a"].seed_time.tolist() == list(range(10))
        # no input_time: the seeds (type a) have no time of their own
        with pytest.raises(tierfs.InvalidArgumentError, match="input_time"):
            next(iter(tierfs.pyg.NeighborLoader(store, num_neighbors=[-1], input_nodes="a", time_attr="time", batch_size=10)))


def test_temporal_hetero_edge_types_without_time(tmp_path):
    """pyg-lib's rule for an edge type whose neighbors' type has no time: it draws as without
    time. With time on the seeds' type alone no edge type draws in time, and the batch is the
    disjoint one."""
    from torch_geometric.data import HeteroData

    data = HeteroData()
    data["a"].x = torch.zeros(4, 1)
    data["a"].time = torch.zeros(4, dtype=torch.long)
    data["b"].x = torch.zeros(3, 1)
    data["b"].time_of_b = torch.zeros(3, dtype=torch.long)
    data["b", "to", "a"].edge_index = torch.tensor([[0, 1, 2], [0, 0, 1]])
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1], input_nodes="a", time_attr="time", input_time=torch.full((4,), -5), batch_size=4)
        b = next(iter(loader))
        assert b["b"].n_id.tolist() == [0, 1, 2] and b["b"].batch.tolist() == [0, 0, 1]
        plain = next(iter(tierfs.pyg.NeighborLoader(store, num_neighbors=[-1], input_nodes="a", disjoint=True, batch_size=4)))
        assert plain["b"].n_id.tolist() == b["b"].n_id.tolist()
