"""Planned epochs of a heterogeneous graph (Loader(typed Sampler, planned_epochs=K)): every
planned batch against the on-demand hetero Loader of the same seeds and sampling seed (nodes and
edges per type, features per type bit for bit, labels), replay, and bad inputs."""

from __future__ import annotations

import json
import struct
import subprocess

import numpy as np
import pytest
import torch

import tierfs

from conftest import needs_cuda, rng

M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = 11400714785074694791, 14029467366897019727, 1609587929392839161, 9650029242287828579, 2870177450012600261


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def xxh64_short(data: bytes, seed: int = 0) -> int:
    """xxhash64 of fewer than 32 bytes (the reference algorithm's short path)."""
    assert len(data) < 32
    h = (seed + P5 + len(data)) & M64
    i = 0
    while i + 8 <= len(data):
        k = _rotl(int.from_bytes(data[i : i + 8], "little") * P2 & M64, 31) * P1 & M64
        h = (_rotl(h ^ k, 27) * P1 + P4) & M64
        i += 8
    while i + 4 <= len(data):
        h = (_rotl(h ^ (int.from_bytes(data[i : i + 4], "little") * P1 & M64), 23) * P2 + P3) & M64
        i += 4
    while i < len(data):
        h = _rotl(h ^ (data[i] * P5 & M64), 11) * P1 & M64
        i += 1
    h ^= h >> 33
    h = h * P2 & M64
    h ^= h >> 29
    h = h * P3 & M64
    return h ^ (h >> 32)


def batch_sample_seed(sampler_seed: int, epoch: int, batch: int) -> int:
    """planned.BatchSampleSeed: the sampling seed of batch b of planned epoch e."""
    return xxh64_short(struct.pack("<QQQ", sampler_seed & M64, epoch, batch))


def test_batch_sample_seed_is_the_cores():
    assert batch_sample_seed(12345, 1, 7) == 16602632696535137659  # planned.BatchSampleSeed(12345, 1, 7)


@pytest.fixture(scope="module")
def hetero(tmp_path_factory, cli):
    """A random graph of three node types from a small spec (`tierfs ingest --spec`): paper
    (float32 features, labels, splits), author (float16 features), venue (no features), and
    edges into every type, so batches of papers reach all three."""
    r = rng(41)
    print("random hetero graph from conftest.rng(41)")
    tmp = tmp_path_factory.mktemp("hetero")
    counts = {"paper": 900, "author": 1500, "venue": 30}
    node_types = []
    for t, dim, dtype in (("paper", 12, "float32"), ("author", 5, "float16"), ("venue", 0, None)):
        nt = {"name": t, "num_nodes": counts[t], "features": []}
        if dim:
            np.save(tmp / f"{t}_x.npy", r.standard_normal((counts[t], dim)).astype(dtype))
            nt["features"].append({"name": "x", "path": str(tmp / f"{t}_x.npy")})
        if t == "paper":
            np.save(tmp / "paper_y.npy", r.integers(0, 4, counts[t]))
            nt["labels"] = str(tmp / "paper_y.npy")
            (tmp / "splits").mkdir()
            perm = r.permutation(counts[t])
            for name, part in (("train", perm[:500]), ("val", perm[500:600]), ("test", perm[600:])):
                np.save(tmp / "splits" / f"{name}.npy", np.sort(part))
            nt["splits"] = str(tmp / "splits")
        node_types.append(nt)
    edge_types = []
    for (src, rel, dst), avg in ((("paper", "cites", "paper"), 4), (("author", "writes", "paper"), 3),
                                 (("paper", "written_by", "author"), 2), (("venue", "hosts", "paper"), 1),
                                 (("paper", "in", "venue"), 20)):
        m = counts[dst] * avg
        edges = np.stack([r.integers(0, counts[src], m), r.integers(0, counts[dst], m)]).astype(np.int64)
        path = tmp / f"{src}_{rel}_{dst}.npy"
        np.save(path, edges)
        edge_types.append({"src": src, "rel": rel, "dst": dst, "edges": str(path)})
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"node_types": node_types, "edge_types": edge_types}))
    out = tmp / "ds"
    subprocess.run([cli, "ingest", "--spec", str(spec), str(out)], check=True, capture_output=True)
    return str(out)


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    seed = 17
    print(f"tierfs.synth(preset='ogbn-mag', scale=0.003, seed={seed})")
    return tierfs.synth(tmp_path_factory.mktemp("mag") / "ds", preset="ogbn-mag", scale=0.003, seed=seed)


def as_np(a):
    return a.cpu().numpy() if isinstance(a, torch.Tensor) else a


