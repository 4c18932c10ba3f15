"""Heterogeneous graphs: node types, edge types, and sampling with fanouts per edge type.

A dataset of format version 5 holds several node types (each with its own features, labels and
splits) and several edge types ``(src, rel, dst)``. Ids are local to their type, as in PyG's
``HeteroData`` and GraphBolt. A :class:`tierfs.Store` serves every type: ``store.gather(ids,
node_type="paper")``, ``store.labels(ids, node_type=...)``, ``store.split("train",
node_type=...)``, and ``store.sampler({("author", "writes", "paper"): [10, 5], ...})`` gives a
:class:`HeteroSampler`. Edge types are given as PyG's tuples or GraphBolt's ``"src:rel:dst"``
strings and come back as tuples.

This module imports neither store nor the front ends (store imports it).
"""

from __future__ import annotations

import json
from ctypes import byref, c_void_p
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, errors
from ._args import IdsLike, _c_str, _fanouts, _ids, _torch
from ._native import check, lib
from ._sample import _finish_link_labels, _link_labels, _NativeSampler, _neg_sampling

if TYPE_CHECKING:  # annotations only: store imports this module
    from .store import Store

__all__ = ["EdgeType", "HeteroLinkSample", "HeteroSample", "HeteroSampler", "edge_type_key", "edge_type_tuple"]

#: An edge type: PyG's ``(src, rel, dst)`` tuple or GraphBolt's ``"src:rel:dst"`` string.
EdgeType = Union[Tuple[str, str, str], str]


def edge_type_key(edge_type: EdgeType) -> str:
    """The core's one-string form of an edge type, ``"src:rel:dst"``."""
    if isinstance(edge_type, str):
        parts = edge_type.split(":")
        if len(parts) == 3 and all(parts):
            return edge_type
        raise errors.InvalidArgumentError(f"tierfs: edge type {edge_type!r}: want \"src:rel:dst\" or a (src, rel, dst) tuple")
    if isinstance(edge_type, (tuple, list)) and len(edge_type) == 3 and all(isinstance(p, str) and p for p in edge_type):
        return ":".join(edge_type)
    raise errors.InvalidArgumentError(f"tierfs: edge type {edge_type!r}: want a (src, rel, dst) tuple of names or \"src:rel:dst\"")


def edge_type_tuple(edge_type: EdgeType) -> Tuple[str, str, str]:
    """PyG's ``(src, rel, dst)`` form of an edge type."""
    src, rel, dst = edge_type_key(edge_type).split(":")
    return (src, rel, dst)


@dataclass
class HeteroSample:
    """A k-hop neighborhood of a heterogeneous graph, laid out as PyG's ``HeteroSamplerOutput``.

    ``node[t]`` holds the ids (of type t) of the sampled nodes of type t: for the seed type the
    seeds first, exactly as given, then per hop the nodes first reached. ``row[e]`` and ``col[e]``
    are edge type e's sampled edges in local ids: ``row`` into ``node[e[0]]`` (the neighbor, the
    message source), ``col`` into ``node[e[2]]`` (the node it was sampled for); ``edge[e]`` their
    edge ids (positions in e's CSC, the rows of e's edge features). ``num_sampled_nodes[t]`` has
    one count per hop plus one (seeds first), ``num_sampled_edges[e]`` one per hop. Every node and
    edge type of the dataset has an entry, empty where nothing was sampled. All int64, numpy or
    torch like the seeds given.
    """

    node: Dict[str, Any]
    row: Dict[Tuple[str, str, str], Any]
    col: Dict[Tuple[str, str, str], Any]
    edge: Dict[Tuple[str, str, str], Any]
    num_sampled_nodes: Dict[str, List[int]]
    num_sampled_edges: Dict[Tuple[str, str, str], List[int]]
    seed_type: Optional[str]

    @property
    def num_seeds(self) -> int:
        return int(self.num_sampled_nodes[self.seed_type][0])

    def edge_index(self, edge_type: EdgeType) -> Any:
        """``[row; col]`` of one edge type as a ``(2, E)`` array/tensor."""
        e = edge_type_tuple(edge_type)
        if isinstance(self.row[e], np.ndarray):
            return np.stack([self.row[e], self.col[e]])
        return _torch().stack([self.row[e], self.col[e]])


