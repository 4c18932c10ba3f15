"""Data-parallel training over torch.distributed with one cache shared by every rank (LSM-GNN).

``tierfs.open(path, ..., cache_mode="shared")`` (or ``rank=``/``world_size=``/``group=``) in each
rank of a torch.distributed job returns a :class:`DistributedStore`: a :class:`tierfs.Store` with
the same surface (``gather``, ``labels``, ``split``, ``sampler``, ``stats``) whose fastest memory
tiers, taken together over the ranks, act as one cache (docs/distributed.md):

* **Ownership.** Every rank ranks the rows the same way (:meth:`Store.hottest`: the applied
  placement, else in-degree, or the ``hotness`` given; :meth:`DistributedStore.place` ranks
  again by counts summed over the ranks, e.g. each rank's profile of its own seed share) and
  takes the ``world_size × C`` hottest
  (``C`` = rows one rank's owner tier holds: the GPU tier, or without a GPU the memory tier the
  store has) as the global cache; row ``j`` of that ranking is owned by rank ``j mod
  world_size``, so each row has exactly one owner and every rank owns an equal share of every
  hotness band. Each rank's owner tier holds exactly the rows it owns; its host tier (when the
  owner tier is the GPU tier) the next hottest rows, the same on every rank.
* **Gather.** Ids are split into local ones (owned here, or owned by nobody: this rank's host tier
  or SSD) and peer-owned ones. The local gather runs on a worker thread while the calling thread
  exchanges with the peers over the store's own process group: an all-gather of the per-peer
  request counts, then ``all_to_all_single`` of the (deduplicated) ids, each rank gathers the rows
  asked of it, then ``all_to_all_single`` of the rows, each step ``async_op`` and waited with the
  group's timeout. Rows come back in the order of the ids, repeats included.
* **Replicated mode** (``cache_mode="replicated"``): every rank caches the same hottest rows, as
  PyG and GraphBolt DDP do; gathers are local and exchange nothing.
* **Host tier per host** (``host_tier="per_host"``): the ranks of one host share one host tier
  of ``host_cache`` bytes, in a file in shared memory (/dev/shm) that the host's first rank fills
  with the next hottest rows after the GPU tiers' (one placement per host) and the others map
  read-only; each rank's GPU tier is its own as above. The file is named by the job (a token of
  rank 0's) and its creator's pid, and removed once every rank of the host has mapped it, so
  nothing is left when the job ends however it ends; a file left by a creator killed before then
  is never opened by another job (another token) and is removed by the next one to fill a tier
  on the host. A rank never maps a tier before its creator has said it is filled (an all-gather
  of every rank's status), and the file's ready word guards the same.
* **Node types.** In a dataset of several node types with features each type's tier stack is
  owned the same way, on its own (its share of the budgets, its own ranking by
  ``Store.hottest(node_type=)``, ``hotness={type: counts}``): ownership is per (node type, row).
  ``gather(ids, node_type=t)`` of a type's default feature exchanges that type's rows; the
  exchange checks that every rank gathers the same type. Other features (``feature=``,
  ``edge_type=``) are read from this rank's disk and exchange nothing.
* **Planned epochs.** :meth:`DistributedStore.plan_epochs` (and ``tierfs.Loader(...,
  planned_epochs=K)``) plans this rank's :func:`split_seeds` share of each epoch in a directory
  of its own, without the rows other ranks own (the core's rows served elsewhere); a planned
  batch's gather reads the rank's rows from its tiers and the plan, the peer-owned ones through
  the same exchange.

Collectives need every rank to call :meth:`DistributedStore.gather` the same number of times, in
the same order: :class:`tierfs.Loader` and :class:`tierfs.pyg.NeighborLoader` split the seeds with
:func:`split_seeds` (equal batch counts per rank) and issue the exchanges in batch order. A rank
that dies or stops calling makes the others raise :class:`tierfs.PeerError` (naming the rank and
the timeout) within the group's timeout.

The store composes its parts: the peer exchange (``exchange.py``, a :class:`PeerExchange`), a
loader's seed share (``rankshare.py``, a :class:`RankShare`); the ownership and ``place``
(``ownership.py``) and ``plan_epochs`` with its plan (``distplanned.py``) are functions of a
store that the class takes as its methods.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import os
import secrets
import socket
import threading
import time
from typing import Any, Dict, List, Optional

import numpy as np

from . import _util, errors
from ._args import IdsLike, _c_str, _ids
from ._native import check, lib
from . import distplanned as _distplanned
from . import ownership as _owners
from .distplanned import DistributedPlannedEpochs
from .exchange import _EXCHANGE_STEPS, PeerExchange, _new_counters
from .ownership import HOST_TIERS, _Ownership
from .rankshare import _RANK_SEED_STRIDE, RankShare, _Turnstile, split_seeds
from .store import GatherFuture, Store

__all__ = ["DistributedStore", "DistributedPlannedEpochs", "split_seeds", "CACHE_MODES"]

#: The values of ``tierfs.open(cache_mode=)``.
CACHE_MODES = ("shared", "replicated")

# Where per-host tiers live while their ranks map them, and the prefix of their file names
# (tierfs-host-<job token>-<creator pid>-<node type index>).
_SHM_DIR = "/dev/shm"
_SHM_PREFIX = "tierfs-host-"

# Called by a host's first rank with the files it filled, before the other ranks map them (the
# tests kill the process there).
_after_fill = None



def _torch():
    import torch

    return torch


def _dist():
    import torch.distributed as dist

    return dist


class DistributedStore(Store):
    """One rank's view of a store whose memory tiers are shared by the ranks of a torch.distributed
    job (see the module doc). Made by :func:`tierfs.open` with ``cache_mode``, ``rank``,
    ``world_size`` or ``group``; every rank must open it (the same dataset and options) in the
    same order relative to its other collectives.

    The store exchanges over a process group of its own (``group``, or a new group of every rank
    made at open with the ``timeout`` given, else the default group's), so the model's DDP
    all-reduces on the default group never interleave with it.

    Differences from :class:`Store`: :meth:`gather` is a collective in shared mode (every rank
    calls it the same number of times, in the same order); :meth:`place` is a collective that
    ranks rows by counts summed over the ranks (each rank's profile of its own seeds, or its
    hotness) and decides the ownership again; :meth:`place_ids` would break the ownership and
    raises; :meth:`plan_epochs` plans this rank's share of each epoch without the peer-owned
    rows (and without ``place_tiers``); it does not pickle.
    """

    def __init__(
        self,
        path: Any,
        *,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        group: Any = None,
        cache_mode: str = "shared",
        hotness: Any = None,
        timeout: Optional[float] = None,
        host_tier: str = "per_rank",
        **options: Any,
    ) -> None:
        if host_tier not in HOST_TIERS:
            raise errors.InvalidArgumentError(f"tierfs.open: host_tier {host_tier!r} is not one of {HOST_TIERS}")
        if cache_mode not in CACHE_MODES:
            raise errors.InvalidArgumentError(f"tierfs.open: cache_mode {cache_mode!r} is not one of {CACHE_MODES}")
        if timeout is not None and not timeout > 0:
            raise errors.InvalidArgumentError(f"tierfs.open: timeout {timeout!r} must be a positive number of seconds")
        self._cache_mode = cache_mode
        self._host_tier = host_tier
        self._group, self._rank, self._world, self._timeout = self._join(rank, world_size, group, timeout)
        torch = _torch()
        # Without a GPU the owner tier is emulated by the host tier: the gpu_cache budget is added
        # to it and the first rows it holds play the part of the GPU tier.
        gpu_bytes = _util.parse_size(options.get("gpu_cache"), "gpu_cache")
        host_bytes = _util.parse_size(options.get("host_cache"), "host_cache")
        self._emulated_gpu = bool(gpu_bytes) and not torch.cuda.is_available()
        if self._emulated_gpu and host_tier == "per_host":
            raise errors.NotSupportedError(
                f"tierfs.open: host_tier='per_host' without a GPU: gpu_cache={options.get('gpu_cache')!r} cannot be emulated by a "
                "host tier the host's ranks share; leave gpu_cache unset (the shared host tier then caches the hottest rows)"
            )
        if self._emulated_gpu:
            options = dict(options, gpu_cache=None, host_cache=gpu_bytes + host_bytes)
        self._dist_options = dict(options)
        super().__init__(path, **options)
        try:
            self._setup(hotness, gpu_bytes, host_bytes)
        except BaseException:
            Store.close(self)
            raise

    # joining the job -------------------------------------------------------------------------

    @staticmethod
    def _join(rank: Optional[int], world_size: Optional[int], group: Any, timeout: Optional[float]):
        """(group or None, rank, world size, timeout in seconds) after checking what was given
        against torch.distributed."""
        dist = _dist()
        if not dist.is_available() or not dist.is_initialized():
            if world_size in (None, 1) and rank in (None, 0) and group is None:
                return None, 0, 1, float(timeout or 0) or 1800.0
            raise errors.InvalidArgumentError(
                f"tierfs.open(rank={rank}, world_size={world_size}): torch.distributed is not initialized; call "
                "torch.distributed.init_process_group first (torchrun sets RANK, WORLD_SIZE, MASTER_ADDR)"
            )
        if group is None:
            default_timeout = _group_timeout(None)
            seconds = float(timeout) if timeout is not None else default_timeout
            group = dist.new_group(timeout=datetime.timedelta(seconds=seconds))
        else:
            seconds = float(timeout) if timeout is not None else _group_timeout(group)
        got_rank, got_world = dist.get_rank(group), dist.get_world_size(group)
        if rank is not None and int(rank) != got_rank:
            raise errors.InvalidArgumentError(f"tierfs.open: rank={rank}, but this process is rank {got_rank} of its process group")
        if world_size is not None and int(world_size) != got_world:
            raise errors.InvalidArgumentError(f"tierfs.open: world_size={world_size}, but the process group has {got_world} ranks")
        return group, got_rank, got_world, seconds

    def _setup(self, hotness: Any, gpu_bytes: int, host_bytes: int) -> None:
        torch = _torch()
        self._budgets = (gpu_bytes, host_bytes)
        self._exchange = self._cache_mode == "shared" and self._world > 1
        self._own: Dict[str, _Ownership] = {}
        self._own_rows(self._hotness_by_type(hotness, self._feature_types()))
        # Where exchanged tensors live: NCCL moves CUDA tensors, gloo host ones.
        self._xdevice = torch.device("cpu")
        if self._group is not None and _dist().get_backend(self._group) == "nccl":
            self._xdevice = torch.device("cuda", torch.cuda.current_device())
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="tierfs-dist-local")
        self._worker_streams = threading.local()  # each local-gather worker's CUDA stream
        self._async_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._count_lock = threading.Lock()  # the counters: gathers' local parts end on several threads at once
        self._peers = PeerExchange(self, self._group, self._rank, self._world, self._timeout, self._xdevice)
        self._xlock = self._peers.lock  # one exchange at a time, in call order
        self._counters = _new_counters()
        self._peer_paths = self._find_peer_paths() if self._exchange else {}

    def _feature_types(self) -> List[str]:
        """The node types with a default feature (each has a tier stack to own)."""
        return [t for t, info in self.types["node_types"].items() if any(f["default"] for f in info["features"].values())]

    # ownership and place (ownership.py) ----------------------------------------------------

    _own_rows = _owners._own_rows
    _profile_ranking = _owners._profile_ranking
    _hotness_by_type = _owners._hotness_by_type
    _check_same = _owners._check_same
    place = _owners.place
    _profile_args = _owners._profile_args
    _sum_over_ranks = _owners._sum_over_ranks
    place_ids = _owners.place_ids

    # one host tier per host --------------------------------------------------------------

    def _share_host_tiers(self) -> None:
        """Fills each node type's host tier once per host in shared memory (the host's first
        rank) and maps it in the host's other ranks; see the module doc. Every rank calls it."""
        me = dict(host=socket.gethostname(), pid=os.getpid(), token=secrets.token_hex(8))
        everyone = self._all_gather_object(me, "find the ranks of this host")
        local = [r for r, x in enumerate(everyone) if x["host"] == me["host"]]
        leader = local[0]
        self._host_ranks, self._host_leader = len(local), leader
        job = everyone[0]["token"]
        paths = {t: os.path.join(_SHM_DIR, f"{_SHM_PREFIX}{job}-{everyone[leader]['pid']}-{o.index}") for t, o in self._own.items()}
        try:
            failure = None
            if self._rank == leader:
                try:
                    _remove_stale(_SHM_DIR)
                    for t, o in self._own.items():
                        self._host_tier_call(lib.tfs_share_host_tier, t, paths[t], o.host_ids)
                    if _after_fill is not None:
                        _after_fill(paths)
                except Exception as e:
                    failure = e
            self._agree(failure, "fill the host's shared host tier")
            if self._rank != leader:
                try:
                    for t in self._own:
                        self._host_tier_call(lib.tfs_map_host_tier, t, paths[t])
                except Exception as e:
                    failure = e
            self._agree(failure, "map the host's shared host tier")
        finally:
            for o in self._own.values():
                o.host_ids = np.empty(0, dtype=np.int64)
            if self._rank == leader:  # every rank of the host has mapped it (or failed): nothing to leave behind
                for p in paths.values():
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
        self._all_gather_object(None, "wait for the shared host tier's file to be removed")  # open returns once it is gone

    def _host_tier_call(self, fn: Any, node_type: str, path: str, ids: Optional[np.ndarray] = None) -> None:
        nt = _c_str(node_type, "node_type")
        p = _c_str(path, "path")
        if ids is None:
            check(fn(self._h(), nt, p))
            return
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        check(fn(self._h(), nt, p, ids.ctypes.data if ids.shape[0] else None, ids.shape[0]))

    def _all_gather_object(self, obj: Any, what: str, op: str = "tierfs.open") -> List[Any]:
        if self._group is None:
            return [obj]
        out: List[Any] = [None] * self._world
        try:
            _dist().all_gather_object(out, obj, group=self._group)
        except RuntimeError as e:
            raise errors.PeerError(f"{op}: rank {self._rank} could not {what}: a peer died or timed out "
                                   f"({self._timeout:.0f} s): {e}") from e
        return out

    def _agree(self, failure: Optional[BaseException], what: str, op: str = "tierfs.open") -> None:
        """Raises on every rank when one failed to do what (this rank's own error, or PeerError
        naming the rank that failed)."""
        msgs = self._all_gather_object(None if failure is None else f"{type(failure).__name__}: {failure}", what, op)
        if failure is not None:
            raise failure
        bad = [(r, m) for r, m in enumerate(msgs) if m is not None]
        if bad:
            raise errors.PeerError(f"{op}: rank {bad[0][0]} could not {what}: {bad[0][1]}")

    # properties ------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        """This process's rank in the store's process group."""
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world

    @property
    def cache_mode(self) -> str:
        """``"shared"`` (rows owned by one rank, exchanged) or ``"replicated"``."""
        return self._cache_mode

    @property
    def host_tier(self) -> str:
        """``"per_rank"`` (this rank's own host tier) or ``"per_host"`` (one per host, shared)."""
        return self._host_tier

    @property
    def group(self) -> Any:
        """The process group the store exchanges over (None with one rank and no torch.distributed)."""
        return self._group

    def owner(self, ids: IdsLike, node_type: Optional[str] = None) -> np.ndarray:
        """Owner rank of each id (of ``node_type``; None: the store's own type) (-1: in no rank's
        owner tier; gathered locally by every rank)."""
        o = self._ownership(node_type)
        arr = _ids(ids).array
        self._check_range(arr, o)
        return o.owner[arr].astype(np.int64)

    def sampler(self, fanouts: Any, replace: bool = False, seed: int = 0, **options: Any) -> Any:
        """As :meth:`Store.sampler` (a list of fanouts, or a dict per edge type for typed
        samples, and its other options passed on as they are), drawing with
        ``seed + rank * 2**32`` so ranks sample independently while each run repeats."""
        return super().sampler(fanouts, replace=replace, seed=int(seed) + self._rank * _RANK_SEED_STRIDE, **options)

    # gather ----------------------------------------------------------------------------

    @property
    def _loader_share(self) -> "RankShare":
        """This rank's seed share for a :class:`tierfs.Loader` (:class:`RankShare`)."""
        return RankShare(self)

    def _ownership(self, node_type: Optional[str]) -> "_Ownership":
        """The ownership of ``node_type`` (None: the store's own); raises naming a type the
        dataset lacks or one without features."""
        t = self.node_type if node_type is None else node_type
        o = self._own.get(t) if isinstance(t, str) else None
        if o is None:
            self._node_type_info(t)  # raises for a type the dataset lacks
            raise errors.KeyNotFoundError(
                f"tierfs: node type {t!r} of {self.path} has no features to gather (the node types with features are {', '.join(self._own)})"
            )
        return o

    def _check_range(self, arr: np.ndarray, o: "_Ownership") -> None:
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= o.rows:
                i = int(np.argmax((arr < 0) | (arr >= o.rows)))
                of = f" of node type {o.node_type!r}" if self.is_hetero else ""
                raise errors.OutOfRangeError(f"tierfs: ids[{i}] = {int(arr[i])} is out of range [0, {o.rows}){of}")

    def _tiered(self, feature: Optional[str], node_type: Optional[str]) -> bool:
        """Whether a gather of ``feature`` of ``node_type`` is served by the memory tiers (and so,
        in shared mode, exchanged): a node type's default feature."""
        if feature is None:
            return True
        t = self.node_type if node_type is None else node_type
        o = self._own.get(t) if isinstance(t, str) else None
        return o is not None and feature == o.feature

    def gather(self, ids: IdsLike, out: Any = None, feature: Optional[str] = None, node_type: Optional[str] = None,
               edge_type: Any = None) -> Any:
        """Feature rows of ``ids`` (of ``node_type``; None: the store's own) in their order, as
        :meth:`Store.gather` returns them (the kinds of ids, outputs and ``out``). A node type's
        default feature is served by the ranks' memory tiers: in shared mode this is a
        collective — every rank calls it, the same number of times, in the same order and for
        the same node types (an empty batch included); rows owned by other ranks come through
        the peer exchange while the local ones are gathered. Other features (``feature=``,
        ``edge_type=``) are read from this rank's disk and exchange nothing.

        Raises:
            tierfs.PeerError: a rank died, stopped calling gather within the group's timeout,
                failed its own gather (e.g. an id out of range there), or gathered another
                node type in the same call.
            IndexError/ValueError (tierfs.OutOfRangeError): an id out of range on this rank (the
                other ranks then raise PeerError for this batch).
            KeyError (tierfs.KeyNotFoundError): a node type the dataset lacks or one without
                features (the other ranks then raise PeerError for this batch).
        """
        if edge_type is not None or not self._tiered(feature, node_type):
            return Store.gather(self, ids, out, feature, node_type, edge_type)
        if not self._exchange:
            return self._counted_local(ids, out, node_type)
        return self._peers.now(lambda: self._peers.gather(ids, out, node_type))

    def _gather_in_turn(self, ids: IdsLike, turn: Optional[_Turnstile], i: int) -> Any:
        """gather of a sample's nodes (distinct ids), exchanging after batch i-1 of the same
        loader epoch did (any thread)."""
        if not self._exchange or turn is None:
            return self.gather(ids)
        return self._peers.in_turn(turn, i, {None: lambda: self._peers.gather(ids, None, None, distinct=True)})[None]

    def _gather_types_in_turn(self, ids_by_type: Dict[str, Any], turn: Optional[_Turnstile], i: int) -> Dict[str, Any]:
        """{node type: gather(ids, node_type=type)} in the dict's order (the dataset's order of
        types on every rank), exchanging after batch i-1 of the same loader epoch did."""
        if not self._exchange or turn is None:
            return {t: self.gather(ids, node_type=t) for t, ids in ids_by_type.items()}
        return self._peers.in_turn(turn, i, {t: functools.partial(self._peers.gather, ids, None, t, distinct=True)
                                                for t, ids in ids_by_type.items()})

    def _local_gather(self, ids: Any, node_type: str) -> tuple:
        """(rows of this rank's store, CUDA event after them or None), on a worker thread. On a
        GPU the rows are gathered on the worker's own stream: on the default stream they would
        queue behind (and ahead of) the exchange's copies, which then wait for each other."""
        if self._device_type != "cuda":
            return Store.gather(self, ids, node_type=node_type), None
        torch = _torch()
        with torch.cuda.stream(self._worker_stream()):
            rows = Store.gather(self, ids, node_type=node_type)
            event = None
            if rows.is_cuda:
                event = torch.cuda.Event()
                event.record(torch.cuda.current_stream(rows.device))
        return rows, event

    def _worker_stream(self) -> Any:
        """The calling worker thread's own CUDA stream on the store's device (made on first use)."""
        stream = getattr(self._worker_streams, "stream", None)
        if stream is None:
            stream = self._worker_streams.stream = _torch().cuda.Stream(device=self._device_index)
        return stream

    def _count(self, o: "_Ownership", **deltas: Any) -> None:
        """Adds to the counters of the store and of o's node type."""
        with self._count_lock:
            for c in (self._counters, o.counters):
                for k, v in deltas.items():
                    c[k] += v

    def _counted_local(self, ids: IdsLike, out: Any, node_type: Optional[str]) -> Any:
        t0 = time.perf_counter()
        o = self._ownership(node_type)
        try:
            rows = Store.gather(self, ids, out, node_type=o.node_type)
        except errors.OutOfRangeError as e:
            if not self.is_hetero:
                raise
            raise errors.OutOfRangeError(f"{e} (ids of node type {o.node_type!r})") from e
        n = int(rows.shape[0]) if getattr(rows, "ndim", 1) > 1 else 1
        self._count(o, batches=1, ids=n, local_rows=n, local_s=time.perf_counter() - t0)
        return rows

    def gather_async(self, ids: IdsLike, out: Any = None) -> Any:
        """As :meth:`Store.gather_async`; the gathers run one at a time, in call order (they are
        collectives)."""
        if self._async_pool is None:
            self._async_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tierfs-dist-async")
        ids_ = _ids(ids)
        frozen: Any = ids_.array.copy()
        if ids_.scalar:
            frozen = ids if not isinstance(ids, np.ndarray) else ids.copy()
        elif ids_.kind == "torch":
            frozen = _torch().from_numpy(frozen).to(ids_.device)
        return GatherFuture(self._async_pool.submit(self._gather_for_future, frozen, out), self._device_type == "cuda")

    # planned epochs and stats ------------------------------------------------------------

    plan_epochs = _distplanned.plan_epochs  # this rank's share of each epoch (distplanned.py)

    def stats(self) -> Dict[str, Any]:
        """:meth:`Store.stats` of this rank's store plus ``distributed``: rank, world size, cache
        mode, the rows of the global cache, owned here and cached next; per-gather counts
        (``batches``: gathers, ids, local and peer rows, unique peer rows and bytes received,
        rows and bytes served to peers, seconds) since open or the last :meth:`place`,
        ``peer_path`` (how peer rows travel: ``"host memory (gloo)"``, ``"NVLink (NCCL)"``,
        ``"PCIe peer to peer (NCCL)"``, ... see :meth:`_find_peer_paths`; ``"mixed: ..."``
        when peers differ), ``peer_paths`` (``{peer rank: path}``) and per-gather means
        (``per_batch``: ``peer_rows``, ``peer_bytes_received``, ``peer_bytes_sent``,
        ``ssd_rows``, ``exchange_ms``, ``local_ms``, and ``by_path``: ``{peer_path:
        {peer_bytes_received, peer_bytes_sent}}``). In a dataset
        of several node types with features the rows and counts are summed over the types and
        ``node_types`` holds each type's."""
        s = super().stats()
        if not hasattr(self, "_counters"):
            return s
        per_type = {}
        for t, o in self._own.items():
            tiers = s["node_types"][t]["tiers"] if "node_types" in s else s["tiers"]
            ssd = next((int(x.get("hits", 0)) for x in tiers if x["tier"] == "ssd"), 0) - o.ssd_base
            per_type[t] = dict(global_cache_rows=o.global_rows, owned_rows=o.owned_rows, next_hottest_rows=o.next_rows,
                               ssd_rows=ssd, **o.counters)
        c = dict(self._counters)
        ssd = sum(p["ssd_rows"] for p in per_type.values())
        b = max(c["batches"], 1)
        first = next(iter(self._own.values()))
        path = self._peer_path()
        s["distributed"] = dict(
            rank=self._rank, world_size=self._world, cache_mode=self._cache_mode, owner_tier=first.owner_tier,
            global_cache_rows=sum(p["global_cache_rows"] for p in per_type.values()),
            owned_rows=sum(p["owned_rows"] for p in per_type.values()),
            next_hottest_rows=sum(p["next_hottest_rows"] for p in per_type.values()),
            timeout_s=self._timeout, ssd_rows=ssd, **c,
            peer_path=path, peer_paths={str(r): p for r, p in sorted(self._peer_paths.items())},
            per_batch=dict(
                peer_rows=c["peer_rows"] / b, peer_unique_rows=c["peer_unique_rows"] / b,
                peer_bytes_received=c["peer_bytes_received"] / b, peer_bytes_sent=c["peer_bytes_sent"] / b,
                ssd_rows=ssd / b, exchange_ms=1e3 * c["exchange_s"] / b, local_ms=1e3 * c["local_s"] / b,
                exchange_steps_ms={step: 1e3 * c[f"{step}_s"] / b for step in _EXCHANGE_STEPS},
                by_path={path: dict(peer_bytes_received=c["peer_bytes_received"] / b, peer_bytes_sent=c["peer_bytes_sent"] / b)},
            ),
        )
        if len(per_type) > 1:
            s["distributed"]["node_types"] = per_type
        s["distributed"]["host_tier"] = self._host_tier_stats(s)
        return s

    def _peer_path(self) -> str:
        """How peer rows reach this rank: the path of :meth:`_find_peer_paths` when every peer's
        is the same, else ``"mixed: <path> (ranks ...); ..."``; "none" with one rank or without
        an exchange."""
        if not self._peer_paths:
            return "none (no peer exchange)"
        by: Dict[str, List[int]] = {}
        for r, p in sorted(self._peer_paths.items()):
            by.setdefault(p, []).append(r)
        if len(by) == 1:
            return next(iter(by))
        return "mixed: " + "; ".join(f"{p} (ranks {', '.join(map(str, rs))})" for p, rs in by.items())

    def _find_peer_paths(self) -> Dict[int, str]:
        """{peer rank: how rows travel between it and this rank}, found at open with one
        all-gather of every rank's host name and GPU (PCI address): ``"host memory (gloo)"``
        (gloo on one host), ``"network (<backend>)"`` (another host), and with NCCL on one host
        ``"NVLink (NCCL)"`` or ``"PCIe peer to peer (NCCL)"`` (NVML says which, through pynvml
        when it is installed), ``"peer to peer, link unknown (NCCL)"`` (peer access without
        pynvml), ``"through host memory (NCCL, no peer access)"``, ``"same GPU (NCCL)"``. No
        ``nvidia-smi``; a probe that fails says "link unknown" instead of guessing."""
        torch = _torch()
        nccl = self._xdevice.type == "cuda"
        me: Dict[str, Any] = dict(host=socket.gethostname(), pci=None)
        if nccl:
            pr = torch.cuda.get_device_properties(self._xdevice)
            me["pci"] = _pci_address(pr)
        everyone = self._all_gather_object(me, "find how peer rows travel")
        backend = "NCCL" if nccl else "gloo"
        out: Dict[int, str] = {}
        for r, x in enumerate(everyone):
            if r == self._rank:
                continue
            if x["host"] != me["host"]:
                out[r] = f"network ({backend})"
            elif not nccl:
                out[r] = "host memory (gloo)"
            else:
                out[r] = _gpu_path(me["pci"], x["pci"])
        return out

    def _host_tier_stats(self, s: Dict[str, Any]) -> Dict[str, Any]:
        """The host tier as the host holds it: ``rows`` and ``bytes`` this rank serves from it,
        and ``rows_held``/``bytes_held`` the memory it takes on the host on this rank's account
        (per_host: the creating rank counts the shared tier, the others 0, so the sum over a
        host's ranks is the host's memory)."""
        per = [s["node_types"][t]["tiers"] for t in self._own] if "node_types" in s else [s["tiers"]]
        hosts = [next(x for x in tiers if x["tier"] == "host") for tiers in per]
        rows = sum(int(x["rows_held"]) for x in hosts)
        nbytes = sum(int(x["bytes_held"]) for x in hosts)
        mapped = any(x.get("shared") == "mapped" for x in hosts)
        return dict(mode=self._host_tier, ranks_sharing=self._host_ranks, creator_rank=self._host_leader, rows=rows, bytes=nbytes,
                    rows_held=0 if mapped else rows, bytes_held=0 if mapped else nbytes)

    def close(self) -> None:
        """Closes this rank's store (not the process group: it may be the caller's)."""
        for pool in (getattr(self, "_pool", None), getattr(self, "_async_pool", None)):
            if pool is not None:
                pool.shutdown(wait=True)
        super().close()

    def __reduce__(self):
        raise errors.NotSupportedError("tierfs: a distributed store does not pickle (it belongs to its rank's process group)")

    def __repr__(self) -> str:
        base = super().__repr__()
        return base[:-1] + f" rank={self._rank}/{self._world} cache_mode={self._cache_mode}>"


