"""A pipelined mini-batch loader: the next batches are sampled and gathered, several at once,
while the caller trains on the current one (:mod:`tierfs.pipeline`).

Why threads and not worker processes: every native call releases the GIL and runs on the Go
runtime's own threads (the sampler and the gather are parallel inside), so a few Python threads
keep them busy; worker processes would each need their own copy of the store (caches,
topology, IO stacks) and must never be forked from a process that loaded the library.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple, TypeVar

from . import _options
from . import storegather as _storegather
from .epochs import plan_request
from .errors import ClosedError, InvalidArgumentError, NotSupportedError
from .pipeline import Pipeline, pipeline_stats
from .planrounds import PlanRounds, per_plan_budget
from ._args import IdsLike, _ids
from ._sample import Sample
from .sampler import _seed_times
from .store import Sampler, Store

__all__ = ["Loader", "Batch", "prefetch"]

T = TypeVar("T")

_END = object()


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


def _produce(it: Iterator[Any], q: "queue.Queue[Any]", stop: threading.Event) -> None:
    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    try:
        for item in it:
            if not put(item) or stop.is_set():
                return
    except BaseException as e:  # re-raised in the consumer
        put(_Failure(e))
        return
    put(_END)


def _shutdown(stop: threading.Event, q: "queue.Queue[Any]", thread: threading.Thread) -> None:
    stop.set()
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass
    if thread is not threading.current_thread():
        thread.join()


class Prefetcher(Iterator[T]):
    """Iterates ``iterable`` on a background thread, up to ``depth`` items ahead.

    Items come out in order; an exception raised by the iterable is raised in the caller at the
    position it happened. Breaking out of the loop, :meth:`close` or garbage collection stops
    the thread (it finishes the item in progress, then exits).
    """

    def __init__(self, iterable: Iterable[T], depth: int = 2, name: str = "tierfs-prefetch"):
        if depth < 1:
            raise ValueError(f"prefetch depth {depth} must be at least 1")
        self._q: "queue.Queue[Any]" = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_produce, args=(iter(iterable), self._q, self._stop), name=name, daemon=True
        )
        self._thread.start()
        self._done = False
        self._finalizer = weakref.finalize(self, _shutdown, self._stop, self._q, self._thread)

    def __iter__(self) -> "Prefetcher[T]":
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        item = self._q.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.exc
        return item

    def close(self) -> None:
        """Stops the background thread and drops prefetched items."""
        self._done = True
        self._finalizer()


def prefetch(iterable: Iterable[T], depth: int = 2) -> Prefetcher[T]:
    """Runs ``iterable`` (e.g. a PyG ``NodeLoader`` over tierfs stores) ``depth`` items ahead
    on a background thread; see :class:`Prefetcher`."""
    return Prefetcher(iterable, depth)


@dataclass
class Batch:
    """One mini-batch of :class:`Loader`.

    Attributes:
        seeds: the batch's seed node ids (global).
        sample: their k-hop neighborhood (:class:`tierfs.Sample`); ``sample.nodes[:len(seeds)]``
            are the seeds. On a CUDA store with torch seeds its edges (``row``, ``col``) are on the
            store's device, like ``x`` (moved on the gather threads' streams); ids stay on the host. With
            a sampler of fanouts by edge type, a typed :class:`tierfs.Sample`.
        x: feature rows of ``sample.nodes``, ``(sample.num_nodes, dim)``; with a heterogeneous
            sample ``{node type: rows of sample.node[type]}`` (the type's default feature, for
            every type that has features).
        y: labels of the seeds, or None when the dataset has no labels.
        positions: the seeds' positions in the loader's ``seeds`` (PyG's ``input_id``), or
            None where the loader does not know them (planned epochs, distributed stores).
    """

    seeds: Any
    sample: Sample
    x: Any
    y: Any
    positions: Any = None

    @property
    def batch_size(self) -> int:
        return int(self.seeds.shape[0])


def _nodes_of(sample: Sample, node_type: Optional[str]) -> Any:
    """The ids of ``sample``'s nodes of ``node_type`` (None: an untyped sample's nodes)."""
    return sample.nodes if node_type is None else sample.node.get(node_type)


def _memory_holds_every_row(store: Store) -> bool:
    """Whether, for every served feature, one memory tier (GPU or host) holds every row (two
    tiers may hold a row both, so their sum proves nothing)."""
    s = store.stats()
    for part in (list(s["node_types"].values()) if s.get("node_types") else [s]):
        held = {t["tier"]: t["rows_held"] for t in part.get("tiers", [])}
        if max(held.get("gpu", 0), held.get("host", 0)) < held.get("ssd", 0):
            return False
    return True


def _auto_start(loader: "Loader") -> Dict[str, Any]:
    """planned_epochs="auto" before epoch 0: on demand, decided at once where planning cannot
    pay or cannot run."""
    why = ""
    if loader._share.per_rank:
        why = "a distributed store (not measured there: pass planned_epochs=K to plan each rank's share)"
    elif not loader.shuffle:
        why = "shuffle=False (planned epochs need shuffle=True)"
    elif _memory_holds_every_row(loader.store):
        why = "the memory tiers hold every row: no disk reads to plan"
    if why:
        return {"path": "on demand", "decided": True, "why": why}
    return {"path": "on demand", "decided": False, "why": "epoch 0 runs on demand and is measured"}


# planned_epochs="auto" plans rounds of this many epochs: a round's epochs share the packing
# windows, so on the H200 host a later round of 4 epochs planned at 0.79 of training's time at
# [25,10], against 1.81 for rounds of one epoch (BENCHMARKS.md).
_AUTO_EPOCHS = 4


def _free_bytes(path: Optional[str]) -> int:
    """The free bytes of the file system of ``path`` (its nearest existing directory; None: the
    temporary directory's)."""
    where = os.path.abspath(path if path is not None else tempfile.gettempdir())
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    return shutil.disk_usage(where).free


def _auto_step(loader: "Loader", epoch: int) -> None:
    """planned_epochs="auto" before ``epoch``: :func:`_auto_decide` from the latest epoch's
    stats, then plans or drops the plan. A plan the disk budget cannot hold leaves the loader on
    demand, saying why."""
    run = loader._run
    if loader._auto is None or run is None or run.delivered == 0:
        return  # nothing measured yet
    action = _auto_decide(loader._auto, pipeline_stats(run), loader.plan is not None, epoch)
    if action == "plan":
        t = time.perf_counter()
        try:
            loader._start_plans(_AUTO_EPOCHS, epoch, auto=True)
        except InvalidArgumentError as e:
            if "plan_disk_budget" not in str(e):
                raise
            loader._auto.update(path="on demand", decided=True, why=f"no planned epoch fits the disk budget: {e}")
            return
        loader._auto["plan_s"] = time.perf_counter() - t
    elif action == "drop":
        loader._stop_plans()


def _auto_decide(a: Dict[str, Any], st: Dict[str, Any], planned: bool, epoch: int) -> str:
    """The rule of planned_epochs="auto" (see :class:`Loader`): updates the state ``a`` from
    ``st``, the stats of the epoch before ``epoch`` (planned or not), and returns ``"plan"``
    (after an on-demand epoch bound by the disk), ``"drop"`` (the planned epoch ran a batch no
    faster than the on-demand one) or ``"keep"`` (the path stays; decided unless it is the
    plan's first epoch)."""
    per_batch = st["wall_s"] / max(1, st["batches"])
    if not planned:
        a["on_demand_batch_s"] = per_batch
        if st["bound"] != "disk":
            a.update(decided=True, why=f"epoch {epoch - 1} on demand was bound by {st['bound']}, not the disk: {st['bound_why']}")
            return "keep"
        a.update(path="planned", why=f"epoch {epoch - 1} on demand was bound by the disk ({st['bound_why']}): epoch {epoch} tries planned epochs")
        return "plan"
    a["planned_batch_s"] = per_batch
    planned_ms, demand_ms = 1e3 * per_batch, 1e3 * a["on_demand_batch_s"]
    if per_batch < a["on_demand_batch_s"]:
        a.update(decided=True, why=f"planned ran {planned_ms:.2f} ms a batch against {demand_ms:.2f} ms on demand")
        return "keep"
    a.update(path="on demand", decided=True, why=f"on demand ran {demand_ms:.2f} ms a batch against {planned_ms:.2f} ms planned")
    return "drop"


def _loader_seed_times(seed_time: Any, n: int, planned: bool, per_rank: bool) -> Any:
    """Loader's ``seed_time``, one integer a seed (of n), as int64 numpy; refused with planned
    epochs and on a distributed store, whose batches do not keep their seeds' positions."""
    if planned:
        raise NotSupportedError("tierfs.Loader: seed_time with planned_epochs: planned epochs do not sample in time; leave one out")
    if per_rank:
        raise NotSupportedError("tierfs.Loader: seed_time on a distributed store: its ranks' batches do not keep their seeds' positions")
    return _seed_times(seed_time, n)


class Loader:
    """Mini-batches of (seeds, sampled neighborhood, features, labels), pipelined.

    ``seeds`` are node ids (of ``node_type`` with a typed sampler) or a split name ("train"),
    as PyG's loaders take ``input_nodes``. Each epoch (each ``iter(loader)``) splits ``seeds``
    into batches of ``batch_size``
    (shuffled by ``seed`` and the epoch number when ``shuffle``) and runs them through a
    :class:`tierfs.pipeline.Pipeline`: one thread samples ahead, ``prefetch`` threads gather at
    once (so the disk queue does not drain between batches), up to ``prefetch`` batches in
    flight. Batches come in order; an exception in a stage is raised in the caller at its batch;
    breaking out of the loop stops the threads. :meth:`stats` says where the time went and which
    stage bounds the epoch. Memory: at most ``prefetch`` batches (sample and feature rows) held
    besides the caller's. ``transform`` (optional) maps each :class:`Batch` to what the loader
    yields, on the pipeline's gather thread (e.g. :class:`tierfs.pyg.NeighborLoader` makes PyG
    ``Data`` there).

    With ``planned_epochs=K`` the loader serves planned epochs (:meth:`Store.plan_epochs`,
    docs/planned.md): each batch's order is the core's (from ``seed``), its sample drawn from the
    sampler's seed, its disk rows read with a few large reads. The sampler's fanouts, replace
    and seed define the plans. It plans in rounds of K epochs: epochs ``[0, K)`` before the first
    epoch (the one wait for planning), then, on a background thread, the next K epochs
    (``first_epoch=K``: fresh orders and samples, not replays) while the current K train, and so
    on; epoch ``e`` is exactly planned epoch ``e``. A round's epochs share the packing windows
    (``plan_pack_memory``, each row held once however many batches pack it), so K ≥ 2 reads the
    feature file fewer times an epoch: on the H200 host a later round of 4 epochs planned at
    0.79 of training's time at [25,10] (one pass over the feature file) and 0.36–0.52 at
    [15,10,5], against 1.81 and 1.19 with K = 1 (BENCHMARKS.md). At most two plans
    are on disk (the round serving and the round being planned), each within half of
    ``plan_disk_budget``; at the next round boundary the planner thread removes a round's
    directory before it plans the round after. Only round 0 places the memory tiers
    (``place_tiers``); later rounds are planned against the same tiers. ``plan_dir``: the
    rounds' directories are made in it (``epochs-from-F``), else temporary ones; both removed.
    ``stats()["plans"]`` gives each round's planning and waiting seconds and the epochs planned
    ahead. ``plan_pack_method`` and ``plan_pack_memory`` are every round's ``pack_method`` and
    ``pack_memory`` (:meth:`Store.plan_epochs`: how planning reads the rows it packs), checked
    when the loader is made. With ``reuse_samples=True`` the loader plans K epochs once instead (in ``plan_dir``
    itself, kept for a later run) and epoch ``e`` replays planned epoch ``e mod K``: no
    planning after the first, at the price of the same samples every K epochs — for when
    planning is no faster than training (planning reads the rows with random reads).
    :meth:`close` (or garbage collection, or interpreter exit) stops the planner, cancelling a
    round being planned, and removes the rounds' directories.

    ``planned_epochs="auto"`` picks the faster path by measuring: epoch 0 runs on demand. If the
    disk bounded it (``stats()["bound"] == "disk"``), the loader plans from epoch 1 (as
    ``planned_epochs=4``: rounds of 4 epochs, as many of them as the disk budget holds —
    ``plan_disk_budget``, else half the free space where the plans go) before epoch 1, and after
    epoch 1 keeps whichever of the two ran a batch faster (wall time, training included, and with
    it the planning of the next round). Otherwise it stays on demand, decided at once where a
    memory tier holds every row, on a distributed store, with ``shuffle=False``, or where not one
    planned epoch fits the budget. ``stats()["auto"]`` says which path and why.

    On a distributed store (``tierfs.open(..., cache_mode=...)``, :mod:`tierfs.distributed`) each
    rank iterates its share of ``seeds`` (:func:`tierfs.distributed.split_seeds`, as torch's
    ``DistributedSampler``: the same permutation on every rank from ``seed`` and the epoch,
    disjoint shares of equal size, padded by repeating a few seeds, or with ``drop_last`` the tail
    dropped), so every rank has the same number of batches; the sampler draws with a seed of its
    own per rank; the batches' peer exchanges go in batch order. Every rank must iterate every
    epoch to its end (breaking out early on some ranks leaves the others waiting until the
    store's timeout). With ``planned_epochs=K`` each rank plans its own share
    (:meth:`tierfs.distributed.DistributedStore.plan_epochs`: planned epoch ``e`` is its
    ``split_seeds`` share of epoch ``e``, in ``plan_dir/rank-R``) without the rows other ranks own,
    which every batch gets through the peer exchange as on demand.

    Outputs are numpy arrays for numpy/list seeds and torch tensors for torch seeds (on the
    store's device for features).

    ``embeddings={node type: tierfs.Embedding}`` (``None`` for a one-type store's type) puts a
    trainable table's rows of the batch's nodes of that featureless type in the batch as its
    ``x`` (``x[type]`` of a typed batch; a torch tensor on the store's device), through the
    table's autograd (``emb.step()`` after backward trains them). Exact: the rows are gathered
    as the batch is handed over, in the caller's thread and autograd mode, so a batch prefetched
    before the steps of the batches before it still sees every one of them; the pipeline only
    reads the rows ahead to bring their pages into the table's cache. With embeddings,
    ``transform`` runs then too, after the rows are on the batch.

    With a sampler of fanouts by edge type (``store.sampler({edge type: fanouts})``) the seeds
    are ids of ``node_type``; each batch's ``sample`` is a typed :class:`tierfs.Sample` and
    ``x`` the default feature of every sampled node type (each through its tiers; on a shared
    distributed store each type's rows are exchanged, the types in one order on every rank).
    With ``planned_epochs`` the plan samples as the sampler does (its fanouts, replace and
    seed) and packs the rows of every node type with features.

    ``seed_time`` (a temporal sampler's, :meth:`Store.sampler`'s ``time``; PyG's
    ``input_time``): one integer time a seed, parallel to ``seeds``; each batch samples its seeds
    at their times (None: the seeds' own node times). Not with planned epochs or a distributed
    store.

    ``transform`` and ``node_type`` are as above; the loader options, keywords checked against
    the loader table (``tierfs._options.LOADER``; a name of none is an InvalidArgumentError listing
    them), are:

        {loader_options}

    Example::

        store = tierfs.open("/data/papers", host_cache="8GB", device="cuda:0")
        loader = tierfs.Loader(store, store.sampler([15, 10]), torch.from_numpy(store.split("train")),
                               batch_size=1024)
        for batch in loader:
            out = model(batch.x, batch.sample.edge_index.cuda())[: batch.batch_size]
    """

    def __init__(
        self,
        store: Store,
        sampler: Sampler,
        seeds: IdsLike,
        batch_size: int,
        transform: Optional[Callable[[Batch], Any]] = None,
        node_type: Optional[str] = None,
        seed_time: Any = None,
        embeddings: Optional[Dict[Any, Any]] = None,
        **options: Any,
    ) -> None:
        o = _options.loader_options(options, "tierfs.Loader")
        shuffle, planned_epochs, reuse_samples, labels = o["shuffle"], o["planned_epochs"], o["reuse_samples"], o["labels"]
        self.node_type: Optional[str] = None
        if getattr(sampler, "typed", False):
            if node_type is None:
                raise ValueError(f"tierfs.Loader: a sampler of fanouts by edge type needs node_type, the seeds' node type (one of {', '.join(store.node_types)})")
            self.node_type = node_type
            if labels is None:
                labels = bool(store.types["node_types"][node_type]["labels"]) if node_type in store.types["node_types"] else False
        auto = planned_epochs == "auto"
        if auto:
            planned_epochs = 0
        if reuse_samples and not (planned_epochs or auto):
            raise ValueError("reuse_samples=True needs planned_epochs: it replays the K planned epochs")
        if planned_epochs and not shuffle:
            raise ValueError("planned_epochs needs shuffle=True (each planned epoch is its own order)")
        if batch_size < 1:
            raise ValueError(f"batch_size {batch_size} must be at least 1")
        self.store = store
        self.sampler = sampler
        if isinstance(seeds, str):  # a split name, as PyG's loaders take input_nodes="train"
            seeds = store.split(seeds, self.node_type)
        ids = _ids(seeds, "seeds")
        self._seeds = ids.array
        self._torch = ids.kind == "torch"
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = o["drop_last"]
        self.prefetch = o["prefetch"]
        self.seed = o["seed"]
        self.x_dtype: Optional[str] = o["x_dtype"]
        self.labels = store.num_classes > 0 if labels is None else labels
        self.epoch = 0
        self.transform = transform
        self.embeddings: Dict[Any, Any] = {}
        if embeddings:
            from .embedding import loader_tables  # torch: loaded only for tables

            self.embeddings = loader_tables(store, embeddings, "tierfs.Loader")
        # What a batch becomes as it is handed over, in the caller's thread (Pipeline's deliver).
        self._deliver: Optional[Callable[[Any], Any]] = self._attach_rows if self.embeddings else None
        self._pipeline: Any = None  # the latest epoch's Pipeline, weakly
        self._run: Any = None  # its shared state, for stats()
        self.plan = None
        self._closed = False
        self._planned = bool(planned_epochs) or auto
        self._share = store._loader_share  # its seeds, their order and the order of its gathers
        self._plan_args = (o["plan_dir"], o["plan_disk_budget"], reuse_samples)
        self._plan_pack = dict(pack_method=o["plan_pack_method"], pack_memory=o["plan_pack_memory"])
        plan_request(self.batch_size, 1, self._plan_pack, "tierfs.Loader")  # refuses a bad one now, not when the first round plans
        if getattr(sampler, "time", None) is not None and self._planned:
            raise NotSupportedError(f"tierfs.Loader: a temporal sampler (time={sampler.time!r}) with planned_epochs: planned epochs do not sample in time; leave one out")
        self._seed_time = None if seed_time is None else _loader_seed_times(seed_time, self._seeds.shape[0], self._planned, self._share.per_rank)
        self._rounds: Optional[PlanRounds] = None
        if planned_epochs:
            self._start_plans(planned_epochs, 0)
        self._auto: Optional[Dict[str, Any]] = _auto_start(self) if auto else None

    def _start_plans(self, epochs: int, first_epoch: int, auto: bool = False) -> None:
        """Plans rounds of ``epochs`` epochs from ``first_epoch`` (:class:`PlanRounds`); the
        first now. With ``auto`` and no ``plan_disk_budget``, the plans on disk keep within half
        the plan directory's free space (a round plans as many of its epochs as fit)."""
        plan_dir, disk_budget, reuse = self._plan_args
        if auto and not disk_budget:
            disk_budget = max(1, _free_bytes(plan_dir) // 2)
        sampler = self.sampler
        fanouts = sampler.num_neighbors if self.node_type is not None else sampler.fanouts
        per_plan = per_plan_budget(disk_budget, reuse)

        store, seeds, batch_size, drop_last, pack = self.store, self._seeds, self.batch_size, self.drop_last, self._plan_pack
        shuffle_seed, node_type = self.seed, self.node_type
        share = self._share
        seed = sampler.seed - share.sampler_seed_offset  # the store's plan_epochs adds it again, as its sampler did

        def make(first: int, directory: Optional[str], place_tiers: bool) -> Any:
            # Not a method: the planning thread must not keep the loader alive.
            return store.plan_epochs(
                fanouts, batch_size, epochs, seeds=seeds, plan_dir=directory,
                disk_budget=per_plan, replace=sampler.replace, drop_last=drop_last,
                seed=seed, shuffle_seed=shuffle_seed, node_type=node_type,
                place_tiers=place_tiers and not share.per_rank, first_epoch=first, **pack,
            )

        # A round's directory is removed when it retires: a rank's share plans in one of its own,
        # so a rank that moves on first never removes another's plan.
        self._rounds = PlanRounds(make, epochs, first_epoch, share.plan_dir(plan_dir, reuse), reuse)
        self.plan = self._rounds.plan

    def _stop_plans(self) -> None:
        """Stops the planner and closes every plan (their directories removed)."""
        rounds, self._rounds, self.plan = self._rounds, None, None
        if rounds is not None:
            rounds.close()

    def close(self) -> None:
        """Stops the latest epoch's pipeline and the planner (a round being planned is
        cancelled), closes the plans and removes the rounds' directories. The loader can no
        longer be iterated with planned epochs after it."""
        previous = self._pipeline() if self._pipeline is not None else None
        if previous is not None:
            previous.close()
        self._stop_plans()
        self._closed = True

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __len__(self) -> int:
        n = self._share.count(self._seeds.shape[0], self.drop_last)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def batches(self, epoch: int) -> Iterator[Any]:
        """The batches of ``epoch``, computed in the calling thread (no pipeline)."""
        sample, gather = self._stages(epoch)
        for i in range(self._count()):
            batch = gather(i, sample(i))
            yield batch if self._deliver is None else self._deliver(batch)

    def _count(self) -> int:
        return self.plan.batches_per_epoch if self.plan is not None else len(self)

    def _stages(self, epoch: int):
        """(sample(i), gather(i, sampled)) of the batches of ``epoch``."""
        turn = self._share.turnstile()  # e.g. a distributed store's exchanges go in batch order
        plan = self.plan
        if plan is not None:
            return (lambda b: plan.sample(epoch, b)), (lambda b, s: self._gather_planned(plan, epoch, b, s, turn))
        order, positions = self._share.order(self._seeds, epoch, self.seed, self.shuffle, self.drop_last)
        bs = self.batch_size

        def sample(i: int) -> Tuple[Any, Any, Any]:
            seeds: Any = order[i * bs : (i + 1) * bs]
            pos: Any = None if positions is None else positions[i * bs : (i + 1) * bs]
            if self._torch:
                import torch

                seeds = torch.from_numpy(seeds)
                pos = None if pos is None else torch.from_numpy(pos)
            # seed times only where given: a sampler may be any object with sample(seeds[, node_type])
            at = {} if self._seed_time is None else {"seed_time": self._seed_time[positions[i * bs : (i + 1) * bs]]}
            if self.node_type is not None:
                return seeds, self.sampler.sample(seeds, self.node_type, **at), pos
            return seeds, self.sampler.sample(seeds, **at), pos

        return sample, lambda i, sampled: self._gather(i, sampled, turn)

    def _finish(self, batch: Batch) -> Any:
        if self.x_dtype is not None and batch.x is not None:  # cast where the rows are: on the GPU for a CUDA store
            x = batch.x
            batch.x = {t: _storegather.cast_rows(v, self.x_dtype, None) for t, v in x.items()} if isinstance(x, dict) else _storegather.cast_rows(x, self.x_dtype, None)
        if self.embeddings:
            from .embedding import warm

            warm(self.embeddings, lambda t: _nodes_of(batch.sample, t))
            return batch  # the tables' rows, then transform, when it is handed over (_attach_rows)
        return batch if self.transform is None else self.transform(batch)

    def _attach_rows(self, batch: Batch) -> Any:
        """``batch`` with the tables' rows of its nodes as ``x`` (a typed batch: ``x[type]``),
        gathered now, as the caller takes the batch (after every step it took), then
        ``transform``."""
        from .embedding import rows_of

        rows = rows_of(self.embeddings, lambda t: _nodes_of(batch.sample, t), self.store.device)
        if None in rows:
            batch.x = rows[None]
        else:
            batch.x = {**(batch.x or {}), **rows}
        return batch if self.transform is None else self.transform(batch)

    def _gather(self, i: int, sampled: Tuple[Any, Any, Any], turn: Any = None) -> Batch:
        seeds, sample, pos = sampled
        if sample.typed:
            types = self.store.types["node_types"]
            typed = {t: ids for t, ids in sample.node.items() if any(f["default"] for f in types[t]["features"].values())}
            xs = self._share.gather_types(typed, turn, i)  # every type of this batch in turn
            y = self.store.labels(seeds, node_type=self.node_type) if self.labels else None
            return self._finish(Batch(seeds, sample, xs, y, pos))
        if self.store.feature_name is None:  # a dataset without node features: batches have no x
            x = None
        else:
            x = self._share.gather(sample.nodes, turn, i)
        y = self.store.labels(seeds) if self.labels else None
        return self._finish(Batch(seeds, self._sample_on_device(sample), x, y, pos))

    def _sample_on_device(self, sample: Sample) -> Sample:
        """On a CUDA store with torch seeds: ``sample`` with its edges (``row``, ``col``: what the
        model reads on the device) on the store's device, copied on the calling gather thread's
        stream from pinned memory, so neither this thread nor the training loop waits for the
        copy (a copy from pageable memory would block the trainer until its stream's earlier
        kernels end). Node and edge ids (``nodes``, ``e_id``, for indexing a user's own host
        data, as PyG's ``n_id``/``e_id``) and the per-hop counts stay on the host. Elsewhere
        ``sample`` as it is."""
        if not self._torch or self.store.device == "cpu":
            return sample
        import torch

        device = torch.device(self.store.device)

        def up(t: Any) -> Any:
            return None if t is None or t.is_cuda else t.pin_memory().to(device, non_blocking=True)

        return sample._with_arrays(up, nodes=False, ids=False)

    def _read_planned(self, plan: Any, epoch: int, b: int, nodes_by_type: Dict[Optional[str], Any], on_gpu: bool, turn: Any) -> Dict[Optional[str], Any]:
        """{node type: planned rows of its nodes}; on a CUDA store straight to the device (packed
        rows scattered by a kernel); on a distributed store with the peer rows exchanged, in
        batch order (the store's seed share reads them)."""
        return self._share.read_planned(plan, epoch, b, nodes_by_type, on_gpu, turn)

    def _gather_planned(self, plan: Any, epoch: int, b: int, sample: Sample, turn: Any = None) -> Batch:
        if sample.typed:
            return self._gather_planned_hetero(plan, epoch, b, sample, turn)
        seeds = sample.nodes[: sample.num_seeds]
        on_gpu = self._torch and self.store.device != "cpu"
        x = self._read_planned(plan, epoch, b, {None: sample.nodes}, on_gpu, turn)[None]
        if not self._torch:
            return self._finish(Batch(seeds, sample, x, self.store.labels(seeds) if self.labels else None))
        import torch

        seeds_t = torch.from_numpy(seeds)
        sample = self._sample_on_device(sample._with_arrays(torch.from_numpy))
        xt = x if on_gpu else torch.from_numpy(x)
        return self._finish(Batch(seeds_t, sample, xt, self.store.labels(seeds_t) if self.labels else None))

    def _gather_planned_hetero(self, plan: Any, epoch: int, b: int, sample: Sample, turn: Any = None) -> Batch:
        """A planned batch of a heterogeneous plan, laid out as the on-demand path's: torch
        tensors for torch seeds, ``x`` per sampled node type with features."""
        if self._torch:
            import torch

            sample = sample._with_arrays(torch.from_numpy)
        packed = plan.node_types
        typed = {t: ids for t, ids in sample.node.items() if t in packed}
        xs = self._read_planned(plan, epoch, b, typed, self._torch and self.store.device != "cpu", turn)
        seeds = sample.node[self.node_type][: sample.num_seeds]
        y = self.store.labels(seeds, node_type=self.node_type) if self.labels else None
        return self._finish(Batch(seeds, sample, xs, y))

    def __iter__(self) -> Pipeline:
        epoch = self.epoch
        self.epoch += 1
        previous = self._pipeline() if self._pipeline is not None else None
        if previous is not None:
            previous.close()
        if self._auto is not None and not self._auto["decided"]:
            _auto_step(self, epoch)  # after the close: it may close the plan the previous epoch read
        if self._rounds is not None:  # after the close: a round boundary closes the finished round
            self.plan = self._rounds.plan_for(epoch)
        elif self._closed and self._planned:
            raise ClosedError("tierfs.Loader: the loader is closed (its plans with it)")
        sample, gather = self._stages(epoch)
        cuda = None
        if self.store.device != "cpu":
            import torch

            cuda = torch.device(self.store.device)
        pipeline = Pipeline(self._count(), sample, gather, self.prefetch, store=self.store, cuda_device=cuda, name="tierfs-loader", plan=self.plan, deliver=self._deliver)
        # Weakly: a loop the caller breaks out of stops its threads once the iterator is dropped.
        self._pipeline, self._run = weakref.ref(pipeline), pipeline._st
        return pipeline

    def stats(self) -> Dict[str, Any]:
        """Where the latest epoch's time went (:meth:`tierfs.pipeline.Pipeline.stats`): busy
        time and occupancy of the sample, gather (split, disk) and train stages, the time the
        caller waited, and the stage that bounds the loop (``bound``, ``bound_why``); with
        ``planned_epochs="auto"``, ``auto``: the path (``"on demand"`` or ``"planned"``), whether
        it is decided, why, and the measured seconds a batch. With planned epochs, ``plans``:
        per round (``rounds``) its first epoch, epochs, directory, planning seconds
        (``plan_s``), the seconds training waited for it (``wait_s``) and whether it did
        (``waited``: round 0 always); ``waits`` and ``wait_s`` over the rounds; ``ahead``, the
        epochs planned and not yet started; ``planning``, whether a round is being planned now.
        Empty before the first epoch."""
        st = pipeline_stats(self._run) if self._run is not None else {}
        if st and self._auto is not None:
            st["auto"] = dict(self._auto)
        if st and self._rounds is not None:
            st["plans"] = self._rounds.stats(self.epoch)
        return st

    def __repr__(self) -> str:
        return (
            f"<tierfs.Loader seeds={self._seeds.shape[0]} batch_size={self.batch_size} "
            f"batches={len(self)} shuffle={self.shuffle} prefetch={self.prefetch}>"
        )


_options.document(Loader, "loader")
