"""PyG 2.8.0's own tests carried over to tierfs (issue 42): each test names the file and test of
pytorch_geometric 2.8.0 it carries assertions from. PyG's NeighborSampler needs pyg-lib, which
is not installable here, so where a test compares samples the control is PyG's own loader over
the in-memory data with tierfs's sampler (as in test_pyg_conformance.py)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.loader import LinkLoader  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402
from test_pyg_hetero import assert_same_hetero  # noqa: E402


def random_edge_index(g, num_src, num_dst, num_edges):
    """PyG's torch_geometric.testing.get_random_edge_index, from a seeded generator."""
    return torch.stack([torch.randint(num_src, (num_edges,), generator=g), torch.randint(num_dst, (num_edges,), generator=g)])


def test_homo_link_neighbor_loader_no_edges(tmp_path):
    """test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_no_edges, on a
    Data with x (from_pyg needs x or edge_index; PyG's has num_nodes alone)."""
    g = torch.Generator().manual_seed(SEED % (1 << 31))
    with tierfs.open(tierfs.from_pyg(Data(x=torch.zeros(100, 1)), tmp_path / "ds")) as store:
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
