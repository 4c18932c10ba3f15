"""PyG 2.8.0's loader tests that the audit in docs/conformance.md found missing (issue 42), carried
over to tierfs: each test names the pytorch_geometric 2.8.0 test it carries assertions from.

PyG's NeighborSampler needs pyg-lib or torch-sparse (not installable here), so where PyG compares
a remote-backend loader with its in-memory one, the control here is a plain full-neighborhood
reference (:func:`full_neighborhood`, pure torch): with ``num_neighbors=[-1] * k`` PyG's
directional sampler reaches exactly the nodes within ``k`` hops of the seeds, and takes every
in-edge of the nodes within ``k - 1`` hops. Where PyG's test states its expected values (the
sampled-info and input-id tests), they are asserted as PyG states them."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.data.remote_backend_utils import num_nodes, size  # noqa: E402
from torch_geometric.datasets import KarateClub  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402
from torch_geometric.nn import GraphConv, to_hetero  # noqa: E402
from torch_geometric.sampler import NodeSamplerInput, NumNeighbors, SamplerOutput  # noqa: E402
from torch_geometric.utils import to_undirected  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED  # noqa: E402


def generator(offset: int) -> torch.Generator:
    return torch.Generator().manual_seed((SEED + offset) % (1 << 31))


def distinct_edges(g, num_src, num_dst, num_edges, shuffle=True):
    """PyG's get_random_edge_index(..., coalesce=True): distinct (src, dst) pairs, here in random
    order unless ``shuffle`` is False (then sorted by src, as coalesce leaves them)."""
    flat = torch.unique(torch.randint(num_src, (num_edges,), generator=g) * num_dst + torch.randint(num_dst, (num_edges,), generator=g))
    if shuffle:
        flat = flat[torch.randperm(flat.numel(), generator=g)]
    return torch.stack([flat // num_dst, flat % num_dst])


def full_neighborhood(edges: dict, seeds: dict, hops: int):
    """Reference of ``num_neighbors=[-1] * hops`` over ``edges`` {(src, rel, dst): edge_index}
    from ``seeds`` {type: ids}: ({type: the node ids within ``hops`` hops}, {edge type: the
    number of edges whose dst is within ``hops - 1`` hops}), as PyG's directional sampler
    takes them."""
    reached = {t: set(v.tolist()) for t, v in seeds.items()}
    frontier = {t: set(v) for t, v in reached.items()}
    expanded = {t: set() for t in reached}
    for _ in range(hops):
        new = {}
        for t, nodes in frontier.items():
            expanded.setdefault(t, set()).update(nodes)
        for (s, _, d), ei in edges.items():
            into = frontier.get(d, set())
            for u, v in zip(ei[0].tolist(), ei[1].tolist()):
                if v in into and u not in reached.setdefault(s, set()):
                    new.setdefault(s, set()).add(u)
        for t, nodes in new.items():
            reached[t].update(nodes)
        frontier = new
    counts = {et: sum(1 for v in ei[1].tolist() if v in expanded.get(et[2], set())) for et, ei in edges.items()}
    return {t: torch.tensor(sorted(v), dtype=torch.long) for t, v in reached.items()}, counts


def test_custom_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_custom_neighbor_loader: a Data of 200 nodes whose
    100 first have distinct random edges in random order, every neighbor for two hops; tierfs's
    NeighborLoader and PyG's NodeLoader over tierfs's FeatureStore/GraphStore (PyG's remote
    backend) give the full 2-hop neighborhood's x and y, edge count and batch size."""
    g = generator(1)
    x = torch.arange(100, 300)
    edge_index = distinct_edges(g, 100, 100, 500)
    data = Data(x=x, edge_index=edge_index, y=torch.arange(100, 300), num_nodes=200)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        ours = tierfs.pyg.NeighborLoader(store, [-1] * 2, input_nodes=torch.arange(100), batch_size=20)
        remote = NodeLoader(tierfs.pyg.stores(store), node_sampler=tierfs.pyg.NeighborSampler(store, [-1] * 2), input_nodes=torch.arange(100), batch_size=20)
        assert str(ours) == "NeighborLoader()" and len(ours) == len(remote) == 5
        n = 0
        for i, (batch, other) in enumerate(zip(ours, remote)):
            seeds = torch.arange(20 * i, 20 * i + 20)
            nodes, counts = full_neighborhood({(None, None, None): edge_index}, {None: seeds}, 2)
            for b in (batch, other):
                assert b.batch_size == 20 and torch.equal(b.n_id[:20], seeds)
                assert b.num_nodes == nodes[None].numel(), f"batch {i} (seed {SEED})"
                assert b.num_edges == counts[(None, None, None)], f"batch {i} (seed {SEED})"
                assert torch.equal(b.x.sort()[0], x[nodes[None]]) and torch.equal(b.y.sort()[0], data.y[nodes[None]])
            n += 1
        assert n == 5


