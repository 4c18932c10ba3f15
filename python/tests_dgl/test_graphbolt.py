"""GraphBolt side: tierfs.dgl.Feature / FeatureStore against the raw arrays, the read_async
protocol of GraphBolt 2.4's FeatureFetcher, and a GraphBolt pipeline fetching through tierfs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dgl.graphbolt as gb
import tierfs
import tierfs.dgl as tdgl


def _ids(graph, n=300, seed=1):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, graph.num_nodes, n)
    ids[:3] = [0, graph.num_nodes - 1, 0]  # both ends and a repeat
    return torch.from_numpy(ids)


# FeatureStore ----------------------------------------------------------------------------


def test_feature_store_keys(store):
    fs = tdgl.FeatureStore(store)
    assert isinstance(fs, gb.FeatureStore)
    assert isinstance(fs, gb.BasicFeatureStore)
    assert sorted(fs.keys(), key=str) == sorted([("node", None, "feat"), ("node", None, "label")], key=str)
    assert len(fs) == 2
    assert ("node", None, "feat") in fs and ("node", None, "nope") not in fs
    assert isinstance(fs[("node", None, "feat")], gb.Feature)
    assert fs.size("node", None, "feat") == torch.Size([store.dim])
    assert fs.size("node", None, "label") == torch.Size([])
    assert fs.count("node", None, "feat") == store.num_nodes()
    # GraphBolt's metadata: what the dataset gave (TorchBasedFeature's, {} here), no tierfs keys.
    assert fs.metadata("node", None, "feat") == fs.metadata("node", None, "label") == {}
    with pytest.raises(KeyError):
        fs.read("node", None, "missing", torch.tensor([0]))


def test_feature_store_names_and_type(store):
    fs = tdgl.FeatureStore(store, feature_name="x", label_name=None, type_name="paper")
    assert fs.keys() == [("node", "paper", "x")]


def test_feature_store_opens_a_path(graph):
    with tdgl.FeatureStore(graph.dir, host_cache="1MB") as fs:
        got = fs.read("node", None, "feat", torch.tensor([5, 6]))
        np.testing.assert_array_equal(got.numpy(), graph.x[[5, 6]])
        inner = fs.store
    assert inner.closed


# Feature.read ----------------------------------------------------------------------------


def _tier_hits(store):
    return {t["tier"]: t["hits"] for t in store.stats()["tiers"]}


def test_read_matches_raw_npy_and_both_tiers(graph, store, cached_store):
    ids = _ids(graph)
    cold_before, warm_before = _tier_hits(store), _tier_hits(cached_store)
    cold = tdgl.Feature(store).read(ids)
    warm = tdgl.Feature(cached_store).read(ids)
    cold_after, warm_after = _tier_hits(store), _tier_hits(cached_store)
    # Host cache 0 reads every row from disk; a host tier holding every row serves them all.
    assert cold_after["ssd"] - cold_before["ssd"] == ids.numel()
    assert cold_after.get("host", 0) == cold_before.get("host", 0)
    assert warm_after["host"] - warm_before["host"] == ids.numel()
    assert warm_after["ssd"] == warm_before["ssd"]
    assert cold.dtype == torch.float32 and cold.shape == (ids.numel(), graph.x.shape[1])
    np.testing.assert_array_equal(cold.numpy(), graph.x[ids.numpy()])
    torch.testing.assert_close(warm, cold, rtol=0, atol=0)
    # The same rows through the plain Store API.
    np.testing.assert_array_equal(store.gather(ids.numpy()), graph.x[ids.numpy()])
    np.testing.assert_array_equal(cached_store.gather(ids.numpy()), graph.x[ids.numpy()])


def test_read_through_feature_store(graph, store):
    fs = tdgl.FeatureStore(store)
    ids = _ids(graph, 64, seed=2)
    np.testing.assert_array_equal(fs.read("node", None, "feat", ids).numpy(), graph.x[ids.numpy()])
    np.testing.assert_array_equal(fs.read("node", None, "label", ids).numpy(), graph.y[ids.numpy()])


def test_read_all_rows(graph, store):
    np.testing.assert_array_equal(tdgl.Feature(store).read().numpy(), graph.x)
    np.testing.assert_array_equal(tdgl.Feature(store, "label").read().numpy(), graph.y)


@pytest.mark.parametrize(
    "ids",
    [
        torch.tensor([4, 2, 4], dtype=torch.int32),
        np.array([4, 2, 4], dtype=np.uint16),
        [4, 2, 4],
    ],
    ids=["torch-int32", "numpy-uint16", "list"],
)
def test_read_id_kinds(graph, store, ids):
    got = tdgl.Feature(store).read(ids)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), graph.x[[4, 2, 4]])


def test_read_empty(store):
    got = tdgl.Feature(store).read(torch.empty(0, dtype=torch.int64))
    assert got.shape == (0, store.dim) and got.dtype == torch.float32
    lab = tdgl.Feature(store, "label").read(torch.empty(0, dtype=torch.int64))
    assert lab.shape == (0,) and lab.dtype == torch.int64


def test_labels(graph, store):
    ids = _ids(graph, 128, seed=3)
    lab = tdgl.Feature(store, "label").read(ids)
    assert lab.dtype == torch.int64
    np.testing.assert_array_equal(lab.numpy(), graph.y[ids.numpy()])
    assert (graph.y == -1).any()  # unlabelled nodes come back as -1


def test_errors(graph, store):
    f = tdgl.Feature(store)
    with pytest.raises(tierfs.Error):
        f.read(torch.tensor([0, graph.num_nodes]))
    with pytest.raises(TypeError) as e:
        f.read(torch.tensor([0.5]))
    assert isinstance(e.value, tierfs.Error)
    with pytest.raises(tierfs.DTypeError):
        f.read(torch.tensor([True, False]))
    with pytest.raises(NotImplementedError):
        f.update(torch.zeros(1, store.dim), torch.tensor([0]))
    with pytest.raises(tierfs.Error):
        f.update(torch.zeros(1, store.dim))
    with pytest.raises(tdgl.ReadOnlyError):
        tdgl.FeatureStore(store).update("node", None, "feat", torch.zeros(1, store.dim), torch.tensor([0]))
    with pytest.raises(tierfs.InvalidArgumentError):
        tdgl.Feature(store, "edges")


def test_feature_size_count_metadata(store):
    f = tdgl.Feature(store)
    assert f.size() == torch.Size([store.dim])
    assert f.count() == store.num_nodes()
    assert f.metadata() == {} and tdgl.Feature(store, metadata={"num_categories": 3}).metadata() == {"num_categories": 3}
    assert "Feature" in repr(f)


# read_async: the protocol of GraphBolt 2.4's FeatureFetcher --------------------------------


def _drive_like_graphbolt(feature, ids):
    """What FeatureFetcher (GraphBolt 2.4) does with one feature: ask the stage count for the
    ids' device, take the generator, advance it that many times; the last value is a future
    whose wait() gives the rows."""
    num_stages = feature.read_async_num_stages(ids.device)
    assert isinstance(num_stages, int) and num_stages >= 1
    handle = feature.read_async(ids)
    value = None
    for stage in range(num_stages):
        value = next(handle)
        if stage < num_stages - 1:
            assert value is None  # intermediate stages yield nothing
    with pytest.raises(StopIteration):
        next(handle)
    return value.wait()


@pytest.mark.parametrize("kind", ["feat", "label"])
def test_read_async_protocol_matches_read(graph, store, cached_store, kind):
    for s in (store, cached_store):
        feature = tdgl.Feature(s, kind)
        for seed in range(3):
            ids = _ids(graph, 200 + seed, seed=seed)
            got = _drive_like_graphbolt(feature, ids)
            torch.testing.assert_close(got, feature.read(ids), rtol=0, atol=0)
    ref = graph.x if kind == "feat" else graph.y
    np.testing.assert_array_equal(got.numpy(), ref[ids.numpy()])


def test_read_async_empty_and_errors(graph, store):
    f = tdgl.Feature(store)
    got = _drive_like_graphbolt(f, torch.empty(0, dtype=torch.int64))
    assert got.shape == (0, store.dim)
    # A bad id surfaces where the value is waited for, as a tierfs error.
    num = f.read_async_num_stages(torch.device("cpu"))
    handle = f.read_async(torch.tensor([1, graph.num_nodes + 5]))
    for _ in range(num):
        fut = next(handle)
    with pytest.raises(tierfs.Error):
        fut.wait()


def test_read_async_num_stages_for_every_device(store):
    """FeatureFetcher 2.4 asks for both "cpu" and "cuda" up front (catching only
    AssertionError), even on machines without a GPU."""
    f = tdgl.Feature(store)
    assert f.read_async_num_stages(torch.device("cpu")) == 1
    assert f.read_async_num_stages(torch.device("cuda")) >= 1
    assert f.read_async_num_stages("cuda:0") == f.read_async_num_stages(torch.device("cuda"))


def test_read_async_pipelined_like_feature_fetcher(graph, store):
    """Several minibatches in flight, advanced stage by stage from the largest stage count
    down, as FeatureFetcher's chain of _execute_stage(i).buffer(1) does, then waited."""
    fs = tdgl.FeatureStore(store)
    keys = [("node", None, "feat"), ("node", None, "label")]
    max_stages = max(fs[k].read_async_num_stages(torch.device(d)) for k in keys for d in ("cpu", "cuda"))
    batches = [_ids(graph, 50 + i, seed=10 + i) for i in range(4)]
    inflight = []
    for ids in batches:
        inflight.append(
            {k: [fs[k].read_async(ids), fs[k].read_async_num_stages(ids.device)] for k in keys}
        )
    for current in range(max_stages, 0, -1):
        for feats in inflight:
            for k, (handle, stage) in feats.items():
                assert current >= stage
                if current == stage:
                    value = next(handle)
                    feats[k] = [handle if stage > 1 else value, stage - 1]
    for ids, feats in zip(batches, inflight):
        x = feats[keys[0]][0].wait()
        y = feats[keys[1]][0].wait()
        np.testing.assert_array_equal(x.numpy(), graph.x[ids.numpy()])
        np.testing.assert_array_equal(y.numpy(), graph.y[ids.numpy()])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_read_async_cuda_ids(graph, store):
    f = tdgl.Feature(store)
    ids = _ids(graph).cuda()
    got = _drive_like_graphbolt(f, ids)
    assert got.device == ids.device
    np.testing.assert_array_equal(got.cpu().numpy(), graph.x[ids.cpu().numpy()])
    assert f.read(ids).device == ids.device


