"""tierfs.pyg on heterogeneous graphs, against PyG's own in-memory behaviour on the same data:
from_pyg(HeteroData) round trip, FeatureStore/GraphStore per type (against PyG's reference
MyFeatureStore), NeighborSampler with per-edge-type fanouts, and NeighborLoader batch by batch
against PyG's NodeLoader (over the stores and over the in-memory HeteroData) with the same
tierfs sampler, on ACM and on a synthetic ogbn-mag-shaped dataset."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import torch

pyg = pytest.importorskip("torch_geometric")

from torch_geometric.data import HeteroData, TensorAttr  # noqa: E402
from torch_geometric.data.graph_store import EdgeLayout  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402
from torch_geometric.sampler import HeteroSamplerOutput, NodeSamplerInput, NumNeighbors  # noqa: E402
from torch_geometric.testing.feature_store import MyFeatureStore  # noqa: E402

import tierfs  # noqa: E402
import tierfs.datasets  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, needs_cuda, rng  # noqa: E402

PA = ("paper", "to", "author")


@pytest.fixture(scope="module")
def acm_data():
    """ACM as a HeteroData, with extra node- and edge-level tensors of other dtypes."""
    data = tierfs.datasets.acm(as_pyg=True)
    r = rng(2500)
    data["paper"].year = torch.from_numpy(r.integers(1990, 2020, data["paper"].num_nodes))
    data["author"].h = torch.from_numpy(r.standard_normal((data["author"].num_nodes, 3)).astype(np.float16))
    e = data[PA].edge_index.shape[1]
    data[PA].w = torch.from_numpy(r.random(e).astype(np.float32))
    data[PA].edge_attr = torch.from_numpy(r.standard_normal((e, 2)).astype(np.float32))
    return data


@pytest.fixture(scope="module")
def acm_store(acm_data, tmp_path_factory):
    path = tierfs.from_pyg(acm_data, tmp_path_factory.mktemp("acm") / "acm")
    s = tierfs.open(path, host_cache="1MiB")
    yield s
    s.close()


def csc_order(store, data):
    """{edge type: permutation p} with data's edges in the store's edge id order: edge id k is
    data's edge p[k] (inputs without duplicate edges)."""
    perms = {}
    for et in store.edge_types:
        indptr, indices = store.csc(edge_type=et)
        dst = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
        n_dst = store.num_nodes(et[2])
        ei = data[et].edge_index.numpy()
        where = {int(k): i for i, k in enumerate(ei[0] * n_dst + ei[1])}
        perms[et] = np.array([where[int(k)] for k in indices * n_dst + dst], dtype=np.int64)
    return perms


def test_from_pyg_hetero_round_trip(acm_data, acm_store):
    s = acm_store
    assert s.is_hetero and s.node_types == acm_data.node_types and s.edge_types == acm_data.edge_types
    r = rng(2501)
    for t in acm_data.node_types:
        st = acm_data[t]
        n = st.num_nodes
        assert s.num_nodes(t) == n
        ids = torch.from_numpy(r.integers(0, n, 300))
        for key in ("x", "year", "h"):
            if key in st:
                torch.testing.assert_close(s.gather(ids, node_type=t, feature=key), st[key][ids], rtol=0, atol=0, msg=f"{t}.{key} seed {SEED}")
        if "y" in st:
            assert torch.equal(s.labels(ids, node_type=t), st.y[ids])
            for name in ("train", "val", "test"):
                np.testing.assert_array_equal(s.split(name, node_type=t), st[f"{name}_mask"].nonzero().view(-1).numpy())
    torch.testing.assert_close(s.gather(torch.arange(5), node_type="paper"), acm_data["paper"].x[:5], rtol=0, atol=0)
    perms = csc_order(s, acm_data)  # raises KeyError on an edge the input lacks
    for et in acm_data.edge_types:
        assert s.num_edges(et) == acm_data[et].edge_index.shape[1]
        assert sorted(perms[et].tolist()) == list(range(s.num_edges(et)))  # every edge once
    eids = torch.from_numpy(r.integers(0, s.num_edges(PA), 200))
    p = torch.from_numpy(perms[PA])
    for key in ("w", "edge_attr"):
        torch.testing.assert_close(s.gather(eids, edge_type=PA, feature=key), acm_data[PA][key][p[eids]], rtol=0, atol=0)


