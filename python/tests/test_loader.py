"""tierfs.Loader and tierfs.prefetch: order, contents, exceptions, shutdown, overlap."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
import torch

import tierfs
from tierfs.loader import _auto_decide

from conftest import SEED


def loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith(("tierfs-loader", "tierfs-prefetch")) and t.is_alive()]


def wait_no_threads(timeout=5.0):
    deadline = time.monotonic() + timeout
    while loader_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not loader_threads()


def test_order_and_contents(store, graph):
    seeds = graph["splits"]["train"]
    loader = tierfs.Loader(store, store.sampler([4, 3], seed=9), seeds, batch_size=100, shuffle=False, prefetch=3)
    ref_sampler = store.sampler([4, 3], seed=9)
    batches = list(loader)
    assert len(batches) == len(loader) == 12
    for i, b in enumerate(batches):
        want_seeds = seeds[i * 100 : (i + 1) * 100]
        np.testing.assert_array_equal(b.seeds, want_seeds)
        ref = ref_sampler.sample(want_seeds)  # the same call sequence: batches in order
        np.testing.assert_array_equal(b.sample.nodes, ref.nodes)
        np.testing.assert_array_equal(b.sample.row, ref.row)
        np.testing.assert_array_equal(b.x, graph["x"][b.sample.nodes])
        np.testing.assert_array_equal(b.y, graph["y"][want_seeds])
        assert b.batch_size == len(want_seeds)
    assert wait_no_threads()


def test_split_name_seeds(store, graph):
    """A split name stands for its ids, as PyG's loaders take input_nodes="train"; an unknown one
    is a KeyNotFoundError naming the splits there are (issue 42)."""
    a = tierfs.Loader(store, store.sampler([2], seed=3), "train", batch_size=256, shuffle=False)
    b = tierfs.Loader(store, store.sampler([2], seed=3), graph["splits"]["train"], batch_size=256, shuffle=False)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.seeds, y.seeds)
        np.testing.assert_array_equal(x.sample.nodes, y.sample.nodes)
    with pytest.raises(tierfs.KeyNotFoundError, match="training"):
        tierfs.Loader(store, store.sampler([2]), "training", batch_size=256)


def test_shuffle_epochs_drop_last(store, graph):
    seeds = np.arange(250)
    loader = tierfs.Loader(store, store.sampler([2]), seeds, batch_size=64, shuffle=True, drop_last=True, seed=1)
    assert len(loader) == 3
    e0 = np.concatenate([b.seeds for b in loader])
    e1 = np.concatenate([b.seeds for b in loader])
    assert len(e0) == 192 and len(np.unique(e0)) == 192 and np.isin(e0, seeds).all()
    assert not np.array_equal(e0, e1)  # a new order each epoch
    again = tierfs.Loader(store, store.sampler([2]), seeds, batch_size=64, shuffle=True, drop_last=True, seed=1)
    np.testing.assert_array_equal(np.concatenate([b.seeds for b in again]), e0)  # same seed, same order
    full = tierfs.Loader(store, store.sampler([2]), seeds, batch_size=64, shuffle=False)
    assert [b.batch_size for b in full] == [64, 64, 64, 58]


def test_torch_seeds(store, graph):
    loader = tierfs.Loader(store, store.sampler([3]), torch.arange(100), batch_size=50)
    for b in loader:
        assert isinstance(b.x, torch.Tensor) and isinstance(b.y, torch.Tensor) and isinstance(b.sample.row, torch.Tensor)
        np.testing.assert_array_equal(b.x.numpy(), graph["x"][b.sample.nodes.numpy()])


class FailingSampler:
    """Wraps a sampler; raises on call number `fail_at`."""

    def __init__(self, inner, fail_at, delay=0.0):
        self.inner, self.fail_at, self.delay, self.calls = inner, fail_at, delay, 0

    def sample(self, seeds):
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.calls - 1 == self.fail_at:
            raise RuntimeError(f"boom at batch {self.fail_at}")
        return self.inner.sample(seeds)


def test_exception_reraised_in_order(store):
    sampler = FailingSampler(store.sampler([2]), fail_at=3)
    got = []
    with pytest.raises(RuntimeError, match="boom at batch 3"):
        for b in tierfs.Loader(store, sampler, np.arange(1000), batch_size=100, shuffle=False):
            got.append(int(b.seeds[0]))
    assert got == [0, 100, 200]
    assert wait_no_threads()


def test_core_error_reraised(store, graph):
    seeds = np.arange(300)
    seeds[250] = graph["n"] + 5  # out of range in batch 2
    it = iter(tierfs.Loader(store, store.sampler([2]), seeds, batch_size=100, shuffle=False))
    next(it), next(it)
    with pytest.raises(tierfs.OutOfRangeError):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_break_stops_thread(store):
    slow = FailingSampler(store.sampler([2]), fail_at=-1, delay=0.02)
    loader = tierfs.Loader(store, slow, np.arange(2000), batch_size=10, prefetch=2)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    gc.collect()
    assert wait_no_threads(), "the loader thread outlived the loop"
    assert slow.calls < 10  # it stopped instead of running through the 200 batches


def test_prefetch_runs_ahead(store):
    calls = []

    class Recording:
        def __init__(self, inner):
            self.inner = inner

        def sample(self, seeds):
            calls.append(time.monotonic())
            return self.inner.sample(seeds)

    loader = tierfs.Loader(store, Recording(store.sampler([2])), np.arange(1000), batch_size=100, prefetch=3)
    it = iter(loader)
    next(it)
    time.sleep(0.3)  # "training" on batch 0
    assert len(calls) >= 4, f"only {len(calls)} batches were made while the caller trained"
    it.close()
    assert wait_no_threads()


def test_prefetch_generic():
    assert list(tierfs.prefetch(iter(range(100)), depth=4)) == list(range(100))

    def gen():
        yield 1
        raise KeyError("x")

    it = tierfs.prefetch(gen())
    assert next(it) == 1
    with pytest.raises(KeyError):
        next(it)


def test_auto_stays_on_demand_where_planning_cannot_pay(graph):
    """planned_epochs="auto" decides at once: a memory tier holds every row, or shuffle=False."""
    with tierfs.open(graph["path"], host_cache="16MiB") as store:
        loader = tierfs.Loader(store, store.sampler([3]), graph["splits"]["train"], batch_size=200, planned_epochs="auto")
        for _ in range(2):
            assert sum(1 for _ in loader) == len(loader)
        auto = loader.stats()["auto"]
        assert auto["decided"] and auto["path"] == "on demand" and "every row" in auto["why"], auto
        assert loader.plan is None
    with tierfs.open(graph["path"], host_cache="64KiB") as store:
        loader = tierfs.Loader(store, store.sampler([3]), graph["splits"]["train"], batch_size=200, shuffle=False, planned_epochs="auto")
        list(loader)
        assert "shuffle=False" in loader.stats()["auto"]["why"] and loader.plan is None


@pytest.mark.parametrize("bad", ["yes", 1.5, True, None])
def test_planned_epochs_bad_value(store, bad):
    with pytest.raises(ValueError, match=f"planned_epochs {bad!r} must be"):
        tierfs.Loader(store, store.sampler([3]), np.arange(10), batch_size=4, planned_epochs=bad)


def epoch_stats(bound, wall=2.0, batches=10):
    return {"bound": bound, "bound_why": f"because {bound}", "wall_s": wall, "batches": batches}


def test_auto_rule():
    """The rule of planned_epochs="auto", step by step: an on-demand epoch not bound by the disk
    decides on demand; one bound by the disk tries a plan, which is kept only if it ran a batch
    faster."""
    a = {"path": "on demand", "decided": False}
    assert _auto_decide(a, epoch_stats("gather"), planned=False, epoch=1) == "keep"
    assert a["decided"] and a["path"] == "on demand" and "bound by gather" in a["why"]
    for planned_wall, action, path in ((1.0, "keep", "planned"), (2.0, "drop", "on demand"), (3.0, "drop", "on demand")):
        a = {"path": "on demand", "decided": False}
        assert _auto_decide(a, epoch_stats("disk"), planned=False, epoch=1) == "plan"
        assert not a["decided"] and a["path"] == "planned" and "because disk" in a["why"]
        assert _auto_decide(a, epoch_stats("disk", wall=planned_wall), planned=True, epoch=2) == action
        assert a["decided"] and a["path"] == path, (planned_wall, a)
        assert a["on_demand_batch_s"] == 0.2 and a["planned_batch_s"] == planned_wall / 10


def test_auto_plans_rounds_within_the_disk_budget(graph, tmp_path, monkeypatch):
    """Where epoch 0 on demand was bound by the disk, "auto" plans rounds of 4 epochs (as many as
    the budget holds); a budget that holds no planned epoch leaves it on demand, saying why."""
    import tierfs.loader as loader_mod

    real = loader_mod.pipeline_stats

    def disk_bound(run):
        st = real(run)
        return dict(st, bound="disk", bound_why="the test says so")

    monkeypatch.setattr(loader_mod, "pipeline_stats", disk_bound)
    seeds = graph["splits"]["train"]
    with tierfs.open(graph["path"], host_cache="64KiB") as store:
        loader = tierfs.Loader(store, store.sampler([4, 3], seed=SEED % 1000), seeds, batch_size=100, seed=SEED,
                               planned_epochs="auto", plan_dir=str(tmp_path / "plans"))
        for epoch in range(2):
            got = list(loader)
            np.testing.assert_array_equal(np.sort(np.concatenate([b.seeds for b in got])), np.sort(seeds))
        plans = loader.stats()["plans"]
        assert loader.plan is not None and plans["epochs_per_plan"] == 4, plans
        first = plans["rounds"][0]
        assert first["first_epoch"] == 1 and first["epochs"] == 4, first
        loader.close()

        tiny = tierfs.Loader(store, store.sampler([4, 3], seed=SEED % 1000), seeds, batch_size=100, seed=SEED,
                             planned_epochs="auto", plan_disk_budget="8KiB")
        for _ in range(2):
            assert sum(1 for _ in tiny) == len(tiny)
        auto = tiny.stats()["auto"]
        assert auto["decided"] and auto["path"] == "on demand" and "disk budget" in auto["why"], auto
        assert tiny.plan is None
        tiny.close()


def test_auto_runs_the_path_it_chose(graph):
    """Out of core, "auto" measures epoch 0 on demand and then runs what it decided: every batch
    has the right rows, each epoch covers the seeds once, and a planned epoch serves the plan's
    samples (which path comes depends on this machine's timings: both are checked)."""
    seeds = graph["splits"]["train"]
    with tierfs.open(graph["path"], host_cache="64KiB") as store:
        loader = tierfs.Loader(store, store.sampler([4, 3], seed=SEED % 1000), seeds, batch_size=100, seed=SEED, planned_epochs="auto")
        assert loader.stats() == {}
        bounds = []
        for epoch in range(3):
            it = iter(loader)
            auto = loader.stats()["auto"] if epoch else None
            if epoch == 1:  # decided from epoch 0's bound
                assert (loader.plan is not None) == (bounds[0] == "disk") == (auto["path"] == "planned"), (bounds, auto)
            plan = loader.plan
            got = list(it)
            assert len(got) == len(loader)
            np.testing.assert_array_equal(np.sort(np.concatenate([b.seeds for b in got])), np.sort(seeds))
            for i, b in enumerate(got):
                np.testing.assert_array_equal(b.x, graph["x"][b.sample.nodes], err_msg=f"seed {SEED} epoch {epoch} batch {i}")
                if plan is not None:
                    np.testing.assert_array_equal(b.sample.nodes, plan.sample(epoch, i).nodes)
            st = loader.stats()
            bounds.append(st["bound"])
            assert st["bound_why"] and "auto" in st
        auto = loader.stats()["auto"]
        assert auto["decided"], auto
        assert (loader.plan is not None) == (auto["path"] == "planned")
        loader.close()
