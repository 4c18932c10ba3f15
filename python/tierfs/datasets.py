"""Small real datasets: converted into tierfs datasets (Cora), or shipped with the package
(ACM, heterogeneous, in tierfs/data/)."""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import errors
from .build import ingest

__all__ = ["acm", "cora", "read_planetoid", "find_planetoid_raw"]

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


ACM_PATH = Path(__file__).resolve().parent / "data" / "acm.npz"
_ACM_SPLITS = (20, 40, 60)


def acm(as_pyg: bool = False, split: int = 20, derived_x: bool = True) -> Any:
    """The ACM heterogeneous graph of HeCo (Wang et al., KDD 2021), shipped with the package
    (``tierfs/data/acm.npz``, 0.4 MB; provenance and license in ``tierfs/data/acm.README.md``).

    Node types ``paper`` (4,019; 1,902 binary bag-of-keywords features, 3 classes: database,
    wireless communication, data mining), ``author`` (7,167) and ``subject`` (60). Edge types
    ``("paper", "to", "author")`` (13,407), ``("paper", "to", "subject")`` (4,019) and their
    reverses ``("author", "to", "paper")``, ``("subject", "to", "paper")``, named as PyG's
    ``HGBDataset("acm")`` names them; each sorted by (src, dst), no duplicates.

    Args:
        as_pyg: return a ``torch_geometric.data.HeteroData`` instead of numpy arrays.
        split: HeCo's split with ``split`` labelled training papers per class (20, 40 or 60);
            validation and test hold 1,000 papers each.
        derived_x: give ``author`` and ``subject`` features too: the mean of the binary
            features of their papers (the source has features on papers only). With False only
            ``paper`` carries ``x``.

    Returns (``as_pyg=False``) a dict: ``"paper"`` -> ``{"x": (4019, 1902) float32, "y": (4019,)
    int64, "train_mask"/"val_mask"/"test_mask": (4019,) bool, "train"/"val"/"test": sorted
    int64 ids, "num_nodes": 4019}``; ``"author"``, ``"subject"`` -> ``{"x"?, "num_nodes"}``;
    each ``(src, rel, dst)`` tuple -> its ``edge_index``, a (2, E) int64 array.
    """
    if split not in _ACM_SPLITS:
        raise ValueError(f"tierfs.datasets.acm: split must be one of {_ACM_SPLITS}, not {split!r}")
    with np.load(ACM_PATH) as z:
        f = {k: z[k] for k in z.files}
    n_paper, n_author, n_subject = (int(n) for n in f["num_nodes"])
    indptr = f["paper_x_indptr"].astype(np.int64)
    indices = f["paper_x_indices"].astype(np.int64)
    dim = int(f["paper_x_dim"])
    x = np.zeros((n_paper, dim), dtype=np.float32)
    x[np.repeat(np.arange(n_paper), np.diff(indptr)), indices] = 1.0
    y = f["paper_y"].astype(np.int64)
    paper: Dict[str, Any] = {"x": x, "y": y, "num_nodes": n_paper}
    for name in ("train", "val", "test"):
        ids = f[f"paper_{name}_{split}"].astype(np.int64)
        mask = np.zeros(n_paper, dtype=bool)
        mask[ids] = True
        paper[name], paper[f"{name}_mask"] = ids, mask
    out: Dict[Any, Any] = {"paper": paper, "author": {"num_nodes": n_author}, "subject": {"num_nodes": n_subject}}
    for dst, n_dst in (("author", n_author), ("subject", n_subject)):
        ei = f[f"paper_to_{dst}"].astype(np.int64)
        out[("paper", "to", dst)] = ei
        out[(dst, "to", "paper")] = _reverse(ei, n_paper)
        if derived_x:
            out[dst]["x"] = _mean_over(ei, indptr, indices, n_dst, dim)
    return _to_hetero_data(out) if as_pyg else out


def _reverse(edge_index: np.ndarray, n_src: int) -> np.ndarray:
    """The (dst, src) edges, sorted by their new (src, dst)."""
    src, dst = edge_index
    order = np.lexsort((src, dst))
    return np.stack([dst[order], src[order]])


def _mean_over(edge_index: np.ndarray, indptr: np.ndarray, indices: np.ndarray, n_dst: int, dim: int) -> np.ndarray:
    """Row d: the mean over the edges (p, d) of paper p's binary feature row (CSR ``indptr``,
    ``indices``); zeros where d has no edge."""
    src, dst = edge_index
    nnz = np.diff(indptr)[src]
    rows = np.repeat(dst, nnz)
    starts = np.repeat(indptr[src] - np.cumsum(nnz) + nnz, nnz)
    cols = indices[np.arange(rows.size) + starts]
    keys, counts = np.unique(rows * dim + cols, return_counts=True)
    out = np.zeros((n_dst, dim), dtype=np.float32)
    out.reshape(-1)[keys] = counts
    out /= np.maximum(np.bincount(dst, minlength=n_dst), 1).astype(np.float32)[:, None]
    return out


def _to_hetero_data(d: Dict[Any, Any]):
    import torch
    from torch_geometric.data import HeteroData

    data = HeteroData()
    for key, val in d.items():
        if isinstance(key, tuple):
            data[key].edge_index = torch.from_numpy(val)
            continue
        store = data[key]
        store.num_nodes = val["num_nodes"]
        for k, v in val.items():
            if k in ("x", "y") or k.endswith("_mask"):
                setattr(store, k, torch.from_numpy(v))
    return data