def test_from_pyg_hetero_refusals(tmp_path):
    def small():
        d = HeteroData()
        d["a"].x = torch.randn(4, 2)
        d["b"].num_nodes = 3
        d["a", "r", "b"].edge_index = torch.tensor([[0, 1, 3], [0, 2, 1]])
        return d

    cases = [
        (lambda d: setattr(d["a"], "name", "hello"), tierfs.NotSupportedError, r"data\['a'\]\.name"),
        (lambda d: setattr(d["a"], "cube", torch.zeros(4, 2, 2)), tierfs.NotSupportedError, r"data\['a'\]\.cube"),
        (lambda d: setattr(d["a"], "flag", torch.zeros(4, dtype=torch.bool)), tierfs.NotSupportedError, r"data\['a'\]\.flag.*bool"),
        (lambda d: setattr(d["a"], "y", torch.zeros(4, 3)), tierfs.NotSupportedError, r"data\['a'\]\.y"),
        (lambda d: setattr(d["a", "s", "a"], "w", torch.zeros(3)), tierfs.NotSupportedError, r"\('a', 's', 'a'\) has no edge_index"),
        (lambda d: setattr(d["a", "r", "b"], "w", torch.zeros(5)), tierfs.NotSupportedError, r"\('a', 'r', 'b'\)\]\.w"),
    ]
    for i, (change, exc, match) in enumerate(cases):
        d = small()
        change(d)
        with pytest.raises(exc, match=match):
            tierfs.from_pyg(d, tmp_path / f"r{i}")
    with pytest.raises(tierfs.NotSupportedError, match="ToUndirected"):
        tierfs.from_pyg(small(), tmp_path / "u", undirected=True)
    d = small()
    d["a", "r", "b"].edge_index = torch.tensor([[0, 9], [0, 1]])  # src 9 of 4 nodes: the core names the input
    with pytest.raises(tierfs.Error, match=r"edge_index|a:r:b"):
        tierfs.from_pyg(d, tmp_path / "bad")
    assert not any(p.name.startswith(".tierfs-ingest-") for p in tmp_path.iterdir())  # temporaries removed
    s = tierfs.open(tierfs.from_pyg(small(), tmp_path / "ok"))
    assert s.num_nodes("b") == 3 and s.types["node_types"]["b"]["features"] == {}
    s.close()


def test_feature_store_hetero_matches_reference(acm_data, acm_store, monkeypatch):
    fs, _ = tierfs.pyg.stores(acm_store)
    ref = MyFeatureStore()
    for t in acm_data.node_types:
        for key in ("x", "y", "year", "h"):
            if key in acm_data[t]:
                ref.put_tensor(acm_data[t][key], group_name=t, attr_name=key, index=None)
    listed = {(a.group_name, a.attr_name) for a in fs.get_all_tensor_attrs()}
    assert listed == {(a.group_name, a.attr_name) for a in ref.get_all_tensor_attrs()}
    assert {(a.group_name, a.attr_name) for a in fs.get_all_edge_tensor_attrs()} == {(PA, "w"), (PA, "edge_attr")}
    calls = []
    read = fs._read
    monkeypatch.setattr(fs, "_read", lambda src, ids: calls.append(src) or read(src, ids))
    r = rng(2502)
    for _ in range(3):
        ip = torch.from_numpy(r.integers(0, 4019, 100))
        ip2 = torch.from_numpy(r.integers(0, 4019, 30))
        ia = torch.from_numpy(r.integers(0, 7167, 50))
        attrs = [TensorAttr("paper", "x", ip), TensorAttr("author", "x", ia), TensorAttr("paper", "y", ip),
                 TensorAttr("paper", "x", ip2), TensorAttr("paper", "year", ip), TensorAttr("author", "h", ia)]
        calls.clear()
        got, want = fs.multi_get_tensor(attrs), ref.multi_get_tensor(attrs)
        assert len(calls) == len(set(calls)) == 5  # one native call per (type, feature)
        for a, g, w in zip(attrs, got, want):
            assert g.dtype == w.dtype, a
            torch.testing.assert_close(g, w, rtol=0, atol=0, msg=f"{a} seed {SEED}")
    assert fs.get_tensor_size("author", "x") == (7167, 1902)
    assert fs.get_tensor_size("paper", "y") == (4019,)
    assert fs.get_tensor_size(TensorAttr("paper", "year", torch.arange(7))) == (7,)
    assert fs.get_tensor_size("subject", "y") is None
    torch.testing.assert_close(fs.get_tensor("paper", "x", ip), acm_data["paper"].x[ip], rtol=0, atol=0)
    e = torch.arange(10)
    # edge attributes by position in the input's edge_index (e_id), as in memory
    torch.testing.assert_close(fs.get_tensor(PA, "edge_attr", e), acm_data[PA].edge_attr[e], rtol=0, atol=0)
    csc = tierfs.pyg.csc_edge_ids(acm_store, e, PA)
    torch.testing.assert_close(fs.get_tensor(PA, "edge_attr", e), acm_store.gather(csc, edge_type=PA, feature="edge_attr"))
    with pytest.raises(KeyError, match="no node type 'venue'.*paper"):
        fs.get_tensor("venue", "x", torch.arange(3))
    with pytest.raises(KeyError, match="'subject' has no attribute 'y'.*'x'"):
        fs.get_tensor("subject", "y", torch.arange(3))
    with pytest.raises(KeyError, match="no edge type"):
        fs.get_tensor(("paper", "cites", "paper"), "w", torch.arange(3))


