"""tierfs.pyg link loading: tierfs.pyg.LinkNeighborLoader over a dataset yields, batch by batch,
what PyG's own LinkLoader yields over the in-memory Data with tierfs's sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import LinkLoader  # noqa: E402
from torch_geometric.sampler import EdgeSamplerInput, NegativeSampling  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402


def in_memory(graph):
    return Data(x=torch.from_numpy(graph["x"]), y=torch.from_numpy(graph["y"]), edge_index=torch.from_numpy(graph["edges"]), num_nodes=graph["n"])


def assert_same_batches(ours, theirs, keys):
    n = 0
    for a, b in zip(ours, theirs, strict=True):
        for k in keys:
            va, vb = a[k] if k in a else None, b[k] if k in b else None
            if vb is None:
                assert va is None, k
                continue
            assert isinstance(va, torch.Tensor) or k.startswith("num_"), (k, type(va))
            if isinstance(vb, torch.Tensor):
                assert va.dtype == vb.dtype and va.shape == vb.shape, (k, va.dtype, vb.dtype, va.shape, vb.shape)
                assert torch.equal(va, vb), k
            else:
                assert va == vb, k
        n += 1
    return n


KEYS = ["x", "y", "edge_index", "n_id", "e_id", "num_sampled_nodes", "num_sampled_edges", "input_id",
        "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"]


@pytest.mark.parametrize(
    "neg,labels",
    [(None, False), (None, True), ("binary", False), ("binary", True), (NegativeSampling("binary", 2.0), False),
     ("triplet", False), (NegativeSampling("triplet", 3), False)],
)
def test_link_neighbor_loader_equals_pyg_link_loader(store, graph, neg, labels):
    r = rng(7)
    pick = r.choice(graph["e"], 300, replace=False)
    eli = torch.from_numpy(graph["edges"][:, pick])
    edge_label = torch.from_numpy(r.integers(0, 3, 300)) if labels else None
    ours = tierfs.pyg.LinkNeighborLoader(store, [5, 3], edge_label_index=eli, edge_label=edge_label, neg_sampling=neg, batch_size=64, seed=5)
    theirs = LinkLoader(in_memory(graph), link_sampler=tierfs.pyg.NeighborSampler(store, [5, 3], seed=5), edge_label_index=eli,
                        edge_label=edge_label, neg_sampling=neg, batch_size=64)
    assert assert_same_batches(ours, theirs, KEYS) == 5
    # the seed edges are there, in order, before the negatives
    for i, b in enumerate(tierfs.pyg.LinkNeighborLoader(store, [5, 3], edge_label_index=eli, neg_sampling=neg, batch_size=64, seed=5)):
        seeds = eli[:, i * 64 : (i + 1) * 64]
        if "src_index" in b:
            got = torch.stack([b.n_id[b.src_index], b.n_id[b.dst_pos_index]])
        else:
            got = b.n_id[b.edge_label_index[:, : seeds.size(1)]]
        assert torch.equal(got, seeds)


def test_pyg_link_loader_over_stores(store, graph):
    """PyG's LinkLoader over tierfs's (FeatureStore, GraphStore) with its sampler, the ratio form."""
    eli = torch.from_numpy(graph["edges"][:, :200])
    fs, gs = tierfs.pyg.stores(store)
    ours = LinkLoader((fs, gs), link_sampler=tierfs.pyg.NeighborSampler(store, [4], seed=1), edge_label_index=(tierfs.pyg.EDGE_TYPE, eli),
                      neg_sampling_ratio=0.5, batch_size=50, filter_per_worker=False)
    theirs = LinkLoader(in_memory(graph), link_sampler=tierfs.pyg.NeighborSampler(store, [4], seed=1), edge_label_index=eli,
                        neg_sampling_ratio=0.5, batch_size=50)
    assert assert_same_batches(ours, theirs, KEYS) == 4


def test_every_edge_by_default_and_shuffle(store, graph):
    loader = tierfs.pyg.LinkNeighborLoader(store, [2], batch_size=4096, shuffle=True)
    seen = []
    for b in loader:
        seen.append(b.n_id[b.edge_label_index].T)
    pairs = torch.cat(seen)
    assert pairs.size(0) == graph["e"]
    ref = torch.from_numpy(graph["edges"]).T
    key = lambda p: (p[:, 0] * graph["n"] + p[:, 1]).sort().values  # noqa: E731
    assert torch.equal(key(pairs), key(ref))


def test_bad_link_input(store, graph):
    eli = torch.tensor([[0, 1], [2, 3000]])
    loader = tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2)
    with pytest.raises(tierfs.OutOfRangeError, match=r"dst\[1\] = 3000"):
        next(iter(loader))
    with pytest.raises(tierfs.InvalidArgumentError, match="edge_label: 3 labels for 2 seed edges"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([[0, 1], [2, 3]]), edge_label=torch.ones(3))
    with pytest.raises(tierfs.InvalidArgumentError, match="neg_sampling_ratio = -1"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([[0, 1], [2, 3]]), neg_sampling_ratio=-1)
    with pytest.raises(tierfs.InvalidArgumentError, match="edge_label_index: want a"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=torch.tensor([0, 1, 2]))
    # a split name is not seed edges (PyG takes none either): the error names store.edge_split (issue 42)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"store.edge_split\('train'\)"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index="train")


def test_pyg_default_arguments_pass(store, graph):
    """PyG's LinkNeighborLoader arguments at their defaults pass (a PyG script runs unchanged);
    another value is tierfs's NotSupportedError naming it, not DataLoader's TypeError (issue 42,
    PyG item 5)."""
    eli = torch.tensor([[0, 1], [2, 3]])
    defaults = dict(subgraph_type="directional", disjoint=False, temporal_strategy="uniform", time_attr=None, weight_attr=None,
                    is_sorted=False, neighbor_sampler=None, directed=True, transform_sampler_output=None, filter_per_worker=None,
                    num_workers=0, edge_label_time=None)
    batch = next(iter(tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2, **defaults)))
    assert batch.edge_label_index.shape == (2, 2)
    for kw in (dict(directed=False),):
        with pytest.raises(tierfs.NotSupportedError, match=next(iter(kw))):
            tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2, **kw)
    # disjoint, time_attr and temporal_strategy are taken (test_pyg_link_time.py); these are PyG's errors
    with pytest.raises(ValueError, match="'edge_label_time' is not set"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2, time_attr="t")
    with pytest.raises(ValueError, match="temporal_strategy"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=2, temporal_strategy="last")


def test_layout_equals_pyg_edge_sample(store, graph):
    """Without negatives (PyG's are torch's random draws), PyG's own edge_sample around tierfs's
    node sampler gives tierfs's link sample: seeds, label index, labels."""
    from torch_geometric.sampler import NodeSamplerInput
    from torch_geometric.sampler.neighbor_sampler import edge_sample

    eli = torch.from_numpy(graph["edges"][:, 1000:1100])
    label = torch.arange(100) % 4
    inputs = EdgeSamplerInput(None, eli[0], eli[1], label)
    nodes = tierfs.pyg.NeighborSampler(store, [3, 3], seed=9)
    want = edge_sample(inputs, lambda seed, _t: nodes.sample_from_nodes(NodeSamplerInput(None, seed)), graph["n"], False)
    got = tierfs.pyg.NeighborSampler(store, [3, 3], seed=9).sample_from_edges(inputs)
    for f in ("node", "row", "col", "edge"):
        assert torch.equal(getattr(got, f), getattr(want, f)), f
    assert got.num_sampled_nodes == want.num_sampled_nodes and got.num_sampled_edges == want.num_sampled_edges
    for a, b in zip(got.metadata[1:3], want.metadata[1:3]):
        assert torch.equal(a, b)