def _take_hetero_sample(hs: int, seed_type: str) -> HeteroSample:
    """Copies a native hetero sample out and frees it."""
    try:
        sizes = _native.read_json(lambda buf, cap, needed: lib.tfs_hetero_sample_json(hs, buf, cap, needed))
        node: Dict[str, Any] = {}
        for t, counts in sizes["nodes_per_hop"].items():
            arr = np.empty(int(sum(counts)), dtype=np.int64)
            if arr.size:
                check(lib.tfs_hetero_sample_nodes(hs, t.encode(), arr.ctypes.data))
            node[t] = arr
        row: Dict[Tuple[str, str, str], Any] = {}
        col: Dict[Tuple[str, str, str], Any] = {}
        edge: Dict[Tuple[str, str, str], Any] = {}
        for key, counts in sizes["edges_per_hop"].items():
            m = int(sum(counts))
            r, c = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
            eid = np.empty(m, dtype=np.int64) if sizes["edge_ids"][key] else None
            if m:
                check(lib.tfs_hetero_sample_edges(hs, key.encode(), r.ctypes.data, c.ctypes.data, None if eid is None else eid.ctypes.data))
            e = edge_type_tuple(key)
            row[e], col[e], edge[e] = r, c, eid
        return HeteroSample(
            node=node,
            row=row,
            col=col,
            edge=edge,
            num_sampled_nodes={t: [int(c) for c in v] for t, v in sizes["nodes_per_hop"].items()},
            num_sampled_edges={edge_type_tuple(k): [int(c) for c in v] for k, v in sizes["edges_per_hop"].items()},
            seed_type=seed_type,
        )
    finally:
        lib.tfs_hetero_sample_free(hs)


@dataclass
class HeteroLinkSample(HeteroSample):
    """A k-hop neighborhood of a batch of seed edges of ``edge_type``, and where its label edges
    are (PyG's ``edge_sample``, ``disjoint=False``): :class:`tierfs.LinkSample`'s label arrays,
    sources as local ids into ``node[edge_type[0]]``, destinations into ``node[edge_type[2]]``.
    The seeds of each node type (its first ``num_sampled_nodes[t][0]`` nodes) are the distinct
    endpoints of that type of the seed edges and negatives, ascending; ``seed_type`` is None."""

    edge_type: Tuple[str, str, str] = ("", "", "")
    edge_label_index: Any = None
    edge_label: Any = None
    src_index: Any = None
    dst_pos_index: Any = None
    dst_neg_index: Any = None


def _take_hetero_link_labels(hs: int) -> tuple:
    """A native hetero link sample's label arrays (edge_label_index (2, m), edge_label,
    src_index, dst_pos_index, dst_neg_index (flat); None where it has none); frees the sample on
    error only (_take_hetero_sample frees it after)."""
    try:
        sizes = _native.read_json(lambda buf, cap, needed: lib.tfs_hetero_sample_link_json(hs, buf, cap, needed))
        names = ("edge_label", "src_index", "dst_pos_index", "dst_neg_index")
        arrays = {k: np.empty(sizes[k], dtype=np.int64) for k in names}
        eli = np.empty((2, sizes["edge_label_index"]), dtype=np.int64)
        check(lib.tfs_hetero_sample_link_copy(hs, eli.ctypes.data, *(arrays[k].ctypes.data for k in names)))
    except BaseException:
        lib.tfs_hetero_sample_free(hs)
        raise
    return (
        None if sizes["triplet"] else eli,
        arrays["edge_label"] if sizes["edge_label"] else None,
        *(arrays[k] if sizes["triplet"] else None for k in ("src_index", "dst_pos_index", "dst_neg_index")),
    )


def _sample_to_torch(out: HeteroSample, device: Any) -> None:
    """Turns a sample's numpy arrays into torch tensors, on device unless it is the CPU."""
    torch = _torch()
    dev = device if device is not None and device.type != "cpu" else None

    def conv(a: Any) -> Any:
        if a is None:
            return None
        t = torch.from_numpy(a)
        return t.to(dev, non_blocking=True) if dev is not None else t

    out.node = {k: conv(v) for k, v in out.node.items()}
    out.row = {k: conv(v) for k, v in out.row.items()}
    out.col = {k: conv(v) for k, v in out.col.items()}
    out.edge = {k: conv(v) for k, v in out.edge.items()}


