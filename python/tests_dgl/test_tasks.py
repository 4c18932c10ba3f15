"""tierfs.dgl.Dataset: the dataset's stored node and edge splits as GraphBolt tasks, against
GraphBolt 2.1's own ``OnDiskDataset`` on the same on-disk dataset (a link task of seeds and
labels, of GraphBolt 1.x node pairs and negative destinations, and of typed seeds on a graph of
two node types), the node task of the conftest graph against its raw splits, and the item sets
through a GraphBolt pipeline (``ItemSampler`` + ``EdgePredictionSampler.sample_minibatch``) and
``LinkDataLoader`` over a split name. Seeds are printed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

import dgl.graphbolt as gb
import tierfs
import tierfs.dgl as tdgl

SEED = 2611
N = 60

LINK_YAML = """dataset_name: link
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
    test_set:
      - data:
          - name: seeds
            format: numpy
            path: test.npy
"""

HETERO_YAML = """dataset_name: hetero_link
graph:
  nodes:
    - type: user
      num: {users}
    - type: item
      num: {items}
  edges:
    - type: "user:buys:item"
      format: numpy
      path: buys.npy
    - type: "item:bought_by:user"
      format: numpy
      path: bought_by.npy
feature_data:
  - domain: node
    type: user
    name: feat
    format: numpy
    path: user_feat.npy
  - domain: node
    type: item
    name: feat
    format: numpy
    path: item_feat.npy
tasks:
  - name: link_prediction
    train_set:
      - type: "user:buys:item"
        data:
          - name: seeds
            format: numpy
            path: train.npy
          - name: labels
            format: numpy
            path: train_labels.npy
    test_set:
      - type: "user:buys:item"
        data:
          - name: seeds
            format: numpy
            path: test.npy
