"""Heterogeneous link sampling through Python (Sampler.sample_from_edges, tfs_sample_from_edges)
on a random heterogeneous graph (seeded by TIERFS_TEST_SEED, printed in the header), checked
against plain numpy: the seeds of each node type, where the label edges point, that sampled edges
are edges, exclusion of seed edges and their reverses, strict negatives; and the errors."""

import json
import subprocess

import numpy as np
import pytest

import tierfs
from conftest import rng

WRITES, REV, CITES = ("author", "writes", "paper"), ("paper", "rev_writes", "author"), ("paper", "cites", "paper")
ETYPES = [WRITES, REV, CITES]


@pytest.fixture(scope="module")
def hgraph(tmp_path_factory, cli):
    r = rng(401)
    n = {"author": int(r.integers(150, 300)), "paper": int(r.integers(200, 400))}
    writes = np.stack([r.integers(0, n["author"], 1200), r.integers(0, n["paper"], 1200)])
    cites = np.stack([r.integers(0, n["paper"], 1500), r.integers(0, n["paper"], 1500)])
    edges = {WRITES: writes, REV: writes[::-1].copy(), CITES: cites}
    tmp = tmp_path_factory.mktemp("hlink")
    x = {t: r.standard_normal((n[t], 8)).astype(np.float32) for t in n}
    y = r.integers(0, 3, n["paper"])
    node_types = []
    for t in n:
        np.save(tmp / f"{t}_x.npy", x[t])
        nt = {"name": t, "num_nodes": n[t], "features": [{"name": "x", "path": str(tmp / f"{t}_x.npy")}]}
        if t == "paper":
            np.save(tmp / "y.npy", y)
            nt["labels"] = str(tmp / "y.npy")
        node_types.append(nt)
    edge_types = []
    for et, e in edges.items():
        np.save(tmp / ("_".join(et) + ".npy"), e)
        edge_types.append({"src": et[0], "rel": et[1], "dst": et[2], "edges": str(tmp / ("_".join(et) + ".npy"))})
    (tmp / "spec.json").write_text(json.dumps({"node_types": node_types, "edge_types": edge_types}))
    out = tmp / "ds"
    subprocess.run([cli, "ingest", "--spec", str(tmp / "spec.json"), str(out)], check=True, capture_output=True)
    return {"n": n, "edges": edges, "x": x, "y": y, "path": str(out)}


