"""Sample and LinkSample, a k-hop neighborhood in local ids per type, and copying one out of the
library.

Shared by the sampler (:mod:`tierfs.sampler`) and epochs (planned batches); it imports neither.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _util, errors
from ._args import _torch
from ._native import check, lib, read_json
from .hetero import edge_type_tuple

__all__ = ["LinkSample", "Sample"]


class NoOnlyTypeError(errors.InvalidArgumentError, AttributeError):
    """A one-type attribute (``nodes``, ``e_id``, ...) of a sample of several types: it has none
    (``hasattr`` is False); read the type's entry of the dicts instead."""


def _only(d: Dict[Any, Any], what: str) -> Any:
    """The one key of d (a sample's node types or edge types), or an error naming them."""
    if len(d) == 1:
        return next(iter(d))
    raise NoOnlyTypeError(f"tierfs: the sample has {len(d)} {what}s ({', '.join(map(str, d))}), so no only one; name one (sample.node[...], sample.rows[...], ...)")


class _PerEdgeType:
    """A sample's per-edge-type dict attribute (named attr) as PyG's SamplerOutput (untyped)
    or HeteroSamplerOutput (typed) names it: the dict of a typed sample, else its only edge
    type's array (read and set)."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        d = getattr(obj, self.attr)
        return d if obj.typed else d[_only(d, "edge type")]

    def __set__(self, obj: Any, value: Any) -> None:
        if obj.typed:
            setattr(obj, self.attr, value)
        else:
            d = getattr(obj, self.attr)
            d[_only(d, "edge type")] = value


class Sample:
    """A k-hop neighborhood of a batch of seeds, in local ids per type, laid out as PyG's
    ``HeteroSamplerOutput``; a graph of one type is the one-type case.

    ``node[t]`` holds the ids (of type t) of the sampled nodes of type t: for the seed type the
    seeds first, exactly as given (duplicates kept), then per hop the nodes first reached, in
    order. Edge type e's sampled edges are ``(rows[e][i], cols[e][i])`` = (neighbor, node it was
    sampled for) in local ids — ``rows[e]`` into ``node[e[0]]``, ``cols[e]`` into ``node[e[2]]``:
    messages flow row → col, as PyG's ``edge_index``; ``edge[e]`` their edge ids (positions in
    e's CSC, the rows of e's edge features: ``store.gather(ids, edge_type=e, feature=...)``;
    PyG's ``e_id``). ``num_sampled_nodes[t]`` has one count per hop plus one (seeds first),
    ``num_sampled_edges[e]`` one per hop. Every node and edge type of the dataset has an entry,
    empty where nothing was sampled. All int64, numpy or torch like the seeds given.

    A disjoint sampler's sample (``disjoint=True``: every seed its own tree) has ``batch[t]``,
    parallel to ``node[t]``: the seed index (position in the seeds) of each node's tree, PyG's
    ``SamplerOutput.batch``; otherwise ``batch`` is None.

    A sampler of one fanout list (``store.sampler([15, 10])``) gives an untyped sample
    (``typed`` False), read as a homogeneous graph's, PyG's ``SamplerOutput``: ``nodes``, ``row``,
    ``col``, ``e_id``, ``nodes_per_hop`` and ``edges_per_hop`` are the only type's, ``edge_index``
    its ``(2, E)`` ``[row; col]``. A sampler of fanouts by edge type gives a typed one, whose
    ``row`` and ``col`` are the dicts by edge type (``rows``, ``cols``), as PyG's
    ``HeteroSamplerOutput``; its one-type conveniences still answer where the graph has one type.
    """

    def __init__(
        self,
        node: Dict[str, Any],
        row: Dict[Tuple[str, str, str], Any],
        col: Dict[Tuple[str, str, str], Any],
        edge: Dict[Tuple[str, str, str], Any],
        num_sampled_nodes: Dict[str, List[int]],
        num_sampled_edges: Dict[Tuple[str, str, str], List[int]],
        seed_type: Optional[str],
        typed: bool = True,
        batch: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.node = node
        self.rows = row
        self.cols = col
        self.edge = edge
        self.num_sampled_nodes = num_sampled_nodes
        self.num_sampled_edges = num_sampled_edges
        self.seed_type = seed_type
        self.typed = typed
        self.batch = batch

    # the per-type arrays, as PyG's SamplerOutput (untyped) or HeteroSamplerOutput (typed) name them

    row = _PerEdgeType("rows")
    col = _PerEdgeType("cols")

    # the only type's, for a graph of one type

    @property
    def nodes(self) -> Any:
        """The only node type's sampled node ids (``node[t]``)."""
        return self.node[_only(self.node, "node type")]

    @property
    def e_id(self) -> Any:
        """The only edge type's edge ids (``edge[e]``)."""
        return self.edge[_only(self.edge, "edge type")]

    def _counts(self, counts: List[int]) -> Any:
        """counts as an int64 array of the kind (numpy, or torch on its device) of the nodes."""
        arr = np.asarray(counts, dtype=np.int64)
        first = next(iter(self.node.values()), None)
        if first is None or isinstance(first, np.ndarray):
            return arr
        return _torch().as_tensor(arr, device=first.device)

    @property
    def nodes_per_hop(self) -> Any:
        """The only node type's counts: seeds, then the nodes each hop reached first."""
        return self._counts(self.num_sampled_nodes[_only(self.num_sampled_nodes, "node type")])

    @property
    def edges_per_hop(self) -> Any:
        """The only edge type's edges sampled at each hop."""
        return self._counts(self.num_sampled_edges[_only(self.num_sampled_edges, "edge type")])

    @property
    def num_seeds(self) -> int:
        """Number of seeds: the first ``num_seeds`` nodes of the seed type (the only type's, for a
        sample whose seeds have no one type)."""
        t = self.seed_type if self.seed_type is not None else _only(self.num_sampled_nodes, "node type")
        return int(self.num_sampled_nodes[t][0])

    @property
    def num_nodes(self) -> int:
        return int(sum(sum(c) for c in self.num_sampled_nodes.values()))

    @property
    def num_edges(self) -> int:
        return int(sum(sum(c) for c in self.num_sampled_edges.values()))

    @property
    def num_hops(self) -> int:
        return len(next(iter(self.num_sampled_edges.values()), []))

    @property
    def edge_index(self) -> Any:
        """``[row; col]`` of the only edge type as a ``(2, num_edges)`` array/tensor."""
        return self.edge_index_of(_only(self.rows, "edge type"))

    def edge_index_of(self, edge_type: Any) -> Any:
        """``[row; col]`` of one edge type as a ``(2, E)`` array/tensor."""
        e = edge_type if edge_type in self.rows else edge_type_tuple(edge_type)
        if isinstance(self.rows[e], np.ndarray):
            return np.stack([self.rows[e], self.cols[e]])
        return _torch().stack([self.rows[e], self.cols[e]])

    def _fields(self) -> Dict[str, Any]:
        return dict(node=self.node, row=self.rows, col=self.cols, edge=self.edge, num_sampled_nodes=self.num_sampled_nodes,
                    num_sampled_edges=self.num_sampled_edges, seed_type=self.seed_type, typed=self.typed, batch=self.batch)

    def _with_arrays(self, conv: Any, nodes: bool = True, edges: bool = True, ids: bool = True) -> "Sample":
        """A copy whose arrays are conv(array) (None stays None): node ids (nodes), rows and
        cols (edges), edge ids (ids); the rest shared."""
        def each(d: Dict[Any, Any], on: bool) -> Dict[Any, Any]:
            return {k: (conv(v) if on and v is not None else v) for k, v in d.items()}

        out = copy.copy(self)
        out.node, out.rows, out.cols, out.edge = each(self.node, nodes), each(self.rows, edges), each(self.cols, edges), each(self.edge, ids)
        if self.batch is not None:
            out.batch = each(self.batch, nodes)
        return out

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        a, b = vars(self), vars(other)
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{t}: {sum(c)}" for t, c in self.num_sampled_nodes.items())
        return f"<tierfs.{type(self).__name__} {'typed' if self.typed else 'untyped'} nodes {{{sizes}}}, {self.num_edges} edges, {self.num_hops} hops>"


