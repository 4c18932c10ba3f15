"""Heterogeneous test graphs for the DGL tests: raw numpy arrays written as a GraphBolt on-disk
dataset (raw form, metadata.yaml) and ingested with tierfs.from_graphbolt; the same arrays give
DGL's in-memory heterograph with edge ids in tierfs's order (CSC over the destination type,
in-edges of a node in input order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

import dgl
import tierfs

SETS = {"train": "train_set", "val": "validation_set", "test": "test_set"}


@dataclass
class HeteroGraph:
    """Raw arrays of a heterogeneous graph. ``edges[(src, rel, dst)]`` is (2, E) in input
    order; ``edge_feats[etype][name]`` one row per input edge; ``sets[ntype][split]`` =
    (seeds, labels)."""

    num_nodes: dict
    feats: dict  # ntype -> {name: (N, D) array}
    edges: dict
    edge_feats: dict = field(default_factory=dict)
    sets: dict = field(default_factory=dict)
    num_classes: int = 0
    gb_dir: Path | None = None  # the GraphBolt dataset
    dir: str | None = None  # the tierfs dataset

    def csc_order(self, etype) -> np.ndarray:
        """Input edge positions in tierfs's edge id order."""
        return np.argsort(self.edges[etype][1], kind="stable")

    def labels(self, ntype) -> np.ndarray:
        """One label per node of ntype, -1 where no set labels it (as ingest makes them)."""
        y = np.full(self.num_nodes[ntype], -1, dtype=np.int64)
        for seeds, ys in self.sets.get(ntype, {}).values():
            y[seeds] = ys
        return y

    def heterograph(self):
        """DGL's in-memory heterograph of the same data: every node type with its features
        (ndata by name) and labels (ndata "label" where labelled), every edge type with edge
        ``i`` = the input's edge ``i`` (DGL's numbering, tierfs.dgl's ``dgl.EID``) and its edge
        features (edata by name)."""
        data = {}
        for e, ei in self.edges.items():
            data[e] = (torch.from_numpy(ei[0]), torch.from_numpy(ei[1]))
        g = dgl.heterograph(data, num_nodes_dict=dict(self.num_nodes), idtype=torch.int64)
        for t, feats in self.feats.items():
            for name, x in feats.items():
                g.nodes[t].data[name] = torch.from_numpy(x)
        for t in self.sets:
            g.nodes[t].data["label"] = torch.from_numpy(self.labels(t))
        for e, feats in self.edge_feats.items():
            for name, x in feats.items():
                g.edges[e].data[name] = torch.from_numpy(np.ascontiguousarray(x))
        return g


def write_graphbolt(g: HeteroGraph, root: Path, csv_etype=None) -> Path:
    """Writes g as a GraphBolt on-disk dataset (raw form, DGL 2.1's metadata.yaml) under root/gb:
    edges as (2, E) .npy (``csv_etype`` as headerless CSV), features in the top-level
    feature_data, one node classification task."""
    gb = root / "gb"
    for d in ("edges", "data", "set"):
        (gb / d).mkdir(parents=True, exist_ok=True)
    lines = ["dataset_name: hetero_test", "graph:", "  nodes:"]
    for t, n in g.num_nodes.items():
        lines += [f"    - type: {t}", f"      num: {n}"]
    lines.append("  edges:")
    for i, (e, ei) in enumerate(g.edges.items()):
        key = ":".join(e)
        if e == csv_etype:
            path = f"edges/e{i}.csv"
            np.savetxt(gb / path, ei.T, fmt="%d", delimiter=",")
            fmt = "csv"
        else:
            path = f"edges/e{i}.npy"
            np.save(gb / path, ei.astype(np.int64))
            fmt = "numpy"
        lines += [f"    - type: {key}", f"      format: {fmt}", f"      path: {path}"]
    lines.append("feature_data:")
    for t, feats in g.feats.items():
        for name, x in feats.items():
            path = f"data/{t}-{name}.npy"
            np.save(gb / path, x)
            lines += [f"  - domain: node", f"    type: {t}", f"    name: {name}", "    format: numpy",
                      "    in_memory: true", f"    path: {path}"]
    for i, (e, feats) in enumerate(g.edge_feats.items()):
        for name, x in feats.items():
            path = f"data/e{i}-{name}.npy"
            np.save(gb / path, x)
            lines += [f"  - domain: edge", f"    type: {':'.join(e)}", f"    name: {name}", "    format: numpy",
                      "    in_memory: true", f"    path: {path}"]
    if g.sets:
        lines += ["tasks:", "  - name: node_classification", f"    num_classes: {g.num_classes}"]
        for split, key in SETS.items():
            entries = [(t, s[split]) for t, s in g.sets.items() if split in s]
            if not entries:
                continue
            lines.append(f"    {key}:")
            for t, (seeds, ys) in entries:
                np.save(gb / f"set/{t}-{split}-seeds.npy", seeds.astype(np.int64))
                np.save(gb / f"set/{t}-{split}-labels.npy", ys.astype(np.int64))
                lines += [f"      - type: {t}", "        data:",
                          "          - name: seed_nodes", "            format: numpy", "            in_memory: true",
                          f"            path: set/{t}-{split}-seeds.npy",
                          "          - name: labels", "            format: numpy", "            in_memory: true",
                          f"            path: set/{t}-{split}-labels.npy"]
    (gb / "metadata.yaml").write_text("\n".join(lines) + "\n")
    return gb


