"""A heterogeneous dataset through the Python API: typed gathers, labels, splits and samples of
the real ACM graph (tierfs.datasets.acm), ingested with `tierfs ingest --spec`, compared with
the arrays it was made from."""

import json
import subprocess

import numpy as np
import pytest

import tierfs
from conftest import needs_cuda, rng

ETYPES = [("paper", "to", "author"), ("author", "to", "paper"), ("paper", "to", "subject"), ("subject", "to", "paper")]


@pytest.fixture(scope="module")
def acm(tmp_path_factory, cli):
    d = tierfs.datasets.acm(split=60)
    tmp = tmp_path_factory.mktemp("acm")
    node_types = []
    for t in ("paper", "author", "subject"):
        nt = {"name": t, "num_nodes": int(d[t]["num_nodes"]), "features": []}
        np.save(tmp / f"{t}_x.npy", d[t]["x"])
        nt["features"].append({"name": "x", "path": str(tmp / f"{t}_x.npy")})
        if t == "paper":
            np.save(tmp / "paper_y.npy", d[t]["y"])
            nt["labels"] = str(tmp / "paper_y.npy")
            (tmp / "splits").mkdir()
            for s in ("train", "val", "test"):
                np.save(tmp / "splits" / f"{s}.npy", d[t][s])
            nt["splits"] = str(tmp / "splits")
        node_types.append(nt)
    edge_types = []
    for et in ETYPES:
        path = tmp / ("_".join(et) + ".npy")
        np.save(path, d[et])
        edge_types.append({"src": et[0], "rel": et[1], "dst": et[2], "edges": str(path)})
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"node_types": node_types, "edge_types": edge_types}))
    out = tmp / "ds"
    subprocess.run([cli, "ingest", "--spec", str(spec), str(out)], check=True, capture_output=True)
    return d, str(out)


def test_types_and_typed_reads(acm):
    d, path = acm
    r = rng(31)
    with tierfs.open(path, host_cache="4MB") as s:
        assert s.is_hetero and s.node_types == ["paper", "author", "subject"]
        assert s.edge_types == ETYPES
        assert s.node_type == "paper" and s.num_nodes("paper") == 4019
        for t in s.node_types:
            n = s.num_nodes(t)
            assert n == d[t]["num_nodes"]
            ids = r.integers(0, n, 300)
            np.testing.assert_array_equal(s.gather(ids, node_type=t), d[t]["x"][ids])
        for et in ETYPES:
            assert s.num_edges(et) == d[et].shape[1] == s.num_edges(":".join(et))
        ids = r.integers(0, 4019, 200)
        np.testing.assert_array_equal(s.labels(ids, node_type="paper"), d["paper"]["y"][ids])
        np.testing.assert_array_equal(np.sort(s.split("train", node_type="paper")), d["paper"]["train"])
        st = s.stats()["node_types"]
        assert set(st) == {"paper", "author", "subject"}
        assert sum(next(t for t in v["tiers"] if t["tier"] == "host")["bytes_held"] for v in st.values()) <= 4 << 20


def test_num_nodes_and_edges(acm, tmp_path):
    """DGL's DGLGraph.num_nodes / num_edges: a named type's count, the only type's, or with
    several types the total; an unknown type is a KeyNotFoundError naming the types there are."""
    d, path = acm
    with tierfs.open(path, host_cache=0) as s:
        assert s.num_nodes() == sum(d[t]["num_nodes"] for t in s.node_types) != s.num_nodes("paper")
        assert s.num_edges() == sum(d[et].shape[1] for et in ETYPES)
        assert [s.num_nodes(t) for t in s.node_types] == [d[t]["num_nodes"] for t in s.node_types]
        with pytest.raises(tierfs.KeyNotFoundError, match="no node type 'venue'.*paper, author, subject"):
            s.num_nodes("venue")
        with pytest.raises(tierfs.KeyNotFoundError, match=r"no edge type \('paper', 'cites', 'paper'\).*'paper', 'to', 'author'"):
            s.num_edges(("paper", "cites", "paper"))
    e = rng(32).integers(0, 40, (2, 150))
    e[:, 0] = 39  # node 39 for sure
    with tierfs.open(tierfs.ingest(tmp_path / "one", edges=e)) as s:
        (nt,), (et,) = s.node_types, s.edge_types
        assert s.num_nodes() == s.num_nodes(nt) == 40
        assert s.num_edges() == s.num_edges(et) == s.num_edges(":".join(et)) == 150
        with pytest.raises(tierfs.KeyNotFoundError, match=f"no node type 'paper'.*{nt}"):
            s.num_nodes("paper")


