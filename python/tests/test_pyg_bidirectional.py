"""PyG's ``subgraph_type`` on tierfs.pyg (issue 42, PyG item 7): ``"bidirectional"``, every
sampled edge with its reverse, as PyG's ``SamplerOutput.to_bidirectional``, and ``"induced"``,
every graph edge among the sampled nodes. Each test names the PyG 2.8.0 test it carries
assertions from. PyG's NeighborSampler needs pyg-lib or torch-sparse (not installable here), so
the controls are PyG's own ``to_bidirectional`` (pure torch) on the same directional sample, a
plain reference for induced edges, and PyG's loaders over the in-memory Data/HeteroData with
tierfs's sampler."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.datasets import KarateClub  # noqa: E402
from torch_geometric.loader import LinkLoader, NodeLoader  # noqa: E402
from torch_geometric.nn import GraphConv  # noqa: E402
from torch_geometric.sampler import HeteroSamplerOutput, SamplerOutput  # noqa: E402
from torch_geometric.sampler.base import SubgraphType  # noqa: E402
from torch_geometric.utils import is_undirected, sort_edge_index, to_undirected  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, needs_cuda  # noqa: E402
from tierfs.pyg.subgraph import bidirectional_output  # noqa: E402
from test_pyg_conformance import assert_same_batch  # noqa: E402
from test_pyg_hetero import assert_same_hetero  # noqa: E402

BI = "bidirectional"


def generator(offset):
    return torch.Generator().manual_seed((SEED + offset) % (1 << 31))


def random_edge_index(g, num_src, num_dst, num_edges):
    """PyG's torch_geometric.testing.get_random_edge_index, from a seeded generator."""
    return torch.stack([torch.randint(num_src, (num_edges,), generator=g), torch.randint(num_dst, (num_edges,), generator=g)])


def pairs(edge_index):
    return set(map(tuple, edge_index.t().tolist()))


def check_edge_ids(row, col, ids, edges, own_direction_first=True, sampled=None):
    """Every pair's id names an edge of edges ((2, m) global ids, by id) joining it, either way
    (PyG's rule: any of them), and with own_direction_first in its own direction where the
    pair was sampled that way (sampled: the directional sample's pairs; default every edge's),
    tierfs's rule."""
    forward = pairs(edges) if sampled is None else sampled
    for s, d, e in zip(row.tolist(), col.tolist(), ids.tolist()):
        es, ed = edges[:, e].tolist()
        turned = (es, ed) == (d, s) and not (own_direction_first and (s, d) in forward)
        assert (es, ed) == (s, d) or turned, f"pair ({s}, {d}) has edge {e} = ({es}, {ed}), seed {SEED}"


def test_homogeneous_to_bidirectional_equals_pyg():
    """test/sampler/test_sampler_base.py::test_homogeneous_to_bidirectional and
    ::test_homogeneous_sampler_output_global_fields (its bidirectional edges), then PyG's
    SamplerOutput.to_bidirectional as the control on random outputs (multi-edges, self-loops,
    empty)."""
    g = generator(1)
    edge_index = random_edge_index(g, 10, 10, 20)
    obj = bidirectional_output(SamplerOutput(node=torch.arange(10), row=edge_index[0], col=edge_index[0], edge=torch.arange(20)))
    assert is_undirected(torch.stack([obj.row, obj.col], dim=0))
    out = SamplerOutput(node=torch.tensor([0, 2, 3]), row=torch.tensor([0, 1]), col=torch.tensor([1, 2]), edge=torch.tensor([1, 2]),
                        num_sampled_nodes=[1, 1, 1], num_sampled_edges=[1, 1], metadata=(None, None))
    bi = bidirectional_output(out)
    assert torch.equal(bi.global_row, torch.tensor([2, 0, 3, 2])) and torch.equal(bi.global_col, torch.tensor([0, 2, 2, 3]))
    assert bi.num_sampled_nodes is None and bi.num_sampled_edges is None and bi.metadata == (None, None)
    assert out.num_sampled_nodes == [1, 1, 1]  # a copy: the input stays as it was
    for trial in range(40):
        n, m = int(torch.randint(1, 40, (1,), generator=g)), int(torch.randint(0, 80, (1,), generator=g))
        row, col = torch.randint(n, (m,), generator=g), torch.randint(n, (m,), generator=g)
        o = SamplerOutput(node=torch.arange(n), row=row, col=col, edge=torch.randperm(m, generator=g), num_sampled_nodes=[n], num_sampled_edges=[m])
        ours, pyg = bidirectional_output(o), o.to_bidirectional()
        assert torch.equal(ours.row, pyg.row) and torch.equal(ours.col, pyg.col), f"trial {trial}, seed {SEED}"
        edges = torch.stack([row, col])[:, torch.argsort(o.edge)]  # edges by id
        check_edge_ids(ours.row, ours.col, ours.edge, edges)
        check_edge_ids(pyg.row, pyg.col, pyg.edge, edges, own_direction_first=False)


