"""PyG 2.8.0's own tests carried over to tierfs (issue 42): each test names the file and test of
pytorch_geometric 2.8.0 it carries assertions from. PyG's NeighborSampler needs pyg-lib, which
is not installable here, so where a test compares samples the control is PyG's own loader over
the in-memory data with tierfs's sampler (as in test_pyg_conformance.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData, TensorAttr  # noqa: E402
from torch_geometric.data.feature_store import AttrView  # noqa: E402
from torch_geometric.loader import LinkLoader, NodeLoader  # noqa: E402
from torch_geometric.sampler import NumNeighbors  # noqa: E402
from torch_geometric.utils import to_torch_coo_tensor, to_torch_csc_tensor, to_torch_csr_tensor  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402
from test_pyg_hetero import assert_same_hetero  # noqa: E402


def random_edge_index(g, num_src, num_dst, num_edges):
    """PyG's torch_geometric.testing.get_random_edge_index, from a seeded generator."""
    return torch.stack([torch.randint(num_src, (num_edges,), generator=g), torch.randint(num_dst, (num_edges,), generator=g)])


def test_homo_link_neighbor_loader_no_edges(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_no_edges: a Data
    of num_nodes alone (no features, no edges)."""
    g = torch.Generator().manual_seed(SEED % (1 << 31))
    with tierfs.open(tierfs.from_pyg(Data(num_nodes=100), tmp_path / "ds")) as store:
        assert store.num_nodes() == 100 and store.feature_name is None
        loader = tierfs.pyg.LinkNeighborLoader(store, num_neighbors=[], batch_size=20, edge_label_index=random_edge_index(g, 100, 100, 100))
        n = 0
        for batch in loader:
            assert isinstance(batch, Data)
            assert batch.input_id.numel() == 20
            assert batch.edge_label_index.size(1) == 20
            assert batch.num_nodes == batch.edge_label_index.unique().numel()
            n += 1
        assert n == 5


def test_hetero_link_neighbor_loader_no_edges(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_hetero_link_neighbor_loader_no_edges: seed
    edges of an edge type the graph lacks ("paper", "paper": a graph without edges), zero hops."""
    g = torch.Generator().manual_seed(SEED % (1 << 31))
    with tierfs.open(tierfs.from_pyg(HeteroData(paper=dict(num_nodes=100)), tmp_path / "ds")) as store:
        loader = tierfs.pyg.LinkNeighborLoader(
            store,
            num_neighbors=[],
            edge_label_index=(("paper", "paper"), random_edge_index(g, 100, 100, 100)),
            batch_size=20,
        )
        n = 0
        for batch in loader:
            assert isinstance(batch, HeteroData)
            assert batch["paper", "paper"].input_id.numel() == 20
            assert batch["paper", "paper"].edge_label_index.size(1) == 20
            assert batch["paper"].num_nodes == batch["paper", "paper"].edge_label_index.unique().numel()
            n += 1
        assert n == 5


def small_hetero(r):
    data = HeteroData()
    data["paper"].x = torch.from_numpy(r.standard_normal((120, 4)).astype("float32"))
    data["author"].x = torch.from_numpy(r.standard_normal((60, 3)).astype("float32"))
    data["paper", "cites", "paper"].edge_index = torch.from_numpy(r.integers(0, 120, (2, 500)))
    data["author", "writes", "paper"].edge_index = torch.stack([torch.from_numpy(r.integers(0, 60, 300)), torch.from_numpy(r.integers(0, 120, 300))])
    return data


@pytest.mark.parametrize("neg", [None, "binary", "triplet"])
def test_link_loader_seed_edges_of_a_type_without_edges(tmp_path, neg):
    """test/loader/test_link_neighbor_loader.py::test_hetero_link_neighbor_loader_no_edges on a
    graph with edges: seed edges of a type it lacks, between two of its node types, give what
    PyG's LinkLoader gives over the in-memory HeteroData with the same sampler, batch for batch,
    and their label edges are the seed edges."""
    r = rng(4201)
    data = small_hetero(r)
    et = ("paper", "likes", "author")
    eli = torch.stack([torch.from_numpy(r.integers(0, 120, 90)), torch.from_numpy(r.integers(0, 60, 90))])
    nn = {k: [3, 2] for k in data.edge_types}
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        ours = tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(et, eli), neg_sampling=neg, batch_size=32, seed=7)
        theirs = LinkLoader(data.clone(), link_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=7), edge_label_index=(et, eli),
                            neg_sampling=neg, batch_size=32)
        n = 0
        for b, w in zip(ours, theirs, strict=True):
            assert_same_hetero(b, w, extra=["num_nodes"], ours_extra=["num_nodes"])
            assert et not in b.edge_types or "edge_index" not in b[et]
            ids = b[et].input_id
            if neg == "triplet":
                src, dst = b["paper"].n_id[b["paper"].src_index], b["author"].n_id[b["author"].dst_pos_index]
            else:
                lab = b[et].edge_label_index
                src, dst = b["paper"].n_id[lab[0, : len(ids)]], b["author"].n_id[lab[1, : len(ids)]]
            assert torch.equal(src, eli[0, ids]) and torch.equal(dst, eli[1, ids])
            n += 1
        assert n == 3
        # PyG's (src, dst) form: the one edge type between them, or (src, "to", dst) where none is
        b = next(iter(tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(("author", "paper"), eli.flip(0)), batch_size=90)))
        assert b["author", "writes", "paper"].edge_label_index.shape == (2, 90)
        b = next(iter(tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(("paper", "author"), eli), batch_size=90)))
        assert b["paper", "to", "author"].input_id.numel() == 90
        with pytest.raises(tierfs.KeyNotFoundError, match="'paper', 'likes', 'author'.*need the tensor"):
            tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(et, None))
        with pytest.raises(tierfs.KeyNotFoundError, match="'paper', 'likes', 'book'"):
            tierfs.pyg.LinkNeighborLoader(store, nn, edge_label_index=(("paper", "likes", "book"), eli))