def test_hetero_samples_are_edges_of_the_graph(acm):
    d, path = acm
    r = rng(32)
    edges = {et: set(zip(d[et][0].tolist(), d[et][1].tolist())) for et in ETYPES}
    fanouts = {et: [4, 3] for et in ETYPES}
    with tierfs.open(path) as s:
        sp = s.sampler(fanouts, seed=int(r.integers(1 << 30)))
        seeds = r.integers(0, 4019, 64)
        out = sp.sample(("paper", seeds))
        again = s.sampler(fanouts, seed=sp._seed).sample(seeds, node_type="paper")
        np.testing.assert_array_equal(out.node["paper"][:64], seeds)
        assert out.num_sampled_nodes["paper"][0] == 64 and out.num_seeds == 64
        for t, ids in out.node.items():
            assert len(np.unique(ids)) == len(ids) or t == "paper"  # seeds may repeat
            assert sum(out.num_sampled_nodes[t]) == len(ids)
            np.testing.assert_array_equal(ids, again.node[t])
        total = 0
        for et in ETYPES:
            src, dst = out.node[et[0]][out.row[et]], out.node[et[2]][out.col[et]]
            assert all((a, b) in edges[et] for a, b in zip(src.tolist(), dst.tolist())), et
            # a node gets at most its hop's fanout of neighbors per edge type
            if len(out.col[et]):
                assert np.bincount(out.col[et]).max() <= 4
            assert out.edge[et] is not None and len(out.edge[et]) == len(out.row[et])
            total += len(out.row[et])
        assert total > 0
        # torch seeds give tensors
        torch = pytest.importorskip("torch")
        t_out = s.sampler(fanouts, seed=1).sample(torch.tensor(seeds), node_type="paper")
        assert isinstance(t_out.node["author"], torch.Tensor)


def test_hetero_errors_name_what_the_dataset_has(acm):
    _, path = acm
    with tierfs.open(path) as s:
        with pytest.raises(KeyError, match="venue"):
            s.gather([0], node_type="venue")
        with pytest.raises(tierfs.InvalidArgumentError, match="has none"):
            s.sampler({ETYPES[0]: [2]})
        with pytest.raises(tierfs.InvalidArgumentError, match="author:cites:paper"):
            s.sampler({**{et: [2] for et in ETYPES}, ("author", "cites", "paper"): [2]})
        with pytest.raises(tierfs.InvalidArgumentError, match="whole number"):
            s.sampler({et: [1.5] for et in ETYPES})
        sp = s.sampler({et: [2] for et in ETYPES})
        with pytest.raises(IndexError, match="node type \"subject\""):
            sp.sample([60], node_type="subject")
        with pytest.raises(tierfs.InvalidArgumentError, match="name the seeds' node type"):
            sp.sample([0])


def test_synth_heterogeneous_preset(tmp_path):
    p = tierfs.synth(tmp_path / "mag", preset="ogbn-mag", scale=0.001, seed=3)
    with tierfs.open(p) as s:
        assert s.node_types == ["paper", "author", "institution", "field_of_study"]
        assert s.num_nodes("paper") == 736 and s.types["node_types"]["paper"]["num_classes"] > 0
    again = tierfs.synth(tmp_path / "mag2", preset="ogbn-mag", scale=0.001, seed=3)
    assert (tmp_path / "mag" / "nodes" / "paper" / "features.x.0.bin").read_bytes() == (tmp_path / "mag2" / "nodes" / "paper" / "features.x.0.bin").read_bytes()
    with pytest.raises(tierfs.InvalidArgumentError, match="heterogeneous preset ogbn-mag"):
        tierfs.synth(tmp_path / "bad", preset="ogbn-mag", dim=4)


