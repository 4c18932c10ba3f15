"""DGL 2.1.0's own GraphBolt tests and examples, carried over to tierfs: each test names its
source (tests/python/pytorch/graphbolt/... or examples/... at tag v2.1.0) and runs GraphBolt's
own OnDiskDataset on the same on-disk dataset beside tierfs's as the control. Seeds are printed."""

from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dgl.graphbolt as gb
import dgl.nn as dglnn
import tierfs
import tierfs.dgl as tdgl

SEED = int(os.environ.get("TIERFS_TEST_SEED") or random.randrange(1 << 31))
N, E = 90, 600


def _dataset(root, tasks_yaml: str, arrays: dict, features_yaml: str = "", graph_yaml: str = ""):
    """A GraphBolt dataset in root: a graph of N nodes and E random edges (graph_yaml: more of its
    section), node feature feat (N, 4), the arrays saved as <name>.npy, metadata.yaml of the
    graph, feature_data (feat, then features_yaml) and tasks_yaml. Returns (tierfs's Dataset of from_graphbolt, GraphBolt 2.1's
    OnDiskDataset of a copy, the arrays with edges and feat)."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    arrays = {"edges": r.integers(0, N, (2, E)), "feat": r.standard_normal((N, 4)).astype(np.float32), **arrays}
    root.mkdir(parents=True)
    for k, v in arrays.items():
        np.save(root / f"{k}.npy", v)
    (root / "metadata.yaml").write_text(
        f"""dataset_name: conformance
graph:
  nodes:
    - num: {N}
  edges:
    - format: numpy
      path: edges.npy
{graph_yaml}feature_data:
  - domain: node
    name: feat
    format: numpy
    path: feat.npy
{features_yaml}tasks:
{tasks_yaml}"""
    )
    copy = root.parent / (root.name + "-gb")
    shutil.copytree(root, copy)
    theirs = gb.OnDiskDataset(str(copy)).load()
    ours = tdgl.Dataset(tierfs.from_graphbolt(root, root.parent / (root.name + "-ds")))
    return ours, theirs, arrays


def _column(path, name=None):
    named = f"name: {name}\n          " if name else ""
    return f"        - {named}format: numpy\n          path: {path}\n"


def _set(*columns):
    return "      - data:\n" + "".join(columns)


# --------------------------------------------------------------------------------------------
# Item sets: GraphBolt 2.1's names, unnamed columns


def test_itemset_names_with_an_unnamed_column(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_TVTSet_ItemSet_names: a train set of
    seed_nodes, labels and an unnamed column. GraphBolt names it ("seed_nodes", "labels", None);
    tierfs reads the named columns (an unnamed column after the first is not stored)."""
    r = np.random.default_rng(SEED)
    ids = r.permutation(N)[:50]
    tasks = "  - name: node_classification\n    num_classes: 10\n    train_set:\n" + _set(
        _column("train_ids.npy", "seed_nodes"), _column("train_labels.npy", "labels"), _column("train_labels.npy")
    )
    ours, theirs, a = _dataset(tmp_path / "gb", tasks, {"train_ids": ids, "train_labels": r.integers(0, 10, 50)})
    want = theirs.tasks[0].train_set
    assert want.names == ("seed_nodes", "labels", None)
    got = ours.tasks[0].train_set
    assert isinstance(got, gb.ItemSet) and len(got) == len(want) == 50
    assert got.names == ("seed_nodes", "labels")
    for i, ((gid, glabel), (wid, wlabel, _)) in enumerate(zip(got, want)):
        assert gid == wid == a["train_ids"][i] and glabel == wlabel == a["train_labels"][i], i
    assert ours.tasks[0].validation_set is None and ours.tasks[0].test_set is None


