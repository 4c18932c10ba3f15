"""A rank's share of a loader's seeds on a :class:`tierfs.DistributedStore`: the DistributedSampler
split (:func:`split_seeds`), each rank's sampler seed stride, and the turnstile that lets a loader
epoch's peer exchanges go in batch order (:class:`RankShare`, the store's :mod:`tierfs.seedshare`
strategy)."""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

import numpy as np

from . import errors
from ._args import _ids, _torch
from .seedshare import SeedShare

__all__ = ["RankShare", "split_seeds"]

# Rank r's sampler draws with seed + r * _RANK_SEED_STRIDE (a sampler's i-th call uses seed + i,
# so ranks never share a stream within 2**32 batches).
_RANK_SEED_STRIDE = 1 << 32


def split_seeds(
    seeds: Any, rank: int, world_size: int, epoch: int = 0, seed: int = 0, shuffle: bool = True, drop_last: bool = False
) -> np.ndarray:
    """Rank ``rank``'s share of ``seeds`` in ``epoch``, exactly as torch's ``DistributedSampler``
    (``set_epoch(epoch)``, ``seed``) picks dataset indices: every rank permutes all seeds the same
    way (``torch.randperm`` seeded with ``seed + epoch``) and takes
    every ``world_size``-th position starting at ``rank``, so the shares are disjoint and of equal
    size. ``drop_last=False`` pads the permutation with its own first entries up to a multiple of
    ``world_size`` (up to ``world_size - 1`` seeds then appear on two ranks); ``drop_last=True``
    drops its tail instead (at most ``world_size - 1`` seeds are left out of the epoch).

    Returns int64 numpy ids.
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise errors.InvalidArgumentError(f"split_seeds: rank {rank} is not in [0, world_size = {world_size})")
    arr = _ids(seeds, "seeds").array
    n = arr.shape[0]
    if shuffle:  # DistributedSampler's permutation: torch.randperm seeded with seed + epoch
        torch = _torch()
        g = torch.Generator()
        g.manual_seed(int(seed) + int(epoch))
        order = torch.randperm(n, generator=g).numpy()
    else:
        order = np.arange(n)
    if drop_last:
        order = order[: (n // world_size) * world_size]
    elif n % world_size and n:
        total = -(-n // world_size) * world_size
        order = np.concatenate([order, np.resize(order, total - n)])
    return arr[order[rank::world_size]]


def _share(n: int, world_size: int, drop_last: bool) -> int:
    """Seeds per rank of :func:`split_seeds`."""
    return n // world_size if drop_last else -(-n // world_size)


class _Turnstile:
    """Lets the gathers of one loader epoch exchange in batch order, whatever thread runs them."""

    def __init__(self, timeout: float) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._timeout = timeout

    def wait(self, i: int) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self._next >= i, self._timeout):
                raise errors.PeerError(
                    f"tierfs: batch {i}'s peer exchange waited {self._timeout:.0f} s for batch {self._next} "
                    "of the same epoch to finish its exchange (the process group timeout)"
                )

    def done(self, i: int) -> None:
        with self._cond:
            self._next = max(self._next, i + 1)
            self._cond.notify_all()


class RankShare(SeedShare):
    """A rank's seed share of a :class:`tierfs.DistributedStore` (:mod:`tierfs.seedshare`): each epoch
    its :func:`split_seeds` share (every rank the same number of batches), the sampler drawing
    with the rank's own seed stride, planned rounds in ``plan_dir/rank-R``, and in shared mode
    the batches' peer exchanges in batch order (a :class:`_Turnstile` per loader epoch)."""

    per_rank = True

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.sampler_seed_offset = store.rank * _RANK_SEED_STRIDE

    def count(self, n: int, drop_last: bool) -> int:
        return _share(n, self.store.world_size, drop_last)

    def order(self, seeds: np.ndarray, epoch: int, seed: int, shuffle: bool, drop_last: bool) -> tuple:
        s = self.store
        return split_seeds(seeds, s.rank, s.world_size, epoch, seed, shuffle, drop_last), None

    def plan_dir(self, plan_dir: Optional[str], reuse: bool) -> Optional[str]:
        if plan_dir is None or reuse:  # a reused plan stays in plan_dir (the store adds rank-R inside it)
            return plan_dir
        return os.path.join(os.fspath(plan_dir), f"rank-{self.store.rank}")

    def turnstile(self) -> Optional[_Turnstile]:
        return _Turnstile(self.store._timeout) if self.store._exchange else None

    def gather(self, ids: Any, turn: Optional[_Turnstile], i: int) -> Any:
        return self.store._gather_in_turn(ids, turn, i)

    def gather_types(self, ids_by_type: Dict[str, Any], turn: Optional[_Turnstile], i: int) -> Dict[str, Any]:
        return self.store._gather_types_in_turn(ids_by_type, turn, i)

    def read_planned(self, plan: Any, epoch: int, b: int, nodes_by_type: Dict[Optional[str], Any], on_gpu: bool,
                     turn: Optional[_Turnstile]) -> Dict[Optional[str], Any]:
        return plan._gather_in_turn(epoch, b, nodes_by_type, on_gpu, turn)
