"""Link sampling (tfs_sample_from_edges, Sampler.sample_from_edges): the node sample is the one the
sampler draws from the sorted distinct endpoints with the same seed (nothing excluded), the
label edges point at the seed edges and negatives, and bad input names itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tierfs
from conftest import rng


def seed_edges(graph, k, offset=0):
    r = rng(100 + offset)
    e = graph["edges"][:, r.choice(graph["edges"].shape[1], k, replace=False)]
    return e[0].copy(), e[1].copy()


@pytest.mark.parametrize("mode,amount", [(None, 1), ("binary", 1), ("binary", 2.5), ("triplet", 1), ("triplet", 3)])
def test_link_sample_is_the_node_sample_of_its_endpoints(store, graph, mode, amount):
    src, dst = seed_edges(graph, 40)
    fanouts = [5, 3]
    for call in range(2):  # the sampler's second call draws with seed + 1, links and nodes alike
        sp = store.sampler(fanouts, seed=7)
        for _ in range(call):
            sp.sample([0])
        ls = sp.sample_from_edges(src, dst, neg_sampling=mode, amount=amount)
        seeds = ls.nodes[: ls.num_seeds]
        np.testing.assert_array_equal(seeds, np.unique(seeds))  # sorted, distinct
        ref = store.sampler(fanouts, seed=7 + call).sample(seeds)
        for f in ("nodes", "row", "col", "nodes_per_hop", "edges_per_hop", "e_id"):
            np.testing.assert_array_equal(getattr(ls, f), getattr(ref, f), err_msg=f"{f} (call {call})")
        n = len(src)
        if mode == "triplet":
            assert ls.edge_label_index is None and ls.edge_label is None
            np.testing.assert_array_equal(ls.nodes[ls.src_index], src)
            np.testing.assert_array_equal(ls.nodes[ls.dst_pos_index], dst)
            neg = ls.dst_neg_index
            assert neg.shape == ((n,) if amount == 1 else (n, amount))
            assert set(ls.nodes[neg.reshape(-1)]) <= set(seeds)
        else:
            eli = ls.edge_label_index
            num_neg = 0 if mode is None else int(np.ceil(n * amount))
            assert eli.shape == (2, n + num_neg)
            np.testing.assert_array_equal(ls.nodes[eli[0, :n]], src)  # seed edges first, in order
            np.testing.assert_array_equal(ls.nodes[eli[1, :n]], dst)
            assert set(ls.nodes[eli.reshape(-1)]) == set(seeds)
            if mode is None:
                assert ls.edge_label is None
            else:
                assert ls.edge_label.dtype == np.float32
                np.testing.assert_array_equal(ls.edge_label, np.r_[np.ones(n), np.zeros(num_neg)])


def test_link_sample_labels_and_torch(store, graph):
    src, dst = seed_edges(graph, 10)
    sp = store.sampler([4], seed=3)
    lab = torch.arange(10, dtype=torch.int32) % 3
    ls = sp.sample_from_edges(torch.from_numpy(src), torch.from_numpy(dst), labels=lab, neg_sampling="binary", amount=0.5)
    assert isinstance(ls.nodes, torch.Tensor) and isinstance(ls.edge_label, torch.Tensor)
    assert ls.edge_label.dtype == torch.int32
    assert ls.edge_label.tolist() == lab.tolist() + [0] * 5
    f = sp.sample_from_edges(src, dst, labels=np.linspace(0, 1, 10), neg_sampling="binary")
    np.testing.assert_array_equal(f.edge_label, np.r_[np.linspace(0, 1, 10), np.zeros(10)])
    assert sp.sample_from_edges(src, dst, labels=lab).edge_label.tolist() == lab.tolist()


def test_link_sample_is_deterministic_and_strict(store, graph):
    src, dst = seed_edges(graph, 50)
    a = store.sampler([3], seed=11).sample_from_edges(src, dst, neg_sampling="binary", strict=True)
    b = store.sampler([3], seed=11).sample_from_edges(src, dst, neg_sampling="binary", strict=True)
    np.testing.assert_array_equal(a.edge_label_index, b.edge_label_index)
    edges = set(map(tuple, graph["edges"].T.tolist()))
    negs = a.nodes[a.edge_label_index[:, 50:]]
    assert not any((int(u), int(v)) in edges for u, v in negs.T)


def test_exclude_seed_edges(store, graph):
    src, dst = seed_edges(graph, 30)
    ls = store.sampler([-1], seed=1).sample_from_edges(src, dst, exclude_seed_edges=True)
    pairs = set(zip(ls.nodes[ls.row].tolist(), ls.nodes[ls.col].tolist()))
    # edges are (neighbor -> node it was sampled for); a seed edge (src -> dst) is never drawn
    assert not pairs & set(zip(src.tolist(), dst.tolist()))


@pytest.mark.parametrize(
    "kwargs,exc,words",
    [
        (dict(src=[0, 3000], dst=[1, 2]), tierfs.OutOfRangeError, "src[1] = 3000"),
        (dict(src=[0, 1], dst=[1, -4]), tierfs.OutOfRangeError, "dst[1] = -4"),
        (dict(src=[0, 1], dst=[1]), tierfs.InvalidArgumentError, "2 src ids but 1 dst"),
        (dict(src=[0, 1], dst=[1, 2], labels=[1]), tierfs.InvalidArgumentError, "labels: 1 labels for 2 seed edges"),
        (dict(src=[0], dst=[1], neg_sampling="binary", amount=0), tierfs.InvalidArgumentError, "amount (neg_sampling_ratio) = 0"),
        (dict(src=[0], dst=[1], neg_sampling="binary", amount=-1), tierfs.InvalidArgumentError, "amount (neg_sampling_ratio) = -1"),
        (dict(src=[0], dst=[1], neg_sampling="triplet", amount=1.5), tierfs.InvalidArgumentError, "whole number"),
        (dict(src=[0], dst=[1], neg_sampling="pairs"), tierfs.InvalidArgumentError, "neg_sampling = 'pairs'"),
        (dict(src=[0], dst=[1], labels=[1], neg_sampling="triplet"), tierfs.InvalidArgumentError, "labels: triplet"),
    ],
)
def test_link_sample_errors(store, kwargs, exc, words):
    sp = store.sampler([2], seed=0)
    with pytest.raises(exc) as e:
        sp.sample_from_edges(**kwargs)
    assert words in str(e.value)
    assert sp.sample_from_edges([0], [1]).num_seeds == 2  # still usable


def test_node_sample_has_no_label_edges(store):
    from ctypes import byref, c_size_t, c_void_p

    from tierfs._native import lib

    sp = store.sampler([2])
    hs = c_void_p()
    assert lib.tfs_sample(sp._handle, None, np.array([1], dtype=np.int64).ctypes.data, 1, byref(hs)) == 0
    try:
        needed = c_size_t()
        assert lib.tfs_sample_link_json(hs, None, 0, byref(needed)) != 0
        assert "drawn from nodes" in tierfs._native.last_error()
    finally:
        lib.tfs_sample_free(hs)


@pytest.mark.parametrize("mode", [None, "binary", "triplet"])
def test_no_seed_edges(store, mode):
    ls = store.sampler([2]).sample_from_edges(torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long), neg_sampling=mode, amount=2)
    assert ls.nodes.numel() == 0 and ls.num_edges == 0
    if mode == "triplet":
        assert ls.dst_neg_index.shape == (0, 2) and ls.src_index.numel() == 0
    else:
        assert ls.edge_label_index.shape == (2, 0)
        assert (ls.edge_label is None) == (mode is None)


def test_labels_of_several_columns(store):
    lab = np.arange(6, dtype=np.float32).reshape(2, 3)
    ls = store.sampler([2]).sample_from_edges([1, 2], [3, 4], labels=lab, neg_sampling="binary", amount=1.5)
    np.testing.assert_array_equal(ls.edge_label, np.r_[lab, np.zeros((3, 3), np.float32)])


def test_exclude_seed_edges_undirected(store, graph):
    src, dst = seed_edges(graph, 30, offset=1)
    ls = store.sampler([-1, 3], seed=2).sample_from_edges(src, dst, exclude_seed_edges=True, undirected=True)
    pairs = set(zip(ls.nodes[ls.row].tolist(), ls.nodes[ls.col].tolist()))
    seeds = set(zip(src.tolist(), dst.tolist()))
    assert not pairs & (seeds | {(d, s) for s, d in seeds})
    # without exclusion every in-edge of the seed endpoints is drawn (fanout -1), seed edges too
    full = store.sampler([-1, 3], seed=2).sample_from_edges(src, dst)
    assert seeds <= set(zip(full.nodes[full.row].tolist(), full.nodes[full.col].tolist()))
