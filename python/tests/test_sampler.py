"""Sampler guarantees, checked against the CSC rebuilt from the ingest input."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

import tierfs
from conftest import SEED, rng


def neighbors(graph, v):
    ip, ind = graph["indptr"], graph["indices"]
    return ind[ip[v] : ip[v + 1]]


def check_sample(graph, seeds, s, fanouts, replace):
    """Every structural promise of tierfs.Sample, against the reference CSC."""
    n_seeds = len(seeds)
    nodes, row, col = s.nodes, s.row, s.col
    nph, eph = s.nodes_per_hop, s.edges_per_hop
    assert len(nph) == len(fanouts) + 1 and len(eph) == len(fanouts)
    assert nph[0] == n_seeds and nph.sum() == len(nodes) and eph.sum() == len(row) == len(col)
    np.testing.assert_array_equal(nodes[:n_seeds], seeds)  # seeds first, as given
    # nodes beyond the seeds are new: first reached, never repeated, never a seed
    rest = nodes[n_seeds:]
    assert len(np.unique(rest)) == len(rest)
    assert not np.isin(rest, seeds).any()
    # hop h: targets are the nodes first reached at hop h-1 (for hop 0, a seed's first position)
    first_pos = {}
    for i, v in enumerate(seeds):
        first_pos.setdefault(int(v), i)
    node_start = np.concatenate([[0], np.cumsum(nph)])
    edge_start = np.concatenate([[0], np.cumsum(eph)])
    for h, fanout in enumerate(fanouts):
        r = row[edge_start[h] : edge_start[h + 1]]
        c = col[edge_start[h] : edge_start[h + 1]]
        if h == 0:
            allowed_targets = set(first_pos.values())
        else:
            allowed_targets = set(range(node_start[h], node_start[h + 1]))
        assert set(c.tolist()) <= allowed_targets
        assert (r < node_start[h + 2]).all()  # sources within the prefix of hops 0..h
        # every edge exists, the fanout holds, and without replacement no position repeats
        by_target = {}
        for rr, cc in zip(r.tolist(), c.tolist()):
            by_target.setdefault(cc, []).append(int(nodes[rr]))
        for cc in allowed_targets:
            got = by_target.get(cc, [])
            nb = neighbors(graph, int(nodes[cc]))
            deg = len(nb)
            if fanout < 0:
                want = deg
            elif replace:
                want = fanout if deg > 0 else 0
            else:
                want = min(deg, fanout)
            assert len(got) == want, f"hop {h} node {nodes[cc]}: {len(got)} neighbors, want {want} (deg {deg}); seed {SEED}"
            have = Counter(nb.tolist())
            if replace:
                assert set(got) <= set(have), f"node {nodes[cc]}: sampled a non-neighbor; seed {SEED}"
            else:
                assert not (Counter(got) - have), f"node {nodes[cc]}: {got} is not a sub-multiset of {sorted(have)}; seed {SEED}"


@pytest.mark.parametrize("fanouts,replace", [([5, 3], False), ([4, 4, 2], True), ([-1], False), ([2, 0, 3], False)])
def test_sample_guarantees(store, graph, fanouts, replace):
    r = rng(700)
    sampler = store.sampler(fanouts, replace=replace, seed=11)
    for _ in range(5):
        seeds = r.integers(0, graph["n"], 64)  # duplicates allowed
        seeds[3] = seeds[1]
        s = sampler.sample(seeds)
        check_sample(graph, seeds, s, fanouts, replace)


def test_sample_of_high_degree_nodes(store, graph):
    deg = np.diff(graph["indptr"])
    hubs = np.argsort(-deg)[:8]
    assert deg[hubs[0]] > 20
    s = store.sampler([10, 5], seed=3).sample(hubs)
    check_sample(graph, hubs, s, [10, 5], False)


def test_determinism(store):
    seeds = [np.arange(0, 100), np.arange(50, 90), np.arange(2000, 2100)]
    a, b = store.sampler([5, 5], seed=42), store.sampler([5, 5], seed=42, workers=1)
    for s in seeds:
        x, y = a.sample(s), b.sample(s)
        for f in ("nodes", "row", "col", "nodes_per_hop", "edges_per_hop"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
    # another seed differs; the same sampler differs across calls (seed + call number)
    c = store.sampler([5, 5], seed=43)
    assert not np.array_equal(c.sample(seeds[0]).row, store.sampler([5, 5], seed=42).sample(seeds[0]).row)
    d = store.sampler([5, 5], seed=42)
    first, second = d.sample(seeds[0]), d.sample(seeds[0])
    assert not np.array_equal(first.nodes, second.nodes) or not np.array_equal(first.row, second.row)


def test_torch_seeds_give_torch(store):
    s = store.sampler([3, 2]).sample(torch.arange(20))
    for f in ("nodes", "row", "col", "nodes_per_hop", "edges_per_hop"):
        t = getattr(s, f)
        assert isinstance(t, torch.Tensor) and t.dtype == torch.int64
    assert s.edge_index.shape == (2, s.num_edges)
    assert s.num_seeds == 20 and s.num_hops == 2


def test_empty_seeds(store):
    s = store.sampler([3, 2]).sample([])
    assert s.num_nodes == 0 and s.num_edges == 0
    assert s.nodes_per_hop.tolist() == [0, 0, 0]


def test_csc_matches_input(store, graph):
    indptr, indices = store.csc(chunk_size=701)  # several chunks
    np.testing.assert_array_equal(indptr, graph["indptr"])
    assert store.num_edges() == graph["e"]
    for v in rng(701).integers(0, graph["n"], 300):
        np.testing.assert_array_equal(np.sort(indices[indptr[v] : indptr[v + 1]]), neighbors(graph, v))


def test_sampler_errors(store, graph):
    with pytest.raises(ValueError) as e:
        store.sampler([-2])
    assert isinstance(e.value, tierfs.Error)
    sm = store.sampler([2])
    with pytest.raises(IndexError) as e:
        sm.sample([0, graph["n"]])
    assert isinstance(e.value, tierfs.OutOfRangeError) and str(graph["n"]) in str(e.value)
    sm.close()
    with pytest.raises(tierfs.ClosedError):
        sm.sample([0])
    sm.close()  # twice is fine


def test_sampler_seeds_each_call(store, graph):
    """Call k of a sampler uses seed + k (the core's rule); a failed call does not count."""
    seeds = np.arange(0, 200, 3)
    a, b = store.sampler([4, 3], seed=9), store.sampler([4, 3], seed=10)
    first = a.sample(seeds)
    with pytest.raises(IndexError):
        a.sample([graph["n"]])
    second = a.sample(seeds)
    np.testing.assert_array_equal(second.nodes, b.sample(seeds).nodes)
    assert not np.array_equal(first.nodes, second.nodes)
    zero = store.sampler([]).sample(seeds)  # zero hops, as PyG's num_neighbors=[]: the seeds alone
    np.testing.assert_array_equal(zero.nodes, seeds)
    assert zero.num_edges == 0


def test_sampler_pickles(store):
    import pickle

    a = store.sampler([4, 2], seed=5)
    b = pickle.loads(pickle.dumps(a))
    try:
        assert b.fanouts == [4, 2] and b.seed == 5
        np.testing.assert_array_equal(a.sample(np.arange(30)).nodes, b.sample(np.arange(30)).nodes)
    finally:
        b.store.close()


@pytest.mark.parametrize("replace", [False, True])
def test_list_and_one_entry_dict_fanouts_sample_alike(store, replace):
    """One sampler: a fanout list (the only edge type) and the equivalent one-entry dict draw the
    same samples, node and link, call after call; the list's are untyped (the only type's arrays
    as attributes), the dict's typed (dicts by type), the arrays bit for bit the same."""
    r = rng(41)
    seed = int(r.integers(1 << 62))
    print(f"conftest.rng(41): sampler seed {seed}")
    (et,) = store.edge_types
    (nt,) = store.node_types
    flat = store.sampler([4, -1], replace=replace, seed=seed)
    typed = store.sampler({et: [4, -1]}, replace=replace, seed=seed)
    assert not flat.typed and typed.typed and flat.num_neighbors == typed.num_neighbors
    for k in range(3):
        seeds = r.integers(0, store.num_nodes(), size=int(r.integers(1, 200)))
        a, b = flat.sample(seeds), typed.sample(seeds, nt)
        assert not a.typed and b.typed
        assert a.node.keys() == b.node.keys() == {nt} and a.rows.keys() == b.rows.keys() == {tuple(et)}
        for name in ("node", "rows", "cols", "edge"):
            for key, arr in getattr(a, name).items():
                np.testing.assert_array_equal(arr, getattr(b, name)[key], err_msg=f"call {k}: {name}[{key}]")
        assert a.num_sampled_nodes == b.num_sampled_nodes and a.num_sampled_edges == b.num_sampled_edges
        np.testing.assert_array_equal(a.nodes, b.node[nt])
        np.testing.assert_array_equal(a.row, b.row[tuple(et)])
        np.testing.assert_array_equal(a.e_id, b.edge[tuple(et)])
        np.testing.assert_array_equal(a.nodes_per_hop, b.num_sampled_nodes[nt])
        assert a.num_seeds == b.num_seeds == len(seeds)
        src, dst = r.integers(0, store.num_nodes(), size=(2, 32))
        la = flat.sample_from_edges(src, dst, neg_sampling="binary", amount=1.5)
        lb = typed.sample_from_edges(et, src, dst, neg_sampling="binary", amount=1.5)
        np.testing.assert_array_equal(la.nodes, lb.node[nt])
        np.testing.assert_array_equal(la.col, lb.col[tuple(et)])
        np.testing.assert_array_equal(la.edge_label_index, lb.edge_label_index)
        np.testing.assert_array_equal(la.edge_label, lb.edge_label)
