"""Who owns which rows of a :class:`tierfs.DistributedStore` (docs/distributed.md): each node
type's ownership (:class:`_Ownership`) decided from the ranks' common ranking and checked alike on
every rank, and :meth:`DistributedStore.place` deciding it again from counts summed over the ranks
(each rank's profile of its own seeds, or its hotness), moved here from distributed.py as they
were; :class:`tierfs.DistributedStore` takes them as its methods (``self`` a store)."""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from . import errors
from ._args import IdsLike, _check_batching, _fanouts, _ids, _is_int, _torch
from .exchange import _new_counters
from .rankshare import _RANK_SEED_STRIDE, split_seeds
from .store import Store

__all__: List[str] = []  # DistributedStore's methods, not an API of their own

#: The values of ``tierfs.open(host_tier=)``: a host tier per rank, or one per host shared by its ranks.
HOST_TIERS = ("per_rank", "per_host")


def _dist():
    import torch.distributed as dist

    return dist


@dataclass
class _Ownership:
    """One node type's part of the global cache: who owns each of its rows, and its counters."""

    node_type: str
    index: int  # the type's position in the dataset's node types (checked alike on every rank per gather)
    feature: str  # its default feature, the one its tiers serve
    rows: int
    dim: int
    row_bytes: int
    dtype_name: str
    owner: np.ndarray  # owner rank of each row of the global cache, -1: none
    mine: np.ndarray  # the rows this rank places, hottest first (dropped once placed)
    host_ids: np.ndarray  # per_host: the rows of the host's shared tier, hottest first (dropped once filled)
    owned_rows: int
    owner_tier: str
    global_rows: int
    next_rows: int
    ssd_base: int
    counters: Dict[str, Any] = field(default_factory=_new_counters)


def _own_rows(self, hot: Dict[str, Any], profiled: bool = False) -> None:
    """Decides the ownership of every node type with features from its ranking
    (:meth:`Store.hottest` by ``hot[type]``, else the store's own; ``profiled``: by
    :meth:`_profile_ranking`), checks that every rank ranked alike, and fills this rank's
    tiers (and, per_host, the host's shared tier) with its rows. Every rank calls it, with
    the same ``hot``."""
    gpu_bytes, host_bytes = self._budgets
    st = Store.stats(self)
    w = self._world
    names = self._feature_types()
    rankings = []
    for index, t in enumerate(self.types["node_types"]):
        if t not in names:
            continue
        tiers = {x["tier"]: x for x in (st["node_types"][t]["tiers"] if "node_types" in st else st["tiers"])}
        gpu_cap, host_cap = int(tiers["gpu"].get("capacity_rows", 0)), int(tiers["host"].get("capacity_rows", 0))
        if gpu_cap:  # a real GPU tier owns, the host tier holds the next hottest
            owned, rest = gpu_cap, host_cap
        elif self._host_tier == "per_host":  # the host tier is the host's: no rank owns rows
            owned, rest = 0, host_cap
        elif self._emulated_gpu:
            owned = int(host_cap * gpu_bytes / (gpu_bytes + host_bytes))
            rest = host_cap - owned
        else:  # one memory tier: it owns
            owned, rest = host_cap, 0
        info = self.types["node_types"][t]
        fname, feat = next((name, f) for name, f in info["features"].items() if f["default"])
        n = int(info["count"])
        shared = owned * w if self._exchange else owned
        k = min(n, shared + rest)
        if profiled and t in hot:
            ranking = self._profile_ranking(k, hot[t], t)
        else:
            ranking = self.hottest(k, hot.get(t), node_type=t)
        rankings.append(ranking)
        owner = np.full(n, -1, dtype=np.int8 if w < 128 else np.int16)  # owner rank of each row of the global cache, -1: none
        if self._exchange:
            glob = ranking[:shared]
            owner[glob] = np.arange(glob.shape[0]) % w
            own = glob[self._rank :: w]
            mine = np.concatenate([own, ranking[shared:]])
        else:
            own = ranking[:owned]
            mine = ranking
        host_ids = np.empty(0, dtype=np.int64)
        if self._host_tier == "per_host":  # the GPU tier takes own, the host's tier the rest
            mine, host_ids = own, ranking[shared:]
        self._own[t] = _Ownership(
            node_type=t, index=index, feature=fname, rows=n, dim=int(feat["dim"]), row_bytes=int(feat["row_bytes"]), dtype_name=feat["dtype"],
            owner=owner, mine=mine, host_ids=host_ids, owned_rows=int(own.shape[0]),
            owner_tier="gpu" if gpu_cap else ("host (emulating gpu_cache)" if self._emulated_gpu else
                                              ("none (the host tier is the host's)" if self._host_tier == "per_host" else "host")),
            global_rows=int(min(shared, ranking.shape[0])), next_rows=int(max(0, ranking.shape[0] - shared)),
            ssd_base=int(tiers["ssd"].get("hits", 0)), counters=_new_counters(),
        )
    # Every rank must rank alike; a differing dataset or hotness would make owners disagree.
    self._check_same(rankings)
    for o in self._own.values():
        Store.place_ids(self, o.mine, node_type=o.node_type)
        o.mine = np.empty(0, dtype=np.int64)
    self._host_ranks, self._host_leader = 1, self._rank
    if self._host_tier == "per_host":
        self._share_host_tiers()