def _same(a: Any, b: Any) -> bool:
    """a == b for sample fields: dicts and lists of arrays compared array by array."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or _util.is_tensor(a):
        if _util.is_tensor(a):
            a = a.detach().cpu().numpy()
        if _util.is_tensor(b):
            b = b.detach().cpu().numpy()
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b))
    return bool(a == b)


class LinkSample(Sample):
    """A k-hop neighborhood of a batch of seed edges of ``edge_type``, and where its label edges
    are: PyG's ``edge_sample`` (a disjoint sampler's: ``disjoint=True``, the seeds every
    endpoint in PyG's order, ``batch`` each node's tree mod the seed edges, the label arrays the
    seeds' positions; see :meth:`Sampler.sample_from_edges`).

    The seeds of each node type (its first ``num_sampled_nodes[t][0]`` nodes) are the distinct
    endpoints of that type of the seed edges and the negatives, ascending; ``seed_type`` is None
    for a typed sample. Without negatives or with ``"binary"`` ones, ``edge_label_index`` (2, m)
    holds the seed edges in input order, then the negative pairs, sources as local ids into
    ``node[edge_type[0]]``, destinations into ``node[edge_type[2]]``; ``edge_label`` the labels
    given (or float 1s), then a 0 a negative pair (without negatives: the labels given, or None).
    With ``"triplet"`` negatives ``src_index``, ``dst_pos_index`` (one a seed edge) and
    ``dst_neg_index`` (seed edge i's negative destinations in row i; shape (n,) for one a seed
    edge, else (n, amount)) instead.
    """

    #: The label arrays: keyword arguments of the constructor and attributes, None where absent.
    _LABELS = ("edge_label_index", "edge_label", "src_index", "dst_pos_index", "dst_neg_index")

    def __init__(self, *args: Any, edge_type: Tuple[str, str, str] = ("", "", ""), **kwargs: Any) -> None:
        labels = {name: kwargs.pop(name, None) for name in self._LABELS}
        super().__init__(*args, **kwargs)
        self.edge_type = edge_type
        vars(self).update(labels)


def _take_sample(hs: int, seed_type: Optional[str], typed: bool) -> Sample:
    """Copies a native sample out (numpy arrays: one tfs_sample_json, then one copy per node
    type and per edge type) and frees it. seed_type None takes the only node type for an
    untyped sample."""
    try:
        sizes = read_json(lambda buf, cap, needed: lib.tfs_sample_json(hs, buf, cap, needed))
        node: Dict[str, Any] = {}
        batch: Optional[Dict[str, Any]] = {} if sizes.get("disjoint") else None
        for t, counts in sizes["nodes_per_hop"].items():
            arr = np.empty(int(sum(counts)), dtype=np.int64)
            if arr.size:
                check(lib.tfs_sample_nodes(hs, t.encode(), arr.ctypes.data))
            node[t] = arr
            if batch is not None:
                batch[t] = np.empty_like(arr)
                if arr.size:
                    check(lib.tfs_sample_batch(hs, t.encode(), batch[t].ctypes.data))
        row: Dict[Tuple[str, str, str], Any] = {}
        col: Dict[Tuple[str, str, str], Any] = {}
        edge: Dict[Tuple[str, str, str], Any] = {}
        for key, counts in sizes["edges_per_hop"].items():
            m = int(sum(counts))
            r, c = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
            eid = np.empty(m, dtype=np.int64) if sizes["edge_ids"][key] else None
            if m:
                check(lib.tfs_sample_edges(hs, key.encode(), r.ctypes.data, c.ctypes.data, None if eid is None else eid.ctypes.data))
            e = edge_type_tuple(key)
            row[e], col[e], edge[e] = r, c, eid
    finally:
        lib.tfs_sample_free(hs)
    if seed_type is None and not typed and len(node) == 1:
        seed_type = next(iter(node))
    return Sample(
        node=node, row=row, col=col, edge=edge,
        num_sampled_nodes={t: [int(c) for c in v] for t, v in sizes["nodes_per_hop"].items()},
        num_sampled_edges={edge_type_tuple(k): [int(c) for c in v] for k, v in sizes["edges_per_hop"].items()},
        seed_type=seed_type, typed=typed, batch=batch,
    )


def _take_link_labels(hs: int) -> tuple:
    """A native link sample's label arrays (edge_label_index (2, m), edge_label, src_index,
    dst_pos_index, dst_neg_index (flat); None where it has none); frees the sample on error only
    (_take_sample frees it after)."""
    try:
        sizes = read_json(lambda buf, cap, needed: lib.tfs_sample_link_json(hs, buf, cap, needed))
        names = ("edge_label", "src_index", "dst_pos_index", "dst_neg_index")
        arrays = {k: np.empty(sizes[k], dtype=np.int64) for k in names}
        eli = np.empty((2, sizes["edge_label_index"]), dtype=np.int64)
        check(lib.tfs_sample_link_copy(hs, eli.ctypes.data, *(arrays[k].ctypes.data for k in names)))
    except BaseException:
        lib.tfs_sample_free(hs)
        raise
    return (
        None if sizes["triplet"] else eli,
        arrays["edge_label"] if sizes["edge_label"] else None,
        *(arrays[k] if sizes["triplet"] else None for k in ("src_index", "dst_pos_index", "dst_neg_index")),
    )


def _take_link_sample(hs: int, edge_type: Tuple[str, str, str], typed: bool, labels: Any = None) -> LinkSample:
    """A native link sample copied out as a LinkSample of edge_type (its label arrays as the core
    gives them, or as labels gives them: (edge_label_index, edge_label, src_index, dst_pos_index,
    dst_neg_index)), and freed."""
    link = _take_link_labels(hs)
    smp = _take_sample(hs, None, typed)
    if labels is not None:
        link = labels(link)
    if typed:
        smp.seed_type = None
    return LinkSample(**smp._fields(), edge_type=edge_type, **dict(zip(LinkSample._LABELS, link)))


def _to_torch(out: Sample, device: Any) -> Sample:
    """out with its arrays (and a link sample's label arrays) as torch tensors, on device unless
    it is None or the CPU."""
    torch = _torch()
    dev = device if device is not None and device.type != "cpu" else None

    def conv(a: Any) -> Any:
        t = torch.from_numpy(np.ascontiguousarray(a))
        return t.to(dev, non_blocking=True) if dev is not None else t

    res = out._with_arrays(conv)
    if isinstance(res, LinkSample):
        for name in LinkSample._LABELS:
            a = getattr(res, name)
            if a is not None:
                setattr(res, name, conv(a))
    return res


def _neg_sampling(neg_sampling: Any, amount: Any) -> tuple:
    """(mode, amount) of a negative sampling request: None, "binary", "triplet" or a PyG
    NegativeSampling (its mode and amount win over ``amount``), checked here so that the error
    names the argument."""
    if neg_sampling is not None and not isinstance(neg_sampling, str):
        if getattr(neg_sampling, "src_weight", None) is not None or getattr(neg_sampling, "dst_weight", None) is not None:
            raise errors.InvalidArgumentError("neg_sampling: weighted negative sampling (src_weight, dst_weight) is not supported; tierfs draws negatives uniformly")
        mode = getattr(neg_sampling, "mode", None)
        amount = getattr(neg_sampling, "amount", amount)
        neg_sampling = getattr(mode, "value", mode)
    if neg_sampling not in (None, "binary", "triplet"):
        raise errors.InvalidArgumentError(f"neg_sampling = {neg_sampling!r}: want None, 'binary', 'triplet' or a torch_geometric NegativeSampling")
    if isinstance(amount, (bool, np.bool_)) or not isinstance(amount, (int, float, np.integer, np.floating)):
        raise errors.DTypeError(f"amount (neg_sampling_ratio) must be a number, got {amount!r}")
    amount = float(amount)
    if neg_sampling is None:
        return None, amount
    if not (amount > 0) or amount == float("inf"):
        raise errors.InvalidArgumentError(f"amount (neg_sampling_ratio) = {amount!r}: want negatives per seed edge > 0")
    if neg_sampling == "triplet" and not amount.is_integer():
        raise errors.InvalidArgumentError(f"amount (neg_sampling_ratio) = {amount!r}: triplet negatives want a whole number of negatives per seed edge")
    return neg_sampling, amount


def _link_labels(labels: Any, mode: Any, n: int) -> tuple:
    """(labels as numpy or None, the int64 labels the core carries or None) of a link sample's
    ``labels`` argument, checked against the mode and the n seed edges."""
    if labels is None:
        return None, None
    if mode == "triplet":
        raise errors.InvalidArgumentError("labels: triplet negatives take no labels (src_index, dst_pos_index and dst_neg_index tell positives from negatives)")
    lab = labels.detach().cpu().numpy() if _util.is_tensor(labels) else np.asarray(labels)
    if lab.ndim == 0 or lab.shape[0] != n:
        raise errors.InvalidArgumentError(f"labels: {lab.shape[0] if lab.ndim else 'a scalar'} labels for {n} seed edges; give one label per seed edge or none")
    if lab.ndim == 1 and lab.dtype.kind in "iu":
        return lab, np.ascontiguousarray(lab, dtype=np.int64)
    return lab, None


def _finish_link_labels(mode: Any, amount: float, n: int, lab: Any, core_labels: Any, eli: Any, label: Any, dst_neg_index: Any) -> tuple:
    """(edge_label, dst_neg_index) as PyG's edge_sample gives them, from the core's: labels the
    core does not carry (float, several dims) put back with 0s for negatives, the labels' dtype
    kept, binary labels float when none were given, dst_neg_index shaped (n, amount) or (n,)."""
    if label is None and (mode == "binary" or core_labels is not None):
        label = np.empty(0, dtype=np.int64)  # no seed edges: the core's labels are empty
    if mode == "triplet":
        dst_neg_index = dst_neg_index.reshape(n, int(amount))
        if amount == 1:
            dst_neg_index = dst_neg_index[:, 0]
    elif lab is not None and core_labels is None:  # labels the core does not carry: as PyG
        label = lab if mode is None else np.concatenate([lab, np.zeros((eli.shape[1] - n,) + lab.shape[1:], lab.dtype)])
    elif lab is not None:
        label = label.astype(lab.dtype)
    elif mode == "binary":
        label = label.astype(np.float32)  # PyG's torch.ones / new_zeros: float labels
    return label, dst_neg_index
