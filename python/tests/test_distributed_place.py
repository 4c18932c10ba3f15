"""DistributedStore.place: a placement from counts summed over the ranks (each rank profiles its
own share of the seeds), with two real CPU processes over gloo (test_distributed's spawn). The
ranking is checked against one made here from plain stores (each rank's Store.profile_reads of
its split_seeds share, summed); rows against the plain store's gather. The seed is printed."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tierfs  # noqa: E402
from test_distributed import BACKEND, GPU_CACHE, HOST_CACHE, NODES, WORLD, _check, _eq  # noqa: E402
from test_distributed import _spawn as spawn_ranks  # noqa: E402
from test_distributed import dataset  # noqa: E402,F401  (the module's fixture)

STRIDE = 1 << 32  # a rank's sampling seed is seed + rank * STRIDE (tierfs.distributed)


def _spawn(scenario: str, path: str, out_dir, seed: int) -> list:
    return spawn_ranks(scenario, path, out_dir, seed, timeout=30.0, module=__name__)


def _profile_ranking(ref, summed: np.ndarray, k: int, node_type=None) -> list:
    """The k rows a profiled placement caches, hottest first, computed with Python's sort: the
    rows read by summed count, ties by the plain store's own ranking (in-degree), then id; then
    the rows never read, by the store's ranking."""
    own = ref.hottest(k, None, node_type=node_type).tolist()
    pos = {v: i for i, v in enumerate(own)}
    read = sorted((v for v in range(summed.shape[0]) if summed[v] > 0), key=lambda v: (-int(summed[v]), pos.get(v, k), v))[:k]
    taken = set(read)
    return read + [v for v in own if v not in taken][: k - len(read)]


def _owner_of(ranking, rows: int, glob: int) -> list:
    """The owner table of a ranking: its glob hottest rows round-robin, -1 elsewhere."""
    owner = [-1] * rows
    for j, v in enumerate(ranking[:glob]):
        owner[v] = j % WORLD
    return owner


def _expected_owner(ref, summed: np.ndarray, glob: int, nxt: int, profiled: bool = True) -> list:
    """The owner table a placement by summed counts makes (profiled: see _profile_ranking;
    hotness: Store.hottest of the sum)."""
    if profiled:
        ranking = _profile_ranking(ref, summed, glob + nxt)
    else:
        ranking = ref.hottest(glob + nxt, np.clip(summed, 0, np.iinfo(np.uint32).max).astype(np.uint32)).tolist()
    return _owner_of(ranking, ref.num_nodes(), glob)


def _batches(ref, train: np.ndarray, rank: int, seed: int, batch_size: int) -> list:
    """This rank's batches of an epoch-0 loader (split_seeds with seed), every in-neighbor
    sampled: the node sets a profile with fanouts [-1] counts, exactly."""
    share = tierfs.split_seeds(train, rank, WORLD, 0, seed)
    sampler = ref.sampler([-1])
    return [sampler.sample(share[lo : lo + batch_size]).nodes for lo in range(0, share.shape[0], batch_size)]


def _ssd_rows(s, ref, batches: list, what: str, res: dict) -> int:
    before = s.stats()["distributed"]["ssd_rows"]
    for b, nodes in enumerate(batches):
        _check(_eq(s.gather(nodes), ref.gather(nodes)), f"{what}: batch {b}", res)
    return s.stats()["distributed"]["ssd_rows"] - before


