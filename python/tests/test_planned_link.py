"""Planned epochs of seed edges (store.plan_epochs(seed_edges=...), link prediction): every
planned batch against the on-demand sampler.sample_from_edges of the same seed edges and sampling
seed (seeds, negatives, subgraph, label edges, feature rows bit for bit), replay, a stored edge
split, the heterogeneous case, and bad inputs naming the input."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tierfs
from tierfs import LinkSample

from conftest import rng
from test_planned_hetero import batch_sample_seed, hetero, same_bits  # noqa: F401 (hetero: the fixture)


def same_link_sample(a, b) -> bool:
    """Two LinkSamples (untyped or typed) hold the same arrays, bit for bit."""
    for name in ("nodes", "row", "col", "nodes_per_hop", "edges_per_hop", "e_id", "node", "edge",
                 "edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"):
        x, y = getattr(a, name, None), getattr(b, name, None)
        if isinstance(x, dict):
            if set(x) != set(y) or any((x[k] is None) != (y[k] is None) or (x[k] is not None and not same_bits(x[k], y[k])) for k in x):
                return False
        elif (x is None) != (y is None) or (x is not None and not same_bits(x, y)):
            return False
    return True


@pytest.mark.parametrize("host_cache,neg,labels", [
    (0, None, "int"), ("64KiB", "binary", None), ("64KiB", "triplet", None), ("256KiB", "binary", "float"), ("64MiB", "binary", "int"),
])
def test_planned_link_epochs_match_on_demand(graph, tmp_path, host_cache, neg, labels):
    r = rng(29)
    seed, shuffle = int(r.integers(1 << 62)), int(r.integers(1 << 30))
    print(f"conftest.rng(29): sampler seed {seed}, shuffle seed {shuffle}")
    store = tierfs.open(graph["path"], host_cache=host_cache)
    n = 700
    edges = np.stack([r.integers(0, graph["n"], n), r.integers(0, graph["n"], n)]).astype(np.int64)
    edge_label = {None: None, "int": r.integers(1, 4, n), "float": r.random(n).astype(np.float32)}[labels]
    amount = {None: 1, "binary": 1.5, "triplet": 2}[neg]
    link = dict(neg_sampling=neg, amount=amount, exclude_seed_edges=neg is not None, strict=neg == "triplet")
    fanouts, k, bs = [4, 3], 2, 96
    plan = store.plan_epochs(fanouts, bs, k, seed_edges=edges, edge_label=edge_label, plan_dir=tmp_path / "plan",
                             seed=seed, shuffle_seed=shuffle, **link)
    assert plan.link and plan.edge_type == ("node", "to", "node") and plan.planned == k
    assert plan.batches_per_epoch == -(-n // bs)
    for e in range(k + 1):
        positions = np.concatenate([plan.seeds(e, b) for b in range(plan.batches_per_epoch)])
        assert np.array_equal(np.sort(positions), np.arange(n))
        for b in range(plan.batches_per_epoch):
            pos, got, x = plan.load(e, b)
            ref = store.sampler(fanouts, seed=batch_sample_seed(seed, e % k, b)).sample_from_edges(
                edges[0, pos], edges[1, pos], labels=None if edge_label is None else edge_label[pos], **link)
            assert isinstance(got, tierfs.LinkSample)
            assert same_link_sample(got, ref), (e, b)
            if neg is not None:
                assert (got.dst_neg_index if neg == "triplet" else got.edge_label_index).size > 0
            assert same_bits(x, store.gather(ref.nodes)) and same_bits(x, graph["x"][ref.nodes]), (e, b)
            if e == k:  # epoch k replays planned epoch 0
                assert same_bits(pos, plan.seeds(0, b))
    assert not same_bits(plan.seeds(0, 0), plan.seeds(1, 0))
    # Every batch's sample was read from the plan's samples files (the replayed epoch too), not drawn.
    assert 0 < plan.report["sample_bytes"] < plan.stats()["sample_bytes_read"]
    if host_cache == "64MiB":
        assert plan.report["rows_packed"] == 0
    else:
        assert plan.stats()["rows"] > 0
    # Reopening with the same inputs reuses the plan; other link options make it anew.
    again = store.plan_epochs(fanouts, bs, k, seed_edges=edges, edge_label=edge_label, plan_dir=tmp_path / "plan",
                              seed=seed, shuffle_seed=shuffle, **link)
    assert again.report is None and same_link_sample(again.sample(1, 0), plan.sample(1, 0))
    again.close()
    with pytest.raises(tierfs.InvalidArgumentError, match="link options"):
        store.plan_epochs(fanouts, bs, k, seed_edges=edges, edge_label=edge_label, plan_dir=tmp_path / "plan", seed=seed,
                          shuffle_seed=shuffle, replan=False, **{**link, "exclude_seed_edges": not link["exclude_seed_edges"]})
    plan.close()
    store.close()


def test_planned_link_epochs_of_an_edge_split(tmp_path):
    r = rng(31)
    n, m = 400, 3000
    print("conftest.rng(31)")
    edges = np.stack([r.integers(0, n, m), r.integers(0, n, m)]).astype(np.int64)
    train = edges[:, :500]
    labels = r.integers(0, 2, 500).astype(np.float32)
    path = tierfs.ingest(tmp_path / "ds", edges=edges, features=r.random((n, 6), dtype=np.float32),
                         edge_splits={"train": (train, labels)})
    store = tierfs.open(path, host_cache="16KiB")
    plan = store.plan_epochs([3, 2], 64, 1, seed_edges="train", neg_sampling="binary", seed=5, plan_dir=tmp_path / "plan")
    index, label = store.edge_split("train")
    for b in range(plan.batches_per_epoch):
        pos, got, x = plan.load(0, b)
        ref = store.sampler([3, 2], seed=batch_sample_seed(5, 0, b)).sample_from_edges(
            index[0, pos].numpy(), index[1, pos].numpy(), labels=label[pos].numpy(), neg_sampling="binary")
        assert same_link_sample(got, ref) and got.edge_label.dtype == np.float32
        assert same_bits(x, store.gather(ref.nodes))
    plan.close()
    # A split of labels other than 1 cannot seed triplets.
    with pytest.raises(tierfs.InvalidArgumentError, match="labels other than 1"):
        store.plan_epochs([3, 2], 64, 1, seed_edges="train", neg_sampling="triplet", plan_dir=tmp_path / "p2")
    with pytest.raises(KeyError, match="holdout"):
        store.plan_epochs([3, 2], 64, 1, seed_edges="holdout", plan_dir=tmp_path / "p3")
    store.close()


def test_planned_link_epochs_hetero(hetero, tmp_path):
    """Seed edges of one edge type of the heterogeneous graph of test_planned_hetero: every planned
    batch against a typed Sampler.sample_from_edges of the batch's seed, rows of every type."""
    path = hetero
    r = rng(37)
    seed = int(r.integers(1 << 62))
    print(f"conftest.rng(37): sampler seed {seed}")
    store = tierfs.open(path, host_cache="16KiB")
    et = ("author", "writes", "paper")
    counts = {t: store.types["node_types"][t]["count"] for t in store.node_types}
    n = 300
    edges = np.stack([r.integers(0, counts["author"], n), r.integers(0, counts["paper"], n)]).astype(np.int64)
    fanouts = {e: [int(r.integers(1, 4)), int(r.integers(0, 3))] for e in store.edge_types}
    rev = {et: ("paper", "written_by", "author")}
    link = dict(neg_sampling="binary", amount=2, exclude_seed_edges=True, reverse_edge_types=rev)
    plan = store.plan_epochs(fanouts, 50, 2, seed_edges=(et, edges), seed=seed, plan_dir=tmp_path / "plan", **link)
    assert plan.hetero and plan.link and plan.edge_type == et and plan.node_types == ["paper", "author"]
    for e in range(3):
        for b in range(plan.batches_per_epoch):
            pos, got, xs = plan.load(e, b)
            ref = store.sampler(fanouts, seed=batch_sample_seed(seed, e % 2, b)).sample_from_edges(et, edges[0, pos], edges[1, pos], **link)
            assert isinstance(got, LinkSample) and got.typed and got.edge_type == et
            assert same_link_sample(got, ref), (e, b)
            for t, x in xs.items():
                assert same_bits(x, store.gather(ref.node[t], node_type=t)), (e, b, t)
    assert 0 < plan.report["sample_bytes"] < plan.stats()["sample_bytes_read"]
    plan.close()
    with pytest.raises(KeyError, match="paper:likes:paper"):
        store.plan_epochs(fanouts, 50, 1, seed_edges=(("paper", "likes", "paper"), edges), plan_dir=tmp_path / "p2")
    with pytest.raises(tierfs.InvalidArgumentError, match="edge type"):
        store.plan_epochs(fanouts, 50, 1, seed_edges=edges, plan_dir=tmp_path / "p3")
    store.close()



