"""What a loader asks its store about sharing seeds and ordering gathers (a :class:`SeedShare`).

Every store gives one as ``store._loader_share``; :class:`tierfs.Loader` reads the epoch's seeds,
their count, the planned epochs' sampler seed and directory, and gathers a batch's rows through
it, and so never knows which kind of store it has. :class:`SeedShare` is one process's: every
seed, each epoch's order a permutation from the loader's seed and the epoch, gathers as the
store's own. :class:`tierfs.distributed.RankShare` is a rank's of a distributed store: its
``split_seeds`` share, the batches' peer exchanges in batch order.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

__all__ = ["SeedShare"]


class SeedShare:
    """One process's seed share of a store: a loader iterates every seed.

    Attributes:
        per_rank: whether the share is one rank's of several (a loader then decides
            ``planned_epochs="auto"`` at once, and each rank's plan places no tiers).
        sampler_seed_offset: what the store's :meth:`sampler` added to the caller's seed, and
            its :meth:`plan_epochs` adds again (so a loader passes the seed less this).
    """

    per_rank = False
    sampler_seed_offset = 0

    def __init__(self, store: Any) -> None:
        self.store = store

    def count(self, n: int, drop_last: bool) -> int:
        """The seeds a loader over ``n`` seeds iterates an epoch."""
        return n

    def order(self, seeds: np.ndarray, epoch: int, seed: int, shuffle: bool, drop_last: bool) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """(the seeds of ``epoch`` in their order, their positions in ``seeds`` or None where
        the share does not keep them)."""
        if not shuffle:
            positions = np.arange(seeds.shape[0])
        else:
            positions = np.random.default_rng([seed, epoch]).permutation(seeds.shape[0])
        return seeds[positions], positions

    def plan_dir(self, plan_dir: Optional[str], reuse: bool) -> Optional[str]:
        """The directory a loader's planned rounds are made in, from the caller's ``plan_dir``
        (``reuse``: the loader plans once, in it, and keeps the plan)."""
        return plan_dir

    def turnstile(self) -> Any:
        """What orders an epoch's gathers in batch order (None: nothing to order). One per
        loader epoch, passed to the gathers below."""
        return None

    def gather(self, ids: Any, turn: Any, i: int) -> Any:
        """The default feature's rows of batch ``i``'s sampled nodes ``ids`` (distinct)."""
        return self.store.gather(ids)

    def gather_types(self, ids_by_type: Dict[str, Any], turn: Any, i: int) -> Dict[str, Any]:
        """{node type: rows of its ids} of batch ``i``, the types in the dict's order."""
        return {t: self.store.gather(ids, node_type=t) for t, ids in ids_by_type.items()}

    def read_planned(self, plan: Any, epoch: int, b: int, nodes_by_type: Dict[Optional[str], Any], on_gpu: bool, turn: Any) -> Dict[Optional[str], Any]:
        """{node type (None: the plan's one type): planned rows of its nodes} of batch ``b`` of
        ``epoch``; with ``on_gpu`` straight to the store's device."""
        read = plan.gather_device if on_gpu else plan.gather
        return {t: read(epoch, b, ids, node_type=t) for t, ids in nodes_by_type.items()}