def test_itemset_of_one_unnamed_column(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_TVTSet_ItemSet_id_label, Case 2: a train set of
    one unnamed column; the other sets None."""
    ids = np.random.default_rng(SEED).permutation(N)[:30]
    tasks = "  - name: node_classification\n    train_set:\n" + _set(_column("train_ids.npy"))
    ours, theirs, _ = _dataset(tmp_path / "gb", tasks, {"train_ids": ids})
    for ds in (ours, theirs):
        task = ds.tasks[0]
        assert task.train_set is not None and task.validation_set is None and task.test_set is None
    assert theirs.tasks[0].train_set.names == (None,)
    assert ours.tasks[0].train_set.names == ("seed_nodes",)
    assert [int(i) for i in ours.tasks[0].train_set] == [int(i) for i in theirs.tasks[0].train_set] == ids.tolist()


@pytest.mark.parametrize("second", ["labels", "negative_dsts"])
def test_itemset_node_pairs(tmp_path, second):
    """test_ondisk_dataset.py::test_OnDiskDataset_TVTSet_ItemSet_node_pairs_labels and
    ::test_OnDiskDataset_TVTSet_ItemSet_node_pairs_negs: every set of node_pairs with labels, or
    with negative_dsts (items (pair, negatives), not flattened), named and valued as GraphBolt's."""
    r = np.random.default_rng(SEED)
    arrays, tasks = {}, "  - name: link_prediction\n"
    for i, key in enumerate(("train_set", "validation_set", "test_set")):
        arrays[f"{key}_pairs"] = r.integers(0, N, (20 + i, 2))
        arrays[f"{key}_second"] = r.integers(0, 2, 20 + i) if second == "labels" else r.integers(0, N, (20 + i, 5))
        tasks += f"    {key}:\n" + _set(_column(f"{key}_pairs.npy", "node_pairs"), _column(f"{key}_second.npy", second))
    ours, theirs, a = _dataset(tmp_path / "gb", tasks, arrays)
    for key in ("train_set", "validation_set", "test_set"):
        got, want = getattr(ours.tasks[0], key), getattr(theirs.tasks[0], key)
        assert isinstance(got, gb.ItemSet)
        assert got.names == want.names == ("node_pairs", second), key
        assert len(got) == len(want) == len(a[f"{key}_pairs"])
        for i, ((gp, gs), (wp, ws)) in enumerate(zip(got, want)):
            assert gp.tolist() == wp.tolist() == a[f"{key}_pairs"][i].tolist(), (key, i)
            assert torch.equal(torch.as_tensor(gs), torch.as_tensor(ws).to(torch.as_tensor(gs).dtype)), (key, i)
            assert torch.as_tensor(gs).tolist() == a[f"{key}_second"][i].tolist(), (key, i)


# --------------------------------------------------------------------------------------------
# examples/sampling/graphbolt/link_prediction.py (v2.1.0): its train loop on tierfs


class _SAGE(torch.nn.Module):
    """The example's model: SAGEConv layers and an MLP predictor of pair scores."""

    def __init__(self, in_size, hidden):
        super().__init__()
        self.layers = torch.nn.ModuleList([dglnn.SAGEConv(in_size, hidden, "mean"), dglnn.SAGEConv(hidden, hidden, "mean")])
        self.predictor = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def forward(self, blocks, x):
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, x)
            if i != len(self.layers) - 1:
                x = F.relu(x)
        return x


def _global(mb, pairs):
    """Compacted (src, dst) of mb as global node ids."""
    nid = mb.sampled_subgraphs[-1].original_column_node_ids
    return nid[pairs[0].reshape(-1)], nid[pairs[1].reshape(-1)]