def random_hetero_output(g, types, sizes):
    rows, cols = {}, {}
    for et in types:
        m = int(torch.randint(0, 30, (1,), generator=g))
        rows[et], cols[et] = torch.randint(sizes[et[0]], (m,), generator=g), torch.randint(sizes[et[2]], (m,), generator=g)
    edge = {et: torch.arange(rows[et].numel()) for et in types}
    return HeteroSamplerOutput(node={t: torch.arange(n) for t, n in sizes.items()}, row=rows, col=cols, edge=edge,
                               num_sampled_nodes={t: [n] for t, n in sizes.items()}, num_sampled_edges={et: [rows[et].numel()] for et in types})


def test_heterogeneous_to_bidirectional_equals_pyg():
    """test/sampler/test_sampler_base.py::test_heterogeneous_to_bidirectional, then PyG's
    HeteroSamplerOutput.to_bidirectional as the control on random outputs of every pairing
    rule: (a, rel, a) alone, (a, rel, b) with (b, rev_rel, a), with the only (b, *, a), and an
    edge type with no reverse (PyG's warning, left directional)."""
    g = generator(2)
    e1, e2, e3 = random_edge_index(g, 10, 5, 20), random_edge_index(g, 5, 10, 20), random_edge_index(g, 10, 10, 20)
    obj = bidirectional_output(HeteroSamplerOutput(
        node={"v1": torch.arange(10), "v2": torch.arange(5)},
        row={("v1", "to", "v2"): e1[0], ("v2", "rev_to", "v1"): e2[0], ("v1", "to", "v1"): e3[0]},
        col={("v1", "to", "v2"): e1[1], ("v2", "rev_to", "v1"): e2[1], ("v1", "to", "v1"): e3[1]},
        edge={},
    ))
    assert torch.equal(obj.row["v1", "to", "v2"].sort().values, obj.col["v2", "rev_to", "v1"].sort().values)
    assert torch.equal(obj.col["v1", "to", "v2"].sort().values, obj.row["v2", "rev_to", "v1"].sort().values)
    assert is_undirected(torch.stack([obj.row["v1", "to", "v1"], obj.col["v1", "to", "v1"]], 0))
    sizes = {"a": 12, "b": 7, "c": 5}
    types = [("a", "cites", "a"), ("a", "writes", "b"), ("b", "rev_writes", "a"), ("b", "likes", "c"), ("c", "liked", "b"),
             ("a", "sees", "c"), ("b", "rev_x", "b")]
    for trial in range(20):
        o = random_hetero_output(g, types, sizes)
        with pytest.warns(UserWarning, match=r"\('a', 'sees', 'c'\) does not seem to have a reverse"):
            ours = bidirectional_output(o)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pyg = o.to_bidirectional()
        assert ours.num_sampled_nodes is None and ours.num_sampled_edges is None
        for et in types:
            assert torch.equal(ours.row[et], pyg.row[et]) and torch.equal(ours.col[et], pyg.col[et]), f"{et}, trial {trial}, seed {SEED}"
            assert (ours.edge[et] is None) == (pyg.edge[et] is None), et
        assert torch.equal(ours.edge["a", "sees", "c"], o.edge["a", "sees", "c"])  # no reverse: kept as sampled
        assert torch.equal(ours.row["b", "rev_x", "b"], o.row["b", "rev_x", "b"])  # rev_ without its forward type: as sampled


def homo_data(g, n=100, e=500):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_basic's Data."""
    return Data(x=torch.arange(n), edge_index=random_edge_index(g, n, n, e), edge_attr=torch.arange(e))