def _pci_address(props: Any) -> Optional[str]:
    """A CUDA device's PCI address as NVML takes it ("domain:bus:device.0", hex), from torch's
    device properties; None where torch does not say."""
    try:
        return f"{props.pci_domain_id:x}:{props.pci_bus_id:x}:{props.pci_device_id:x}.0"
    except AttributeError:
        return None


def _gpu_path(mine: Optional[str], theirs: Optional[str]) -> str:
    """How NCCL moves rows between two GPUs of one host, by their PCI addresses: the same GPU;
    peer access or not (torch.cuda.can_device_access_peer, when both are visible here); NVLink
    or PCIe (NVML's P2P status, through pynvml when it is installed); else "link unknown"."""
    if mine is None or theirs is None:  # torch does not say where the GPUs are
        return "GPU to GPU, link unknown (NCCL)"
    if mine == theirs:
        return "same GPU (NCCL)"
    torch = _torch()
    index = {}
    for i in range(torch.cuda.device_count()):
        index[_pci_address(torch.cuda.get_device_properties(i))] = i
    p2p: Optional[bool] = None
    if mine in index and theirs in index:
        p2p = bool(torch.cuda.can_device_access_peer(index[mine], index[theirs]))
        if not p2p:
            return "through host memory (NCCL, no peer access)"
    try:
        import pynvml  # optional: NVLink or PCIe

        pynvml.nvmlInit()
        try:
            a = pynvml.nvmlDeviceGetHandleByPciBusId(mine)
            b = pynvml.nvmlDeviceGetHandleByPciBusId(theirs)
            ok = pynvml.NVML_P2P_STATUS_OK
            if pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_NVLINK) == ok:
                return "NVLink (NCCL)"
            if pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_READ) == ok:
                return "PCIe peer to peer (NCCL)"
            return "through host memory (NCCL, no peer access)"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no pynvml, no NVML, or a device it does not know
        pass
    return "peer to peer, link unknown (NCCL)" if p2p else "GPU to GPU, link unknown (NCCL)"