def hetero_of_four_layouts(g):
    """test_custom_hetero_neighbor_loader's HeteroData: paper (100) and author (200) with x, four
    edge types of distinct random edges (PyG puts them into its GraphStore as COO, CSR, CSC and
    sorted COO; tierfs ingests the edge_index of each)."""
    data = HeteroData()
    data["paper"].x = torch.arange(100)
    data["author"].x = torch.arange(100, 300)
    data["paper", "to", "paper"].edge_index = distinct_edges(g, 100, 100, 500)
    data["paper", "to", "author"].edge_index = distinct_edges(g, 100, 200, 1000)
    data["author", "to", "paper"].edge_index = distinct_edges(g, 200, 100, 1000)
    ei = distinct_edges(g, 200, 200, 100)
    data["author", "to", "author"].edge_index = ei[:, ei[1].argsort()]
    return data


def test_custom_hetero_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_custom_hetero_neighbor_loader: paper seeds,
    every neighbor for two hops; per type the full neighborhood's x, per edge type its edge
    count, the seed type's batch size; the loader's str is PyG's."""
    data = hetero_of_four_layouts(generator(2))
    edges = {et: data[et].edge_index for et in data.edge_types}
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, [-1] * 2, input_nodes=("paper", range(100)), batch_size=20)
        assert str(loader) == "NeighborLoader()" and len(loader) == 5
        n = 0
        for i, batch in enumerate(loader):
            nodes, counts = full_neighborhood(edges, {"paper": torch.arange(20 * i, 20 * i + 20)}, 2)
            assert isinstance(batch, HeteroData) and batch["paper"].batch_size == 20
            for t in data.node_types:
                assert torch.equal(batch[t].x.sort()[0], data[t].x[nodes[t]]), f"batch {i} {t} (seed {SEED})"
            for et in data.edge_types:
                assert batch[et].num_edges == counts[et], f"batch {i} {et} (seed {SEED})"
            n += 1
        assert n == 5


def test_custom_hetero_neighbor_loader_duplicate(tmp_path):
    """test/loader/test_neighbor_loader.py::test_custom_hetero_neighbor_loader_duplicate: one node
    type "user" and one edge type ("user", "user", "user") (the relation named as the type): the
    batch is a HeteroData of that type, all ten nodes and every edge."""
    data = HeteroData()
    data["user"].x = torch.arange(10)
    edge_index = distinct_edges(generator(3), 10, 10, 20)
    data["user", "user", "user"].edge_index = edge_index
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        batch = next(iter(tierfs.pyg.NeighborLoader(store, [-1] * 2, input_nodes=("user", range(10)), batch_size=10)))
        assert isinstance(batch, HeteroData)
        assert batch.node_types == ["user"] and batch["user"].num_nodes == 10
        assert batch.edge_types == [("user", "user", "user")]
        assert batch["user", "user"].num_edges == edge_index.size(1)


# test_homo_neighbor_loader_sampled_info's graph: 0 <- 2 <- {4, 7}, 1 <- 3 <- {5, 7}, 7 <- {10..13}
SAMPLED_INFO_EDGES = torch.tensor([[2, 3, 4, 5, 7, 7, 10, 11, 12, 13], [0, 1, 2, 3, 2, 3, 7, 7, 7, 7]])


