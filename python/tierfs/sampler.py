"""The k-hop uniform neighbor sampler (:class:`Sampler`, made by :meth:`Store.sampler`): node
samples and link samples of a graph of one type or of several, one native call a batch."""

from __future__ import annotations

import json
import threading
from ctypes import byref, c_int32, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, errors
from ._args import IdsLike, _c_str, _fanouts, _ids
from ._native import check, lib
from ._sample import LinkSample, Sample, _finish_link_labels, _link_labels, _neg_sampling, _take_link_sample, _take_sample, _to_torch
from .hetero import EdgeType, edge_type_key, edge_type_tuple, fanouts_by_key

if TYPE_CHECKING:  # annotations only: store imports this module
    from .store import Store

__all__ = ["Sampler", "typed_csc"]

Fanouts = Union[Sequence[int], Mapping[Any, Sequence[int]]]


def _is_edge_type(x: Any) -> bool:
    """Whether x names an edge type ("src:rel:dst" or a (src, rel, dst) tuple of names), not ids."""
    return isinstance(x, str) or (isinstance(x, tuple) and len(x) == 3 and all(isinstance(p, str) for p in x))


class Sampler(_native.Finalized):
    """k-hop neighbor sampling in the core, uniform or by edge weight; see :meth:`Store.sampler`.

    ``fanouts`` is one list of per-hop fanouts (the graph's only edge type) or a dict
    ``{edge type: [per hop]}`` (PyG's dict ``num_neighbors``; every edge type of the dataset, one
    length). The first gives untyped samples (a homogeneous graph's, read through ``nodes``,
    ``row``, ``col``), the second typed ones (dicts by type, PyG's ``HeteroSamplerOutput``); the
    draws are the same. Its k-th sample (of nodes or of edges) draws with seed ``seed + k``.

    One native sampling call per batch. A sampler is used by one thread at a time (calls from
    several threads are serialized by a lock); make one sampler per thread for parallel
    sampling. Pickles as its store and options (its call counter starts again at 0).
    """

    def __init__(self, store: "Store", fanouts: Fanouts, replace: bool = False, seed: int = 0, workers: int = 0, weight: Optional[str] = None,
                 disjoint: bool = False, time: Optional[str] = None, temporal_strategy: str = "uniform"):
        if weight is not None and not isinstance(weight, str):
            raise errors.DTypeError(f"tierfs: weight must be the name of an edge feature, got {type(weight).__name__}")
        if time is not None and not isinstance(time, str):
            raise errors.DTypeError(f"tierfs: time must be the name of a node or edge feature, got {type(time).__name__}")
        self._store = store
        self._weight = weight
        self._time, self._temporal_strategy = time, temporal_strategy
        self._disjoint = bool(disjoint) or time is not None  # temporal implies disjoint, as in PyG
        self._replace = bool(replace)
        self._seed = int(seed)
        self._workers = int(workers)
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        h = store._h()
        self._typed = isinstance(fanouts, Mapping)
        self._fanouts: Union[List[int], Dict[str, List[int]]] = fanouts_by_key(fanouts) if self._typed else _fanouts(fanouts)
        # The core takes 32-bit fanouts: a larger one is refused here, naming it, not wrapped.
        for key, per_hop in (self._fanouts.items() if self._typed else [(None, self._fanouts)]):  # type: ignore[union-attr]
            for i, f in enumerate(per_hop):  # type: ignore[arg-type]
                _native.check_value(c_int32, f, f"fanouts[{i}]" if key is None else f"fanouts[{key!r}][{i}]")
        opts = json.dumps({"fanouts": self._fanouts, "replace": self._replace, "seed": self._seed & 0xFFFFFFFFFFFFFFFF, "workers": self._workers, "weight": weight or "",
                           "disjoint": self._disjoint, "time": time or "", "temporal_strategy": temporal_strategy})
        handle = c_void_p()
        check(lib.tfs_sampler_create(h, opts.encode(), byref(handle)))
        self._handle = handle.value

    @property
    def typed(self) -> bool:
        """Whether the fanouts are by edge type: samples are typed (dicts by type)."""
        return self._typed

    @property
    def replace(self) -> bool:
        return self._replace

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def disjoint(self) -> bool:
        """Whether every seed has its own tree (samples carry ``batch``)."""
        return self._disjoint

    @property
    def time(self) -> Optional[str]:
        """The node or edge feature the sampler samples in time by (None: not temporal)."""
        return self._time

    @property
    def temporal_strategy(self) -> str:
        return self._temporal_strategy

    @property
    def weight(self) -> Optional[str]:
        """The edge feature neighbors are drawn in proportion to (None: uniform)."""
        return self._weight

    @property
    def store(self) -> Any:
        return self._store

    @property
    def fanouts(self) -> Union[List[int], Dict[Tuple[str, str, str], List[int]]]:
        """The fanouts as given: a list, or ``{(src, rel, dst): [per hop]}``."""
        if self._typed:
            return self.num_neighbors
        return list(self._fanouts)  # type: ignore[arg-type]

    @property
    def num_neighbors(self) -> Dict[Tuple[str, str, str], List[int]]:
        """The fanouts by edge type (a list's: the only edge type's)."""
        if self._typed:
            return {edge_type_tuple(k): list(v) for k, v in self._fanouts.items()}  # type: ignore[union-attr]
        return {edge_type_tuple(et): list(self._fanouts) for et in self._store.edge_types}  # type: ignore[arg-type]

    @property
    def num_hops(self) -> int:
        if self._typed:
            return len(next(iter(self._fanouts.values()))) if self._fanouts else 0  # type: ignore[union-attr]
        return len(self._fanouts)

    def close(self) -> None:
        """Frees the native sampler; closing again does nothing."""
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            lib.tfs_sampler_free(h)

    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise errors.ClosedError("tierfs: sampler is closed")
        return h

    def sample(self, seeds: IdsLike, node_type: Optional[str] = None, seed_time: Any = None) -> Sample:
        """Samples the k-hop in-neighborhood of ``seeds``, ids of ``node_type`` (None: the only
        node type; PyG's ``input_nodes=(node_type, ids)`` may be given as ``seeds`` instead); see
        :class:`Sample`. numpy or list seeds give numpy arrays; torch seeds torch tensors on their
        device. ``seed_time`` (a temporal sampler's, one integer a seed, PyG's ``seed_time``):
        seed i's tree draws neighbors of time at most ``seed_time[i]``; None takes the seeds' own
        node times (an edge-level ``time`` needs it)."""
        _native.check_process()
        if node_type is None and isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str):
            node_type, seeds = seeds
        if node_type is None and self._typed:
            types = self._store.node_types
            if len(types) != 1:
                raise errors.InvalidArgumentError(f"tierfs: name the seeds' node type (node_type=, one of {', '.join(types)})")
            node_type = types[0]
        ids_ = _ids(seeds, "seeds")
        arr = ids_.array
        nt = None if node_type is None else _c_str(node_type, "node_type")
        times = None if seed_time is None else _seed_times(seed_time, arr.shape[0])
        with self._lock:
            hs = c_void_p()
            if times is None:
                check(lib.tfs_sample(self._h(), nt, arr.ctypes.data, arr.shape[0], byref(hs)))
            else:
                check(lib.tfs_sample_at(self._h(), nt, arr.ctypes.data, times.ctypes.data, arr.shape[0], byref(hs)))
            out = _take_sample(hs.value, node_type, self._typed)
        if ids_.kind == "torch":
            out = _to_torch(out, ids_.device)
        return out

    def sample_from_edges(
        self,
        *args: Any,
        src: Optional[IdsLike] = None,
        dst: Optional[IdsLike] = None,
        labels: Any = None,
        neg_sampling: Any = None,
        amount: Union[int, float] = 1,
        strict: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
        reverse_edge_types: Optional[Mapping[Any, Any]] = None,
        edge_type: Any = None,
        edge_label_time: Any = None,
    ) -> LinkSample:
        """Samples the k-hop in-neighborhood of the seed edges ``(src[i], dst[i])`` of
        ``edge_type`` and says where each seed edge and negative lies in it (see
        :class:`LinkSample`): PyG's ``edge_sample``, one native call, drawn
        with this sampler's next seed (node and link samples count alike).

        Called ``sample_from_edges(src, dst, labels=None, ...)`` for the only edge type, or
        ``sample_from_edges(edge_type, src, dst, labels=None, ...)``.

        Args:
            edge_type: the seed edges' type, ``(src, rel, dst)`` or ``"src:rel:dst"`` (None: the
                only one).
            src, dst: the seed edges' endpoints, one each per seed edge: ``src`` ids of the edge
                type's source node type, ``dst`` of its destination type.
            labels: one label a seed edge (any dtype, PyG's ``edge_label``); not with triplets.
            neg_sampling: None, ``"binary"`` (``ceil(amount × n)`` random node pairs, label 0),
                ``"triplet"`` (``amount`` random destinations a seed edge) or a PyG
                ``NegativeSampling`` (its mode and amount; no weights). Negatives are nodes of
                the edge type's source and destination types.
            amount: negatives per seed edge (binary: a ratio > 0; triplet: a whole number >= 1).
            strict: redraw negatives that are edges of the graph (PyG draws them blindly).
            exclude_seed_edges: leave the seed edges out of the sampled neighborhoods, and
                their reverses ``(dst, src)`` too: in the edge type itself with ``undirected``
                (an edge type within one node type), in the reverse type
                ``reverse_edge_types[edge_type]`` (``{edge type: its reverse edge type}``, DGL's
                ``reverse_etypes``).
            edge_label_time: a temporal sampler's time of each seed edge (integers, PyG's
                ``edge_label_time``, which it needs): both endpoints' trees, and their
                negatives', draw neighbors of time at most it; with a node-level ``time``
                negatives are nodes of time at most it (PyG's ``neg_sample``; else the earliest).

        A disjoint (or temporal) sampler's link sample is PyG's ``edge_sample`` with
        ``disjoint=True``: every endpoint of a seed edge and negative is the seed of its own tree,
        in PyG's order, ``batch`` maps each node to its tree's index mod the seed edges, and the
        label arrays hold those seeds' positions.
        """
        _native.check_process()
        if args and _is_edge_type(args[0]):
            if edge_type is not None:
                raise errors.InvalidArgumentError(f"tierfs: edge type {args[0]!r} given twice (and edge_type={edge_type!r})")
            edge_type, args = args[0], args[1:]
        given = {"src": src, "dst": dst, "labels": labels}
        if len(args) > len(given):
            raise errors.InvalidArgumentError(f"tierfs: sample_from_edges([edge_type,] src, dst, labels=None, ...): {len(args)} positional arguments after the edge type")
        for name, value in zip(given, args):
            if given[name] is not None:
                raise errors.InvalidArgumentError(f"tierfs: sample_from_edges: {name} given twice")
            given[name] = value
        src, dst, labels = given["src"], given["dst"], given["labels"]
        if src is None or dst is None:
            raise errors.InvalidArgumentError("tierfs: sample_from_edges needs src and dst, one id each per seed edge")
        key = None if edge_type is None else edge_type_key(edge_type)
        mode, amount = _neg_sampling(neg_sampling, amount)
        s_, d_ = _ids(src, "src"), _ids(dst, "dst")
        n = s_.array.shape[0]
        if d_.array.shape[0] != n:
            of = "" if edge_type is None else f" of edge type {edge_type!r}"
            raise errors.InvalidArgumentError(f"src and dst: {n} src ids but {d_.array.shape[0]} dst ids{of}; give one of each per seed edge")
        lab, core_labels = _link_labels(labels, mode, n)
        times = None if edge_label_time is None else _seed_times(edge_label_time, n, "edge_label_time", "seed edge")
        request: Dict[str, Any] = {"neg_sampling": mode, "amount": amount, "strict": bool(strict), "exclude_seed_edges": bool(exclude_seed_edges)}
        if undirected:
            request["undirected"] = True
        if reverse_edge_types:
            request["reverse_edge_types"] = {edge_type_key(k): edge_type_key(v) for k, v in reverse_edge_types.items()}
        et = edge_type_tuple(key) if key is not None else edge_type_tuple(self._store.edge_types[0]) if len(self._store.edge_types) == 1 else ("", "", "")

        def finish(link: tuple) -> tuple:
            eli, label, src_index, dst_pos_index, dst_neg_index = link
            label, dst_neg_index = _finish_link_labels(mode, amount, n, lab, core_labels, eli, label, dst_neg_index)
            return eli, label, src_index, dst_pos_index, dst_neg_index

        with self._lock:
            hs = c_void_p()
            check(lib.tfs_sample_from_edges_at(self._h(), None if key is None else key.encode(), s_.array.ctypes.data, d_.array.ctypes.data,
                                               0 if core_labels is None else core_labels.ctypes.data, 0 if times is None else times.ctypes.data,
                                               n, json.dumps(request).encode(), byref(hs)))
            out = _take_link_sample(hs.value, et, self._typed, finish)
        if s_.kind == "torch":
            out = _to_torch(out, s_.device)  # type: ignore[assignment]
        return out

    def __reduce__(self):
        return (Sampler, (self._store, self.fanouts, self._replace, self._seed, self._workers, self._weight, self._disjoint, self._time, self._temporal_strategy))

    def __repr__(self) -> str:
        weight = f" weight={self._weight!r}" if self._weight is not None else ""
        disjoint = " disjoint" if self._disjoint else ""
        time = f" time={self._time!r} temporal_strategy={self._temporal_strategy!r}" if self._time is not None else ""
        return f"<tierfs.Sampler fanouts={self.fanouts} replace={self._replace} seed={self._seed}{weight}{disjoint}{time}>"


