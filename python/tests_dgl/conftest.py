"""Fixtures of the DGL integration tests: a small graph written as raw .npy files, ingested with
tierfs, opened without a host tier and with one holding every row.

The graph is homophilous (most in-neighbors share the node's class) and the features are a
class centroid plus noise, so a 2-layer GraphSAGE learns it quickly. It has nodes without
in-edges, duplicate edges and self loops, and a few unlabelled nodes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

import tierfs

NUM_NODES = 700
DIM = 24
CLASSES = 5


@dataclass
class RawGraph:
    dir: str  # the tierfs dataset
    raw_dir: Path  # the .npy files it was ingested from
    x: np.ndarray  # (N, DIM) float32, read back from the raw .npy
    y: np.ndarray  # (N,) int64, -1 unlabelled
    src: np.ndarray  # edges src -> dst, as ingested (duplicates and self loops kept)
    dst: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]

    def csc(self):
        """The CSC tierfs builds: in-neighbors of v in input order."""
        order = np.argsort(self.dst, kind="stable")
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.dst, minlength=self.num_nodes), out=indptr[1:])
        return indptr, self.src[order].astype(np.int64)

    def edge_set(self) -> set:
        return set(zip(self.src.tolist(), self.dst.tolist()))

    def in_degree(self) -> np.ndarray:
        return np.bincount(self.dst, minlength=self.num_nodes)


def _make_raw(raw: Path, seed: int = 7):
    rng = np.random.default_rng(seed)
    n = NUM_NODES
    y = rng.integers(0, CLASSES, n).astype(np.int64)
    centroids = rng.normal(0.0, 1.0, (CLASSES, DIM))
    x = (centroids[y] + rng.normal(0.0, 1.6, (n, DIM))).astype(np.float32)
    by_class = [np.flatnonzero(y == c) for c in range(CLASSES)]
    src, dst = [], []
    for v in range(n):
        if v % 50 == 0:
            continue  # no in-edges
        for _ in range(int(rng.integers(1, 13))):
            if rng.random() < 0.85:
                u = int(rng.choice(by_class[y[v]]))
            else:
                u = int(rng.integers(0, n))
            src.append(u)
            dst.append(v)
    # A few duplicate edges and self loops.
    for v in (3, 4, 5):
        src += [v, src[dst.index(v)]]
        dst += [v, v]
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    unlabelled = np.arange(7, n, 97)
    y[unlabelled] = -1
    labelled = rng.permutation(np.setdiff1d(np.arange(n), unlabelled))
    a, b = int(0.6 * len(labelled)), int(0.8 * len(labelled))
    splits = {"train": np.sort(labelled[:a]), "val": np.sort(labelled[a:b]), "test": np.sort(labelled[b:])}

    raw.mkdir(parents=True, exist_ok=True)
    np.save(raw / "edges.npy", np.stack([src, dst]))
    np.save(raw / "features.npy", x)
    np.save(raw / "labels.npy", y)
    (raw / "splits").mkdir(exist_ok=True)
    for name, ids in splits.items():
        np.save(raw / "splits" / f"{name}.npy", ids)
    return splits


@pytest.fixture(scope="session")
def graph(tmp_path_factory) -> RawGraph:
    root = tmp_path_factory.mktemp("tierfs-dgl")
    raw = root / "raw"
    _make_raw(raw)
    out = str(root / "dataset")
    tierfs.ingest(
        out,
        edges=str(raw / "edges.npy"),
        features=str(raw / "features.npy"),
        labels=str(raw / "labels.npy"),
        splits=str(raw / "splits"),
    )
    edges = np.load(raw / "edges.npy")
    return RawGraph(
        dir=out,
        raw_dir=raw,
        x=np.load(raw / "features.npy"),
        y=np.load(raw / "labels.npy"),
        src=edges[0],
        dst=edges[1],
        train=np.load(raw / "splits" / "train.npy"),
        val=np.load(raw / "splits" / "val.npy"),
        test=np.load(raw / "splits" / "test.npy"),
    )


@pytest.fixture(scope="session")
def store(graph):
    """The dataset with no host tier: every row is read from disk."""
    s = tierfs.open(graph.dir, host_cache=0)
    yield s
    s.close()


@pytest.fixture(scope="session")
def cached_store(graph):
    """The dataset with a host tier holding every row."""
    s = tierfs.open(graph.dir, host_cache=4 * NUM_NODES * DIM * 4)
    yield s
    s.close()


@pytest.fixture(autouse=True)
def _seed_torch():
    torch.manual_seed(0)


def cora_raw_dir():
    """The raw Planetoid Cora folder, or None when this checkout has no shared/ datasets."""
    try:
        from tierfs.datasets import find_planetoid_raw

        return find_planetoid_raw("cora")
    except (ImportError, AttributeError, tierfs.Error, OSError):
        return None


REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_dgl_graphsage.py"
os.environ.setdefault("OMP_NUM_THREADS", "2")