def test_place_heterogeneous_by_profile(acm):
    _, path = acm
    with tierfs.open(path, host_cache="6MB") as s:
        fanouts = {et: [4, 3] for et in ETYPES}
        rep = s.place(fanouts=fanouts, batch_size=32, batches=20, seed=5)
        assert rep["batches"] == 20 and set(rep["node_types"]) == {"paper", "author", "subject"}
        for t, r in rep["node_types"].items():
            assert r["reached_in_memory"] == min(r["rows_reached"], r["memory_rows"]), (t, r)
        # the same batches, gathered after the placement, read fewer rows from the SSD than
        # with the default ranking (every reached row that fits is in memory now)
        with pytest.raises(tierfs.InvalidArgumentError, match="needs fanouts and batch_size"):
            s.place(fanouts=fanouts)
        with pytest.raises(tierfs.NotSupportedError, match="one-type options"):
            s.place(fanouts=fanouts, batch_size=8, policy="degree")


@needs_cuda
def test_hetero_gpu_sampling_matches_host(acm):
    """gpu_topology on a graph of several types: every edge type drawn by the GPU kernel gives
    the host sampler's samples, node for node and edge for edge."""
    _, path = acm
    r = rng(35)
    seed = int(r.integers(1 << 30))
    fanouts = {et: [int(r.integers(-1, 6)), int(r.integers(0, 4))] for et in ETYPES}
    with tierfs.open(path) as host, tierfs.open(path, device="cuda:0", gpu_topology="device") as gpu:
        assert gpu.stats()["gpu"]["topology"] == "device", gpu.stats()["gpu"]
        a, b = host.sampler(fanouts, seed=seed), gpu.sampler(fanouts, seed=seed)
        for call in range(3):
            seeds = r.integers(0, 4019, int(r.integers(1, 300)))
            x, y = a.sample(("paper", seeds)), b.sample(("paper", seeds))
            for t in x.node:
                np.testing.assert_array_equal(x.node[t], y.node[t], err_msg=f"seed {seed} call {call} type {t}")
            for et in ETYPES:
                for name in ("row", "col", "edge"):
                    np.testing.assert_array_equal(getattr(x, name)[et], getattr(y, name)[et], err_msg=f"seed {seed} call {call} {et} {name}")


def test_null_node_type_is_the_only_type(acm, tmp_path):
    """ABI 3: a call of a node type's rows given NULL for its node type serves the only node
    type; on a store of several it is TFS_EINVAL (InvalidArgumentError) naming them."""
    from ctypes import byref, c_int64

    lib = tierfs._native.lib
    ids = np.array([0, 2, 1], dtype=np.int64)
    out = np.empty(3, dtype=np.int64)
    count = c_int64(0)
    _, path = acm
    with tierfs.open(path) as s:
        h = s._h()
        calls = {
            "tfs_labels": lambda: lib.tfs_labels(h, None, ids.ctypes.data, 3, out.ctypes.data),
            "tfs_split": lambda: lib.tfs_split(h, b"", b"train", None, 0, byref(count)),
            "tfs_gather": lambda: lib.tfs_gather(h, None, None, ids.ctypes.data, 3, out.ctypes.data, out.nbytes),
            "tfs_place": lambda: lib.tfs_place(h, None, None, 0),
            "tfs_hottest": lambda: lib.tfs_hottest(h, b"", None, 0, 3, out.ctypes.data, byref(count)),
        }
        for call, fn in calls.items():
            with pytest.raises(tierfs.InvalidArgumentError, match=r"3 node types \(paper, author, subject\): name one"):
                tierfs._native.check(fn())
    one = tierfs.synth(tmp_path / "one", nodes=300, avg_degree=4, dim=6, seed=3)
    with tierfs.open(one) as s:
        h = s._h()
        rows = np.empty((3, 6), dtype=np.float32)
        tierfs._native.check(lib.tfs_gather(h, None, None, ids.ctypes.data, 3, rows.ctypes.data, rows.nbytes))
        np.testing.assert_array_equal(rows, s.gather(ids))
        tierfs._native.check(lib.tfs_labels(h, b"", ids.ctypes.data, 3, out.ctypes.data))
        np.testing.assert_array_equal(out, s.labels(ids))
        tierfs._native.check(lib.tfs_split(h, None, b"train", None, 0, byref(count)))
        assert count.value == s.split("train").shape[0] > 0
        tierfs._native.check(lib.tfs_hottest(h, None, None, 0, 3, out.ctypes.data, byref(count)))
        assert count.value == 3