def test_homo_neighbor_loader_basic_bidirectional(tmp_path):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_basic[bidirectional]; the
    control: PyG's NodeLoader over the in-memory Data with tierfs's bidirectional sampler (every
    field equal), and PyG's to_bidirectional of the directional loader's batch (same edges)."""
    data = homo_data(generator(3))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[5] * 2, batch_size=20, subgraph_type=SubgraphType.bidirectional, seed=3)
        assert str(loader) == "NeighborLoader()" and len(loader) == 5
        assert loader([0]).n_id[:1].tolist() == [0]
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [5] * 2, seed=3, subgraph_type=BI), batch_size=20)
        directional = tierfs.pyg.NeighborLoader(store, num_neighbors=[5] * 2, batch_size=20, seed=3)
        for i, (batch, want, d) in enumerate(zip(loader, mem, directional, strict=True)):
            assert isinstance(batch, Data)
            assert batch.x.size(0) <= 100 and batch.n_id.size() == (batch.num_nodes,)
            assert batch.input_id.numel() == batch.batch_size == 20
            assert batch.x.min() >= 0 and batch.x.max() < 100
            assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
            assert batch.edge_attr.size(0) == batch.edge_index.size(1)
            assert torch.equal(batch.x[: batch.batch_size], torch.arange(i * batch.batch_size, (i + 1) * batch.batch_size))
            assert is_undirected(batch.edge_index)
            assert "num_sampled_nodes" not in batch and "num_sampled_edges" not in batch
            assert_same_batch(batch, want, f"batch {i}")
            pyg = SamplerOutput(node=d.n_id, row=d.edge_index[0], col=d.edge_index[1], edge=d.e_id).to_bidirectional()
            assert torch.equal(batch.edge_index, torch.stack([pyg.row, pyg.col])), f"batch {i}, seed {SEED}"
            assert torch.equal(batch.n_id, d.n_id)
            check_edge_ids(batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]], batch.e_id, data.edge_index, sampled=pairs(d.n_id[d.edge_index]))
            assert torch.equal(batch.edge_attr, data.edge_attr[batch.e_id])


def hetero_data(g):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_basic's HeteroData."""
    data = HeteroData()
    data["paper"].x = torch.arange(100)
    data["author"].x = torch.arange(100, 300)
    data["paper", "paper"].edge_index = random_edge_index(g, 100, 100, 500)
    data["paper", "paper"].edge_attr = torch.arange(500)
    data["paper", "author"].edge_index = random_edge_index(g, 100, 200, 1000)
    data["paper", "author"].edge_attr = torch.arange(500, 1500)
    data["author", "paper"].edge_index = random_edge_index(g, 200, 100, 1000)
    data["author", "paper"].edge_attr = torch.arange(1500, 2500)
    return data