def _place(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    train = ref.split("train")
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    batches = _batches(ref, train, rank, seed, 64)
    res["batches"] = len(batches)
    res["degree_ssd_rows"] = _ssd_rows(s, ref, batches, "in-degree ownership", res)
    res["degree_owner"] = s.owner(np.arange(NODES)).tolist()

    # 1. Profiled by the very batches gathered next (fanouts [-1]: the samples are known).
    rep = s.place(fanouts=[-1], batch_size=64, seed=seed)
    d = s.stats()["distributed"]
    _check(d["batches"] == 0, "place starts the counters again", res)
    res["report"] = rep
    res["layout"] = dict(glob=d["global_cache_rows"], nxt=d["next_hottest_rows"])
    res["owner"] = s.owner(np.arange(NODES)).tolist()
    res["profile_ssd_rows"] = _ssd_rows(s, ref, batches, "profiled ownership", res)
    rng = np.random.default_rng([seed, rank])
    ids = rng.integers(0, NODES, size=700 + 200 * rank)
    _check(_eq(s.gather(ids), ref.gather(ids)), "profiled: random ids", res)

    # 2. Sampled fanouts and more batches than an epoch.
    s.place(fanouts=[5, 3], batch_size=32, batches=9, seed=seed + 1)
    res["owner_sampled"] = s.owner(np.arange(NODES)).tolist()
    _check(_eq(s.gather(ids), ref.gather(ids)), "sampled profile: random ids", res)

    # 3. Each rank's own hotness, summed.
    mine = np.random.default_rng([seed, 99, rank]).integers(0, 1000, size=NODES)
    rep = s.place(mine)
    res["hotness_source"] = rep["source"]
    res["owner_hotness"] = s.owner(np.arange(NODES)).tolist()
    _check(_eq(s.gather(ids), ref.gather(ids)), "summed hotness: random ids", res)

    # 4. A bad argument on every rank: the same error everywhere, and the store still works.
    for kwargs in (dict(fanouts=[5], batch_size=0), dict(fanouts=[5]), dict(fanouts=[5], batch_size=8, policy="degree")):
        try:
            s.place(**kwargs)
            res.setdefault("bad", []).append("no error")
        except (ValueError, NotImplementedError) as e:
            res.setdefault("bad", []).append(f"{type(e).__name__}: {e}")
    # A bad argument on rank 1 only: its own error there, PeerError naming it on rank 0, at once.
    t0 = time.perf_counter()
    try:
        s.place(fanouts=[5], batch_size=8, seeds=[1, 2, NODES - 1 + rank])  # in range on rank 0 only
        res["one_bad"] = "no error"
    except (IndexError, tierfs.PeerError) as e:
        res["one_bad"] = f"{type(e).__name__}: {e}"
    res["one_bad_s"] = time.perf_counter() - t0
    _check(_eq(s.gather(ids[:50]), ref.gather(ids[:50])), "after bad arguments", res)
    s.close()
    ref.close()


def test_place_sums_every_ranks_profile(dataset, tmp_path):  # noqa: F811
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("place", dataset, tmp_path, seed)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    glob, nxt = r0["layout"]["glob"], r0["layout"]["nxt"]
    with tierfs.open(dataset) as ref:
        train = ref.split("train")
        shares = [tierfs.split_seeds(train, r, WORLD, 0, seed) for r in range(WORLD)]
        # 1. fanouts [-1], one epoch
        summed = sum(ref.profile_reads([-1], 64, seeds=shares[r], seed=seed + r * STRIDE).astype(np.int64) for r in range(WORLD))
        want = _expected_owner(ref, summed, glob, nxt)
        assert r0["owner"] == r1["owner"] == want, f"seed {seed}"
        assert r0["report"]["source"] == "profile" and r0["report"]["batches"] == r0["batches"]
        assert r0["report"]["rows_read"] == int(np.count_nonzero(summed))
        # 2. sampled fanouts, 9 batches of 32 (seed + 1: the split's shuffle and the sampling)
        shares = [tierfs.split_seeds(train, r, WORLD, 0, seed + 1) for r in range(WORLD)]
        summed = sum(ref.profile_reads([5, 3], 32, batches=9, seeds=shares[r], seed=seed + 1 + r * STRIDE).astype(np.int64)
                     for r in range(WORLD))
        assert r0["owner_sampled"] == r1["owner_sampled"] == _expected_owner(ref, summed, glob, nxt), f"seed {seed}"
        # 3. each rank's hotness, summed
        summed = sum(np.random.default_rng([seed, 99, r]).integers(0, 1000, size=NODES) for r in range(WORLD))
        assert r0["hotness_source"] == "hotness"
        assert r0["owner_hotness"] == r1["owner_hotness"] == _expected_owner(ref, summed, glob, nxt, profiled=False), f"seed {seed}"
    # The rows cached (global cache and next) are the top of the summed counts of exactly the
    # batches gathered, so the ranks together read at most as many rows from SSD as with
    # in-degree ownership (the top-k of the summed counts leaves the fewest reads outside it).
    profiled = r0["profile_ssd_rows"] + r1["profile_ssd_rows"]
    degree = r0["degree_ssd_rows"] + r1["degree_ssd_rows"]
    print(f"SSD rows per batch (both ranks): in-degree {degree / (2 * r0['batches']):.1f}, profiled {profiled / (2 * r0['batches']):.1f}")
    assert profiled <= degree, (profiled, degree)
    # Bad arguments: the same clear error on both ranks, naming the argument.
    assert r0["bad"] == r1["bad"]
    assert r0["bad"][0].startswith("InvalidArgumentError") and "batch_size = 0" in r0["bad"][0]
    assert r0["bad"][1].startswith("InvalidArgumentError") and "batch_size" in r0["bad"][1]
    assert r0["bad"][2].startswith("NotSupportedError") and "policy" in r0["bad"][2]
    assert r1["one_bad"].startswith("OutOfRangeError") and f"= {NODES}" in r1["one_bad"], r1["one_bad"]
    assert r0["one_bad"].startswith("PeerError") and "rank 1" in r0["one_bad"] and "seeds[2]" in r0["one_bad"], r0["one_bad"]
    assert r0["one_bad_s"] < 10 and r1["one_bad_s"] < 10


@pytest.mark.parametrize("fanouts, batch_size, batches", [([4, 2], 50, 5), ([2], 4, 1)])  # the second reads fewer rows than fit
def test_place_on_one_rank(dataset, fanouts, batch_size, batches):  # noqa: F811
    """One rank (no process group): the ranking of its own profile (the rows it never read by
    in-degree), the plain store's rows."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    with tierfs.open(dataset) as ref, tierfs.open(dataset, host_cache=HOST_CACHE, cache_mode="shared") as s:
        rep = s.place(fanouts=fanouts, batch_size=batch_size, batches=batches, seed=seed)
        counts = ref.profile_reads(fanouts, batch_size, batches=batches, seeds=tierfs.split_seeds(ref.split("train"), 0, 1, 0, seed), seed=seed)
        d = s.stats()["distributed"]
        assert d["global_cache_rows"] == rep["global_cache_rows"] > 0
        want = np.array(_profile_ranking(ref, counts, d["global_cache_rows"] + d["next_hottest_rows"]))
        rest = np.setdiff1d(np.arange(NODES), want)
        # the rows of the ranking are in memory, every other row on SSD
        for ids, ssd in ((want, 0), (rest, rest.size)):
            before = s.stats()["distributed"]["ssd_rows"]
            assert np.array_equal(s.gather(ids), ref.gather(ids))
            assert s.stats()["distributed"]["ssd_rows"] - before == ssd, f"seed {seed}"
        ids = np.random.default_rng(seed).integers(0, NODES, 500)
        assert np.array_equal(s.gather(ids), ref.gather(ids))
        assert rep["source"] == "profile" and rep["batches"] == batches and rep["seconds"] >= rep["fill_s"] >= 0
        assert rep["rows_read"] == int(np.count_nonzero(counts))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(fanouts=[], batch_size=8), ValueError, ["fanouts", "empty"]),
        (dict(fanouts=[5], batch_size=-1), ValueError, ["batch_size = -1"]),
        (dict(fanouts=[5], batch_size=8, batches=0), ValueError, ["batches = 0"]),
        (dict(batch_size=8), ValueError, ["fanouts", "batch_size"]),
        (dict(fanouts=[5], batch_size=8, seeds=[]), ValueError, ["seeds", "empty"]),
        (dict(fanouts=[5], batch_size=8, seeds=[3, NODES]), IndexError, ["seeds[1]", str(NODES)]),
        (dict(fanouts=[5], batch_size=8, seed="x"), ValueError, ["seed = 'x'"]),
        (dict(hotness=np.ones(NODES), fanouts=[5], batch_size=8), ValueError, ["hotness", "fanouts"]),
        (dict(fanouts=[5], batch_size=8, epochs=2), NotImplementedError, ["epochs"]),
        (dict(fanouts=[5], batch_size=8, host_bytes=1 << 20, recompute=True), NotImplementedError, ["host_bytes", "recompute"]),
        (dict(hotness=np.ones(NODES - 1)), ValueError, ["hotness", str(NODES)]),
    ],
)
def test_place_bad_arguments(dataset, kwargs, error, words):  # noqa: F811
    with tierfs.open(dataset) as ref, tierfs.open(dataset, host_cache=HOST_CACHE, cache_mode="shared") as s:
        before = s.owner(np.arange(NODES))
        with pytest.raises(error) as e:
            s.place(**kwargs)
        for w in words:
            assert w in str(e.value), str(e.value)
        assert np.array_equal(s.owner(np.arange(NODES)), before)  # nothing changed
        ids = np.arange(0, NODES, 11)
        assert np.array_equal(s.gather(ids), ref.gather(ids))


def test_stats_say_how_peer_rows_travel(dataset, tmp_path):  # noqa: F811
    r0, r1 = _spawn("paths", dataset, tmp_path, 0)
    for r in (r0, r1):
        assert not r.get("failed"), r["failed"]
        want = "host memory (gloo)" if BACKEND != "nccl" else None
        if want is not None:
            assert r["peer_path"] == want and r["peer_paths"] == {str(1 - r["rank"]): want}
        path = r["peer_path"]
        assert set(r["by_path"]) == {path}
        assert r["by_path"][path]["peer_bytes_received"] == r["per_batch_received"] > 0
        assert r["by_path"][path]["peer_bytes_sent"] == r["per_batch_sent"] > 0
        assert r["exchange_ms"] > 0
    assert r0["replicated_path"] == r1["replicated_path"] == "none (no peer exchange)"


def _paths(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    for b in range(4):
        s.gather(np.arange(b * 300, b * 300 + 500))
    d = s.stats()["distributed"]
    res.update(rank=rank, peer_path=d["peer_path"], peer_paths=d["peer_paths"], by_path=d["per_batch"]["by_path"],
               per_batch_received=d["per_batch"]["peer_bytes_received"], per_batch_sent=d["per_batch"]["peer_bytes_sent"],
               exchange_ms=d["per_batch"]["exchange_ms"])
    s.close()
    r = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="replicated", timeout=timeout)
    res["replicated_path"] = r.stats()["distributed"]["peer_path"]
    r.close()


def _place_per_host(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    s = tierfs.open(path, host_cache=2 * HOST_CACHE, cache_mode="shared", host_tier="per_host", timeout=timeout)
    batches = _batches(ref, ref.split("train"), rank, seed, 64)
    res["degree_ssd_rows"] = _ssd_rows(s, ref, batches, "per_host, in-degree", res)
    s.place(fanouts=[-1], batch_size=64, seed=seed)
    res["profile_ssd_rows"] = _ssd_rows(s, ref, batches, "per_host, profiled", res)
    res["host_tier"] = s.stats()["distributed"]["host_tier"]
    s.close()
    ref.close()


def test_place_refills_a_per_host_tier(dataset, tmp_path):  # noqa: F811
    """host_tier="per_host": place fills the host's shared tier again (a new file, mapped by the
    other rank) from the summed profile; the rows stay the plain store's."""
    if BACKEND == "nccl":
        pytest.skip("per_host without gpu_cache is the CPU layout")
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("place_per_host", dataset, tmp_path, seed)
    for r in (r0, r1):
        assert not r.get("failed"), f"seed {seed}: {r['failed']}"
        assert r["host_tier"]["ranks_sharing"] == WORLD and r["host_tier"]["rows"] > 0
    assert r0["host_tier"]["rows_held"] > 0 and r1["host_tier"]["rows_held"] == 0  # one tier, held once
    # The shared tier holds the top of the summed counts of exactly these batches: no more SSD reads.
    assert r0["profile_ssd_rows"] + r1["profile_ssd_rows"] <= r0["degree_ssd_rows"] + r1["degree_ssd_rows"]


