"""Distributed stores (tierfs.distributed) with two real CPU processes over gloo.

The processes are started with torch.multiprocessing's *spawn* (never fork after the library is
loaded). Each worker runs one scenario against the real store and writes what it saw to a JSON
file; the test asserts on those files. Rows are compared with a plain single-process store's
gather (the reference). The random ids' seed is printed.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import socket
import time
import traceback

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import tierfs  # noqa: E402

WORLD = 2
NODES, DIM = 3000, 16  # rows of 64 B
# Per rank: 150 rows "in the GPU tier" (emulated by the host tier here), 150 next hottest.
GPU_CACHE = 150 * (64 + 16)
HOST_CACHE = 150 * (64 + 16)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("dist") / "g"
    tierfs.synth(path, nodes=NODES, avg_degree=8, dim=DIM, seed=3)
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# TIERFS_TEST_DIST_BACKEND=nccl runs every scenario over NCCL with one GPU a rank (the GPU
# machine: scripts/gpu_test.sh), each rank's stores on its own device; gloo (CPU) otherwise.
BACKEND = os.environ.get("TIERFS_TEST_DIST_BACKEND", "gloo")
if BACKEND == "nccl" and torch.cuda.device_count() < WORLD:
    pytest.skip(f"TIERFS_TEST_DIST_BACKEND=nccl needs {WORLD} GPUs, {torch.cuda.device_count()} here", allow_module_level=True)


def _init_group(rank: int) -> None:
    timeout = __import__("datetime").timedelta(seconds=60)
    if BACKEND != "nccl":
        dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timeout)
        return
    torch.cuda.set_device(rank)
    plain_open = tierfs.open
    tierfs.open = lambda *a, **k: plain_open(*a, **{"device": f"cuda:{rank}", **k})
    dist.init_process_group("nccl", rank=rank, world_size=WORLD, timeout=timeout, device_id=torch.device("cuda", rank))


def _spawn(scenario: str, dataset: str, out_dir, seed: int, timeout: float = 20.0, ranks: int = WORLD, module: str = __name__) -> list:
    """Runs scenario (the function ``_<scenario>`` of module) on WORLD spawned ranks; the
    results of the first ``ranks`` (the others die)."""
    port = _free_port()
    mp.spawn(_worker, args=(scenario, dataset, str(out_dir), port, seed, timeout, module), nprocs=WORLD, join=True)
    results = []
    for r in range(ranks):
        with open(os.path.join(out_dir, f"{scenario}.{r}.json")) as f:
            res = json.load(f)
        if "traceback" in res:
            pytest.fail(f"rank {r} of {scenario} failed:\n{res['traceback']}")
        results.append(res)
    return results


def _worker(rank: int, scenario: str, dataset: str, out_dir: str, port: int, seed: int, timeout: float, module: str) -> None:
    res: dict = {}
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.set_num_threads(1)
        _init_group(rank)
        getattr(importlib.import_module(module), "_" + scenario)(rank, dataset, seed, timeout, res)
    except BaseException:
        res["traceback"] = traceback.format_exc()
    with open(os.path.join(out_dir, f"{scenario}.{rank}.json"), "w") as f:
        json.dump(res, f)
    os._exit(0)  # no teardown: a dead peer must not hang this process's exit


def _eq(a, b) -> bool:
    a = a.cpu().numpy() if hasattr(a, "cpu") else a
    b = b.cpu().numpy() if hasattr(b, "cpu") else b
    return a.shape == b.shape and np.array_equal(a, b)


def _check(cond: bool, what: str, res: dict) -> None:
    res.setdefault("failed", [])
    if not cond:
        res["failed"].append(what)


# Scenarios (run in the workers) ------------------------------------------------------------


def _exchange(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    other = 1 - rank
    rng = np.random.default_rng([seed, rank])
    for mode in ("shared", "replicated"):
        s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode=mode, timeout=timeout)
        _check(s.rank == rank and s.world_size == WORLD, f"{mode}: rank/world_size", res)
        owner = s.owner(np.arange(NODES))
        held = {t["tier"]: t["rows_held"] for t in s.stats()["tiers"]}
        d = s.stats()["distributed"]
        res[f"{mode}_owned"] = np.flatnonzero(owner == rank).tolist()
        res[f"{mode}_owner_digest"] = int((owner + 1).astype(np.int64) @ np.arange(NODES))
        res[f"{mode}_layout"] = dict(held=held["host"], owned=d["owned_rows"], nxt=d["next_hottest_rows"], glob=d["global_cache_rows"])
        # random ids, a different count per rank
        ids = rng.integers(0, NODES, size=500 + 300 * rank)
        _check(_eq(s.gather(ids), ref.gather(ids)), f"{mode}: random ids", res)
        # repeated ids, peer-owned among them
        peer = np.flatnonzero(owner == other)
        rep = np.concatenate([ids[:20], ids[:20], peer[:5], peer[:5], [int(ids[0])] * 7]) if peer.size else np.repeat(ids[:20], 3)
        _check(_eq(s.gather(rep), ref.gather(rep)), f"{mode}: repeated ids", res)
        # only ids the other rank owns (shared), as a torch tensor: a torch tensor comes back
        only = torch.from_numpy(peer[rng.permutation(peer.size)][:100] if peer.size else ids[:100])
        got = s.gather(only)
        _check(isinstance(got, torch.Tensor) and _eq(got, ref.gather(only)), f"{mode}: ids owned by the other rank", res)
        # an empty batch on one rank while the other asks for rows (each way), then both empty
        for empty_rank in (0, 1):
            batch = np.empty(0, dtype=np.int64) if rank == empty_rank else ids[:50]
            got = s.gather(batch)
            _check(got.shape == (batch.shape[0], DIM) and _eq(got, ref.gather(batch)), f"{mode}: empty batch on rank {empty_rank}", res)
        _check(s.gather([]).shape == (0, DIM), f"{mode}: both empty", res)
        # one id, and a list
        _check(_eq(s.gather(int(ids[3])), ref.gather(int(ids[3]))), f"{mode}: scalar id", res)
        # the same sampled batches in both modes: SSD rows per batch
        sampler = ref.sampler([10, 5], seed=7)
        before = s.stats()["distributed"]
        for b in range(6):
            nodes = sampler.sample(np.arange(rank * 64 + b * 128, rank * 64 + b * 128 + 64)).nodes
            _check(_eq(s.gather(nodes), ref.gather(nodes)), f"{mode}: sampled batch {b}", res)
        after = s.stats()["distributed"]
        res[f"{mode}_ssd_rows"] = after["ssd_rows"] - before["ssd_rows"]
        res[f"{mode}_peer_rows"] = after["peer_rows"]
        res[f"{mode}_peer_bytes"] = after["peer_bytes_received"]
        res[f"{mode}_per_batch"] = after["per_batch"]
        # an id out of range on rank 1 only: rank 1 gets IndexError, rank 0 PeerError, and the
        # store keeps working afterwards
        bad = np.array([1, NODES + 5]) if rank == 1 else ids[:10]
        try:
            s.gather(bad)
            res.setdefault("bad_id", {})[mode] = "no error"
        except tierfs.OutOfRangeError as e:
            res.setdefault("bad_id", {})[mode] = f"OutOfRangeError: {e}"
        except tierfs.PeerError as e:
            res.setdefault("bad_id", {})[mode] = f"PeerError: {e}"
        _check(_eq(s.gather(ids[:30]), ref.gather(ids[:30])), f"{mode}: gather after a bad id", res)
        s.close()
    ref.close()


def _loaders(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    train = s.split("train")
    res["train"] = train.tolist()
    loader = tierfs.Loader(s, s.sampler([5, 5], seed=1), train, batch_size=128, prefetch=3, seed=seed)
    res["len"] = len(loader)
    for epoch in range(2):
        seeds, n = [], 0
        for batch in loader:
            _check(_eq(batch.x, ref.gather(batch.sample.nodes)), f"Loader epoch {epoch} batch {n}", res)
            seeds.extend(batch.seeds.tolist())
            n += 1
        res[f"loader_seeds_{epoch}"] = seeds
        res[f"loader_batches_{epoch}"] = n
    from tierfs import pyg as tierfs_pyg

    pl = tierfs_pyg.NeighborLoader(s, [5, 5], input_nodes="train", batch_size=64, shuffle=True, drop_last=True, prefetch=2)
    seeds, n = [], 0
    for data in pl:
        _check(_eq(data.x, ref.gather(data.n_id)), f"pyg batch {n}", res)
        seeds.extend(data.n_id[: data.batch_size].tolist())
        n += 1
    res["pyg_seeds"], res["pyg_batches"], res["pyg_len"] = seeds, n, len(pl)
    res["peer_rows"] = s.stats()["distributed"]["peer_rows"]
    s.close()
    ref.close()


def _dead(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    ids = np.arange(0, NODES, 7)
    s.gather(ids)
    # A stalled rank (alive, not calling gather): the other fails at the timeout.
    if rank == 1:
        time.sleep(timeout + 1)
        os._exit(0)  # then it dies without a word
    t0 = time.perf_counter()
    try:
        s.gather(ids)
        res["stalled"] = "no error"
    except tierfs.PeerError as e:
        res["stalled"] = str(e)
    res["stalled_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        s.gather(ids)
        res["after"] = "no error"
    except tierfs.PeerError as e:
        res["after"] = str(e)
    res["after_s"] = time.perf_counter() - t0


def _died(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    ids = np.arange(0, NODES, 5)
    s.gather(ids)
    if rank == 1:
        os._exit(0)  # dies between two batches
    time.sleep(0.5)
    t0 = time.perf_counter()
    try:
        s.gather(ids)
        res["died"] = "no error"
    except tierfs.PeerError as e:
        res["died"] = str(e)
    res["died_s"] = time.perf_counter() - t0


# Tests ---------------------------------------------------------------------------------------


def test_split_seeds_is_distributed_sampler():
    from torch.utils.data import DistributedSampler

    seeds = np.arange(100, 203)  # 103 seeds: not a multiple of 2 or 4
    for world in (2, 4):
        for drop_last in (False, True):
            for epoch in (0, 3):
                shares = [tierfs.split_seeds(seeds, r, world, epoch=epoch, seed=5, drop_last=drop_last) for r in range(world)]
                for r, share in enumerate(shares):
                    ds = DistributedSampler(range(seeds.size), num_replicas=world, rank=r, shuffle=True, seed=5, drop_last=drop_last)
                    ds.set_epoch(epoch)
                    assert share.tolist() == seeds[list(ds)].tolist(), (world, drop_last, epoch, r)
                assert len({len(s) for s in shares}) == 1, "equal counts per rank"
                allseeds = np.concatenate(shares)
                if drop_last:
                    assert np.unique(allseeds).size == allseeds.size == (seeds.size // world) * world
                else:
                    assert set(allseeds.tolist()) == set(seeds.tolist())
                    assert allseeds.size - np.unique(allseeds).size < world
    with pytest.raises(ValueError, match="rank 2 is not in"):
        tierfs.split_seeds(seeds, 2, 2)


def test_single_rank_without_process_group(dataset):
    """One rank needs no torch.distributed: no exchange, the store's own rows."""
    with tierfs.open(dataset) as ref, tierfs.open(dataset, host_cache=HOST_CACHE, cache_mode="shared") as s:
        ids = np.random.default_rng(0).integers(0, NODES, 300)
        assert np.array_equal(s.gather(ids), ref.gather(ids))
        assert s.stats()["distributed"]["peer_rows"] == 0
        assert s.place()["source"] == "store"  # the store's own ranking again (test_distributed_place.py)
        assert np.array_equal(s.gather(ids), ref.gather(ids))
        with pytest.raises(NotImplementedError, match="ownership"):
            s.place_ids(ids[:5])
    with pytest.raises(ValueError, match="torch.distributed is not initialized"):
        tierfs.open(dataset, rank=0, world_size=2)
    with pytest.raises(ValueError, match="cache_mode 'mirror'"):
        tierfs.open(dataset, cache_mode="mirror")
    with pytest.raises(ValueError, match="hotness is an option of distributed stores"):
        tierfs.open(dataset, hotness=np.ones(NODES))


