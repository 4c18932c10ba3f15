"""The loader's pipeline: sample → gather → train with several batches in flight.

One thread samples the batches in order (samplers are sequential: a batch's sample depends on
how many came before), ``depth`` threads gather them (each gather splits its ids by tier, copies
the memory tiers' rows and has the SSD tier's reads in flight), and the caller trains. Every
native call releases the GIL and runs on the Go runtime's threads, so while the caller trains on
batch i the core samples batch i+k and several gathers keep the disk queue from draining between
batches.

Memory is bounded by ``depth``: a batch takes one of ``depth`` tokens before it is sampled and
gives it back when the caller receives it, so at most ``depth`` batches (their samples and
feature rows) are held by the pipeline at once, besides those the caller keeps.

On a CUDA store each gather thread has its own CUDA stream; the caller's current stream waits
for a batch's stream (an event) when it receives the batch, and its tensors are recorded on the
caller's stream, so the caching allocator does not reuse them early.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from ._sample import Sample

__all__ = ["Pipeline", "pipeline_stats", "bound_of"]

#: Most batches a pipeline has in flight: each is a gather thread (with its CUDA stream) and the
#: memory of a batch.
MAX_DEPTH = 256


class _Stage:
    __slots__ = ("busy", "batches")

    def __init__(self) -> None:
        self.busy = 0.0
        self.batches = 0

    def add(self, seconds: float) -> None:
        self.busy += seconds
        self.batches += 1


class _Result:
    __slots__ = ("ready", "value", "exc", "event")

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.value: Any = None
        self.exc: Optional[BaseException] = None
        self.event: Any = None  # a torch.cuda.Event after a CUDA gather


class _State:
    """What the threads share; the Pipeline object itself is not referenced by its threads, so
    dropping it shuts them down."""

    def __init__(self, n: int, depth: int) -> None:
        self.n = n
        self.depth = depth
        self.tokens = threading.Semaphore(depth)
        self.work: "queue.Queue[Any]" = queue.Queue()
        self.results = [_Result() for _ in range(n)]
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sample = _Stage()
        self.gather = _Stage()
        self.threads: list = []
        # The caller's side: batches delivered, seconds waiting and training, start and end.
        self.delivered = 0
        self.waiting = 0.0
        self.train = 0.0
        self.last_return: Optional[float] = None
        self.start = time.perf_counter()
        self.end: Optional[float] = None
        self.store: Any = None
        self.plan: Any = None
        self.base: Optional[tuple] = None

    def shutdown(self) -> None:
        if self.end is None:
            self.end = time.perf_counter()
        self.stop.set()
        for _ in range(self.depth + 1):
            self.tokens.release()  # unblocks the sampler
        for _ in self.threads:
            self.work.put(None)  # unblocks the gatherers
        for t in self.threads:
            if t is not threading.current_thread():
                t.join()
        self.results = []  # the batches in flight go


def _sample_loop(st: _State, sample: Callable[[int], Any]) -> None:
    for i in range(st.n):
        st.tokens.acquire()
        if st.stop.is_set():
            return
        t0 = time.perf_counter()
        try:
            item = sample(i)
        except BaseException as e:  # raised in the caller at batch i; later batches never come
            r = st.results[i]
            r.exc = e
            r.ready.set()
            return
        with st.lock:
            st.sample.add(time.perf_counter() - t0)
        st.work.put((i, item))


def _gather_loop(st: _State, gather: Callable[[int, Any], Any], cuda_device: Any) -> None:
    stream = None
    if cuda_device is not None:
        import torch

        stream = torch.cuda.Stream(device=cuda_device)
    while True:
        job = st.work.get()
        if job is None or st.stop.is_set():
            return
        i, item = job
        r = st.results[i]
        t0 = time.perf_counter()
        try:
            if stream is None:
                r.value = gather(i, item)
            else:
                import torch

                with torch.cuda.stream(stream):
                    r.value = gather(i, item)
                    r.event = torch.cuda.Event()
                    r.event.record(stream)
        except BaseException as e:
            r.exc = e
        with st.lock:
            st.gather.add(time.perf_counter() - t0)
        r.ready.set()


class Pipeline(Iterator[Any]):
    """Batches ``0 .. n-1``: ``sample(i)`` on one thread, in order, then ``gather(i, sampled)``
    on one of ``depth`` threads; iterating yields the gathers' results in order.

    An exception in either stage is raised in the caller at the batch it happened; breaking out
    of the loop, :meth:`close` or garbage collection stops the threads (they finish the calls in
    progress). ``store`` (optional) is the :class:`tierfs.Store` whose counters give the split
    and disk parts of the gather time in :meth:`stats`, and ``plan`` (optional) the
    :class:`tierfs.PlannedEpochs` the gathers read from, whose read time counts as disk time;
    ``cuda_device`` (a ``torch.device``) gives every gather thread its own stream on that device.
    ``deliver`` (optional) maps each gathered batch to what the caller receives, in the caller's
    thread as the batch is handed over: after every step the caller took on earlier batches (the
    loaders' ``embeddings=`` gather a table's rows there, under the caller's autograd mode).
    """

    def __init__(
        self,
        n: int,
        sample: Callable[[int], Any],
        gather: Callable[[int, Any], Any],
        depth: int = 4,
        store: Any = None,
        cuda_device: Any = None,
        name: str = "tierfs-pipeline",
        plan: Any = None,
        deliver: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"pipeline depth {depth} (prefetch) must be from 1 to {MAX_DEPTH}: a gather thread and a batch each")
        if n < 0:
            raise ValueError(f"pipeline of {n} batches")
        self._st = st = _State(n, depth)
        self._cuda = cuda_device
        self._deliver = deliver
        st.store, st.plan = store, plan
        st.base = _store_times(store, plan)
        st.threads.append(threading.Thread(target=_sample_loop, args=(st, sample), name=f"{name}-sample", daemon=True))
        for k in range(depth):
            st.threads.append(
                threading.Thread(target=_gather_loop, args=(st, gather, cuda_device), name=f"{name}-gather{k}", daemon=True)
            )
        for t in st.threads:
            t.start()
        self._finalizer = weakref.finalize(self, st.shutdown)

    def __iter__(self) -> "Pipeline":
        return self

    def __len__(self) -> int:
        return self._st.n

    def __next__(self) -> Any:
        st = self._st
        if st.delivered >= st.n or st.stop.is_set():
            self.close()
            raise StopIteration
        called = time.perf_counter()
        if st.last_return is not None:
            st.train += called - st.last_return
        r = st.results[st.delivered]
        r.ready.wait()
        st.results[st.delivered] = None  # type: ignore[call-overload]  # the caller owns it now
        st.delivered += 1
        st.tokens.release()
        if r.exc is not None:
            self.close()
            raise r.exc
        if r.event is not None:
            _join_stream(r.event, r.value, self._cuda)
        value = r.value
        if self._deliver is not None:
            try:
                value = self._deliver(value)
            except BaseException:
                self.close()
                raise
        st.last_return = time.perf_counter()
        st.waiting += st.last_return - called
        return value

    def close(self) -> None:
        """Stops the threads and drops the batches in flight; :meth:`stats` then covers the time
        until now."""
        self._finalizer()

    def stats(self) -> Dict[str, Any]:
        """Where the time went so far (:func:`pipeline_stats`)."""
        return pipeline_stats(self._st)


def pipeline_stats(st: _State) -> Dict[str, Any]:
    """Where the time went in a pipeline (its shared state, which outlives the Pipeline
    object).

    ``wall_s`` since the pipeline started; ``waiting_s`` the caller spent waiting for batches
    and ``stages``: ``sample`` and ``gather`` (busy seconds summed over their threads,
    batches, mean ms a batch, occupancy = busy / wall: the mean number of batches in that
    stage, up to 1 for sample and ``depth`` for gather), ``split`` and ``disk`` (the store's
    share of gather time splitting ids by tier and waiting on the SSD tier's reads, counted
    by the store over all its gathers in this time; with a plan, ``disk`` adds the plan's
    packed reads), and ``train`` (the caller's time between receiving a batch and asking for
    the next). ``bound`` names the stage that bounds the loop and ``bound_why`` says why, with
    the figures (:func:`bound_of`).
    """
    wall = max((st.end or time.perf_counter()) - st.start, 1e-9)
    with st.lock:
        sample = (st.sample.busy, st.sample.batches)
        gather = (st.gather.busy, st.gather.batches)
    delivered = st.delivered
    now = _store_times(st.store, st.plan)
    split = now[0] - st.base[0] if now and st.base else None
    disk = now[1] - st.base[1] if now and st.base else None

    def stage(busy: float, batches: int) -> Dict[str, float]:
        return {
            "busy_s": busy,
            "batches": batches,
            "mean_ms": 1e3 * busy / batches if batches else 0.0,
            "occupancy": busy / wall,
        }

    stages = {
        "sample": stage(*sample),
        "gather": stage(*gather),
        "train": stage(st.train, max(0, delivered - 1)),
    }
    if split is not None:
        stages["split"] = stage(split, gather[1])
        stages["disk"] = stage(disk, gather[1])
    bound, why = bound_of(wall, st.waiting, sample[0], gather[0], disk)
    return {
        "batches": delivered,
        "depth": st.depth,
        "wall_s": wall,
        "waiting_s": st.waiting,
        "stages": stages,
        "bound": bound,
        "bound_why": why,
    }


def bound_of(wall: float, waiting: float, sample: float, gather: float, disk: Optional[float]) -> Tuple[str, str]:
    """The stage that bounds a pipelined loop, and why, from its seconds: the wall time, the
    caller's waits, the sampler's and the gathers' busy time (summed over threads) and the
    gathers' disk waits (None: not known).

    ``train`` when the caller waited under 10% of the wall time (the pipeline keeps up); else
    ``sample`` when the one sampler thread was busy over 80% of it; else ``disk`` when disk
    waits are over half the gather time; else ``gather`` (splitting, memory-tier copies, the
    copy to the device, a transform).
    """
    wall = max(wall, 1e-9)
    waited = f"the caller waited {waiting / wall:.0%} of the {wall:.3g} s"
    if waiting < 0.1 * wall:
        return "train", f"{waited} (under 10%): the pipeline kept up with training"
    busy = f"the sampler was busy {sample / wall:.0%} of it"
    if sample > 0.8 * wall:
        return "sample", f"{waited}; {busy} (over 80%)"
    if disk is None:
        return "gather", f"{waited}; {busy}; the gathers' disk time is not known"
    share = f"disk reads were {disk / gather:.0%} of the gathers' {gather:.3g} s" if gather > 0 else "no gather time"
    if disk > 0.5 * gather:
        return "disk", f"{waited}; {busy}; {share} (over half)"
    return "gather", f"{waited}; {busy}; {share}"


def _store_times(store: Any, plan: Any = None) -> Optional[tuple]:
    """(split, disk) seconds of the store's gathers so far (the whole store's, every node type's
    tier stack on a store of several types); disk adds the plan's packed reads."""
    if store is None:
        return None
    try:
        s = store.stats()
        read = float(plan.stats().get("read_seconds", 0.0)) if plan is not None else 0.0
    except Exception:  # a closed store or plan: no split of the gather time
        return None
    return float(s.get("split_seconds", 0.0)), float(s.get("disk_seconds", 0.0)) + read


def _join_stream(event: Any, value: Any, device: Any) -> None:
    """Makes the caller's current stream wait for a gather's stream and records the batch's
    CUDA tensors on it."""
    import torch

    current = torch.cuda.current_stream(device)
    current.wait_event(event)
    for t in _tensors(value):
        if t.is_cuda:
            t.record_stream(current)


def _tensors(value: Any) -> Iterator[Any]:
    """The torch tensors in value: itself, or in its tuple/list items, dict values, dataclass
    fields, a Sample's arrays (a batch keeps a sample's arrays and a typed batch its features per
    type in dicts) or a PyG
    ``Data``/``HeteroData``'s stores (what the PyG loaders' gathers make)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif hasattr(value, "stores") and callable(getattr(value, "to_dict", None)):  # PyG's Data, HeteroData
        yield from _tensors(value.to_dict())
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _tensors(getattr(value, f.name))
    elif isinstance(value, Sample):  # its arrays, in dicts by type
        yield from _tensors(vars(value))