def test_homo_neighbor_loader_sampled_info(tmp_path):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_sampled_info: PyG's
    num_sampled_nodes / num_sampled_edges per hop (every fanout but the first takes all)."""
    with tierfs.open(tierfs.from_pyg(Data(edge_index=SAMPLED_INFO_EDGES, num_nodes=14), tmp_path / "ds")) as store:
        batch = next(iter(tierfs.pyg.NeighborLoader(store, [1, 2, 4], batch_size=2, shuffle=False)))
        assert batch.num_sampled_nodes == [2, 2, 3, 4]
        assert batch.num_sampled_edges == [2, 4, 4]


def test_hetero_neighbor_loader_sampled_info(tmp_path):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_sampled_info: the same
    edges as three edge types over paper and author."""
    data = HeteroData()
    data["paper"].num_nodes = data["author"].num_nodes = 14
    data["paper", "paper"].edge_index = SAMPLED_INFO_EDGES
    data["paper", "author"].edge_index = SAMPLED_INFO_EDGES
    data["author", "paper"].edge_index = SAMPLED_INFO_EDGES
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        batch = next(iter(tierfs.pyg.NeighborLoader(store, [1, 2, 4], batch_size=2, input_nodes="paper", shuffle=False)))
        want_nodes = {"paper": [2, 2, 3, 4], "author": [0, 2, 3, 4]}
        want_edges = {("paper", "to", "paper"): [2, 4, 4], ("paper", "to", "author"): [0, 4, 4], ("author", "to", "paper"): [2, 4, 4]}
        assert sorted(batch.node_types) == sorted(want_nodes) and sorted(batch.edge_types) == sorted(want_edges)
        for t in batch.node_types:
            assert batch[t].num_sampled_nodes == want_nodes[t], t
        for et in batch.edge_types:
            assert batch[et].num_sampled_edges == want_edges[et], et


MAPPING_EDGES = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 5], [1, 2, 3, 4, 5, 8, 6, 7, 9, 10, 6, 11]])


def test_neighbor_loader_mapping(tmp_path):
    """test/loader/test_neighbor_loader.py::test_neighbor_loader_mapping and
    test/loader/test_link_neighbor_loader.py::test_link_neighbor_loader_mapping: n_id[edge_index]
    is the input's edge_index[:, e_id] (e_id indexes the input edges)."""
    data = Data(edge_index=MAPPING_EDGES, num_nodes=12)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loaders = [
            tierfs.pyg.NeighborLoader(store, [1], batch_size=2, shuffle=True, seed=SEED % 1000),
            tierfs.pyg.LinkNeighborLoader(store, [1], edge_label_index=MAPPING_EDGES, batch_size=2, shuffle=True),
        ]
        for loader in loaders:
            n = 0
            for batch in loader:
                assert torch.equal(batch.n_id[batch.edge_index], MAPPING_EDGES[:, batch.e_id]), f"{type(loader).__name__} (seed {SEED})"
                n += 1
            assert n == 6


def test_neighbor_loader_input_id(tmp_path):
    """test/loader/test_neighbor_loader.py::test_neighbor_loader_input_id: input_nodes=("a",
    bool mask without node 0): each batch's input_id holds the seed node ids, in order."""
    g = generator(4)
    data = HeteroData()
    data["a"].num_nodes = 10
    data["b"].num_nodes = 12
    row, col = torch.randint(0, 10, (40,), generator=g), torch.randint(0, 12, (40,), generator=g)
    data["a", "b"].edge_index = torch.stack([row, col])
    data["b", "a"].edge_index = torch.stack([col, row])
    mask = torch.ones(10, dtype=torch.bool)
    mask[0] = False
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        got = [batch["a"].input_id.tolist() for batch in tierfs.pyg.NeighborLoader(store, [2, 2], input_nodes=("a", mask), batch_size=2)]
        assert got == [[1, 2], [3, 4], [5, 6], [7, 8], [9]]


