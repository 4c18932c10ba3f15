"""tierfs.open: the one way in, which picks the kind of store (plain, or one rank's
:class:`~tierfs.distributed.DistributedStore`)."""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from . import _util, errors
from .distributed import open_distributed
from .store import Store

__all__ = ["open"]


def open(
    path: Union[str, os.PathLike],
    host_cache: _util.SizeLike = None,
    gpu_cache: _util.SizeLike = None,
    device: Any = "cpu",
    feature: Optional[str] = None,
    verify_reads: bool = False,
    topology_memory: Union[_util.SizeLike, bool] = None,
    io_backend: Optional[str] = None,
    queue_depth: Optional[int] = None,
    max_concurrent_io: Optional[int] = None,
    gpu_topology: Optional[str] = None,
    host_policy: Optional[str] = None,
    coalesce_gap: Optional[int] = None,
    read_align: Optional[int] = None,
    *,
    cache_mode: Optional[str] = None,
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
    group: Any = None,
    hotness: Any = None,
    timeout: Optional[float] = None,
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
            rows. With a CUDA device every gather returns a CUDA tensor.
        feature: the feature to serve; None is the dataset's first.
        verify_reads: check every block read from disk against its checksum.
        topology_memory: budget for holding the topology in memory (default 1 GiB); False or a
            negative number keeps it on disk (each sampling hop then reads what it needs).
        io_backend: None picks io_uring, falling back to pread; ``"io_uring"`` or ``"pread"``
            forces one. ``"gpu-uring"``: device gathers' disk reads are submitted and completed
            by a GPU kernel through an io_uring in mapped memory (Linux >= 6.5; see
            docs/gpu-uring.md); where that cannot run, CPU submission, with the reason in
            ``stats()["io"]["gpu_uring"]``.
        queue_depth: reads in flight per IO stack (default 128).
        max_concurrent_io: IO stacks, i.e. gathers reading the disk at once (default: CPUs).
        gpu_topology: ``"device"`` copies the topology into GPU memory, ``"pinned"`` into pinned
            host memory read over PCIe, and the sampler then draws on the GPU (same samples as
            the host sampler); None samples on the host.
        host_policy: how the host tier is kept: None or ``"static"`` fills it at open time (and
            on :meth:`Store.place`) and keeps it; ``"sieve"`` makes it a cache that admits the rows
            gathers read from disk and evicts with SIEVE, for access patterns that drift.
        coalesce_gap: disk reads of a file at most this many bytes apart become one read (the gap
            read and discarded, up to 128 KiB). None or 0: only reads sharing or touching a block;
            -1 probes the disk at open (about 1.5 s; ``stats()["disk_probe"]`` shows it).
        read_align: alignment of disk reads. None or 0: the dataset's block size (4 KiB); -1: the
            smallest the files' direct IO allows (often 512 bytes); not with ``verify_reads``.
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

    Raises:
        FileNotFoundError (tierfs.NotFoundError): no dataset at ``path``.
        KeyError (tierfs.KeyNotFoundError): no feature named ``feature``.
        ValueError (tierfs.InvalidArgumentError): a bad option.
    """
    options = dict(
        host_cache=host_cache,
        gpu_cache=gpu_cache,
        device=device,
        feature=feature,
        verify_reads=verify_reads,
        topology_memory=topology_memory,
        io_backend=io_backend,
        queue_depth=queue_depth,
        max_concurrent_io=max_concurrent_io,
        gpu_topology=gpu_topology,
        host_policy=host_policy,
        coalesce_gap=coalesce_gap,
        read_align=read_align,
    )
    if cache_mode is not None or rank is not None or world_size is not None or group is not None:
        return open_distributed(path, rank=rank, world_size=world_size, group=group, cache_mode=cache_mode,
                                hotness=hotness, timeout=timeout, **options)
    for name, value in (("hotness", hotness), ("timeout", timeout)):
        if value is not None:
            raise errors.InvalidArgumentError(f"tierfs.open: {name} is an option of distributed stores (pass cache_mode=); "
                                              "use Store.place(hotness) on a plain store")
    return Store(path, **options)
