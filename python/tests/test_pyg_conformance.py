"""tierfs.pyg against PyG's in-memory behaviour on the same data (issue 29, PyG conformance).

PyG's own NeighborSampler needs pyg-lib or torch-sparse, which are not installable here, so the
reference is PyG's NodeLoader over the in-memory ``Data`` with tierfs's sampler: it indexes the
Data's tensors by the sampler's ``node`` and ``edge`` as PyG does (``filter_data``), so a batch
of tierfs's loader must equal it field for field, ``e_id`` included.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402
from torch_geometric.sampler import NumNeighbors  # noqa: E402
from torch_geometric.sampler.base import SubgraphType  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402


def random_data(r, n=300, e=2500, **extra):
    """A Data whose edge_index is in random order (not sorted by destination)."""
    data = Data(
        x=torch.from_numpy(r.standard_normal((n, 6)).astype(np.float32)),
        edge_index=torch.from_numpy(r.integers(0, n, (2, e))),
        y=torch.from_numpy(r.integers(0, 4, n)),
        edge_attr=torch.from_numpy(r.standard_normal((e, 3)).astype(np.float32)),
        **extra,
    )
    return data


def assert_same_batch(ours, mem, what):
    """Every field of PyG's in-memory batch is in ours, equal; ours adds only num_nodes."""
    assert set(mem.keys()) <= set(ours.keys()) and set(ours.keys()) - set(mem.keys()) <= {"num_nodes"}, \
        f"{what}: keys {sorted(ours.keys())} vs PyG's {sorted(mem.keys())}"
    for k in mem.keys():
        a, b = ours[k], mem[k]
        if isinstance(b, torch.Tensor):
            assert isinstance(a, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype, f"{what}: {k} {a!r} vs {b!r}"
            assert torch.equal(a, b), f"{what}: {k} differs (seed {SEED})"
        else:
            assert a == b, f"{what}: {k}: {a!r} vs {b!r}"


def compare_with_in_memory(store, data, nn, input_nodes, batch_size=64, seed=5, **kw):
    ours = list(tierfs.pyg.NeighborLoader(store, nn, input_nodes=input_nodes, batch_size=batch_size, seed=seed, **kw))
    mem = list(NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=seed), input_nodes=input_nodes, batch_size=batch_size))
    assert len(ours) == len(mem) > 1
    for i, (a, b) in enumerate(zip(ours, mem)):
        assert_same_batch(a, b, f"batch {i}")
    return ours


@pytest.mark.parametrize("undirected", [False, True])
def test_e_id_is_the_input_position(tmp_path, undirected):
    r = rng(2901)
    data = random_data(r)
    e = data.edge_index.shape[1]
    store = tierfs.open(tierfs.from_pyg(data, tmp_path / "ds", undirected=undirected))
    try:
        ours = list(tierfs.pyg.NeighborLoader(store, [5, 3], batch_size=64, seed=3))
        fs, _ = tierfs.pyg.stores(store)
        for b in ours:
            assert b.e_id.numel() > 0 and int(b.e_id.min()) >= 0 and int(b.e_id.max()) < e
            # the user's own per-edge data, indexed by e_id, is the sampled edge's
            src, dst = data.edge_index[:, b.e_id]
            got_src, got_dst = b.n_id[b.edge_index[0]], b.n_id[b.edge_index[1]]
            if undirected:  # either direction of input edge e_id
                assert torch.all(((src == got_src) & (dst == got_dst)) | ((src == got_dst) & (dst == got_src))), f"seed {SEED}"
            else:
                assert torch.equal(src, got_src) and torch.equal(dst, got_dst), f"seed {SEED}"
            assert torch.equal(b.edge_attr, data.edge_attr[b.e_id]), f"seed {SEED}"
            assert torch.equal(fs[tierfs.pyg.EDGE_TYPE, "edge_attr", b.e_id], data.edge_attr[b.e_id])
        if not undirected:  # PyG's in-memory loader over the same data (the reverse edges are not in data)
            compare_with_in_memory(store, data, [5, 3], None)
        # the CSC order stays available: csc_edge_ids / input_edge_ids against store.csc()
        indptr, indices = store.csc()
        dst = np.repeat(np.arange(store.num_nodes()), np.diff(indptr))
        csc = torch.arange(len(indices))
        inp = tierfs.pyg.input_edge_ids(store, csc)
        s, d = data.edge_index[:, inp]
        fwd = (s.numpy() == indices) & (d.numpy() == dst)
        assert np.all(fwd | ((s.numpy() == dst) & (d.numpy() == indices)) if undirected else fwd), f"seed {SEED}"
        back = tierfs.pyg.csc_edge_ids(store, inp)
        assert torch.equal(tierfs.pyg.input_edge_ids(store, back), inp)
        assert tierfs.pyg.INPUT_EDGE_ID not in [a.attr_name for a in fs.get_all_edge_tensor_attrs()]
        with pytest.raises(tierfs.OutOfRangeError, match=str(e)):
            fs[tierfs.pyg.EDGE_TYPE, "edge_attr", torch.tensor([e])]
    finally:
        store.close()


