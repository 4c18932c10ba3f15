"""tierfs.from_graphbolt and `tierfs ingest --graphbolt`: a DGL GraphBolt on-disk dataset
(metadata.yaml with CSV or .npy edges, .npy features, a node classification task) ingested and
read back against the input arrays, and its refusals."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import tierfs
from conftest import SEED, rng

METADATA = """dataset_name: test
graph:
  nodes:
    - type: paper
      num: {n}
  edges:
    - type: "paper:cites:paper"
      format: {edge_format}
      path: edges/cites.{edge_ext}
feature_data:
  - domain: node
    type: paper
    name: feat
    format: numpy
    in_memory: false
    path: data/feat.npy
  - domain: node
    type: paper
    name: year
    format: numpy
    path: data/year.npy
  - domain: edge
    type: "paper:cites:paper"
    name: weight
    format: numpy
    path: data/weight.npy
tasks:
  - name: node_classification
    num_classes: 5
    train_set:
      - type: paper
        data:
          - name: seeds
            format: numpy
            path: set/train-seeds.npy
          - name: labels
            format: numpy
            path: set/train-labels.npy
    validation_set:
      - type: paper
        data:
          - name: seeds
            format: numpy
            path: set/val-seeds.npy
          - name: labels
            format: numpy
            path: set/val-labels.npy
"""


def make_graphbolt(root, r, n=300, csv=True):
    for d in ("edges", "data", "set"):
        (root / d).mkdir(parents=True, exist_ok=True)
    ei = r.integers(0, n, (2, 2000))
    _, first = np.unique(ei[0] * n + ei[1], return_index=True)
    ei = ei[:, np.sort(first)]
    if csv:
        np.savetxt(root / "edges" / "cites.csv", ei.T, fmt="%d", delimiter=",")
    else:
        np.save(root / "edges" / "cites.npy", ei)
    a = {"feat": r.standard_normal((n, 8)).astype(np.float32), "year": r.integers(1990, 2024, n).astype(np.int16),
         "weight": r.random(ei.shape[1]).astype(np.float32)}
    for k, v in a.items():
        np.save(root / "data" / f"{k}.npy", v)
    perm = r.permutation(n)
    y = (np.arange(n) * 7) % 5
    a["train"], a["val"] = perm[:150], perm[150:200]
    for name in ("train", "val"):
        np.save(root / "set" / f"{name}-seeds.npy", a[name])
        np.save(root / "set" / f"{name}-labels.npy", y[a[name]])
    a["y"] = np.full(n, -1)
    a["y"][perm[:200]] = y[perm[:200]]
    (root / "metadata.yaml").write_text(METADATA.format(n=n, edge_format="csv" if csv else "numpy", edge_ext="csv" if csv else "npy"))
    return ei, a


@pytest.mark.parametrize("csv", [True, False])
def test_from_graphbolt_round_trip(tmp_path, csv):
    ei, a = make_graphbolt(tmp_path / "gb", rng(150 + csv), csv=csv)
    path = tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds")
    which = {(int(s), int(d)): i for i, (s, d) in enumerate(ei.T)}
    with tierfs.open(path) as s:
        assert s.feature_name == "feat" and list(s.features) == ["feat", "year", "weight", "input_edge_id"]
        ids = np.arange(s.num_nodes())
        np.testing.assert_array_equal(s.gather(ids), a["feat"], err_msg=f"seed {SEED}")
        np.testing.assert_array_equal(s.gather(ids, feature="year"), a["year"])
        np.testing.assert_array_equal(s.labels(ids), a["y"])
        np.testing.assert_array_equal(s.split("train"), a["train"])
        np.testing.assert_array_equal(s.split("val"), a["val"])
        assert s.split_names == ["train", "val"] and s.num_classes == 5
        smp = s.sampler([-1]).sample(ids)
        rows = [which[(int(smp.nodes[r]), int(smp.nodes[c]))] for r, c in zip(smp.row, smp.col)]
        assert smp.num_edges == ei.shape[1]
        np.testing.assert_array_equal(s.gather(smp.e_id, feature="weight"), a["weight"][rows])


def test_graphbolt_cli_and_refusals(tmp_path, cli):
    make_graphbolt(tmp_path / "gb", rng(152))
    run = subprocess.run([cli, "ingest", "--graphbolt", str(tmp_path / "gb"), "--out", str(tmp_path / "ds")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "feat: 8 x float32" in run.stdout and "weight: float32 scalar" in run.stdout
    md = (tmp_path / "gb" / "metadata.yaml").read_text()
    (tmp_path / "gb" / "metadata.yaml").write_text(md.replace("name: year\n    format: numpy", "name: year\n    format: torch"))
    with pytest.raises(ValueError, match=r'feature_data\[1\] \(node paper year\) has format "torch"'):
        tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "bad")
    with pytest.raises(FileNotFoundError):
        tierfs.from_graphbolt(tmp_path / "nope", tmp_path / "bad")
    assert not (tmp_path / "bad").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


SECOND_TASK = """  - name: other_task
    num_classes: 3
    train_set:
      - type: paper
        data:
          - name: seeds
            format: numpy
            path: set/other-seeds.npy
          - name: labels
            format: numpy
            path: set/other-labels.npy