def seed_edges(g, et, k, r):
    """k seed edges of et: half edges of the graph, half random pairs of its node types."""
    e = g["edges"][et]
    pick = e[:, r.integers(0, e.shape[1], k // 2)]
    rand = np.stack([r.integers(0, g["n"][et[0]], k - k // 2), r.integers(0, g["n"][et[2]], k - k // 2)])
    return np.concatenate([pick, rand], axis=1)


def check_link_sample(g, h, et, src, dst, mode, amount, exclude, reverse, strict):
    """The plain facts of a hetero link sample h around seed edges (src, dst) of et."""
    s_t, d_t = et[0], et[2]
    edge_sets = {e: set(zip(v[0].tolist(), v[1].tolist())) for e, v in g["edges"].items()}
    # negatives: of the right types, not edges when strict
    if mode == "binary":
        m = len(src)
        neg_s, neg_d = h.node[s_t][h.edge_label_index[0][m:]], h.node[d_t][h.edge_label_index[1][m:]]
        assert len(neg_s) == int(np.ceil(amount * m))
        assert (neg_s < g["n"][s_t]).all() and (neg_d < g["n"][d_t]).all()
        assert (h.edge_label[m:] == 0).all()
        ends_s, ends_d = np.concatenate([src, neg_s]), np.concatenate([dst, neg_d])
        if strict:
            assert not any((a, b) in edge_sets[et] for a, b in zip(neg_s.tolist(), neg_d.tolist()))
    elif mode == "triplet":
        neg_d = h.node[d_t][np.asarray(h.dst_neg_index).reshape(len(src), -1)]
        assert neg_d.shape == (len(src), amount)
        ends_s, ends_d = src, np.concatenate([dst, neg_d.ravel()])
        if strict:
            assert not any((a, b) in edge_sets[et] for a, row in zip(src.tolist(), neg_d.tolist()) for b in row)
    else:
        ends_s, ends_d = src, dst
    # seeds of each type: the distinct endpoints, ascending (one set when src and dst are one type)
    if s_t == d_t:
        want = {s_t: np.unique(np.concatenate([ends_s, ends_d]))}
    else:
        want = {s_t: np.unique(ends_s), d_t: np.unique(ends_d)}
    for t in g["n"]:
        k = h.num_sampled_nodes[t][0]
        np.testing.assert_array_equal(h.node[t][:k], want.get(t, np.empty(0, np.int64)), err_msg=t)
    # label edges point at the seed edges
    if mode == "triplet":
        np.testing.assert_array_equal(h.node[s_t][h.src_index], src)
        np.testing.assert_array_equal(h.node[d_t][h.dst_pos_index], dst)
    else:
        np.testing.assert_array_equal(h.node[s_t][h.edge_label_index[0][: len(src)]], src)
        np.testing.assert_array_equal(h.node[d_t][h.edge_label_index[1][: len(src)]], dst)
    # sampled edges are edges; excluded ones are absent
    seeds = set(zip(src.tolist(), dst.tolist()))
    for e in ETYPES:
        pairs = list(zip(h.node[e[0]][h.row[e]].tolist(), h.node[e[2]][h.col[e]].tolist()))
        assert all(p in edge_sets[e] for p in pairs), e
        if exclude and e == et:
            assert not any(p in seeds for p in pairs), "a seed edge was sampled"
        if exclude and reverse and e == reverse.get(et):
            assert not any((b, a) in seeds for a, b in pairs), "a reverse of a seed edge was sampled"


@pytest.mark.parametrize(
    "et,mode,amount,exclude,strict",
    [(WRITES, None, 1, False, False), (WRITES, "binary", 1.5, True, True), (WRITES, "triplet", 3, True, False),
     (CITES, "binary", 1, True, False), (CITES, "triplet", 2, False, True), (REV, "triplet", 1, True, True)],
)
def test_hetero_sample_from_edges_matches_plain_facts(hgraph, et, mode, amount, exclude, strict):
    r = rng(402)
    reverse = {WRITES: REV, REV: WRITES, CITES: CITES}
    with tierfs.open(hgraph["path"]) as s:
        seed = int(r.integers(1 << 30))
        fanouts = {e: [int(r.integers(1, 6)), int(r.integers(-1, 4))] for e in ETYPES}
        sp = s.sampler(fanouts, seed=seed)
        for _ in range(3):
            src, dst = seed_edges(hgraph, et, int(r.integers(1, 80)), r)
            h = sp.sample_from_edges(et, src, dst, neg_sampling=mode, amount=amount, strict=strict,
                                     exclude_seed_edges=exclude, reverse_edge_types=reverse if exclude else None)
            assert h.edge_type == et
            check_link_sample(hgraph, h, et, src, dst, mode, amount, exclude, reverse if exclude else None, strict)
        # same seed, same calls: same samples; the edge type as a string is the same type
        again = s.sampler(fanouts, seed=seed + 2).sample_from_edges(":".join(et), src, dst, neg_sampling=mode, amount=amount, strict=strict,
                                                                     exclude_seed_edges=exclude, reverse_edge_types=reverse if exclude else None)
        for t in hgraph["n"]:
            np.testing.assert_array_equal(again.node[t], h.node[t])
        for e in ETYPES:
            np.testing.assert_array_equal(again.row[e], h.row[e])
        torch = pytest.importorskip("torch")
        th = s.sampler(fanouts, seed=seed + 2).sample_from_edges(et, torch.from_numpy(src), torch.from_numpy(dst), neg_sampling=mode, amount=amount,
                                                                 strict=strict, exclude_seed_edges=exclude, reverse_edge_types=reverse if exclude else None)
        assert isinstance(th.node[et[0]], torch.Tensor)
        for k in ("edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"):
            a, b = getattr(th, k), getattr(h, k)
            assert (a is None) == (b is None), k
            if a is not None:
                np.testing.assert_array_equal(a.numpy(), b, err_msg=k)


def test_hetero_link_labels(hgraph):
    with tierfs.open(hgraph["path"]) as s:
        sp = s.sampler({e: [2] for e in ETYPES}, seed=3)
        h = sp.sample_from_edges(WRITES, [0, 1, 2], [3, 4, 5], labels=[2, 0, 1], neg_sampling="binary", amount=2)
        np.testing.assert_array_equal(h.edge_label, [2, 0, 1, 0, 0, 0, 0, 0, 0])
        h = sp.sample_from_edges(WRITES, [0, 1], [3, 4], neg_sampling="binary")
        assert h.edge_label.dtype == np.float32 and h.edge_label.tolist() == [1, 1, 0, 0]
        h = sp.sample_from_edges(WRITES, [0, 1], [3, 4], labels=np.array([0.5, 0.25]))
        np.testing.assert_array_equal(h.edge_label, [0.5, 0.25])


def test_hetero_link_errors_name_the_input(hgraph):
    n = hgraph["n"]
    with tierfs.open(hgraph["path"]) as s:
        sp = s.sampler({e: [2] for e in ETYPES})
        with pytest.raises(KeyError, match='author:reads:book.*nor node type "book"'):
            sp.sample_from_edges(("author", "reads", "book"), [0], [0])
        with pytest.raises(IndexError, match=f'src\\[1\\] = {n["author"]} is out of range \\[0, {n["author"]}\\) of node type "author"'):
            sp.sample_from_edges(WRITES, [0, n["author"]], [0, 1])
        with pytest.raises(IndexError, match=f'dst\\[0\\] = {n["paper"]} .* node type "paper"'):
            sp.sample_from_edges(WRITES, [0], [n["paper"]])
        with pytest.raises(tierfs.InvalidArgumentError, match="2 src ids but 1 dst ids"):
            sp.sample_from_edges(WRITES, [0, 1], [0])
        with pytest.raises(tierfs.InvalidArgumentError, match="labels: 1 labels for 2 seed edges"):
            sp.sample_from_edges(WRITES, [0, 1], [0, 1], labels=[1])
        with pytest.raises(tierfs.InvalidArgumentError, match="triplet negatives take no labels"):
            sp.sample_from_edges(WRITES, [0], [0], labels=[1], neg_sampling="triplet")
        with pytest.raises(tierfs.InvalidArgumentError, match="whole number"):
            sp.sample_from_edges(WRITES, [0], [0], neg_sampling="triplet", amount=1.5)
        with pytest.raises(tierfs.InvalidArgumentError, match='reverse_edge_types\\["author:writes:paper"\\] = "paper:cites:paper"'):
            sp.sample_from_edges(WRITES, [0], [0], exclude_seed_edges=True, reverse_edge_types={WRITES: CITES})
        assert sp.sample_from_edges(WRITES, [0], [0]).num_sampled_nodes["author"][0] == 1  # the sampler is fine after errors


def test_strict_negatives_that_cannot_be_met(tmp_path, cli):
    """Every (a, b) pair is an edge: strict negatives cannot be drawn without repeating positives."""
    np.save(tmp_path / "x.npy", np.zeros((2, 2), np.float32))
    np.save(tmp_path / "e.npy", np.array([[0, 1, 0, 1], [0, 0, 1, 1]]))
    spec = {"node_types": [{"name": "a", "num_nodes": 2, "features": [{"name": "x", "path": str(tmp_path / "x.npy")}]}, {"name": "b", "num_nodes": 2}],
            "edge_types": [{"src": "a", "rel": "r", "dst": "b", "edges": str(tmp_path / "e.npy")}, {"src": "b", "rel": "s", "dst": "a", "edges": str(tmp_path / "e.npy")}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    subprocess.run([cli, "ingest", "--spec", str(tmp_path / "spec.json"), str(tmp_path / "ds")], check=True, capture_output=True)
    with tierfs.open(str(tmp_path / "ds")) as s:
        sp = s.sampler({("a", "r", "b"): [1], ("b", "s", "a"): [1]})
        for mode in ("binary", "triplet"):
            with pytest.raises(tierfs.Error, match='edge type "a:r:b".*no negative'):
                sp.sample_from_edges(("a", "r", "b"), [0], [1], neg_sampling=mode, strict=True)
            sp.sample_from_edges(("a", "r", "b"), [0], [1], neg_sampling=mode, amount=3)  # not strict: drawn as PyG draws
