"""Loader(planned_epochs=K) plans the next K epochs on a background thread while the current K
train (tierfs.planrounds): fresh orders and samples every epoch, one wait for planning, at most
two plans on disk, a clean stop on close."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tierfs

from conftest import SEED, rng
from test_planned_hetero import batch_sample_seed


def planner_threads():
    return [t for t in threading.enumerate() if t.name == "tierfs-planner" and t.is_alive()]


def train_step():
    time.sleep(0.03)  # the model's step: the planner of the next round runs meanwhile


@pytest.mark.parametrize("k, in_plan_dir", [(2, True), (2, False), (1, False)])
def test_rounds_plan_ahead_fresh_epochs(graph, tmp_path, k, in_plan_dir):
    r = rng(2701 + k)
    seed, shuffle = int(r.integers(1 << 30)), int(r.integers(1 << 30))
    print(f"test seed {SEED}, sampler seed {seed}, shuffle seed {shuffle}, K {k}")
    seeds = graph["splits"]["train"]
    store = tierfs.open(graph["path"], host_cache="64KiB")
    plain = tierfs.open(graph["path"])  # reference plans and gathers: its own tiers, never placed
    root = tmp_path / "plans"
    loader = tierfs.Loader(store, store.sampler([4, 3], seed=seed), seeds, batch_size=128, seed=shuffle, prefetch=2,
                           planned_epochs=k, plan_dir=str(root) if in_plan_dir else None)
    epochs = []
    for e in range(5):
        batches = []
        for b in loader:
            train_step()
            batches.append(b)
        assert loader.plan.first_epoch <= e < loader.plan.first_epoch + loader.plan.planned
        epochs.append(batches)
        order = np.concatenate([b.seeds for b in batches])
        np.testing.assert_array_equal(np.sort(order), np.sort(seeds), err_msg=f"epoch {e}")
        ref = plain.plan_epochs([4, 3], 128, 1, seeds=seeds, seed=seed, shuffle_seed=shuffle, first_epoch=e, place_tiers=False)
        assert ref.first_epoch == e
        for i, b in enumerate(batches):
            # Epoch e is exactly planned epoch e: the plan from first_epoch=e, a fresh draw with
            # BatchSampleSeed(seed, e, i), and the plain store's rows.
            np.testing.assert_array_equal(b.seeds, ref.seeds(e, i))
            want = ref.sample(e, i)
            np.testing.assert_array_equal(b.sample.nodes, want.nodes, err_msg=f"epoch {e} batch {i}")
            np.testing.assert_array_equal(b.sample.row, want.row)
            if k == 1:
                fresh = plain.sampler([4, 3], seed=batch_sample_seed(seed, e, i)).sample(b.seeds)
                np.testing.assert_array_equal(b.sample.nodes, fresh.nodes)
                np.testing.assert_array_equal(b.sample.col, fresh.col)
            np.testing.assert_array_equal(b.x, plain.gather(b.sample.nodes), err_msg=f"epoch {e} batch {i}")
            np.testing.assert_array_equal(b.x, graph["x"][b.sample.nodes])
            np.testing.assert_array_equal(b.y, graph["y"][b.seeds])
        ref.close()
    for e in range(1, 5):  # no epoch replays another, within a round or across
        for f in range(e):
            assert not np.array_equal(epochs[e][0].seeds, epochs[f][0].seeds), (f, e)
    plans = loader.stats()["plans"]
    print(plans)
    assert plans["waits"] == 1 and plans["rounds"][0]["waited"], plans
    assert all(not x["waited"] for x in plans["rounds"][1:]), plans
    assert plans["wait_s"] == pytest.approx(plans["rounds"][0]["wait_s"], abs=0.01) and plans["epochs_per_plan"] == k
    firsts = [x["first_epoch"] for x in plans["rounds"]]
    assert firsts == list(range(0, firsts[-1] + 1, k)) and firsts[-1] >= 5  # the round after epoch 4's is planned too
    assert plans["ahead"] >= 0 and plans["ahead"] + 5 <= firsts[-1] + k
    # Each planned round's report breaks its time down; round 0 alone placed the tiers.
    for i, x in enumerate(plans["rounds"]):
        rep = x["report"]
        if rep is None:  # the round being planned now
            assert plans["planning"] and i == len(plans["rounds"]) - 1, x
            continue
        assert all(rep[key] >= 0 for key in rep), rep
        assert rep["rows_packed"] > 0 and rep["sample_bytes"] > 0 and 0 < rep["sample_seconds"] + rep["place_sample_seconds"], rep
        assert 0 < rep["seconds"] <= x["plan_s"] + 0.01, (rep, x)
        if i == 0:
            assert 0 < rep["fill_seconds"] <= rep["place_seconds"] <= rep["seconds"] and rep["place_sample_seconds"] > 0, rep
        else:
            assert rep["place_seconds"] == rep["place_sample_seconds"] == rep["fill_seconds"] == 0, rep
    # Finished rounds' directories are gone (the planner thread removes the last one before it
    # plans the next round, so it may remain while planning); the serving one and the one
    # planned next remain.
    serving = loader.plan.first_epoch
    for x in plans["rounds"]:
        alive = x["first_epoch"] >= serving
        assert os.path.isdir(x["dir"]) == alive or plans["planning"], x
        assert in_plan_dir == (os.path.dirname(x["dir"]) == str(root))
    loader.close()
    assert not planner_threads()
    for x in plans["rounds"]:
        assert not os.path.exists(x["dir"]), x
    if in_plan_dir:
        assert os.listdir(root) == []
    with pytest.raises(tierfs.ClosedError):
        iter(loader)
    plain.close()
    store.close()


def test_round_boundary_does_not_wait_for_removal(graph, tmp_path, monkeypatch):
    """At a round boundary the finished round's directory is removed by the planner thread, not
    the training thread: with the removal held, the next epoch trains to its end; the round after
    is not planned until the removal is done (at most two plans on disk), then is."""
    import tierfs.planrounds as planrounds

    held, entered = threading.Event(), threading.Event()
    real_rmtree = planrounds.shutil.rmtree

    def slow_rmtree(path, *args, **kwargs):
        entered.set()
        assert held.wait(30), "the removal was never released"
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(planrounds.shutil, "rmtree", slow_rmtree)
    seeds = graph["splits"]["train"]
    store = tierfs.open(graph["path"], host_cache="64KiB")
    root = tmp_path / "plans"
    loader = tierfs.Loader(store, store.sampler([4, 3], seed=int(rng(2702).integers(1 << 30))), seeds, batch_size=128,
                           prefetch=2, planned_epochs=1, plan_dir=str(root))
    try:
        for _ in loader:  # epoch 0: round 0 serves, round 1 is planned meanwhile
            pass
        done = threading.Event()

        def epoch_one():
            for _ in loader:
                pass
            done.set()

        t = threading.Thread(target=epoch_one)
        t.start()
        assert entered.wait(30), "round 0 was not retired"
        # Epoch 1 trains to its end while round 0's removal is held.
        assert done.wait(30), "epoch 1 waited for the removal of round 0's directory"
        t.join()
        assert sorted(os.listdir(root)) == ["epochs-from-0", "epochs-from-1"]  # round 2 waits for the removal
        held.set()
        deadline = time.monotonic() + 30
        while loader.stats()["plans"]["planning"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(os.listdir(root)) == ["epochs-from-1", "epochs-from-2"]
    finally:
        held.set()
        loader.close()
        store.close()
    assert os.listdir(root) == []


def test_close_mid_round_stops_the_planner(graph, tmp_path):
    """close() while the next round is being planned cancels it and leaves no directory."""
    seeds = graph["splits"]["train"]
    store = tierfs.open(graph["path"], host_cache="64KiB")
    k = 40  # a round long enough to be planning when close comes
    loader = tierfs.Loader(store, store.sampler([4, 3], seed=SEED % 1000), seeds, batch_size=32, seed=SEED, prefetch=2,
                           planned_epochs=k, plan_dir=str(tmp_path / "plans"))
    round0_s = loader._rounds.stats(0)["rounds"][0]["plan_s"]
    it = iter(loader)
    next(it)
    plans = loader.stats()["plans"]
    rounds = loader._rounds
    t = time.perf_counter()
    loader.close()
    took = time.perf_counter() - t
    print(f"round 0 planned in {round0_s:.2f} s; close took {took:.3f} s, planning at close: {plans['planning']}")
    assert not planner_threads()
    assert os.listdir(tmp_path / "plans") == []
    nxt = rounds._rounds[1]
    assert nxt.done.is_set()
    if plans["planning"] and nxt.plan is None:  # cancelled, not waited for
        assert "cancel" in str(nxt.error).lower(), nxt.error
    assert list(it) == []  # the epoch's pipeline stopped with it
    store.close()


def test_planner_error_surfaces_at_the_round_boundary(graph, tmp_path):
    """A round whose planning fails raises in the training thread when its first epoch starts,
    naming its directory; the epochs before it train."""
    seeds = graph["splits"]["train"]
    root = tmp_path / "plans"
    root.mkdir()
    (root / "epochs-from-2").write_text("not a directory")  # round 1 cannot be planned there
    store = tierfs.open(graph["path"], host_cache="64KiB")
    loader = tierfs.Loader(store, store.sampler([3], seed=1), seeds, batch_size=200, planned_epochs=2, plan_dir=str(root))
    for _ in range(2):
        assert len(list(loader)) == len(loader)
    with pytest.raises(tierfs.Error) as e:
        iter(loader)
    assert str(root / "epochs-from-2") in str(e.value) and "epochs 2 to 3" in str(e.value)
    assert e.value.status != 0 and isinstance(e.value.__cause__, type(e.value))  # the core's error, its class and status kept
    assert not os.path.exists(root / "epochs-from-0")  # the finished round is removed all the same
    loader.close()
    store.close()


def test_reuse_samples_replays_one_plan(graph, tmp_path):
    """reuse_samples=True plans once, in plan_dir itself, and epoch e replays planned epoch e mod K."""
    seeds = graph["splits"]["train"]
    store = tierfs.open(graph["path"], host_cache="64KiB")
    loader = tierfs.Loader(store, store.sampler([3], seed=2), seeds, batch_size=200, planned_epochs=2, seed=4,
                           plan_dir=str(tmp_path / "plan"), reuse_samples=True)
    epochs = [[b.sample.nodes for b in loader] for _ in range(3)]
    for a, b in zip(epochs[0], epochs[2]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(epochs[0][0], epochs[1][0])
    plans = loader.stats()["plans"]
    assert plans["waits"] == 1 and len(plans["rounds"]) == 1 and plans["reuse_samples"] and not plans["planning"]
    assert not planner_threads()
    loader.close()
    assert os.path.exists(tmp_path / "plan" / "epochs.json")  # kept for a later run
    with pytest.raises(ValueError, match="reuse_samples"):
        tierfs.Loader(store, store.sampler([3]), seeds, batch_size=200, reuse_samples=True)
    store.close()


def test_interpreter_exit_stops_the_planner(graph, tmp_path):
    """A loader never closed, its planner at work when the interpreter exits: the exit cancels
    the planner and removes the rounds' directories (no hang, nothing left)."""
    np.save(tmp_path / "seeds.npy", graph["splits"]["train"])
    root = tmp_path / "plans"
    script = f"""
import numpy as np, tierfs
store = tierfs.open({graph["path"]!r}, host_cache="64KiB")
loader = tierfs.Loader(store, store.sampler([4, 3], seed=1), np.load({str(tmp_path / "seeds.npy")!r}), batch_size=32,
                       planned_epochs=40, plan_dir={str(root)!r})
next(iter(loader))
print("planning at exit:", loader.stats()["plans"]["planning"], flush=True)
"""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    print(out.stdout, out.stderr[-2000:], f"ran {time.perf_counter() - t:.1f} s")
    assert out.returncode == 0, out.stderr
    assert os.listdir(root) == []
