"""The peer exchange of a shared :class:`tierfs.DistributedStore` (docs/distributed.md): a gather's
ids split into this rank's and the peer-owned ones, the local rows gathered on a worker thread
while the exchange runs over the store's process group (an all-gather of the request counts, then
``all_to_all_single`` of the ids and of the rows), the rows put back in the order of the ids.

:class:`PeerExchange` holds what the exchange needs of its own (the group, the lock that runs one
exchange at a time in call order, the failure that makes the store unusable); the store composes
one and gives it the ownership, the local gather and the counters. Every rank must run the same
exchanges in the same order (:meth:`PeerExchange.in_turn` keeps a loader epoch's in batch order).
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Callable, Dict, Generator, NamedTuple, Optional

import numpy as np

from . import errors
from ._args import IdsLike, _ids, _torch
from .rankshare import _Turnstile
from .store import _NUMPY_DTYPES, Store

__all__ = ["PeerExchange"]


def _dist():
    import torch.distributed as dist

    return dist


def _new_counters() -> Dict[str, Any]:
    return dict(batches=0, ids=0, local_rows=0, peer_rows=0, peer_unique_rows=0, peer_bytes_received=0,
                peer_rows_served=0, peer_bytes_sent=0, exchange_s=0.0, local_s=0.0,
                **{f"{step}_s": 0.0 for step in _EXCHANGE_STEPS})


# The steps of a shared gather's exchange, timed on the host (stats()["distributed"]
# ["per_batch"]["exchange_steps_ms"]): the split of the ids, the all-gather of the request counts
# (it waits for the slowest rank to arrive), the ids to their owners, serving the rows asked of
# this rank, the rows back, then waiting for this rank's own rows and putting them in order.
_EXCHANGE_STEPS = ("split", "counts", "ids", "serve", "rows", "local_wait", "assemble")


class _Split(NamedTuple):
    """A gather's ids split by owner: positions of the peer-owned and the other ids, the
    distinct peer ids to send grouped by owner (``send_ids``, ``send_counts`` per rank), and
    where each peer position's row lands among them (``where[inverse]``)."""

    peer_pos: np.ndarray
    local_pos: np.ndarray
    send_ids: np.ndarray
    send_counts: np.ndarray
    where: np.ndarray
    inverse: np.ndarray


def _split(arr: np.ndarray, o: Any, me: int, world: int, distinct: bool) -> _Split:
    """Splits ids ``arr`` by ``o``'s owners (no ownership, ``o`` None: every id stays local):
    the peer-owned ones deduplicated (unless ``distinct``) and grouped by owner."""
    n = arr.shape[0]
    if o is not None:
        own = o.owner[arr]
        peer = (own >= 0) & (own != me)
    else:
        peer = np.zeros(n, dtype=bool)
    peer_pos = np.flatnonzero(peer)
    local_pos = np.flatnonzero(~peer)
    if distinct:
        uniq, inverse = arr[peer_pos], np.arange(peer_pos.size)
        uowner = own[peer_pos].astype(np.int64) if o is not None else np.empty(0, dtype=np.int64)
    else:
        uniq, inverse = np.unique(arr[peer_pos], return_inverse=True)
        uowner = o.owner[uniq].astype(np.int64) if uniq.size else np.empty(0, dtype=np.int64)
    order = np.argsort(uowner, kind="stable")
    where = np.empty(order.shape[0], dtype=np.int64)
    where[order] = np.arange(order.shape[0])  # unique id j is send_ids[where[j]]
    return _Split(peer_pos, local_pos, uniq[order], np.bincount(uowner, minlength=world).astype(np.int64), where, inverse)


