"""tierfs.open: the one way in, which picks the kind of store (plain, or one rank's
:class:`~tierfs.distributed.DistributedStore`)."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from . import _options, _util, errors
from .distributed import open_distributed
from .store import Store

__all__ = ["open"]


@_options.document
def open(
    path: Union[str, os.PathLike],
    host_cache: _util.SizeLike = None,
    gpu_cache: _util.SizeLike = None,
    device: Any = "cpu",
    *,
    cache_mode: Optional[str] = None,
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
    group: Any = None,
    hotness: Any = None,
    timeout: Optional[float] = None,
    host_tier: Optional[str] = None,
    **options: Any,
) -> "Store":
    """Opens the dataset directory ``path``.

    Args:
        path: a dataset made by :func:`tierfs.ingest`, :func:`tierfs.synth` or the CLI.
        host_cache: host-memory tier budget, as bytes or a string like ``"512MB"``/``"4GiB"``
            (KB/MB/GB are powers of 1000, KiB/MiB/GiB and bare K/M/G of 1024). None or 0: no
            host tier, every row is read from the SSD. The tier is filled at open time with the
            rows of the highest in-degree; :meth:`Store.place` refills it.
        gpu_cache: GPU tier budget in device memory: the hottest rows live there, the next
            hottest in the host tier. Needs ``libtierfs_cuda.so`` (``make cuda``) and a GPU;
            without them the store serves from the host with a warning, and ``stats()["gpu"]``
            says why. A budget above the GPU's free memory is a ValueError.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``: where gathers return
            rows. With a CUDA device every gather returns a CUDA tensor (the core's
            ``gpu_device`` is N).
        **options: the core's other store options, by name (None: the default; sizes take
            ``"4GiB"``; ``topology_memory=False`` keeps the topology on disk); an unknown name
            is a ValueError listing them. Every store option, as the core describes it:
            {store_options}
        cache_mode: ``"shared"`` or ``"replicated"``: open one rank's view of a store for
            data-parallel training over torch.distributed (:class:`tierfs.distributed.DistributedStore`,
            docs/distributed.md). ``"shared"`` spreads the hottest rows over the ranks' GPU
            tiers (each row owned by one rank, peer rows exchanged per gather); ``"replicated"``
            caches the same hottest rows on every rank. Giving ``rank``, ``world_size`` or
            ``group`` also opens a distributed store (shared by default).
        rank, world_size: checked against the process group (torch.distributed must be
            initialized, except for one rank).
        group: the process group to exchange over; None makes a new group of every rank of the
            default group (so DDP's collectives never interleave with the store's).
        hotness: distributed stores only: one count per node ranking the rows to cache (default:
            the applied placement, else in-degree); every rank must pass the same.
        timeout: seconds a peer exchange waits for the other ranks before raising
            :class:`tierfs.PeerError` (default: the default group's timeout).
        host_tier: distributed stores only: ``"per_rank"`` (the default: each rank its own
            host tier of ``host_cache`` bytes) or ``"per_host"`` (one host tier of
            ``host_cache`` bytes per host, in shared memory under /dev/shm, filled by the
            host's first rank and mapped by the others; docs/distributed.md).

    Raises:
        FileNotFoundError (tierfs.NotFoundError): no dataset at ``path``.
        KeyError (tierfs.KeyNotFoundError): no feature named ``feature``.
        ValueError (tierfs.InvalidArgumentError): a bad option.
    """
    options = dict(options, host_cache=host_cache, gpu_cache=gpu_cache, device=device)
    if cache_mode is not None or rank is not None or world_size is not None or group is not None:
        return open_distributed(path, rank=rank, world_size=world_size, group=group, cache_mode=cache_mode,
                                hotness=hotness, timeout=timeout, host_tier=host_tier, **options)
    for name, value in (("hotness", hotness), ("timeout", timeout), ("host_tier", host_tier)):
        if value is not None:
            raise errors.InvalidArgumentError(f"tierfs.open: {name} is an option of distributed stores (pass cache_mode=); "
                                              "use Store.place(hotness) on a plain store")
    return Store(path, **options)