def test_link_neighbor_loader_edge_label(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_link_neighbor_loader_edge_label: with
    neg_sampling_ratio=1.0 the positives' labels are 1 and the negatives' 0, float by default,
    the given edge_label's dtype (long) when one is given."""
    g = generator(5)
    data = Data(edge_index=torch.randint(0, 100, (2, 500), generator=g), x=torch.arange(100))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        for edge_label, dtype in [(None, torch.float), (torch.ones(500, dtype=torch.long), torch.long)]:
            n = 0
            for batch in tierfs.pyg.LinkNeighborLoader(store, [-1] * 2, batch_size=10, edge_label=edge_label, neg_sampling_ratio=1.0):
                assert batch.edge_label.dtype == dtype
                assert batch.edge_label.numel() == 20
                assert torch.all(batch.edge_label[:10] == 1) and torch.all(batch.edge_label[10:] == 0)
                n += 1
            assert n == 50


def random_three_type_hetero(g):
    """test_custom_hetero_link_neighbor_loader's HeteroData: paper (100), author (200), three edge
    types of random edges (duplicates kept)."""
    data = HeteroData()
    data["paper"].x = torch.arange(100)
    data["author"].x = torch.arange(100, 300)
    for (s, d), (n_s, n_d, e) in {("paper", "paper"): (100, 100, 500), ("paper", "author"): (100, 200, 1000), ("author", "paper"): (200, 100, 1000)}.items():
        data[s, "to", d].edge_index = torch.stack([torch.randint(n_s, (e,), generator=g), torch.randint(n_d, (e,), generator=g)])
    return data


def test_custom_hetero_link_neighbor_loader(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_custom_hetero_link_neighbor_loader: seed
    edges named by their edge type alone, every neighbor for two hops: each type's x is the full
    2-hop neighborhood of the batch's label edges' endpoints; str is PyG's."""
    data = random_three_type_hetero(generator(6))
    label_type = ("paper", "to", "author")
    edges = {et: data[et].edge_index for et in data.edge_types}
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, [-1] * 2, edge_label_index=label_type, batch_size=20)
        assert str(loader) == "LinkNeighborLoader()" and len(loader) == 50
        n = 0
        for i, batch in enumerate(loader):
            pairs = batch[label_type].edge_label_index
            assert pairs.size(1) == 20
            src, dst = batch["paper"].n_id[pairs[0]], batch["author"].n_id[pairs[1]]
            nodes, _ = full_neighborhood(edges, {"paper": src.unique(), "author": dst.unique()}, 2)
            for t in data.node_types:
                assert torch.equal(batch[t].x.sort()[0], data[t].x[nodes[t]]), f"batch {i} {t} (seed {SEED})"
            n += 1
        assert n == 50


@pytest.mark.parametrize("typed", [False, True])
def test_link_loader_every_edge_in_input_order(tmp_path, typed):
    """test/loader/test_link_neighbor_loader.py::test_custom_hetero_link_neighbor_loader (seed
    edges named by their edge type alone), and the homogeneous store's edge_label_index=None:
    PyG's seed edges are then the graph's edge_index in its order, so each batch's label edges
    are edge_index[:, input_id] (the in-memory LinkLoader's contract)."""
    data = random_three_type_hetero(generator(8))
    label_type = ("paper", "to", "author")
    if not typed:
        data = Data(x=torch.arange(100), edge_index=data["paper", "to", "paper"].edge_index)
    edge_index = data[label_type].edge_index if typed else data.edge_index
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=label_type if typed else None, batch_size=20)
        for i, batch in enumerate(loader):
            if typed:
                pairs, input_id = batch[label_type].edge_label_index, batch[label_type].input_id
                got = torch.stack([batch["paper"].n_id[pairs[0]], batch["author"].n_id[pairs[1]]])
            else:
                got, input_id = batch.n_id[batch.edge_label_index], batch.input_id
            assert torch.equal(input_id, torch.arange(20 * i, 20 * i + input_id.numel()))
            assert torch.equal(got, edge_index[:, input_id]), f"batch {i}: label edges are not the input's edges input_id"


def test_num_nodes_size(tmp_path):
    """test/data/test_remote_backend_utils.py::test_num_nodes_size: PyG's num_nodes / size over
    tierfs's FeatureStore and GraphStore infer a type's count from its features or its edges, and
    refuse a type neither has."""
    g = generator(7)
    data = HeteroData()
    data["x"].x = torch.arange(100)
    data["y"].num_nodes = 50
    data["x", "to", "y"].edge_index = torch.stack([torch.randint(100, (20,), generator=g), torch.randint(50, (20,), generator=g)])
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        feature_store, graph_store = tierfs.pyg.stores(store)
        assert num_nodes(feature_store, graph_store, "x") == 100
        assert num_nodes(feature_store, graph_store, "y") == 50
        assert size(feature_store, graph_store, ("x", "to", "y")) == (100, 50)
        with pytest.raises(ValueError, match="Unable to accurately infer"):
            num_nodes(feature_store, graph_store, "z")


# The directional (default) variants of PyG's basic loader tests; their bidirectional and induced
# variants are in test_pyg_bidirectional.py.


def random_edges(g, num_src, num_dst, num_edges, dtype=torch.int64):
    """PyG's get_random_edge_index (duplicates kept), from a seeded generator."""
    return torch.stack([torch.randint(num_src, (num_edges,), generator=g), torch.randint(num_dst, (num_edges,), generator=g)]).to(dtype)