"""


def test_graphbolt_task(tmp_path, cli):
    """A GraphBolt dataset with two tasks: each ingested by name and by index (Python and CLI),
    the first by default, an unknown one refused with the tasks listed."""
    r = rng(153)
    _, a = make_graphbolt(tmp_path / "gb", r)
    n = len(a["y"])
    seeds = np.sort(r.choice(n, 40, replace=False))
    np.save(tmp_path / "gb" / "set" / "other-seeds.npy", seeds)
    np.save(tmp_path / "gb" / "set" / "other-labels.npy", seeds % 3)
    with open(tmp_path / "gb" / "metadata.yaml", "a") as f:
        f.write(SECOND_TASK)
    other_y = np.full(n, -1)
    other_y[seeds] = seeds % 3
    for i, task in enumerate([None, "node_classification", 0, "other_task", 1]):
        path = tierfs.from_graphbolt(tmp_path / "gb", tmp_path / f"ds{i}", task=task)
        first = task in (None, "node_classification", 0)
        with tierfs.open(path) as s:
            ids = np.arange(n)
            np.testing.assert_array_equal(s.labels(ids), a["y"] if first else other_y, err_msg=f"task {task!r}, seed {SEED}")
            np.testing.assert_array_equal(s.split("train"), a["train"] if first else seeds)
            assert s.split_names == (["train", "val"] if first else ["train"])
    run = subprocess.run([cli, "ingest", "--graphbolt", str(tmp_path / "gb"), "--graphbolt-task", "other_task", "--out", str(tmp_path / "cli")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with tierfs.open(tmp_path / "cli") as s:
        np.testing.assert_array_equal(s.split("train"), seeds)
    with pytest.raises(ValueError, match=r'no task "nope"; its tasks are 0: "node_classification", 1: "other_task"'):
        tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "bad", task="nope")
    with pytest.raises(ValueError, match=r'no task "2"'):
        tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "bad", task=2)
    with pytest.raises(TypeError, match="task must be"):
        tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "bad", task=1.0)
    assert not (tmp_path / "bad").exists()


def test_graphbolt_features_in_place(tmp_path):
    """from_graphbolt(features_in_place=True) reads GraphBolt's node feature .npy files where
    they are (edge features are copied)."""
    _, a = make_graphbolt(tmp_path / "gb", rng(154), csv=False)
    path = tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds", features_in_place=True)
    with open(tmp_path / "ds" / "manifest.json") as f:
        m = json.load(f)
    feats = {f["name"]: f for f in m["node_types"][0]["features"]}
    assert feats["feat"]["files"] == [str(tmp_path / "gb" / "data" / "feat.npy")] and feats["year"].get("in_place")
    assert not m["edge_types"][0]["features"][0].get("in_place")
    with tierfs.open(path) as s:
        ids = np.arange(s.num_nodes())
        np.testing.assert_array_equal(s.gather(ids), np.load(tmp_path / "gb" / "data" / "feat.npy", mmap_mode="r"), err_msg=f"seed {SEED}")
        np.testing.assert_array_equal(s.gather(ids, feature="year"), a["year"])
