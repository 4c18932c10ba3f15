"""Sample, a k-hop neighborhood in local ids, and copying one out of the library.

Shared by store (Sampler) and epochs (planned batches); it imports neither.
"""

from __future__ import annotations

import threading
from ctypes import byref, c_int32, c_int64, c_void_p
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import _native, _util, errors
from ._args import _torch
from ._native import check, lib, read_json

__all__ = ["LinkSample", "Sample"]


class _NativeSampler:
    """What every sampler shares: its store and options, its native handle (``_handle``, used
    under ``_lock``, one thread at a time) and the freeing of it by the library's ``_FREE``
    function, once."""

    _FREE = ""  # the library function that frees the handle

    def __init__(self, store: Any, replace: bool, seed: int, workers: int) -> None:
        self._store = store
        self._replace = bool(replace)
        self._seed = int(seed)
        self._workers = int(workers)
        self._lock = threading.Lock()
        self._handle: Optional[int] = None

    @property
    def replace(self) -> bool:
        return self._replace

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def store(self) -> Any:
        return self._store

    def close(self) -> None:
        """Frees the native sampler; closing again does nothing."""
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            getattr(lib, self._FREE)(h)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


@dataclass
class Sample:
    """A k-hop neighborhood of a batch of seeds, in local ids.

    ``nodes`` holds the global ids: the seeds first, exactly as given (duplicates kept), then
    the nodes each hop reached first, in order. Edges are ``(row[i], col[i])`` = (neighbor, node
    it was sampled for), local ids into ``nodes`` — messages flow row → col, as PyG's
    ``edge_index``. ``nodes_per_hop`` has ``num_hops + 1`` entries (seeds, then new nodes per
    hop), ``edges_per_hop`` ``num_hops``. ``e_id[i]`` is edge i's id in the dataset (its
    position in the CSC; PyG's ``e_id``), the row of its edge features:
    ``store.gather(sample.e_id, feature="edge_attr")``. All int64, numpy or torch like the seeds
    given.
    """

    nodes: Any
    row: Any
    col: Any
    nodes_per_hop: Any
    edges_per_hop: Any
    e_id: Any = None

    @property
    def num_seeds(self) -> int:
        """Number of seeds (the first ``num_seeds`` entries of ``nodes``)."""
        return int(self.nodes_per_hop[0])

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.row.shape[0])

    @property
    def num_hops(self) -> int:
        return int(self.edges_per_hop.shape[0])

    @property
    def edge_index(self) -> Any:
        """``[row; col]`` as a ``(2, num_edges)`` array/tensor."""
        if isinstance(self.row, np.ndarray):
            return np.stack([self.row, self.col])
        return _torch().stack([self.row, self.col])


def _take_sample(hs: c_void_p) -> tuple:
    """Copies a native sample's arrays out (nodes, row, col, nodes_per_hop, edges_per_hop, e_id)
    and frees it."""
    try:
        nn, ne, nh = c_int64(), c_int64(), c_int32()
        check(lib.tfs_sample_sizes(hs, byref(nn), byref(ne), byref(nh)))
        nodes = np.empty(nn.value, dtype=np.int64)
        row = np.empty(ne.value, dtype=np.int64)
        col = np.empty(ne.value, dtype=np.int64)
        nph = np.empty(nh.value + 1, dtype=np.int64)
        eph = np.empty(nh.value, dtype=np.int64)
        check(lib.tfs_sample_copy(hs, nodes.ctypes.data, row.ctypes.data, col.ctypes.data, nph.ctypes.data, eph.ctypes.data))
        e_id = np.empty(ne.value, dtype=np.int64)
        check(lib.tfs_sample_edge_ids(hs, e_id.ctypes.data))
    finally:
        lib.tfs_sample_free(hs)
    return nodes, row, col, nph, eph, e_id


@dataclass
class LinkSample(Sample):
    """A k-hop neighborhood of a batch of seed edges, and where its label edges are: PyG's
    ``edge_sample`` (``disjoint=False``).

    The seeds (first ``num_seeds`` of ``nodes``) are the distinct endpoints of the seed edges
    and the negatives, ascending. Without negatives or with ``"binary"`` ones,
    ``edge_label_index`` (2, m) holds the seed edges in input order, then the negative pairs, as
    local ids into ``nodes``; ``edge_label`` the labels given (or float 1s), then a 0 a negative
    pair (without negatives: the labels given, or None). With ``"triplet"`` negatives
    ``src_index``, ``dst_pos_index`` (one a seed edge) and ``dst_neg_index`` (seed edge i's
    negative destinations in row i; shape (n,) for one a seed edge, else (n, amount)) instead.
    """

    edge_label_index: Any = None
    edge_label: Any = None
    src_index: Any = None
    dst_pos_index: Any = None
    dst_neg_index: Any = None


def _take_link_sample(hs: c_void_p) -> tuple:
    """Copies a native link sample's label arrays out (edge_label_index (2, m), edge_label,
    src_index, dst_pos_index, dst_neg_index (flat); None where the sample has none), then its
    node sample (_take_sample, which frees it)."""
    try:
        sizes = read_json(lambda buf, cap, needed: lib.tfs_sample_link_json(hs, buf, cap, needed))
        arrays = {k: np.empty(sizes[k], dtype=np.int64) for k in ("edge_label", "src_index", "dst_pos_index", "dst_neg_index")}
        eli = np.empty((2, sizes["edge_label_index"]), dtype=np.int64)
        check(lib.tfs_sample_link_copy(hs, eli.ctypes.data, *(arrays[k].ctypes.data for k in ("edge_label", "src_index", "dst_pos_index", "dst_neg_index"))))
    except BaseException:
        lib.tfs_sample_free(hs)
        raise
    link = (
        None if sizes["triplet"] else eli,
        arrays["edge_label"] if sizes["edge_label"] else None,
        *(arrays[k] if sizes["triplet"] else None for k in ("src_index", "dst_pos_index", "dst_neg_index")),
    )
    return _take_sample(hs), link


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