def test_feature_store(tmp_path):
    """test/data/test_feature_store.py::test_feature_store, its reads (tierfs's FeatureStore is
    read-only: puts are refused) on a typed dataset with node type "A" and feature "feat"."""
    tensor = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    data = HeteroData()
    data["A"].feat = tensor
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as s:
        store, _ = tierfs.pyg.stores(s)
        group_name, attr_name, index = "A", "feat", torch.tensor([0, 1, 2])
        attr = TensorAttr(group_name, attr_name, index)
        assert TensorAttr(group_name).update(attr) == attr

        assert torch.equal(store.get_tensor(attr), tensor)
        assert torch.equal(store.get_tensor(group_name, attr_name, index=torch.tensor([0, 2])), tensor[torch.tensor([0, 2])])
        with pytest.raises(tierfs.NotSupportedError):
            store.put_tensor(tensor, attr)

        # Views:
        view = store.view(group_name=group_name)
        view.attr_name = attr_name
        view["index"] = index
        assert view != "not a 'AttrView' object"
        assert view == AttrView(store, TensorAttr(group_name, attr_name, index))
        assert str(view) == "AttrView(store=FeatureStore(), attr=TensorAttr(group_name='A', attr_name='feat', index=tensor([0, 1, 2])))"

        # Fully-specified forms, all of which produce a tensor output
        assert torch.equal(store[group_name, attr_name, index], tensor)
        assert torch.equal(store[group_name, attr_name, None], tensor)
        assert torch.equal(store[group_name, attr_name, :], tensor)
        assert torch.equal(store[group_name][attr_name][:], tensor)
        assert torch.equal(store[group_name].feat[:], tensor)
        assert torch.equal(store.view().A.feat[:], tensor)

        with pytest.raises(AttributeError):
            _ = store.view(group_name=group_name, index=None).feat.A

        # Partially-specified forms, which produce an AttrView object
        assert store[group_name] == store.view(TensorAttr(group_name=group_name))
        assert store[group_name].feat == store.view(TensorAttr(group_name=group_name, attr_name=attr_name))
        assert isinstance(store[group_name, attr_name], AttrView)
        assert torch.equal(store[group_name, attr_name](), tensor)

        # What the store lacks (PyG's asserts after deletion)
        with pytest.raises(KeyError):
            _ = store[group_name, "nope", index]
        with pytest.raises(KeyError):
            _ = store["B", attr_name, index]