def test_link_prediction_example_trains_on_tierfs(tmp_path):
    """The example's train(): ItemSampler(train_set of node_pairs) -> negatives -> neighbors ->
    exclude seed edges -> fetch_feature(["feat"]) -> data.node_pairs_with_labels, blocks and
    node_features. tierfs's stage (as_edge_prediction_sampler with Uniform(1), exclude
    "reverse_id") in place of GraphBolt's three, on the same minibatches as GraphBolt's own
    pipeline (the control): the same positive pairs, negatives of the same sources, labels 1
    then 0 as float, features the raw rows; the model's loss is finite and backpropagates."""
    r = np.random.default_rng(SEED)
    tasks = "  - name: link_prediction\n    train_set:\n" + _set(_column("train_pairs.npy", "node_pairs"))
    edges = r.integers(0, N, (2, E))
    pairs = edges[:, r.choice(E, 40, replace=False)].T.copy()
    ours, theirs, a = _dataset(tmp_path / "gb", tasks, {"edges": edges, "train_pairs": pairs})
    train_set = ours.tasks[0].train_set
    assert train_set.names == theirs.tasks[0].train_set.names == ("node_pairs",)

    sampler = tdgl.as_edge_prediction_sampler(
        tdgl.NeighborSampler(ours.store, [3, 3], seed=SEED % 1000), exclude="reverse_id", negative_sampler=1
    )
    ours_pipe = gb.ItemSampler(train_set, batch_size=16).transform(sampler.sample_minibatch)
    ours_pipe = ours_pipe.fetch_feature(ours.feature, node_feature_keys=["feat"])
    theirs_pipe = gb.ItemSampler(theirs.tasks[0].train_set, batch_size=16).sample_uniform_negative(theirs.graph, 1)
    theirs_pipe = theirs_pipe.sample_neighbor(theirs.graph, [3, 3]).fetch_feature(theirs.feature, node_feature_keys=["feat"])
    model = _SAGE(4, 8)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    seen = 0
    for data, control in zip(gb.DataLoader(ours_pipe), gb.DataLoader(theirs_pipe)):
        compacted_pairs, labels = data.node_pairs_with_labels
        want_pairs, want_labels = control.node_pairs_with_labels
        n = data.node_pairs[0].numel()
        assert labels.dtype == want_labels.dtype == torch.float32
        assert torch.equal(labels, want_labels) and labels.tolist() == [1.0] * n + [0.0] * n
        (gs, gd), (ws, wd) = _global(data, compacted_pairs), _global(control, want_pairs)
        assert torch.equal(gs, ws) and torch.equal(gd[:n], wd[:n])
        assert torch.equal(torch.stack([gs[:n], gd[:n]], 1), torch.from_numpy(pairs[seen : seen + n]))
        assert ((gd[n:] >= 0) & (gd[n:] < N)).all()
        x = data.node_features["feat"]
        np.testing.assert_array_equal(x.numpy(), a["feat"][data.input_nodes.numpy()])
        y = model(data.blocks, x)
        logits = model.predictor(y[compacted_pairs[0]] * y[compacted_pairs[1]]).squeeze()
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        assert torch.isfinite(loss) and any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
        opt.step()
        seen += n
    assert seen == len(pairs)


# --------------------------------------------------------------------------------------------
# GraphBolt's standard metadata.yaml: a feature in the graph section and the feature list


@pytest.mark.parametrize(
    "edge_name",
    [
        "w",
        "feat",
    ],
)
def test_feature_in_graph_section_and_feature_list(tmp_path, edge_name):
    """The layout of gb_test_utils.py::random_homo_graphbolt_graph (test_ondisk_dataset.py's
    preprocess and load tests): node feature feat and an edge feature listed in
    graph.feature_data (GraphBolt's sampling-graph attributes) and again, type null, in the
    top-level feature_data (its feature store), a link task with num_classes. from_graphbolt
    takes each feature once; the feature store reads what GraphBolt's reads, and the sampling
    graph has the graph section's attributes. GraphBolt's own
    layout names the edge feature feat too, as the node feature."""
    r = np.random.default_rng(SEED)
    w = r.standard_normal((E, 2)).astype(np.float32)
    entry = "{i}- domain: {d}\n{i}  type: null\n{i}  name: {n}\n{i}  format: numpy\n{i}  path: {p}\n"
    graph = "  feature_data:\n" + entry.format(i="    ", d="node", n="feat", p="feat.npy") + entry.format(i="    ", d="edge", n=edge_name, p="w.npy")
    tasks = "  - name: link_prediction\n    num_classes: 3\n    train_set:\n" + _set(_column("train.npy", "node_pairs"))
    ours, theirs, a = _dataset(tmp_path / "gb", tasks, {"w": w, "train": r.integers(0, N, (10, 2))},
                               features_yaml=entry.format(i="  ", d="edge", n=edge_name, p="w.npy"), graph_yaml=graph)
    assert sorted(ours.feature.keys(), key=str) == sorted(((str(d.value), t, n) for d, t, n in theirs.feature.keys()), key=str)
    ids, eids = torch.from_numpy(r.integers(0, N, 30)), torch.from_numpy(r.integers(0, E, 30))
    assert torch.equal(ours.feature.read("node", None, "feat", ids), theirs.feature.read("node", None, "feat", ids))
    assert torch.equal(ours.feature.read("edge", None, edge_name, eids), theirs.feature.read("edge", None, edge_name, eids))
    assert torch.equal(ours.feature.read("edge", None, edge_name, eids), torch.from_numpy(w)[eids])
    # The graph section's features are the sampling graph's attributes (ondisk_dataset.py's
    # preprocess at v2.1.0): node attributes as GraphBolt's; edge attributes in the graph's edge
    # order (ORIGINAL_EDGE_ID maps it to the input's), where GraphBolt 2.1 keeps the input's.
    graph, graph2 = ours.graph, theirs.graph
    assert graph.node_attributes.keys() == graph2.node_attributes.keys() == {"feat"}
    assert torch.equal(graph.node_attributes["feat"], graph2.node_attributes["feat"])
    assert torch.equal(graph.node_attributes["feat"], torch.from_numpy(a["feat"]))
    assert set(graph.edge_attributes) == {edge_name, gb.ORIGINAL_EDGE_ID} and set(graph2.edge_attributes) == {edge_name}
    order = graph.edge_attributes[gb.ORIGINAL_EDGE_ID]
    assert torch.equal(graph.edge_attributes[edge_name], graph2.edge_attributes[edge_name][order])
    assert torch.equal(graph.edge_attributes[edge_name], torch.from_numpy(w)[order])


