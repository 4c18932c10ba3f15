"""A graph of one node type through tierfs.dgl, against GraphBolt's own stores of the same data:
a homogeneous store serves every node and edge feature under its name (not only its default one),
a GraphBolt dataset of one named type keeps its type names, and a dataset of edges alone gives
a sampling graph."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

import dgl
import dgl.graphbolt as gb
import tierfs
import tierfs.dgl as tdgl

SEED = int(os.environ.get("TIERFS_TEST_SEED") or random.randrange(1 << 31))
N, E = 80, 400


def graph(seed):
    r = np.random.default_rng(seed)
    return dict(edges=r.integers(0, N, (2, E)), x=r.standard_normal((N, 3)).astype(np.float32),
                year=r.integers(1990, 2030, N), y=r.integers(0, 4, N), w=r.standard_normal(E).astype(np.float32))


def save(d, g):
    os.makedirs(d, exist_ok=True)
    for k, v in g.items():
        np.save(os.path.join(d, f"{k}.npy"), v)
    return lambda k: os.path.join(d, f"{k}.npy")


def column(a):
    """GraphBolt's in-memory feature of a: a 1-D array held as (N, 1), as OnDiskDataset holds it."""
    t = torch.from_numpy(a)
    return gb.TorchBasedFeature(t.reshape(-1, 1) if t.dim() == 1 else t)


def check_reads(ours, theirs, keys, seed):
    """Every key of keys reads the same rows, of the same shape, from ours as from GraphBolt's
    store theirs (a 1-D feature as (N, 1), as GraphBolt holds it). tierfs's label column is 1-D,
    as GraphBolt's item sets hold labels (the control holds it as a feature, (N, 1))."""
    r = np.random.default_rng(seed)
    for key in keys:
        n = int(theirs.read(*key).shape[0])
        ids = torch.from_numpy(r.integers(0, n, 40))
        got, want = ours.read(*key, ids), theirs.read(*key, ids)
        if ours[key].kind == "label":
            want = want.reshape(-1)
        assert got.shape == want.shape and torch.equal(got, want), f"{key}, seed {SEED}"
        assert ours.size(*key) == want.shape[1:], key


def test_homogeneous_feature_store_serves_every_feature(tmp_path):
    g = graph(SEED)
    f = save(tmp_path / "raw", g)
    path = tierfs.ingest(tmp_path / "ds", edges=f("edges"), features=f("x"), labels=f("y"),
                         node_features={"year": f("year")}, edge_features={"w": f("w")})
    with tierfs.open(path) as store:
        fs = tdgl.FeatureStore(store)
        theirs = gb.BasicFeatureStore({
            ("node", None, "feat"): column(g["x"]),
            ("node", None, "year"): column(g["year"]),
            ("node", None, "label"): column(g["y"]),
            ("edge", None, "w"): column(g["w"]),  # by input edge id
        })
        assert sorted(fs.keys(), key=str) == sorted(theirs.keys(), key=str)
        check_reads(fs, theirs, theirs.keys(), SEED + 1)


METADATA = """dataset_name: one_type
graph:
  nodes:
    - type: paper
      num: {n}
  edges:
    - type: paper:cites:paper
      format: numpy
      path: edges.npy
feature_data:
  - domain: node
    type: paper
    name: feat
    format: numpy
    in_memory: true
    path: x.npy
  - domain: node
    type: paper
    name: year
    format: numpy
    in_memory: true
    path: year.npy
  - domain: node
    type: paper
    name: label
    format: numpy
    in_memory: true
    path: y.npy
  - domain: edge
    type: paper:cites:paper
    name: w
    format: numpy
    in_memory: true
    path: w.npy
"""


def test_graphbolt_one_named_type_keeps_its_names(tmp_path):
    g = graph(SEED + 2)
    save(tmp_path / "gb", g)
    (tmp_path / "gb" / "metadata.yaml").write_text(METADATA.format(n=N))
    theirs = gb.OnDiskDataset(str(tmp_path / "gb")).load().feature  # GraphBolt's own reading
    with tierfs.open(tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds")) as store:
        assert store.is_hetero and store.node_types == ["paper"] and store.edge_types == [("paper", "cites", "paper")]
        fs = tdgl.FeatureStore(store, label_name=None)
        assert sorted(fs.keys(), key=str) == sorted(theirs.keys(), key=str)
        check_reads(fs, theirs, theirs.keys(), SEED + 3)
        sg = tdgl.sampling_graph(store)
        assert sg.node_type_to_id == {"paper": 0} and list(sg.edge_type_to_id) == ["paper:cites:paper"]
        # Its samples are typed, so its blocks are heterogeneous blocks with its names.
        sample = store.sampler({("paper", "cites", "paper"): [3, 2]}, seed=SEED).sample(np.arange(5), "paper")
        inp, out, blocks = tdgl.sample_to_blocks(sample, store=store)
        assert set(inp) == set(out) == {"paper"} and torch.equal(out["paper"], torch.arange(5))
        assert [b.canonical_etypes for b in blocks] == [[("paper", "cites", "paper")]] * 2, f"seed {SEED}"
        assert torch.equal(blocks[0].srcnodes["paper"].data[dgl.NID], inp["paper"])


def test_edges_alone(tmp_path):
    g = graph(SEED + 4)
    f = save(tmp_path / "raw", g)
    with tierfs.open(tierfs.ingest(tmp_path / "ds", edges=f("edges"))) as store:
        sg = tdgl.sampling_graph(store)
        assert sg.total_num_nodes == N and sg.num_edges == E
        # ORIGINAL_EDGE_ID is the input's edge order: each CSC edge is that input edge.
        dst = torch.repeat_interleave(torch.arange(N), sg.csc_indptr.diff())
        order = sg.edge_attributes[gb.ORIGINAL_EDGE_ID]
        edges = torch.from_numpy(g["edges"])
        assert torch.equal(sg.indices, edges[0, order]) and torch.equal(dst, edges[1, order]), f"seed {SEED}"
        assert len(tdgl.FeatureStore(store)) == 0