def test_e_id_sorted_input_needs_no_permutation(tmp_path):
    r = rng(2902)
    data = random_data(r)
    order = torch.argsort(data.edge_index[1], stable=True)
    data.edge_index, data.edge_attr = data.edge_index[:, order], data.edge_attr[order]
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        assert tierfs.pyg.INPUT_EDGE_ID not in store.features
        compare_with_in_memory(store, data, [4, 2], None)


def test_e_id_hetero_indexes_the_input_edge_index(tmp_path):
    r = rng(2903)
    data = HeteroData()
    data["a"].x = torch.from_numpy(r.standard_normal((80, 4)).astype(np.float32))
    data["b"].x = torch.from_numpy(r.standard_normal((50, 3)).astype(np.float32))
    for et, (ns, nd) in {("a", "to", "b"): (80, 50), ("b", "to", "a"): (50, 80), ("a", "self", "a"): (80, 80)}.items():
        e = int(r.integers(200, 400))
        data[et].edge_index = torch.stack([torch.from_numpy(r.integers(0, ns, e)), torch.from_numpy(r.integers(0, nd, e))])
        data[et].w = torch.from_numpy(r.standard_normal(e).astype(np.float32))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        nn = {et: [4, 3] for et in data.edge_types}
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=1), input_nodes=("a", None), batch_size=16)
        ours = tierfs.pyg.NeighborLoader(store, nn, input_nodes=("a", None), batch_size=16, seed=1)
        for b, m in zip(ours, mem):
            for et in data.edge_types:
                assert torch.equal(b[et].e_id, m[et].e_id)
                ei = b[et].edge_index
                src, dst = b[et[0]].n_id[ei[0]], b[et[2]].n_id[ei[1]]
                assert torch.equal(data[et].edge_index[:, b[et].e_id], torch.stack([src, dst])), f"{et} seed {SEED}"
                assert torch.equal(b[et].w, data[et].w[b[et].e_id]) and torch.equal(m[et].w, b[et].w)
        # loader(index) as PyG's NodeLoader(index), each with a fresh sampler of the same seed
        ours = tierfs.pyg.NeighborLoader(store, nn, input_nodes=("a", None), batch_size=16, seed=4)
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=4), input_nodes=("a", None), batch_size=16)
        b, m = ours([5, 0, 79]), mem([5, 0, 79])
        assert torch.equal(b["a"].input_id, m["a"].input_id) and b["a"].batch_size == m["a"].batch_size == 3
        for t in data.node_types:
            assert torch.equal(b[t].n_id, m[t].n_id) and torch.equal(b[t].x, m[t].x)
        for et in data.edge_types:
            assert torch.equal(b[et].e_id, m[et].e_id) and torch.equal(b[et].edge_index, m[et].edge_index)


def test_pyg_default_arguments_are_accepted(tmp_path):
    data = random_data(rng(2904))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        for kw in ({"subgraph_type": SubgraphType.directional}, {"subgraph_type": "directional"}, {"filter_per_worker": True},
                   {"filter_per_worker": False}, {"filter_per_worker": None}):
            compare_with_in_memory(store, data, [3], None, batch_size=100, **kw)
        # subgraph_type "bidirectional" and "induced": test_pyg_bidirectional.py


def test_one_dimensional_x(tmp_path):
    r = rng(2905)
    data = random_data(r)
    data.x = data.x[:, 0].contiguous()
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        fs, gs = tierfs.pyg.stores(store)
        ids = torch.from_numpy(r.integers(0, data.num_nodes, 40))
        assert torch.equal(fs.get_tensor(attr_name="x", index=ids), data.x[ids])
        assert fs.get_tensor_size(attr_name="x") == tuple(data.x.shape)
        ours = compare_with_in_memory(store, data, [4, 2], None)
        assert ours[0].x.dim() == 1
        mem = list(NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [4], seed=2), input_nodes=None, batch_size=50))
        via = list(NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, [4], seed=2), input_nodes=torch.arange(data.num_nodes), batch_size=50))
        for a, b in zip(via, mem):
            assert torch.equal(a.x, b.x)