def _seed_times(seed_time: Any, n: int, name: str = "seed_time", of: str = "seed") -> np.ndarray:
    """A sample's seed times (argument name, one an of) as the core takes them: n int64 values
    (numpy, torch or a list of integers; a float dtype is refused, as pyg-lib samples int64
    time)."""
    if hasattr(seed_time, "detach"):  # torch
        seed_time = seed_time.detach().cpu().numpy()
    arr = np.asarray(seed_time)
    if arr.dtype.kind not in "iub":
        raise errors.DTypeError(f"tierfs: {name} must hold integers (pyg-lib samples int64 time), got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr.reshape(-1), dtype=np.int64)
    if arr.shape[0] != n:
        raise errors.InvalidArgumentError(f"tierfs: {name} has {arr.shape[0]} times for {n} {of}s; give one a {of}")
    return arr


def typed_csc(store: "Store", edge_type: EdgeType) -> Tuple[np.ndarray, np.ndarray]:
    """Edge type ``edge_type``'s whole topology as CSC over its dst type: ``(indptr, indices)``
    (indices: src-type ids, position = edge id), int64. Samples every in-neighbor of every dst
    node once (one native call); meant for small graphs, tests and conversions."""
    e = edge_type_tuple(edge_type)
    n_dst = store.num_nodes(e[2])
    count = store.num_edges(e)
    sampler = Sampler(store, {et: [-1] for et in store.edge_types})
    try:
        s = sampler.sample(np.arange(n_dst, dtype=np.int64), e[2])
    finally:
        sampler.close()
    indices = np.empty(count, dtype=np.int64)
    indices[s.edge[e]] = s.node[e[0]][s.row[e]]
    indptr = np.zeros(n_dst + 1, dtype=np.int64)
    np.cumsum(np.bincount(s.node[e[2]][s.col[e]], minlength=n_dst), out=indptr[1:])
    return indptr, indices