def test_link_neighbor_loader_from_a_path(store, graph):
    eli = torch.from_numpy(graph["edges"][:, :100])
    by_path = tierfs.pyg.LinkNeighborLoader(graph["path"], [3], edge_label_index=eli, neg_sampling="triplet", batch_size=40, seed=4)
    by_store = tierfs.pyg.LinkNeighborLoader(store, [3], edge_label_index=eli.numpy(), neg_sampling="triplet", batch_size=40, seed=4)
    assert assert_same_batches(by_path, by_store, KEYS) == 3
    with pytest.raises(tierfs.InvalidArgumentError, match="not disjoint"):
        tierfs.pyg.NeighborSampler(store, [2]).sample_from_edges(EdgeSamplerInput(None, eli[0, :2], eli[1, :2], time=torch.zeros(2)))


def test_exclude_seed_edges_through_the_loader(store, graph):
    eli = torch.from_numpy(graph["edges"][:, 500:560])
    for b in tierfs.pyg.LinkNeighborLoader(store, [-1], edge_label_index=eli, batch_size=30, exclude_seed_edges=True, undirected=True):
        drawn = set(map(tuple, b.n_id[b.edge_index].T.tolist()))
        seeds = set(map(tuple, b.n_id[b.edge_label_index].T.tolist()))
        assert not drawn & (seeds | {(d, s) for s, d in seeds})
    import pickle

    sp = pickle.loads(pickle.dumps(tierfs.pyg.NeighborSampler(store, [2], strict_negatives=True)))
    assert sp.link_options["strict"]


def assert_same_data(got, want, what):
    """got and want hold the same keys and equal values (tensors: same dtype, shape, values)."""
    assert set(got.keys()) == set(want.keys()), (what, set(got.keys()) ^ set(want.keys()))
    for k in want.keys():
        g, w = got[k], want[k]
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and torch.equal(g, w), (what, k)
        else:
            assert g == w, (what, k)