def _group_timeout(group: Any) -> float:
    """The timeout of a process group (the default one for None), in seconds; 1800 where torch
    does not say."""
    try:
        from torch.distributed.distributed_c10d import _get_default_group

        pg = group if group is not None else _get_default_group()
        opts = getattr(pg, "options", None) or getattr(pg, "_options", None)
        t = getattr(opts, "_timeout", None) or getattr(opts, "timeout", None)
        if t is not None:
            return t.total_seconds()
    except Exception:
        pass
    try:
        from torch.distributed.constants import default_pg_timeout

        return default_pg_timeout.total_seconds()
    except Exception:
        return 1800.0


def open_distributed(path: Any, *, rank: Optional[int], world_size: Optional[int], group: Any, cache_mode: Optional[str],
                     hotness: Any, timeout: Optional[float], host_tier: Optional[str] = None, **options: Any) -> DistributedStore:
    return DistributedStore(path, rank=rank, world_size=world_size, group=group, cache_mode=cache_mode or "shared",
                            hotness=hotness, timeout=timeout, host_tier=host_tier or "per_rank", **options)


def _remove_stale(directory: str) -> List[str]:
    """Removes the per-host tier files in directory whose creator is no longer alive (killed
    before the host's ranks had mapped them) and returns their paths. A live creator's file (its
    job is still starting) is left alone."""
    removed = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        if not name.startswith(_SHM_PREFIX):
            continue
        parts = name[len(_SHM_PREFIX) :].split("-")
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # alive (or another user's: PermissionError below)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    return removed


# Loader support --------------------------------------------------------------------------