def test_graph_without_edges_is_homogeneous(tmp_path):
    r = rng(2906)
    data = Data(x=torch.from_numpy(r.standard_normal((40, 3)).astype(np.float32)), y=torch.from_numpy(r.integers(0, 3, 40)))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        assert store.num_edges() == 0
        fs, gs = tierfs.pyg.stores(store)
        mem = list(NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [3], seed=0), input_nodes=None, batch_size=16))
        via = list(NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, [3], seed=0), input_nodes=torch.arange(40), batch_size=16))
        ours = list(tierfs.pyg.NeighborLoader(store, [3], batch_size=16))
        assert len(mem) == len(via) == len(ours) == 3
        for a, b, c in zip(via, ours, mem):
            assert isinstance(a, Data) and isinstance(b, Data)
            for d in (a, b):
                assert torch.equal(d.x, c.x) and torch.equal(d.y, c.y) and d.edge_index.shape == (2, 0)


def test_get_tensor_size_matches_get_tensor(tmp_path):
    data = random_data(rng(2907), h=torch.zeros(300, 2, dtype=torch.int16))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        fs, _ = tierfs.pyg.stores(store)
        for name in ("x", "y", "h"):
            assert fs.get_tensor_size(attr_name=name) == tuple(fs.get_tensor(attr_name=name).shape) == tuple(data[name].shape), name
        assert fs.get_tensor_size(attr_name="x", index=torch.arange(5)) == (5, 6)
        assert fs.get_tensor_size(tierfs.pyg.EDGE_TYPE, "edge_attr") == tuple(data.edge_attr.shape)


def test_feature_keeps_its_name(tmp_path):
    r = rng(2908)
    data = random_data(r)
    data.feat = data.x
    del data.x
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        fs, _ = tierfs.pyg.stores(store)
        assert [a.attr_name for a in fs.get_all_tensor_attrs()] == ["feat", "y"]
        ours = compare_with_in_memory(store, data, [4, 2], None)
        assert "x" not in ours[0].keys()
        assert torch.equal(tierfs.pyg.FeatureStore(store, x="x").get_tensor(attr_name="x", index=torch.arange(3)), data.feat[:3])


def test_bool_mask_input_id_holds_node_ids(tmp_path):
    r = rng(2909)
    data = random_data(r)
    mask = torch.from_numpy(r.random(data.num_nodes) < 0.4)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        ours = compare_with_in_memory(store, data, [3], mask, batch_size=32)
        assert torch.equal(torch.cat([b.input_id for b in ours]), mask.nonzero().view(-1))
        ids = torch.from_numpy(r.permutation(data.num_nodes)[:70])  # ids: positions, as PyG
        ours = compare_with_in_memory(store, data, [3], ids, batch_size=32)
        assert torch.equal(torch.cat([b.input_id for b in ours]), torch.arange(70))


def test_loader_is_callable(tmp_path):
    r = rng(2910)
    data = random_data(r)
    input_nodes = torch.from_numpy(r.permutation(data.num_nodes)[:50])
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        before = list(tierfs.pyg.NeighborLoader(store, [4, 2], input_nodes=input_nodes, batch_size=8, seed=9))
        loader = tierfs.pyg.NeighborLoader(store, [4, 2], input_nodes=input_nodes, batch_size=8, seed=9)
        mem = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [4, 2], seed=9), input_nodes=input_nodes, batch_size=8)
        for index in ([0], [3, 1, 49], torch.tensor([7, 7, 2])):
            assert_same_batch(loader(index), mem(index), f"loader({index})")
        for a, b in zip(before, list(loader)):  # calls leave the first epoch's batches as they were
            assert_same_batch(a, b, "after calls")
        with pytest.raises(tierfs.OutOfRangeError, match="50"):
            loader([50])


def test_dict_num_neighbors_on_one_type(tmp_path):
    data = random_data(rng(2911))
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        compare_with_in_memory(store, data, {tierfs.pyg.EDGE_TYPE: [3, 2]}, None)
        compare_with_in_memory(store, data, NumNeighbors({tierfs.pyg.EDGE_TYPE: [3, 2]}), None)
        for bad, match in (({("paper", "cites", "paper"): [3]}, "one edge type"), ({"x": [3]}, "one edge type"),
                           ({tierfs.pyg.EDGE_TYPE: "3"}, "num_neighbors"), ([3, None], "num_neighbors"), (3.5, "num_neighbors"),
                           ({tierfs.pyg.EDGE_TYPE: [2], ("a", "b", "c"): [2]}, "one edge type")):
            with pytest.raises(tierfs.InvalidArgumentError, match=match) as err:
                tierfs.pyg.NeighborLoader(store, bad)
            assert not isinstance(err.value, TypeError) or "num_neighbors" in str(err.value)