def same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(as_np(a)), np.ascontiguousarray(as_np(b))
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("graph,host_cache,torch_seeds,device", [
    ("hetero", 0, False, "cpu"), ("hetero", "16KiB", True, "cpu"), ("hetero", "64MiB", False, "cpu"), ("mag", "64KiB", False, "cpu"),
    pytest.param("hetero", "16KiB", True, "cuda:0", marks=needs_cuda),
])
def test_hetero_planned_loader_matches_on_demand(request, tmp_path, graph, host_cache, torch_seeds, device):
    r = rng(23)
    seed, shuffle = int(r.integers(1 << 62)), int(r.integers(1 << 30))
    print(f"sampler seed {seed}, shuffle seed {shuffle}")
    cuda = {"device": device, "gpu_cache": "8KiB"} if device != "cpu" else {}
    store = tierfs.open(request.getfixturevalue(graph), host_cache=host_cache, **cuda)
    fanouts = {et: [int(r.integers(1, 5)), int(r.integers(0, 4))] for et in store.edge_types}
    train = store.split("train", node_type="paper")
    seeds = torch.from_numpy(train) if torch_seeds else train
    k = 2
    loader = tierfs.Loader(store, store.sampler(fanouts, seed=seed), seeds, batch_size=48, seed=shuffle,
                           planned_epochs=k, plan_dir=str(tmp_path / "plan"), prefetch=3, node_type="paper")
    plan = loader.plan
    assert plan.hetero and plan.node_type == "paper" and plan.planned == k
    featured = [t for t in store.node_types if any(f["default"] for f in store.types["node_types"][t]["features"].values())]
    assert plan.node_types == featured and (graph == "mag" or featured == ["paper", "author"])
    epochs = []
    for e in range(k + 1):
        if e == k:
            st = plan.stats()  # round 0's, before epoch k's boundary closes it
        epochs.append(list(loader))
    for e, batches in enumerate(epochs):
        assert len(batches) == len(loader) == plan.batches_per_epoch
        np.testing.assert_array_equal(np.sort(np.concatenate([as_np(b.seeds) for b in batches])), np.sort(train))
        for i, b in enumerate(batches):
            assert isinstance(b.seeds, torch.Tensor) == torch_seeds
            # The on-demand hetero Loader over exactly this batch's seeds, sampling with the
            # batch's seed (its first sample), gives the same batch.
            on_demand = tierfs.Loader(store, store.sampler(fanouts, seed=batch_sample_seed(seed, e, i)), b.seeds,
                                      batch_size=len(b.seeds), shuffle=False, node_type="paper")
            (ref,) = list(on_demand)
            assert same_bits(ref.seeds, b.seeds) and same_bits(ref.y, b.y)
            assert set(ref.sample.node) == set(b.sample.node)
            for t in ref.sample.node:
                assert same_bits(ref.sample.node[t], b.sample.node[t]), (e, i, t)
                assert ref.sample.num_sampled_nodes[t] == b.sample.num_sampled_nodes[t]
            for et in ref.sample.row:
                assert same_bits(ref.sample.row[et], b.sample.row[et]) and same_bits(ref.sample.col[et], b.sample.col[et])
                assert same_bits(ref.sample.edge[et], b.sample.edge[et]), (e, i, et)
            assert list(ref.x) == list(b.x) and set(b.x) <= set(featured)
            if graph == "hetero":
                assert set(b.x) == {"paper", "author"} and len(b.sample.node["venue"]) > 0
            for t, x in b.x.items():
                assert not cuda or (x.is_cuda and ref.x[t].is_cuda)
                assert same_bits(x, ref.x[t]), (e, i, t)
                assert same_bits(x, store.gather(as_np(b.sample.node[t]), node_type=t))
    # Epoch k is planned epoch k of the next round (planned while epochs 0..k-1 trained), not a replay.
    assert loader.plan.first_epoch == k and loader.stats()["plans"]["waits"] <= 2
    for e in range(1, k + 1):
        assert not same_bits(epochs[0][0].seeds, epochs[e][0].seeds)
    assert st["batches"] == k * len(loader) * len(featured)
    assert st["sample_bytes_read"] == plan.report["sample_bytes"] > 0  # every batch's sample read from the plan, not drawn
    if host_cache == "64MiB":
        assert plan.report["rows_packed"] == 0
    else:
        assert st["rows"] > 0 and plan.report["rows_packed"] > 0
    loader.close()
    store.close()