def test_graph_store_hetero(acm_data, acm_store):
    _, gs = tierfs.pyg.stores(acm_store)
    attrs = gs.get_all_edge_attrs()
    assert [a.edge_type for a in attrs] == acm_data.edge_types
    for a in attrs:
        src, _, dst = a.edge_type
        assert a.layout == EdgeLayout.CSC and a.size == (acm_data[src].num_nodes, acm_data[dst].num_nodes)
    for et in (PA, ("subject", "to", "paper")):
        row, col = gs.get_edge_index(edge_type=et, layout="coo")
        want = acm_data[et].edge_index
        assert sorted(zip(row.tolist(), col.tolist())) == sorted(zip(*want.tolist()))
        rowptr, col2 = gs.get_edge_index(edge_type=et, layout="csr")
        assert rowptr[-1] == want.shape[1] and torch.equal(torch.diff(rowptr), torch.bincount(want[0], minlength=rowptr.numel() - 1))


def check_sample(out, data, num_neighbors, seeds, seed_type):
    """The sample is a well-formed HeteroSamplerOutput of data's edges, fanouts respected."""
    assert isinstance(out, HeteroSamplerOutput) and out.batch is None
    assert torch.equal(out.node[seed_type][: seeds.numel()], seeds)
    hops = len(next(iter(num_neighbors.values())))
    for t, ids in out.node.items():
        assert len(out.num_sampled_nodes[t]) == hops + 1 and sum(out.num_sampled_nodes[t]) == ids.numel()
        assert ids.unique().numel() == ids.numel() or t == seed_type
    for et in data.edge_types:
        row, col, edge = out.row[et], out.col[et], out.edge[et]
        assert row.numel() == col.numel() == edge.numel() == sum(out.num_sampled_edges[et])
        if not row.numel():
            continue
        src = out.node[et[0]][row]
        dst = out.node[et[2]][col]
        have = set(zip(*data[et].edge_index.tolist()))
        assert set(zip(src.tolist(), dst.tolist())) <= have, et
        fan = max(num_neighbors[et])
        assert torch.bincount(col).max() <= fan


