"""Small real datasets converted into tierfs datasets (for examples and end-to-end tests)."""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Union

import numpy as np

from . import errors
from .build import ingest

__all__ = ["cora", "read_planetoid", "find_planetoid_raw"]

PathLike = Union[str, os.PathLike]
_PLANETOID_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def find_planetoid_raw(name: str = "cora") -> Path:
    """The raw Planetoid folder of ``name``: ``$TIERFS_DATASETS/planetoid-<name>/raw``, else
    ``shared/datasets/planetoid-<name>/raw`` in (or beside) a parent of this package or of the
    working directory (the checkout's ``../shared``)."""
    rel = Path("datasets") / f"planetoid-{name}" / "raw"
    tried: List[Path] = []
    env = os.environ.get("TIERFS_DATASETS")
    cands: List[Path] = []
    if env:
        cands.append(Path(env) / f"planetoid-{name}" / "raw")
    seen = set()
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for d in (start, *start.parents):
            for c in (d / "shared" / rel,):
                if c not in seen:
                    seen.add(c)
                    cands.append(c)
    for c in cands:
        if (c / f"ind.{name}.graph").is_file():
            return c
        tried.append(c)
    raise errors.NotFoundError(
        f"tierfs.datasets: no raw Planetoid {name!r} files (ind.{name}.*) found; looked in "
        + ", ".join(str(t) for t in tried[:6])
        + (" ..." if len(tried) > 6 else "")
        + "; pass source= or set TIERFS_DATASETS"
    )


def _read(folder: Path, prefix: str, name: str):
    path = folder / f"ind.{prefix}.{name}"
    if name == "test.index":
        return np.loadtxt(path, dtype=np.int64).reshape(-1)
    with path.open("rb") as f:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*scipy.sparse.csr.*")
            out = pickle.load(f, encoding="latin1")
    if name == "graph":
        return out
    if hasattr(out, "todense"):
        out = np.asarray(out.todense())
    return np.asarray(out, dtype=np.float32)


def read_planetoid(folder: PathLike, prefix: str = "cora") -> Dict[str, np.ndarray]:
    """Reads the raw Planetoid files as PyG's ``read_planetoid_data`` does (Cora and PubMed
    layout): features, labels, the coalesced edge list without self loops, and the standard
    split (train: the labelled ``y`` rows, val: the next 500, test: ``test.index``).

    Returns a dict of numpy arrays: ``x`` (N, F) float32, ``y`` (N,) int64, ``edge_index``
    (2, E) int64 sorted by (row, col), ``train``, ``val``, ``test`` node ids.
    """
    folder = Path(folder)
    prefix = prefix.lower()
    x, tx, allx, y, ty, ally, graph, test_index = (_read(folder, prefix, n) for n in _PLANETOID_FILES)
    if prefix in ("citeseer", "nell.0.001"):
        raise NotImplementedError(f"read_planetoid: {prefix} needs the isolated-node fix-ups; use Cora or PubMed")
    train = np.arange(y.shape[0], dtype=np.int64)
    val = np.arange(y.shape[0], y.shape[0] + 500, dtype=np.int64)
    sorted_test = np.sort(test_index)
    feats = np.concatenate([allx, tx], axis=0)
    feats[test_index] = feats[sorted_test]
    labels = np.concatenate([ally, ty], axis=0).argmax(axis=1).astype(np.int64)
    labels[test_index] = labels[sorted_test]
    n = labels.shape[0]
    rows = np.concatenate([np.full(len(v), k, dtype=np.int64) for k, v in graph.items()])
    cols = np.concatenate([np.asarray(v, dtype=np.int64) for v in graph.values()])
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    key = np.unique(rows * n + cols)  # coalesce: sort by (row, col), drop duplicates
    edge_index = np.stack([key // n, key % n])
    return {
        "x": feats.astype(np.float32),
        "y": labels,
        "edge_index": edge_index,
        "train": train,
        "val": val,
        "test": test_index.astype(np.int64),
    }


def cora(out_dir: PathLike, source: Optional[PathLike] = None, force: bool = False) -> str:
    """Converts Planetoid Cora into a tierfs dataset in ``out_dir`` and returns its path.

    2,708 nodes, 10,556 directed edges (5,278 undirected pairs, both directions stored, self
    loops and duplicates dropped, as PyG's ``Planetoid``), 1,433 float32 features, 7 classes,
    the standard split (train 140, val 500, test 1000).

    Args:
        out_dir: dataset directory; an existing Cora dataset there is reused unless ``force``.
        source: the folder holding ``ind.cora.*``; default: found by
            :func:`find_planetoid_raw` (``../shared/datasets/planetoid-cora/raw`` beside the
            checkout).
        force: rebuild even if ``out_dir`` holds a dataset.
    """
    out = os.fspath(out_dir)
    if not force and os.path.isfile(os.path.join(out, "manifest.json")):
        return out
    folder = Path(source) if source is not None else find_planetoid_raw("cora")
    d = read_planetoid(folder, "cora")
    return ingest(
        out,
        edges=d["edge_index"],
        features=d["x"],
        labels=d["y"],
        splits={"train": d["train"], "val": d["val"], "test": d["test"]},
        undirected=True,
        dedup=True,
        drop_self_loops=True,
    )
