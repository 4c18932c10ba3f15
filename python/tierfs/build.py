"""Making datasets: :func:`ingest` from arrays or files, :func:`from_graphbolt`, :func:`synth` for
benchmarks; :func:`verify` and :func:`upgrade` of a dataset. :mod:`tierfs.frompyg` makes them from PyG."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native, _util, errors
from ._args import _c_str
from ._native import check, lib
from ._progress import ProgressLike, _progress_callback
from .storegather import dtype_name

__all__ = ["ingest", "synth", "from_graphbolt", "verify", "upgrade"]

PathLike = Union[str, os.PathLike]
_SPLIT_NAMES = ("train", "val", "test")
# Other names the same splits go by (OGB's get_idx_split says "valid").
_SPLIT_ALIASES = {"valid": "val", "validation": "val"}


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _to_numpy(x: Any, what: str) -> tuple[np.ndarray, Optional[str]]:
    """x as a numpy array, and the feature dtype to declare when numpy cannot hold it."""
    if _util.is_tensor(x):
        import torch

        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
        return t.numpy(), None
    if isinstance(x, np.ndarray):
        return x, None
    if isinstance(x, (list, tuple, range)):
        return np.asarray(x), None
    raise errors.DTypeError(f"{what}: want a numpy array, a torch tensor or a file path, got {type(x).__name__}")


def _run_with_progress(plain: Any, with_progress: Any, opts: Dict[str, Any], progress: ProgressLike) -> None:
    """One native synth/ingest call, reporting to progress when given; the callback's first
    exception is raised after the call."""
    request = json.dumps(opts).encode()
    cb, errs = _progress_callback(progress)
    if cb is None:
        check(plain(request))
        return
    check(with_progress(request, cb, None))
    if errs:
        raise errs[0]


def _labels_array(labels: Any) -> np.ndarray:
    """Labels as 1-D int64, -1 for unlabelled: OGB's (N, 1) shape is flattened, float labels
    (NaN where unlabelled, as OGB's papers100M) become integers when every other value is one."""
    arr, _ = _to_numpy(labels, "labels")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise errors.InvalidArgumentError(f"ingest: labels must be 1-D (or (N, 1)), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        nan = np.isnan(arr)
        vals = arr[~nan]
        if vals.size and (not np.all(vals == np.floor(vals)) or vals.min() < -1 or vals.max() > np.iinfo(np.int32).max):
            i = int(np.flatnonzero(~nan)[np.argmax((vals != np.floor(vals)) | (vals < -1) | (vals > np.iinfo(np.int32).max))])
            raise errors.InvalidArgumentError(f"ingest: labels[{i}] = {arr[i]} is not a class id (labels must be integers, -1 or NaN for unlabelled)")
        out = np.full(arr.shape, -1, dtype=np.int64)
        out[~nan] = vals.astype(np.int64)
        return out
    if arr.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(f"ingest: labels must be integers (or floats with NaN for unlabelled), got {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _is_pyg_data(x: Any) -> bool:
    return type(x).__name__ in ("Data", "HeteroData") and type(x).__module__.startswith("torch_geometric")


def _input_path(x: PathLike, what: str) -> str:
    p = os.fspath(x)
    if not os.path.exists(p):
        raise errors.NotFoundError(f"ingest: {what}: {p}: no such file or directory")
    return p


def _save(dirpath: Path, name: str, arr: np.ndarray) -> str:
    path = dirpath / f"{name}.npy"
    np.save(path, np.ascontiguousarray(arr), allow_pickle=False)
    return str(path)


def _edge_split_arrays(value: Any, what: str) -> tuple:
    """One edge split as (seeds (2, n) int64, labels (n,) or None, negatives (n, k) or None), from
    PyG's ``(edge_label_index, edge_label)`` (or ``edge_label_index`` alone), OGB's
    ``{"source_node", "target_node"[, "target_node_neg"]}`` or ``{"edge"[, "edge_neg"]}`` (the
    negatives become seeds labelled 0 after the positives' 1s, as PyG's RandomLinkSplit lays
    them out) or ``{"edge_label_index", "edge_label"}``."""
    def ints(x: Any, part: str) -> np.ndarray:
        arr, _ = _to_numpy(x, f"{what} {part}")
        if arr.dtype.kind not in "iu":
            raise errors.DTypeError(f"ingest: {what} {part} must be integer node ids, got {arr.dtype}")
        return arr.astype(np.int64, copy=False)

    def pairs(x: Any, part: str) -> np.ndarray:
        arr = ints(x, part)
        if arr.ndim == 2 and arr.shape[0] == 2:
            return arr
        if arr.ndim == 2 and arr.shape[1] == 2:
            return arr.T
        raise errors.InvalidArgumentError(f"ingest: {what} {part} has shape {arr.shape}; want (2, n) or (n, 2) (src, dst) pairs")

    labels = neg = None
    if isinstance(value, Mapping):
        keys = set(value)
        if {"source_node", "target_node"} <= keys:
            src, dst = ints(value["source_node"], "source_node"), ints(value["target_node"], "target_node")
            if src.ndim != 1 or src.shape != dst.shape:
                raise errors.InvalidArgumentError(f"ingest: {what} source_node {src.shape} and target_node {dst.shape} must be 1-D of one length")
            seeds = np.stack([src, dst])
            if "target_node_neg" in keys:
                neg = ints(value["target_node_neg"], "target_node_neg")
                if neg.ndim == 1:
                    neg = neg.reshape(-1, 1)
            extra = keys - {"source_node", "target_node", "target_node_neg"}
        elif "edge" in keys:
            seeds = pairs(value["edge"], "edge")
            if "edge_neg" in keys:
                negs = pairs(value["edge_neg"], "edge_neg")
                labels = np.concatenate([np.ones(seeds.shape[1], np.float32), np.zeros(negs.shape[1], np.float32)])
                seeds = np.concatenate([seeds, negs], axis=1)
            extra = keys - {"edge", "edge_neg"}
        elif "edge_label_index" in keys:
            seeds = pairs(value["edge_label_index"], "edge_label_index")
            if value.get("edge_label") is not None:
                labels, _ = _to_numpy(value["edge_label"], f"{what} edge_label")
            extra = keys - {"edge_label_index", "edge_label"}
        else:
            raise errors.InvalidArgumentError(f"ingest: {what} has keys {sorted(map(str, keys))}; want OGB's source_node/target_node"
                                              "[/target_node_neg] or edge[/edge_neg], or PyG's edge_label_index[/edge_label]")
        if extra:
            raise errors.InvalidArgumentError(f"ingest: {what} has keys tierfs does not store: {sorted(map(str, extra))}")
    elif isinstance(value, (tuple, list)) and len(value) in (1, 2) and not np.isscalar(value[0]):
        seeds = pairs(value[0], "edge_label_index")
        if len(value) == 2 and value[1] is not None:
            labels, _ = _to_numpy(value[1], f"{what} edge_label")
    else:
        seeds = pairs(value, "edge_label_index")
    if labels is not None:
        labels = np.asarray(labels)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.dtype.kind == "f" and labels.dtype != np.float64:
            labels = labels.astype(np.float32)
    return seeds, labels, neg


def _edge_split_entries(edge_splits: Any, save: Any, edge_type: Optional[str] = None) -> List[Dict[str, Any]]:
    """The ``edge_splits`` entries of tfs_ingest for ``{split: value}`` (values as
    :func:`_edge_split_arrays` takes them), the arrays saved by ``save(name, array, what)``."""
    if not isinstance(edge_splits, Mapping):
        raise errors.DTypeError(f"ingest: edge_splits must be a dict of split name -> seed edges, got {type(edge_splits).__name__}")
    out = []
    for name, value in edge_splits.items():
        split = _SPLIT_ALIASES.get(name, name)
        if split not in _SPLIT_NAMES:
            raise errors.InvalidArgumentError(f"ingest: edge_splits: unknown split {name!r}; want train, val (or valid), test")
        what = f"edge_splits[{name!r}]" if edge_type is None else f"edge_splits[{edge_type!r}][{name!r}]"
        seeds, labels, neg = _edge_split_arrays(value, what)
        entry: Dict[str, Any] = {"split": split, "seeds": save("edge-split-seeds", seeds, f"<{what} seeds>")}
        if edge_type is not None:
            entry["edge_type"] = edge_type
        if labels is not None:
            entry["labels"] = save("edge-split-labels", labels, f"<{what} labels>")
        if neg is not None:
            entry["neg_dst"] = save("edge-split-neg", neg, f"<{what} negatives>")
        out.append(entry)
    return out


def ingest(
    out: PathLike,
    edges: Any = None,
    features: Any = None,
    labels: Any = None,
    splits: Union[Mapping[str, Any], PathLike, None] = None,
    undirected: bool = False,
    device_paths: Optional[Sequence[PathLike]] = None,
    *,
    num_nodes: Optional[int] = None,
    drop_self_loops: bool = False,
    dedup: bool = False,
    feature_dtype: Optional[str] = None,
    tmp_dir: Optional[PathLike] = None,
    force: bool = False,
    edge_columns: Optional[Sequence[Union[str, int]]] = None,
    progress: ProgressLike = None,
    node_features: Optional[Mapping[str, Any]] = None,
    edge_features: Optional[Mapping[str, Any]] = None,
    features_in_place: bool = False,
    edge_splits: Optional[Mapping[str, Any]] = None,
    store_dtype: Any = None,
) -> str:
    """Builds a dataset in the directory ``out`` and returns its path.

    Each input is an array (numpy or torch) or a file path; arrays are written to temporary
    ``.npy`` files (next to ``out`` unless ``tmp_dir`` is given, since they can be large) and
    removed afterwards. One native call (``tfs_ingest``) does the work, streaming with bounded
    memory.

    Args:
        out: dataset directory to write. One that holds a dataset (or any file) is refused unless
            ``force``; then the new dataset is written beside it and swapped in once complete
            (stores open on the old one keep reading it).
        edges: ``(2, E)`` or ``(E, 2)`` integer array of (src, dst) pairs; or a ``.npy``, a
            CSV/TSV text edge list (``.csv``, ``.tsv``, ``.txt``, ``.edges``, ``.el``; ``#``/``%``
            comment lines, an optional header), a Parquet or Arrow IPC file (integer columns src
            and dst, or source and target, else the first two). None: no topology.
        features: ``(N, dim)`` array of any supported dtype (float32, float16, bfloat16 as a
            torch tensor or uint16 bits with ``feature_dtype="bfloat16"``, float64, int8, uint8,
            int16, int32, int64); or a 2-D ``.npy``/Parquet/Arrow IPC file. None: no features.
        labels: 1-D integer array, one class per node, -1 unlabelled; or a ``.npy`` file.
        splits: ``{"train": ids_or_mask, "val": ..., "test": ...}`` (node ids or boolean
            masks), or a directory holding train.npy / val.npy / test.npy.
        undirected: add the reverse of every edge.
        device_paths: directories on other devices to stripe the features over, one file each.
        num_nodes: node count (default: feature rows, else labels, else largest id + 1).
        drop_self_loops: drop edges v -> v.
        dedup: drop repeated edges (and sort each neighbor list).
        feature_dtype: dtype of features whose array dtype does not say it (``"bfloat16"``
            for uint16/int16 bits, or raw void values).
        tmp_dir: where to write the temporary ``.npy`` files.
        force: replace what ``out`` holds.
        edge_columns: ``(src, dst)`` columns of a table edges file, by name or 0-based index.
        progress: ``callable(stage, done, total)`` called as the work advances (about every
            100 ms per stage, and when a stage completes; total 0 when not known up front), or
            True for a bar per stage (tqdm where installed).
        features_in_place: read the node features' ``.npy`` files (``features`` and
            ``node_features``, given as paths: C-order, little-endian) where they are instead of
            copying them into ``out``, so the disk holds the features once. They are checksummed
            at ingest; a store refuses a file whose size or modification time changed since;
            tierfs never writes, moves or removes it (keep it outside ``out``). Rows there are
            not block-aligned, so a row can cost two block reads. Edge features are copied.
        edge_splits: seed edges of link prediction, ``{"train": ..., "val" (or "valid"): ...,
            "test": ...}``, each PyG's ``(edge_label_index, edge_label)`` (edge_label may be
            None), an ``edge_label_index`` alone, or one split of OGB's ``get_edge_split()``
            (``{"source_node", "target_node"[, "target_node_neg"]}`` or ``{"edge"[,
            "edge_neg"]}``: negatives become seeds labelled 0 after the positives' 1s). Read back
            with ``store.edge_split(name)``; ids outside the graph's nodes are refused.
        store_dtype: ``"float16"`` or ``"bfloat16"`` (or ``torch.float16``, ``np.float16``, ...):
            store the float32 features at that dtype, so the disk, every read and every cached
            row hold half the bytes; gathers return it (``store.gather(ids, dtype=torch.float32)``
            casts after the rows arrive). Rounded to nearest, ties to even, as numpy's
            ``astype`` and torch's ``.to`` (bit for bit); NaN and Inf stay; a finite value
            float16 can hold only as Inf (``|x| >= 65520``) raises ValueError naming the
            feature, row, column and value. Integer features other than the default are kept;
            other dtypes (float64) raise. Not with ``features_in_place``.

    Raises:
        ValueError (tierfs.InvalidArgumentError): inputs that do not fit together (the core's
            message names the input and the problem).
        FileNotFoundError (tierfs.NotFoundError): an input file that does not exist.
    """
    _native.check_process()
    out = os.fspath(out)
    _check_ingest_inputs(edges, features, labels, node_features, edge_features)
    opts: Dict[str, Any] = {"out": out}
    if features_in_place:
        given = [("features", features)] + [(f"node_features[{k!r}]", v) for k, v in (node_features or {}).items()]
        arrays = [what for what, v in given if v is not None and not _is_path(v)]
        if arrays:
            raise errors.InvalidArgumentError(f"ingest: features_in_place needs the node features as .npy paths; {', '.join(arrays)} "
                                              "is an array (np.save it where it should stay and pass the path)")
        opts["features_in_place"] = True
    with Staging(out, tmp_dir) as staging:
        declared = _graph_inputs(opts, staging, edges, features, labels, splits)
        if declared and feature_dtype is None:
            feature_dtype = declared
        for what, named in (("node", node_features), ("edge", edge_features)):
            listed = _named_feature_inputs(staging, what, named)
            if listed:
                opts[f"{what}_features"] = listed
        if edge_splits is not None:
            opts["edge_splits"] = _edge_split_entries(edge_splits, staging.save)
        for key, on in (("undirected", undirected), ("drop_self_loops", drop_self_loops), ("dedup", dedup)):
            if on:
                opts[key] = True
        if num_nodes:
            opts["num_nodes"] = int(num_nodes)
        if feature_dtype:
            opts["feature_dtype"] = str(feature_dtype)
        _out_options(opts, device_paths, force, store_dtype)
        if edge_columns is not None:
            cols = [str(c) for c in edge_columns]
            if len(cols) != 2:
                raise errors.InvalidArgumentError(f"ingest: edge_columns must be (src, dst), got {edge_columns!r}")
            opts["edge_columns"] = cols
        staging.run(lib.tfs_ingest, lib.tfs_ingest_progress, opts, progress)
    return out


def _check_ingest_inputs(edges: Any, features: Any, labels: Any, node_features: Any, edge_features: Any) -> None:
    """Refuses, before anything is written, inputs :func:`ingest` cannot take together."""
    if _is_pyg_data(edges):
        raise errors.InvalidArgumentError("ingest: edges is a PyG Data object; use tierfs.from_pyg(data, out)")
    if edges is None and features is None and labels is None and not node_features:
        raise errors.InvalidArgumentError("ingest: nothing to ingest: give edges, features, node_features or labels")
    for what, named in (("node_features", node_features), ("edge_features", edge_features)):
        if named is not None and not isinstance(named, Mapping):
            raise errors.DTypeError(f"ingest: {what} must be a dict of name -> array or file, got {type(named).__name__}")
        for key in named or {}:
            if not isinstance(key, str):
                raise errors.DTypeError(f"ingest: {what} names must be str, got {key!r}")


def _graph_inputs(opts: Dict[str, Any], staging: "Staging", edges: Any, features: Any, labels: Any, splits: Any) -> Optional[str]:
    """Puts the edges, features, labels and splits into ``opts`` (a file given as it is, an array
    staged as ``.npy``); returns the features' dtype where their array declares one (bfloat16)."""
    declared = None
    if edges is not None:
        if _is_path(edges):
            opts["edges"] = _input_path(edges, "edges")
        else:
            arr, _ = _to_numpy(edges, "edges")
            if arr.ndim != 2 or 2 not in arr.shape:
                raise errors.InvalidArgumentError(f"ingest: edges must have shape (2, E) or (E, 2), got {arr.shape}")
            if arr.dtype.kind not in "iu":
                raise errors.DTypeError(f"ingest: edges must be integers, got {arr.dtype}")
            opts["edges"] = staging.save("edges", arr, "<the edges array>")
    if features is not None:
        if _is_path(features):
            opts["features"] = _input_path(features, "features")
        else:
            arr, declared = _to_numpy(features, "features")
            if arr.ndim != 2:
                raise errors.InvalidArgumentError(f"ingest: features must be 2-D (nodes, dim), got shape {arr.shape}")
            opts["features"] = staging.save("features", arr, "<the features array>")
    if labels is not None:
        if _is_path(labels):
            opts["labels"] = _input_path(labels, "labels")
        else:
            opts["labels"] = staging.save("labels", _labels_array(labels), "<the labels array>")
    if splits is not None:
        if _is_path(splits):
            opts["splits"] = _input_path(splits, "splits")
        else:
            opts["splits"] = _staged_splits(staging, splits)
    return declared


def _staged_splits(staging: "Staging", splits: Mapping[str, Any]) -> str:
    """The directory of train.npy / val.npy / test.npy that ``splits`` ({name: ids or mask}) become."""
    named = {_SPLIT_ALIASES.get(k, k): v for k, v in splits.items()}
    bad = sorted(set(named) - set(_SPLIT_NAMES))
    if bad:
        raise errors.InvalidArgumentError(f"ingest: unknown split name(s) {bad}; want train, val (or valid), test")
    if len(named) != len(splits):
        raise errors.InvalidArgumentError(f"ingest: splits name the same split twice: {sorted(splits)}")
    d = staging.path() / "splits"
    d.mkdir()
    staging.name(str(d), "<the splits arrays>")
    for name, ids in named.items():
        arr, _ = _to_numpy(ids, f"splits[{name!r}]")
        if arr.dtype.kind not in "iub" or arr.ndim != 1:
            raise errors.InvalidArgumentError(f"ingest: splits[{name!r}] must be 1-D node ids or a boolean mask, got {arr.dtype} of shape {arr.shape}")
        _save(d, name, arr if arr.dtype == np.bool_ else arr.astype(np.int64, copy=False))
    return str(d)


def _named_feature_inputs(staging: "Staging", what: str, named: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The ``node_features`` / ``edge_features`` entries (``what``: "node" or "edge") of tfs_ingest."""
    listed = []
    for name, value in (named or {}).items():
        entry: Dict[str, Any] = {"name": name}
        if _is_path(value):
            entry["path"] = _input_path(value, f"{what} feature {name!r}")
        else:
            arr, declared = _to_numpy(value, f"{what}_features[{name!r}]")
            rows = "N" if what == "node" else "E"
            if arr.ndim not in (1, 2):
                raise errors.InvalidArgumentError(f"ingest: {what}_features[{name!r}] must be ({rows}, dim) or ({rows},), got shape {arr.shape}")
            if declared:
                entry["dtype"] = declared
            entry["path"] = staging.save(f"{what}-feature", arr, f"<the {what}_features[{name!r}] array>")
        listed.append(entry)
    return listed


class Staging:
    """The temporary ``.npy`` files of the arrays a caller gave a native ingest: in a directory
    made on first use beside ``out`` (or in ``tmp_dir``: they can be large), removed on exit.
    Each is recorded with what the caller gave, so the core's errors name that instead."""

    def __init__(self, out: str, tmp_dir: Optional[PathLike]) -> None:
        self._base = Path(tmp_dir) if tmp_dir is not None else Path(out).resolve().parent
        self._dir: Optional[Path] = None
        self._given: Dict[str, str] = {}  # staged path -> what the caller gave

    def path(self) -> Path:
        """The staging directory (made now if it is not yet)."""
        if self._dir is None:
            self._base.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix=".tierfs-ingest-", dir=self._base))
        return self._dir

    def save(self, name: str, arr: np.ndarray, what: str) -> str:
        """Stages arr as a ``.npy`` file and returns its path; errors say ``what`` for it."""
        path = _save(self.path(), f"{len(self._given)}-{name}", arr)
        self._given[path] = what
        return path

    def name(self, path: str, what: str) -> None:
        """Errors say ``what`` for the staged ``path`` (a directory of arrays)."""
        self._given[path] = what

    def run(self, plain: Any, with_progress: Any, opts: Dict[str, Any], progress: ProgressLike) -> None:
        """The native ingest of opts; its error names what the caller gave, not staged paths."""
        try:
            _run_with_progress(plain, with_progress, opts, progress)
        except errors.Error as err:
            msg = err.message
            for path, what in self._given.items():
                msg = msg.replace(path, what)
            if msg == err.message:
                raise
            raise type(err)(msg, err.status) from None

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def synth(
    out: PathLike,
    nodes: Optional[int] = None,
    avg_degree: Optional[float] = None,
    dim: Optional[int] = None,
    dtype: Optional[str] = None,
    classes: Optional[int] = None,
    seed: int = 0,
    device_paths: Optional[Sequence[PathLike]] = None,
    train_frac: Optional[float] = None,
    val_frac: Optional[float] = None,
    test_frac: Optional[float] = None,
    degree_exponent: Optional[float] = None,
    locality: Optional[float] = None,
    community_size: Optional[int] = None,
    preset: Optional[str] = None,
    scale: Optional[float] = None,
    force: bool = False,
    progress: ProgressLike = None,
) -> str:
    """Writes a deterministic power-law graph with features, labels and splits to ``out`` and
    returns its path (the same seed gives the same bytes). One native call (``tfs_synth``).

    Args:
        out: dataset directory to write.
        nodes: number of nodes (required without ``preset``; with one, overrides its count
            and keeps its average degree).
        avg_degree: average in-degree (required without ``preset``).
        dim: feature dimension (required without ``preset``).
        dtype: feature dtype: float32 (the default), float16, bfloat16, float64, int8, uint8,
            int16, int32, int64.
        classes: label classes (default 16).
        seed: random seed.
        device_paths: directories on other devices to stripe the features over.
        train_frac, val_frac, test_frac: expected split fractions (defaults 0.1, 0.05, 0.05;
            each node falls in a split by a hash, so sizes are close to, not exactly, these).
        degree_exponent: power-law degree exponent gamma in [1.5, 100], smaller is more
            skewed; None or 0 keeps the R-MAT generator.
        locality: fraction of edges in [0, 1] whose destination is in the source's community.
        community_size: ids per community, a block of consecutive ids (default 1024).
        preset: shape like a real dataset: ``"ogbn-products"``, ``"ogbn-papers100M"``,
            ``"igb-small"``, ``"igb-medium"``; the arguments given override its values. The
            heterogeneous presets ``"ogbn-mag"``, ``"igbh-small"``, ``"mag240m"`` (several node
            and edge types, docs/synth.md) take ``scale``, ``seed``, ``degree_exponent``,
            ``locality``, ``community_size``, ``device_paths`` and ``force`` only.
        scale: with ``preset``, the fraction of its node count to make.
        force: replace what ``out`` holds (else an ``out`` holding a dataset or any file is
            refused); the new dataset is swapped in once complete.
        progress: as :func:`ingest`'s.

    Labels are learnable: features are a per-class centroid plus noise. See docs/synth.md.
    """
    _native.check_process()
    out = os.fspath(out)
    if preset is None:
        missing = [n for n, v in (("nodes", nodes), ("avg_degree", avg_degree), ("dim", dim)) if v is None]
        if missing:
            raise errors.InvalidArgumentError(f"tierfs.synth: {', '.join(missing)} required without preset=")
    opts: Dict[str, Any] = {"out": out, "seed": int(seed)}
    for key, val, conv in (
        ("dtype", dtype, str),
        ("preset", preset, str),
        ("scale", scale, float),
        ("nodes", nodes, int),
        ("avg_degree", avg_degree, float),
        ("dim", dim, int),
        ("classes", classes, int),
        ("train_frac", train_frac, float),
        ("val_frac", val_frac, float),
        ("test_frac", test_frac, float),
        ("degree_exponent", degree_exponent, float),
        ("locality", locality, float),
        ("community_size", community_size, int),
    ):
        if val is not None:
            opts[key] = conv(val)
    _out_options(opts, device_paths, force)
    _run_with_progress(lib.tfs_synth, lib.tfs_synth_progress, opts, progress)
    return out


def from_graphbolt(path: PathLike, out: PathLike, *, task: Union[str, int, None] = None, undirected: bool = False,
                   device_paths: Optional[Sequence[PathLike]] = None, force: bool = False, progress: ProgressLike = None,
                   features_in_place: bool = False, store_dtype: Any = None) -> str:
    """Builds a tierfs dataset in ``out`` from a DGL GraphBolt on-disk dataset (a directory with
    ``metadata.yaml``, as ``dgl.graphbolt.OnDiskDataset`` reads; the raw form with a ``graph``
    section) and returns its path: the edges (CSV or ``.npy``), every node feature by its name
    (the first is the default, ``x`` to :mod:`tierfs.pyg`), every edge feature, and from one task
    (``task``; the first by default) the labels and the train/validation/test seeds. The
    files are copied into the dataset (rows re-laid out in 4 KiB blocks with checksums); no
    input is changed. One native call (``tfs_ingest`` with ``graphbolt``).

    A graph whose types are named (``graph.nodes: [{type, num}]``, ``graph.edges: [{type:
    "src:rel:dst", format, path}]``: GraphBolt's heterogeneous form, even of one type) becomes a
    typed dataset that keeps the names (``store.is_hetero``): ``feature_data`` entries go to the
    node type (domain ``node``) or edge type (domain ``edge``, type ``"src:rel:dst"``) their
    ``type`` names, each set's entries of type T give T's seeds and labels. ``undirected``
    applies to graphs without type names only.

    A link prediction task (sets holding ``seeds`` of shape (N, 2) with ``labels``, or GraphBolt
    1.x's ``node_pairs`` with ``negative_dsts``) becomes the edge splits of its edge type (a
    set's ``type`` ``"src:rel:dst"``; none in a one-type graph): read them back with
    ``store.edge_split("train", edge_type=...)`` and ``store.edge_split_negatives``. Its
    ``indexes`` (which seeds form one ranking query) are not stored.

    Kept as GraphBolt reads them: a feature of ``(N, a, b, ...)`` rows with its row shape; each
    feature's metadata (its keys beside ``domain``, ``type``, ``name``, ``format``, ``path`` and
    ``in_memory``: ``num_categories``, a user's) and the task's (its keys but the sets), which
    :class:`tierfs.dgl.Dataset` gives back; a node and an edge feature of one name; and which
    features the ``graph`` section lists, the attributes of :func:`tierfs.dgl.sampling_graph`.

    Args:
        path: the GraphBolt dataset directory.
        task: the task whose labels and seeds to ingest: its name, or its index in
            ``metadata.yaml``'s ``tasks`` (None: the first). An unknown task raises ValueError
            listing the tasks.
        out, undirected, device_paths, force, progress, features_in_place, store_dtype: as
            :func:`ingest` (``features_in_place`` reads the node features' ``.npy`` files where
            they are; ``store_dtype`` stores the float32 features at float16 or bfloat16).
    """
    _native.check_process()
    opts: Dict[str, Any] = {"out": os.fspath(out), "graphbolt": _input_path(path, "graphbolt")}
    if features_in_place:
        opts["features_in_place"] = True
    if task is not None:
        if isinstance(task, bool) or not isinstance(task, (str, int)):
            raise errors.DTypeError(f"from_graphbolt: task must be a task name (str) or index (int), got {task!r}")
        opts["graphbolt_task"] = str(task)
    if undirected:
        opts["undirected"] = True
    _out_options(opts, device_paths, force, store_dtype)
    _run_with_progress(lib.tfs_ingest, lib.tfs_ingest_progress, opts, progress)
    return opts["out"]


def _out_options(opts: Dict[str, Any], device_paths: Optional[Sequence[PathLike]], force: bool, store_dtype: Any = None) -> None:
    """Sets the output options every ingest takes in opts: ``device_paths`` where given,
    ``force`` where set, ``store_dtype`` (a name, numpy or torch dtype) where given."""
    if device_paths:
        opts["device_paths"] = [os.fspath(p) for p in device_paths]
    if force:
        opts["force"] = True
    if store_dtype is not None:
        opts["store_dtype"] = dtype_name(store_dtype, "store_dtype")


def verify(path: PathLike, *, limit: int = 20, progress: ProgressLike = None) -> Dict[str, Any]:
    """Checks every block of every file of the dataset at ``path`` against its checksum, as
    ``tierfs verify``, and returns the report: ``{"ok", "files", "bytes", "problems": [{"file",
    "offset" (-1 for the file as a whole), "what"}]}`` (at most ``limit`` problems a file; 0 for
    all). Damage is in the report; it raises only when ``path`` is no dataset
    (FileNotFoundError) or its manifest is damaged (tierfs.CorruptError). ``progress`` as
    :func:`ingest`'s (stage ``"verify"``, bytes checked of the total). One native call
    (``tfs_verify_json``) reads the whole dataset.
    """
    _native.check_process()
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise errors.InvalidArgumentError(f"verify: limit must be an int >= 0 (0: every problem), got {limit!r}")
    p = _input_path(path, "verify")
    request = json.dumps({"limit": limit}).encode()
    cb, errs = _progress_callback(progress)
    fn = cb if cb is not None else _native.ProgressFn()  # NULL: no progress
    path_c = _c_str(p, "path")
    report = _native.read_json(lambda buf, cap, needed: lib.tfs_verify_json(path_c, request, fn, None, buf, cap, needed), 1 << 12)
    if errs:
        raise errs[0]
    return report


def upgrade(path: PathLike, *, progress: ProgressLike = None) -> int:
    """Rewrites the dataset at ``path``, of an older format version, to the current one in place,
    as ``tierfs upgrade``, and returns the version it had (the current one when there was nothing
    to do). Every block is checked against its checksum first: a damaged dataset raises
    tierfs.CorruptError naming the file and block, and is left as it was. Killed at any point it
    leaves the old or the new dataset, each readable; calling it again finishes. ``progress`` as
    :func:`verify`'s. No writer of the dataset may be at work meanwhile (``tfs_upgrade``).
    """
    _native.check_process()
    p = _input_path(path, "upgrade")
    cb, errs = _progress_callback(progress)
    fn = cb if cb is not None else _native.ProgressFn()  # NULL: no progress
    from_version = ctypes.c_int32(0)
    check(lib.tfs_upgrade(_c_str(p, "path"), fn, None, ctypes.byref(from_version)))
    if errs:
        raise errs[0]
    return from_version.value