def _assemble(sp: _Split, n: int, rb: int, recv_rows: Any, local_rows: Any, rows_for_every_id: bool, out_dev: Any) -> Any:
    """The gather's rows in the order of its ``n`` ids: the local rows (for every id when
    ``rows_for_every_id``, the peer ones then overwritten) and the peer rows received. On a GPU
    the positions go up in one copy from pinned memory (a pageable copy would block this thread
    until the stream's earlier work ends)."""
    torch = _torch()
    dev = torch.device(out_dev or "cpu")
    positions = _to_device(np.concatenate([sp.local_pos, sp.peer_pos, sp.where[sp.inverse]]), dev)
    lp, pp, take = positions[: sp.local_pos.size], positions[sp.local_pos.size : n], positions[n:]
    if local_rows is not None and rows_for_every_id:  # a row for every id: the peer rows go in place
        result = local_rows.reshape(n, -1).view(torch.uint8).to(dev)
    else:
        result = torch.empty((n, rb), dtype=torch.uint8, device=dev)
    if local_rows is not None and not rows_for_every_id:
        result[lp] = local_rows.reshape(sp.local_pos.size, -1).view(torch.uint8).to(dev)
    if sp.peer_pos.size:
        result[pp] = recv_rows[take.to(recv_rows.device)].to(result.device)
    return result


