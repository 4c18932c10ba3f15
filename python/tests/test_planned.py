"""Planned epochs (store.plan_epochs, Loader(planned_epochs=K, reuse_samples=True)): replay, contents, bad inputs."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import tierfs

from conftest import rng


def edges_exist(graph, nodes, row, col):
    """Every sampled edge (row -> col, local ids) is an edge of the graph."""
    indptr, indices = graph["indptr"], graph["indices"]
    for r, c in zip(nodes[row], nodes[col]):
        if r not in indices[indptr[c] : indptr[c + 1]]:
            return False
    return True


@pytest.mark.parametrize("host_cache", [0, "64KiB", "64MiB"])
def test_planned_loader_replays_and_matches(graph, tmp_path, host_cache):
    r = rng(7)
    store = tierfs.open(graph["path"], host_cache=host_cache)
    seeds = graph["splits"]["train"]
    seed, shuffle = int(r.integers(1 << 30)), int(r.integers(1 << 30))
    loader = tierfs.Loader(store, store.sampler([4, 3], seed=seed), seeds, batch_size=128, seed=shuffle,
                           planned_epochs=2, plan_dir=str(tmp_path / "plan"), prefetch=2, reuse_samples=True)
    assert loader.plan.planned == 2 and loader.plan.report["planned"] == 2
    epochs = [list(loader) for _ in range(5)]
    for e, batches in enumerate(epochs):
        assert len(batches) == len(loader)
        order = np.concatenate([b.seeds for b in batches])
        np.testing.assert_array_equal(np.sort(order), np.sort(seeds))
        for b in batches:
            np.testing.assert_array_equal(b.x, graph["x"][b.sample.nodes])
            np.testing.assert_array_equal(b.y, graph["y"][b.seeds])
            np.testing.assert_array_equal(b.sample.nodes[: b.batch_size], b.seeds)
        for b, again in zip(batches, epochs[e % 2]):  # epoch e replays planned epoch e mod 2
            np.testing.assert_array_equal(b.sample.nodes, again.sample.nodes)
            np.testing.assert_array_equal(b.sample.row, again.sample.row)
    assert not np.array_equal(epochs[0][0].seeds, epochs[1][0].seeds)
    b = epochs[0][0]
    assert edges_exist(graph, b.sample.nodes, b.sample.row, b.sample.col)
    st = loader.plan.stats()
    assert st["batches"] == 5 * len(loader)
    if host_cache == "64MiB":
        assert st["rows"] == 0 and loader.plan.report["rows_packed"] == 0
    else:
        assert st["rows"] > 0
    # The same inputs reuse the plan; torch seeds give tensors.
    again = tierfs.Loader(store, store.sampler([4, 3], seed=seed), torch.from_numpy(seeds), batch_size=128,
                          seed=shuffle, planned_epochs=2, plan_dir=str(tmp_path / "plan"), reuse_samples=True)
    assert again.plan.report is None
    first = next(iter(again))
    assert torch.equal(first.sample.nodes, torch.from_numpy(epochs[0][0].sample.nodes))
    assert torch.equal(first.x, torch.from_numpy(epochs[0][0].x))
    loader.plan.close()
    again.plan.close()
    store.close()


def test_plan_errors(store, graph, tmp_path):
    seeds = graph["splits"]["train"]
    plan = store.plan_epochs([3], batch_size=100, epochs=1, seeds=seeds, plan_dir=tmp_path / "p", seed=3)
    plan.close()
    with pytest.raises(tierfs.InvalidArgumentError, match="fanouts"):
        store.plan_epochs([4], batch_size=100, epochs=1, seeds=seeds, plan_dir=tmp_path / "p", seed=3, replan=False)
    with pytest.raises(tierfs.InvalidArgumentError, match="sampler seed"):
        store.plan_epochs([3], batch_size=100, epochs=1, seeds=seeds, plan_dir=tmp_path / "p", seed=4, replan=False)
    with pytest.raises(tierfs.NotFoundError):
        store.plan_epochs([3], batch_size=100, epochs=1, seeds=seeds, plan_dir=tmp_path / "none", replan=False)
    with pytest.raises(ValueError, match="planned_epochs"):
        store.plan_epochs([3], batch_size=100, epochs=0, plan_dir=tmp_path / "q")
    with pytest.raises(ValueError, match="plan_disk_budget"):
        store.plan_epochs([3], batch_size=100, epochs=1, plan_dir=tmp_path / "q", disk_budget=4096)
    with pytest.raises(ValueError, match="planned_epochs"):
        tierfs.Loader(store, store.sampler([3]), seeds, batch_size=10, planned_epochs=-1)

    plan = store.plan_epochs([3], batch_size=100, epochs=1, seeds=seeds, plan_dir=tmp_path / "p", seed=3)
    nodes = plan.sample(0, 0).nodes
    for bad in (np.empty((len(nodes), store.dim), dtype=np.float64), np.empty((len(nodes) - 1, store.dim), dtype=store.dtype),
                np.empty((store.dim, len(nodes)), dtype=store.dtype).T):
        with pytest.raises((tierfs.InvalidArgumentError, tierfs.DTypeError)):
            plan.gather(0, 0, nodes, out=bad)
    path = tmp_path / "p" / "epoch-0000.packed"
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(tierfs.CorruptError, match="epoch 0 batch 0") as e:
        plan.load(0, 0)
    assert str(path) in str(e.value)
    plan.close()
    with pytest.raises(tierfs.ClosedError):
        plan.load(0, 0)


def test_default_plan_dir_is_removed_on_close(store, graph):
    plan = store.plan_epochs([3], batch_size=100, epochs=1, seeds=graph["splits"]["train"], seed=1)
    d = plan.info()["dir"]
    assert os.path.exists(os.path.join(d, "epochs.json"))
    plan.load(0, 0)
    plan.close()
    assert not os.path.exists(d)


PACKED_FAULT_CHILD = """
import sys, numpy as np, tierfs
path, plan, want = sys.argv[1], sys.argv[2], np.load(sys.argv[3])
store = tierfs.open(path)
p = store.plan_epochs([4, 3], 128, 2, plan_dir=plan, seed=3, shuffle_seed=5, replan=False)
outcomes = []
for e in range(2):
    for b in range(p.batches_per_epoch):
        try:
            seeds, sample, x = p.load(e, b)
            assert np.array_equal(x, want[sample.nodes]), "WRONG ROWS"
            outcomes.append("ok")
        except (tierfs.IOFailedError, tierfs.CorruptError) as err:
            assert "epoch-" in str(err) and f"epoch {e} batch {b}" in str(err), str(err)
            outcomes.append(type(err).__name__)
print(",".join(outcomes))
"""


@pytest.mark.parametrize("spec,want", [("flip:path=epoch-", "CorruptError"), ("eio:path=epoch-0001", "IOFailedError")])
def test_packed_file_faults_through_the_c_abi(graph, tmp_path, spec, want):
    """Faults injected into planned epochs' packed files (TIERFS_FAULTS, read when the library
    loads, hence a child process) surface as CorruptError or IOFailedError naming the packed
    file and batch, never as other rows."""
    import subprocess
    import sys

    plan = str(tmp_path / "plan")
    with tierfs.open(graph["path"]) as store:
        store.plan_epochs([4, 3], 128, 2, plan_dir=plan, seed=3, shuffle_seed=5).close()
    np.save(tmp_path / "want.npy", graph["x"])
    env = dict(os.environ, TIERFS_FAULTS=spec)
    r = subprocess.run([sys.executable, "-c", PACKED_FAULT_CHILD, graph["path"], plan, str(tmp_path / "want.npy")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    outcomes = r.stdout.strip().split(",")
    assert set(outcomes) <= {"ok", want} and want in outcomes, outcomes
