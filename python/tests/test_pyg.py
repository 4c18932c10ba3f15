"""tierfs.pyg against PyG's reference in-memory stores, NodeLoader without pyg-lib, and a
GraphSAGE training smoke test on Cora."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

pyg = pytest.importorskip("torch_geometric")

import torch.nn.functional as F  # noqa: E402
from torch_geometric.data import Data, EdgeAttr, TensorAttr  # noqa: E402
from torch_geometric.data.feature_store import AttrView  # noqa: E402
from torch_geometric.data.graph_store import EdgeLayout  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402
from torch_geometric.sampler import BaseSampler, NodeSamplerInput  # noqa: E402
from torch_geometric.testing.feature_store import MyFeatureStore  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402


@pytest.fixture(scope="module")
def stores(store):
    return tierfs.pyg.stores(store)


def test_isinstance_for_pyg(stores, store):
    fs, gs = stores
    assert isinstance(fs, pyg.data.FeatureStore) and isinstance(gs, pyg.data.GraphStore)
    assert isinstance(tierfs.pyg.NeighborSampler(store, [2]), BaseSampler)


def test_feature_store_matches_reference(stores, graph):
    fs, _ = stores
    ref = MyFeatureStore()
    ref.put_tensor(torch.from_numpy(graph["x"]), group_name=None, attr_name="x", index=None)
    ref.put_tensor(torch.from_numpy(graph["y"]), group_name=None, attr_name="y", index=None)
    r = rng(800)
    for _ in range(3):
        ids = torch.from_numpy(r.integers(0, graph["n"], 200))
        ids2 = torch.from_numpy(r.integers(0, graph["n"], 50))
        attrs = [TensorAttr(None, "x", ids), TensorAttr(None, "y", ids), TensorAttr(None, "x", ids2)]
        got = fs.multi_get_tensor(attrs)
        want = ref.multi_get_tensor(attrs)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g, w, rtol=0, atol=0, msg=f"seed {SEED}")
        torch.testing.assert_close(fs.get_tensor(None, "x", ids), ref.get_tensor(None, "x", ids), rtol=0, atol=0)
        torch.testing.assert_close(fs.get_tensor(attrs[2]), want[2], rtol=0, atol=0)
    # sizes without reading, and the attribute listing
    assert fs.get_tensor_size(None, "x") == (graph["n"], graph["dim"]) == tuple(ref.get_tensor_size(None, "x"))
    assert fs.get_tensor_size(None, "y") == (graph["n"],)
    assert fs.get_tensor_size(None, "nope") is None
    names = sorted(a.attr_name for a in fs.get_all_tensor_attrs())
    assert names == ["x", "y"] and all(a.group_name is None for a in fs.get_all_tensor_attrs())
    # slices, whole tensor (PyG's TensorAttr itself cannot take a numpy index: is_set fails)
    torch.testing.assert_close(fs.get_tensor(None, "x", slice(5, 9)), torch.from_numpy(graph["x"][5:9]))
    assert fs.get_tensor(None, "x", None).shape == (graph["n"], graph["dim"])
    with pytest.raises(KeyError):
        fs.get_tensor(None, "edge_attr", torch.arange(3))
    with pytest.raises(tierfs.NotSupportedError):
        fs.put_tensor(torch.zeros(3, 3), group_name=None, attr_name="z", index=None)


def test_feature_store_indexing_forms(stores, graph):
    """The ways PyG users index a FeatureStore, with the one node type's group left unset or None."""
    fs, _ = stores
    x, y = torch.from_numpy(graph["x"]), torch.from_numpy(graph["y"])
    ids = torch.from_numpy(rng(60).integers(0, graph["n"], 50))
    assert torch.equal(fs.get_tensor(attr_name="x", index=ids), x[ids])
    assert torch.equal(fs.get_tensor(attr_name="y", index=ids.tolist()), y[ids])
    assert isinstance(fs[None, "x"], AttrView) and torch.equal(fs[None, "x"](), x)  # a key without its index is PyG's view
    assert torch.equal(fs[None, "x", None], x) and torch.equal(fs[None, "x", :], x)
    assert torch.equal(fs[None, "x", ids], x[ids])
    assert torch.equal(fs[None, "y", 3], y[3])
    assert torch.equal(fs.get_tensor(group_name=None, attr_name="x", index=slice(2, 9)), x[2:9])


