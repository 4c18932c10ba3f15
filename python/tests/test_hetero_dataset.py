"""tierfs.datasets.acm: the shipped heterogeneous ACM graph (tierfs/data/acm.npz)."""

from __future__ import annotations

import numpy as np
import pytest

import tierfs.datasets

NUM_NODES = {"paper": 4019, "author": 7167, "subject": 60}
NUM_EDGES = {
    ("paper", "to", "author"): 13407,
    ("author", "to", "paper"): 13407,
    ("paper", "to", "subject"): 4019,
    ("subject", "to", "paper"): 4019,
}
DIM = 1902


@pytest.fixture(scope="module")
def acm():
    return tierfs.datasets.acm()


def test_acm_layout(acm):
    assert set(acm) == set(NUM_NODES) | set(NUM_EDGES)
    for t, n in NUM_NODES.items():
        assert acm[t]["num_nodes"] == n
        assert acm[t]["x"].shape == (n, DIM) and acm[t]["x"].dtype == np.float32
    p = acm["paper"]
    assert set(np.unique(p["x"])) == {0.0, 1.0}  # binary bag of keywords
    assert p["x"].sum(1).min() >= 1  # no paper without a keyword
    assert p["y"].dtype == np.int64 and p["y"].shape == (4019,)
    assert np.bincount(p["y"]).tolist() == [1993, 965, 1061]


def test_acm_edges(acm):
    for (src, rel, dst), n in NUM_EDGES.items():
        ei = acm[(src, rel, dst)]
        assert ei.dtype == np.int64 and ei.shape == (2, n)
        assert ei.min() >= 0
        assert ei[0].max() < NUM_NODES[src] and ei[1].max() < NUM_NODES[dst]
        key = ei[0] * NUM_NODES[dst] + ei[1]
        assert np.all(np.diff(key) > 0)  # sorted by (src, dst), no duplicates
    fwd = acm[("paper", "to", "author")]
    rev = acm[("author", "to", "paper")]
    assert set(zip(*fwd.tolist())) == set(zip(*rev[::-1].tolist()))
    ps = acm[("paper", "to", "subject")]
    np.testing.assert_array_equal(ps[0], np.arange(4019))  # one subject per paper
    for t in ("author", "subject"):  # every author and subject has a paper
        assert len(np.unique(acm[("paper", "to", t)][1])) == NUM_NODES[t]


def test_acm_derived_features(acm):
    x = acm["paper"]["x"]
    for t in ("author", "subject"):
        src, dst = acm[("paper", "to", t)]
        ref = np.zeros((NUM_NODES[t], DIM))
        np.add.at(ref, dst, x[src])
        ref /= np.bincount(dst, minlength=NUM_NODES[t])[:, None]
        np.testing.assert_allclose(acm[t]["x"], ref, rtol=1e-6)
    bare = tierfs.datasets.acm(derived_x=False)
    assert "x" not in bare["author"] and "x" not in bare["subject"]
    np.testing.assert_array_equal(bare["paper"]["x"], x)


@pytest.mark.parametrize("split", [20, 40, 60])
def test_acm_splits(split):
    p = tierfs.datasets.acm(split=split)["paper"]
    sizes = {"train": 3 * split, "val": 1000, "test": 1000}
    for name, size in sizes.items():
        ids, mask = p[name], p[f"{name}_mask"]
        assert ids.dtype == np.int64 and len(ids) == size and np.all(np.diff(ids) > 0)
        np.testing.assert_array_equal(np.flatnonzero(mask), ids)
    assert np.bincount(p["y"][p["train"]]).tolist() == [split] * 3
    assert not (p["train_mask"] & p["val_mask"]).any()
    assert not (p["train_mask"] & p["test_mask"]).any()
    assert not (p["val_mask"] & p["test_mask"]).any()


def test_acm_bad_split():
    with pytest.raises(ValueError, match="split"):
        tierfs.datasets.acm(split=30)


def test_acm_as_pyg(acm):
    pytest.importorskip("torch_geometric")
    data = tierfs.datasets.acm(as_pyg=True)
    assert data.validate()
    assert set(data.node_types) == set(NUM_NODES)
    assert set(data.edge_types) == set(NUM_EDGES)
    for t, n in NUM_NODES.items():
        assert data[t].num_nodes == n
        np.testing.assert_array_equal(data[t].x.numpy(), acm[t]["x"])
    for et in NUM_EDGES:
        np.testing.assert_array_equal(data[et].edge_index.numpy(), acm[et])
    p = data["paper"]
    np.testing.assert_array_equal(p.y.numpy(), acm["paper"]["y"])
    for name in ("train", "val", "test"):
        np.testing.assert_array_equal(getattr(p, f"{name}_mask").numpy(), acm["paper"][f"{name}_mask"])
