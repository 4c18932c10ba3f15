"""From PyG to a dataset: :func:`from_pyg` of a ``Data`` or ``HeteroData`` (and the outputs of
``RandomLinkSplit``), and the graph-level attributes this process holds for the datasets it wrote
(:func:`graph_attrs`)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _native, _util, errors
from ._native import lib
from ._progress import ProgressLike
from .build import PathLike, Staging, _edge_split_entries, _is_pyg_data, _labels_array, _out_options, _save, _to_numpy, ingest
from .hetero import edge_type_key

__all__ = ["from_pyg", "graph_attrs"]


def from_pyg(data: Any, out: PathLike, *, val: Any = None, test: Any = None, edge_splits: Optional[Mapping[Any, Any]] = None,
             undirected: bool = False, device_paths: Optional[Sequence[PathLike]] = None,
             tmp_dir: Optional[PathLike] = None, force: bool = False, progress: ProgressLike = None, store_dtype: Any = None) -> str:
    """Builds a tierfs dataset in ``out`` from a PyG ``Data`` and returns its path: ``x`` becomes
    the default feature, ``edge_index`` the topology (messages flow ``edge_index[0] ->
    edge_index[1]``, as PyG's), ``y`` the labels ((N,) or (N, 1); NaN or -1 for unlabelled) and
    ``train_mask``/``val_mask``/``test_mask`` (or ``train_idx``/``val_idx``/``test_idx``) the
    splits; ``data.num_nodes`` the node count (a 1-D ``x`` is a feature of one value a node,
    served 1-D; ``Data(num_nodes=n)`` alone is n nodes without features or edges). Every other node-level tensor (``data.is_node_attr``)
    becomes a named node feature, and every edge-level tensor (``edge_attr``, ``edge_weight``,
    ...: ``data.is_edge_attr``) an edge feature, gathered by the ``e_id`` of sampled edges.
    Graph-level attributes (neither node- nor edge-level: ``data.some_scalar``, a graph-level
    tensor, non-tensors) are not written to the dataset: this process holds them
    (:func:`graph_attrs`), and :class:`tierfs.pyg.NeighborLoader` on a store of the dataset puts
    them on every batch as PyG's in-memory loaders do; a store opened in another process (a
    worker, a later run) has none, and a warning names them.

    A ``HeteroData`` becomes a dataset of its node and edge types (format version 5; ids stay
    local to their type): for every node type its node-level tensors (``data[t].x`` first, the
    type's default feature served through the memory tiers, then the others by name) as
    features, ``y`` as its labels and its ``train``/``val``/``test`` masks or ids as its
    splits; for every edge type its ``edge_index`` and its edge-level tensors as edge features
    (rows by edge id, ``e_id``); its graph-level attributes are held as a ``Data``'s. One native
    call. What cannot be stored (non-tensors, tensors of more than two dimensions, bool tensors
    that are not splits, an edge type without ``edge_index``) is refused, naming the type and
    the attribute.

    Link prediction: the outputs of PyG's ``RandomLinkSplit`` (``train_data, val_data,
    test_data = RandomLinkSplit(...)(data)``) go in as ``from_pyg(train_data, out,
    val=val_data, test=test_data)``: the graph is ``train_data``'s (its ``edge_index``, the
    training message-passing edges), and each split's ``edge_label_index`` and ``edge_label``
    (per edge type of a ``HeteroData``) become the dataset's edge splits (format version 6),
    read back by ``store.edge_split("train", edge_type=...)``.

    Args:
        data: a ``torch_geometric.data.Data`` or ``HeteroData``.
        val, test: the validation and test outputs of ``RandomLinkSplit`` (the same kind as
            ``data``): only their ``edge_label_index`` / ``edge_label`` are read.
        edge_splits: more edge splits as :func:`ingest` takes them (``Data``), or ``{edge type:
            {split: ...}}`` (``HeteroData``), e.g. an OGB link dataset's ``get_edge_split()``.
        out, undirected, device_paths, tmp_dir, force, progress, store_dtype: as :func:`ingest`
            (``undirected`` applies to ``Data`` only: give a ``HeteroData`` its reverse edge
            types, e.g. with ``torch_geometric.transforms.ToUndirected()``; ``store_dtype``
            ``"float16"`` or ``"bfloat16"`` stores the float32 tensors at half precision, ``x``
            of every type, ``edge_attr``, ...; integer tensors stay as they are).
    """
    for name, d in (("val", val), ("test", test)):
        if d is not None and type(d) is not type(data):
            raise errors.DTypeError(f"from_pyg: {name} is a {type(d).__name__}, data a {type(data).__name__}; give the {name} output of the RandomLinkSplit that made data")
    if type(data).__name__ == "HeteroData" and _is_pyg_data(data):
        path = _from_hetero_data(data, out, undirected=undirected, device_paths=device_paths, tmp_dir=tmp_dir, force=force, progress=progress,
                                 split_data={"val": val, "test": test}, edge_splits=edge_splits, store_dtype=store_dtype)
        graph_attrs = dict(data._global_store.items())
        if graph_attrs:
            _warn_graph_attrs(graph_attrs)
        _hold_graph_attrs(path, graph_attrs)
        return path
    if not _is_pyg_data(data):
        raise errors.DTypeError(f"from_pyg: want a torch_geometric.data.Data, got {type(data).__name__}")
    inputs, graph_attrs = _data_inputs(data, val, test, edge_splits)
    if graph_attrs:
        _warn_graph_attrs(graph_attrs)
    path = ingest(out, undirected=undirected, device_paths=device_paths, tmp_dir=tmp_dir, force=force, progress=progress, store_dtype=store_dtype, **inputs)
    _hold_graph_attrs(path, graph_attrs)
    return path


def _data_inputs(data: Any, val: Any, test: Any, edge_splits: Optional[Mapping[Any, Any]]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The :func:`ingest` arguments of a PyG ``Data`` (with the edge splits of ``RandomLinkSplit``'s
    outputs and ``edge_splits``), and its graph-level attributes, which the dataset does not hold."""
    keys = set(data.keys())
    if data.edge_index is None and data.x is None and "num_nodes" not in keys:
        raise errors.InvalidArgumentError("from_pyg: the Data has neither x nor edge_index nor num_nodes (Data(num_nodes=n) is a graph of n nodes and no edges)")
    link_splits: Dict[str, Any] = dict(edge_splits or {})
    for name, d in (("train", data), ("val", val), ("test", test)):
        if d is None:
            continue
        if "edge_label_index" in d.keys():
            if name in link_splits:
                raise errors.InvalidArgumentError(f"from_pyg: edge split {name!r} is given twice (by edge_splits and by the {name} Data)")
            link_splits[name] = (d.edge_label_index, d.get("edge_label"))
        elif d is not data:
            raise errors.InvalidArgumentError(f"from_pyg: {name} has no edge_label_index; give an output of RandomLinkSplit")
    splits: Dict[str, Any] = {}
    used = {"x", "edge_index", "y", "num_nodes"}
    if "edge_label_index" in keys:
        used |= {"edge_label_index", "edge_label"} & keys
    for name, key in _split_keys(data, keys).items():
        splits[name] = data[key]
        used.add(key)
    node_features: Dict[str, Any] = {}
    edge_features: Dict[str, Any] = {}
    for key in sorted(keys - used):
        value = data[key]
        if not _util.is_tensor(value) or value.dim() not in (1, 2):
            continue
        if data.edge_index is not None and data.is_edge_attr(key):
            edge_features[key] = value
            used.add(key)
        elif data.is_node_attr(key):
            node_features[key] = value
            used.add(key)
    # Graph-level attributes (neither node- nor edge-level, as PyG's filter_data tells them apart;
    # non-tensors included): PyG's in-memory loaders copy them onto every batch. The dataset
    # format has no place for them, so this process holds them for the dataset's loaders.
    graph_attrs = {key: data[key] for key in sorted(keys - {"num_nodes"})
                   if not data.is_node_attr(key) and not (data.edge_index is not None and data.is_edge_attr(key))}
    ignored = sorted(keys - used - set(graph_attrs))
    if ignored:
        import warnings

        warnings.warn(f"from_pyg: attributes not stored (node-level tensors of more than 2 dimensions): {ignored}", stacklevel=3)
    x = data.x
    if x is not None and _util.is_tensor(x) and x.dim() == 1:  # one value a node: a scalar feature, served 1-D as PyG serves it
        node_features = {"x": x, **node_features}
        x = None
    edges = data.edge_index
    if edges is None:  # a graph of no edges still has its one edge type (PyG samples the seeds alone)
        import torch

        edges = torch.empty((2, 0), dtype=torch.long)
    return dict(
        edges=edges,
        features=x,
        labels=data.y,
        splits=splits or None,
        num_nodes=int(data.num_nodes) if data.num_nodes is not None else None,
        node_features=node_features or None,
        edge_features=edge_features or None,
        edge_splits=link_splits or None,
    ), graph_attrs