def assert_edges_are_input_edges(src_ids, dst_ids, e_id, edge_index, what):
    """PyG's is_subset, made exact: each sampled edge (global ids) is input edge e_id."""
    assert torch.equal(torch.stack([src_ids, dst_ids]), edge_index.long()[:, e_id]), f"{what}: sampled edges are not edge_index[:, e_id] (seed {SEED})"


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_homo_neighbor_loader_basic_directional(tmp_path, dtype):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_basic[directional] (int64,
    int32 edge_index): str, length, loader(index), the seeds first, edge_attr by e_id, sampled
    edges among the input's."""
    data = Data(x=torch.arange(100), edge_index=random_edges(generator(9), 100, 100, 500, dtype), edge_attr=torch.arange(500))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[5] * 2, batch_size=20)
        assert str(loader) == "NeighborLoader()" and len(loader) == 5
        batch = loader([0])
        assert isinstance(batch, Data) and batch.n_id[:1].tolist() == [0]
        n = 0
        for i, batch in enumerate(loader):
            assert isinstance(batch, Data)
            assert batch.x.size(0) <= 100 and batch.n_id.size() == (batch.num_nodes,)
            assert batch.input_id.numel() == batch.batch_size == 20
            assert batch.x.min() >= 0 and batch.x.max() < 100
            assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
            assert batch.edge_attr.size(0) == batch.edge_index.size(1) and batch.e_id.size() == (batch.num_edges,)
            assert torch.equal(batch.x[:20], torch.arange(20 * i, 20 * i + 20))
            assert torch.equal(batch.edge_attr, data.edge_attr[batch.e_id])
            assert_edges_are_input_edges(batch.x[batch.edge_index[0]], batch.x[batch.edge_index[1]], batch.e_id, data.edge_index, f"batch {i}")
            n += 1
        assert n == 5


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_hetero_neighbor_loader_basic_directional(tmp_path, dtype):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_basic[directional]: paper
    seeds, ten neighbors for two hops; per edge type edge_attr in its range and by e_id, sampled
    edges among the input's, no isolated node."""
    g = generator(10)
    data = HeteroData()
    data["paper"].x = torch.arange(100)
    data["author"].x = torch.arange(100, 300)
    offsets = {"paper": 0, "author": 100}
    ranges = {}
    start = 0
    for (s, d), (n_s, n_d, e) in {("paper", "paper"): (100, 100, 500), ("paper", "author"): (100, 200, 1000), ("author", "paper"): (200, 100, 1000)}.items():
        data[s, d].edge_index = random_edges(g, n_s, n_d, e, dtype)
        data[s, d].edge_attr = torch.arange(start, start + e)
        ranges[(s, "to", d)] = (start, start + e)
        start += e
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[10] * 2, input_nodes="paper", batch_size=20)
        assert str(loader) == "NeighborLoader()" and len(loader) == 5
        for i, batch in enumerate(loader):
            assert isinstance(batch, HeteroData) and batch.input_type == "paper"
            assert set(batch.node_types) == {"paper", "author"} and set(batch.edge_types) == set(ranges)
            assert batch["paper"].input_id.numel() == batch["paper"].batch_size == 20
            for t, lo in offsets.items():
                assert batch[t].n_id.size() == (batch[t].num_nodes,)
                assert batch[t].x.min() >= lo and batch[t].x.max() < lo + store.num_nodes(t)
            for et, (lo, hi) in ranges.items():
                src, _, dst = et
                row, col = batch[et].edge_index
                assert row.max() < batch[src].num_nodes and col.max() < batch[dst].num_nodes
                assert batch[et].e_id.size() == (row.numel(),)
                value = batch[et].edge_attr
                assert value.min() >= lo and value.max() < hi and torch.equal(value, data[et].edge_attr[batch[et].e_id])
                assert_edges_are_input_edges(batch[src].n_id[row], batch[dst].n_id[col], batch[et].e_id, data[et].edge_index, f"batch {i} {et}")
            assert not batch.has_isolated_nodes()


