"""tierfs.Pipeline and the pipelined Loader: the same batches as the serial loop, several gathers
in flight, no more than depth batches held, stage stats, errors in order, shutdown."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
import torch

import tierfs

from conftest import SEED, needs_cuda, rng


def pipeline_threads():
    return [t for t in threading.enumerate() if t.name.startswith(("tierfs-pipeline", "tierfs-loader")) and t.is_alive()]


def wait_no_threads(timeout=5.0):
    deadline = time.monotonic() + timeout
    while pipeline_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not pipeline_threads()


def host(v):
    """v as a host array (a CUDA store hands a batch's edges over on the device)."""
    return v.cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)


def assert_same_batch(a, b, what):
    for name in ("nodes", "row", "col", "nodes_per_hop", "edges_per_hop"):
        np.testing.assert_array_equal(host(getattr(a.sample, name)), host(getattr(b.sample, name)), err_msg=f"{what}: sample.{name}")
    np.testing.assert_array_equal(np.asarray(a.seeds), np.asarray(b.seeds), err_msg=f"{what}: seeds")
    x_a = a.x.cpu().numpy() if isinstance(a.x, torch.Tensor) else a.x
    x_b = b.x.cpu().numpy() if isinstance(b.x, torch.Tensor) else b.x
    assert x_a.tobytes() == x_b.tobytes(), f"{what}: feature rows differ"
    np.testing.assert_array_equal(np.asarray(a.y.cpu() if isinstance(a.y, torch.Tensor) else a.y), np.asarray(b.y.cpu() if isinstance(b.y, torch.Tensor) else b.y), err_msg=f"{what}: labels")


@pytest.mark.parametrize("depth", [1, 3, 8])
def test_pipelined_equals_serial(graph, depth):
    """Random seeds through a store whose SSD tier serves most rows: every pipelined batch is
    bit for bit the serial loop's (TIERFS_TEST_SEED printed in the header)."""
    r = rng(500 + depth)
    seeds = r.choice(graph["n"], size=int(r.integers(300, 900)), replace=False)
    batch = int(r.integers(16, 90))
    with tierfs.open(graph["path"], host_cache="64KiB") as store:
        pipelined = tierfs.Loader(store, store.sampler([5, 3], seed=SEED % 1000), seeds, batch_size=batch, seed=SEED, prefetch=depth)
        serial = tierfs.Loader(store, store.sampler([5, 3], seed=SEED % 1000), seeds, batch_size=batch, seed=SEED)
        got = list(pipelined)
        want = list(serial.batches(0))
        assert len(got) == len(want) == len(pipelined)
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same_batch(a, b, f"seed {SEED} depth {depth} batch {i}")
            np.testing.assert_array_equal(a.x, graph["x"][a.sample.nodes])
        st = pipelined.stats()
        assert st["batches"] == len(got) and st["depth"] == depth
        assert st["stages"]["sample"]["batches"] == st["stages"]["gather"]["batches"] == len(got)
        assert st["stages"]["disk"]["busy_s"] > 0, "the SSD tier served rows but no disk time was counted"
        assert 0 < st["stages"]["split"]["busy_s"] <= st["stages"]["gather"]["busy_s"]
    assert wait_no_threads()


def test_gathers_overlap_and_depth_bounds_memory():
    """Slow gathers run several at once, and no more than depth batches are ever sampled and not
    yet delivered."""
    depth, n = 4, 24
    lock = threading.Lock()
    state = {"sampled": 0, "delivered": 0, "held_max": 0, "gathering": 0, "gathering_max": 0}

    def sample(i):
        with lock:
            state["sampled"] += 1
            state["held_max"] = max(state["held_max"], state["sampled"] - state["delivered"])
        return i * 10

    def gather(i, s):
        with lock:
            state["gathering"] += 1
            state["gathering_max"] = max(state["gathering_max"], state["gathering"])
        time.sleep(0.03)
        with lock:
            state["gathering"] -= 1
        return (i, s)

    p = tierfs.Pipeline(n, sample, gather, depth=depth)
    out = []
    for item in p:
        with lock:
            state["delivered"] += 1
        out.append(item)
    assert out == [(i, i * 10) for i in range(n)]
    assert state["held_max"] <= depth, f"{state['held_max']} batches held at once with depth {depth}"
    assert state["gathering_max"] >= 2, "the gathers never overlapped"
    st = p.stats()
    assert st["bound"] == "gather", st  # the caller never trained: it waited for gathers
    assert st["stages"]["gather"]["occupancy"] > 1.5  # several gathers in flight on average
    assert wait_no_threads()


def test_slow_consumer_is_the_bound():
    p = tierfs.Pipeline(8, lambda i: i, lambda i, s: s, depth=2)
    for _ in p:
        time.sleep(0.02)
    st = p.stats()
    assert st["bound"] == "train" and st["stages"]["train"]["busy_s"] >= 7 * 0.02 * 0.9, st


def test_gather_error_in_order_and_shutdown():
    def gather(i, s):
        if i == 5:
            raise ValueError("bad batch 5")
        time.sleep(0.005)
        return i

    got = []
    with pytest.raises(ValueError, match="bad batch 5"):
        for x in tierfs.Pipeline(40, lambda i: i, gather, depth=3):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]
    assert wait_no_threads()