# --------------------------------------------------------------------------------------------
# Feature metadata


HETERO_FEATURES = """dataset_name: features
graph:
  nodes:
    - type: paper
      num: {papers}
    - type: author
      num: {authors}
  edges:
    - type: "author:writes:paper"
      format: numpy
      path: writes.npy
feature_data:
  - domain: node
    type: paper
    name: feat
    format: numpy
    in_memory: false
    path: node_feat.npy
    num_categories: 10
  - domain: node
    type: paper
    name: labels
    format: numpy
    path: node_labels.npy
  - domain: edge
    type: "author:writes:paper"
    name: feat
    format: numpy
    in_memory: false
    path: edge_feat.npy
    num_categories: 10
  - domain: edge
    type: "author:writes:paper"
    name: labels
    format: numpy
    path: edge_labels.npy
tasks:
  - name: node_classification
    num_classes: 12
    note: a user's key
    train_set:
      - type: paper
        data:
          - name: seed_nodes
            format: numpy
            path: train.npy
"""


@pytest.fixture
def hetero_features(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_Feature_heterograph's features (with a graph of
    papers and authors, and a node task of the same metadata.yaml): (tierfs's Dataset, GraphBolt's
    OnDiskDataset, the arrays)."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    papers, authors, edges = 70, 30, 200
    a = {
        "writes": np.stack([r.integers(0, authors, edges), r.integers(0, papers, edges)]),
        "node_feat": r.random((papers, 10)),
        "node_labels": r.integers(0, 11, (papers, 1)),
        "edge_feat": r.random((edges, 10)),
        "edge_labels": r.integers(0, 11, (edges, 1)),
        "train": r.permutation(papers)[:20],
    }
    root = tmp_path / "gb"
    root.mkdir()
    for k, v in a.items():
        np.save(root / f"{k}.npy", v)
    (root / "metadata.yaml").write_text(HETERO_FEATURES.format(papers=papers, authors=authors))
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    with tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")) as ours:
        yield ours, theirs, a


def test_feature_heterograph(hetero_features):
    """test_ondisk_dataset.py::test_OnDiskDataset_Feature_heterograph: the four features read as
    GraphBolt reads them, a feature without metadata in the yaml has none."""
    ours, theirs, a = hetero_features
    keys = [("node", "paper", "feat"), ("node", "paper", "labels"), ("edge", "author:writes:paper", "feat"), ("edge", "author:writes:paper", "labels")]
    assert set(ours.feature.keys()) == set(keys) == {(str(d.value), t, n) for d, t, n in theirs.feature.keys()}
    for key in keys:
        want = theirs.feature.read(*key)
        assert torch.equal(ours.feature.read(*key), want) and ours.feature.size(*key) == theirs.feature.size(*key), key
        assert torch.equal(want, torch.from_numpy(a[f"{key[0]}_{key[2]}"])), key
    for key in keys[1::2]:
        assert ours.feature.metadata(*key) == theirs.feature.metadata(*key) == {}, key
    # The store under it: a node feature named as the edge type's is not shadowed by it.
    store = ours.store
    assert store.feature_name == "feat" and store.features["labels"]["of"] == "node"
    np.testing.assert_array_equal(store.gather(np.arange(5), feature="feat"), a["node_feat"][:5])
    np.testing.assert_array_equal(store.gather(np.arange(5), node_type="paper", feature="labels").reshape(-1), a["node_labels"][:5, 0])