def test_multi_get_is_one_gather(stores, store):
    fs, _ = stores
    before = store.stats()["gathers"]
    ids = [torch.arange(10), torch.arange(5, 50), torch.tensor([3, 3, 3])]
    out = fs.multi_get_tensor([TensorAttr(None, "x", i) for i in ids] + [TensorAttr(None, "y", ids[0])])
    assert store.stats()["gathers"] == before + 1
    assert [o.shape[0] for o in out] == [10, 45, 3, 10]


def test_graph_store_layouts(stores, graph):
    _, gs = stores
    (attr,) = gs.get_all_edge_attrs()
    assert attr.layout == EdgeLayout.CSC and attr.size == (graph["n"], graph["n"]) and attr.edge_type is None
    row, colptr = gs.get_edge_index(attr)
    np.testing.assert_array_equal(colptr.numpy(), graph["indptr"])
    src, dst = gs.get_edge_index(EdgeAttr(None, EdgeLayout.COO, size=attr.size))
    ref = np.lexsort((graph["edges"][0], graph["edges"][1]))
    got = np.lexsort((src.numpy(), dst.numpy()))
    np.testing.assert_array_equal(src.numpy()[got], graph["edges"][0][ref])
    np.testing.assert_array_equal(dst.numpy()[got], graph["edges"][1][ref])
    rowptr, col = gs.get_edge_index(EdgeAttr(None, EdgeLayout.CSR, size=attr.size))
    assert rowptr[-1] == graph["e"]
    np.testing.assert_array_equal(np.diff(rowptr.numpy()), np.bincount(graph["edges"][0], minlength=graph["n"]))
    coo_row, coo_col, _ = gs.coo()
    assert coo_row.numel() == graph["e"]


def test_sampler_output(store, graph):
    sampler = tierfs.pyg.NeighborSampler(store, [4, 2], seed=3)
    seeds = torch.tensor([5, 9, 5, 100])
    out = sampler.sample_from_nodes(NodeSamplerInput(input_id=torch.arange(4), node=seeds))
    assert torch.equal(out.node[:4], seeds)
    assert out.edge is not None and out.edge.shape == out.row.shape and out.batch is None
    assert len(out.num_sampled_nodes) == 3 and len(out.num_sampled_edges) == 2
    assert sum(out.num_sampled_nodes) == out.node.numel() and sum(out.num_sampled_edges) == out.row.numel()
    assert torch.equal(out.metadata[0], torch.arange(4))
    # every edge is a graph edge: (global row) -> (global col)
    src, dst = out.node[out.row].numpy(), out.node[out.col].numpy()
    key = set(zip(graph["edges"][0].tolist(), graph["edges"][1].tolist()))
    assert all((int(a), int(b)) in key for a, b in zip(src, dst))


def test_node_loader_without_pyg_lib(stores, store, graph):
    train = torch.from_numpy(graph["splits"]["train"])
    loader = NodeLoader(stores, node_sampler=tierfs.pyg.NeighborSampler(store, [5, 3], seed=1), input_nodes=train, batch_size=256, shuffle=False, filter_per_worker=False)
    seen = []
    before = store.stats()["gathers"]
    for batch in loader:
        bs = batch.batch_size
        assert torch.equal(batch.n_id[:bs], train[len(seen) * 256 : len(seen) * 256 + bs])
        np.testing.assert_array_equal(batch.x.numpy(), graph["x"][batch.n_id.numpy()])
        np.testing.assert_array_equal(batch.y.numpy(), graph["y"][batch.n_id.numpy()])
        assert batch.edge_index.max() < batch.num_nodes
        assert batch.num_sampled_nodes[0] == bs
        seen.append(bs)
    assert sum(seen) == len(train)
    assert store.stats()["gathers"] - before == len(seen)  # one native gather per batch


def test_in_memory_data_gives_same_batches(stores, store, graph):
    """The same sampler over PyG's in-memory Data: identical subgraphs and features."""
    data = Data(x=torch.from_numpy(graph["x"]), y=torch.from_numpy(graph["y"]), edge_index=torch.from_numpy(graph["edges"]))
    train = torch.from_numpy(graph["splits"]["train"][:600])
    a = NodeLoader(stores, node_sampler=tierfs.pyg.NeighborSampler(store, [5, 3], seed=4), input_nodes=train, batch_size=200)
    b = NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [5, 3], seed=4), input_nodes=train, batch_size=200)
    for x, y in zip(a, b):
        assert torch.equal(x.n_id, y.n_id) and torch.equal(x.edge_index, y.edge_index)
        assert torch.equal(x.x, y.x) and torch.equal(x.y, y.y)