def test_sampler_hetero_num_neighbors_forms(acm_data, acm_store):
    s = acm_store
    ets = acm_data.edge_types
    seeds = torch.from_numpy(rng(2503).choice(4019, 40, replace=False))
    inp = NodeSamplerInput(input_id=torch.arange(40), node=seeds, input_type="paper")
    nn = {et: [4, 3] for et in ets}
    out = tierfs.pyg.NeighborSampler(s, nn, seed=SEED).sample_from_nodes(inp)
    check_sample(out, acm_data, nn, seeds, "paper")
    assert torch.equal(out.metadata[0], torch.arange(40)) and out.metadata[1] is None
    # the same draws from every spelling of the same fanouts
    forms = [
        {"__".join(et): v for et, v in nn.items()},
        {":".join(et): v for et, v in nn.items()},
        NumNeighbors({PA: [4, 3]}, default=[4, 3]),
        [4, 3],
    ]
    for form in forms:
        again = tierfs.pyg.NeighborSampler(s, form, seed=SEED).sample_from_nodes(inp)
        for et in ets:
            assert torch.equal(again.edge[et], out.edge[et]), form
    with pytest.raises(ValueError, match=r"Missing number of neighbors for edge type '\('author', 'to', 'paper'\)'"):
        tierfs.pyg.NeighborSampler(s, {PA: [4, 3]})
    with pytest.raises(ValueError, match=r"Not all edge types .* exist in the graph: \('paper', 'cites', 'paper'\) does not.*\('paper', 'to', 'author'\)"):
        tierfs.pyg.NeighborSampler(s, {**nn, ("paper", "cites", "paper"): [1, 1]})
    with pytest.raises(ValueError, match="hops must be the same across all"):
        tierfs.pyg.NeighborSampler(s, NumNeighbors({PA: [4]}, default=[4, 3]))
    with pytest.raises(ValueError, match="input_type"):
        tierfs.pyg.NeighborSampler(s, nn).sample_from_nodes(NodeSamplerInput(None, seeds))


def test_hetero_sampler_and_stores_pickle(acm_data, acm_store):
    """What spawn workers receive: the stores and the sampler reopen from (path, options) and
    sample the same."""
    import pickle

    nn = {et: [3, 2] for et in acm_data.edge_types}
    seeds = torch.arange(20)
    inp = NodeSamplerInput(input_id=None, node=seeds, input_type="paper")
    sampler = tierfs.pyg.NeighborSampler(acm_store, nn, seed=4)
    clone = pickle.loads(pickle.dumps(sampler))
    a, b = sampler.sample_from_nodes(inp), clone.sample_from_nodes(inp)
    for et in acm_data.edge_types:
        assert torch.equal(a.edge[et], b.edge[et])
    fs, gs = pickle.loads(pickle.dumps(tierfs.pyg.stores(acm_store)))
    torch.testing.assert_close(fs.get_tensor("author", "x", torch.arange(4)), acm_data["author"].x[:4], rtol=0, atol=0)
    assert [a.edge_type for a in gs.get_all_edge_attrs()] == acm_data.edge_types
    fs.store.close()
    gs.store.close()
    clone.store.close()


def assert_same_hetero(got, want, extra=(), ours_extra=()):
    """got and want hold the same tensors under the same keys, except keys named in extra
    (want's only) and ours_extra (got's only)."""
    for t in set(got.node_types) | set(want.node_types):
        wk = set(want[t].keys()) - set(extra) if t in want.node_types else set()
        gk = set(got[t].keys()) - (set(ours_extra) - wk)
        assert gk == wk, (t, gk ^ wk)
        for k in gk:
            assert_value(got[t][k], want[t][k], (t, k))
    for et in set(got.edge_types) | set(want.edge_types):
        wk = set(want[et].keys()) if et in want.edge_types else set()
        gk = set(got[et].keys()) - (set(ours_extra) - wk)
        assert gk == wk, (et, gk ^ wk)
        for k in gk:
            assert_value(got[et][k], want[et][k], (et, k))


def assert_value(g, w, what):
    if isinstance(g, torch.Tensor):
        assert isinstance(w, torch.Tensor) and g.dtype == w.dtype, what
        torch.testing.assert_close(g, w, rtol=0, atol=0, msg=f"{what} seed {SEED}")
    else:
        assert g == w, what


def in_memory(store, data):
    """data as it is: the tierfs sampler's e_id are positions in the input's edge_index, so the
    in-memory loader indexes data's edge tensors by them as the store serves them."""
    return data.clone()