def _profile_ranking(self, k: int, counts: np.ndarray, node_type: str) -> np.ndarray:
    """The k rows of ``node_type`` to cache, hottest first, by a profile's counts: the rows
    it read by count (descending), ties by the store's own ranking (:meth:`Store.hottest`:
    the applied placement, else in-degree), then by id; then the rows it never read, by the
    store's own ranking (a profile says nothing about them; ids would rank them by chance).
    Memory: the store's ranking of k rows and a few int64 per row read."""
    own = self.hottest(k, None, node_type=node_type)
    read = np.flatnonzero(counts)
    by_own = np.argsort(own, kind="stable")
    sorted_own = own[by_own]
    at = np.searchsorted(sorted_own, read)
    found = (at < sorted_own.shape[0]) & (sorted_own[np.minimum(at, max(sorted_own.shape[0] - 1, 0))] == read) if own.size else np.zeros(read.shape[0], dtype=bool)
    pos = np.full(read.shape[0], own.shape[0], dtype=np.int64)  # not in the store's top k: after those that are
    pos[found] = by_own[at[found]]
    order = np.lexsort((read, pos, -counts[read].astype(np.int64)))  # last key first: count, own rank, id
    ranking = read[order[:k]]
    if ranking.shape[0] < k:
        rest = own[~np.isin(own, ranking)]
        ranking = np.concatenate([ranking, rest[: k - ranking.shape[0]]])
    return ranking


def _hotness_by_type(self, hotness: Any, names: List[str]) -> Dict[str, Any]:
    """hotness= as {node type: counts}: a dict names its types; one array ranks the only
    node type with features."""
    if hotness is None:
        return {}
    if isinstance(hotness, dict):
        for t in hotness:
            if t not in names:
                raise errors.KeyNotFoundError(
                    f"tierfs.open: hotness names node type {t!r}, which is not a node type with features of {self.path} (those are {', '.join(names)})"
                )
        return dict(hotness)
    if len(names) > 1:
        raise errors.InvalidArgumentError(
            f"tierfs.open: hotness of a dataset of several node types with features ({', '.join(names)}) is a dict {{node type: one count per node}}"
        )
    return {names[0]: hotness}