def test_hetero_neighbor_loader_basic_bidirectional(tmp_path):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_basic[bidirectional];
    the control: PyG's NodeLoader over the in-memory HeteroData with tierfs's bidirectional
    sampler, every field equal."""
    data = hetero_data(generator(4))
    pp, pa, ap = ("paper", "to", "paper"), ("paper", "to", "author"), ("author", "to", "paper")
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[10] * 2, input_nodes="paper", batch_size=20, subgraph_type=BI, seed=4)
        assert str(loader) == "NeighborLoader()" and len(loader) == 5
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [10] * 2, seed=4, subgraph_type=BI), input_nodes="paper", batch_size=20)
        for batch, want in zip(loader, mem, strict=True):
            assert isinstance(batch, HeteroData) and set(batch.node_types) == {"paper", "author"}
            assert set(batch.edge_types) == {pp, pa, ap}
            assert batch["paper"].input_id.numel() == batch["paper"].batch_size == 20
            assert batch["author"].x.min() >= 100 and batch["author"].x.max() < 300
            row, col = batch[pp].edge_index
            assert row.min() >= 0 and row.max() < batch["paper"].num_nodes and col.max() < batch["paper"].num_nodes
            for et in (pp, pa, ap):
                assert "e_id" not in batch[et] and "edge_attr" not in batch[et] and "num_sampled_edges" not in batch[et]
            assert is_undirected(batch[pp].edge_index)
            assert torch.equal(batch[pa].edge_index, sort_edge_index(batch[ap].edge_index.flip([0]), sort_by_row=False))
            assert torch.equal(batch[ap].edge_index, sort_edge_index(batch[pa].edge_index.flip([0]), sort_by_row=False))
            assert not batch.has_isolated_nodes()
            assert_same_hetero(batch, want, extra=["num_nodes"], ours_extra=["num_nodes"])


@pytest.mark.parametrize("neg_sampling_ratio", [None, 1.0])
def test_homo_link_neighbor_loader_basic_bidirectional(tmp_path, neg_sampling_ratio):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_basic
    [bidirectional] (no edge_attr: see below); without negatives (torch's random draws) the
    control is PyG's LinkLoader over the in-memory Data with tierfs's bidirectional sampler,
    every field equal."""
    g = generator(5)
    pos, neg = random_edge_index(g, 50, 50, 500), random_edge_index(g, 50, 50, 500) + 50
    input_edges = torch.cat([pos, neg], dim=-1)
    edge_label = torch.cat([torch.ones(500), torch.zeros(500)])
    data = Data(edge_index=pos, x=torch.arange(100), edge_attr=torch.arange(500))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        label = edge_label if neg_sampling_ratio is None else None
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, batch_size=20, edge_label_index=input_edges, edge_label=label,
                                               subgraph_type=BI, neg_sampling_ratio=neg_sampling_ratio, shuffle=True)
        assert str(loader) == "LinkNeighborLoader()" and len(loader) == 1000 / 20
        batch = loader([0])
        assert int(input_edges[0, 0]) in batch.n_id.tolist() and int(input_edges[1, 0]) in batch.n_id.tolist()
        for batch in loader:
            assert batch.n_id.size() == (batch.num_nodes,) and batch.e_id.size() == (batch.num_edges,)
            assert batch.x.min() >= 0 and batch.x.max() < 100 and batch.input_id.numel() == 20
            assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
            # PyG's LinkLoader over (FeatureStore, GraphStore), which tierfs's is, reads no edge features
            assert batch.e_id.min() >= 0 and batch.e_id.max() < 500
            assert is_undirected(batch.edge_index)
            if neg_sampling_ratio is None:
                assert batch.edge_label_index.size(1) == 20
                edge_index = pairs(batch.edge_index)
                assert len(edge_index | pairs(batch.edge_label_index[:, batch.edge_label == 1])) == len(edge_index)
                assert not edge_index & pairs(batch.edge_label_index[:, batch.edge_label == 0])
            else:
                assert batch.edge_label_index.size(1) == 40
                assert torch.all(batch.edge_label[:20] == 1) and torch.all(batch.edge_label[20:] == 0)
            seeds = pairs(batch.n_id[batch.edge_label_index][:, batch.edge_label >= 1])
            assert seeds <= pairs(input_edges)
        if neg_sampling_ratio is None:
            ours = tierfs.pyg.LinkNeighborLoader(store, [-1] * 2, batch_size=20, edge_label_index=input_edges, edge_label=edge_label, subgraph_type=BI, seed=2)
            theirs = LinkLoader(data, link_sampler=tierfs.pyg.NeighborSampler(store, [-1] * 2, seed=2, subgraph_type=BI),
                                edge_label_index=input_edges, edge_label=edge_label, batch_size=20)
            for i, (b, w) in enumerate(zip(ours, theirs, strict=True)):
                assert torch.equal(b.edge_attr, w.edge_attr) and torch.equal(w.edge_attr, data.edge_attr[b.e_id])  # by e_id, as in memory
                assert_same_batch(b, w, f"batch {i}")


@pytest.mark.parametrize("neg_sampling_ratio", [None, 1.0])
def test_hetero_link_neighbor_loader_basic_bidirectional(tmp_path, neg_sampling_ratio):
    """test/loader/test_link_neighbor_loader.py::test_hetero_link_neighbor_loader_basic and
    ::test_hetero_link_neighbor_loader_loop [bidirectional]."""
    data = hetero_data(generator(6))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=("paper", "author"), batch_size=20,
                                               subgraph_type=BI, neg_sampling_ratio=neg_sampling_ratio, shuffle=True)
        assert str(loader) == "LinkNeighborLoader()" and len(loader) == 1000 / 20
        for batch in loader:
            assert isinstance(batch, HeteroData) and batch.input_type == ("paper", "to", "author")
            if neg_sampling_ratio is None:
                edge_index = pairs(batch["paper", "author"].edge_index)
                assert len(edge_index | pairs(batch["paper", "author"].edge_label_index)) == len(edge_index)
            else:
                assert batch["paper", "author"].edge_label_index.size(1) == 40
                assert torch.all(batch["paper", "author"].edge_label[:20] == 1) and torch.all(batch["paper", "author"].edge_label[20:] == 0)
        loop = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=("paper", "paper"), batch_size=20, subgraph_type=BI)
        for batch in loop:
            assert batch["paper"].x.size(0) <= 100 and batch["paper"].x.min() >= 0 and batch["paper"].x.max() < 100
            edge_index = pairs(batch["paper", "paper"].edge_index)
            assert len(edge_index | pairs(batch["paper", "paper"].edge_label_index)) == len(edge_index)
            assert is_undirected(batch["paper", "paper"].edge_index)


