"""Several named node features and edge features: ingest from arrays and PyG Data, read with
gather(ids, feature=...), edge features by the sampler's e_id, and the refusals of bad input."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import tierfs
from conftest import SEED, rng

torch = pytest.importorskip("torch")


def unique_edges(r, n, e):
    """(2, k) edges without repeated pairs, so a sampled (src, dst) names one input edge."""
    ei = r.integers(0, n, (2, e))
    _, first = np.unique(ei[0] * n + ei[1], return_index=True)
    return ei[:, np.sort(first)]


def input_edge_of(edges):
    return {(int(s), int(d)): i for i, (s, d) in enumerate(edges.T)}


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    r = rng(140)
    n = 400
    edges = unique_edges(r, n, 3000)
    e = edges.shape[1]
    arrays = {
        "x": r.standard_normal((n, 4)).astype(np.float32),
        "h": r.standard_normal((n, 3)).astype(np.float16),
        "deg": r.integers(0, 100, n).astype(np.int32),
        "edge_weight": r.random(e).astype(np.float32),
        "edge_attr": r.integers(-100, 100, (e, 5)).astype(np.int8),
    }
    path = tierfs.ingest(
        tmp_path_factory.mktemp("named") / "ds", edges=edges, features=arrays["x"],
        node_features={"h": arrays["h"], "deg": arrays["deg"]},
        edge_features={"edge_weight": arrays["edge_weight"], "edge_attr": arrays["edge_attr"]},
    )
    return path, edges, arrays


def test_features_listed_and_gathered(named):
    path, edges, a = named
    with tierfs.open(path) as s:
        # input_edge_id: ingest's input position of every edge id (the input is not sorted by destination)
        assert list(s.features) == ["x", "h", "deg", "edge_weight", "edge_attr", "input_edge_id"]
        assert s.feature_name == "x" and s.features["x"]["default"]
        assert s.features["edge_weight"] == {"of": "edge", "dtype": "float32", "dim": 1, "row_bytes": 4, "rows": edges.shape[1],
                                             "scalar": True, "default": False}
        ids = rng(141).integers(0, s.num_nodes(), 700)
        np.testing.assert_array_equal(s.gather(ids, feature="h"), a["h"][ids], err_msg=f"seed {SEED}")
        np.testing.assert_array_equal(s.gather(ids, feature="deg"), a["deg"][ids])  # scalar: shape (n,)
        np.testing.assert_array_equal(s.gather(ids, feature="x"), a["x"][ids])
        assert s.gather(int(ids[0]), feature="h").shape == (3,)
        t = s.gather(torch.from_numpy(ids), feature="h")
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float16 and torch.equal(t, torch.from_numpy(a["h"][ids]))
        out = np.empty((len(ids), 3), np.float16)
        assert s.gather(ids, out=out, feature="h") is out
        np.testing.assert_array_equal(out, a["h"][ids])
        np.testing.assert_array_equal(s.gather_async(ids, feature="deg").wait(), a["deg"][ids])
        with pytest.raises(KeyError, match="no feature 'nope'"):
            s.gather(ids, feature="nope")
        with pytest.raises(IndexError):
            s.gather([edges.shape[1]], feature="edge_attr")
        with pytest.raises(TypeError):
            s.gather(ids, out=np.empty((len(ids), 3), np.float32), feature="h")
    # A store serving another feature: gather() is that one, and x is read by name.
    with tierfs.open(path, feature="h") as s:
        assert s.feature_name == "h" and s.dim == 3
        np.testing.assert_array_equal(s.gather(ids), a["h"][ids])
        np.testing.assert_array_equal(s.gather(ids, feature="x"), a["x"][ids])


def test_sample_e_id_indexes_edge_features(named):
    path, edges, a = named
    which = input_edge_of(edges)
    with tierfs.open(path) as s:
        sampler = s.sampler([6, 4], seed=SEED)
        for seeds in (rng(142).integers(0, s.num_nodes(), 64), torch.arange(10)):
            smp = sampler.sample(seeds)
            e_id = smp.e_id
            assert e_id.shape == smp.row.shape
            nodes = np.asarray(smp.nodes)
            rows = [which[(int(nodes[r]), int(nodes[c]))] for r, c in zip(np.asarray(smp.row), np.asarray(smp.col))]
            np.testing.assert_array_equal(np.asarray(s.gather(e_id, feature="edge_attr")), a["edge_attr"][rows], err_msg=f"seed {SEED}")
            np.testing.assert_array_equal(np.asarray(s.gather(e_id, feature="edge_weight")), a["edge_weight"][rows])
            indptr, indices = s.csc()
            np.testing.assert_array_equal(indices[np.asarray(e_id)], nodes[np.asarray(smp.row)])


def test_verify_covers_edge_features_and_version(named, cli, tmp_path):
    path, edges, a = named
    with open(os.path.join(path, "manifest.json")) as f:
        m = json.load(f)
    assert m["version"] == 9 and [f["name"] for f in m["edge_types"][0]["features"]] == ["edge_weight", "edge_attr", "input_edge_id"]
    assert subprocess.run([cli, "verify", path], capture_output=True).returncode == 0
    copy = tierfs.ingest(tmp_path / "c", edges=edges, edge_features={"edge_attr": a["edge_attr"]})
    stripe = os.path.join(copy, json.load(open(os.path.join(copy, "manifest.json")))["edge_types"][0]["features"][0]["files"][0])
    with open(stripe, "r+b") as f:
        f.seek(3)
        f.write(bytes([f.read(1)[0] ^ 0xFF]))
    r = subprocess.run([cli, "verify", copy], capture_output=True, text=True)
    assert r.returncode != 0 and os.path.basename(stripe) in r.stdout + r.stderr


def test_datasets_without_edge_features_are_version_9_and_sample(tmp_path):
    path = tierfs.synth(tmp_path / "s", nodes=500, avg_degree=4, dim=8, seed=1)
    with open(os.path.join(path, "manifest.json")) as f:
        assert json.load(f)["version"] == 9
    with tierfs.open(path) as s:
        assert list(s.features) == ["x"] and s.sampler([3]).sample([0, 1]).e_id is not None


def test_bad_named_inputs_are_refused_naming_them(tmp_path):
    edges = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])
    x = np.zeros((4, 2), np.float32)
    cases = [
        (dict(edge_features={"w": np.zeros(3, np.float32)}), ValueError, r"edge feature \"w\": file <the edge_features\['w'\] array> has 3 rows, but the edges file <the edges array> has 4 edges"),
        (dict(node_features={"h": np.zeros((5, 2))}), ValueError, r"node feature \"h\": file <the node_features\['h'\] array> has 5 rows, but the graph has 4 nodes"),
        (dict(node_features={"x": np.zeros((4, 2))}), ValueError, r"\"x\" is used twice"),
        (dict(edge_features={"w": np.zeros((4, 1, 1))}), ValueError, r"must be \(E, dim\) or \(E,\)"),
        (dict(edge_features={"w": np.zeros(4)}, dedup=True), ValueError, r"with Dedup"),
        (dict(node_features={"a/b": x}), ValueError, r"'/' is not allowed"),
        (dict(edge_features={"w": str(tmp_path / "missing.npy")}), FileNotFoundError, r"missing.npy"),
        (dict(node_features=[x]), TypeError, r"node_features must be a dict"),
    ]
    for i, (kw, exc, match) in enumerate(cases):
        out = tmp_path / f"d{i}"
        with pytest.raises(exc, match=match):
            tierfs.ingest(out, edges=edges, features=x, **kw)
        assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".")], f"case {i} left files"


def test_from_pyg_stores_node_and_edge_attributes(tmp_path):
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data

    r = rng(143)
    n = 300
    ei = torch.from_numpy(unique_edges(r, n, 2000))
    e = ei.shape[1]
    data = Data(x=torch.randn(n, 6), edge_index=ei, y=torch.from_numpy(r.integers(0, 3, n)),
                pos=torch.randn(n, 3), edge_attr=torch.randn(e, 2), edge_weight=torch.rand(e))
    path = tierfs.from_pyg(data, tmp_path / "pyg")
    which = input_edge_of(ei.numpy())
    with tierfs.open(path) as s:
        assert {k: v["of"] for k, v in s.features.items()} == {"x": "node", "pos": "node", "edge_attr": "edge", "edge_weight": "edge", "input_edge_id": "edge"}
        ids = torch.arange(n)
        assert torch.equal(s.gather(ids, feature="pos"), data.pos)
        smp = s.sampler([-1]).sample(torch.arange(n))
        assert smp.num_edges == e
        rows = [which[(int(smp.nodes[r_]), int(smp.nodes[c]))] for r_, c in zip(smp.row, smp.col)]
        assert torch.equal(s.gather(smp.e_id, feature="edge_attr"), data.edge_attr[rows])
        w = s.gather(smp.e_id, feature="edge_weight")
        assert w.shape == (e,) and torch.equal(w, data.edge_weight[rows])


def test_pyg_feature_store_and_loader_serve_named_features(named):
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import TensorAttr
    from torch_geometric.loader import NodeLoader
    from torch_geometric.testing import MyFeatureStore

    import tierfs.pyg

    path, edges, a = named
    which = input_edge_of(edges)
    with tierfs.open(path) as s:
        fs, gs = tierfs.pyg.stores(s)
        ref = MyFeatureStore()
        for name in ("x", "h", "deg"):
            ref.put_tensor(torch.from_numpy(a[name]), group_name=None, attr_name=name, index=None)
        for name in ("edge_weight", "edge_attr"):  # edge attributes in the input's order (e_id), as in memory
            ref.put_tensor(torch.from_numpy(a[name]), group_name=tierfs.pyg.EDGE_TYPE, attr_name=name, index=None)
        r = rng(144)
        ids = torch.from_numpy(r.integers(0, s.num_nodes(), 100))
        eids = torch.from_numpy(r.integers(0, s.num_edges(), 80))
        attrs = [TensorAttr(None, "x", ids), TensorAttr(None, "h", ids), TensorAttr(None, "deg", ids),
                 TensorAttr(tierfs.pyg.EDGE_TYPE, "edge_attr", eids), TensorAttr(tierfs.pyg.EDGE_TYPE, "edge_weight", eids)]
        for got, want in zip(fs.multi_get_tensor(attrs), ref.multi_get_tensor(attrs)):
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=f"seed {SEED}")
        assert torch.equal(fs[None, "edge_attr", eids], ref[tierfs.pyg.EDGE_TYPE, "edge_attr", eids])
        assert fs.get_tensor_size(tierfs.pyg.EDGE_TYPE, "edge_weight") == (s.num_edges(),)
        assert fs.get_tensor_size(None, "h", ids) == (100, 3)
        assert sorted(x.attr_name for x in fs.get_all_tensor_attrs()) == ["deg", "h", "x"]
        assert sorted(x.attr_name for x in fs.get_all_edge_tensor_attrs()) == ["edge_attr", "edge_weight"]
        with pytest.raises(KeyError, match="no edge attribute 'h'"):
            fs.get_tensor(tierfs.pyg.EDGE_TYPE, "h", eids)
        with pytest.raises(KeyError, match="one node type"):
            fs.get_tensor("paper", "x", ids)

        inp = torch.from_numpy(r.choice(s.num_nodes(), 150, replace=False))
        loader = tierfs.pyg.NeighborLoader(s, [5, 3], inp, batch_size=64, seed=7)
        ref_loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(s, [5, 3], seed=7), input_nodes=inp, batch_size=64)
        for b, rb in zip(loader, ref_loader):
            assert torch.equal(b.e_id, rb.e_id) and torch.equal(b.n_id, rb.n_id)
            assert b.e_id.shape == (b.edge_index.shape[1],)
            rows = [which[(int(b.n_id[i]), int(b.n_id[j]))] for i, j in b.edge_index.t().tolist()]
            assert b.e_id.tolist() == rows, f"e_id: the input edges' positions, seed {SEED}"
            assert torch.equal(b.edge_attr, torch.from_numpy(a["edge_attr"][rows])), f"seed {SEED}"
            assert torch.equal(b.edge_weight, torch.from_numpy(a["edge_weight"][rows]))
            assert torch.equal(b.h, torch.from_numpy(a["h"][b.n_id.numpy()]))
            assert torch.equal(b.h, rb.h) and torch.equal(b.x, rb.x)


def test_cli_ingest_named_features(cli, tmp_path):
    r = rng(145)
    edges = unique_edges(r, 50, 200)
    e = edges.shape[1]
    files = {"edges": edges, "x": r.random((50, 2)).astype(np.float32), "pos": r.random((50, 3)).astype(np.float32),
             "w": r.random(e).astype(np.float32)}
    for name, arr in files.items():
        np.save(tmp_path / f"{name}.npy", arr)
    out = tmp_path / "ds"
    run = subprocess.run([cli, "ingest", "--edges", str(tmp_path / "edges.npy"), "--features", str(tmp_path / "x.npy"),
                          "--node-feature", f"pos={tmp_path / 'pos.npy'}", "--edge-feature", f"edge_weight={tmp_path / 'w.npy'}",
                          "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "pos: 3 x float32" in run.stdout and "edge_weight: float32 scalar" in run.stdout
    with tierfs.open(out) as s:
        np.testing.assert_array_equal(s.gather(np.arange(50), feature="pos"), files["pos"])
        assert s.features["edge_weight"]["scalar"]
    bad = subprocess.run([cli, "ingest", "--edges", str(tmp_path / "edges.npy"), "--edge-feature", str(tmp_path / "w.npy"),
                          "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode != 0 and "want NAME=FILE" in bad.stderr
    bad = subprocess.run([cli, "ingest", "--edges", str(tmp_path / "edges.npy"), "--edge-feature", f"w={tmp_path / 'pos.npy'}",
                          "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode != 0 and f"has 50 rows, but the edges file {tmp_path / 'edges.npy'} has {e} edges" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_node_and_edge_feature_may_share_a_name(tmp_path):
    """A one-type dataset's node feature and edge feature may share a name, as GraphBolt's
    (domain, type, name) keys allow and Go's ingest takes: each is served under its own key."""
    rng = np.random.default_rng(7)
    edges = np.array([[0, 1, 2, 3, 1], [1, 2, 3, 0, 3]])
    x = rng.standard_normal((4, 2)).astype(np.float32)
    w_node = rng.standard_normal((4, 3)).astype(np.float32)
    w_edge = rng.standard_normal(5).astype(np.float32)
    out = tmp_path / "shared"
    # "v" holds the same values under a name of its own: the reference for the edge order.
    tierfs.ingest(out, edges=edges, features=x, node_features={"w": w_node}, edge_features={"w": w_edge, "v": w_edge})
    with tierfs.open(out) as s:
        np.testing.assert_array_equal(s.gather(np.arange(4), feature="w"), w_node)
        (edge_type,) = s.types["edge_types"]
        got = np.asarray(s.gather(np.arange(5), edge_type=edge_type, feature="w"))
        want = np.asarray(s.gather(np.arange(5), edge_type=edge_type, feature="v"))
        np.testing.assert_array_equal(got, want)
        assert sorted(got.reshape(-1)) == sorted(w_edge)