def test_corrupt_link_sample_names_file_and_batch(graph, tmp_path):
    """A flipped byte in one batch's stored link sample: serving that batch raises CorruptError
    naming the samples file, the epoch and the batch; the other batches are served."""
    r = rng(53)
    n = 300
    edges = np.stack([r.integers(0, graph["n"], n), r.integers(0, graph["n"], n)]).astype(np.int64)
    store = tierfs.open(graph["path"])
    plan = store.plan_epochs([3, 2], 64, 1, seed_edges=edges, plan_dir=tmp_path / "plan", seed=7, neg_sampling="binary")
    index = json.loads((tmp_path / "plan" / "epochs.json").read_text())
    bad = int(r.integers(plan.batches_per_epoch))
    rec = index["epochs"][0]["sample_records"][bad]
    path = tmp_path / "plan" / "epoch-0000.samples"
    data = bytearray(path.read_bytes())
    at = rec["offset"] + int(r.integers(rec["length"]))
    data[at] ^= 0x40
    path.write_bytes(bytes(data))
    print(f"conftest.rng(53): flipped byte {at} of {path} (batch {bad})")
    for b in range(plan.batches_per_epoch):
        if b != bad:
            plan.sample(1, b)
            continue
        with pytest.raises(tierfs.CorruptError, match=f"epoch 1 batch {b} ") as e:
            plan.sample(1, b)
        assert str(path) in str(e.value)
    plan.close()
    store.close()