def _check_same(self, rankings: List[np.ndarray]) -> None:
    """Raises when another rank ranked differently (another dataset, hotness or options)."""
    if self._group is None:
        return
    torch, dist = _torch(), _dist()
    mine_l = []
    for ranking in rankings:
        digest = int(np.bitwise_xor.reduce(ranking * np.arange(1, ranking.shape[0] + 1, dtype=np.int64))) if ranking.size else 0
        mine_l += [ranking.shape[0], digest & 0x7FFFFFFFFFFFFFFF]
    mine_l += [HOST_TIERS.index(self._host_tier), 0]  # every rank must share host tiers alike
    mine = torch.tensor(mine_l, dtype=torch.int64)
    dev = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(self._group) == "nccl" else torch.device("cpu")
    out = [torch.empty(len(mine_l), dtype=torch.int64, device=dev) for _ in range(self._world)]
    dist.all_gather(out, mine.to(dev), group=self._group)
    got = [tuple(int(v) for v in t.cpu()) for t in out]
    bad = [r for r, g in enumerate(got) if g != got[0]]
    if bad:
        t = next(i for i in range(0, len(mine_l), 2) if got[bad[0]][i : i + 2] != got[0][i : i + 2]) // 2
        if t == len(rankings):
            raise errors.InvalidArgumentError(
                f"tierfs.open: rank {bad[0]} opened with host_tier={HOST_TIERS[got[bad[0]][2 * t]]!r}, rank 0 with "
                f"{HOST_TIERS[got[0][2 * t]]!r}: every rank must pass the same"
            )
        of = f" of node type {list(self._own)[t]!r}" if len(self._own) > 1 else ""
        raise errors.InvalidArgumentError(
            f"tierfs.open: rank {bad[0]} ranks the cached rows{of} differently from rank 0 ({got[bad[0]][2 * t]} vs {got[0][2 * t]} rows, "
            "or another order): every rank must open the same dataset with the same cache sizes and hotness"
        )