def test_graph_level_attributes_are_on_every_batch(tmp_path):
    r = rng(2912)
    data = random_data(r, some_scalar=7, name="g", graph_vec=torch.from_numpy(r.standard_normal(5).astype(np.float32)))
    with pytest.warns(UserWarning, match="graph-level attributes.*graph_vec.*this process only"):
        path = tierfs.from_pyg(data, tmp_path / "ds")
    with tierfs.open(path) as store:
        ours = compare_with_in_memory(store, data, [4, 2], None)  # PyG's batches carry them: ours must, equal
        for b in ours:
            assert b.some_scalar == 7 and b.name == "g" and torch.equal(b.graph_vec, data.graph_vec), f"seed {SEED}"
        assert_same_batch(tierfs.pyg.NeighborLoader(store, [3], batch_size=8, seed=1)([2, 9]),
                          NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [3], seed=1), input_nodes=None, batch_size=8)([2, 9]), "loader(index)")
    # written again (or elsewhere): the format holds no graph-level attributes, so batches have none
    plain = random_data(rng(2912))
    tierfs.from_pyg(plain, tmp_path / "ds", force=True)
    with tierfs.open(path) as store:
        assert "some_scalar" not in next(iter(tierfs.pyg.NeighborLoader(store, [3], batch_size=8))).keys()
        compare_with_in_memory(store, plain, [3], None)


def test_graph_without_node_features(tmp_path):
    """A Data of edge_index, num_nodes, y, a train mask and edge_attr, no x: the store opens,
    serves labels, splits, edges and the edge feature, and the loaders yield PyG's batches (no x)."""
    r = rng(2913)
    full = random_data(r)
    mask = torch.from_numpy(r.random(full.num_nodes) < 0.5)
    data = Data(edge_index=full.edge_index, num_nodes=full.num_nodes, y=full.y, edge_attr=full.edge_attr, train_mask=mask)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        assert store.num_nodes() == data.num_nodes and store.num_edges() == data.num_edges and store.feature_name is None
        assert store.dim == 0 and store.dtype is None and store.torch_dtype is None
        assert torch.equal(store.labels(torch.arange(data.num_nodes)), data.y)
        np.testing.assert_array_equal(np.sort(store.split("train")), mask.nonzero().view(-1).numpy())
        with pytest.raises(tierfs.KeyNotFoundError, match="no node features") as err:
            store.gather([0, 1])
        assert str(tmp_path / "ds") in str(err.value)
        fs, gs = tierfs.pyg.stores(store)
        assert [a.attr_name for a in fs.get_all_tensor_attrs()] == ["y"]
        assert torch.equal(fs[tierfs.pyg.EDGE_TYPE, "edge_attr", torch.arange(10)], data.edge_attr[:10])
        plain = data.clone()
        del plain.train_mask  # masks are not batch fields of tierfs's loader (a split, not a feature)
        ours = compare_with_in_memory(store, plain, [4, 2], None)
        assert "x" not in ours[0].keys() and ours[0].edge_attr.shape[1] == 3
        compare_with_in_memory(store, plain, [3], mask, batch_size=32)
        # PyG's NodeLoader over the FeatureStore/GraphStore pair: what it reads (y, edges) equals the in-memory batch
        nn = [4, 2]
        via = list(NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=6), input_nodes=torch.arange(data.num_nodes), batch_size=64))
        mem = list(NodeLoader(plain, node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=6), input_nodes=None, batch_size=64))
        assert len(via) == len(mem) > 1
        for a, b in zip(via, mem):
            assert "x" not in a.keys()
            for k in ("y", "edge_index", "n_id", "e_id"):
                assert torch.equal(a[k], b[k]), f"{k} (seed {SEED})"
    # tierfs.ingest without features, as from arrays
    path = tierfs.ingest(tmp_path / "arrays", edges=data.edge_index.numpy(), labels=data.y.numpy(), num_nodes=data.num_nodes)
    with tierfs.open(path) as store:
        assert store.feature_name is None and store.num_classes == int(data.y.max()) + 1
        batch = next(iter(tierfs.pyg.NeighborLoader(store, [3], batch_size=20, seed=2)))
        assert "x" not in batch.keys() and torch.equal(batch.y, data.y[batch.n_id])
        with pytest.raises(tierfs.KeyNotFoundError, match="no node features"):
            list(tierfs.Loader(store, store.sampler([3]), torch.arange(40), 20, planned_epochs=1))