# A GraphBolt pipeline reading features through tierfs ------------------------------------


def test_graphbolt_pipeline_fetches_through_tierfs(graph, store):
    indptr, indices = graph.csc()
    sampling_graph = gb.fused_csc_sampling_graph(torch.from_numpy(indptr), torch.from_numpy(indices))
    fs = tdgl.FeatureStore(store)
    items = gb.ItemSet(torch.from_numpy(graph.train), names="seed_nodes")
    datapipe = gb.ItemSampler(items, batch_size=64, shuffle=True)
    datapipe = datapipe.sample_neighbor(sampling_graph, [4, 4])
    datapipe = datapipe.fetch_feature(fs, node_feature_keys=["feat", "label"])
    loader = gb.DataLoader(datapipe, num_workers=0)
    seen = 0
    for minibatch in loader:
        nodes = minibatch.node_ids().numpy()
        np.testing.assert_array_equal(minibatch.node_features["feat"].numpy(), graph.x[nodes])
        np.testing.assert_array_equal(minibatch.node_features["label"].numpy(), graph.y[nodes])
        blocks = minibatch.blocks
        assert blocks[0].num_src_nodes() == len(nodes)
        seen += minibatch.seed_nodes.numel()
    assert seen == len(graph.train)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8"])
def test_other_feature_dtypes(tmp_path, dtype):
    path = tierfs.synth(str(tmp_path / dtype), nodes=300, avg_degree=3, dim=8, dtype=dtype, classes=3, seed=1)
    with tierfs.open(path) as s:
        f = tdgl.Feature(s)
        ids = torch.tensor([5, 0, 299, 5])
        got = f.read(ids)
        assert got.dtype == getattr(torch, dtype) and got.shape == (4, 8)
        assert f"dtype={dtype}" in repr(f)
        raw = s.gather(ids.numpy())  # numpy; bfloat16 comes as its uint16 bits
        want = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16) if dtype == "bfloat16" else torch.from_numpy(raw)
        assert torch.equal(got, want)
        assert torch.equal(_drive_like_graphbolt(f, ids), want)
        inp, _, blocks = tdgl.NeighborSampler(s, [2]).sample(ids[:3])
        batch = next(iter(tdgl.DataLoader(s, ids[:3], tdgl.NeighborSampler(s, [2]), batch_size=3)))
        assert batch[2][0].srcdata["feat"].dtype == got.dtype