def pipeline_threads(st):
    return [t for t in st.threads if t.is_alive()]


@pytest.mark.parametrize("neg,prefetch", [("binary", 1), ("triplet", 3), (None, 8)])
def test_pipelined_link_loader_equals_pyg_link_loader_over_stores(store, graph, neg, prefetch):
    """The on-demand loader samples on its pipeline's thread and gathers on prefetch threads,
    yet yields, epoch after epoch (shuffled by the same torch seed, the sampler's draws going
    on from epoch to epoch), exactly what PyG's LinkLoader over tierfs's stores with the same
    sampler yields in the caller's thread: seed edges, negatives, subgraphs, features."""
    seed = SEED % 100000
    print(f"torch seed {seed}")
    r = rng(2901)
    pick = r.choice(graph["e"], 330, replace=False)
    eli = torch.from_numpy(graph["edges"][:, pick])
    edge_label = torch.from_numpy(r.integers(0, 4, 330))
    args = dict(edge_label=edge_label if neg != "triplet" else None, neg_sampling=neg, batch_size=64, shuffle=True, drop_last=neg == "binary")
    ours = tierfs.pyg.LinkNeighborLoader(store, [4, 3], edge_label_index=eli, seed=seed, prefetch=prefetch, **args)
    theirs = LinkLoader(tierfs.pyg.stores(store), link_sampler=tierfs.pyg.NeighborSampler(store, [4, 3], seed=seed),
                        edge_label_index=(tierfs.pyg.EDGE_TYPE, eli), filter_per_worker=False, **args)
    assert len(ours) == len(theirs) == (5 if neg == "binary" else 6)
    torch.manual_seed(seed)
    got = [list(ours) for _ in range(2)]
    assert ours.stats()["batches"] == len(ours)
    torch.manual_seed(seed)
    want = [list(theirs) for _ in range(2)]
    for e in range(2):
        assert len(got[e]) == len(want[e]) == len(ours)
        for i, (a, b) in enumerate(zip(got[e], want[e])):
            assert_same_data(a, b, (f"torch seed {seed}", e, i))
    assert not torch.equal(got[0][0].input_id, got[1][0].input_id)  # each epoch its own order


def test_link_loader_stats_and_close_mid_epoch(store, graph):
    """stats() reports the latest epoch's stages and bound; closing the pipeline (or breaking
    out of the loop and dropping it) mid-epoch stops its threads, and the next epoch runs."""
    eli = torch.from_numpy(graph["edges"][:, :400])
    loader = tierfs.pyg.LinkNeighborLoader(store, [3, 2], edge_label_index=eli, neg_sampling="binary", batch_size=20, prefetch=3)
    assert loader.stats() == {}
    assert sum(1 for _ in loader) == 20
    s = loader.stats()
    assert s["batches"] == 20 and s["depth"] == 3
    assert s["stages"]["sample"]["batches"] == s["stages"]["gather"]["batches"] == 20
    assert s["bound"] in ("train", "sample", "gather", "disk") and s["bound_why"]
    assert not pipeline_threads(loader._run)

    it = iter(loader)
    next(it)
    next(it)
    st = loader._run
    assert len(pipeline_threads(st)) == 4  # the sampler and 3 gatherers
    it.close()
    assert not pipeline_threads(st)
    with pytest.raises(StopIteration):
        next(it)
    assert loader.stats()["batches"] == 2

    for b in loader:  # break out; dropping the pipeline stops its threads
        break
    st = loader._run
    assert b.input_id.numel() == 20
    import gc

    gc.collect()
    assert not pipeline_threads(st)


def test_link_loader_num_workers(store, graph):
    """num_workers=2 (issue 42, PyG item 7): no process starts (the library's Go runtime must not
    fork); the pipeline's threads do the workers' job, two of them, and the batches of two
    shuffled epochs from the same torch seed are those of num_workers=0."""
    seed = SEED % 100000
    print(f"torch seed {seed}")
    eli = torch.from_numpy(graph["edges"][:, rng(2903).choice(graph["e"], 200, replace=False)])
    args = dict(edge_label_index=eli, neg_sampling="binary", batch_size=32, shuffle=True, seed=seed)
    got = {}
    for workers in (0, 2):
        loader = tierfs.pyg.LinkNeighborLoader(store, [3, 2], num_workers=workers, persistent_workers=workers > 0, **args)
        torch.manual_seed(seed)
        got[workers] = [list(loader) for _ in range(2)]
        assert loader.stats()["depth"] == (2 if workers else 4)
    for e in range(2):
        assert len(got[0][e]) == len(got[2][e]) == 7
        for i, (a, b) in enumerate(zip(got[0][e], got[2][e])):
            assert_same_data(b, a, (f"torch seed {seed}", e, i))