@pytest.mark.parametrize("subgraph_type", ["directional", "bidirectional"])
def test_neighbor_loader_on_karate(tmp_path, subgraph_type):
    """test/loader/test_neighbor_loader.py::test_homo_neighbor_loader_on_karate and
    ::test_hetero_neighbor_loader_on_karate [directional, bidirectional]: with every neighbor for
    two hops, a two-layer GNN on the batch gives the seeds' outputs on the whole graph (edge
    weights read by e_id)."""
    torch.manual_seed(SEED % (1 << 31))
    dataset = KarateClub()
    data = dataset[0]
    mask = data.edge_index[0] < data.edge_index[1]
    data.edge_index, data.edge_weight = to_undirected(data.edge_index[:, mask], torch.rand(int(mask.sum())))
    split_idx = torch.arange(5, 8)

    class GNN(torch.nn.Module):
        def __init__(self, in_channels, hidden_channels, out_channels):
            super().__init__()
            self.conv1 = GraphConv(in_channels, hidden_channels)
            self.conv2 = GraphConv(hidden_channels, out_channels)

        def forward(self, x, edge_index, edge_weight=None):
            return self.conv2(self.conv1(x, edge_index, edge_weight).relu(), edge_index, edge_weight)

    model = GNN(dataset.num_features, 16, dataset.num_classes)
    with tierfs.open(tierfs.from_pyg(Data(x=data.x, edge_index=data.edge_index, edge_weight=data.edge_weight), tmp_path / "homo")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], batch_size=3, input_nodes=split_idx, subgraph_type=subgraph_type)
        assert len(loader) == 1
        batch = next(iter(loader))
        out1 = model(data.x, data.edge_index, data.edge_weight)[split_idx]
        out2 = model(batch.x, batch.edge_index, batch.edge_weight)[: batch.batch_size]
        assert torch.allclose(out1, out2, atol=1e-6), f"seed {SEED}"
    hetero = HeteroData()
    hetero["v"].x = data.x
    hetero["v", "v"].edge_index = data.edge_index
    with tierfs.open(tierfs.from_pyg(hetero, tmp_path / "hetero")) as store:
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[-1, -1], batch_size=3, input_nodes=("v", split_idx), subgraph_type=subgraph_type)
        assert len(loader) == 1
        batch = next(iter(loader))
        out1 = model(data.x, data.edge_index)[split_idx]
        out2 = to_hetero(model, hetero.metadata())(batch.x_dict, batch.edge_index_dict)["v"][: batch["v"].batch_size]
        assert torch.allclose(out1, out2, atol=1e-6), f"seed {SEED}"


def pair_set(edge_index):
    return set(map(tuple, edge_index.t().tolist()))