def test_hetero_plan_errors(hetero, tmp_path):
    with tierfs.open(hetero) as store:
        fanouts = {et: [2] for et in store.edge_types}
        train = store.split("train", node_type="paper")
        plan = store.plan_epochs(fanouts, 64, 1, seeds=train, plan_dir=tmp_path / "p", node_type="paper", seed=5)
        seeds, sample, xs = plan.load(0, 0)
        assert set(xs) == set(plan.node_types)
        np.testing.assert_array_equal(seeds, sample.node["paper"][: sample.num_seeds])
        without = [t for t in store.node_types if t not in plan.node_types]
        if without:
            with pytest.raises(tierfs.KeyNotFoundError, match="has no rows in this plan"):
                plan.gather(0, 0, sample.node[without[0]], node_type=without[0])
        assert len(plan.node_types) > 1
        with pytest.raises(tierfs.InvalidArgumentError, match="name the node type"):
            plan.gather(0, 0, sample.node["paper"])
        # Another batch's nodes are a stale sample, not other rows.
        other = plan.sample(0, 1)
        with pytest.raises(tierfs.InvalidArgumentError, match="stale"):
            plan.gather(0, 0, other.node["paper"], node_type="paper")
        plan.close()
        changed = dict(fanouts)
        changed[store.edge_types[0]] = [3]
        with pytest.raises(tierfs.InvalidArgumentError, match="fanouts per edge type differs"):
            store.plan_epochs(changed, 64, 1, seeds=train, plan_dir=tmp_path / "p", node_type="paper", seed=5, replan=False)
        with pytest.raises(tierfs.InvalidArgumentError, match="name one"):
            store.plan_epochs(fanouts, 64, 1, seeds=train, plan_dir=tmp_path / "q")
        with pytest.raises(tierfs.InvalidArgumentError, match="fanout list for every edge type"):
            store.plan_epochs(dict(list(fanouts.items())[1:]), 64, 1, seeds=train, plan_dir=tmp_path / "q", node_type="paper")
        with pytest.raises(tierfs.InvalidArgumentError, match="needs fanouts per edge type"):
            store.plan_epochs([2], 64, 1, seeds=train, plan_dir=tmp_path / "q", node_type="author")
        with pytest.raises(IndexError, match="node type \"paper\""):
            store.plan_epochs(fanouts, 64, 1, seeds=[store.num_nodes("paper")], plan_dir=tmp_path / "q", node_type="paper")
        # The default seeds are node_type's train split.
        with store.plan_epochs(fanouts, 64, 1, plan_dir=tmp_path / "d", node_type="paper", seed=5) as p:
            assert p.batches_per_epoch == -(-len(train) // 64)


def test_hetero_on_demand_loader_is_pipelined(hetero):
    """The on-demand hetero Loader through its pipeline (prefetch gathers in flight) yields the
    batches the serial path computes, every type's rows equal to plain gathers, and its stats'
    split and disk time cover every type's tier stack."""
    r = rng(29)
    seed, shuffle = int(r.integers(1 << 62)), int(r.integers(1 << 30))
    print(f"sampler seed {seed}, shuffle seed {shuffle}")
    store = tierfs.open(hetero, host_cache=0)
    fanouts = {et: [3, 2] for et in store.edge_types}
    train = store.split("train", node_type="paper")
    piped = list(tierfs.Loader(store, store.sampler(fanouts, seed=seed), train, batch_size=40, seed=shuffle, prefetch=4, node_type="paper"))
    serial = tierfs.Loader(store, store.sampler(fanouts, seed=seed), train, batch_size=40, seed=shuffle, prefetch=1, node_type="paper")
    for b, s in zip(piped, serial.batches(0), strict=True):
        assert same_bits(b.seeds, s.seeds) and same_bits(b.positions, s.positions) and same_bits(b.y, s.y)
        assert list(b.x) == list(s.x) == ["author", "paper"]  # the sample's node types with features
        for t in b.x:
            assert same_bits(b.sample.node[t], s.sample.node[t]) and same_bits(b.x[t], s.x[t])
            assert same_bits(b.x[t], store.gather(b.sample.node[t], node_type=t))
    loader = tierfs.Loader(store, store.sampler(fanouts, seed=seed), train, batch_size=40, seed=shuffle, prefetch=3, node_type="paper")
    before = store.stats()["node_types"]
    for _ in loader:
        pass
    after = store.stats()["node_types"]
    disk = {t: after[t]["disk_seconds"] - before[t]["disk_seconds"] for t in after}
    assert disk["author"] > 0 and disk["paper"] > 0, disk
    stages = loader.stats()["stages"]
    assert abs(stages["disk"]["busy_s"] - sum(disk.values())) < 1e-6, (stages["disk"], disk)
    store.close()


def test_pipeline_records_tensors_in_dicts():
    """A CUDA batch's tensors are recorded on the caller's stream: those in dicts (a
    heterogeneous batch's x and sample) are found too."""
    from tierfs.pipeline import _tensors
    from tierfs.loader import Batch
    from tierfs import Sample

    a, b, c = torch.zeros(2), torch.ones(3), torch.arange(4)
    sample = Sample(node={"paper": c}, row={}, col={}, edge={}, num_sampled_nodes={"paper": [4]}, num_sampled_edges={}, seed_type="paper")
    found = list(_tensors(Batch(seeds=a, sample=sample, x={"paper": b}, y=None)))
    assert {id(t) for t in found} == {id(a), id(b), id(c)}
