"""The plans of :class:`tierfs.Loader` and :class:`tierfs.pyg.LinkNeighborLoader`
``(planned_epochs=K)``: rounds of K epochs, the next round planned on a background thread while
the current one trains (docs/planned.md, "Planning while training").

Round r covers the training epochs ``[F, F + n)`` (``store.plan_epochs(first_epoch=F)``; n is K,
or fewer where the disk budget stops the core). Round 0 is planned when it is first needed, and
training waits for it; every later round is planned while the round before it trains, so a run
waits for planning once unless planning is slower than training. At most two plans exist on
disk: the round serving and the round being planned. A round is retired at the next round
boundary (when training asks for its first epoch after the round's last): its plan closed and its
directory removed by the planner thread, before it plans the round after, so training does not
wait for the removal (gigabytes of files: seconds on some disks).

With ``reuse=True`` there is one round: planned once and served for every epoch (epoch e replays
planned epoch ``e mod K``), in ``plan_dir`` itself so that a later run reuses it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import _native, errors

__all__ = ["PlanRounds", "per_plan_budget"]

# make(first_epoch, plan_dir or None, place_tiers) -> an open tierfs.PlannedEpochs
MakePlan = Callable[[int, Optional[str], bool], Any]

# A round's record keeps these of its plan's report (the core's EpochPlanReport): where planning's
# time went (seconds in all; sampling, reading rows, writing, summed over the planner's goroutines;
# the placement pass of place_tiers, round 0 only: its seconds, its sampling, the tiers' refill)
# and what it wrote.
_REPORT_KEYS = ("seconds", "sample_seconds", "read_seconds", "write_seconds", "place_seconds",
                "place_sample_seconds", "fill_seconds", "rows_packed", "sample_bytes", "bytes_written")


def per_plan_budget(disk_budget: Optional[int], reuse: bool) -> Optional[int]:
    """Each round's share of a loader's ``plan_disk_budget`` (None: none): two plans are on disk
    at once (the one serving, the next), one when reused."""
    if not disk_budget:
        return None
    return disk_budget if reuse else max(1, disk_budget // 2)


@dataclass
class _Round:
    first_epoch: int
    dir: Optional[str]  # None: the plan's own temporary directory (removed by its close)
    remove_dir: bool  # this module made dir, so it removes it
    plan: Any = None
    error: Optional[BaseException] = None
    plan_s: float = 0.0
    wait_s: float = 0.0
    waited: bool = False  # training asked for the round before it was planned
    done: threading.Event = field(default_factory=threading.Event)

    def end(self) -> int:
        return self.first_epoch + (self.plan.planned if self.plan is not None else 0)

    def record(self) -> Dict[str, Any]:
        report = self.plan.report if self.plan is not None else None
        return {"first_epoch": self.first_epoch, "epochs": self.plan.planned if self.plan is not None else 0,
                "dir": self.plan.plan_dir if self.plan is not None else self.dir,
                "plan_s": self.plan_s, "wait_s": self.wait_s, "waited": self.waited,
                "report": None if report is None else {k: report.get(k, 0) for k in _REPORT_KEYS}}


def _plan_round(make: MakePlan, r: _Round, stop: threading.Event, place_tiers: bool, retired: Optional["_Round"] = None) -> None:
    """Retires round ``retired`` (None: none), then plans round r (on any thread); records the
    plan or the error and sets r.done."""
    t = time.perf_counter()
    try:
        _retire(retired)
        t = time.perf_counter()  # plan_s is the planning, not the removal before it
        if not stop.is_set():
            r.plan = make(r.first_epoch, r.dir, place_tiers)
    except BaseException as e:  # raised in the training thread at the round boundary
        # Without its traceback, whose frames hold make and with it the loader: the finalizer
        # keeps r alive, and the loader must stay collectable.
        r.error = e.with_traceback(None)
    finally:
        r.plan_s = time.perf_counter() - t
        r.done.set()


def _retire(r: Optional[_Round]) -> None:
    """Closes round r's plan and removes its directory (waiting for a planner still at it,
    which it cancels)."""
    if r is None:
        return
    while not r.done.wait(0.05):
        if r.dir is not None and not _native._forked:
            _native.lib.tfs_epochs_cancel(os.fsencode(r.dir), None)
    if r.plan is not None:
        r.plan.close()
    if r.remove_dir and r.dir is not None and not _native._forked:
        shutil.rmtree(r.dir, ignore_errors=True)


class _State:
    """What the planning thread and the finalizer share (never the PlanRounds itself)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.current: Optional[_Round] = None
        self.next: Optional[_Round] = None
        self.thread: Optional[threading.Thread] = None

    def close(self) -> None:
        self.stop.set()
        for r in (self.next, self.current):
            _retire(r)
        self.next = self.current = None