def _warn_graph_attrs(attrs: Mapping[str, Any]) -> None:
    import warnings

    warnings.warn(f"from_pyg: graph-level attributes {sorted(attrs)} are not written to the dataset; "
                  "tierfs.pyg.NeighborLoader puts them on every batch, as PyG's, in this process only "
                  "(a store of this dataset opened elsewhere has none)", stacklevel=3)


# Graph-level attributes of the datasets from_pyg wrote in this process, by dataset id (a dataset
# written again over the same path gets a new id, and so none of the old one's attributes).
_GRAPH_ATTRS: Dict[str, Dict[str, Any]] = {}


def _dataset_id(path: PathLike) -> Optional[str]:
    try:
        with open(os.path.join(os.fspath(path), "manifest.json")) as f:
            return json.load(f).get("dataset_id") or None
    except (OSError, ValueError):
        return None


def _hold_graph_attrs(path: PathLike, attrs: Dict[str, Any]) -> None:
    key = _dataset_id(path)
    if key is not None:
        if attrs:
            _GRAPH_ATTRS[key] = dict(attrs)
        else:
            _GRAPH_ATTRS.pop(key, None)


def graph_attrs(path: PathLike) -> Dict[str, Any]:
    """The graph-level attributes (neither node- nor edge-level: ``data.some_scalar``, a
    graph-level tensor) of the ``Data`` :func:`from_pyg` wrote to the dataset at ``path`` in this
    process, which :class:`tierfs.pyg.NeighborLoader` puts on every batch as PyG's in-memory
    loaders do; ``{}`` for a dataset written by another process or by another call (the dataset
    format does not store them)."""
    key = _dataset_id(path)
    return dict(_GRAPH_ATTRS.get(key, {})) if key is not None else {}