def place(
    self,
    hotness: Any = None,
    *,
    fanouts: Any = None,
    batch_size: Optional[int] = None,
    batches: Optional[int] = None,
    seeds: Optional[IdsLike] = None,
    seed: int = 0,
    drop_last: bool = False,
    replace: bool = False,
    node_type: Optional[str] = None,
    **unsupported: Any,
) -> Dict[str, Any]:
    """Places the ranks' tiers again, from counts summed over the ranks: a collective (every
    rank calls it with the same arguments, between loader epochs). Ownership, the global cache
    and every rank's tiers are then decided as at open (docs/distributed.md) from the ranking
    of the summed counts, and the stats' counters start again.

    * ``fanouts`` and ``batch_size`` (a profiled placement): every rank pre-samples
      ``batches`` batches (None: one epoch) of its own share of ``seeds`` (None: the train
      split, else every node) — :func:`split_seeds` ``(seeds, rank, world_size, epoch=0,
      seed=seed, drop_last=drop_last)``, the share a shuffling loader of the same ``seed``
      gives it in its first epoch — and counts how often each row is read
      (:meth:`Store.profile_reads`, sampling with ``seed + rank * 2**32`` as the rank's
      sampler does); one all-reduce sums the counts (one int32 per node, int64 where the
      sum could pass 2**31); rows are ranked by :meth:`_profile_ranking` of the sum.
      A graph of several types takes ``fanouts={edge type: [per hop]}`` and the seeds'
      ``node_type`` (None: the store's; default seeds its train split), counts every node
      type with features and sums them all in the one all-reduce; each type's ownership comes
      from its summed counts.
    * ``hotness`` (one count per node; ``{node type: counts}`` for several types): each
      rank's counts are summed the same way (identical counts on every rank rank as one).
    * neither: the store's own ranking (the applied placement, else in-degree), as at open.

    Returns
    ``{"source", "seconds", "profile_s", "reduce_s", "fill_s", "batches", "seeds",
    "rows_read", "global_cache_rows", "owned_rows"}`` (``batches``/``seeds``: this rank's
    profile; ``rows_read``: rows the summed profile read at least once).

    Raises:
        ValueError (tierfs.InvalidArgumentError): a bad fanouts, batch_size, batches or seeds
            (the message names it), hotness together with fanouts.
        tierfs.NotSupportedError: Store.place options a distributed store does not take
            (policy, epochs, budgets, ...).
        tierfs.PeerError: a rank failed or died meanwhile (naming it).
    """
    t0 = time.perf_counter()
    self._peers.check()
    names = self._feature_types()
    profile = fanouts is not None or batch_size is not None or batches is not None or seeds is not None
    counts: Dict[str, np.ndarray] = {}
    report: Dict[str, Any] = dict(source="store", batches=0, seeds=0, profile_s=0.0, reduce_s=0.0)
    bound = 0  # the most a summed count can be
    # The arguments, checked on every rank before the counts move: a rank whose arguments are
    # bad raises its error, the others PeerError naming it (none waits for the timeout).
    failure: Optional[BaseException] = None
    try:
        if unsupported:
            raise errors.NotSupportedError(
                f"DistributedStore.place: {', '.join(sorted(unsupported))} {'is' if len(unsupported) == 1 else 'are'} not supported "
                "on a distributed store (it ranks rows by summed counts and fills the caches it was opened with; it takes "
                "hotness, or fanouts, batch_size, batches, seeds, seed, drop_last, replace, node_type)"
            )
        if profile and hotness is not None:
            raise errors.InvalidArgumentError("DistributedStore.place: give hotness or fanouts (a profiled placement), not both")
        if profile:
            share, fo, bs, nb, nt = self._profile_args(fanouts, batch_size, batches, seeds, seed, drop_last, node_type)
        elif hotness is not None:
            by_type = self._hotness_by_type(hotness, names)
            counts = {t: self._hotness_array(by_type[t], self.num_nodes(t), t if self.is_hetero else None) for t in names if t in by_type}
    except Exception as e:
        failure = e
    self._agree(failure, "use its place arguments", "DistributedStore.place")
    if profile:
        counts = {t: np.zeros(self.num_nodes(t), dtype=np.uint32) for t in names}  # a rank without seeds adds 0
        if share.shape[0]:
            try:
                got = Store.profile_reads(self, fo, bs, nb, share, seed=int(seed) + self._rank * _RANK_SEED_STRIDE,
                                          replace=replace, node_type=nt if self.is_hetero else None)
                counts = {t: got[t] for t in names} if isinstance(got, dict) else {names[0]: got}
            except Exception as e:
                failure = e
        self._agree(failure, "profile its share of the seeds", "DistributedStore.place")
        # batches of one pass: the last partial batch too (one type), full batches only (several types)
        per_epoch = (max(1, share.shape[0] // bs) if self.is_hetero else -(-share.shape[0] // bs)) if share.shape[0] else 0
        report.update(source="profile", batches=int(nb if nb is not None else per_epoch) if share.shape[0] else 0,
                      seeds=int(share.shape[0]))
        bound = self._world * int(nb if nb is not None else max(per_epoch, 1))  # a row is read at most once a batch
    elif hotness is not None:
        given = self._all_gather_object(sorted(counts), "agree on the node types hotness ranks", "DistributedStore.place")
        if any(g != given[0] for g in given):
            raise errors.InvalidArgumentError(
                f"DistributedStore.place: rank {self._rank} gives hotness for node types {sorted(counts)}, the ranks "
                f"{given}: every rank must give the same types"
            )
        report["source"] = "hotness"
        bound = self._world * int(np.iinfo(np.uint32).max)
    report["profile_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    summed = self._sum_over_ranks(counts, bound) if counts else {}
    report["reduce_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    with self._xlock:
        self._own_rows(summed, profiled=report["source"] == "profile")
        self._counters = _new_counters()
    report["fill_s"] = time.perf_counter() - t2
    report["seconds"] = time.perf_counter() - t0
    if summed:
        report["rows_read"] = int(sum(int(np.count_nonzero(c)) for c in summed.values()))
    report["global_cache_rows"] = sum(o.global_rows for o in self._own.values())
    report["owned_rows"] = sum(o.owned_rows for o in self._own.values())
    return report


def _profile_args(self, fanouts: Any, batch_size: Any, batches: Any, seeds: Any, seed: Any, drop_last: bool, node_type: Optional[str]):
    """(this rank's share of the seeds, fanouts, batch_size, batches, the seeds' node type) of
    a profiled place, checked alike on every rank before any collective (errors name the
    argument)."""
    if fanouts is None or batch_size is None:
        raise errors.InvalidArgumentError(
            f"DistributedStore.place: a profiled placement needs both fanouts and batch_size (got fanouts={fanouts!r}, batch_size={batch_size!r})"
        )
    if self.is_hetero != isinstance(fanouts, dict):
        raise errors.InvalidArgumentError(
            f"DistributedStore.place: fanouts={fanouts!r}: " + ("a graph of several node or edge types takes {edge type: [per hop]}"
                                                               if self.is_hetero else "a graph of one type takes one fanout per hop")
        )
    fo = fanouts if isinstance(fanouts, dict) else _fanouts(fanouts)
    if not fo:
        raise errors.InvalidArgumentError("DistributedStore.place: fanouts is empty; give one fanout per hop")
    _check_batching("DistributedStore.place", batch_size, batches, "the rank's seeds")
    if not _is_int(seed):
        raise errors.InvalidArgumentError(f"DistributedStore.place: seed = {seed!r}; want an int (the loader's seed)")
    nt = self.node_type if node_type is None else node_type
    rows = self.num_nodes(nt)  # raises naming a node type the dataset lacks
    if seeds is None:
        if self.is_hetero:
            seeds = self.split("train", node_type=nt)
        else:
            seeds = self.split("train") if "train" in self.split_names else np.arange(rows, dtype=np.int64)
    arr = _ids(seeds, "seeds").array
    if arr.shape[0] == 0:
        raise errors.InvalidArgumentError("DistributedStore.place: seeds is empty: no batches to profile")
    if int(arr.min()) < 0 or int(arr.max()) >= rows:
        i = int(np.argmax((arr < 0) | (arr >= rows)))
        of = f" of node type {nt!r}" if self.is_hetero else ""
        raise errors.OutOfRangeError(f"DistributedStore.place: seeds[{i}] = {int(arr[i])} is out of range [0, {rows}){of}")
    share = split_seeds(arr, self._rank, self._world, 0, int(seed), True, bool(drop_last))
    return share, fo, int(batch_size), None if batches is None else int(batches), nt


def _sum_over_ranks(self, counts: Dict[str, np.ndarray], bound: int) -> Dict[str, np.ndarray]:
    """Every node type's counts (uint32, one per node) summed over the ranks with one
    all-reduce of them all, as int32 when the sum cannot pass ``bound`` < 2**31, else int64
    (on the exchange device). Every rank gives the same types, in the same order."""
    if self._group is None or not counts:
        return counts
    torch, dist = _torch(), _dist()
    dtype = np.int32 if bound < (1 << 31) else np.int64
    t = torch.from_numpy(np.concatenate([c.astype(dtype) for c in counts.values()])).to(self._xdevice)
    try:
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self._group, async_op=True).wait(datetime.timedelta(seconds=self._timeout))
    except Exception as e:
        raise errors.PeerError(
            f"DistributedStore.place: rank {self._rank}: summing the counts over the ranks failed: a peer died or did not call "
            f"place within the process group timeout ({self._timeout:.0f} s): {type(e).__name__}: {e}"
        ) from e
    flat = t.cpu().numpy()
    out, at = {}, 0
    for k, c in counts.items():
        out[k] = flat[at : at + c.shape[0]]
        at += c.shape[0]
    return out


def place_ids(self, ids: IdsLike, node_type: Optional[str] = None) -> None:
    raise errors.NotSupportedError(
        "tierfs: a distributed store decides which rank caches which rows (its ownership, at open or by place(hotness) / "
        "place(fanouts=..., batch_size=...)); place_ids on one rank would break it"
    )