class PlanRounds:
    """Rounds of ``epochs`` planned epochs for a loader; see the module doc. ``make`` opens one
    plan: ``make(first_epoch, plan_dir, place_tiers)``. Round 0 starts at ``first_epoch`` and
    is planned now; it alone places the memory tiers (``place_tiers``), later rounds are planned
    against the same tiers (a Place under a serving plan would make it stale). ``where`` (the
    loader's name) begins its errors."""

    def __init__(self, make: MakePlan, epochs: int, first_epoch: int, plan_dir: Optional[str], reuse: bool,
                 where: str = "tierfs.Loader") -> None:
        self._make, self.epochs, self.reuse, self._root, self._where = make, int(epochs), bool(reuse), plan_dir, where
        self._st = _State()
        self._rounds: List[_Round] = []
        self._finalizer = weakref.finalize(self, self._st.close)
        self._st.current = self._plan_now(0 if reuse else first_epoch)
        if not reuse:
            self._start_next(self._st.current.end())

    @property
    def plan(self) -> Any:
        """The plan serving now (None after close)."""
        cur = self._st.current
        return cur.plan if cur is not None else None

    def _new_round(self, first: int) -> _Round:
        if self.reuse:
            r = _Round(first, self._root, remove_dir=False)
        elif self._root is None:
            r = _Round(first, tempfile.mkdtemp(prefix=f"tierfs-plan-epoch{first}-"), remove_dir=True)
        else:
            r = _Round(first, os.path.join(self._root, f"epochs-from-{first}"), remove_dir=True)
        self._rounds.append(r)
        return r

    def _plan_now(self, first: int) -> _Round:
        """Plans the round from epoch ``first`` in this thread (training waits for all of it)."""
        r = self._new_round(first)
        _plan_round(self._make, r, self._st.stop, not self._rounds[:-1])
        r.wait_s, r.waited = r.plan_s, True
        self._raise_if_failed(r)
        return r

    def _raise_if_failed(self, r: _Round) -> None:
        if r.error is None:
            return
        _retire(r)
        e = r.error
        where = r.dir if r.dir is not None else "a temporary directory"
        msg = f"{self._where}: planning epochs {r.first_epoch} to {r.first_epoch + self.epochs - 1} into {where} failed: {e}"
        try:  # the same class (and status), the message naming the round
            err = type(e)(msg, e.status) if isinstance(e, errors.Error) else type(e)(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err from e

    def _start_next(self, first: int, retired: Optional[_Round] = None) -> None:
        """Plans the round from epoch ``first`` on the planner thread, after retiring round
        ``retired`` there."""
        r = self._new_round(first)
        st = self._st
        st.next = r
        st.thread = threading.Thread(target=_plan_round, args=(self._make, r, st.stop, False, retired), name="tierfs-planner", daemon=True)
        st.thread.start()

    def plan_for(self, epoch: int) -> Any:
        """The plan serving ``epoch``: at a round boundary the next round (planned meanwhile;
        waited for if not yet done) serves, and the planner thread retires the finished round
        (closes its plan, removes its directory) and then plans the round after. Raises what
        planning the round raised, naming its directory."""
        st = self._st
        if st.stop.is_set():
            raise errors.ClosedError(f"{self._where}: the loader is closed")
        cur = st.current
        if self.reuse:
            return cur.plan
        if cur is not None and cur.first_epoch <= epoch < cur.end():
            return cur.plan
        st.current = None  # cur is retired by the thread that plans the round after nxt
        nxt, st.next = st.next, None
        if nxt is not None and nxt.first_epoch != epoch:  # the loader jumped epochs: plan anew
            _retire(nxt)
            nxt = None
        if nxt is None:
            _retire(cur)
            cur = None
            nxt = self._plan_now(epoch)
        else:
            nxt.waited = not nxt.done.is_set()
            t = time.perf_counter()
            nxt.done.wait()
            nxt.wait_s = time.perf_counter() - t
            if nxt.error is not None:
                _retire(cur)
                self._raise_if_failed(nxt)
        st.current = nxt
        self._start_next(nxt.end(), retired=cur)
        return nxt.plan

    def stats(self, next_epoch: int) -> Dict[str, Any]:
        """Per round: first epoch, epochs, directory, planning seconds, seconds training waited
        for it and whether it did, and ``report``: its plan's report's breakdown (``seconds``,
        ``sample_seconds``, ``read_seconds``, ``write_seconds``, ``place_seconds``,
        ``place_sample_seconds``, ``fill_seconds``, ``rows_packed``, ``sample_bytes``,
        ``bytes_written``; None for a plan reused from ``plan_dir``); ``waits`` (rounds training waited for), ``wait_s`` (their
        total), ``ahead`` (epochs planned and not yet started, from ``next_epoch``) and
        ``planning`` (a round is being planned now)."""
        st = self._st
        ahead = 0
        if st.current is not None:
            ahead += max(0, st.current.end() - max(next_epoch, st.current.first_epoch)) if not self.reuse else 0
        nxt = st.next
        if nxt is not None and nxt.done.is_set() and nxt.plan is not None:
            ahead += nxt.plan.planned
        return {
            "epochs_per_plan": self.epochs,
            "reuse_samples": self.reuse,
            "rounds": [r.record() for r in self._rounds],
            "waits": sum(r.waited for r in self._rounds),
            "wait_s": sum(r.wait_s for r in self._rounds),
            "ahead": ahead,
            "planning": nxt is not None and not nxt.done.is_set(),
        }

    def close(self) -> None:
        """Stops the planner (cancelling a round being planned), closes the plans and removes
        the directories this module made."""
        self._finalizer()