def _split_keys(store: Any, keys: Any) -> Dict[str, str]:
    """{split name: attribute key} of a PyG storage (``train_mask``, ``valid_idx``, ...)."""
    splits: Dict[str, str] = {}
    for name, alias in (("train", "train"), ("val", "val"), ("val", "valid"), ("test", "test")):
        for key in (f"{alias}_mask", f"{alias}_idx", f"{alias}_index"):
            if key in keys and name not in splits:
                splits[name] = key
    return splits


def _from_hetero_data(data: Any, out: PathLike, *, undirected: bool, device_paths: Optional[Sequence[PathLike]],
                      tmp_dir: Optional[PathLike], force: bool, progress: ProgressLike,
                      split_data: Mapping[str, Any], edge_splits: Optional[Mapping[Any, Any]], store_dtype: Any = None) -> str:
    """from_pyg of a HeteroData: one tfs_ingest with node_types and edge_types."""
    _native.check_process()
    if undirected:
        raise errors.NotSupportedError("from_pyg: undirected=True applies to Data; give a HeteroData its reverse edge types "
                                       "(torch_geometric.transforms.ToUndirected()) before from_pyg")
    if not data.node_types:
        raise errors.InvalidArgumentError("from_pyg: the HeteroData has no node types")
    out = os.fspath(out)
    staging = Staging(out, tmp_dir)
    save = staging.save

    def feature(value: Any, what: str, rows: int) -> Dict[str, Any]:
        if not _util.is_tensor(value) and not isinstance(value, np.ndarray):
            raise errors.NotSupportedError(f"from_pyg: {what} is a {type(value).__name__}; tierfs stores tensors of one row per node or edge")
        arr, declared = _to_numpy(value, what)
        if arr.ndim not in (1, 2) or arr.shape[0] != rows:
            raise errors.NotSupportedError(f"from_pyg: {what} has shape {tuple(arr.shape)}; tierfs stores ({rows},) or ({rows}, dim) tensors")
        if arr.dtype == np.bool_:
            raise errors.NotSupportedError(f"from_pyg: {what} is a bool tensor; tierfs features are numbers (cast it, e.g. to torch.uint8)")
        entry: Dict[str, Any] = {"path": save("feature", arr, f"<{what}>")}
        if declared:
            entry["dtype"] = declared
        return entry

    with staging:
        node_types = []
        for nt in data.node_types:
            st = data[nt]
            keys = set(st.keys())
            n = st.num_nodes
            if n is None or int(n) < 1:
                raise errors.InvalidArgumentError(f"from_pyg: node type {nt!r} has no nodes (set data[{nt!r}].num_nodes)")
            n = int(n)
            entry: Dict[str, Any] = {"name": nt, "num_nodes": n, "features": []}
            used = {"num_nodes"}
            splits = _split_keys(st, keys)
            if splits:
                d = staging.path() / f"splits-{len(node_types)}"
                d.mkdir()
                for name, key in splits.items():
                    arr, _ = _to_numpy(st[key], f"data[{nt!r}].{key}")
                    if arr.dtype.kind not in "iub" or arr.ndim != 1:
                        raise errors.InvalidArgumentError(f"from_pyg: data[{nt!r}].{key} must be 1-D node ids or a bool mask, got {arr.dtype} of shape {arr.shape}")
                    _save(d, name, arr if arr.dtype == np.bool_ else arr.astype(np.int64, copy=False))
                    used.add(key)
                entry["splits"] = str(d)
            if "y" in keys:
                y = st["y"]
                if not _util.is_tensor(y) and not isinstance(y, np.ndarray):
                    raise errors.NotSupportedError(f"from_pyg: data[{nt!r}].y is a {type(y).__name__}; want one class id per node")
                if int(y.shape[0]) != n or (y.ndim == 2 and y.shape[1] != 1) or y.ndim > 2:
                    raise errors.NotSupportedError(f"from_pyg: data[{nt!r}].y has shape {tuple(y.shape)}; tierfs labels are one class id per node ({n},)")
                entry["labels"] = save("labels", _labels_array(y), f"<data[{nt!r}].y>")
                used.add("y")
            names = (["x"] if "x" in keys else []) + sorted(keys - used - {"x"})
            for key in names:
                entry["features"].append({"name": key, **feature(st[key], f"data[{nt!r}].{key}", n)})
            node_types.append(entry)
        edge_types = []
        for et in data.edge_types:
            st = data[et]
            keys = set(st.keys())
            if "edge_index" not in keys:
                other = sorted(keys)
                raise errors.NotSupportedError(f"from_pyg: edge type {et} has no edge_index (it has {other}); tierfs ingests COO edge_index only")
            ei, _ = _to_numpy(st.edge_index, f"data[{et}].edge_index")
            if ei.ndim != 2 or ei.shape[0] != 2 or ei.dtype.kind not in "iu":
                raise errors.InvalidArgumentError(f"from_pyg: data[{et}].edge_index must be a (2, E) integer tensor, got {ei.dtype} of shape {ei.shape}")
            e = int(ei.shape[1])
            entry = {"src": et[0], "rel": et[1], "dst": et[2], "edges": save("edges", ei, f"<data[{et}].edge_index>")}
            label_keys = {"edge_label_index", "edge_label"} & keys if "edge_label_index" in keys else set()
            feats = [{"name": key, **feature(st[key], f"data[{et}].{key}", e)} for key in sorted(keys - {"edge_index"} - label_keys)]
            if feats:
                entry["edge_features"] = feats
            edge_types.append(entry)
        link: Dict[str, Dict[str, Any]] = {}  # edge type key -> split -> value
        for key, per_split in (edge_splits or {}).items():
            if not isinstance(per_split, Mapping):
                raise errors.DTypeError(f"from_pyg: edge_splits of a HeteroData is {{edge type: {{split: seed edges}}}}; edge_splits[{key!r}] is a {type(per_split).__name__}")
            link.setdefault(edge_type_key(key), {}).update(per_split)
        for name, d in (("train", data), *split_data.items()):
            if d is None:
                continue
            found = False
            for et in d.edge_types:
                st = d[et]
                if "edge_label_index" not in st.keys():
                    continue
                found = True
                per = link.setdefault(edge_type_key(et), {})
                if name in per:
                    raise errors.InvalidArgumentError(f"from_pyg: edge split {name!r} of edge type {et} is given twice (by edge_splits and by the {name} HeteroData)")
                per[name] = (st.edge_label_index, st.get("edge_label"))
            if not found and d is not data:
                raise errors.InvalidArgumentError(f"from_pyg: {name} has no edge type with edge_label_index; give an output of RandomLinkSplit")
        entries: List[Dict[str, Any]] = []
        for key, per in link.items():
            entries += _edge_split_entries(per, save, edge_type=key)
        opts: Dict[str, Any] = {"node_types": node_types, "edge_types": edge_types, "out": out}
        if entries:
            opts["edge_splits"] = entries
        _out_options(opts, device_paths, force, store_dtype)
        staging.run(lib.tfs_ingest, lib.tfs_ingest_progress, opts, progress)
    return out