def test_feature_and_task_metadata_survive(hetero_features):
    """test_ondisk_dataset.py::test_OnDiskDataset_Feature_heterograph (num_categories) and
    ::test_OnDiskDataset_TVTSet_ItemSet_id_label (a task's num_classes), plus a user's key of the
    task: metadata as GraphBolt's, no more keys."""
    ours, theirs, _ = hetero_features
    for key in [("node", "paper", "feat"), ("edge", "author:writes:paper", "feat")]:
        assert theirs.feature.metadata(*key) == {"num_categories": 10}
        assert ours.feature.metadata(*key) == theirs.feature.metadata(*key), key
    assert theirs.tasks[0].metadata == {"name": "node_classification", "num_classes": 12, "note": "a user's key"}
    assert ours.tasks[0].metadata == theirs.tasks[0].metadata


# --------------------------------------------------------------------------------------------
# Feature shapes


def test_1d_feature_is_n_by_1(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_load_1D_feature (numpy): a 1-D node feature is
    read as (N, 1), as GraphBolt holds it."""
    r = np.random.default_rng(SEED)
    one = "  - domain: node\n    name: one\n    format: numpy\n    path: one.npy\n"
    tasks = "  - name: node_classification\n    num_classes: 1\n    train_set:\n" + _set(_column("train.npy"))
    ours, theirs, a = _dataset(tmp_path / "gb", tasks, {"one": r.random(N), "train": np.array([0, 1, 0])}, features_yaml=one)
    want = theirs.feature.read("node", None, "one")
    assert torch.equal(want, torch.from_numpy(a["one"].reshape(-1, 1)))
    assert torch.equal(ours.feature.read("node", None, "one"), want)
    assert ours.feature.size("node", None, "one") == theirs.feature.size("node", None, "one") == torch.Size([1])
    assert torch.equal(ours.tasks[0].train_set[:], theirs.tasks[0].train_set._items[0])


def test_feature_of_rows_of_more_than_one_dimension(tmp_path):
    """GraphBolt's TorchBasedFeature of (N, a, b) (test_torch_based_feature_store.py's 3-D
    features, test_torch_based_feature's feature_b): stored and served with its shape."""
    r = np.random.default_rng(SEED)
    cube = "  - domain: node\n    name: cube\n    format: numpy\n    path: cube.npy\n"
    ours, theirs, a = _dataset(tmp_path / "gb", "  - name: none\n", {"cube": r.random((N, 2, 3)).astype(np.float32)}, features_yaml=cube)
    ids = torch.tensor([3, 0, 3])
    assert theirs.feature.size("node", None, "cube") == torch.Size([2, 3])
    assert ours.feature.size("node", None, "cube") == torch.Size([2, 3])
    assert torch.equal(ours.feature.read("node", None, "cube", ids), theirs.feature.read("node", None, "cube", ids))


def _feature_dataset(tmp_path, arrays: dict, extra: dict = None):
    """A GraphBolt dataset of len(first array) nodes, one edge 0 -> 1 and each array a node
    feature of its name (extra: more yaml keys of a feature): (tierfs's Dataset, GraphBolt's
    OnDiskDataset of a copy)."""
    root = tmp_path / "gb"
    root.mkdir()
    n = len(next(iter(arrays.values())))
    np.save(root / "edges.npy", np.array([[0], [1]]))
    entries = ""
    for name, value in arrays.items():
        np.save(root / f"{name}.npy", value)
        entries += f"  - domain: node\n    name: {name}\n    format: numpy\n    path: {name}.npy\n"
        entries += "".join(f"    {k}: {v}\n" for k, v in (extra or {}).get(name, {}).items())
    (root / "metadata.yaml").write_text(
        f"dataset_name: features\ngraph:\n  nodes:\n    - num: {n}\n  edges:\n    - format: numpy\n      path: edges.npy\nfeature_data:\n{entries}"
    )
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    return tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")), theirs


def test_torch_based_feature_read_size_metadata(tmp_path):
    """test_torch_based_feature_store.py::test_torch_based_feature (in_memory False, its reads;
    tierfs's features are read-only): feature_a (2, 3) with metadata {"max_value": 3} and
    feature_b (2, 2, 2), given to from_graphbolt as .npy node features; GraphBolt's
    OnDiskDataset of the same files as the control."""
    a = np.array([[1, 2, 3], [4, 5, 6]])
    b = np.array([[[1, 2], [3, 4]], [[4, 5], [6, 7]]])
    ours, theirs = _feature_dataset(tmp_path, {"a": a, "b": b}, {"a": {"max_value": 3}})
    for ds in (ours, theirs):
        feature_a, feature_b = ds.feature._features[("node", None, "a")], ds.feature._features[("node", None, "b")]
        assert torch.equal(feature_a.read(), torch.tensor([[1, 2, 3], [4, 5, 6]]))
        assert torch.equal(feature_b.read(), torch.tensor([[[1, 2], [3, 4]], [[4, 5], [6, 7]]]))
        assert torch.equal(feature_a.read(torch.tensor([0])), torch.tensor([[1, 2, 3]]))
        assert torch.equal(feature_b.read(torch.tensor([1])), torch.tensor([[[4, 5], [6, 7]]]))
        assert feature_a.size() == torch.Size([3])
        assert feature_b.size() == torch.Size([2, 2])
        assert feature_a.metadata() == {"max_value": 3}
        assert feature_b.metadata() == {}
    assert ours.feature.metadata("node", None, "a") == theirs.feature.metadata("node", None, "a")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8, np.float16])