def compare_loaders(store, data, nn, input_nodes, batch_size, seed, masks):
    ours = tierfs.pyg.NeighborLoader(store, nn, input_nodes=input_nodes, batch_size=batch_size, seed=seed)
    via_stores = NodeLoader(tierfs.pyg.stores(store), node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed),
                            input_nodes=input_nodes, batch_size=batch_size)
    mem = NodeLoader(in_memory(store, data), node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed),
                     input_nodes=input_nodes, batch_size=batch_size)
    n = 0
    edge_feats = [k for et in data.edge_types for k in data[et].keys() if k != "edge_index"]
    for b, bs, bm in zip(ours, via_stores, mem):
        assert_same_hetero(b, bm, extra=masks)
        # PyG's FeatureStore path sets num_nodes only on types with attributes and reads no edge features
        assert_same_hetero(b, bs, ours_extra=["num_nodes"] + edge_feats)
        n += 1
    assert n == len(ours) == len(via_stores) > 1


def test_loader_hetero_equals_pyg_nodeloader_acm(acm_data, acm_store):
    nn = {et: [5, 3] for et in acm_data.edge_types}
    nn[PA] = [2, 4]
    mask = acm_data["paper"].val_mask
    compare_loaders(acm_store, acm_data, nn, ("paper", mask), 128, SEED % 1000, ["train_mask", "val_mask", "test_mask"])
    ids = torch.from_numpy(rng(2504).integers(0, 4019, 300))  # repeats, any order
    compare_loaders(acm_store, acm_data, NumNeighbors({PA: [3]}, default=[-1]), ("paper", ids), 100, 7, ["train_mask", "val_mask", "test_mask"])
    loader = tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=("paper", "train"), batch_size=32, shuffle=True)
    seen = torch.cat([b["paper"].n_id[: b["paper"].batch_size] for b in loader])
    assert sorted(seen.tolist()) == acm_data["paper"].train_mask.nonzero().view(-1).tolist()
    with pytest.raises(ValueError, match="input_nodes=\\(node type"):
        tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=torch.arange(3))
    with pytest.raises(KeyError, match="'venue'.*paper"):
        tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=("venue", None))


@pytest.mark.parametrize("input_nodes", ["train", "ids"])
def test_planned_hetero_loader_equals_on_demand_acm(acm_data, acm_store, tmp_path, input_nodes):
    """planned_epochs on ACM: every planned HeteroData equals the on-demand NeighborLoader's of
    the same seeds with the batch's sampling seed (input_id: positions in input_nodes)."""
    from test_planned_hetero import batch_sample_seed

    nn = {et: [4, 2] for et in acm_data.edge_types}
    seed = SEED % 100000
    ids = torch.from_numpy(rng(2505).integers(0, 4019, 200)) if input_nodes == "ids" else "train"
    k = 2
    loader = tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=("paper", ids), batch_size=64, shuffle=True, seed=seed,
                                       shuffle_seed=3, planned_epochs=k, plan_dir=str(tmp_path / "plan"))
    n = 0
    for e in range(k + 1):
        for i, b in enumerate(loader):
            one = tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=("paper", b["paper"].n_id[: b["paper"].batch_size]),
                                            batch_size=b["paper"].batch_size, seed=batch_sample_seed(seed, e, i))
            (want,) = list(one)
            seeds = b["paper"].n_id[: b["paper"].batch_size]
            if input_nodes == "train":  # a split's (a mask's) seeds are their own input_id, as PyG's
                assert torch.equal(b["paper"].input_id, seeds)
            else:
                assert torch.equal(loader.input_nodes[b["paper"].input_id], seeds)
            want["paper"].input_id = b["paper"].input_id
            assert_same_hetero(b, want)
            for t in ("paper", "author", "subject"):
                assert torch.equal(b[t].x, acm_data[t].x[b[t].n_id])
            n += 1
    assert n == (k + 1) * len(loader)
    loader.loader.close()


@pytest.fixture(scope="module")
def mag(cli, tmp_path_factory):
    """A synthetic ogbn-mag-shaped dataset (paper features and labels; author, institution and
    field_of_study without features) and the HeteroData of its contents."""
    path = tmp_path_factory.mktemp("mag") / "mag"
    subprocess.run([cli, "synth", "--preset", "ogbn-mag", "--scale", "0.002", "--out", str(path)], check=True, capture_output=True)
    s = tierfs.open(str(path))
    data = HeteroData()
    for t in s.node_types:
        n = s.num_nodes(t)
        data[t].num_nodes = n
        if s.types["node_types"][t]["features"]:
            data[t].x = torch.from_numpy(s.gather(np.arange(n), node_type=t))
        if s.types["node_types"][t]["labels"]:
            data[t].y = torch.from_numpy(s.labels(np.arange(n), node_type=t))
    for et in s.edge_types:
        indptr, indices = s.csc(edge_type=et)
        dst = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
        data[et].edge_index = torch.from_numpy(np.stack([indices, dst]))
    yield s, data
    s.close()


