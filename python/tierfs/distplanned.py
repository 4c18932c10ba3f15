"""A rank's planned epochs on a :class:`tierfs.DistributedStore`: :meth:`DistributedStore.plan_epochs`
(this rank's :func:`split_seeds` share of each epoch, without the peer-owned rows) and the plan it
returns (:class:`DistributedPlannedEpochs`, whose gathers exchange the peer rows), moved here from
distributed.py as they were; :class:`tierfs.DistributedStore` takes ``plan_epochs`` as its method."""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Dict, Optional

import numpy as np

from . import errors
from ._args import _torch
from .epochs import PlannedEpochs, plan_request
from .rankshare import _RANK_SEED_STRIDE, _Turnstile, split_seeds

__all__ = ["DistributedPlannedEpochs"]


class DistributedPlannedEpochs(PlannedEpochs):
    """One rank's plan on a :class:`DistributedStore` (:meth:`DistributedStore.plan_epochs`).
    In shared mode :meth:`gather` and :meth:`gather_device` are collectives, as the store's
    gather: the batch's rows of this rank come from its memory tiers and the plan's packed
    extent, the rows other ranks own (never packed) through the peer exchange; every rank calls
    them for the same batches in the same order. Replicated: this rank's plan alone."""

    def gather(self, epoch: int, batch: int, nodes: Any, out: Any = None, node_type: Optional[str] = None) -> Any:
        """The feature rows of ``nodes`` (the batch's sampled nodes, of ``node_type``), as
        :meth:`DistributedStore.gather` returns them."""
        store = self._store
        if not store._exchange:
            return super().gather(epoch, batch, nodes, out, node_type)
        return store._peers.now(lambda: store._peers.gather(nodes, out, node_type, self._local(epoch, batch, device=False), distinct=True))

    def gather_device(self, epoch: int, batch: int, nodes: Any, out: Any = None, node_type: Optional[str] = None) -> Any:
        """:meth:`gather` into a CUDA tensor on the store's device (:meth:`PlannedEpochs.gather_device`)."""
        store = self._store
        if not store._exchange:
            return super().gather_device(epoch, batch, nodes, out, node_type)
        return store._peers.now(lambda: store._peers.gather(nodes, out, node_type, self._local(epoch, batch, device=True), distinct=True))

    def _gather_in_turn(self, epoch: int, batch: int, nodes_by_type: Dict[Optional[str], Any], device: bool,
                        turn: Optional[_Turnstile]) -> Dict[Optional[str], Any]:
        """{node type: gather of its nodes} (None: the plan's one type), the types in the dict's
        order, exchanging after batch ``batch - 1`` of the same loader epoch did (any thread)."""
        read = self.gather_device if device else self.gather
        store = self._store
        if not store._exchange or turn is None:
            return {t: read(epoch, batch, ids, node_type=t) for t, ids in nodes_by_type.items()}
        return store._peers.in_turn(turn, batch, {t: functools.partial(store._peers.gather, ids, None, t, self._local(epoch, batch, device),
                                                                           distinct=True) for t, ids in nodes_by_type.items()})

    def _local(self, epoch: int, batch: int, device: bool) -> Callable[[np.ndarray, str], tuple]:
        """The local gather of :meth:`tierfs.exchange.PeerExchange.gather` for batch ``batch`` of
        ``epoch``: every row of the batch's ids from the plan, the peer-owned ones left unwritten."""

        def gather(ids: np.ndarray, node_type: str) -> tuple:
            torch = _torch()
            nt = node_type if self.hetero else None
            if device:  # on the worker's own stream, as the store's local gather
                with torch.cuda.stream(self._store._worker_stream()):
                    rows = PlannedEpochs.gather_device(self, epoch, batch, ids, node_type=nt)
                    event = torch.cuda.Event()
                    event.record(torch.cuda.current_stream(rows.device))
                return rows, event
            rows = PlannedEpochs.gather(self, epoch, batch, ids, node_type=nt)
            return (torch.from_numpy(rows) if isinstance(rows, np.ndarray) else rows), None

        return gather


def plan_epochs(self, fanouts: Any, batch_size: int, epochs: int, seeds: Any = None, seed_edges: Any = None, **options: Any) -> "DistributedPlannedEpochs":
    """This rank's plan of its share of ``epochs`` epochs (docs/distributed.md, "Planned
    epochs"): planned epoch ``e`` batches exactly the seeds the on-demand :class:`tierfs.Loader`
    gives this rank in epoch ``e`` — :func:`split_seeds` of ``seeds`` (all ranks' seeds; default
    the "train" split of ``node_type``) with ``shuffle_seed`` as the seed and ``drop_last`` —
    so every rank has the same number of batches; batch ``b`` samples as this rank's
    ``sampler(fanouts, seed=seed)`` does in a plan (its seed and ``e``, ``b``). In shared mode
    the rows other ranks own are never packed: :meth:`DistributedPlannedEpochs.gather` (a
    collective, like :meth:`gather`) reads this rank's rows from its tiers and the plan and
    the peer-owned ones through the exchange. ``plan_dir`` gets a directory per rank
    (``plan_dir/rank-R``); ``disk_budget`` is each rank's. The options are
    :meth:`Store.plan_epochs`' (the core's plan options, one table), but for place_tiers: the
    placement of a distributed store is its ownership, decided at open, so a rank plans without
    placing — the table's default (True) does not apply here, and ``place_tiers=True`` given
    is refused. Seed edges are not supported. ``first_epoch`` F plans the epochs
    ``[F, F + epochs)``, and ``pack_method`` and ``pack_memory`` say how this rank's planning
    reads."""
    if options.get("place_tiers"):
        raise errors.NotSupportedError(
            "tierfs: plan_epochs(place_tiers=True) on a distributed store: its placement is decided at open (ownership: each "
            "rank's owner tier holds its share of the global cache), so a plan cannot refill the tiers; leave place_tiers out "
            "or give place_tiers=False"
        )
    plan_request(batch_size, epochs, options, "tierfs: plan_epochs")  # a bad option is refused before the split
    if seed_edges is not None:
        raise errors.NotSupportedError("tierfs: planned epochs of seed edges (link prediction) are not supported on a distributed store")
    hetero = isinstance(fanouts, dict)
    node_type, drop_last = options.get("node_type"), bool(options.get("drop_last", False))
    # shuffle_seed orders the split (split_seeds), not the plan: the plan batches the orders as they are.
    shuffle_seed, first_epoch = options.pop("shuffle_seed", None) or 0, options.get("first_epoch") or 0
    if seeds is None:
        seeds = self.split("train", node_type=node_type) if hetero else self.split("train")
    first = int(first_epoch)
    orders = [split_seeds(seeds, self._rank, self._world, e, shuffle_seed, True, drop_last) for e in range(first, first + int(epochs))]
    elsewhere = None
    if self._exchange:  # rows other ranks own come through the exchange, never from this rank's plan
        me = self._rank
        elsewhere = {t: np.flatnonzero((o.owner >= 0) & (o.owner != me)) for t, o in self._own.items()}
        if not hetero:
            elsewhere = elsewhere[self._ownership(None).node_type]
    if options.get("plan_dir") is not None:
        options["plan_dir"] = os.path.join(os.fspath(options["plan_dir"]), f"rank-{self._rank}")
    options.update(seed=int(options.get("seed") or 0) + self._rank * _RANK_SEED_STRIDE, place_tiers=False)
    return DistributedPlannedEpochs(self, fanouts, batch_size, epochs, seed_orders=orders, elsewhere=elsewhere, **options)