def test_break_stops_threads():
    calls = []
    p = tierfs.Pipeline(1000, lambda i: calls.append(i) or i, lambda i, s: s, depth=3)
    for i, _ in enumerate(p):
        if i == 2:
            break
    del p
    gc.collect()
    assert wait_no_threads(), "the pipeline's threads outlived the loop"
    assert len(calls) <= 2 + 1 + 3  # delivered, in hand, and depth ahead


def test_bad_depth(store):
    with pytest.raises(ValueError, match="depth 0"):
        tierfs.Pipeline(3, lambda i: i, lambda i, s: s, depth=0)
    # A thread a batch: a million is refused at once, not after the threads run out.
    with pytest.raises(ValueError, match=r"depth 1000000 \(prefetch\) must be from 1 to 256"):
        tierfs.Pipeline(3, lambda i: i, lambda i, s: s, depth=10**6)
    with pytest.raises(ValueError, match="prefetch 1000000 must be from 1 to 256"):
        tierfs.Loader(store, store.sampler([2]), np.arange(10), batch_size=4, prefetch=10**6)


def test_loader_stats_after_epoch(store, graph):
    loader = tierfs.Loader(store, store.sampler([3]), np.arange(400), batch_size=50, prefetch=2)
    assert loader.stats() == {}
    n = sum(1 for _ in loader)
    st = loader.stats()
    assert st["batches"] == n == 8 and st["wall_s"] > 0 and st["bound"] in ("train", "sample", "gather", "disk")


@needs_cuda
def test_pipelined_cuda_equals_serial(graph):
    r = rng(600)
    seeds = torch.from_numpy(r.choice(graph["n"], size=500, replace=False))
    with tierfs.open(graph["path"], host_cache="64KiB", device="cuda:0", gpu_cache="64KiB") as store:
        got = list(tierfs.Loader(store, store.sampler([5, 3], seed=3), seeds, batch_size=64, seed=SEED, prefetch=4))
        want = list(tierfs.Loader(store, store.sampler([5, 3], seed=3), seeds, batch_size=64, seed=SEED).batches(0))
        for i, (a, b) in enumerate(zip(got, want)):
            assert a.x.is_cuda
            assert_same_batch(a, b, f"seed {SEED} cuda batch {i}")


# wall, waiting, sample busy, gather busy, disk (None: unknown) -> the bound. The edges are
# exclusive: waiting exactly 10% is not "train", sampling exactly 80% not "sample", disk exactly
# half the gather time not "disk".
BOUNDS = [
    (10.0, 0.5, 9.0, 30.0, 25.0, "train"),  # the caller hardly waited, whatever else is busy
    (10.0, 1.0, 9.0, 30.0, 25.0, "sample"),  # waited 10%: not train; the sampler 90% busy
    (10.0, 5.0, 8.0, 30.0, 20.0, "disk"),  # sampler 80%: not sample; disk 67% of the gathers
    (10.0, 5.0, 5.0, 30.0, 15.0, "gather"),  # disk exactly half
    (10.0, 5.0, 5.0, 30.0, None, "gather"),  # disk time unknown (no store)
    (10.0, 5.0, 5.0, 0.0, 0.0, "gather"),  # nothing gathered yet
]


@pytest.mark.parametrize("wall, waiting, sample, gather, disk, want", BOUNDS)
def test_bound_of(wall, waiting, sample, gather, disk, want):
    bound, why = tierfs.pipeline.bound_of(wall, waiting, sample, gather, disk)
    assert bound == want, why
    assert f"waited {waiting / wall:.0%}" in why  # the figures that decided it
    if want == "disk":
        assert f"{disk / gather:.0%} of the gathers" in why


def test_slow_sampler_is_the_bound():
    p = tierfs.Pipeline(10, lambda i: time.sleep(0.02) or i, lambda i, s: s, depth=3)
    assert list(p) == list(range(10))
    st = p.stats()
    assert st["bound"] == "sample", st
    assert "sampler was busy" in st["bound_why"]


def test_planned_reads_count_as_disk(graph):
    """A planned epoch's packed reads are its disk time: the store's counters do not see them."""
    with tierfs.open(graph["path"], host_cache="64KiB") as store:
        loader = tierfs.Loader(store, store.sampler([4, 3], seed=SEED % 1000), graph["splits"]["train"], batch_size=100,
                               seed=SEED, planned_epochs=1)
        n = sum(1 for _ in loader)
        read = loader.plan.stats()["read_seconds"]
        st = loader.stats()
        assert st["batches"] == n and read > 0
        assert st["stages"]["disk"]["busy_s"] >= read, (st["stages"], read)
        loader.close()


def test_tensors_of_pyg_batches():
    """The tensors a pipeline records on the caller's stream include those of the PyG batches
    the tierfs.pyg loaders' gathers make (Data, HeteroData), every one of them."""
    pyg = pytest.importorskip("torch_geometric.data")
    from tierfs.pipeline import _tensors

    r = rng(2903)
    x, ei, lab = (torch.from_numpy(r.random((5, 3))), torch.from_numpy(r.integers(0, 5, (2, 7))), torch.arange(4))
    data = pyg.Data(x=x, edge_index=ei, edge_label=lab, batch_size=4)
    assert {id(t) for t in _tensors(data)} == {id(x), id(ei), id(lab)}
    h = pyg.HeteroData()
    h["paper"].x, h["author"].n_id, h["paper", "to", "author"].edge_index = x, lab, ei
    assert {id(t) for t in _tensors(h)} == {id(x), id(ei), id(lab)}
    assert {id(t) for t in _tensors((data, [h], {"k": x}))} == {id(x), id(ei), id(lab)}
