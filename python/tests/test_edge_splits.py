"""Edge splits (format version 6): seed edges of link prediction ingested from PyG's
RandomLinkSplit outputs, OGB's edge split layout and plain arrays, read back by
store.edge_split / edge_split_negatives exactly as given; bad splits refused, naming the input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import tierfs
from conftest import SEED, rng


def random_edges(r, n, e):
    return r.integers(0, n, size=(2, e), dtype=np.int64)


def test_ingest_edge_splits_pyg_and_ogb_layouts(tmp_path):
    r = rng(71)
    n = int(r.integers(10, 200))
    edges = random_edges(r, n, 4 * n)
    train = r.integers(0, n, size=(2, 30))
    train_label = r.integers(0, 2, size=30).astype(np.float32)
    val_pos, val_neg = r.integers(0, n, size=(12, 2)), r.integers(0, n, size=(5, 2))  # OGB "edge"/"edge_neg"
    test_src, test_dst, test_neg = r.integers(0, n, 9), r.integers(0, n, 9), r.integers(0, n, size=(9, 4))
    out = tierfs.ingest(tmp_path / "ds", edges=edges, features=r.random((n, 3), dtype=np.float32), edge_splits={
        "train": (torch.from_numpy(train), torch.from_numpy(train_label)),
        "valid": {"edge": val_pos, "edge_neg": val_neg},
        "test": {"source_node": test_src, "target_node": test_dst, "target_node_neg": test_neg},
    })
    assert json.load(open(os.path.join(out, "manifest.json")))["version"] == 9
    with tierfs.open(out) as s:
        assert s.edge_splits() == {"train": {"count": 30, "labels": "float32", "neg_per_seed": 0},
                                   "val": {"count": 17, "labels": "float32", "neg_per_seed": 0},
                                   "test": {"count": 9, "neg_per_seed": 4}}, SEED
        index, label = s.edge_split("train")
        assert index.dtype == torch.int64 and torch.equal(index, torch.from_numpy(train)) and torch.equal(label, torch.from_numpy(train_label))
        index, label = s.edge_split("val", edge_type=("node", "to", "node"))
        assert np.array_equal(index.numpy(), np.concatenate([val_pos.T, val_neg.T], axis=1))
        assert np.array_equal(label.numpy(), np.r_[np.ones(12), np.zeros(5)].astype(np.float32))
        index, label = s.edge_split("test", edge_type="node:to:node")
        assert label is None and np.array_equal(index.numpy(), np.stack([test_src, test_dst]))
        assert np.array_equal(s.edge_split_negatives("test").numpy(), test_neg)
        with pytest.raises(KeyError, match=r"no negative destinations"):
            s.edge_split_negatives("train")
        with pytest.raises(KeyError, match=r"no edge split \"holdout\".*\[test train val\]"):
            s.edge_split("holdout")
        with pytest.raises(KeyError, match="a:b:c"):
            s.edge_split("train", edge_type="a:b:c")
    report = tierfs.verify(out)
    assert report["ok"] and report["files"] == len(json.load(open(os.path.join(out, "manifest.json")))["files"]), report


def test_ingest_edge_splits_refused(tmp_path):
    r = rng(72)
    n = 20
    edges = random_edges(r, n, 50)
    cases = [
        ({"train": (np.array([[0, n], [1, 2]]), None)}, "seed edge 1 has source node id 20, outside the 20 nodes", "<edge_splits['train'] seeds>"),
        ({"val": (np.array([[0, 1], [1, 2]]), np.ones(3, np.float32))}, "want one label per seed edge (2,)", "<edge_splits['val'] labels>"),
        ({"test": {"source_node": [0], "target_node": [1], "target_node_neg": [[1, 99]]}}, "negative 1 is node id 99", "<edge_splits['test'] negatives>"),
    ]
    for i, (splits, want, names) in enumerate(cases):
        out = tmp_path / f"out{i}"
        with pytest.raises(ValueError) as e:
            tierfs.ingest(out, edges=edges, num_nodes=n, edge_splits=splits)
        assert want in str(e.value) and names in str(e.value), str(e.value)
        assert not out.exists()
    with pytest.raises(ValueError, match="unknown split 'holdout'"):
        tierfs.ingest(tmp_path / "x", edges=edges, edge_splits={"holdout": np.zeros((2, 1), np.int64)})


def test_from_pyg_random_link_split(tmp_path):
    pytest.importorskip("torch_geometric")
    import torch_geometric.transforms as T
    from torch_geometric.data import Data

    r = rng(73)
    n = int(r.integers(50, 150))
    data = Data(x=torch.from_numpy(r.random((n, 4), dtype=np.float32)), edge_index=torch.from_numpy(random_edges(r, n, 6 * n)), num_nodes=n)
    torch.manual_seed(SEED)
    train, val, test = T.RandomLinkSplit(num_val=0.1, num_test=0.2, add_negative_train_samples=True)(data)
    out = tierfs.from_pyg(train, tmp_path / "ds", val=val, test=test)
    with tierfs.open(out) as s:
        assert s.num_edges() == train.edge_index.shape[1]
        for name, d in (("train", train), ("val", val), ("test", test)):
            index, label = s.edge_split(name)
            assert torch.equal(index, d.edge_label_index), name
            assert label.dtype == d.edge_label.dtype and torch.equal(label, d.edge_label), name


def test_from_pyg_hetero_random_link_split(tmp_path):
    pytest.importorskip("torch_geometric")
    import torch_geometric.transforms as T
    from torch_geometric.data import HeteroData

    r = rng(74)
    nu, ni = int(r.integers(20, 60)), int(r.integers(70, 120))
    data = HeteroData()
    data["user"].x = torch.from_numpy(r.random((nu, 3), dtype=np.float32))
    data["item"].x = torch.from_numpy(r.random((ni, 2), dtype=np.float32))
    data["user", "rates", "item"].edge_index = torch.stack([torch.from_numpy(r.integers(0, nu, 300)), torch.from_numpy(r.integers(0, ni, 300))])
    data = T.ToUndirected()(data)
    torch.manual_seed(SEED)
    split = T.RandomLinkSplit(num_val=0.1, num_test=0.1, edge_types=("user", "rates", "item"), rev_edge_types=("item", "rev_rates", "user"))
    train, val, test = split(data)
    out = tierfs.from_pyg(train, tmp_path / "ds", val=val, test=test)
    with tierfs.open(out) as s:
        for name, d in (("train", train), ("val", val), ("test", test)):
            st = d["user", "rates", "item"]
            index, label = s.edge_split(name, edge_type=("user", "rates", "item"))
            assert torch.equal(index, st.edge_label_index) and torch.equal(label, st.edge_label), name
        assert s.edge_splits(("item", "rev_rates", "user")) == {}


def test_from_graphbolt_link_task(tmp_path):
    r = rng(75)
    n = 40
    gb = tmp_path / "gb"
    gb.mkdir()
    np.save(gb / "edges.npy", random_edges(r, n, 120))
    np.save(gb / "feat.npy", r.random((n, 3), dtype=np.float32))
    train = r.integers(0, n, size=(25, 2))
    train_labels = r.integers(0, 2, 25)
    val = r.integers(0, n, size=(7, 2))
    val_neg = r.integers(0, n, size=(7, 5))
    np.save(gb / "train.npy", train)
    np.save(gb / "train_labels.npy", train_labels)
    np.save(gb / "val.npy", val)
    np.save(gb / "val_neg.npy", val_neg)
    (gb / "metadata.yaml").write_text(f"""dataset_name: link