def ingest(g: HeteroGraph, root: Path, csv_etype=None) -> HeteroGraph:
    g.gb_dir = write_graphbolt(g, root, csv_etype)
    g.dir = tierfs.from_graphbolt(g.gb_dir, root / "dataset")
    return g


def synthetic(seed: int = 5) -> HeteroGraph:
    """A small ogbn-mag-like graph: paper (features, 4 classes; the class shows in its features
    and in its authors' features), author (features), field (no features); edge types
    author:writes:paper (with edge features), paper:written_by:author, paper:cites:paper (a
    self-relation, with duplicate edges and a paper without citations) and field:has:paper.
    Papers 0 and 1 have no in-edges at all."""
    rng = np.random.default_rng(seed)
    n = {"paper": 500, "author": 300, "field": 12}
    classes = 4
    y = rng.integers(0, classes, n["paper"]).astype(np.int64)
    author_class = rng.integers(0, classes, n["author"])
    cent = rng.normal(0, 1, (classes, 16))
    x_paper = (cent[y] + rng.normal(0, 1.5, (n["paper"], 16))).astype(np.float32)
    x_author = (rng.normal(0, 1, (classes, 8))[author_class] + rng.normal(0, 0.5, (n["author"], 8))).astype(np.float32)

    def pick(pool_class, cls, count, p_same=0.8):
        same = np.flatnonzero(pool_class == cls)
        return np.where(rng.random(count) < p_same, rng.choice(same, count), rng.integers(0, len(pool_class), count))

    ws, wd, cs, cd, fs, fd = [], [], [], [], [], []
    for v in range(2, n["paper"]):
        k = int(rng.integers(1, 5))
        ws += pick(author_class, y[v], k).tolist()
        wd += [v] * k
        k = int(rng.integers(0, 8))
        cs += pick(y, y[v], k).tolist()
        cd += [v] * k
        fs.append(int(rng.integers(0, n["field"])))
        fd.append(v)
    cs += [5, 5, 7]  # duplicates and a self loop
    cd += [9, 9, 7]
    writes = np.array([ws, wd], dtype=np.int64)
    edges = {
        ("author", "writes", "paper"): writes,
        ("paper", "written_by", "author"): writes[::-1].copy(),
        ("paper", "cites", "paper"): np.array([cs, cd], dtype=np.int64),
        ("field", "has", "paper"): np.array([fs, fd], dtype=np.int64),
    }
    m = writes.shape[1]
    edge_feats = {("author", "writes", "paper"): {
        "w": rng.random(m).astype(np.float32),
        "pos": rng.integers(0, 100, (m, 3)).astype(np.int64),
    }}
    perm = rng.permutation(n["paper"])
    cut = [0, 300, 400, 500]
    sets = {"paper": {}}
    for k, split in enumerate(SETS):
        ids = np.sort(perm[cut[k]:cut[k + 1]])
        sets["paper"][split] = (ids, y[ids])
    return HeteroGraph(
        num_nodes=n,
        feats={"paper": {"feat": x_paper, "year": rng.integers(1990, 2024, (n["paper"], 1)).astype(np.int32)},
               "author": {"feat": x_author}},
        edges=edges,
        edge_feats=edge_feats,
        sets=sets,
        num_classes=classes,
    )


def acm(split: int = 60) -> HeteroGraph:
    """tierfs.datasets.acm as a HeteroGraph (features ``feat`` on every type, paper labels in
    HeCo's sets)."""
    a = tierfs.datasets.acm(split=split)
    num_nodes = {t: int(a[t]["num_nodes"]) for t in ("paper", "author", "subject")}
    edges = {k: v for k, v in a.items() if isinstance(k, tuple)}
    p = a["paper"]
    sets = {"paper": {s: (p[s], p["y"][p[s]]) for s in SETS}}
    return HeteroGraph(
        num_nodes=num_nodes,
        feats={t: {"feat": a[t]["x"]} for t in num_nodes},
        edges=edges,
        sets=sets,
        num_classes=int(p["y"].max()) + 1,
    )