@pytest.mark.parametrize("neg_sampling_ratio", [None, 1.0])
def test_homo_link_neighbor_loader_basic_directional(tmp_path, neg_sampling_ratio):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_basic[directional]:
    500 positive seed edges of the graph and 500 negatives among nodes 50..99 (labelled, or
    binary negatives drawn), every neighbor for two hops, shuffled."""
    g = generator(11)
    pos = random_edges(g, 50, 50, 500)
    input_edges = torch.cat([pos, random_edges(g, 50, 50, 500) + 50], dim=-1)
    edge_label = torch.cat([torch.ones(500), torch.zeros(500)])
    data = Data(x=torch.arange(100), edge_index=pos, edge_attr=torch.arange(500))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(
            store, num_neighbors=[-1] * 2, batch_size=20, edge_label_index=input_edges,
            edge_label=edge_label if neg_sampling_ratio is None else None, neg_sampling_ratio=neg_sampling_ratio, shuffle=True)
        assert str(loader) == "LinkNeighborLoader()" and len(loader) == 50
        batch = loader([0])
        assert isinstance(batch, Data)
        assert int(input_edges[0, 0]) in batch.n_id.tolist() and int(input_edges[1, 0]) in batch.n_id.tolist()
        n = 0
        for batch in loader:
            assert isinstance(batch, Data)
            assert batch.n_id.size() == (batch.num_nodes,) and batch.e_id.size() == (batch.num_edges,)
            assert batch.x.size(0) <= 100 and batch.x.min() >= 0 and batch.x.max() < 100
            assert batch.input_id.numel() == 20
            assert batch.edge_index.min() >= 0 and batch.edge_index.max() < batch.num_nodes
            assert batch.e_id.min() >= 0 and batch.e_id.max() < 500  # edge_attr: test_link_neighbor_loader_edge_attr
            sampled = pair_set(batch.edge_index)
            if neg_sampling_ratio is None:
                assert batch.edge_label_index.size(1) == 20
                assert pair_set(batch.edge_label_index[:, batch.edge_label == 1]) <= sampled  # positives are in the sample
                assert not pair_set(batch.edge_label_index[:, batch.edge_label == 0]) & sampled  # negatives are not
                assert torch.equal(batch.edge_label, edge_label[batch.input_id])
            else:
                assert batch.edge_label_index.size(1) == 40
                assert torch.all(batch.edge_label[:20] == 1) and torch.all(batch.edge_label[20:] == 0)
            positives = batch.n_id[batch.edge_label_index][:, batch.edge_label >= 1]
            assert pair_set(positives) <= pair_set(input_edges)
            assert torch.equal(batch.n_id[batch.edge_label_index[:, :20]] if neg_sampling_ratio else batch.n_id[batch.edge_label_index], input_edges[:, batch.input_id])
            n += 1
        assert n == 50


@pytest.mark.parametrize("neg_sampling_ratio", [None, 1.0])
@pytest.mark.parametrize("label_type", [("paper", "author"), ("paper", "paper")])
def test_hetero_link_neighbor_loader_basic_directional(tmp_path, neg_sampling_ratio, label_type):
    """test/loader/test_link_neighbor_loader.py::test_hetero_link_neighbor_loader_basic and
    ::test_hetero_link_neighbor_loader_loop [directional]: seed edges named by their edge type
    alone, shuffled; positives among the sampled edges of their type, binary labels 1 then 0."""
    data = random_three_type_hetero(generator(12))
    et = (label_type[0], "to", label_type[1])
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=label_type, batch_size=20, neg_sampling_ratio=neg_sampling_ratio, shuffle=True)
        assert str(loader) == "LinkNeighborLoader()" and len(loader) == data[et].num_edges // 20
        for batch in loader:
            assert isinstance(batch, HeteroData) and batch.input_type == et
            assert batch["paper"].x.size(0) <= 100 and batch["paper"].x.min() >= 0 and batch["paper"].x.max() < 100
            if neg_sampling_ratio is None:
                assert pair_set(batch[et].edge_label_index) <= pair_set(batch[et].edge_index)
            else:
                assert batch[et].edge_label_index.size(1) == 40
                assert torch.all(batch[et].edge_label[:20] == 1) and torch.all(batch[et].edge_label[20:] == 0)


@pytest.mark.parametrize("typed", [False, True])
def test_link_neighbor_loader_edge_attr(tmp_path, typed):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_basic (its
    edge_attr asserts), on a homogeneous and a typed store: a link batch holds the sampled
    edges' edge_attr, the input's rows e_id."""
    g = generator(13)
    if typed:
        data = random_three_type_hetero(g)
        for i, et in enumerate(data.edge_types):
            data[et].edge_attr = torch.arange(data[et].num_edges) + 10000 * i
        et = ("paper", "to", "author")
    else:
        data = Data(x=torch.arange(100), edge_index=random_edges(g, 100, 100, 500), edge_attr=torch.arange(500))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[-1] * 2, edge_label_index=et if typed else None, batch_size=20)
        batch = next(iter(loader))
        for part, source in ([(batch[t], data[t]) for t in data.edge_types] if typed else [(batch, data)]):
            assert part.edge_attr is not None, "no edge_attr in the link batch"
            assert torch.equal(part.edge_attr, source.edge_attr[part.e_id])


# test/sampler/test_sampler_neighbor_sampler.py's graph: Alice (0) -> Bob (1), Alice -> Carol (2)
# ("leads"), Carol -> Dave (3); typed, Alice is the one "manager", the others "person" 0..2.
def people(hetero: bool):
    if not hetero:
        return Data(edge_index=torch.tensor([[0, 0, 2], [1, 2, 3]]), x=torch.tensor([[0], [1], [2], [3]]), edge_attr=torch.tensor([1, 2, 3]))
    data = HeteroData()
    data["person"].x = torch.tensor([[1], [2], [3]])
    data["manager"].x = torch.tensor([[0]])
    data["person", "works_with", "person"].edge_index = torch.tensor([[1], [2]])
    data["manager", "leads", "person"].edge_index = torch.tensor([[0], [1]])
    data["manager", "works_with", "person"].edge_index = torch.tensor([[0], [0]])
    return data