@pytest.mark.parametrize("shape", [(2, 1), (2, 3), (2, 2, 2), (137, 13, 3)])
def test_feature_shapes_and_dtypes(tmp_path, dtype, shape):
    """test_torch_based_feature_store.py::test_torch_based_pinned_feature's dtypes and shapes (its
    host reads, not pinning: randint(0, 13)), stored by from_graphbolt: the whole feature and
    rows by id read as GraphBolt's OnDiskDataset reads them, with the same size."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    x = r.integers(0, 13, shape).astype(dtype)
    ours, theirs = _feature_dataset(tmp_path, {"x": x})
    key = ("node", None, "x")
    want = theirs.feature.read(*key)
    assert torch.equal(want, torch.from_numpy(x))
    assert torch.equal(ours.feature.read(*key), want)
    ids = torch.from_numpy(r.integers(0, shape[0], 7))
    assert torch.equal(ours.feature.read(*key, ids), theirs.feature.read(*key, ids))
    assert ours.feature.size(*key) == theirs.feature.size(*key) == torch.Size(shape[1:])


# --------------------------------------------------------------------------------------------
# The sampling graph of a dataset without node features


def _graph_only(tmp_path, typed: bool):
    """A GraphBolt dataset of a graph alone (no feature_data, no tasks): N nodes and E random
    edges, of one untyped type, or of node types user and item and edge types
    user:follows:user and user:buys:item (typed). (tierfs's Dataset, GraphBolt's OnDiskDataset
    of a copy)."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    root = tmp_path / "gb"
    root.mkdir()
    np.save(root / "follows.npy", r.integers(0, N, (2, E)))
    np.save(root / "buys.npy", r.integers(0, N, (2, E // 2)))
    if typed:
        graph = (f"  nodes:\n    - type: user\n      num: {N}\n    - type: item\n      num: {N}\n  edges:\n"
                 "    - type: \"user:follows:user\"\n      format: numpy\n      path: follows.npy\n"
                 "    - type: \"user:buys:item\"\n      format: numpy\n      path: buys.npy\n")
    else:
        graph = f"  nodes:\n    - num: {N}\n  edges:\n    - format: numpy\n      path: follows.npy\n"
    (root / "metadata.yaml").write_text(f"dataset_name: graph\ngraph:\n{graph}")
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    return tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")), theirs


def test_graph_homogeneous_without_features(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_Graph_homogeneous on a dataset of a graph alone
    (issue 42 item 6: sampling_graph without node features): GraphBolt's graph is the control."""
    ours, theirs = _graph_only(tmp_path, typed=False)
    graph, graph2 = theirs.graph, ours.graph
    assert graph.total_num_nodes == graph2.total_num_nodes == N
    assert graph.total_num_edges == graph2.total_num_edges == E
    assert torch.equal(graph.csc_indptr, graph2.csc_indptr)
    assert torch.equal(graph.indices, graph2.indices)
    assert graph.node_type_offset is None and graph2.node_type_offset is None
    assert graph.type_per_edge is None and graph2.type_per_edge is None
    assert graph.node_type_to_id is None and graph2.node_type_to_id is None
    assert graph.edge_type_to_id is None and graph2.edge_type_to_id is None
    assert ours.feature.keys() == [] and theirs.feature.keys() == []
    assert ours.tasks == [] and theirs.tasks == []
    assert ours.all_nodes_set[:].tolist() == theirs.all_nodes_set[:].tolist() == list(range(N))


def test_graph_heterogeneous_without_features(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_Graph_heterogeneous on a dataset of two node
    and two edge types alone (issue 42 item 6): GraphBolt's graph is the control."""
    ours, theirs = _graph_only(tmp_path, typed=True)
    graph, graph2 = theirs.graph, ours.graph
    assert graph.total_num_nodes == graph2.total_num_nodes == 2 * N
    assert graph.total_num_edges == graph2.total_num_edges == E + E // 2
    assert torch.equal(graph.csc_indptr, graph2.csc_indptr)
    assert torch.equal(graph.indices, graph2.indices)
    assert torch.equal(graph.node_type_offset, graph2.node_type_offset)
    assert torch.equal(graph.type_per_edge, graph2.type_per_edge)
    assert graph.node_type_to_id == graph2.node_type_to_id
    assert graph.edge_type_to_id == graph2.edge_type_to_id
    assert ours.feature.keys() == [] and theirs.feature.keys() == []


def _typed_graph_features(tmp_path, node_types=("item", "user")):
    """A typed GraphBolt dataset (node types user and item, N each; edge types user:follows:user
    and user:buys:item) whose graph section lists node feature h of every type in node_types
    and edge feature w (E, 2) of both edge types: (tierfs's Dataset, the root of a copy for
    GraphBolt's OnDiskDataset, the arrays)."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    root = tmp_path / "gb"
    root.mkdir()
    a = {"follows": r.integers(0, N, (2, E)), "buys": r.integers(0, N, (2, E // 2)),
         "h_user": r.standard_normal((N, 3)).astype(np.float32), "h_item": r.standard_normal((N, 3)).astype(np.float32),
         "w_follows": r.standard_normal((E, 2)).astype(np.float32), "w_buys": r.standard_normal((E // 2, 2)).astype(np.float32)}
    for k, v in a.items():
        np.save(root / f"{k}.npy", v)
    entry = "    - domain: {d}\n      type: \"{t}\"\n      name: {n}\n      format: numpy\n      path: {p}.npy\n"
    features = "".join(entry.format(d="node", t=t, n="h", p=f"h_{t}") for t in node_types)
    features += entry.format(d="edge", t="user:follows:user", n="w", p="w_follows") + entry.format(d="edge", t="user:buys:item", n="w", p="w_buys")
    (root / "metadata.yaml").write_text(
        f"dataset_name: typed\ngraph:\n  nodes:\n    - type: user\n      num: {N}\n    - type: item\n      num: {N}\n  edges:\n"
        "    - type: \"user:follows:user\"\n      format: numpy\n      path: follows.npy\n"
        "    - type: \"user:buys:item\"\n      format: numpy\n      path: buys.npy\n"
        f"  feature_data:\n{features}")
    shutil.copytree(root, tmp_path / "gb-gb")
    return tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")), tmp_path / "gb-gb", a


def test_typed_sampling_graph_attributes(tmp_path):
    """A typed dataset's graph-section features are its sampling graph's node_attributes and
    edge_attributes (issue 42), as the one-type path fills them; the control is GraphBolt
    2.1.0's OnDiskDataset (ondisk_dataset.py's preprocess: a node attribute one tensor over
    every type by node_type_offset, an edge attribute one over every type, in the input order
    of each type by edge type id, where tierfs's is in the graph's edge order, ORIGINAL_EDGE_ID
    mapping it)."""
    ours, root, a = _typed_graph_features(tmp_path)
    graph, theirs = ours.graph, gb.OnDiskDataset(str(root)).load().graph
    assert torch.equal(graph.node_type_offset, theirs.node_type_offset) and graph.node_type_to_id == theirs.node_type_to_id
    assert graph.node_attributes.keys() == theirs.node_attributes.keys() == {"h"}
    assert torch.equal(graph.node_attributes["h"], theirs.node_attributes["h"])
    offset = graph.node_type_offset
    for t in ("user", "item"):
        k = graph.node_type_to_id[t]
        assert torch.equal(graph.node_attributes["h"][int(offset[k]):int(offset[k + 1])], torch.from_numpy(a[f"h_{t}"]))
    assert set(graph.edge_attributes) == {"w", gb.ORIGINAL_EDGE_ID} and set(theirs.edge_attributes) == {"w"}
    original, etype = graph.edge_attributes[gb.ORIGINAL_EDGE_ID], graph.type_per_edge
    counts = {k: int((etype == v).sum()) for k, v in graph.edge_type_to_id.items()}
    starts = {}
    for k, v in sorted(graph.edge_type_to_id.items(), key=lambda kv: kv[1]):  # GraphBolt's edge_type_offset
        starts[v] = sum(counts[o] for o, w in graph.edge_type_to_id.items() if w < v)
    position = torch.tensor([starts[int(t)] for t in etype.tolist()]) + original
    assert torch.equal(graph.edge_attributes["w"], theirs.edge_attributes["w"][position]), f"seed {SEED}"
    for k, name in (("user:follows:user", "w_follows"), ("user:buys:item", "w_buys")):
        at = etype == graph.edge_type_to_id[k]
        assert torch.equal(graph.edge_attributes["w"][at], torch.from_numpy(a[name])[original[at]])


def test_typed_sampling_graph_attribute_of_some_types(tmp_path):
    """A graph-section node feature of only some node types: GraphBolt 2.1.0's preprocess
    refuses the dataset ("does not cover all node types"); tierfs's sampling graph leaves the
    attribute out with a warning naming the types it lacks, and keeps the others."""
    ours, root, _ = _typed_graph_features(tmp_path, node_types=("user",))
    with pytest.raises(AssertionError, match="does not cover all node types"):
        gb.OnDiskDataset(str(root)).load()
    with pytest.warns(UserWarning, match="'h' does not cover all node types .*lacks item"):
        graph = ours.graph
    assert not graph.node_attributes and set(graph.edge_attributes) == {"w", gb.ORIGINAL_EDGE_ID}


def test_feature_homograph(tmp_path):
    """test_ondisk_dataset.py::test_OnDiskDataset_Feature_homograph: a dataset of one untyped type
    whose node and edge features share their names (feat, labels), feat with num_categories 10;
    read, keyed and described as GraphBolt's OnDiskDataset of the same files (the control)."""
    print(f"seed {SEED}")
    r = np.random.default_rng(SEED)
    n, e = 100, 100  # GraphBolt's test has as many edges as nodes (1000 of each)
    a = {"node_data_feat": r.random((n, 10)), "node_data_label": r.integers(0, 11, (n, 1)),
         "edge_data_feat": r.random((e, 10)), "edge_data_label": r.integers(0, 11, (e, 1))}
    entry = "  - domain: {d}\n    name: {n}\n    format: numpy\n    in_memory: {m}\n    path: {p}.npy\n"
    features = (entry.format(d="node", n="feat", m="false", p="node_data_feat") + "    num_categories: 10\n"
                + entry.format(d="node", n="labels", m="true", p="node_data_label")
                + entry.format(d="edge", n="feat", m="false", p="edge_data_feat") + "    num_categories: 10\n"
                + entry.format(d="edge", n="labels", m="true", p="edge_data_label"))
    root = tmp_path / "gb"
    root.mkdir()
    for k, v in {**a, "edges": r.integers(0, n, (2, e))}.items():
        np.save(root / f"{k}.npy", v)
    (root / "metadata.yaml").write_text(
        f"dataset_name: homograph\ngraph:\n  nodes:\n    - num: {n}\n  edges:\n    - format: numpy\n      path: edges.npy\nfeature_data:\n{features}"
    )
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    ours = tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds"))
    for dataset in (theirs, ours):
        feature_data = dataset.feature
        assert len(feature_data) == 4
        assert torch.equal(feature_data.read("node", None, "feat"), torch.tensor(a["node_data_feat"]))
        assert feature_data.metadata("node", None, "feat")["num_categories"] == 10
        assert torch.equal(feature_data.read("node", None, "labels"), torch.tensor(a["node_data_label"]))
        assert len(feature_data.metadata("node", None, "labels")) == 0
        assert torch.equal(feature_data.read("edge", None, "feat"), torch.tensor(a["edge_data_feat"]))
        assert feature_data.metadata("edge", None, "feat")["num_categories"] == 10
        assert torch.equal(feature_data.read("edge", None, "labels"), torch.tensor(a["edge_data_label"]))
        assert len(feature_data.metadata("edge", None, "labels")) == 0
    assert set(ours.feature.keys()) == {(str(d.value), t, k) for d, t, k in theirs.feature.keys()}
    ids = torch.from_numpy(r.integers(0, e, 20))
    for key in [("node", None, "feat"), ("edge", None, "feat"), ("edge", None, "labels")]:
        assert torch.equal(ours.feature.read(*key, ids), theirs.feature.read(*key, ids)), key
        assert ours.feature.metadata(*key) == theirs.feature.metadata(*key), key
    # The store under it: the name alone is the node feature's.
    np.testing.assert_array_equal(ours.store.gather(np.arange(5), feature="feat"), a["node_data_feat"][:5])