def test_graph_store_conversion(tmp_path):
    """test/data/test_graph_store.py::test_graph_store (str, KeyError) and
    ::test_graph_store_conversion: three edge types of one random edge_index, as COO, CSR and
    CSC against PyG's own conversions (tierfs's columns are in CSC order, so the COO order is
    its own; the permutation maps each to the input edge)."""
    g = torch.Generator().manual_seed(SEED % (1 << 31))
    flat = torch.randperm(100 * 100, generator=g)[:300]  # distinct edges: PyG's conversions coalesce
    edge_index = torch.stack([flat // 100, flat % 100])
    coo_ref = to_torch_coo_tensor(edge_index, size=(100, 100)).indices()
    adj = to_torch_csr_tensor(edge_index, size=(100, 100))
    csr = (adj.crow_indices(), adj.col_indices())
    adj = to_torch_csc_tensor(edge_index, size=(100, 100))
    csc = (adj.row_indices(), adj.ccol_indices())
    data = HeteroData()
    data["v"].x = torch.zeros(100, 1)
    for rel in "123":
        data["v", rel, "v"].edge_index = edge_index
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as s:
        _, graph_store = tierfs.pyg.stores(s)
        assert str(graph_store) == "GraphStore()"
        assert len(graph_store.get_all_edge_attrs()) == 3
        with pytest.raises(KeyError):
            graph_store[("v", "4", "v"), "coo"]

        row_dict, col_dict, perm_dict = graph_store.coo()
        assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
        for row, col, perm in zip(row_dict.values(), col_dict.values(), perm_dict.values()):
            assert torch.equal(row.sort()[0], coo_ref[0].sort()[0])
            assert torch.equal(col.sort()[0], coo_ref[1].sort()[0])
            assert torch.equal(torch.stack([row, col]), edge_index[:, perm])

        row_dict, col_dict, perm_dict = graph_store.csr()
        assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
        for row, col in zip(row_dict.values(), col_dict.values()):
            assert torch.equal(row, csr[0])
            assert torch.equal(col.sort()[0], csr[1].sort()[0])

        row_dict, col_dict, perm_dict = graph_store.csc()
        assert len(row_dict) == len(col_dict) == len(perm_dict) == 3
        for row, col in zip(row_dict.values(), col_dict.values()):
            assert torch.equal(row.sort()[0], csc[0].sort()[0])
            assert torch.equal(col, csc[1])

        # 'edge_types' picks; 'store' is refused (read-only)
        out = graph_store.coo([("v", "1", "v")])
        assert list(out[0]) == [("v", "1", "v")]
        with pytest.raises(tierfs.NotSupportedError):
            graph_store.csr([("v", "1", "v")], store=True)


def test_neighbor_loader_hops_and_str(tmp_path):
    """test/loader/test_neighbor_loader.py::test_hetero_neighbor_loader_basic (hops must be the
    same across all edge types) and ::test_homo_neighbor_loader_basic, and
    test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_basic (str)."""
    r = rng(4202)
    data = small_hetero(r)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        with pytest.raises(ValueError, match="hops must be the same across all"):
            tierfs.pyg.NeighborLoader(store, num_neighbors={("paper", "cites", "paper"): [-1], ("author", "writes", "paper"): [-1, -1]},
                                      input_nodes="paper", batch_size=20)
        loader = tierfs.pyg.NeighborLoader(store, num_neighbors=[2], input_nodes="paper", batch_size=20)
        assert str(loader) == "NeighborLoader()"
        eli = data["paper", "cites", "paper"].edge_index
        assert str(tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=(("paper", "cites", "paper"), eli), batch_size=20)) == "LinkNeighborLoader()"


def test_heterogeneous_num_neighbors(tmp_path):
    """test/sampler/test_sampler_base.py::test_heterogeneous_num_neighbors_list and
    ::test_heterogeneous_num_neighbors_dict_and_default, through tierfs.pyg.num_neighbors_of on a
    dataset of edge types ("A", "to", "B") and ("B", "to", "A")."""
    data = HeteroData()
    data["A"].x = torch.zeros(5, 1)
    data["B"].x = torch.zeros(4, 1)
    data["A", "B"].edge_index = torch.tensor([[0, 1], [2, 3]])
    data["B", "A"].edge_index = torch.tensor([[3, 2], [1, 0]])
    ab, ba = ("A", "to", "B"), ("B", "to", "A")
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        assert tierfs.pyg.num_neighbors_of(store, NumNeighbors([25, 10])) == {ab: [25, 10], ba: [25, 10]}
        with pytest.raises(ValueError, match="hops must be the same across all"):
            tierfs.pyg.num_neighbors_of(store, NumNeighbors({("A", "B"): [25, 10]}, default=[-1]))
        with pytest.raises(ValueError, match="Not all edge types"):
            tierfs.pyg.num_neighbors_of(store, NumNeighbors({("A", "C"): [25, 10]}, default=[-1, -1]))
        assert tierfs.pyg.num_neighbors_of(store, NumNeighbors({("A", "B"): [25, 10]}, default=[-1, -1])) == {ab: [25, 10], ba: [-1, -1]}
        assert tierfs.pyg.num_neighbors_of(store, {("A", "B"): [25, 10], ("B", "A"): [-1, -1]}) == {ab: [25, 10], ba: [-1, -1]}


def test_weighted_homo_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_weighted_homo_neighbor_loader (weight_attr; PyG's
    Data has num_nodes alone, from_pyg needs x)."""
    edge_index = torch.tensor([[1, 3, 0, 4], [2, 2, 1, 3]])
    edge_weight = torch.tensor([0.0, 1.0, 0.0, 1.0])
    data = Data(x=torch.zeros(5, 1), edge_index=edge_index, edge_weight=edge_weight)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, input_nodes=torch.tensor([2]), num_neighbors=[1] * 2, batch_size=1, weight_attr="edge_weight")
        assert len(loader) == 1
        batch = next(iter(loader))
        assert batch.num_nodes == 3
        assert batch.n_id.tolist() == [2, 3, 4]
        assert batch.num_edges == 2
        assert batch.n_id[batch.edge_index].tolist() == [[3, 4], [2, 3]]


def test_weighted_hetero_neighbor_loader(tmp_path):
    """test/loader/test_neighbor_loader.py::test_weighted_hetero_neighbor_loader."""
    data = HeteroData()
    data["paper"].x = torch.zeros(5, 1)
    data["paper", "to", "paper"].edge_index = torch.tensor([[1, 3, 0, 4], [2, 2, 1, 3]])
    data["paper", "to", "paper"].edge_weight = torch.tensor([0.0, 1.0, 0.0, 1.0])
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        loader = tierfs.pyg.NeighborLoader(store, input_nodes=("paper", torch.tensor([2])), num_neighbors=[1] * 2, batch_size=1, weight_attr="edge_weight")
        assert len(loader) == 1
        batch = next(iter(loader))
        assert batch["paper"].num_nodes == 3
        assert batch["paper"].n_id.tolist() == [2, 3, 4]
        assert batch["paper", "paper"].num_edges == 2
        global_edge_index = batch["paper"].n_id[batch["paper", "paper"].edge_index]
        assert global_edge_index.tolist() == [[3, 4], [2, 3]]


@pytest.mark.parametrize("replace", [False, True])
def test_weighted_loaders_random(tmp_path, replace):
    """weight_attr on random input: tierfs.pyg.NeighborLoader's batches equal PyG's NodeLoader over
    the in-memory Data with the same weighted sampler; an edge of weight 0 is never drawn where
    the node has an edge of weight > 0 (with replacement) or at least the fanout of them (without);
    LinkNeighborLoader takes weight_attr too, and planned epochs refuse it."""
    r = rng(4203)
    n, e = 150, 1500
    edge_index = torch.from_numpy(r.integers(0, n, (2, e)))
    w = torch.from_numpy(np.where(r.random(e) < 0.3, 0.0, r.exponential(1.0, e)).astype(np.float32))
    data = Data(x=torch.from_numpy(r.standard_normal((n, 3)).astype(np.float32)), edge_index=edge_index, edge_weight=w)
    if replace:  # every node with in-edges has one of weight > 0: its first input edge
        first = {}
        for i, v in enumerate(edge_index[1].tolist()):
            first.setdefault(v, i)
        w[list(first.values())] = 0.5
    seed = SEED % 100000
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        ours = tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=40, seed=seed, replace=replace, weight_attr="edge_weight")
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [3, 2], seed=seed, replace=replace, weight_attr="edge_weight"),
                         input_nodes=None, batch_size=40)
        uniform = tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=40, seed=seed, replace=replace)
        differs = False
        for b, m, u in zip(ours, mem, uniform, strict=True):
            assert torch.equal(b.n_id, m.n_id) and torch.equal(b.edge_index, m.edge_index) and torch.equal(b.e_id, m.e_id), f"seed {SEED}"
            assert torch.equal(b.edge_weight, w[b.e_id])
            differs |= not torch.equal(b.e_id, u.e_id)
            hop0 = b.num_sampled_edges[0]
            for k in range(hop0):
                v = int(b.n_id[b.edge_index[1, k]])
                mine = w[edge_index[1] == v]
                if replace or (int((mine > 0).sum()) >= 3 and mine.numel() > 3):
                    assert float(b.edge_weight[k]) > 0, f"seed {SEED}: node {v} drew an edge of weight 0"
        assert differs
        eli = edge_index[:, :64]
        batch = next(iter(tierfs.pyg.LinkNeighborLoader(store, [3], edge_label_index=eli, batch_size=64, weight_attr="edge_weight", replace=replace)))
        assert batch.e_id.numel() > 0 and (not replace or bool((w[batch.e_id] > 0).all()))
        with pytest.raises(tierfs.NotSupportedError, match="weight_attr with planned_epochs"):
            tierfs.pyg.NeighborLoader(store, [3], batch_size=40, shuffle=True, weight_attr="edge_weight", planned_epochs=2)
        with pytest.raises(ValueError, match="an edge feature of the dataset"):
            tierfs.pyg.NeighborLoader(store, [3], weight_attr="nope")
