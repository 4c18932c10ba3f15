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


def _overlap(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    """Two gathers on two threads, the first one's local rows held back (its disk reads still
    running) and the exchange lock held by it: the second one's local rows start meanwhile;
    then both gathers' rows are the reference's."""
    import threading

    ref = tierfs.open(path)
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    rng = np.random.default_rng([seed, rank])
    first, second = rng.permutation(NODES)[:400], rng.permutation(NODES)[:300]
    started, second_started = threading.Event(), threading.Event()
    plain_local, calls = s._local_gather, []

    def held_local(ids, node_type):
        k = len(calls)
        calls.append(k)
        if k == 0:  # the first gather's local rows: held until the second's have started
            started.set()
            res["second_started_while_first_held"] = second_started.wait(timeout / 2)
        else:
            second_started.set()
        return plain_local(ids, node_type)

    s._local_gather = held_local
    got = {}
    a = threading.Thread(target=lambda: got.update(first=s.gather(first)))
    a.start()
    _check(started.wait(timeout), "the first gather's local rows started", res)
    t = time.perf_counter()
    while not s._xlock.locked() and time.perf_counter() - t < timeout:  # the first gather exchanges first
        time.sleep(0.001)
    b = threading.Thread(target=lambda: got.update(second=s.gather(second)))
    b.start()
    a.join(timeout)
    b.join(timeout)
    _check("first" in got and _eq(got["first"], ref.gather(first)), "the held gather's rows", res)
    _check("second" in got and _eq(got["second"], ref.gather(second)), "the second gather's rows", res)
    res["peer_rows"] = s.stats()["distributed"]["peer_rows"]
    s.close()
    ref.close()


def _planned(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    root = os.path.join(os.path.dirname(path), f"plans-{seed}")
    for mode in ("shared", "replicated"):
        s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode=mode, timeout=timeout)
        train = s.split("train")
        k, bs = 2, 96
        # torch seeds in shared mode: on a CUDA store (NCCL) the rows go through gather_device
        given = torch.from_numpy(train) if mode == "shared" else train
        planned = tierfs.Loader(s, s.sampler([5, 5], seed=1), given, batch_size=bs, prefetch=3, seed=seed,
                                planned_epochs=k, plan_dir=os.path.join(root, mode), reuse_samples=True)
        demand = tierfs.Loader(s, s.sampler([5, 5], seed=1), given, batch_size=bs, prefetch=3, seed=seed)
        _check(len(planned) == len(demand) == planned.plan.batches_per_epoch, f"{mode}: batches per epoch", res)
        _check(os.path.isfile(os.path.join(root, mode, f"rank-{rank}", "epochs.json")), f"{mode}: the rank's plan directory", res)
        seeds_by_epoch = []
        for epoch in range(k + 1):  # epoch k replays planned epoch 0
            seeds = []
            for n, batch in enumerate(planned):
                _check(_eq(batch.x, ref.gather(batch.sample.nodes)), f"{mode}: planned epoch {epoch} batch {n} rows", res)
                seeds.append(batch.seeds.tolist())
            seeds_by_epoch.append(seeds)
            if epoch < k:  # exactly the on-demand loader's seeds of the epoch, batch by batch
                share = tierfs.split_seeds(train, rank, WORLD, epoch, seed).tolist()
                want = [share[i : i + bs] for i in range(0, len(share), bs)]
                _check(seeds == want, f"{mode}: planned epoch {epoch}'s seeds are split_seeds'", res)
        _check(seeds_by_epoch[k] == seeds_by_epoch[0], f"{mode}: epoch {k} replays planned epoch 0", res)
        res[f"{mode}_seeds"] = [sum(e, []) for e in seeds_by_epoch[:k]]
        # Fresh rounds (the default): every epoch, k and later included, is the on-demand
        # loader's split of that epoch, planned while the one before trains.
        # Its rounds read by random reads in windows of 64 KiB: the same rows (DistributedStore.plan_epochs
        # forwards pack_method and pack_memory).
        rounds = tierfs.Loader(s, s.sampler([5, 5], seed=1), given, batch_size=bs, prefetch=3, seed=seed,
                               planned_epochs=1, plan_dir=os.path.join(root, mode + "-rounds"),
                               plan_pack_method="random", plan_pack_memory="64KiB")
        report = rounds.plan.report or {}
        _check(report.get("pack_method") == ("random" if report.get("rows_packed") else ""),
               f"{mode}: rounds planned by random reads (report: {report.get('pack_method')!r}, {report.get('rows_packed')} rows)", res)
        for epoch in range(3):
            seeds = []
            for n, batch in enumerate(rounds):
                _check(_eq(batch.x, ref.gather(batch.sample.nodes)), f"{mode}: rounds epoch {epoch} batch {n} rows", res)
                seeds.extend(batch.seeds.tolist())
            share = tierfs.split_seeds(train, rank, WORLD, epoch, seed).tolist()
            _check(seeds == share[: len(seeds)] and len(seeds) in (len(share), len(share) // bs * bs),
                   f"{mode}: rounds epoch {epoch}'s seeds are split_seeds' of epoch {epoch}", res)
        rounds.close()
        demand_seeds = [b.seeds.tolist() for b in demand]
        _check(demand_seeds == seeds_by_epoch[0], f"{mode}: the on-demand loader's epoch 0 has the planned seeds", res)
        # Packed rows: exactly what the on-demand gather of the same nodes reads from this rank's
        # disk; the peer-owned rows (never packed) come through the exchange.
        plan = planned.plan
        owner = s.owner(np.arange(NODES))
        packed_rows, ssd_rows, peer_nodes = 0, 0, 0
        for b in range(min(4, plan.batches_per_epoch)):
            smp = plan.sample(1, b)
            before = plan.stats()["rows"]
            x = plan.gather(1, b, smp.nodes)
            _check(_eq(x, ref.gather(smp.nodes)), f"{mode}: plan.gather of batch {b}", res)
            packed_rows += plan.stats()["rows"] - before
            before = s.stats()["distributed"]["ssd_rows"]
            s.gather(smp.nodes)
            ssd_rows += s.stats()["distributed"]["ssd_rows"] - before
            peer_nodes += int(np.count_nonzero((owner[smp.nodes] >= 0) & (owner[smp.nodes] != rank)))
        res[f"{mode}_packed"] = dict(packed=packed_rows, ssd=ssd_rows, peer=peer_nodes)
        # The plan's fingerprint holds the rows served elsewhere: the same inputs open it, another
        # set is refused.
        orders = [tierfs.split_seeds(train, rank, WORLD, e, seed) for e in range(k)]
        peer = np.flatnonzero((owner >= 0) & (owner != rank))
        args = dict(seed_orders=orders, plan_dir=os.path.join(root, mode, f"rank-{rank}"), replan=False, place_tiers=False,
                    seed=1 + rank * (1 << 32))
        tierfs.Store.plan_epochs(s, [5, 5], bs, k, elsewhere=peer if mode == "shared" else None, **args).close()
        try:
            tierfs.Store.plan_epochs(s, [5, 5], bs, k, elsewhere=peer[1:] if mode == "shared" else [0], **args).close()
            res[f"{mode}_stale"] = "opened"
        except tierfs.InvalidArgumentError as e:
            res[f"{mode}_stale"] = str(e)
        try:
            s.plan_epochs([5, 5], bs, k, place_tiers=True)
            res[f"{mode}_place_tiers"] = "planned"
        except tierfs.NotSupportedError as e:
            res[f"{mode}_place_tiers"] = str(e)
        if mode == "shared":  # PyG's loader over the same plan machinery
            from tierfs import pyg as tierfs_pyg

            pl = tierfs_pyg.NeighborLoader(s, [5, 5], input_nodes="train", batch_size=64, shuffle=True, planned_epochs=1, prefetch=2)
            for n, data in enumerate(pl):
                _check(_eq(data.x, ref.gather(data.n_id)), f"pyg planned batch {n}", res)
            pl.loader.plan.close()
        plan.close()
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


def test_local_rows_start_before_the_exchange_lock(dataset, tmp_path):
    """A gather's local rows (its disk reads) start before it waits for the exchange lock:
    while one batch exchanges, waiting for its own local rows under the lock, the next
    batches' disk reads are already running on every rank (before, a rank read one batch at a
    time: issue 28)."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("overlap", dataset, tmp_path, seed, timeout=20.0)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
        assert r["second_started_while_first_held"], f"seed {seed}: the second gather's local rows waited for the first one's exchange"
        assert r["peer_rows"] > 0


def test_planned_epochs(dataset, tmp_path):
    """Planned epochs on a distributed store: each rank's planned epoch e is its on-demand share
    of epoch e (split_seeds), every row equals the plain store's, the peer-owned rows are never
    packed (the packed rows are the rows the on-demand gather reads from the rank's disk), the
    rows served elsewhere are part of the plan's fingerprint, and place_tiers is refused."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("planned", dataset, tmp_path, seed, timeout=60.0)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    for mode in ("shared", "replicated"):
        for e in range(2):
            a, b = r0[f"{mode}_seeds"][e], r1[f"{mode}_seeds"][e]
            assert len(a) == len(b) and len(set(a) & set(b)) <= 1, f"seed {seed}: {mode} epoch {e}: shares overlap"
            assert set(a) | set(b) == set(r0[f"{mode}_seeds"][0]) | set(r1[f"{mode}_seeds"][0])
        for r in (r0, r1):
            p = r[f"{mode}_packed"]
            assert p["packed"] == p["ssd"] > 0, f"seed {seed}: {mode}: {p}"
            assert "place_tiers" in r[f"{mode}_place_tiers"] and "decided at open" in r[f"{mode}_place_tiers"]
    for r in (r0, r1):
        assert r["shared_packed"]["peer"] > 0 and r["replicated_packed"]["peer"] == 0, f"seed {seed}"
        assert "rows served elsewhere" in r["shared_stale"], r["shared_stale"]
        assert "rows served elsewhere" in r["replicated_stale"], r["replicated_stale"]
    print("packed rows (4 batches) shared/replicated:", r0["shared_packed"], r0["replicated_packed"])


def test_planned_epochs_elsewhere_on_one_store(dataset, tmp_path):
    """Store.plan_epochs(elsewhere=, seed_orders=) without torch.distributed: the rows served
    elsewhere are not packed and not written; every other row is the plain gather's."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    with tierfs.open(dataset, host_cache=HOST_CACHE) as s:
        train = s.split("train")
        away = np.unique(rng.integers(0, NODES, NODES // 3))
        orders = [rng.permutation(train)[: train.size // 2] for _ in range(2)]
        kw = dict(seed_orders=orders, plan_dir=str(tmp_path / "p"), place_tiers=False, seed=3)
        with s.plan_epochs([5, 5], 64, 2, elsewhere=away, **kw) as plan, s.plan_epochs([5, 5], 64, 2, **dict(kw, plan_dir=str(tmp_path / "q"))) as full:
            for e in range(2):
                for b in range(plan.batches_per_epoch):
                    assert plan.seeds(e, b).tolist() == orders[e][b * 64 : (b + 1) * 64].tolist(), f"seed {seed}"
                    smp = plan.sample(e, b)
                    out = np.full((smp.nodes.size, DIM), -7.0, dtype=np.float32)
                    plan.gather(e, b, smp.nodes, out=out)
                    keep = ~np.isin(smp.nodes, away)
                    assert np.array_equal(out[keep], s.gather(smp.nodes[keep])), f"seed {seed}: epoch {e} batch {b}"
                    assert (out[~keep] == -7.0).all(), f"seed {seed}: epoch {e} batch {b}: rows served elsewhere were written"
            assert 0 < plan.report["rows_packed"] < full.report["rows_packed"], (plan.report["rows_packed"], full.report["rows_packed"])
        with pytest.raises(ValueError, match="rows served elsewhere"):
            s.plan_epochs([5, 5], 64, 2, elsewhere=away[1:], replan=False, **kw)
        with pytest.raises(ValueError, match="seed_orders"):
            s.plan_epochs([5, 5], 64, 2, seed_orders=orders[:1], plan_dir=str(tmp_path / "r"))
        # {node type: ids} names the type; an unknown type or an id out of range is refused.
        s.plan_epochs([5, 5], 64, 2, elsewhere={s.node_type: away}, replan=False, **kw).close()
        with pytest.raises(KeyError, match="no node type 'nope'|no node type \"nope\""):
            s.plan_epochs([5, 5], 64, 2, elsewhere={"nope": away}, **kw)
        with pytest.raises(IndexError, match=f"= {NODES} is out of range"):
            s.plan_epochs([5, 5], 64, 2, elsewhere=[1, NODES], **kw)


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