def test_stores_pickle(stores, graph):
    fs, gs = stores
    fs2, gs2 = pickle.loads(pickle.dumps((fs, gs)))
    try:
        ids = torch.arange(7)
        torch.testing.assert_close(fs2.get_tensor(None, "x", ids), fs.get_tensor(None, "x", ids))
        assert gs2.get_all_edge_attrs()[0].size == gs.get_all_edge_attrs()[0].size
        assert fs2.store is not fs.store
    finally:
        fs2.store.close()
        gs2.store.close()


def test_prefetch_node_loader(stores, store, graph):
    train = torch.from_numpy(graph["splits"]["train"])
    loader = NodeLoader(stores, node_sampler=tierfs.pyg.NeighborSampler(store, [3], seed=2), input_nodes=train, batch_size=300)
    n = sum(b.batch_size for b in tierfs.prefetch(loader, depth=2))
    assert n == len(train)


def assert_same_data(a, b, what):
    assert sorted(a.keys()) == sorted(b.keys()), f"{what}: keys {sorted(a.keys())} vs {sorted(b.keys())}"
    for k in a.keys():
        va, vb = a[k], b[k]
        same = torch.equal(va, vb) if isinstance(va, torch.Tensor) else va == vb
        assert same, f"{what}: {k} differs"


@pytest.mark.parametrize("prefetch", [1, 4])
def test_tierfs_node_loader_equals_pyg(stores, store, graph, prefetch):
    """tierfs.pyg.NeighborLoader (pipelined) gives PyG NodeLoader's batches field for field on random
    seeds (TIERFS_TEST_SEED printed in the header)."""
    r = rng(40 + prefetch)
    inp = torch.from_numpy(r.choice(graph["n"], size=700, replace=False))
    seed = int(r.integers(1 << 20))
    ref = list(NodeLoader(stores, node_sampler=tierfs.pyg.NeighborSampler(store, [4, 3], seed=seed), input_nodes=inp, batch_size=96))
    loader = tierfs.pyg.NeighborLoader(store, [4, 3], inp, batch_size=96, seed=seed, prefetch=prefetch)
    got = list(loader)
    assert len(got) == len(ref) == len(loader) == 8
    for i, (a, b) in enumerate(zip(ref, got)):
        assert_same_data(a, b, f"seed {SEED} batch {i}")
    assert loader.stats()["batches"] == 8


def test_tierfs_node_loader_shuffle_and_planned(store, graph, tmp_path):
    r = rng(45)
    inp = r.choice(graph["n"], size=500, replace=False)
    for planned, reuse in ((0, False), (2, False), (2, True)):
        loader = tierfs.pyg.NeighborLoader(store, [3, 2], inp, batch_size=64, shuffle=True, seed=5, shuffle_seed=int(r.integers(99)),
                                       planned_epochs=planned, plan_dir=str(tmp_path / f"plan{planned}{reuse}") if planned else None,
                                       reuse_samples=reuse)
        epochs = []
        for _ in range(3):
            batches = list(loader)
            seen = np.concatenate([b.n_id[: b.batch_size].numpy() for b in batches])
            np.testing.assert_array_equal(np.sort(seen), np.sort(inp))  # each epoch a permutation of the input
            for b in batches:
                np.testing.assert_array_equal(inp[b.input_id.numpy()], b.n_id[: b.batch_size].numpy())
                np.testing.assert_array_equal(b.x.numpy(), graph["x"][b.n_id.numpy()])
                np.testing.assert_array_equal(b.y.numpy(), graph["y"][b.n_id.numpy()])
                assert b.edge_index.shape[1] == sum(b.num_sampled_edges) and b.num_nodes == sum(b.num_sampled_nodes)
            epochs.append(batches)
        assert not torch.equal(epochs[0][0].n_id, epochs[1][0].n_id)
        if planned and reuse:  # epoch 2 replays planned epoch 0
            for a, b in zip(epochs[0], epochs[2]):
                assert_same_data(a, b, f"seed {SEED} planned replay")
        elif planned:  # epoch 2 is fresh: planned by the next round, not a replay of epoch 0
            assert not torch.equal(epochs[0][0].n_id, epochs[2][0].n_id)
        loader.loader.close()


