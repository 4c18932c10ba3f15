"""The one-type k-hop uniform neighbor sampler (:class:`Sampler`, made by :meth:`Store.sampler`):
node samples and link samples, one native call a batch."""

from __future__ import annotations

import json
from ctypes import byref, c_int32, c_void_p
from typing import TYPE_CHECKING, Any, List, Sequence, Union

import numpy as np

from . import _native, errors
from ._args import IdsLike, _fanouts, _ids, _torch
from ._native import check, lib
from ._sample import LinkSample, Sample, _finish_link_labels, _link_labels, _NativeSampler, _neg_sampling, _take_link_sample, _take_sample

if TYPE_CHECKING:  # annotations only: store imports this module
    from .store import Store

__all__ = ["Sampler"]


class Sampler(_NativeSampler):
    """Uniform k-hop neighbor sampling in the core; see :meth:`Store.sampler`.

    One native sampling call per batch. A sampler is used by one thread at a time (calls from
    several threads are serialized by a lock); make one sampler per thread for parallel
    sampling. Pickles as its store and options (its call counter starts again at 0).
    """

    _FREE = "tfs_sampler_free"

    def __init__(self, store: Store, fanouts: Sequence[int], replace: bool = False, seed: int = 0, workers: int = 0):
        super().__init__(store, replace, seed, workers)
        h = store._h()
        fanouts = _fanouts(fanouts)
        self._fanouts = fanouts
        for i, f in enumerate(fanouts):
            _native.check_value(c_int32, f, f"fanouts[{i}]")
        arr = (c_int32 * len(fanouts))(*fanouts)
        opts = _native.SamplerOptions()
        opts.struct_size = _native.ctypes.sizeof(_native.SamplerOptions)
        opts.fanouts = arr
        opts.num_hops = len(fanouts)
        opts.replace = 1 if replace else 0
        opts.seed = self._seed & 0xFFFFFFFFFFFFFFFF
        opts.workers = self._workers
        handle = c_void_p()
        check(lib.tfs_sampler_create(h, byref(opts), byref(handle)))
        self._handle = handle.value

    @property
    def fanouts(self) -> List[int]:
        return list(self._fanouts)

    def sample(self, seeds: IdsLike) -> Sample:
        """Samples the k-hop in-neighborhood of ``seeds`` (see :class:`Sample`).

        numpy or list seeds give numpy arrays; torch seeds give torch tensors on their device.
        """
        _native.check_process()
        ids_ = _ids(seeds, "seeds")
        arr = ids_.array
        with self._lock:
            h = self._handle
            if h is None:
                raise errors.ClosedError("tierfs: sampler is closed")
            hs = c_void_p()
            check(lib.tfs_sample(h, arr.ctypes.data, arr.shape[0], byref(hs)))
            arrays = _take_sample(hs)
        if ids_.kind != "torch":
            return Sample(*arrays)
        torch = _torch()
        out = [torch.from_numpy(a) for a in arrays]
        if ids_.device is not None and ids_.device.type != "cpu":
            out = [t.to(ids_.device, non_blocking=True) for t in out]
        return Sample(*out)

    def sample_from_edges(
        self,
        src: IdsLike,
        dst: IdsLike,
        labels: Any = None,
        neg_sampling: Any = None,
        amount: Union[int, float] = 1,
        strict: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
    ) -> LinkSample:
        """Samples the k-hop in-neighborhood of the seed edges ``(src[i], dst[i])`` and says
        where each seed edge and negative lies in it (see :class:`LinkSample`): PyG's
        ``edge_sample`` (``disjoint=False``), one native call, drawn with this sampler's next
        seed (node and link samples count alike).

        Args:
            src, dst: the seed edges' endpoints, one each per seed edge.
            labels: one label a seed edge (any dtype, PyG's ``edge_label``); not with triplets.
            neg_sampling: None, ``"binary"`` (``ceil(amount × n)`` random node pairs, label 0),
                ``"triplet"`` (``amount`` random destinations a seed edge) or a PyG
                ``NegativeSampling`` (its mode and amount; no weights).
            amount: negatives per seed edge (binary: a ratio > 0; triplet: a whole number >= 1).
            strict: redraw negatives that are edges of the graph (PyG draws them blindly).
            exclude_seed_edges: leave the seed edges out of the sampled neighborhoods;
                ``undirected`` also their reverses (dst, src).
        """
        _native.check_process()
        mode, amount = _neg_sampling(neg_sampling, amount)
        s_, d_ = _ids(src, "src"), _ids(dst, "dst")
        n = s_.array.shape[0]
        if d_.array.shape[0] != n:
            raise errors.InvalidArgumentError(f"src and dst: {n} src ids but {d_.array.shape[0]} dst ids; give one of each per seed edge")
        lab, core_labels = _link_labels(labels, mode, n)
        request = json.dumps({"neg_sampling": mode, "amount": amount, "strict": bool(strict),
                              "exclude_seed_edges": bool(exclude_seed_edges), "undirected": bool(undirected)}).encode()
        with self._lock:
            h = self._handle
            if h is None:
                raise errors.ClosedError("tierfs: sampler is closed")
            hs = c_void_p()
            check(lib.tfs_sample_edges(h, s_.array.ctypes.data, d_.array.ctypes.data,
                                       0 if core_labels is None else core_labels.ctypes.data, n, request, byref(hs)))
            arrays, (eli, label, src_index, dst_pos_index, dst_neg_index) = _take_link_sample(hs)
        label, dst_neg_index = _finish_link_labels(mode, amount, n, lab, core_labels, eli, label, dst_neg_index)
        link = [eli, label, src_index, dst_pos_index, dst_neg_index]
        if s_.kind != "torch":
            return LinkSample(*arrays, *link)
        torch = _torch()
        out = [torch.from_numpy(a) for a in arrays]
        link = [None if a is None else torch.from_numpy(np.ascontiguousarray(a)) for a in link]
        if s_.device is not None and s_.device.type != "cpu":
            out = [t.to(s_.device, non_blocking=True) for t in out]
            link = [None if t is None else t.to(s_.device, non_blocking=True) for t in link]
        return LinkSample(*out, *link)

    def __reduce__(self):
        return (Sampler, (self._store, self._fanouts, self._replace, self._seed, self._workers))

    def __repr__(self) -> str:
        return f"<tierfs.Sampler fanouts={self._fanouts} replace={self._replace} seed={self._seed}>"