def test_homogeneous_neighbor_sampler_basic(tmp_path):
    """test/sampler/test_sampler_neighbor_sampler.py::test_homogeneous_neighbor_sampler_basic
    [remote]: one neighbor of Bob is Alice; Alice has none. PyG's expected SamplerOutput, by str."""
    with tierfs.open(tierfs.from_pyg(people(False), tmp_path / "ds")) as store:
        out = tierfs.pyg.NeighborSampler(store, [1]).sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([1])))
        want = SamplerOutput(node=torch.tensor([1, 0]), row=torch.tensor([1]), col=torch.tensor([0]), edge=torch.tensor([0]), batch=None,
                             num_sampled_nodes=[1, 1], num_sampled_edges=[1], orig_row=None, orig_col=None, metadata=(None, None))
        assert str(out) == str(want)
        out = tierfs.pyg.NeighborSampler(store, [1]).sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0])))
        empty = torch.empty(0, dtype=torch.int64)
        want = SamplerOutput(node=torch.tensor([0]), row=empty, col=empty, edge=empty, batch=None,
                             num_sampled_nodes=[1, 0], num_sampled_edges=[0], orig_row=None, orig_col=None, metadata=(None, None))
        assert str(out) == str(want)


def test_heterogeneous_neighbor_sampler_basic(tmp_path):
    """test/sampler/test_sampler_neighbor_sampler.py::test_heterogeneous_neighbor_sampler_basic
    [remote]: person 0's one neighbor is the manager (works_with); the manager has none."""
    with tierfs.open(tierfs.from_pyg(people(True), tmp_path / "ds")) as store:
        sampler = tierfs.pyg.NeighborSampler(store, [1])
        ww, leads, pp = ("manager", "works_with", "person"), ("manager", "leads", "person"), ("person", "works_with", "person")
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0]), input_type="person"))
        assert out.node["person"].tolist() == [0] and out.node["manager"].tolist() == [0]
        assert out.row[ww].tolist() == [0] and out.col[ww].tolist() == [0] and out.edge[ww].tolist() == [0]
        for et in (leads, pp):
            assert out.row[et].numel() == out.col[et].numel() == out.edge[et].numel() == 0, et
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0]), input_type="manager"))
        assert out.node["manager"].tolist() == [0] and out.node["person"].numel() == 0
        for et in (ww, leads, pp):
            assert out.row[et].numel() == out.col[et].numel() == out.edge[et].numel() == 0, et


def test_neighbor_sampler_backwards_refused_by_name(tmp_path):
    """test/sampler/test_sampler_neighbor_sampler.py::test_homogeneous_neighbor_sampler_backwards,
    ::test_homogeneous_neighbor_sampler_weighted_backwards, ::test_homogeneous_neighbor_sampler_temporal_backwards,
    ::test_heterogeneous_neighbor_sampler_backwards and ::test_neighbor_sampler_backwards_not_supported
    need PyG 2.8's sample_direction="backward", which tierfs does not offer: it refuses it by
    name (NotSupportedError), takes PyG's default "forward", and the sample the backward tests
    want from Carol (Carol, Dave) is the forward sample of the reversed graph, as they assert."""
    reverse = people(False)
    reverse.edge_index = reverse.edge_index.flip(0)
    with tierfs.open(tierfs.from_pyg(people(False), tmp_path / "ds")) as store, tierfs.open(tierfs.from_pyg(reverse, tmp_path / "rev")) as rev:
        with pytest.raises(tierfs.NotSupportedError, match="sample_direction='backward'"):
            tierfs.pyg.NeighborSampler(store, [1], sample_direction="backward")
        seeds = NodeSamplerInput(input_id=None, node=torch.tensor([2]))
        assert tierfs.pyg.NeighborSampler(store, [1], sample_direction="forward").sample_from_nodes(seeds).node.tolist() == [2, 0]
        assert tierfs.pyg.NeighborSampler(rev, [1]).sample_from_nodes(seeds).node.tolist() == [2, 3]


def test_heterogeneous_num_neighbors_empty_dict(tmp_path):
    """test/sampler/test_sampler_base.py::test_heterogeneous_num_neighbors_empty_dict: PyG's
    NumNeighbors({}, default=[25, 10]) gives every edge type the default, two hops, in tierfs's
    num_neighbors_of and NeighborSampler."""
    data = HeteroData()
    data["A"].num_nodes = data["B"].num_nodes = 3
    data["A", "to", "B"].edge_index = torch.tensor([[0], [1]])
    data["B", "to", "A"].edge_index = torch.tensor([[0], [1]])
    want = {("A", "to", "B"): [25, 10], ("B", "to", "A"): [25, 10]}
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        assert tierfs.pyg.num_neighbors_of(store, NumNeighbors({}, default=[25, 10])) == want
        assert tierfs.pyg.NeighborSampler(store, NumNeighbors({}, default=[25, 10])).num_neighbors == want