def test_neighbor_loader_input_forms_and_errors(stores, store, graph):
    train = graph["splits"]["train"]
    n = graph["n"]
    mask = np.zeros(n, dtype=bool)
    mask[train] = True
    forms = {"split name": "train", "numpy": train, "torch": torch.from_numpy(train), "list": train.tolist(),
             "numpy mask": mask, "torch mask": torch.from_numpy(mask), "stores tuple": None}
    want = np.sort(train)
    for name, inp in forms.items():
        data = stores if name == "stores tuple" else store
        loader = tierfs.pyg.NeighborLoader(data, [2], input_nodes="train" if inp is None else inp, batch_size=128)
        got = np.sort(np.concatenate([b.n_id[: b.batch_size].numpy() for b in loader]))
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert len(tierfs.pyg.NeighborLoader(store, [1], batch_size=1000)) == -(-n // 1000)  # None: every node
    assert torch.equal(tierfs.pyg.NeighborLoader(store, [1], "valid").input_nodes, torch.from_numpy(graph["splits"]["val"]))
    # PyG's defaults pass; what tierfs cannot do is refused by name.
    tierfs.pyg.NeighborLoader(store, [2], "train", num_workers=0, subgraph_type="directional", filter_per_worker=False)
    with pytest.raises(tierfs.InvalidArgumentError, match="'input_time' is set while 'time_attr' is not set"):  # PyG's ValueError
        tierfs.pyg.NeighborLoader(store, [2], "train", input_time=torch.zeros(3))
    with pytest.raises(TypeError, match="bogus"):
        tierfs.pyg.NeighborLoader(store, [2], "train", bogus=1)
    with pytest.raises(tierfs.KeyNotFoundError, match="'nope' is not a split"):
        tierfs.pyg.NeighborLoader(store, [2], "nope")
    with pytest.raises(tierfs.InvalidArgumentError, match="one entry per node"):
        tierfs.pyg.NeighborLoader(store, [2], np.ones(5, dtype=bool))
    with pytest.raises(tierfs.OutOfRangeError, match=f"holds {n + 4}"):
        tierfs.pyg.NeighborLoader(store, [2], [0, n + 4])
    with pytest.raises(tierfs.DTypeError, match="float"):
        tierfs.pyg.NeighborLoader(store, [2], np.array([1.5]))
    with pytest.raises(tierfs.InvalidArgumentError, match="num_neighbors"):
        tierfs.pyg.NeighborLoader(store, 5, "train")


def test_neighbor_loader_zero_hops(store, graph):
    """num_neighbors=[] (PyG takes it: zero hops) gives each batch's seeds alone, their rows and
    labels, no edges (issue 42 item 4)."""
    train = graph["splits"]["train"]
    batches = list(tierfs.pyg.NeighborLoader(store, [], input_nodes=train, batch_size=500))
    assert [b.batch_size for b in batches] == [500, 500, 200]
    got = np.concatenate([b.n_id.numpy() for b in batches])
    np.testing.assert_array_equal(got, train)
    for b in batches:
        assert b.edge_index.shape == (2, 0) and b.num_nodes == b.batch_size
        np.testing.assert_array_equal(b.x.numpy(), graph["x"][b.n_id.numpy()])
        np.testing.assert_array_equal(b.y.numpy(), graph["y"][b.n_id.numpy()])
        assert list(b.num_sampled_nodes) == [b.batch_size] and list(b.num_sampled_edges) == []


def test_neighbor_loader_transform(store, graph):
    def add_mark(data):
        data.mark = data.batch_size * 2
        return data

    b = next(iter(tierfs.pyg.NeighborLoader(store, [2], "train", batch_size=32, transform=add_mark)))
    assert b.mark == 64


# training ----------------------------------------------------------------------------------


def test_graphsage_trains_on_cora(cora_dir):
    from torch_geometric.nn import GraphSAGE

    torch.manual_seed(SEED % 1000)
    with tierfs.open(cora_dir, host_cache="1MiB") as store:
        assert (store.num_nodes(), store.num_edges(), store.dim, store.num_classes) == (2708, 10556, 1433, 7)
        fs, gs = tierfs.pyg.stores(store)
        train, test = (torch.from_numpy(store.split(s)) for s in ("train", "test"))
        model = GraphSAGE(store.dim, 64, num_layers=2, out_channels=store.num_classes, dropout=0.5)
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, [10, 10], seed=SEED), input_nodes=train, batch_size=35, shuffle=True)
        losses = []
        for _ in range(15):
            model.train()
            total = 0.0
            for batch in loader:
                opt.zero_grad()
                out = model(batch.x, batch.edge_index)[: batch.batch_size]
                loss = F.cross_entropy(out, batch.y[: batch.batch_size])
                loss.backward()
                opt.step()
                total += float(loss.detach()) * batch.batch_size
            losses.append(total / len(train))
        model.eval()
        correct = 0
        test_loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(store, [-1, -1]), input_nodes=test, batch_size=500)
        with torch.no_grad():
            for batch in test_loader:
                pred = model(batch.x, batch.edge_index)[: batch.batch_size].argmax(-1)
                correct += int((pred == batch.y[: batch.batch_size]).sum())
        acc = correct / len(test)
    print(f"cora: losses {losses[0]:.3f} -> {losses[-1]:.3f}, test accuracy {acc:.3f} (seed {SEED})")
    assert losses[-1] < 0.5 * losses[0], losses
    assert acc > 0.6, f"test accuracy {acc:.3f}; chance is about 0.3 (seed {SEED})"