def test_link_plan_errors(store, graph, tmp_path):
    n = graph["n"]
    good = np.array([[1, 2, 3], [4, 5, 6]])
    cases = [
        (dict(seed_edges=np.array([[1, n], [2, 3]])), tierfs.OutOfRangeError, rf"src\[1\] = {n} is out of range \[0, {n}\)"),
        (dict(seed_edges=np.array([[1, 2], [-1, 3]])), tierfs.OutOfRangeError, r"dst\[0\] = -1 is out of range"),
        (dict(seed_edges=np.array([1, 2, 3])), tierfs.InvalidArgumentError, r"seed_edges: want a \(2, n\) integer array"),
        (dict(seed_edges=good, edge_label=[1, 2]), tierfs.InvalidArgumentError, "2 labels for 3 seed edges"),
        (dict(seed_edges=(("user", "rates", "item"), good)), tierfs.KeyNotFoundError, r'seed edges of edge type "user:rates:item"'),
        (dict(seed_edges=good, neg_sampling="binary", amount=-1), tierfs.InvalidArgumentError, r"amount \(neg_sampling_ratio\) = -1.0"),
        (dict(seed_edges=good, neg_sampling="triplet", amount=1.5), tierfs.InvalidArgumentError, "whole number"),
        (dict(seed_edges=good, neg_sampling="pairs"), tierfs.InvalidArgumentError, "neg_sampling = 'pairs'"),
        (dict(seed_edges=good, seeds=[1, 2]), tierfs.InvalidArgumentError, "not both"),
        (dict(seed_edges=good, reverse_edge_types={("node", "to", "node"): ("node", "to", "node")}), tierfs.InvalidArgumentError, "undirected=True"),
    ]
    for kwargs, exc, match in cases:
        with pytest.raises(exc, match=match):
            store.plan_epochs([3], 2, 1, plan_dir=tmp_path / "p", **kwargs)


