"""tierfs.pyg.LinkNeighborLoader(planned_epochs=K): every planned batch of every round equals
what PyG's LinkLoader makes, over tierfs's stores, of the same seed edges when the sampler draws
with the batch's seed (same negatives, subgraph, labels, input_id and feature rows, bit for bit),
on a random graph and on the heterogeneous graph of test_planned_hetero; fresh epochs in rounds
planned while training, retired rounds' directories removed; reuse_samples=True replays; bad
arguments."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.sampler import NegativeSampling  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import rng  # noqa: E402
from test_planned_hetero import batch_sample_seed, hetero  # noqa: E402, F401 (hetero: the fixture)

KEYS = ["x", "y", "edge_index", "n_id", "e_id", "num_sampled_nodes", "num_sampled_edges", "input_id",
        "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"]


def assert_same(a, b, where):
    """Two Data / HeteroData batches hold the same attributes, tensors equal bit for bit."""
    sa, sb = (a.stores, b.stores)
    assert len(sa) == len(sb), where
    for x, y in zip(sa, sb):
        assert set(x.keys()) == set(y.keys()), (where, set(x.keys()) ^ set(y.keys()))
        for k in x.keys():
            va, vb = x[k], y[k]
            if isinstance(vb, torch.Tensor):
                assert va.dtype == vb.dtype and va.shape == vb.shape and torch.equal(va, vb), (where, k)
            else:
                assert va == vb, (where, k)


def negatives(batches, neg):
    """The (src, dst) node ids of an epoch's negatives, sorted: binary ones from edge_label_index
    (label 0), triplet ones from dst_neg_index."""
    pairs = []
    for b in batches:
        if neg == "binary":
            neg_cols = b.edge_label == 0
            pairs.append(b.n_id[b.edge_label_index[:, neg_cols]].T)
        else:
            dst = b.n_id[b.dst_neg_index].reshape(len(b.src_index), -1)
            pairs.append(torch.stack([b.n_id[b.src_index].repeat_interleave(dst.shape[1]), dst.reshape(-1)], 1))
    p = torch.cat(pairs)
    return p[torch.argsort(p[:, 0] * (1 << 32) + p[:, 1])]


def wait_planned(loader):
    """Until the loader's next round is planned (the planner thread retires the finished one
    before it)."""
    deadline = time.monotonic() + 60
    while loader.stats()["plans"]["planning"] and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("neg,labels,host_cache", [
    (None, True, 0), ("binary", False, "64KiB"), ("binary", True, "64KiB"), (NegativeSampling("triplet", 2), False, "128KiB"),
])
def test_planned_link_neighbor_loader_matches_on_demand(graph, tmp_path, neg, labels, host_cache):
    r = rng(43)
    seed, shuffle = int(r.integers(1 << 62)), int(r.integers(1 << 30))
    print(f"conftest.rng(43): sampler seed {seed}, shuffle seed {shuffle}")
    store = tierfs.open(graph["path"], host_cache=host_cache)
    pick = r.choice(graph["e"], 400, replace=False)
    eli = torch.from_numpy(graph["edges"][:, pick])
    edge_label = torch.from_numpy(r.integers(0, 3, 400)) if labels else None
    args = dict(edge_label_index=eli, edge_label=edge_label, neg_sampling=neg, batch_size=64, exclude_seed_edges=neg is not None)
    k, root = 2, tmp_path / "plan"
    mode = neg.mode.value if isinstance(neg, NegativeSampling) else neg
    loader = tierfs.pyg.LinkNeighborLoader(store, [4, 3], seed=seed, shuffle=True, shuffle_seed=shuffle, planned_epochs=k,
                                           plan_dir=str(root), prefetch=3, **args)
    assert loader.plan.link and len(loader) == loader.plan.batches_per_epoch == 7
    epochs, served = [], []
    for e in range(2 * k):  # two rounds: epochs 0..3
        epochs.append(list(loader))
        served.append(loader.plan)
        assert loader.plan.first_epoch == e - e % k and loader.plan.planned == k, e
        # Every batch's sample came from the round's samples files, not drawn again: at the
        # round's end all of them were read once.
        read, stored = loader.plan.stats()["sample_bytes_read"], loader.plan.report["sample_bytes"]
        assert (read == stored) if e % k == k - 1 else (0 < read < stored), (e, read, stored)
        if e == k - 1:
            assert_same(loader.planned_batch(1, 2), epochs[1][2], "planned_batch")  # the same batch, in the calling thread
        if e == k:  # round 0 is retired: its plan closed, its directory removed by the planner thread
            wait_planned(loader)
            assert sorted(os.listdir(root)) == [f"epochs-from-{k}", f"epochs-from-{2 * k}"]
            with pytest.raises(tierfs.ClosedError):
                served[0].seeds(0, 0)
    for e, batches in enumerate(epochs):
        assert len(batches) == len(loader)
        ids = torch.cat([b.input_id for b in batches])
        assert torch.equal(ids.sort().values, torch.arange(400))
        for i, b in enumerate(batches):
            # PyG's LinkLoader over tierfs's stores, its sampler drawing with the batch's seed
            # (of epoch e: fresh, not a replay), makes the same batch of the same seed edges.
            on_demand = tierfs.pyg.LinkNeighborLoader(store, [4, 3], seed=batch_sample_seed(seed, e, i), **args)
            ref = on_demand.collate_fn(b.input_id)
            assert_same(b, on_demand.filter_fn(ref), (e, i))
            assert torch.equal(b.x, torch.from_numpy(graph["x"])[b.n_id])
    for e in range(1, 2 * k):  # no epoch replays another's order, negatives or neighbourhoods
        for f in range(e):
            assert not torch.equal(epochs[e][0].input_id, epochs[f][0].input_id), (f, e)
            assert not torch.equal(epochs[e][0].n_id, epochs[f][0].n_id), (f, e)
            if mode is not None:
                assert not torch.equal(negatives(epochs[e], mode), negatives(epochs[f], mode)), (f, e)
    plans = loader.stats()["plans"]
    assert [x["first_epoch"] for x in plans["rounds"]] == [0, k, 2 * k] and plans["rounds"][0]["waited"], plans
    assert loader.stats()["stages"]["gather"]["batches"] == len(loader)  # the latest epoch went through the pipeline
    with pytest.raises(tierfs.InvalidArgumentError, match=r"planned_batch\(0, 2\): the round serving holds epochs 2 to 3"):
        loader.planned_batch(0, 2)
    for _ in zip(range(2), loader):  # breaking out of an epoch stops it
        pass
    loader.close()
    assert os.listdir(root) == []
    with pytest.raises(tierfs.ClosedError, match="LinkNeighborLoader: the loader is closed"):
        iter(loader)
    store.close()


def test_planned_link_neighbor_loader_reuse_samples_replays(graph, tmp_path):
    """reuse_samples=True plans K epochs once, in plan_dir itself (kept), and epoch e replays
    planned epoch e mod K: its order, negatives and neighbourhoods, the batch sampled with
    BatchSampleSeed(seed, e mod K, b)."""
    r = rng(44)
    seed = int(r.integers(1 << 62))
    print(f"conftest.rng(44): sampler seed {seed}")
    store = tierfs.open(graph["path"], host_cache="64KiB")
    eli = torch.from_numpy(graph["edges"][:, r.choice(graph["e"], 300, replace=False)])
    args = dict(edge_label_index=eli, neg_sampling="binary", batch_size=64, exclude_seed_edges=True)
    k, root = 2, tmp_path / "plan"
    loader = tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=seed, shuffle=True, planned_epochs=k, plan_dir=str(root),
                                           reuse_samples=True, **args)
    epochs = [list(loader) for _ in range(2 * k)]
    for e, batches in enumerate(epochs):
        for i, b in enumerate(batches):
            assert_same(b, epochs[e % k][i], ("replay", e, i))
            on_demand = tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=batch_sample_seed(seed, e % k, i), **args)
            assert_same(b, on_demand.filter_fn(on_demand.collate_fn(b.input_id)), (e, i))
    assert not torch.equal(negatives(epochs[0], "binary"), negatives(epochs[1], "binary"))
    assert_same(loader.planned_batch(3, 1), epochs[1][1], "planned_batch of a replayed epoch")
    plans = loader.stats()["plans"]
    assert plans["reuse_samples"] and len(plans["rounds"]) == 1 and not plans["planning"], plans
    assert loader.plan.stats()["sample_bytes_read"] >= 2 * loader.plan.report["sample_bytes"] > 0  # read, not drawn
    loader.close()
    assert os.path.exists(root / "epochs.json")  # kept for a later run, which reuses it
    again = tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=seed, shuffle=True, planned_epochs=k, plan_dir=str(root),
                                          reuse_samples=True, **args)
    assert again.plan.report is None
    assert_same(next(iter(again)), epochs[0][0], "a later run's replay")
    again.close()
    store.close()


def test_planned_link_neighbor_loader_rounds_within_the_disk_budget(graph, tmp_path):
    """plan_disk_budget is split between the two plans on disk: a budget of about three epochs
    plans rounds of one epoch where two were asked for, and epoch e is still planned epoch e."""
    r = rng(45)
    seed = int(r.integers(1 << 62))
    print(f"conftest.rng(45): sampler seed {seed}")
    store = tierfs.open(graph["path"], host_cache="64KiB")
    eli = torch.from_numpy(graph["edges"][:, r.choice(graph["e"], 300, replace=False)])
    args = dict(edge_label_index=eli, neg_sampling="binary", batch_size=64)
    with tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=seed, shuffle=True, planned_epochs=1, **args) as probe:
        one = probe.plan.report["bytes_written"]  # an epoch's plan
    budget = 3 * one  # half of it, a plan's share, holds one epoch and not two
    print(f"an epoch's plan: {one} bytes; plan_disk_budget {budget}")
    loader = tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=seed, shuffle=True, planned_epochs=2, plan_disk_budget=budget,
                                           plan_dir=str(tmp_path / "plan"), **args)
    for e in range(3):
        batches = list(loader)
        assert (loader.plan.first_epoch, loader.plan.planned) == (e, 1), e
        for i in (0, len(batches) - 1):
            on_demand = tierfs.pyg.LinkNeighborLoader(store, [3, 2], seed=batch_sample_seed(seed, e, i), **args)
            assert_same(batches[i], on_demand.filter_fn(on_demand.collate_fn(batches[i].input_id)), (e, i))
    loader.close()
    store.close()


def test_planned_hetero_link_neighbor_loader_matches_on_demand(hetero, tmp_path):
    r = rng(47)
    seed = int(r.integers(1 << 62))
    print(f"conftest.rng(47): sampler seed {seed}")
    store = tierfs.open(hetero, host_cache="16KiB")
    et = ("author", "writes", "paper")
    counts = {t: store.types["node_types"][t]["count"] for t in store.node_types}
    eli = torch.stack([torch.from_numpy(r.integers(0, counts["author"], 200)), torch.from_numpy(r.integers(0, counts["paper"], 200))])
    fanouts = {e: [2, 1] for e in store.edge_types}
    args = dict(edge_label_index=(et, eli), neg_sampling="binary", batch_size=48, exclude_seed_edges=True,
                reverse_edge_types={et: ("paper", "written_by", "author")})
    loader = tierfs.pyg.LinkNeighborLoader(store, fanouts, seed=seed, shuffle=True, planned_epochs=1, plan_dir=str(tmp_path / "plan"), **args)
    assert loader.plan.hetero and loader.plan.edge_type == et
    for e in range(2):  # rounds of one epoch: epoch 1 is round 1's, planned while epoch 0 trained
        for i, b in enumerate(loader):
            on_demand = tierfs.pyg.LinkNeighborLoader(store, fanouts, seed=batch_sample_seed(seed, e, i), **args)
            assert_same(b, on_demand.filter_fn(on_demand.collate_fn(b[et].input_id)), (e, i))
        assert loader.plan.first_epoch == e
        assert loader.plan.stats()["sample_bytes_read"] == loader.plan.report["sample_bytes"] > 0  # read, not drawn
    loader.close()
    store.close()


def test_planned_link_neighbor_loader_arguments(store, graph):
    eli = torch.from_numpy(graph["edges"][:, :50])
    with pytest.raises(tierfs.InvalidArgumentError, match="shuffle=True"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8, planned_epochs=2)
    with pytest.raises(tierfs.InvalidArgumentError, match="planned_epochs -1"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8, shuffle=True, planned_epochs=-1)
    with pytest.raises(tierfs.InvalidArgumentError, match="reuse_samples=True needs planned_epochs"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8, shuffle=True, reuse_samples=True)
    with pytest.raises(tierfs.InvalidArgumentError, match="planned_batch needs planned_epochs"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8).planned_batch(0, 0)
    bad = eli.clone()
    bad[1, 3] = graph["n"]
    with pytest.raises(tierfs.OutOfRangeError, match=rf"dst\[3\] = {graph['n']} is out of range"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=bad, batch_size=8, shuffle=True, planned_epochs=1)