@pytest.mark.parametrize("context,workers", [("spawn", 1), ("forkserver", 2)])
def test_node_loader_spawn_worker(stores, store, graph, context, workers):
    """PyG's own loader with worker processes: started by spawn or forkserver they work (the
    sampler and stores pickle and reopen the store). One worker draws what num_workers=0 draws;
    with two, each draws its own batches with its own sampler's calls (valid, not the same)."""
    train = torch.from_numpy(graph["splits"]["train"][:300])
    sampler = tierfs.pyg.NeighborSampler(store, [3, 2], seed=6)
    loader = NodeLoader(stores, node_sampler=sampler, input_nodes=train, batch_size=100, num_workers=workers, multiprocessing_context=context, filter_per_worker=False)
    got = list(loader)
    for batch in got:
        np.testing.assert_array_equal(batch.x.numpy(), graph["x"][batch.n_id.numpy()])
    assert torch.equal(torch.cat([b.n_id[: b.batch_size] for b in got]), train)
    if workers == 1:
        want = list(NodeLoader(stores, node_sampler=tierfs.pyg.NeighborSampler(store, [3, 2], seed=6), input_nodes=train, batch_size=100))
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same_data(a, b, f"batch {i}")


def test_neighbor_loader_num_workers(store, graph):
    """tierfs.pyg.NeighborLoader(num_workers=2) (issue 42, PyG item 7) starts no process (the
    library's Go runtime must not fork): two of its pipeline's threads make the batches, which
    are those of num_workers=0 for the same seeds, shuffled or not; prefetch= wins over it."""
    r = rng(47)
    inp = torch.from_numpy(r.choice(graph["n"], size=400, replace=False))
    seed, shuffle_seed = int(r.integers(1 << 20)), int(r.integers(1 << 20))
    for shuffle in (False, True):
        args = dict(batch_size=64, seed=seed, shuffle=shuffle, shuffle_seed=shuffle_seed)
        ref = tierfs.pyg.NeighborLoader(store, [4, 3], inp, num_workers=0, **args)
        ours = tierfs.pyg.NeighborLoader(store, [4, 3], inp, num_workers=2, persistent_workers=True, multiprocessing_context="spawn", **args)
        for epoch in range(2):
            want, got = list(ref), list(ours)
            assert len(got) == len(want) == 7
            for i, (a, b) in enumerate(zip(want, got)):
                assert_same_data(a, b, f"seed {SEED} shuffle {shuffle} epoch {epoch} batch {i}")
        assert ours.stats()["depth"] == 2 and ref.stats()["depth"] == 4
    loader = tierfs.pyg.NeighborLoader(store, [2], inp, num_workers=2, prefetch=5)
    list(loader)
    assert loader.stats()["depth"] == 5
    for bad in (-1, True, 1.5):
        with pytest.raises(tierfs.InvalidArgumentError, match="num_workers"):
            tierfs.pyg.NeighborLoader(store, [2], inp, num_workers=bad)
