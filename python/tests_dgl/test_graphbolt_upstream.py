"""DGL 2.1.0's GraphBolt tests that the audit in docs/conformance.md found missing (issue 42),
carried over to tierfs: each test names its source (tests/python/pytorch/graphbolt/... at tag
v2.1.0). The control is GraphBolt's own OnDiskDataset of the same on-disk dataset, read beside
tierfs's. Seeds are printed."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch
from torchdata.datapipes.iter import Mapper

import dgl.graphbolt as gb
import tierfs
import tierfs.dgl as tdgl
from test_graphbolt_210 import E, N, SEED, _column, _dataset, _set, hetero_features  # noqa: F401 (a fixture)

NODE_TASK = "  - name: node_classification\n    num_classes: 3\n    train_set:\n" + _set(_column("seeds.npy", "seed_nodes"))


@pytest.fixture
def homo_features(tmp_path):
    """A homogeneous GraphBolt dataset of node features feat (N, 4) and a (N, 3) with metadata,
    b (N, 2, 2), and edge feature w (E, 2) (listed in the graph section too, GraphBolt's layout
    of a sampled edge attribute): (tierfs's Dataset, GraphBolt's OnDiskDataset, the arrays)."""
    r = np.random.default_rng(SEED)
    arrays = {
        "a": r.integers(0, 10, (N, 3)),
        "b": r.integers(0, 10, (N, 2, 2)),
        "w": r.standard_normal((E, 2)).astype(np.float32),
        "seeds": np.arange(10),
    }
    entry = "{i}- domain: {d}\n{i}  type: null\n{i}  name: {n}\n{i}  format: numpy\n{i}  path: {n}.npy\n"
    features = entry.format(i="  ", d="node", n="a") + "    max_value: 3\n" + entry.format(i="  ", d="node", n="b") + entry.format(i="  ", d="edge", n="w")
    graph = "  feature_data:\n" + entry.format(i="    ", d="edge", n="w")
    ours, theirs, a = _dataset(tmp_path / "gb", NODE_TASK, arrays, features_yaml=features, graph_yaml=graph)
    yield ours, theirs, a
    ours.close()


def test_basic_feature_store_homo(homo_features):
    """impl/test_basic_feature_store.py::test_basic_feature_store_homo: the whole feature, rows by
    id, size (a row's shape), metadata (a yaml key; none), keys, as GraphBolt's store gives them."""
    ours, theirs, a = homo_features
    fs, control = ours.feature, theirs.feature
    for name in ("a", "b"):
        whole = fs.read("node", None, name)
        assert torch.equal(whole, control.read("node", None, name)) and torch.equal(whole, torch.from_numpy(a[name]))
        assert torch.equal(fs.read("node", None, name, torch.tensor([0])), torch.from_numpy(a[name][:1]))
    assert fs.size("node", None, "a") == control.size("node", None, "a") == torch.Size([3])
    assert fs.size("node", None, "b") == control.size("node", None, "b") == torch.Size([2, 2])
    assert fs.metadata("node", None, "a") == control.metadata("node", None, "a") == {"max_value": 3}
    assert fs.metadata("node", None, "b") == control.metadata("node", None, "b") == {}
    want = sorted(((str(d.value) if hasattr(d, "value") else d, t, n) for d, t, n in control.keys()), key=str)
    assert sorted(fs.keys(), key=str) == want
    assert {("node", None, "a"), ("node", None, "b"), ("edge", None, "w")} <= set(fs.keys())


def test_basic_feature_store_hetero(hetero_features):
    """impl/test_basic_feature_store.py::test_basic_feature_store_hetero: a node type's and an edge
    type's feature ("src:rel:dst"): whole, by id, size, metadata, keys, as GraphBolt's."""
    ours, theirs, a = hetero_features
    fs, control = ours.feature, theirs.feature
    for key in [("node", "paper", "feat"), ("edge", "author:writes:paper", "feat"), ("edge", "author:writes:paper", "labels")]:
        assert torch.equal(fs.read(*key), control.read(*key)), key
        assert torch.equal(fs.read(*key, torch.tensor([0])), control.read(*key, torch.tensor([0]))), key
        assert fs.size(*key) == control.size(*key), key
        assert fs.metadata(*key) == control.metadata(*key), key
    assert fs.size("edge", "author:writes:paper", "labels") == torch.Size([1])
    assert sorted(fs.keys(), key=str) == sorted(control.keys(), key=str)


def test_basic_feature_store_errors(homo_features):
    """impl/test_basic_feature_store.py::test_basic_feature_store_errors: a key the store lacks
    raises KeyError, an id out of range IndexError (GraphBolt's store: the same)."""
    ours, theirs, _ = homo_features
    for fs in (ours.feature, theirs.feature):
        with pytest.raises(KeyError):
            fs.read("node", "paper", "a")
        with pytest.raises(IndexError):
            fs.read("node", None, "a", torch.tensor([0, N]))


def _assert_fetched_as_graphbolt(mb, control, node_keys, edge_keys, what):
    """Each fetched node feature is GraphBolt's row of the minibatch's input nodes, each layer's
    edge feature GraphBolt's row of its original edge ids."""
    for name in node_keys:
        assert torch.equal(mb.node_features[name], control.read("node", None, name, mb.input_nodes)), f"{what}: {name}"
    assert len(mb.edge_features) == mb.num_layers()
    for i, layer in enumerate(mb.edge_features):
        ids = mb.sampled_subgraphs[i].original_edge_ids
        for name in edge_keys:
            assert torch.equal(layer[name], control.read("edge", None, name, ids)), f"{what}: layer {i} {name} (seed {SEED})"


def test_feature_fetcher_homo(homo_features):
    """test_feature_fetcher.py::test_FeatureFetcher_invoke and ::test_FeatureFetcher_homo:
    GraphBolt's NeighborSampler over tierfs's sampling graph, then FeatureFetcher over tierfs's
    feature store, by constructor and functional form: five batches; node features and each
    layer's edge feature (by original edge id) equal GraphBolt's own store's rows."""
    ours, theirs, _ = homo_features
    torch.manual_seed(SEED % (1 << 31))
    item_sampler = gb.ItemSampler(gb.ItemSet(torch.arange(10), names="seed_nodes"), batch_size=2)
    fanouts = [torch.LongTensor([2]) for _ in range(2)]
    by_class = gb.FeatureFetcher(gb.NeighborSampler(item_sampler, ours.graph, fanouts), ours.feature, ["a", "b"], ["w"])
    functional = item_sampler.sample_neighbor(ours.graph, fanouts).fetch_feature(ours.feature, ["a", "b"], ["w"])
    for pipe in (by_class, functional):
        batches = list(pipe)
        assert len(batches) == 5
        for j, mb in enumerate(batches):
            assert all(sg.original_edge_ids is not None for sg in mb.sampled_subgraphs)
            _assert_fetched_as_graphbolt(mb, theirs.feature, ["a", "b"], ["w"], f"batch {j}")


def test_feature_fetcher_with_edges_homo(homo_features):
    """test_feature_fetcher.py::test_FeatureFetcher_with_edges_homo: minibatches of three
    hand-made subgraphs of random original edge ids: node features of the seeds (2 rows), three
    layers of edge features (10 rows each), equal GraphBolt's store's."""
    ours, theirs, _ = homo_features
    g = torch.Generator().manual_seed(SEED % (1 << 31))

    def add_node_and_edge_ids(minibatch):
        subgraphs = [
            gb.SampledSubgraphImpl(
                sampled_csc=gb.CSCFormatBase(indptr=torch.arange(11), indices=torch.arange(10)),
                original_column_node_ids=torch.arange(10),
                original_row_node_ids=torch.arange(10),
                original_edge_ids=torch.randint(0, E, (10,), generator=g),
            )
            for _ in range(3)
        ]
        return gb.MiniBatch(input_nodes=minibatch.seed_nodes, sampled_subgraphs=subgraphs)

    item_sampler = gb.ItemSampler(gb.ItemSet(torch.arange(10), names="seed_nodes"), batch_size=2)
    batches = list(gb.FeatureFetcher(Mapper(item_sampler, add_node_and_edge_ids), ours.feature, ["a"], ["w"]))
    assert len(batches) == 5
    for j, mb in enumerate(batches):
        assert mb.node_features["a"].size(0) == 2 and len(mb.edge_features) == 3
        for layer in mb.edge_features:
            assert layer["w"].size(0) == 10
        _assert_fetched_as_graphbolt(mb, theirs.feature, ["a"], ["w"], f"batch {j}")


def test_feature_fetcher_with_edges_hetero(hetero_features):
    """test_feature_fetcher.py::test_FeatureFetcher_with_edges_hetero (its node half:
    test_hetero.py::test_graphbolt_pipeline_hetero): paper seeds (an ItemSetDict) through
    GraphBolt's NeighborSampler over tierfs's typed sampling graph, FeatureFetcher over tierfs's
    store with edge keys by "src:rel:dst": each layer's edge features equal GraphBolt's store's
    rows of its original edge ids. (GraphBolt 2.1 leaves a seed type out of input_nodes when no
    sampled edge leads from it, so node keys of the seed type raise KeyError in FeatureFetcher
    over GraphBolt's own graph too: this graph has author -> paper edges only.)"""
    ours, theirs, a = hetero_features
    torch.manual_seed(SEED % (1 << 31))
    itemset = gb.ItemSetDict({"paper": gb.ItemSet(torch.arange(9), names="seed_nodes")})
    etype = "author:writes:paper"
    pipe = gb.NeighborSampler(gb.ItemSampler(itemset, batch_size=2), ours.graph, [torch.LongTensor([2]) for _ in range(2)])
    batches = list(gb.FeatureFetcher(pipe, ours.feature, None, {etype: ["feat", "labels"]}))
    assert len(batches) == 5
    fetched = 0
    for j, mb in enumerate(batches):
        assert len(mb.edge_features) == 2
        for i, layer in enumerate(mb.edge_features):
            ids = {gb.etype_tuple_to_str(k) if isinstance(k, tuple) else k: v for k, v in mb.sampled_subgraphs[i].original_edge_ids.items()}
            for name in ("feat", "labels"):
                want = theirs.feature.read("edge", etype, name, ids[etype])
                assert torch.equal(layer[(etype, name)], want), f"batch {j} layer {i} {name} (seed {SEED})"
                assert torch.equal(want, torch.from_numpy(a["edge_" + name][ids[etype].numpy()]))
                fetched += want.shape[0]
    assert fetched > 0


@pytest.mark.parametrize("which", ["homo_features", "hetero_features"])
def test_ondisk_dataset_all_nodes_set(request, which):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_all_nodes_set_homo and
    ::test_OnDiskDataset_all_nodes_set_hetero: all_nodes_set is GraphBolt's (an ItemSet of every
    node; an ItemSetDict by type, in GraphBolt's order of the types), item for item."""
    ours, theirs, _ = request.getfixturevalue(which)
    mine, control = ours.all_nodes_set, theirs.all_nodes_set
    assert type(mine) is type(control) and len(mine) == len(control)
    assert [_item(x) for x in mine] == [_item(x) for x in control]


@pytest.mark.parametrize("which", ["homo_features", "hetero_features"])
def test_ondisk_dataset_load_name(request, which):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_load_name and ::test_OnDiskDataset_Metadata:
    dataset_name is metadata.yaml's (kept by from_graphbolt in the manifest), not the tierfs
    dataset directory's."""
    ours, theirs, _ = request.getfixturevalue(which)
    assert theirs.dataset_name in ("conformance", "features")
    assert ours.dataset_name == theirs.dataset_name
    assert ours.dataset_name != os.path.basename(os.path.normpath(ours.store.path))


def _item(x):
    """An item of an ItemSet (a node id) or of an ItemSetDict ({type: id}) as plain ints."""
    return {k: int(v) for k, v in x.items()} if isinstance(x, dict) else int(x)


TYPED_NODE_TASK = """dataset_name: typed_sets
graph:
  nodes:
    - type: paper
      num: {n}
    - type: author
      num: {n}
  edges:
    - type: "author:writes:paper"
      format: numpy
      path: writes.npy
    - type: "paper:written_by:author"
      format: numpy
      path: written_by.npy
feature_data:
  - domain: node
    type: paper
    name: feat
    format: numpy
    path: paper_feat.npy
tasks:
  - name: node_classification
    num_classes: 10
{sets}"""


def test_ondisk_dataset_itemsetdict_id_label(tmp_path):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_TVTSet_ItemSetDict_id_label and
    ::test_OnDiskDataset_TVTSet_ItemSetDict_names: train, validation and test sets of seed_nodes
    and labels for two node types: each an ItemSetDict of GraphBolt's length and names, its
    items ({type: (id, label)}) GraphBolt's, in order."""
    r = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    n = 60
    writes = np.stack([r.integers(0, n, 200), r.integers(0, n, 200)])
    arrays = {"writes": writes, "written_by": writes[::-1].copy(), "paper_feat": r.standard_normal((n, 3)).astype(np.float32)}
    sets = ""
    for k, (split, lo, hi) in enumerate([("train_set", 0, 20), ("validation_set", 20, 35), ("test_set", 35, 50)]):
        sets += f"    {split}:\n"
        for t in ("paper", "author"):
            ids = r.permutation(np.arange(lo, hi))
            arrays[f"{t}_{k}_ids"], arrays[f"{t}_{k}_labels"] = ids, r.integers(0, 10, ids.size)
            sets += f"      - type: {t}\n        data:\n" + "".join(
                f"          - name: {name}\n            format: numpy\n            path: {t}_{k}_{col}.npy\n" for name, col in (("seed_nodes", "ids"), ("labels", "labels")))
    root = tmp_path / "gb"
    root.mkdir()
    for key, v in arrays.items():
        np.save(root / f"{key}.npy", v)
    (root / "metadata.yaml").write_text(TYPED_NODE_TASK.format(n=n, sets=sets))
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    with tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")) as ours:
        (task,), (control,) = ours.tasks, theirs.tasks
        assert task.metadata == control.metadata
        for split in ("train_set", "validation_set", "test_set"):
            got, want = getattr(task, split), getattr(control, split)
            assert isinstance(got, gb.ItemSetDict) and len(got) == len(want), split
            assert got.names == want.names == ("seed_nodes", "labels"), split
            got_items = [{t: tuple(int(v) for v in x) for t, x in item.items()} for item in got]
            want_items = [{t: tuple(int(v) for v in x) for t, x in item.items()} for item in want]
            assert got_items == want_items, f"{split} (seed {SEED})"


GRAPH_OF_TEN = """dataset_name: bad
graph:
  nodes:
    - num: 10
  edges:
    - format: numpy
      path: edges.npy
"""
UNTYPED_SET = "      - type: null\n        data:\n          - format: {fmt}\n            path: train.npy\n"


@pytest.mark.parametrize("yaml, match", [
    (GRAPH_OF_TEN + "tasks:\n  - name: node_classification\n    train_set:\n" + UNTYPED_SET.format(fmt="torch_invalid"), "torch_invalid"),
    (GRAPH_OF_TEN + "tasks:\n  - name: node_classification\n    train_set:\n" + UNTYPED_SET.format(fmt="numpy") * 2, "train_set"),
    ("graph_topology:\n  type: CSRSamplingGraph\n  path: /path/to/graph\n", "graph_topology"),
], ids=["invalid_format", "two_untyped_sets", "graph_topology"])
def test_ondisk_dataset_exceptions(tmp_path, yaml, match):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_TVTSet_exceptions (an invalid format; two
    sets of type null) and ::test_OnDiskDataset_Graph_Exceptions (a graph_topology, not a graph
    section): from_graphbolt refuses each, naming what it refuses, where GraphBolt raises
    pydantic's ValidationError or an AssertionError."""
    root = tmp_path / "gb"
    root.mkdir()
    np.save(root / "edges.npy", np.random.default_rng(SEED).integers(0, 10, (2, 30)))
    np.save(root / "train.npy", np.arange(5))
    (root / "metadata.yaml").write_text(yaml)
    with pytest.raises(tierfs.InvalidArgumentError, match=match):
        tierfs.from_graphbolt(root, tmp_path / "ds")


def random_homo_graphbolt_dataset(root, r, num_nodes, num_edges, num_classes, edge_fmt):
    """gb_test_utils.py::random_homo_graphbolt_graph's layout (test_ondisk_dataset.py's end-to-end
    tests), smaller: five out-edges a node, node and edge feature feat in the graph section and
    the feature list, a link task of unnamed (n, 2) pairs. Returns (node feat, edge feat)."""
    edges = np.stack([np.repeat(np.arange(num_nodes), num_edges // num_nodes), r.integers(0, num_nodes, num_edges)], 1)
    for sub in ("edges", "data", "set"):
        (root / sub).mkdir(parents=True)
    if edge_fmt == "csv":
        np.savetxt(root / "edges" / "edge.csv", edges, fmt="%d", delimiter=",")
    else:
        np.save(root / "edges" / "edge.npy", edges.T.copy())
    node_feat, edge_feat = r.random((num_nodes, num_classes)), r.random((num_edges, num_classes))
    np.save(root / "data" / "node-feat.npy", node_feat)
    np.save(root / "data" / "edge-feat.npy", edge_feat)
    q = num_nodes // 4
    sets = ""
    for k, name in enumerate(("train", "validation", "test")):
        np.save(root / "set" / f"{name}.npy", np.stack([np.arange(k * q, (k + 1) * q), np.arange((k + 1) * q, (k + 2) * q)], 1))
        sets += f"    {name}_set:\n      - type: null\n        data:\n          - format: numpy\n            path: set/{name}.npy\n"
    feats = "".join(f"{{i}}- domain: {d}\n{{i}}  type: null\n{{i}}  name: feat\n{{i}}  format: numpy\n{{i}}  path: data/{d}-feat.npy\n" for d in ("node", "edge"))
    (root / "metadata.yaml").write_text(
        f"dataset_name: graphbolt_test\ngraph:\n  nodes:\n    - num: {num_nodes}\n  edges:\n    - format: {edge_fmt}\n      path: edges/edge.{'csv' if edge_fmt == 'csv' else 'npy'}\n"
        f"  feature_data:\n{feats.format(i='    ')}feature_data:\n{feats.format(i='  ')}"
        f"tasks:\n  - name: link_prediction\n    num_classes: {num_classes}\n{sets}")
    return node_feat, edge_feat


@pytest.mark.parametrize("edge_fmt", ["csv", "numpy"])
def test_ondisk_dataset_homogeneous(tmp_path, edge_fmt):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_homogeneous: the graph (sizes, node and edge
    attribute feat, ORIGINAL_EDGE_ID), one link task of three ItemSets with its metadata (the
    unnamed pair column named node_pairs, as test_graphbolt_210.py documents), feature
    sizes; then each set and all_nodes_set through ItemSampler -> sample_neighbor(graph, [-1])
    -> fetch_feature(feat) -> DataLoader, on tierfs's dataset as on GraphBolt's: the same items
    and every fetched row the input's."""
    r = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    num_nodes, num_edges, num_classes = 200, 1000, 10
    root = tmp_path / "gb"
    node_feat, _ = random_homo_graphbolt_dataset(root, r, num_nodes, num_edges, num_classes, edge_fmt)
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    with tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")) as ours:
        graph = ours.graph
        assert isinstance(graph, gb.FusedCSCSamplingGraph)
        assert graph.total_num_nodes == num_nodes and graph.total_num_edges == num_edges
        assert "feat" in graph.node_attributes and "feat" in graph.edge_attributes and gb.ORIGINAL_EDGE_ID in graph.edge_attributes
        (task,), (control,) = ours.tasks, theirs.tasks
        assert task.metadata == control.metadata == {"name": "link_prediction", "num_classes": num_classes}
        sets = [task.train_set, task.validation_set, task.test_set, ours.all_nodes_set]
        for got, want in zip(sets, [control.train_set, control.validation_set, control.test_set, theirs.all_nodes_set]):
            assert isinstance(got, gb.ItemSet) and len(got) == len(want)
            # An unnamed column: GraphBolt's (None,), tierfs's its 2.1 name (test_graphbolt_210.py)
            assert got.names == want.names or (want.names == (None,) and got.names == ("node_pairs",))
            assert torch.equal(torch.as_tensor(got[:]), torch.as_tensor(want[:]).long())
        assert ours.feature.size("node", None, "feat")[0] == ours.feature.size("edge", None, "feat")[0] == num_classes
        for item_set in sets:
            pipe = gb.ItemSampler(item_set, batch_size=10).sample_neighbor(graph, [-1]).fetch_feature(ours.feature, node_feature_keys=["feat"])
            n = 0
            for mb in gb.DataLoader(pipe):
                assert torch.equal(mb.node_features["feat"], torch.from_numpy(node_feat[mb.input_nodes.numpy()]))
                n += 1
            assert n == -(-len(item_set) // 10)


@pytest.mark.parametrize("k", [1, 5])
def test_uniform_negative_sampler_node_pairs(homo_features, k):
    """impl/test_negative_sampler.py::test_UniformNegativeSampler_node_pairs_invoke and
    ::test_Uniform_NegativeSampler_node_pairs, on tierfs's link stage (negatives, neighbors and
    exclusion in one call) for an ItemSet of node_pairs: per batch of 10 pairs negative_srcs is
    None and negative_dsts (10, k), as GraphBolt 2.1's UniformNegativeSampler leaves them; and
    node_pairs_with_labels gives the sampler's own negative graph (same seed, DGL's form), labels
    1 then 0."""
    ours, _, a = homo_features
    pairs = torch.from_numpy(a["edges"][:, :30].T.copy())
    make = lambda: tdgl.as_edge_prediction_sampler(tdgl.NeighborSampler(ours.store, [2, 2], seed=SEED % 1000), negative_sampler=k)  # noqa: E731
    sampler, reference = make(), make()
    pipe = gb.ItemSampler(gb.ItemSet(pairs, names="node_pairs"), batch_size=10).transform(sampler.sample_minibatch)
    n = 0
    for mb in pipe:
        pos_src, pos_dst = mb.node_pairs
        assert len(pos_src) == len(pos_dst) == 10
        assert mb.negative_srcs is None
        assert mb.negative_dsts.shape == (10, k) and mb.negative_dsts.numel() == 10 * k
        (src, dst), labels = mb.node_pairs_with_labels
        _, pair_graph, neg_graph, _ = reference.sample((pos_src, pos_dst))
        neg_src, neg_dst = neg_graph.edges()
        assert torch.equal(src[10:], neg_src) and torch.equal(dst[10:], neg_dst), f"seed {SEED}"
        assert labels.tolist() == [1.0] * 10 + [0.0] * (10 * k)
        n += 1
    assert n == 3


def random_hetero_graphbolt_dataset(root, r, num_nodes, num_edges, num_classes, edge_fmt):
    """gb_test_utils.py::generate_raw_data_for_hetero_dataset's layout, smaller: user and item,
    edge types user:follow:user and user:click:item, feat of every node and edge type in the graph
    section, the node features in the feature list, a node task of user seeds. Returns the node
    features by type."""
    for sub in ("edges", "data", "set"):
        (root / sub).mkdir(parents=True)
    graph_feats, node_feats = "", {}
    edges_yaml = ""
    for (s, rel, d), e in num_edges.items():
        pairs = np.stack([r.integers(0, num_nodes[s], e), r.integers(0, num_nodes[d], e)], 1)
        if edge_fmt == "csv":
            np.savetxt(root / "edges" / f"{rel}.csv", pairs, fmt="%d", delimiter=",")
        else:
            np.save(root / "edges" / f"{rel}.npy", pairs.T.copy())
        edges_yaml += f'    - type: "{s}:{rel}:{d}"\n      format: {edge_fmt}\n      path: edges/{rel}.{"csv" if edge_fmt == "csv" else "npy"}\n'
        np.save(root / "data" / f"{rel}-feat.npy", r.random((e, num_classes)))
        graph_feats += f'    - domain: edge\n      type: "{s}:{rel}:{d}"\n      name: feat\n      format: numpy\n      path: data/{rel}-feat.npy\n'
    feature_list = ""
    for t, n in num_nodes.items():
        node_feats[t] = r.random((n, num_classes))
        np.save(root / "data" / f"{t}-feat.npy", node_feats[t])
        entry = f"{{i}}- domain: node\n{{i}}  type: {t}\n{{i}}  name: feat\n{{i}}  format: numpy\n{{i}}  path: data/{t}-feat.npy\n"
        graph_feats, feature_list = entry.format(i="    ") + graph_feats, feature_list + entry.format(i="  ")
    users = r.permutation(num_nodes["user"])
    cut = [0, int(len(users) * 0.6), int(len(users) * 0.8), len(users)]
    sets = ""
    for k, name in enumerate(("train", "validation", "test")):
        np.save(root / "set" / f"{name}.npy", users[cut[k]:cut[k + 1]])
        sets += f"    {name}_set:\n      - type: user\n        data:\n          - name: seed_nodes\n            format: numpy\n            path: set/{name}.npy\n"
    nodes_yaml = "".join(f"    - type: {t}\n      num: {n}\n" for t, n in num_nodes.items())
    (root / "metadata.yaml").write_text(
        f"dataset_name: OnDiskDataset_hetero\ngraph:\n  nodes:\n{nodes_yaml}  edges:\n{edges_yaml}  feature_data:\n{graph_feats}"
        f"feature_data:\n{feature_list}tasks:\n  - name: node_classification\n    num_classes: {num_classes}\n{sets}")
    return node_feats


@pytest.mark.parametrize("edge_fmt", ["csv", "numpy"])
def test_ondisk_dataset_heterogeneous(tmp_path, edge_fmt):
    """impl/test_ondisk_dataset.py::test_OnDiskDataset_heterogeneous: the typed graph (sizes, node
    and edge attribute feat, ORIGINAL_EDGE_ID), one node task of three ItemSetDicts with its
    metadata, feature sizes by type; then each set and all_nodes_set through ItemSampler ->
    sample_neighbor(graph, [-1]) -> fetch_feature({"user": ["feat"]}) -> DataLoader, on tierfs's
    dataset as on GraphBolt's: the same items, every fetched row the input's."""
    r = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    num_nodes = {"user": 100, "item": 200}
    num_edges = {("user", "follow", "user"): 500, ("user", "click", "item"): 1000}
    root = tmp_path / "gb"
    node_feats = random_hetero_graphbolt_dataset(root, r, num_nodes, num_edges, 10, edge_fmt)
    shutil.copytree(root, tmp_path / "gb-gb")
    theirs = gb.OnDiskDataset(str(tmp_path / "gb-gb")).load()
    with tdgl.Dataset(tierfs.from_graphbolt(root, tmp_path / "ds")) as ours:
        graph = ours.graph
        assert isinstance(graph, gb.FusedCSCSamplingGraph)
        assert graph.total_num_nodes == sum(num_nodes.values()) and graph.total_num_edges == sum(num_edges.values())
        assert "feat" in graph.node_attributes and "feat" in graph.edge_attributes and gb.ORIGINAL_EDGE_ID in graph.edge_attributes
        (task,), (control,) = ours.tasks, theirs.tasks
        assert task.metadata == control.metadata == {"name": "node_classification", "num_classes": 10}
        sets = [task.train_set, task.validation_set, task.test_set, ours.all_nodes_set]
        for got, want in zip(sets, [control.train_set, control.validation_set, control.test_set, theirs.all_nodes_set]):
            assert isinstance(got, gb.ItemSetDict) and len(got) == len(want) and got.names == want.names
            assert [_item(x) for x in got] == [_item(x) for x in want]
        for t in num_nodes:
            assert ours.feature.size("node", t, "feat")[0] == 10
        for item_set in sets:
            pipe = gb.ItemSampler(item_set, batch_size=10).sample_neighbor(graph, [-1])
            pipe = pipe.fetch_feature(ours.feature, node_feature_keys={"user": ["feat"]})
            n = 0
            for mb in gb.DataLoader(pipe):
                ids = mb.input_nodes["user"]
                assert torch.equal(mb.node_features[("user", "feat")], torch.from_numpy(node_feats["user"][ids.numpy()]))
                n += 1
            assert n == -(-len(item_set) // 10)
