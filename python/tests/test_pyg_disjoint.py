"""Disjoint sampling (issue 42 item 7; PyG's ``disjoint=True``): every seed its own tree, nodes
(seed index, node) pairs, ``batch`` each node's seed index. PyG's NeighborSampler needs pyg-lib
(not installable here), so PyG's own disjoint case is carried over with its expected output
written out, and random graphs are checked against a plain reference (per-seed trees read off
the CSC)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.sampler import NodeSamplerInput  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402

# test/distributed/test_dist_neighbor_sampler.py::create_data's reference graph (PyG 2.8), which
# dist_neighbor_sampler(disjoint=True) samples with num_neighbors=[-1, -1] on one machine.
DIST_EDGES = torch.tensor([
    [1, 2, 3, 4, 5, 0, 5, 6, 7, 8, 9, 0],
    [0, 1, 2, 3, 4, 4, 9, 5, 6, 7, 8, 9],
])


def _store(tmp_path, data):
    return tierfs.open(tierfs.from_pyg(data, tmp_path / "ds"))


def test_dist_neighbor_sampler_disjoint_case(tmp_path):
    """test/distributed/test_dist_neighbor_sampler.py::dist_neighbor_sampler with disjoint=True:
    seeds [1, 6] (rank 0's) and [4, 9] (rank 1's), every neighbor for two hops. Each seed's tree
    is a chain there; 4 and 9 share their in-neighbors 5 and 0, which join both trees."""
    data = Data(x=torch.arange(10, dtype=torch.float32).view(-1, 1), edge_index=DIST_EDGES, num_nodes=10)
    with _store(tmp_path, data) as store:
        sampler = tierfs.pyg.NeighborSampler(store, [-1, -1], disjoint=True)
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([1, 6])))
        assert out.node.tolist() == [1, 6, 2, 7, 3, 8]
        assert out.batch.tolist() == [0, 1, 0, 1, 0, 1]
        assert out.row.tolist() == [2, 3, 4, 5] and out.col.tolist() == [0, 1, 2, 3]
        assert out.num_sampled_nodes == [2, 2, 2] and out.num_sampled_edges == [2, 2]

        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([4, 9])))
        assert out.num_sampled_nodes == [2, 4, 4] and out.num_sampled_edges == [4, 4]
        node, batch = out.node.tolist(), out.batch.tolist()
        assert sorted(v for v, b in zip(node, batch) if b == 0) == [0, 1, 4, 5, 6]
        assert sorted(v for v, b in zip(node, batch) if b == 1) == [0, 1, 5, 6, 9]
        # every edge is a graph edge within one tree
        edges = set(map(tuple, DIST_EDGES.t().tolist()))
        for r, c in zip(out.row.tolist(), out.col.tolist()):
            assert batch[r] == batch[c] and (node[r], node[c]) in edges


def test_disjoint_loader_shared_and_repeated_seeds(tmp_path):
    """A node reached from two seeds, and a seed given twice, is a node of each tree; the loader's
    Data carries batch, and x is every such node's row (PyG's NodeLoader sets data.batch)."""
    data = Data(x=torch.arange(10, dtype=torch.float32).view(-1, 1), edge_index=DIST_EDGES, num_nodes=10)
    with _store(tmp_path, data) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], input_nodes=torch.tensor([2, 1, 1]), batch_size=3, disjoint=True)
        b = next(iter(loader))
        assert b.n_id.tolist() == [2, 1, 1, 3, 2, 2, 4, 3, 3]
        assert b.batch.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2]
        assert b.x.view(-1).tolist() == [float(v) for v in b.n_id.tolist()]
        assert b.edge_index.tolist() == [[3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5]]
        assert b.batch_size == 3 and b.num_sampled_nodes == [3, 3, 3]
        plain = next(iter(tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], input_nodes=torch.tensor([2, 1, 1]), batch_size=3)))
        assert "batch" not in plain and plain.n_id.tolist() == [2, 1, 1, 3, 4]


def _reference_trees(indptr, indices, seeds, hops):
    """Full-fanout disjoint sampling written out: per hop, for each node first reached at the
    previous hop (hop-major, seeds first), its in-neighbors in stored order, each new to its tree
    joining the nodes."""
    node, batch = list(seeds), list(range(len(seeds)))
    local = {(b, v): i for i, (b, v) in enumerate(zip(batch, node))}
    row, col, lo = [], [], 0
    for _ in range(hops):
        hi = len(node)
        for i in range(lo, hi):
            b, v = batch[i], node[i]
            for u in indices[indptr[v]:indptr[v + 1]].tolist():
                if (b, u) not in local:
                    local[(b, u)] = len(node)
                    node.append(u)
                    batch.append(b)
                row.append(local[(b, u)])
                col.append(i)
        lo = hi
    return node, batch, row, col


@pytest.mark.parametrize("replace", [False, True])
def test_disjoint_random_graphs(tmp_path, replace):
    """Random graphs (seed printed by conftest): at full fanout the sample is the plain
    reference's exactly; with fanouts, every edge is a graph edge (its e_id's) within one tree,
    a tree holds a node once, and a node draws at most its fanout."""
    r = rng(421 + replace)
    n, m = 60, 300
    edge_index = torch.from_numpy(r.integers(0, n, (2, m)))
    data = Data(x=torch.zeros(n, 1), edge_index=edge_index, num_nodes=n)
    with _store(tmp_path, data) as store:
        indptr, indices = store.csc()
        seeds = torch.from_numpy(r.integers(0, n, 12))
        full = store.sampler([-1, -1], disjoint=True).sample(seeds)
        node, batch, row, col = _reference_trees(indptr, indices, seeds.tolist(), 2)
        assert full.nodes.tolist() == node, f"seed {SEED}"
        assert full.batch[next(iter(full.batch))].tolist() == batch
        assert full.row.tolist() == row and full.col.tolist() == col

        sampler = tierfs.pyg.NeighborSampler(store, [3, 2], replace=replace, seed=int(r.integers(1 << 30)), disjoint=True)
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
        node, batch = out.node.tolist(), out.batch.tolist()
        assert node[:12] == seeds.tolist() and batch[:12] == list(range(12))
        pairs = list(zip(batch, node))
        assert len(set(pairs)) == len(pairs), "a tree holds a node twice"
        for k, (rr, cc) in enumerate(zip(out.row.tolist(), out.col.tolist())):
            assert batch[rr] == batch[cc]
            e = int(out.edge[k])  # the position in the ingested edge_index, as PyG's e_id
            assert edge_index[:, e].tolist() == [node[rr], node[cc]], f"seed {SEED}"
        per_target = np.bincount(out.col.numpy(), minlength=len(node))
        hop0 = out.num_sampled_nodes[0] + out.num_sampled_nodes[1]
        assert (per_target[:hop0][:12] <= 3).all() and (per_target[12:hop0] <= 2).all()


def test_disjoint_refusals(tmp_path):
    """Disjoint sampling is refused, by name, where tierfs does not draw it: planned epochs (link
    sampling is disjoint: test_pyg_link_time.py)."""
    data = Data(x=torch.zeros(10, 1), edge_index=DIST_EDGES, num_nodes=10)
    with _store(tmp_path, data) as store:
        with pytest.raises(tierfs.NotSupportedError, match="disjoint"):
            tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[2], edge_label_index=DIST_EDGES[:, :4], batch_size=2, disjoint=True, planned_epochs=1, shuffle=True)
        with pytest.raises(tierfs.NotSupportedError, match="disjoint"):
            tierfs.pyg.NeighborLoader(store, num_neighbors=[2], batch_size=2, disjoint=True, planned_epochs=1, shuffle=True)


def _reference_hetero_trees(store, seed_type, seeds, hops):
    """pyg-lib's heterogeneous disjoint sampling at full fanout, written out: per hop, for each
    edge type in order, for each node of its dst type first reached at the previous hop (its
    tree b), its in-neighbors in stored order, each new to tree b joining the src type's nodes.
    (node, batch) per type, (row, col, CSC edge ids) per edge type."""
    ets = [tuple(et) for et in store.edge_types]
    csc = {et: tierfs.sampler.typed_csc(store, et) for et in ets}
    node = {t: [] for t in store.node_types}
    batch = {t: [] for t in store.node_types}
    node[seed_type], batch[seed_type] = list(seeds), list(range(len(seeds)))
    local = {t: {} for t in store.node_types}
    for i, v in enumerate(seeds):
        local[seed_type][(i, v)] = i
    row, col, edge = ({et: [] for et in ets} for _ in range(3))
    lo = {t: 0 for t in store.node_types}
    hi = {t: len(node[t]) for t in store.node_types}
    for _ in range(hops):
        for et in ets:
            src, _, dst = et
            indptr, indices = csc[et]
            for i in range(lo[dst], hi[dst]):
                b, v = batch[dst][i], node[dst][i]
                for p in range(int(indptr[v]), int(indptr[v + 1])):
                    u = int(indices[p])
                    if (b, u) not in local[src]:
                        local[src][(b, u)] = len(node[src])
                        node[src].append(u)
                        batch[src].append(b)
                    row[et].append(local[src][(b, u)])
                    col[et].append(i)
                    edge[et].append(p)
        lo, hi = hi, {t: len(node[t]) for t in store.node_types}
    return node, batch, row, col, edge


def test_disjoint_hetero_random_graph(tmp_path):
    """Disjoint sampling over several node types (PyG's heterogeneous layout: batch per node
    type, the seeds' indices first): at full fanout the sample is the written-out reference's
    exactly; with fanouts every edge joins two nodes of one tree; tierfs.pyg's NeighborLoader
    sets data[t].batch for every type, as PyG's NodeLoader does (set_value_dict("batch"))."""
    r = rng(977)
    h = HeteroData()
    h["paper"].x = torch.zeros(40, 2)
    h["author"].x = torch.zeros(25, 2)
    h["author", "writes", "paper"].edge_index = torch.stack([torch.from_numpy(r.integers(0, 25, 120)), torch.from_numpy(r.integers(0, 40, 120))])
    h["paper", "cites", "paper"].edge_index = torch.from_numpy(r.integers(0, 40, (2, 150)))
    h["paper", "rev_writes", "author"].edge_index = h["author", "writes", "paper"].edge_index.flip(0)
    with tierfs.open(tierfs.from_pyg(h, tmp_path / "h")) as store:
        seeds = [3, 7, 3, 11]
        full = store.sampler({et: [-1, -1] for et in store.edge_types}, disjoint=True).sample(np.array(seeds), "paper")
        node, batch, row, col, edge = _reference_hetero_trees(store, "paper", seeds, 2)
        for t in store.node_types:
            assert full.node[t].tolist() == node[t], f"type {t}, seed {SEED}"
            assert full.batch[t].tolist() == batch[t]
        for et in row:
            assert full.row[et].tolist() == row[et] and full.col[et].tolist() == col[et] and full.edge[et].tolist() == edge[et], f"{et}"

        loader = tierfs.pyg.NeighborLoader(store, num_neighbors={et: [3, 2] for et in store.edge_types}, input_nodes=("paper", torch.tensor(seeds)),
                                           batch_size=4, disjoint=True)
        b = next(iter(loader))
        assert b["paper"].batch[:4].tolist() == [0, 1, 2, 3]
        for t in store.node_types:
            assert b[t].batch.shape[0] == b[t].num_nodes
        for et in b.edge_types:
            s, _, d = et
            ei = b[et].edge_index
            assert bool((b[s].batch[ei[0]] == b[d].batch[ei[1]]).all()), f"{et}: an edge between two trees"
        sampler = tierfs.pyg.NeighborSampler(store, {et: [2] for et in store.edge_types}, disjoint=True)
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor(seeds), input_type="paper"))
        assert set(out.batch) == set(store.node_types) and out.batch["paper"][:4].tolist() == [0, 1, 2, 3]
