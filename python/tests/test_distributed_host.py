"""One host tier per host (``host_tier="per_host"``) with two real CPU processes over gloo.

The processes are spawned (never forked after the library is loaded), as in
test_distributed.py; each writes what it saw to a JSON file. Every gathered row is compared with
a plain single-process store's; the random ids' seed is printed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import traceback

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import tierfs  # noqa: E402
from tierfs import distributed  # noqa: E402

WORLD = 2
NODES, DIM = 3000, 16  # rows of 64 B
HOST_CACHE = 400 * (64 + 16)  # the host's budget: 400 rows


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("disthost") / "g"
    tierfs.synth(path, nodes=NODES, avg_degree=8, dim=DIM, seed=5)
    return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(scenario: str, dataset: str, out_dir, seed: int, timeout: float = 20.0) -> list:
    """Runs scenario on WORLD spawned ranks and returns each rank's results (None for a rank that
    wrote none, e.g. one killed) and exit codes."""
    port = _free_port()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(r, scenario, dataset, str(out_dir), port, seed, timeout)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        if p.is_alive():
            p.kill()
            pytest.fail(f"{scenario}: a rank hung")
    results = []
    for r in range(WORLD):
        try:
            with open(os.path.join(out_dir, f"{scenario}.{r}.json")) as f:
                results.append(json.load(f))
        except FileNotFoundError:
            results.append(None)
    return results, [p.exitcode for p in procs]


def _worker(rank: int, scenario: str, dataset: str, out_dir: str, port: int, seed: int, timeout: float) -> None:
    res: dict = {}
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.set_num_threads(1)
        dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=__import__("datetime").timedelta(seconds=60))
        globals()["_" + scenario](rank, dataset, seed, timeout, res, os.path.join(out_dir, f"{scenario}.{rank}.json"))
    except BaseException:
        res["traceback"] = traceback.format_exc()
    with open(os.path.join(out_dir, f"{scenario}.{rank}.json"), "w") as f:
        json.dump(res, f)
    os._exit(0)


def _job_files(pid: int) -> list:
    return sorted(n for n in os.listdir(distributed._SHM_DIR) if n.startswith(distributed._SHM_PREFIX) and f"-{pid}-" in n)


# Scenarios (run in the workers) ------------------------------------------------------------


def _per_host(rank: int, path: str, seed: int, timeout: float, res: dict, out: str) -> None:
    ref = tierfs.open(path)
    pids = [None] * WORLD
    dist.all_gather_object(pids, os.getpid())
    res["failed"] = []
    rng = np.random.default_rng([seed, rank])
    for mode in ("shared", "replicated"):
        for host_tier, budget in (("per_host", HOST_CACHE), ("per_rank", HOST_CACHE // 2)):
            key = f"{mode}/{host_tier}"
            s = tierfs.open(path, host_cache=budget, cache_mode=mode, host_tier=host_tier, timeout=timeout)
            res[f"{key}/files_after_open"] = _job_files(pids[0])  # removed once both ranks mapped it
            st = s.stats()
            host = next(t for t in st["tiers"] if t["tier"] == "host")
            res[f"{key}/host"] = dict(host, **st["distributed"]["host_tier"])
            # the job's hottest rows are the host tier's: gathering them reads nothing from disk
            hot = s.hottest(int(host["rows_held"]))
            ssd0 = st["distributed"]["ssd_rows"]
            if not np.array_equal(s.gather(hot), ref.gather(hot)):
                res["failed"].append(f"{key}: hottest rows")
            res[f"{key}/hot_ssd_rows"] = s.stats()["distributed"]["ssd_rows"] - ssd0
            for b in range(5):
                ids = rng.integers(0, NODES, size=int(rng.integers(0, 700)) + 100 * rank)
                if not np.array_equal(s.gather(ids), ref.gather(ids)):
                    res["failed"].append(f"{key}: random batch {b} differs from the plain store")
            sampler = ref.sampler([10, 5], seed=seed)
            for b in range(3):
                nodes = sampler.sample(np.arange(rank * 64 + b * 128, rank * 64 + b * 128 + 64)).nodes
                if not np.array_equal(s.gather(nodes), ref.gather(nodes)):
                    res["failed"].append(f"{key}: sampled batch {b} differs from the plain store")
            s.close()
    ref.close()


def _kill_creator(rank: int, path: str, seed: int, timeout: float, res: dict, out: str) -> None:
    if rank == 0:
        def die(paths):
            with open(out, "w") as f:
                json.dump(dict(paths=list(paths.values()), ready=[os.path.exists(p) for p in paths.values()]), f)
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 between filling and the others mapping

        distributed._after_fill = die
    try:
        tierfs.open(path, host_cache=HOST_CACHE, cache_mode="shared", host_tier="per_host", timeout=timeout)
        res["open"] = "no error"
    except tierfs.PeerError as e:
        res["open"] = f"PeerError: {e}"


def _kill_mapper(rank: int, path: str, seed: int, timeout: float, res: dict, out: str) -> None:
    pids = [None] * WORLD
    dist.all_gather_object(pids, os.getpid())
    if rank == 0:
        def kill_peer(paths):
            res["paths"] = list(paths.values())
            os.kill(pids[1], signal.SIGKILL)  # kill -9 of the rank that would map the tier

        distributed._after_fill = kill_peer
    try:
        tierfs.open(path, host_cache=HOST_CACHE, cache_mode="shared", host_tier="per_host", timeout=timeout)
        res["open"] = "no error"
    except tierfs.PeerError as e:
        res["open"] = f"PeerError: {e}"


# Tests -----------------------------------------------------------------------------------


def test_per_host_tier_matches_plain_store(dataset, tmp_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    (r0, r1), codes = _run("per_host", dataset, tmp_path, seed)
    for r, res in enumerate((r0, r1)):
        assert res is not None and "traceback" not in res, (r, res and res.get("traceback"))
        assert not res["failed"], f"seed {seed}: rank {r}: {res['failed']}"
    rows = 400
    for mode in ("shared", "replicated"):
        h0, h1 = r0[f"{mode}/per_host/host"], r1[f"{mode}/per_host/host"]
        # one tier on the host: both ranks serve its rows, the creator alone holds them
        assert h0["shared"] == "created" and h1["shared"] == "mapped", (h0, h1)
        assert h0["rows"] == h1["rows"] == rows and h0["mode"] == "per_host" and h0["ranks_sharing"] == 2
        assert h0["rows_held"] + h1["rows_held"] == rows and h0["creator_rank"] == h1["creator_rank"] == 0
        # the same host memory as two per-rank tiers of half the budget, twice the distinct rows
        p0, p1 = r0[f"{mode}/per_rank/host"], r1[f"{mode}/per_rank/host"]
        assert p0["rows_held"] + p1["rows_held"] == rows and p0["rows"] == rows // 2 and "shared" not in p0
        assert h0["bytes_held"] + h1["bytes_held"] == p0["bytes_held"] + p1["bytes_held"]
        assert r0[f"{mode}/per_host/hot_ssd_rows"] == r1[f"{mode}/per_host/hot_ssd_rows"] == 0
        assert r0[f"{mode}/per_host/files_after_open"] == r1[f"{mode}/per_host/files_after_open"] == []


def test_killed_creator_leaves_nothing_served(dataset, tmp_path):
    (tmp_path / "a").mkdir()
    (r0, r1), codes = _run("kill_creator", dataset, tmp_path / "a", 0, timeout=10.0)
    assert codes[0] == -signal.SIGKILL, codes
    assert r1["open"].startswith("PeerError") and "rank 1" in r1["open"], r1
    stale = r0["paths"]
    assert r0["ready"] == [True] and all(os.path.exists(p) for p in stale), r0  # left by the kill
    # A new job on the host never maps it (its files are named by its own job) and removes it.
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    (tmp_path / "b").mkdir()
    (n0, n1), _ = _run("per_host", dataset, tmp_path / "b", seed)
    for r, res in enumerate((n0, n1)):
        assert res is not None and "traceback" not in res, (r, res and res.get("traceback"))
        assert not res["failed"], f"seed {seed}: rank {r}: {res['failed']}"
    assert not any(os.path.exists(p) for p in stale), stale


def test_killed_mapper_leaves_nothing(dataset, tmp_path):
    (r0, r1), codes = _run("kill_mapper", dataset, tmp_path, 0, timeout=10.0)
    assert codes[1] == -signal.SIGKILL and r1 is None, codes
    assert r0["open"].startswith("PeerError") and "rank 0" in r0["open"], r0
    assert r0["paths"] and not any(os.path.exists(p) for p in r0["paths"]), r0["paths"]


def test_remove_stale_keeps_live_creators(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = tmp_path / f"{distributed._SHM_PREFIX}abc-{os.getpid()}-0"
    gone = tmp_path / f"{distributed._SHM_PREFIX}abc-{dead.pid}-0"
    other = tmp_path / "tierfs-host-notours"
    for p in (live, gone, other):
        p.write_bytes(b"x")
    assert distributed._remove_stale(str(tmp_path)) == [str(gone)]
    assert live.exists() and other.exists() and not gone.exists()


def test_per_host_single_rank_and_bad_options(dataset):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    ids = np.random.default_rng(seed).integers(0, NODES, 500)
    with tierfs.open(dataset) as ref, tierfs.open(dataset, host_cache=HOST_CACHE, cache_mode="shared", host_tier="per_host") as s:
        assert np.array_equal(s.gather(ids), ref.gather(ids)), f"seed {seed}"
        h = s.stats()["distributed"]["host_tier"]
        assert h["rows"] == h["rows_held"] == 400 and h["ranks_sharing"] == 1 and s.host_tier == "per_host"
        assert _job_files(os.getpid()) == []
    with pytest.raises(ValueError, match="host_tier 'node' is not one of"):
        tierfs.open(dataset, cache_mode="shared", host_tier="node")
    with pytest.raises(ValueError, match="host_tier is an option of distributed stores"):
        tierfs.open(dataset, host_tier="per_host")
    if not torch.cuda.is_available():
        with pytest.raises(NotImplementedError, match="gpu_cache=.* cannot be emulated"):
            tierfs.open(dataset, gpu_cache=HOST_CACHE, host_cache=HOST_CACHE, cache_mode="shared", host_tier="per_host")