def induced_edge_ids(edge_index, n_id):
    """The plain reference of an induced subgraph: the ids of every edge of edge_index ((2, E),
    global ids; a pair of tensors for two node types) between two nodes of n_id."""
    src_ids, dst_ids = n_id if isinstance(n_id, tuple) else (n_id, n_id)
    inside = torch.from_numpy(np.isin(edge_index[0].numpy(), src_ids.numpy()) & np.isin(edge_index[1].numpy(), dst_ids.numpy()))
    return inside.nonzero().view(-1)


def check_induced(batch_edge_index, e_id, edge_index, src_ids, dst_ids, what):
    """The batch's edges are exactly the graph's edges among its nodes (by id), each its e_id's."""
    assert torch.equal(torch.sort(e_id).values, induced_edge_ids(edge_index, (src_ids, dst_ids))), f"{what}, seed {SEED}"
    assert torch.equal(torch.stack([src_ids[batch_edge_index[0]], dst_ids[batch_edge_index[1]]]), edge_index[:, e_id]), f"{what}, seed {SEED}"


def test_homo_neighbor_loader_basic_induced(tmp_path):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_basic[induced] (PyG runs it
    on torch-sparse, not installable here); the controls: a plain reference (every edge of the
    graph among the batch's nodes, which are the directional batch's), and PyG's NodeLoader over
    the in-memory Data with tierfs's induced sampler, every field equal."""
    data = homo_data(generator(10))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[5] * 2, batch_size=20, subgraph_type=SubgraphType.induced, seed=3)
        assert len(loader) == 5 and loader([0]).n_id[:1].tolist() == [0]
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [5] * 2, seed=3, subgraph_type="induced"), batch_size=20)
        directional = tierfs.pyg.NeighborLoader(store, num_neighbors=[5] * 2, batch_size=20, seed=3)
        for i, (batch, want, d) in enumerate(zip(loader, mem, directional, strict=True)):
            assert batch.input_id.numel() == batch.batch_size == 20
            assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
            assert batch.edge_attr.size(0) == batch.edge_index.size(1) and batch.e_id.size() == (batch.num_edges,)
            assert batch.edge_attr.min() >= 0 and batch.edge_attr.max() < 500
            assert torch.equal(batch.x[: batch.batch_size], torch.arange(i * batch.batch_size, (i + 1) * batch.batch_size))
            assert "num_sampled_nodes" not in batch and "num_sampled_edges" not in batch
            assert torch.equal(batch.n_id, d.n_id) and batch.num_edges >= d.num_edges
            check_induced(batch.edge_index, batch.e_id, data.edge_index, batch.n_id, batch.n_id, f"batch {i}")
            assert_same_batch(batch, want, f"batch {i}")


def test_hetero_neighbor_loader_basic_induced(tmp_path):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_basic[induced]; the
    controls as the homogeneous test's, per edge type."""
    data = hetero_data(generator(11))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[10] * 2, input_nodes="paper", batch_size=20, subgraph_type="induced", seed=4)
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [10] * 2, seed=4, subgraph_type="induced"), input_nodes="paper", batch_size=20)
        offset = {"paper": 0, "author": 100}
        for batch, want in zip(loader, mem, strict=True):
            for et in data.edge_types:
                src, _, dst = et
                value = batch[et].edge_attr
                assert batch[et].e_id.size() == (batch[et].num_edges,) and torch.equal(value, data[et].edge_attr[batch[et].e_id])
                check_induced(batch[et].edge_index, batch[et].e_id, data[et].edge_index, batch[src].x - offset[src], batch[dst].x - offset[dst], et)
            assert not batch.has_isolated_nodes()
            assert_same_hetero(batch, want, extra=["num_nodes"], ours_extra=["num_nodes"])