class PeerExchange:
    """The exchange of one rank's :class:`tierfs.DistributedStore` ``store`` over ``group``
    (``rank`` of ``world`` ranks, collectives waited at most ``timeout`` seconds, exchanged
    tensors on ``xdevice``). :meth:`gather` is an exchanged gather as two steps, which
    :meth:`now` or :meth:`in_turn` run: the second under :attr:`lock`, one exchange at a time.
    After a collective failed (:attr:`failed`, the message) every exchange raises PeerError."""

    def __init__(self, store: Any, group: Any, rank: int, world: int, timeout: float, xdevice: Any) -> None:
        self._store = store
        self.group, self.rank, self.world, self.timeout, self.xdevice = group, rank, world, timeout, xdevice
        self.lock = threading.Lock()
        self.failed: Optional[str] = None
        self.seq = 0

    def check(self) -> None:
        """Raises PeerError once an exchange failed (the store is unusable since)."""
        if self.failed is not None:
            raise errors.PeerError(f"{self.failed} (the store is unusable since; restart the job)")

    def fail(self, what: str, exc: BaseException) -> errors.PeerError:
        peers = [r for r in range(self.world) if r != self.rank]
        who = f"rank {peers[0]}" if len(peers) == 1 else f"one of ranks {peers}"
        msg = (
            f"tierfs: rank {self.rank}: peer exchange of gather #{self.seq} failed at {what}: {who} died, stopped calling "
            f"gather, or failed, within the process group timeout ({self.timeout:.0f} s): {type(exc).__name__}: {exc}"
        )
        self.failed = msg
        return errors.PeerError(msg)

    def collective(self, what: str, start: Any) -> None:
        """Runs start() (a collective with async_op=True) and waits for it, at most the group's
        timeout; a failure becomes PeerError."""
        try:
            start().wait(datetime.timedelta(seconds=self.timeout))
        except errors.Error:
            raise
        except Exception as e:  # gloo/NCCL errors: RuntimeError, DistBackendError, TimeoutError
            raise self.fail(what, e) from e

    def gather(self, ids: IdsLike, out: Any, node_type: Optional[str],
               local_gather: Optional[Callable[[np.ndarray, str], tuple]] = None,
               distinct: bool = False) -> Generator[None, None, Any]:
        """The exchanged gather (see :meth:`tierfs.DistributedStore.gather`) as a generator of
        two steps, run by :meth:`now` or :meth:`in_turn`: the first (up to its one ``yield``)
        splits the ids and starts the local gather (this rank's rows: its disk reads) on a
        worker thread, without the exchange lock; the second, under the lock and in the ranks'
        common order, runs the collectives, waits for the local rows and assembles the result
        (the generator's return value). So a batch's disk reads start while earlier batches
        exchange. ``local_gather(ids, node_type)``, when
        given, gathers this rank's part instead of this rank's store: it gets every id of the
        batch and returns ``(rows, CUDA event after them or None)`` with a row for every id, the
        peer-owned ones' left for the exchange to fill (a planned batch: :class:`PlannedEpochs`
        with the peer-owned rows served elsewhere). ``distinct``: the caller knows the ids are
        distinct (a sample's nodes), so the split does not deduplicate them (a sort of the peer
        ids, the largest host cost of the exchange)."""
        torch = _torch()
        self.check()
        t0 = time.perf_counter()
        ids_ = _ids(ids)
        arr = ids_.array
        bad: Optional[BaseException] = None
        o: Optional[Any] = None
        try:
            o = self._store._ownership(node_type)
            self._store._check_range(arr, o)
        except errors.Error as e:
            bad = e
        sp = _split(arr, o if bad is None else None, self.rank, self.world, distinct)

        # The local rows, on a worker thread while the exchange runs.
        out_dev = self._store._out_device(ids_)
        local = None
        if bad is None and sp.local_pos.size:
            if local_gather is None:
                local = self._store._pool.submit(self._store._local_gather, torch.from_numpy(arr[sp.local_pos]), o.node_type)
            else:
                local = self._store._pool.submit(local_gather, arr, o.node_type)
        t_split = time.perf_counter()
        yield  # the rest under the exchange lock, in turn
        if self.failed is not None:
            if local is not None:
                local.result()
            self.check()
        self.seq += 1
        t_turn = time.perf_counter()
        recv_rows, served, times = self._swap(sp, bad, o, local)
        t_x = time.perf_counter()
        local_rows = None
        if local is not None:
            local_rows, event = local.result()
            if event is not None:  # rows made on the worker thread's stream, used on this one
                here = torch.cuda.current_stream(local_rows.device)
                here.wait_event(event)
                local_rows.record_stream(here)
        t_local = time.perf_counter()
        result = _assemble(sp, arr.shape[0], o.row_bytes, recv_rows, local_rows, local_gather is not None, out_dev)
        t_counts, t_ids, t_serve = times
        rb = o.row_bytes
        self._store._count(o, batches=1, ids=arr.shape[0], local_rows=int(sp.local_pos.size), peer_rows=int(sp.peer_pos.size),
                           peer_unique_rows=int(sp.send_ids.size), peer_bytes_received=int(sp.send_ids.size) * rb,
                           peer_rows_served=served, peer_bytes_sent=served * rb,
                           exchange_s=(t_split - t0) + (t_x - t_turn), local_s=time.perf_counter() - t0, split_s=t_split - t0,
                           counts_s=t_counts - t_turn, ids_s=t_ids - t_counts, serve_s=t_serve - t_ids, rows_s=t_x - t_serve,
                           local_wait_s=t_local - t_x, assemble_s=time.perf_counter() - t_local)
        return self.finish(result, ids_, out_dev, out, o)

    def _swap(self, sp: "_Split", bad: Optional[BaseException], o: Any, local: Any) -> tuple:
        """The collectives of one exchanged gather, under the lock: every rank's request counts
        (1), then, when anything moves, the ids to their owners (2), the rows asked of this rank
        served (3) and sent back (4). Returns the rows received (in ``sp.send_ids`` order), the
        rows served and the times after steps 1, 2 and 3."""
        torch, dist = _torch(), _dist()
        w, me, xdev = self.world, self.rank, self.xdevice
        # 1. Everyone's request counts, whether its ids were good and the node type it gathers,
        # so every rank knows what moves and all ranks skip the rest alike when nothing does.
        mine = _to_device(np.append(sp.send_counts, [1 if bad is not None else 0, o.index if o is not None else -1]), xdev)
        table = torch.empty(w * (w + 2), dtype=torch.int64, device=xdev)
        self.collective("the request counts", lambda: dist.all_gather_into_tensor(table, mine, group=self.group, async_op=True))
        table_h = table.cpu().numpy().reshape(w, w + 2)
        t_counts = t_ids = t_serve = time.perf_counter()
        self._refuse_skipped(table_h, bad, o, local)
        recv_counts = table_h[:, me]  # ids each rank asks of me
        rb = o.row_bytes
        recv_rows = torch.empty((int(sp.send_counts.sum()), rb), dtype=torch.uint8, device=xdev)
        served = 0
        if table_h[:, :w].sum():
            # 2. The ids, each rank's to its owners.
            asked = torch.empty(int(recv_counts.sum()), dtype=torch.int64, device=xdev)
            send = _to_device(sp.send_ids, xdev)
            self.collective("the ids", lambda: dist.all_to_all_single(
                asked, send, recv_counts.tolist(), sp.send_counts.tolist(), group=self.group, async_op=True))
            t_ids = time.perf_counter()
            # 3. The rows asked of me (my owner tier holds them), 4. back to who asked.
            served = int(asked.shape[0])
            rows = Store.gather(self._store, asked, node_type=o.node_type) if served else None  # CUDA ids on NCCL: split on the GPU
            rows_u8 = rows.reshape(served, -1).view(torch.uint8) if rows is not None else torch.empty((0, rb), dtype=torch.uint8)
            rows_x = rows_u8.to(xdev)
            t_serve = time.perf_counter()
            self.collective("the rows", lambda: dist.all_to_all_single(
                recv_rows, rows_x, sp.send_counts.tolist(), recv_counts.tolist(), group=self.group, async_op=True))
        return recv_rows, served, (t_counts, t_ids, t_serve)

    def _refuse_skipped(self, table_h: np.ndarray, bad: Optional[BaseException], o: Any, local: Any) -> None:
        """Raises, on every rank alike, when a rank's ids were bad (that rank raises its own
        error) or the ranks gathered different node types; the local gather is waited first."""
        w, me = self.world, self.rank
        failed = np.flatnonzero(table_h[:, w])
        mixed = np.flatnonzero(table_h[:, w + 1] != table_h[me, w + 1])
        if not (failed.size or mixed.size):
            return
        if local is not None:
            local.result()
        if bad is not None:
            raise bad
        if failed.size:
            raise errors.PeerError(
                f"tierfs: rank {me}: gather #{self.seq} skipped: rank {int(failed[0])}'s ids for it were bad (its error says which)"
            )
        names = list(self._store.types["node_types"])
        r = int(mixed[0])
        raise errors.PeerError(
            f"tierfs: rank {me}: gather #{self.seq} skipped: rank {r} gathered node type {names[int(table_h[r, w + 1])]!r} in it, "
            f"this rank {o.node_type!r}; every rank must gather the same node types in the same order"
        )

    def now(self, start: Callable[[], Generator[None, None, Any]]) -> Any:
        """Runs the exchanged gather ``start()`` (:meth:`gather`): its split and local
        gather at once, its exchange under the lock."""
        steps = start()
        next(steps)
        with self.lock:
            return _last_step(steps)

    def in_turn(self, turn: _Turnstile, i: int, starts: Dict[Any, Callable[[], Generator[None, None, Any]]]) -> Dict[Any, Any]:
        """Runs the exchanged gathers ``starts`` (:meth:`gather`) as batch ``i`` of a
        loader epoch: every split and local gather at once, then, after batch ``i - 1`` of the
        epoch exchanged (any thread), the exchanges under the lock in the dict's order; returns
        their results by key."""
        steps: Dict[Any, Any] = {}
        early: Optional[BaseException] = None
        try:
            for k, start in starts.items():
                steps[k] = start()
                next(steps[k])
        except BaseException as e:  # raised in turn, as the exchange's own errors are
            early = e
        turn.wait(i)
        try:
            if early is not None:
                raise early
            with self.lock:
                return {k: _last_step(s) for k, s in steps.items()}
        finally:
            turn.done(i)

    def finish(self, raw: Any, ids_: Any, out_dev: Any, out: Any, o: Any) -> Any:
        """raw (n, row_bytes) uint8 rows as Store.gather returns them (kind, dtype, shape, out)."""
        torch = _torch()
        shape = (o.dim,) if ids_.scalar else (raw.shape[0], o.dim)
        np_dtype = _NUMPY_DTYPES[o.dtype_name]
        if out_dev is None:  # numpy
            result = raw.numpy().view(np_dtype).reshape(shape)
        else:
            result = raw.view(getattr(torch, o.dtype_name)).reshape(shape)
        if out is None:
            return result
        self._store._check_out(out, shape, np_dtype, o.dtype_name)
        if isinstance(out, np.ndarray):
            out[...] = result if isinstance(result, np.ndarray) else result.cpu().numpy()
        else:
            out.copy_(torch.as_tensor(result) if isinstance(result, np.ndarray) else result)
        return out


def _last_step(steps: Generator[None, None, Any]) -> Any:
    """Runs an exchanged gather's second step (:meth:`PeerExchange.gather`) and returns its result."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    raise AssertionError("an exchanged gather yields once")


def _to_device(a: np.ndarray, device: Any) -> Any:
    """The int64 numpy array a as a tensor on device, copied there from pinned memory without
    blocking the calling thread (ordered on the current stream)."""
    t = _torch().from_numpy(np.ascontiguousarray(a, dtype=np.int64))
    if device.type != "cuda":
        return t
    return t.pin_memory().to(device, non_blocking=True)