graph:
  nodes:
    - num: {n}
  edges:
    - format: numpy
      path: edges.npy
feature_data:
  - domain: node
    name: feat
    format: numpy
    path: feat.npy
tasks:
  - name: link_prediction
    train_set:
      - data:
          - name: seeds
            format: numpy
            path: train.npy
          - name: labels
            format: numpy
            path: train_labels.npy
    validation_set:
      - data:
          - name: node_pairs
            format: numpy
            path: val.npy
          - name: negative_dsts
            format: numpy
            path: val_neg.npy
""")
    out = tierfs.from_graphbolt(gb, tmp_path / "ds")
    with tierfs.open(out) as s:
        index, label = s.edge_split("train")
        assert np.array_equal(index.numpy(), train.T) and np.array_equal(label.numpy(), train_labels), SEED
        index, label = s.edge_split("val")
        assert label is None and np.array_equal(index.numpy(), val.T)
        assert np.array_equal(s.edge_split_negatives("val").numpy(), val_neg)
        assert s.split_names == []  # a link task gives no node splits


def test_c_edge_split_copy_checks_its_arguments(tmp_path):
    """tfs_edge_split_copy, called as C would: a count that is not the split's, a NULL split name,
    a labels buffer for a split without labels."""
    from tierfs._native import lib

    out = tierfs.ingest(tmp_path / "ds", edges=random_edges(rng(76), 10, 30), features=np.zeros((10, 2), np.float32),
                        edge_splits={"train": np.array([[0, 1, 2], [3, 4, 5]])})
    with tierfs.open(out) as s:
        h = s._h()
        index = np.zeros((2, 3), np.int64)
        assert lib.tfs_edge_split_copy(h, None, b"train", 2, index.ctypes.data, None, None) == tierfs.errors.EINVAL
        assert "count = 2, but edge split \"train\" has 3 seed edges" in tierfs._native.last_error()
        assert lib.tfs_edge_split_copy(h, None, None, 3, index.ctypes.data, None, None) == tierfs.errors.EINVAL
        assert "split is NULL" in tierfs._native.last_error()
        labels = np.zeros(3, np.int64)
        assert lib.tfs_edge_split_copy(h, None, b"train", 3, None, labels.ctypes.data, None) == tierfs.errors.ENOENT
        assert "has no labels" in tierfs._native.last_error()
        assert lib.tfs_edge_split_copy(h, None, b"train", 3, index.ctypes.data, None, None) == 0
        assert np.array_equal(index, [[0, 1, 2], [3, 4, 5]])


def test_from_pyg_hetero_ogb_edge_splits(tmp_path):
    """A HeteroData with edge_splits in OGB's layout per edge type; a destination id of the
    wrong type's range is refused, naming the split."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import HeteroData

    r = rng(77)
    nu, ni = 5, 30
    data = HeteroData()
    data["user"].x = torch.zeros(nu, 2)
    data["item"].x = torch.zeros(ni, 2)
    data["user", "rates", "item"].edge_index = torch.stack([torch.from_numpy(r.integers(0, nu, 40)), torch.from_numpy(r.integers(0, ni, 40))])
    src, dst, neg = r.integers(0, nu, 6), r.integers(0, ni, 6), r.integers(0, ni, size=(6, 3))
    dst[0] = ni - 1  # not a user id: the bad split below uses it as one
    splits = {("user", "rates", "item"): {"test": {"source_node": src, "target_node": dst, "target_node_neg": neg}}}
    out = tierfs.from_pyg(data, tmp_path / "ds", edge_splits=splits)
    with tierfs.open(out) as s:
        index, label = s.edge_split("test", edge_type="user:rates:item")
        assert label is None and np.array_equal(index.numpy(), np.stack([src, dst]))
        assert np.array_equal(s.edge_split_negatives("test", edge_type=("user", "rates", "item")).numpy(), neg)
    bad = {"user:rates:item": {"valid": {"source_node": dst, "target_node": src}}}  # item ids as users
    with pytest.raises(ValueError, match=r"edge type \"user:rates:item\" edge split \"val\".*outside the 5 nodes"):
        tierfs.from_pyg(data, tmp_path / "bad", edge_splits=bad)
    assert not (tmp_path / "bad").exists()