# A graph of several node types ---------------------------------------------------------------

from test_distributed_hetero import ETYPES, FEATURED, TYPES  # noqa: E402
from test_distributed_hetero import GPU_CACHE as HETERO_GPU_CACHE  # noqa: E402
from test_distributed_hetero import HOST_CACHE as HETERO_HOST_CACHE  # noqa: E402
from test_distributed_hetero import hetero  # noqa: E402,F401  (the module's fixture)

EVERY_NEIGHBOR = {e: [-1] for e in ETYPES}


def _hetero_batches(ref, rank: int, seed: int, batch_size: int) -> list:
    share = tierfs.split_seeds(ref.split("train", node_type="paper"), rank, WORLD, 0, seed)
    sampler = ref.sampler(EVERY_NEIGHBOR)
    return [sampler.sample(share[lo : lo + batch_size], "paper").node for lo in range(0, share.shape[0], batch_size)]


def test_profile_reads_of_several_types(hetero):  # noqa: F811
    """Store.profile_reads with fanouts per edge type counts, per type, the batches whose
    every-neighbor sample (a typed Sampler.sample, another code path) reaches each row. Its batches
    are slices of a fresh permutation, so each batch here holds every seed (a known node set)."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    with tierfs.open(hetero) as ref:
        seeds = np.random.default_rng(seed).permutation(ref.split("train", node_type="paper"))[:60]
        node = ref.sampler(EVERY_NEIGHBOR).sample(seeds, "paper").node
        for batches in (None, 3):
            got = ref.profile_reads(EVERY_NEIGHBOR, seeds.shape[0], batches=batches, seeds=seeds, seed=seed, node_type="paper")
            assert set(got) == set(FEATURED)
            for t in FEATURED:
                want = np.zeros(TYPES[t][0], dtype=np.int64)
                if t in node:
                    want[np.unique(node[t])] = batches or 1
                assert got[t].dtype == np.uint32 and np.array_equal(got[t].astype(np.int64), want), (t, batches, seed)
        # one pass of full batches: 60 seeds in batches of 25 are 2 batches, each reads its 25 seeds
        got = ref.profile_reads(EVERY_NEIGHBOR, 25, seeds=seeds, seed=seed, node_type="paper")
        assert int(got["paper"][seeds].sum()) >= 50 and int(got["paper"][seeds].max()) <= 2
        with pytest.raises(KeyError, match="nosuch"):
            ref.profile_reads(EVERY_NEIGHBOR, 40, seeds=seeds, node_type="nosuch")


def _hetero_place(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    s = tierfs.open(path, gpu_cache=HETERO_GPU_CACHE, host_cache=HETERO_HOST_CACHE, cache_mode="shared", timeout=timeout)
    rep = s.place(fanouts=EVERY_NEIGHBOR, batch_size=32, seed=seed, node_type="paper")
    res["report"] = rep
    d = s.stats()["distributed"]["node_types"]
    res["layout"] = {t: dict(glob=d[t]["global_cache_rows"], nxt=d[t]["next_hottest_rows"]) for t in FEATURED}
    res["owner"] = {t: s.owner(np.arange(TYPES[t][0]), node_type=t).tolist() for t in FEATURED}
    for b, node in enumerate(_hetero_batches(ref, rank, seed, 32)):
        for t in FEATURED:  # every rank gathers every type, in the same order
            ids = node.get(t, np.empty(0, dtype=np.int64))
            _check(_eq(s.gather(ids, node_type=t), ref.gather(ids, node_type=t)), f"batch {b} type {t}", res)
    s.close()
    ref.close()


def test_place_of_several_types_sums_every_ranks_profile(hetero, tmp_path):  # noqa: F811
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("hetero_place", hetero, tmp_path, seed)
    for r in (r0, r1):
        assert not r.get("failed"), f"seed {seed}: {r['failed']}"
    assert r0["report"]["source"] == "profile" and r0["report"]["batches"] == r0["report"]["seeds"] // 32 > 0
    with tierfs.open(hetero) as ref:
        train = ref.split("train", node_type="paper")
        summed = {t: np.zeros(TYPES[t][0], dtype=np.int64) for t in FEATURED}
        for r in range(WORLD):
            got = ref.profile_reads(EVERY_NEIGHBOR, 32, seeds=tierfs.split_seeds(train, r, WORLD, 0, seed), seed=seed + r * STRIDE,
                                    node_type="paper")
            for t in FEATURED:
                summed[t] += got[t]
        for t in FEATURED:
            glob, nxt = r0["layout"][t]["glob"], r0["layout"][t]["nxt"]
            want = _owner_of(_profile_ranking(ref, summed[t], glob + nxt, node_type=t), TYPES[t][0], glob)
            assert r0["owner"][t] == r1["owner"][t] == want, (t, seed)