def fanouts_by_key(num_neighbors: Mapping[Any, Any]) -> Dict[str, List[int]]:
    """``{edge type: [fanout per hop]}`` with the core's ``"src:rel:dst"`` keys, each fanout an
    int (a float or bool fanout is refused, naming the edge type)."""
    if not isinstance(num_neighbors, Mapping):
        raise errors.DTypeError(f"tierfs: num_neighbors must be a dict of edge type -> fanouts, got {type(num_neighbors).__name__}")
    out: Dict[str, List[int]] = {}
    for et, fanouts in num_neighbors.items():
        out[edge_type_key(et)] = _fanouts(fanouts, f"num_neighbors[{et!r}]")
    return out


class HeteroSampler(_NativeSampler):
    """Uniform k-hop neighbor sampling of a heterogeneous graph in the core, fanouts per edge type
    and hop (PyG's dict ``num_neighbors``); see :meth:`Store.sampler`.

    Its k-th sample draws with seed ``seed + k``. One native call per batch; one thread at a time
    (calls are serialized by a lock). Pickles as its store and options.
    """

    _FREE = "tfs_hetero_sampler_free"

    def __init__(self, store: "Store", num_neighbors: Mapping[Any, Any], replace: bool = False, seed: int = 0, workers: int = 0):
        super().__init__(store, replace, seed, workers)
        h = store._h()
        self._fanouts = fanouts_by_key(num_neighbors)
        opts = json.dumps({"fanouts": self._fanouts, "replace": self._replace, "seed": self._seed & 0xFFFFFFFFFFFFFFFF, "workers": self._workers})
        handle = c_void_p()
        check(lib.tfs_hetero_sampler_create(h, opts.encode(), byref(handle)))
        self._handle = handle.value

    @property
    def num_neighbors(self) -> Dict[Tuple[str, str, str], List[int]]:
        return {edge_type_tuple(k): list(v) for k, v in self._fanouts.items()}

    @property
    def num_hops(self) -> int:
        return len(next(iter(self._fanouts.values()))) if self._fanouts else 0

    def sample(self, seeds: IdsLike, node_type: Optional[str] = None) -> HeteroSample:
        """Samples the k-hop in-neighborhood of ``seeds``, ids of ``node_type`` (PyG's
        ``input_nodes=(node_type, ids)`` may be given as ``seeds`` instead). numpy or list seeds
        give numpy arrays; torch seeds torch tensors on their device."""
        _native.check_process()
        if node_type is None and isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str):
            node_type, seeds = seeds
        if node_type is None:
            types = self._store.node_types
            if len(types) != 1:
                raise errors.InvalidArgumentError(f"tierfs: name the seeds' node type (node_type=, one of {', '.join(types)})")
            node_type = types[0]
        ids_ = _ids(seeds, "seeds")
        arr = ids_.array
        nt = _c_str(node_type, "node_type")
        with self._lock:
            h = self._handle
            if h is None:
                raise errors.ClosedError("tierfs: sampler is closed")
            hs = c_void_p()
            check(lib.tfs_hetero_sample(h, nt, arr.ctypes.data, arr.shape[0], byref(hs)))
            out = _take_hetero_sample(hs.value, node_type)
        if ids_.kind == "torch":
            _sample_to_torch(out, ids_.device)
        return out

    def sample_from_edges(
        self,
        edge_type: EdgeType,
        src: IdsLike,
        dst: IdsLike,
        labels: Any = None,
        neg_sampling: Any = None,
        amount: Union[int, float] = 1,
        strict: bool = False,
        exclude_seed_edges: bool = False,
        reverse_edge_types: Optional[Mapping[Any, Any]] = None,
    ) -> "HeteroLinkSample":
        """Samples the k-hop in-neighborhood of the seed edges ``(src[i], dst[i])`` of
        ``edge_type`` — ``src`` ids of its source node type, ``dst`` of its destination type — and
        says where each seed edge and negative lies in it (:class:`HeteroLinkSample`): PyG's
        ``edge_sample`` (``disjoint=False``) for a heterogeneous graph, one native call, drawn with
        this sampler's next seed (node and link samples count alike).

        Args:
            edge_type: the seed edges' type, ``(src, rel, dst)`` or ``"src:rel:dst"``.
            src, dst, labels, neg_sampling, amount, strict: as :meth:`tierfs.Sampler.sample_from_edges`;
                negatives are nodes of the edge type's source and destination types.
            exclude_seed_edges: leave the seed edges out of the sampled neighborhoods;
                ``reverse_edge_types`` (``{edge type: its reverse edge type}``, DGL's
                ``reverse_etypes``) also their reverses ``(dst, src)`` in the reverse type.
        """
        _native.check_process()
        key = edge_type_key(edge_type)
        mode, amount = _neg_sampling(neg_sampling, amount)
        s_, d_ = _ids(src, "src"), _ids(dst, "dst")
        n = s_.array.shape[0]
        if d_.array.shape[0] != n:
            raise errors.InvalidArgumentError(f"src and dst: {n} src ids but {d_.array.shape[0]} dst ids of edge type {edge_type!r}; give one of each per seed edge")
        lab, core_labels = _link_labels(labels, mode, n)
        rev = {edge_type_key(k): edge_type_key(v) for k, v in (reverse_edge_types or {}).items()}
        request = json.dumps({"neg_sampling": mode, "amount": amount, "strict": bool(strict),
                              "exclude_seed_edges": bool(exclude_seed_edges), "reverse_edge_types": rev}).encode()
        with self._lock:
            h = self._handle
            if h is None:
                raise errors.ClosedError("tierfs: sampler is closed")
            hs = c_void_p()
            check(lib.tfs_hetero_sample_from_edges(h, key.encode(), s_.array.ctypes.data, d_.array.ctypes.data,
                                                   0 if core_labels is None else core_labels.ctypes.data, n, request, byref(hs)))
            eli, label, src_index, dst_pos_index, dst_neg_index = _take_hetero_link_labels(hs.value)
            smp = _take_hetero_sample(hs.value, None)
        label, dst_neg_index = _finish_link_labels(mode, amount, n, lab, core_labels, eli, label, dst_neg_index)
        out = HeteroLinkSample(**vars(smp), edge_type=edge_type_tuple(key), edge_label_index=eli, edge_label=label,
                               src_index=src_index, dst_pos_index=dst_pos_index, dst_neg_index=dst_neg_index)
        if s_.kind == "torch":
            _sample_to_torch(out, s_.device)
            torch = _torch()
            dev = s_.device if s_.device is not None and s_.device.type != "cpu" else None
            for name in ("edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index"):
                a = getattr(out, name)
                if a is not None:
                    t = torch.from_numpy(np.ascontiguousarray(a))
                    setattr(out, name, t.to(dev, non_blocking=True) if dev is not None else t)
        return out

    def __reduce__(self):
        return (HeteroSampler, (self._store, self.num_neighbors, self._replace, self._seed, self._workers))

    def __repr__(self) -> str:
        return f"<tierfs.HeteroSampler num_neighbors={self.num_neighbors} replace={self._replace} seed={self._seed}>"


def typed_csc(store: "Store", edge_type: EdgeType) -> Tuple[np.ndarray, np.ndarray]:
    """Edge type ``edge_type``'s whole topology as CSC over its dst type: ``(indptr, indices)``
    (indices: src-type ids, position = edge id), int64. Samples every in-neighbor of every dst
    node once (one native call); meant for small graphs, tests and conversions."""
    e = edge_type_tuple(edge_type)
    n_dst = store.num_nodes_of(e[2])
    count = store.num_edges_of(e)
    sampler = HeteroSampler(store, {et: [-1] for et in store.edge_types})
    try:
        s = sampler.sample(np.arange(n_dst, dtype=np.int64), e[2])
    finally:
        sampler.close()
    indices = np.empty(count, dtype=np.int64)
    indices[s.edge[e]] = s.node[e[0]][s.row[e]]
    indptr = np.zeros(n_dst + 1, dtype=np.int64)
    np.cumsum(np.bincount(s.node[e[2]][s.col[e]], minlength=n_dst), out=indptr[1:])
    return indptr, indices