def test_exchange_matches_reference(dataset, tmp_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("exchange", dataset, tmp_path, seed)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    # Ownership: the same table on both ranks, disjoint owned sets of equal size, each the
    # rank's share of the global cache; replicated: no owners.
    assert r0["shared_owner_digest"] == r1["shared_owner_digest"]
    own0, own1 = set(r0["shared_owned"]), set(r1["shared_owned"])
    # gloo: the host tier emulates the GPU tier (150 owned + 150 next, 16 B of index a row);
    # NCCL: a real GPU tier of GPU_CACHE / 64 rows, the host tier the 150 next.
    owned = 150 if BACKEND != "nccl" else GPU_CACHE // (DIM * 4)
    host_held = 300 if BACKEND != "nccl" else 150
    assert own0 and not own0 & own1 and len(own0) == len(own1) == r0["shared_layout"]["owned"] == owned
    assert r0["shared_layout"]["glob"] == 2 * owned and r0["shared_layout"]["held"] == host_held
    assert r0["replicated_owned"] == [] and r0["replicated_layout"]["held"] == host_held
    # Shared caches exchange rows and read fewer from SSD than replicated ones, same batches.
    for r in (r0, r1):
        assert r["shared_peer_rows"] > 0 and r["replicated_peer_rows"] == 0
        assert r["shared_ssd_rows"] < r["replicated_ssd_rows"], (r["shared_ssd_rows"], r["replicated_ssd_rows"])
        assert r["shared_per_batch"]["peer_bytes_received"] > 0
    print("ssd rows (6 batches) shared/replicated:", r0["shared_ssd_rows"], r0["replicated_ssd_rows"],
          "peer bytes per batch:", r0["shared_per_batch"]["peer_bytes_received"])
    # An id out of range on rank 1: its error names the id; rank 0's names rank 1.
    assert r1["bad_id"]["shared"].startswith("OutOfRangeError") and str(NODES + 5) in r1["bad_id"]["shared"]
    assert r0["bad_id"]["shared"].startswith("PeerError") and "rank 1" in r0["bad_id"]["shared"]
    assert r1["bad_id"]["replicated"].startswith("OutOfRangeError") and r0["bad_id"]["replicated"] == "no error"


def test_loaders_split_seeds(dataset, tmp_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("loaders", dataset, tmp_path, seed)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    train = set(r0["train"])
    assert r0["len"] == r1["len"] == r0["loader_batches_0"] == r1["loader_batches_0"] == r0["loader_batches_1"]
    for epoch in (0, 1):
        a, b = r0[f"loader_seeds_{epoch}"], r1[f"loader_seeds_{epoch}"]
        assert len(a) == len(b) and set(a) | set(b) == train
        assert len(set(a) & set(b)) <= 1  # padding repeats at most world_size - 1 seeds
    assert r0["loader_seeds_0"] != r0["loader_seeds_1"], "each epoch its own order"
    assert r0["pyg_batches"] == r1["pyg_batches"] == r0["pyg_len"] > 0
    assert not set(r0["pyg_seeds"]) & set(r1["pyg_seeds"])  # drop_last: disjoint
    assert r0["peer_rows"] > 0 and r1["peer_rows"] > 0


def test_stalled_rank_times_out(dataset, tmp_path):
    timeout = 3.0
    (r0,) = _spawn("dead", dataset, tmp_path, 0, timeout=timeout, ranks=1)
    msg = r0["stalled"]
    assert "rank 1" in msg and "timeout (3 s)" in msg, msg
    assert r0["stalled_s"] < timeout + 5, r0["stalled_s"]
    assert "unusable" in r0["after"] and r0["after_s"] < 1


def test_dead_rank_fails_fast(dataset, tmp_path):
    (r0,) = _spawn("died", dataset, tmp_path, 0, timeout=30.0, ranks=1)
    assert "rank 1" in r0["died"], r0["died"]
    assert r0["died_s"] < 35, r0["died_s"]
