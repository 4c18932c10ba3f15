"""A graph of one node type and one edge type is the one-type case of the typed API: a one-type
``HeteroData`` or GraphBolt dataset keeps its type names and comes back typed (PyG's
``HeteroData`` batches), a ``Data`` stays homogeneous, and a dataset of edges alone answers."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402

PAPER, CITES = "paper", ("paper", "cites", "paper")


def one_type_graph(r, n=300, e=2000):
    """The values of a one-type graph: node features x (n, 5), year (n,), labels, a train mask;
    edges with features w (e,) and edge_attr (e, 2)."""
    return dict(
        x=torch.from_numpy(r.standard_normal((n, 5)).astype(np.float32)),
        year=torch.from_numpy(r.integers(1990, 2030, n)),
        y=torch.from_numpy(r.integers(0, 4, n)),
        train_mask=torch.from_numpy(r.random(n) < 0.5),
        edge_index=torch.from_numpy(r.integers(0, n, (2, e))),
        w=torch.from_numpy(r.standard_normal(e).astype(np.float32)),
        edge_attr=torch.from_numpy(r.standard_normal((e, 2)).astype(np.float32)),
    )


def test_one_type_hetero_data_keeps_its_types(tmp_path):
    g = one_type_graph(rng(410))
    h = HeteroData()
    for k in ("x", "year", "y", "train_mask"):
        h[PAPER][k] = g[k]
    for k in ("edge_index", "w", "edge_attr"):
        h[CITES][k] = g[k]
    n = g["x"].shape[0]
    with tierfs.open(tierfs.from_pyg(h, tmp_path / "ds")) as s:
        assert s.is_hetero and s.types["typed"], f"seed {SEED}"
        assert s.node_types == [PAPER] and s.edge_types == [CITES]
        ids = torch.from_numpy(rng(411).integers(0, n, 64))
        assert torch.equal(torch.as_tensor(s.gather(ids, node_type=PAPER)), g["x"][ids])
        assert torch.equal(torch.as_tensor(s.gather(ids, feature="year", node_type=PAPER)), g["year"][ids])
        assert torch.equal(torch.as_tensor(s.labels(ids, node_type=PAPER)), g["y"][ids])
        np.testing.assert_array_equal(np.sort(s.split("train", node_type=PAPER)), np.flatnonzero(g["train_mask"].numpy()))

        fs, gs = tierfs.pyg.stores(s)
        assert {(a.group_name, a.attr_name) for a in fs.get_all_tensor_attrs()} == {(PAPER, "x"), (PAPER, "year"), (PAPER, "y")}
        assert [a.edge_type for a in gs.get_all_edge_attrs()] == [CITES]

        seeds = torch.from_numpy(rng(412).choice(n, 80, replace=False))
        loader = tierfs.pyg.NeighborLoader(s, num_neighbors=[4, 3], input_nodes=(PAPER, seeds), batch_size=32, seed=5)
        batches = 0
        for b in loader:
            batches += 1
            assert isinstance(b, HeteroData) and b.node_types == [PAPER] and b.edge_types == [CITES]
            n_id, e_id = b[PAPER].n_id, b[CITES].e_id
            assert torch.equal(b[PAPER].x, g["x"][n_id]) and torch.equal(b[PAPER].year, g["year"][n_id])
            assert torch.equal(b[PAPER].y, g["y"][n_id])
            # e_id indexes the input edge order: the edge's ends and its features.
            src, dst = b[CITES].edge_index
            assert torch.equal(n_id[src], g["edge_index"][0, e_id]) and torch.equal(n_id[dst], g["edge_index"][1, e_id]), f"seed {SEED}"
            assert torch.equal(b[CITES].w, g["w"][e_id]) and torch.equal(b[CITES].edge_attr, g["edge_attr"][e_id])
        assert batches == 3


def test_data_stays_homogeneous(tmp_path):
    g = one_type_graph(rng(413))
    with tierfs.open(tierfs.from_pyg(Data(**g), tmp_path / "ds")) as s:
        assert not s.is_hetero and not s.types["typed"] and s.node_types == ["node"]
        b = next(iter(tierfs.pyg.NeighborLoader(s, num_neighbors=[3], input_nodes=torch.arange(10), batch_size=10, seed=1)))
        assert isinstance(b, Data) and torch.equal(b.x, g["x"][b.n_id])


def write_graphbolt(d, g, named: bool):
    """A GraphBolt on-disk dataset of g: its types named ("paper", "paper:cites:paper") or not."""
    os.makedirs(d / "data")
    np.save(d / "data" / "edges.npy", g["edge_index"].numpy())
    for k in ("x", "year", "w"):
        np.save(d / "data" / f"{k}.npy", g[k].numpy())
    train = np.flatnonzero(g["train_mask"].numpy())
    np.save(d / "data" / "train.npy", train)
    np.save(d / "data" / "train_labels.npy", g["y"].numpy()[train])

    def typed(indent: str, name: str) -> str:  # a "type:" line, or none
        return f"{indent}type: {name}\n" if named else ""

    feature = "  - domain: {domain}\n{type}    name: {name}\n    format: numpy\n    path: data/{file}.npy\n"
    (d / "metadata.yaml").write_text(
        "dataset_name: one_type\ngraph:\n  nodes:\n"
        f"    - num: {g['x'].shape[0]}\n{typed('      ', 'paper')}"
        f"  edges:\n    - format: numpy\n      path: data/edges.npy\n{typed('      ', 'paper:cites:paper')}"
        "feature_data:\n"
        + feature.format(domain="node", type=typed("    ", "paper"), name="feat", file="x")
        + feature.format(domain="node", type=typed("    ", "paper"), name="year", file="year")
        + feature.format(domain="edge", type=typed("    ", "paper:cites:paper"), name="w", file="w")
        + "tasks:\n  - name: nc\n    num_classes: 4\n    train_set:\n"
        f"      - {typed('', 'paper') or ''}{'        ' if named else ''}data:\n"
        "          - name: seeds\n            format: numpy\n            path: data/train.npy\n"
        "          - name: labels\n            format: numpy\n            path: data/train_labels.npy\n")


@pytest.mark.parametrize("named", [True, False])
def test_graphbolt_type_names_survive(tmp_path, named):
    g = one_type_graph(rng(414))
    write_graphbolt(tmp_path / "gb", g, named)
    with tierfs.open(tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds")) as s:
        assert s.is_hetero == named and s.types["typed"] == named
        nt = PAPER if named else "node"
        et = CITES if named else ("node", "to", "node")
        assert s.node_types == [nt] and len(s.edge_types) == 1
        if named:
            assert s.edge_types == [et]
        ids = torch.from_numpy(rng(415).integers(0, g["x"].shape[0], 50))
        assert torch.equal(torch.as_tensor(s.gather(ids, node_type=nt, feature="feat")), g["x"][ids])
        assert torch.equal(torch.as_tensor(s.gather(ids, node_type=nt, feature="year")), g["year"][ids])
        eids = torch.from_numpy(rng(416).integers(0, g["w"].shape[0], 50))
        # The core's edge ids are CSC positions (Sample.e_id); input_edge_id maps them to the input.
        order = torch.as_tensor(s.gather(eids, feature="input_edge_id", edge_type=s.edge_types[0]))
        assert torch.equal(torch.as_tensor(s.gather(eids, feature="w", edge_type=s.edge_types[0])), g["w"][order]), f"seed {SEED}"
        train = np.flatnonzero(g["train_mask"].numpy())
        np.testing.assert_array_equal(s.split("train", node_type=nt), train)


def test_edges_alone(tmp_path):
    e = rng(417).integers(0, 40, (2, 150))
    np.save(tmp_path / "e.npy", e)
    with tierfs.open(tierfs.ingest(tmp_path / "ds", edges=tmp_path / "e.npy")) as s:
        assert not s.is_hetero and s.node_type == "node" and s.feature_name is None
        assert s.node_types == ["node"] and s.num_nodes() == 40