def test_hetero_graph_level_attributes_are_on_every_batch(tmp_path):
    r = rng(2914)
    data = HeteroData()
    data["a"].x = torch.from_numpy(r.standard_normal((60, 4)).astype(np.float32))
    data["b"].x = torch.from_numpy(r.standard_normal((40, 2)).astype(np.float32))
    for et, (ns, nd) in {("a", "to", "b"): (60, 40), ("b", "to", "a"): (40, 60)}.items():
        e = int(r.integers(150, 300))
        data[et].edge_index = torch.stack([torch.from_numpy(r.integers(0, ns, e)), torch.from_numpy(r.integers(0, nd, e))])
    data.title, data.scale = "g", torch.from_numpy(r.standard_normal(3).astype(np.float32))
    with pytest.warns(UserWarning, match="graph-level attributes.*scale"):
        path = tierfs.from_pyg(data, tmp_path / "ds")
    with tierfs.open(path) as store:
        nn = {et: [3, 2] for et in data.edge_types}
        ours = list(tierfs.pyg.NeighborLoader(store, nn, input_nodes=("a", None), batch_size=16, seed=3))
        mem = list(NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, nn, seed=3), input_nodes=("a", None), batch_size=16))
        assert len(ours) == len(mem) > 1
        for b, m in zip(ours, mem):
            assert m.title == b.title == "g" and torch.equal(b.scale, m.scale), f"seed {SEED}"
            for t in data.node_types:
                assert torch.equal(b[t].x, m[t].x) and torch.equal(b[t].n_id, m[t].n_id)


def _layout_edges(gs, layout, edge_type=None):
    """(src, dst, perm) of one edge type in layout, from the GraphStore's csc()/csr()/coo()."""
    out = getattr(gs, layout)() if edge_type is None else getattr(gs, layout)([edge_type])
    a, b, perm = out if edge_type is None else (out[0][edge_type], out[1][edge_type], out[2][edge_type])
    if layout == "csc":  # (row, colptr)
        return a, torch.repeat_interleave(torch.arange(b.numel() - 1), b.diff()), perm
    if layout == "csr":  # (rowptr, col)
        return torch.repeat_interleave(torch.arange(a.numel() - 1), a.diff()), b, perm
    return a, b, perm


@pytest.mark.parametrize("typed", [False, True])
def test_graph_store_layouts_permute_to_the_input_order(tmp_path, typed):
    """csc(), csr() and coo() of tierfs's GraphStore give PyG the permutation to the input edge
    order, as PyG's in-memory Data does: position p of a layout is input edge perm[p], so PyG's
    own NeighborSampler over (FeatureStore, GraphStore) hands out e_id that index the edge
    features (it took CSC positions for input ids: the wrong rows, silently)."""
    r = rng(2905)
    data = random_data(r)
    et = ("paper", "cites", "paper")
    if typed:  # a one-type HeteroData: the same through the typed path
        h = HeteroData()
        h["paper"].x, h[et].edge_index, h[et].edge_attr = data.x, data.edge_index, data.edge_attr
        path = tierfs.from_pyg(h, tmp_path / "ds")
    else:
        path = tierfs.from_pyg(data, tmp_path / "ds")
    from torch_geometric.sampler import NeighborSampler

    with tierfs.open(path) as store:
        fs, gs = tierfs.pyg.stores(store)
        for layout in ("csc", "csr", "coo"):
            src, dst, perm = _layout_edges(gs, layout, et if typed else None)
            assert perm is not None, layout
            assert torch.equal(data.edge_index[0, perm], src) and torch.equal(data.edge_index[1, perm], dst), f"{layout}, seed {SEED}"
            group = et if typed else tierfs.pyg.EDGE_TYPE
            assert torch.equal(fs[group, "edge_attr", perm], data.edge_attr[perm])
        with pytest.warns(UserWarning, match="pyg-lib"):  # its sampling needs pyg-lib; its permutation does not
            ns = NeighborSampler((fs, gs), {et: [2]} if typed else [2])
        src, dst, perm = _layout_edges(gs, "csc", et if typed else None)
        assert torch.equal(ns.edge_permutation[et] if typed else ns.edge_permutation, perm)
