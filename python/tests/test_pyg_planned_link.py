"""tierfs.pyg.LinkNeighborLoader(planned_epochs=K): every planned batch equals what PyG's
LinkLoader makes, over tierfs's stores, of the same seed edges when the sampler draws with the
batch's seed (same negatives, subgraph, labels, input_id and feature rows, bit for bit), on a
random graph and on the heterogeneous graph of test_planned_hetero; replay; bad arguments."""

from __future__ import annotations

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
    k = 2
    loader = tierfs.pyg.LinkNeighborLoader(store, [4, 3], seed=seed, shuffle=True, shuffle_seed=shuffle, planned_epochs=k,
                                           plan_dir=str(tmp_path / "plan"), prefetch=3, **args)
    assert loader.plan.link and len(loader) == loader.plan.batches_per_epoch == 7
    epochs = [list(loader) for _ in range(k + 1)]
    for e, batches in enumerate(epochs):
        assert len(batches) == len(loader)
        ids = torch.cat([b.input_id for b in batches])
        assert torch.equal(ids.sort().values, torch.arange(400))
        for i, b in enumerate(batches):
            # PyG's LinkLoader over tierfs's stores, its sampler drawing with the batch's seed,
            # makes the same batch of the same seed edges.
            on_demand = tierfs.pyg.LinkNeighborLoader(store, [4, 3], seed=batch_sample_seed(seed, e % k, i), **args)
            ref = on_demand.collate_fn(b.input_id)
            assert_same(b, on_demand.filter_fn(ref), (e, i))
            assert torch.equal(b.x, torch.from_numpy(graph["x"])[b.n_id])
    for b, again in zip(epochs[k], epochs[0]):
        assert_same(b, again, "replay")
    assert not torch.equal(epochs[0][0].input_id, epochs[1][0].input_id)
    st = loader.plan.stats()
    assert st["batches"] == (k + 1) * len(loader)
    # Every batch's sample came from the plan's samples files: the k planned epochs and the replay.
    assert 0 < loader.plan.report["sample_bytes"] < st["sample_bytes_read"] <= 2 * loader.plan.report["sample_bytes"]
    assert loader.stats()["stages"]["gather"]["batches"] == len(loader)  # the latest epoch went through the pipeline
    # planned_batch makes the same batch in the calling thread; breaking out of an epoch stops it.
    assert_same(loader.planned_batch(1, 2), epochs[1][2], "planned_batch")
    for _ in zip(range(2), loader):
        pass
    loader.plan.close()
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
    for e in range(2):
        for i, b in enumerate(loader):
            on_demand = tierfs.pyg.LinkNeighborLoader(store, fanouts, seed=batch_sample_seed(seed, 0, i), **args)
            assert_same(b, on_demand.filter_fn(on_demand.collate_fn(b[et].input_id)), (e, i))
    assert loader.plan.stats()["sample_bytes_read"] == 2 * loader.plan.report["sample_bytes"] > 0  # read, not drawn: two epochs of planned epoch 0
    loader.plan.close()
    store.close()


def test_planned_link_neighbor_loader_arguments(store, graph):
    eli = torch.from_numpy(graph["edges"][:, :50])
    with pytest.raises(tierfs.InvalidArgumentError, match="shuffle=True"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8, planned_epochs=2)
    with pytest.raises(tierfs.InvalidArgumentError, match="planned_epochs -1"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=eli, batch_size=8, shuffle=True, planned_epochs=-1)
    bad = eli.clone()
    bad[1, 3] = graph["n"]
    with pytest.raises(tierfs.OutOfRangeError, match=rf"dst\[3\] = {graph['n']} is out of range"):
        tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=bad, batch_size=8, shuffle=True, planned_epochs=1)