"""


def _rng(name):
    print(f"{name}: seed {SEED}")
    return np.random.default_rng(SEED)


def _items(item_set):
    """An item set's arrays by name, from GraphBolt's own slicing (a tensor, or a tuple)."""
    got = item_set[:]
    got = got if isinstance(got, tuple) else (got,)
    return dict(zip(item_set.names, got))


def _graphbolt(root):
    """GraphBolt 2.1's own reading of the dataset at root (in a copy: it writes its
    preprocessed files beside the metadata)."""
    copy = root.parent / (root.name + "-gb")
    shutil.copytree(root, copy)
    return gb.OnDiskDataset(str(copy)).load()


@pytest.fixture(scope="module")
def link(tmp_path_factory):
    r = _rng("link task")
    root = tmp_path_factory.mktemp("gb-link") / "gb"
    root.mkdir()
    edges = r.integers(0, N, (2, 300))
    a = {
        "edges": edges,
        "feat": r.random((N, 4), dtype=np.float32),
        "train": edges[:, :40].T.copy(),
        "train_labels": r.integers(0, 2, 40),
        "val": r.integers(0, N, (9, 2)),
        "val_neg": r.integers(0, N, (9, 3)),
        "test": r.integers(0, N, (11, 2)),
    }
    for k, v in a.items():
        np.save(root / f"{k}.npy", v)
    (root / "metadata.yaml").write_text(LINK_YAML.format(n=N))
    out = tierfs.from_graphbolt(root, root.parent / "ds")
    store = tierfs.open(out)
    yield root, a, store
    store.close()


def test_link_task_against_graphbolt(link):
    root, a, store = link
    ours = tdgl.Dataset(store)
    theirs = _graphbolt(root)
    assert isinstance(ours, gb.Dataset)
    assert [t.metadata["name"] for t in ours.tasks] == ["link_prediction"]
    task, gbt = ours.tasks[0], theirs.tasks[0]
    assert isinstance(task, gb.Task)
    # seeds + labels, and seeds alone: the values GraphBolt reads, named as GraphBolt 2.1 names
    # pairs (node_pairs).
    for attr in ("train_set", "test_set"):
        got, want = _items(getattr(task, attr)), _items(getattr(gbt, attr))
        want = {("node_pairs" if k == "seeds" else k): v for k, v in want.items()}
        assert got.keys() == want.keys(), attr
        for k in want:
            assert torch.equal(got[k], want[k].to(got[k].dtype)), (attr, k)
    # node_pairs + negative_dsts: as GraphBolt 2.1 reads them, items of (pair, negatives)
    # (DGL 2.1.0's test_OnDiskDataset_TVTSet_ItemSet_node_pairs_negs).
    got, want = getattr(task, "validation_set"), getattr(gbt, "validation_set")
    assert got.names == want.names == ("node_pairs", "negative_dsts")
    assert len(got) == len(want) == a["val"].shape[0]
    for i, (pair, negs) in enumerate(got):
        assert pair.tolist() == a["val"][i].tolist() and negs.tolist() == a["val_neg"][i].tolist(), i
    for g, w in zip(_items(got).values(), _items(want).values()):
        assert torch.equal(g, w.to(g.dtype))
    # The rest of the dataset view.
    assert ours.feature.keys() == [("node", None, "feat")]
    assert ours.all_nodes_set[:].tolist() == theirs.all_nodes_set[:].tolist()
    assert ours.graph.total_num_edges == theirs.graph.total_num_edges == a["edges"].shape[1]
    # metadata.yaml's dataset_name, kept by from_graphbolt (not the tierfs directory's, "ds").
    assert ours.dataset_name == theirs.dataset_name == "link"


def test_link_item_sets_through_a_graphbolt_pipeline(link):
    """The train set (node_pairs, labels) batched by GraphBolt's ItemSampler and sampled by
    tierfs without negatives: the minibatch keeps the stored labels, its compacted pairs name
    the same pairs, and node_pairs_with_labels gives them with those labels (GraphBolt 2.1's
    edge classification)."""
    _, a, store = link
    item_set = tdgl.Dataset(store).tasks[0].train_set
    sampler = tdgl.as_edge_prediction_sampler(tdgl.NeighborSampler(store, [3, 3], seed=1))
    pipe = gb.ItemSampler(item_set, batch_size=8).transform(sampler.sample_minibatch)
    items = _items(item_set)
    start = 0
    for mb in pipe:
        m = mb.labels.numel()
        want = items["node_pairs"][start : start + m]
        assert torch.equal(mb.labels, items["labels"][start : start + m])
        nid = mb.sampled_subgraphs[-1].original_column_node_ids
        (src, dst), labels = mb.node_pairs_with_labels
        assert torch.equal(torch.stack([nid[src], nid[dst]], 1), want)
        assert torch.equal(labels, mb.labels)
        start += m
    assert start == items["node_pairs"].shape[0]
    val = tdgl.Dataset(store).tasks[0].validation_set
    with pytest.raises(tierfs.NotSupportedError, match="already has negatives"):
        next(iter(gb.ItemSampler(val, batch_size=4).transform(sampler.sample_minibatch)))


def test_link_data_loader_over_a_split_name(link):
    _, a, store = link
    sampler = tdgl.as_edge_prediction_sampler(tdgl.NeighborSampler(store, [2, 2], seed=3))
    pairs, labels = [], []
    for _, pair_graph, _ in tdgl.LinkDataLoader(store, "train", sampler, batch_size=16, prefetch=False):
        nid = pair_graph.ndata["_ID"]
        s, d = pair_graph.edges()
        pairs.append(torch.stack([nid[s], nid[d]], 1))
        labels.append(pair_graph.edata["label"])
    assert torch.equal(torch.cat(pairs), torch.from_numpy(a["train"]))
    assert torch.equal(torch.cat(labels), torch.from_numpy(a["train_labels"]))
    with pytest.raises(KeyError, match="nope"):
        tdgl.LinkDataLoader(store, "nope", sampler)


def test_hetero_link_task_against_graphbolt(tmp_path):
    r = _rng("hetero link task")
    users, items = 30, 20
    root = tmp_path / "gb"
    root.mkdir()
    buys = np.stack([r.integers(0, users, 150), r.integers(0, items, 150)])
    a = {
        "buys": buys,
        "bought_by": buys[::-1].copy(),
        "user_feat": r.random((users, 3), dtype=np.float32),
        "item_feat": r.random((items, 5), dtype=np.float32),
        "train": buys[:, :25].T.copy(),
        "train_labels": r.integers(0, 2, 25).astype(np.float32),
        "test": np.stack([r.integers(0, users, 6), r.integers(0, items, 6)], 1),
    }
    for k, v in a.items():
        np.save(root / f"{k}.npy", v)
    (root / "metadata.yaml").write_text(HETERO_YAML.format(users=users, items=items))
    with tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")) as ours:
        theirs = _graphbolt(root)
        (task,), (gbt,) = ours.tasks, theirs.tasks
        assert task.metadata["name"] == "link_prediction"
        assert task.validation_set is None and gbt.validation_set is None
        for attr in ("train_set", "test_set"):
            got, want = getattr(task, attr), getattr(gbt, attr)
            assert isinstance(got, gb.ItemSetDict)
            got, want = got[:], want[:]
            assert got.keys() == want.keys() == {"user:buys:item"}, attr
            g, w = got["user:buys:item"], want["user:buys:item"]
            g, w = (g if isinstance(g, tuple) else (g,)), (w if isinstance(w, tuple) else (w,))
            assert len(g) == len(w), attr
            for x, y in zip(g, w):
                assert torch.equal(x, y.to(x.dtype)), attr
        assert sorted(ours.all_nodes_set[:]) == ["item", "user"]


def test_node_task_of_the_stored_splits(graph, store):
    ours = tdgl.Dataset(store)
    # Not from GraphBolt: no dataset_name kept, so the dataset directory's name.
    assert store.types["dataset_name"] is None and ours.dataset_name == "dataset"
    (task,) = ours.tasks
    assert task.metadata == {"name": "node_classification", "num_classes": store.num_classes}
    for split, attr in (("train", "train_set"), ("val", "validation_set"), ("test", "test_set")):
        got = _items(getattr(task, attr))
        ids = getattr(graph, split)
        assert getattr(task, attr).names == ("seed_nodes", "labels")
        assert got["seed_nodes"].tolist() == ids.tolist(), split
        assert got["labels"].tolist() == graph.y[ids].tolist(), split