def test_loader_hetero_equals_pyg_nodeloader_synthetic(mag):
    s, data = mag
    nn = {et: [4, 4] for et in s.edge_types}
    train = torch.from_numpy(s.split("train", node_type="paper"))
    # the in-memory data is in the store's edge order already (duplicates allowed: no reordering)
    ours = tierfs.pyg.NeighborLoader(s, nn, input_nodes=("paper", train), batch_size=256, seed=3)
    via_stores = NodeLoader(tierfs.pyg.stores(s), node_sampler=tierfs.pyg.NeighborSampler(s, nn, seed=3), input_nodes=("paper", train), batch_size=256)
    mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(s, nn, seed=3), input_nodes=("paper", train), batch_size=256)
    n = 0
    for b, bs, bm in zip(ours, via_stores, mem):
        assert_same_hetero(b, bm)
        assert_same_hetero(b, bs, ours_extra=["num_nodes"])
        check_sample_batch(b, data)
        n += 1
    assert n == len(ours) > 1


def check_sample_batch(b, data):
    for et in data.edge_types:
        ei = b[et].edge_index
        if ei.numel():
            src = b[et[0]].n_id[ei[0]]
            dst = b[et[2]].n_id[ei[1]]
            assert torch.equal(data[et].edge_index[:, b[et].e_id], torch.stack([src, dst]))


@needs_cuda
def test_loader_hetero_cuda_store_matches_cpu(acm_data, acm_store):
    """On a store opened on the GPU, every type's x comes through its tiers onto the device (the
    other features and labels from the host), equal to the CPU store's batches."""
    gpu = tierfs.open(acm_store.path, device="cuda:0", gpu_cache="8MiB", host_cache="1MiB")
    try:
        nn = {et: [4, 4] for et in acm_data.edge_types}
        inp = ("paper", acm_data["paper"].val_mask)
        ours = tierfs.pyg.NeighborLoader(gpu, nn, input_nodes=inp, batch_size=256, seed=11)
        ref = tierfs.pyg.NeighborLoader(acm_store, nn, input_nodes=inp, batch_size=256, seed=11)
        n = 0
        for b, r in zip(ours, ref):
            for t in acm_data.node_types:
                assert b[t].x.is_cuda, t
            assert_same_hetero(b.to("cpu"), r)
            n += 1
        assert n == len(ref) > 1
    finally:
        gpu.close()


def test_loader_hetero_one_value_x_stays_1d(tmp_path):
    """A type whose x is one value a node (1-D in the HeteroData) comes back 1-D, as PyG's own
    NodeLoader over the in-memory data serves it; a type of rows keeps its rows (issue 42, PyG
    item 3)."""
    r = rng(SEED % 1000 + 3)
    data = HeteroData()
    data["p"].x = torch.from_numpy(r.standard_normal(30).astype(np.float32))
    data["a"].x = torch.from_numpy(r.standard_normal((20, 4)).astype(np.float32))
    data["p"].num_nodes, data["a"].num_nodes = 30, 20
    data["p", "w", "a"].edge_index = torch.from_numpy(np.stack([r.integers(0, 30, 100), r.integers(0, 20, 100)]))
    data["a", "r", "p"].edge_index = torch.from_numpy(np.stack([r.integers(0, 20, 100), r.integers(0, 30, 100)]))
    tierfs.from_pyg(data, tmp_path / "g", force=True)
    store = tierfs.open(tmp_path / "g")
    try:
        nn = {et: [2] for et in data.edge_types}
        compare_loaders(store, data, nn, ("p", torch.arange(30)), 8, 5, [])
        b = next(iter(tierfs.pyg.NeighborLoader(store, nn, input_nodes=("p", torch.arange(30)), batch_size=8)))
        assert b["p"].x.dim() == 1 and b["a"].x.shape[1:] == (4,)
    finally:
        store.close()