def test_link_plan_negatives_that_cannot_be_met(tmp_path):
    """Strict negatives on a complete graph (every pair an edge): planning fails naming the
    batch and why."""
    n = 5
    src, dst = np.meshgrid(np.arange(n), np.arange(n))
    path = tierfs.ingest(tmp_path / "full", np.stack([src.ravel(), dst.ravel()]), np.zeros((n, 2), np.float32))
    with tierfs.open(path) as store:
        with pytest.raises(tierfs.Error, match=r"planning epoch 0 batch 0.*no negative"):
            store.plan_epochs([2], 2, 1, seed_edges=np.array([[0, 1], [2, 3]]), neg_sampling="binary", strict=True, plan_dir=tmp_path / "p")


def test_c_seed_edges_request_is_checked(store, graph, tmp_path):
    """tfs_epochs_open's seed_edges, called as C would: each bad request names what is wrong."""
    import json
    from ctypes import byref, c_void_p

    from tierfs._native import check, lib

    pairs = np.ascontiguousarray(np.array([1, 2, 3, 4, 5, 6], dtype=np.int64))  # src 1 2 3, dst 4 5 6
    base = {"plan_dir": str(tmp_path / "p"), "fanouts": [2], "batch_size": 2, "epochs": 1, "replan": True}
    for seed_edges, arr, n, exc, match in [
        ({"amount": 0, "neg_sampling": "binary"}, pairs, 3, tierfs.InvalidArgumentError, "seed_edges.amount = 0"),
        ({"undirected": True, "reverse_edge_types": {"a": "a"}}, pairs, 3, tierfs.InvalidArgumentError, "undirected and reverse_edge_types"),
        ({"labels": True}, None, 0, tierfs.InvalidArgumentError, "an edge split brings its own labels"),
        ({"split": "train"}, pairs, 3, tierfs.InvalidArgumentError, "a seeds array both given"),
        ({}, None, 0, tierfs.KeyNotFoundError, "edge split"),
        ({}, None, 3, tierfs.InvalidArgumentError, "seeds is NULL"),
        ({"neg_sampling": "pairs"}, pairs, 3, tierfs.InvalidArgumentError, "negatives"),
        ({"edge_type": "a:b:c"}, pairs, 3, tierfs.KeyNotFoundError, "a:b:c"),
        ({"colour": 1}, pairs, 3, tierfs.InvalidArgumentError, "colour"),
    ]:
        h = c_void_p()
        request = json.dumps({**base, "seed_edges": seed_edges}).encode()
        with pytest.raises(exc, match=match):
            check(lib.tfs_epochs_open(store._h(), request, None if arr is None else arr.ctypes.data, n, byref(h)))
    # The good request plans, and tfs_epochs_seeds refuses a short buffer.
    h = c_void_p()
    check(lib.tfs_epochs_open(store._h(), json.dumps({**base, "seed_edges": {}}).encode(), pairs.ctypes.data, 3, byref(h)))
    try:
        from ctypes import c_int64

        out, n = np.empty(1, dtype=np.int64), c_int64()
        with pytest.raises(tierfs.InvalidArgumentError, match="cap = 1; batch 0 of epoch 0 has 2 seeds"):
            check(lib.tfs_epochs_seeds(h, 0, 0, out.ctypes.data, 1, byref(n)))
    finally:
        lib.tfs_epochs_close(h)