def test_neighbor_loader_on_karate_induced(tmp_path):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_on_karate[induced]: every
    neighbor for two hops, a two-layer GNN on the induced batch gives the seeds' outputs."""
    torch.manual_seed(SEED % (1 << 31))
    dataset = KarateClub()
    data = dataset[0]
    mask = data.edge_index[0] < data.edge_index[1]
    data.edge_index, data.edge_weight = to_undirected(data.edge_index[:, mask], torch.rand(int(mask.sum())))
    model_a, model_b = GraphConv(dataset.num_features, 16), GraphConv(16, dataset.num_classes)

    def model(x, edge_index, w):
        return model_b(model_a(x, edge_index, w).relu(), edge_index, w)

    with tierfs.open(tierfs.from_pyg(Data(x=data.x, edge_index=data.edge_index, edge_weight=data.edge_weight), tmp_path / "ds")) as store:
        batch = next(iter(tierfs.pyg.NeighborLoader(store, [-1, -1], batch_size=3, input_nodes=torch.arange(5, 8), subgraph_type="induced")))
        out1 = model(data.x, data.edge_index, data.edge_weight)[5:8]
        assert torch.allclose(out1, model(batch.x, batch.edge_index, batch.edge_weight)[:3], atol=1e-6), f"seed {SEED}"


def test_subgraph_type_refusals(tmp_path):
    """PyG's refusal of induced disjoint sampling ("'disjoint' sampling not supported ... with
    `subgraph_type='induced'`") and of a subgraph type it lacks (a ValueError, as PyG's
    SubgraphType(...) raises), from every front end."""
    data = homo_data(generator(7))
    eli = data.edge_index[:, :10]
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        for value in ("induced", SubgraphType.induced):
            with pytest.raises(ValueError, match="'disjoint' sampling not supported"):
                tierfs.pyg.NeighborLoader(store, [3], subgraph_type=value, disjoint=True)
            with pytest.raises(ValueError, match="'disjoint' sampling not supported"):
                tierfs.pyg.NeighborSampler(store, [3], subgraph_type=value, disjoint=True)
        for make in (lambda **kw: tierfs.pyg.NeighborLoader(store, [3], **kw), lambda **kw: tierfs.pyg.NeighborSampler(store, [3], **kw),
                     lambda **kw: tierfs.pyg.LinkNeighborLoader(store, [3], edge_label_index=eli, **kw)):
            with pytest.raises(ValueError, match="subgraph_type='sideways'"):
                make(subgraph_type="sideways")
        assert "bidirectional" in repr(tierfs.pyg.NeighborSampler(store, [3], subgraph_type=BI))


def test_planned_epochs_bidirectional(tmp_path):
    """Planned epochs' batches are made bidirectional as on-demand ones are: each is PyG's
    to_bidirectional of the planned directional batch of the same plan."""
    data = homo_data(generator(8))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        args = dict(batch_size=25, shuffle=True, planned_epochs=1, seed=3, shuffle_seed=4, plan_dir=str(tmp_path / "plans"), reuse_samples=True)
        bi = list(tierfs.pyg.NeighborLoader(store, [4, 2], subgraph_type=BI, **args))
        directional = list(tierfs.pyg.NeighborLoader(store, [4, 2], **args))
        assert len(bi) == len(directional) == 4
        for b, d in zip(bi, directional):
            pyg = SamplerOutput(node=d.n_id, row=d.edge_index[0], col=d.edge_index[1], edge=d.e_id).to_bidirectional()
            assert torch.equal(b.n_id, d.n_id) and torch.equal(b.edge_index, torch.stack([pyg.row, pyg.col])), f"seed {SEED}"
            assert torch.equal(b.edge_attr, data.edge_attr[b.e_id]) and "num_sampled_nodes" not in b


@needs_cuda
def test_cuda_store_bidirectional_matches_host(tmp_path):
    """On a store opened on the GPU (edges on the device, ids on the host) the bidirectional
    batches equal the host store's."""
    data = homo_data(generator(9))
    path = tierfs.from_pyg(data, tmp_path / "ds")
    with tierfs.open(path) as host, tierfs.open(path, device="cuda:0", gpu_cache="1MiB", host_cache="1MiB") as gpu:
        for b, h in zip(tierfs.pyg.NeighborLoader(gpu, [5, 5], batch_size=20, subgraph_type=BI, seed=2),
                        tierfs.pyg.NeighborLoader(host, [5, 5], batch_size=20, subgraph_type=BI, seed=2), strict=True):
            assert_same_batch(b.to("cpu"), h, "cuda")
