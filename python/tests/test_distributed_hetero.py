"""Distributed stores over a heterogeneous dataset (several node types with features), two real
CPU processes over gloo, spawned as in test_distributed.py.

The dataset is a random graph of four node types (three with features of different dtypes and
row sizes, one without) and six edge types, ingested with `tierfs ingest --spec` from arrays drawn
with the printed seed. Every gathered row is compared, bit for bit, with a plain single-process
store's gather of the same ids and node type.
"""

from __future__ import annotations

import json
import random
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tierfs  # noqa: E402
from test_distributed import BACKEND, WORLD, _check, _eq  # noqa: E402
from test_distributed import _spawn as spawn_ranks  # noqa: E402

# node type: (nodes, dim, dtype); "venue" has no features.
TYPES = {"paper": (900, 16, "float32"), "author": (1300, 8, "float16"), "topic": (150, 5, "uint8"), "venue": (40, 0, None)}
ETYPES = [("author", "writes", "paper"), ("paper", "cites", "paper"), ("paper", "written_by", "author"),
          ("topic", "tags", "paper"), ("paper", "has", "topic"), ("venue", "hosts", "paper")]
FEATURED = ["paper", "author", "topic"]
# Budgets of the whole session, split over the types by their bytes (rows x row bytes).
GPU_CACHE = 24 << 10
HOST_CACHE = 24 << 10


@pytest.fixture(scope="module")
def hetero(tmp_path_factory, cli):
    seed = random.randrange(1 << 30)
    print(f"dataset seed {seed}")
    r = np.random.default_rng(seed)
    tmp = tmp_path_factory.mktemp("disthetero")
    node_types = []
    for t, (n, dim, dtype) in TYPES.items():
        nt = {"name": t, "num_nodes": n, "features": []}
        if dtype is not None:
            x = (r.standard_normal((n, dim)) * 50).astype(dtype) if dtype != "uint8" else r.integers(0, 256, (n, dim), dtype=np.uint8)
            np.save(tmp / f"{t}_x.npy", x)
            nt["features"].append({"name": "x", "path": str(tmp / f"{t}_x.npy")})
        if t == "paper":
            np.save(tmp / "paper_y.npy", r.integers(0, 4, n))
            nt["labels"] = str(tmp / "paper_y.npy")
            (tmp / "splits").mkdir()
            perm = r.permutation(n)
            for name, part in (("train", perm[:500]), ("val", perm[500:600]), ("test", perm[600:700])):
                np.save(tmp / "splits" / f"{name}.npy", np.sort(part))
            nt["splits"] = str(tmp / "splits")
        node_types.append(nt)
    edge_types = []
    for src, rel, dst in ETYPES:
        e = 4 * TYPES[dst][0]
        edges = np.stack([r.integers(0, TYPES[src][0], e), (r.zipf(1.5, e) - 1) % TYPES[dst][0]]).astype(np.int64)
        path = tmp / f"{src}_{rel}_{dst}.npy"
        np.save(path, edges)
        edge_types.append({"src": src, "rel": rel, "dst": dst, "edges": str(path)})
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"node_types": node_types, "edge_types": edge_types}))
    out = tmp / "ds"
    subprocess.run([cli, "ingest", "--spec", str(spec), str(out)], check=True, capture_output=True)
    return str(out)


def _spawn(scenario: str, dataset: str, out_dir, seed: int, timeout: float = 30.0) -> list:
    """Runs this module's scenario on WORLD spawned ranks (test_distributed's harness)."""
    return spawn_ranks(scenario, dataset, out_dir, seed, timeout, module=__name__)


# Scenarios (run in the workers) ------------------------------------------------------------


def _hetero_exchange(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    other = 1 - rank
    rng = np.random.default_rng([seed, rank])
    for mode in ("shared", "replicated"):
        # shared: author ranked by a hotness of its own (higher ids hotter), the others by neighbors
        hot = {"author": np.arange(TYPES["author"][0])} if mode == "shared" else None
        s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode=mode, timeout=timeout, hotness=hot)
        d = s.stats()["distributed"]
        res[f"{mode}_types"] = {t: {k: d["node_types"][t][k] for k in ("owned_rows", "global_cache_rows", "next_hottest_rows")} for t in FEATURED}
        res[f"{mode}_totals"] = {k: d[k] for k in ("owned_rows", "global_cache_rows", "next_hottest_rows")}
        for t in FEATURED:
            n = TYPES[t][0]
            owner = s.owner(np.arange(n), node_type=t)
            res[f"{mode}_{t}_owned"] = np.flatnonzero(owner == rank).tolist()
            res[f"{mode}_{t}_owner_digest"] = int((owner + 1).astype(np.int64) @ np.arange(n))
            held = {x["tier"]: x["rows_held"] for x in s.stats()["node_types"][t]["tiers"]}
            res[f"{mode}_{t}_held"] = held["host"]
            # random ids, a different count per rank; numpy ids give numpy rows
            ids = rng.integers(0, n, size=200 + 150 * rank)
            got = s.gather(ids, node_type=t)
            _check((BACKEND == "nccl" or isinstance(got, np.ndarray)) and _eq(got, ref.gather(ids, node_type=t)), f"{mode} {t}: random ids", res)
            # repeats and ids the other rank owns, as a torch tensor: a torch tensor comes back
            peer = np.flatnonzero(owner == other)
            rep = np.concatenate([ids[:20], ids[:20], peer[:5], peer[:5], [int(ids[0])] * 7])
            got = s.gather(torch.from_numpy(rep), node_type=t)
            _check(isinstance(got, torch.Tensor) and _eq(got, ref.gather(torch.from_numpy(rep), node_type=t)), f"{mode} {t}: repeated and peer ids", res)
            # into out=
            if BACKEND != "nccl":  # a CUDA store gathers into device memory, not numpy
                out = np.empty((rep.size, TYPES[t][1]), dtype=TYPES[t][2])
                _check(s.gather(rep, out=out, node_type=t) is out and _eq(out, ref.gather(rep, node_type=t)), f"{mode} {t}: out=", res)
            # an empty batch on one rank while the other asks for rows
            for empty_rank in (0, 1):
                batch = np.empty(0, dtype=np.int64) if rank == empty_rank else ids[:50]
                got = s.gather(batch, node_type=t)
                _check(got.shape == (batch.shape[0], TYPES[t][1]) and _eq(got, ref.gather(batch, node_type=t)), f"{mode} {t}: empty batch on rank {empty_rank}", res)
            _check(_eq(s.gather(int(ids[3]), node_type=t), ref.gather(int(ids[3]), node_type=t)), f"{mode} {t}: scalar id", res)
        # the store's own type without node_type
        ids = rng.integers(0, TYPES["paper"][0], 100)
        _check(_eq(s.gather(ids), ref.gather(ids, node_type="paper")), f"{mode}: default type", res)
        after = s.stats()["distributed"]
        res[f"{mode}_peer_rows"] = {t: after["node_types"][t]["peer_rows"] for t in FEATURED}
        res[f"{mode}_peer_rows_total"] = after["peer_rows"]
        # Bad input on rank 1 only: rank 1's error names it, rank 0's names rank 1; the store
        # keeps working afterwards.
        for what, (nt, bad_ids) in {"unknown type": ("nope", [1]), "no features": ("venue", [1]),
                                    "out of range": ("author", [3, TYPES["author"][0] + 7])}.items():
            nt_, ids_ = (nt, bad_ids) if rank == 1 else ("author", [1, 2, 3])
            try:
                s.gather(ids_, node_type=nt_)
                msg = "no error"
            except tierfs.Error as e:
                msg = f"{type(e).__name__}: {e}"
            res.setdefault("bad", {}).setdefault(mode, {})[what] = msg
            _check(_eq(s.gather(ids[:30], node_type="paper"), ref.gather(ids[:30], node_type="paper")), f"{mode}: gather after {what}", res)
        # Ranks gathering different types in the same call: both refuse it, naming the types.
        try:
            s.gather([1, 2], node_type="paper" if rank == 0 else "author")
            msg = "no error"
        except tierfs.Error as e:
            msg = f"{type(e).__name__}: {e}"
        res.setdefault("mixed", {})[mode] = msg
        tids = rng.integers(0, TYPES["topic"][0], 40)
        _check(_eq(s.gather(tids, node_type="topic"), ref.gather(tids, node_type="topic")), f"{mode}: gather after mixed types", res)
        s.close()
    ref.close()


def _hetero_loaders(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    train = s.split("train", node_type="paper")
    fanouts = {et: [4, 3] for et in ETYPES}
    loader = tierfs.Loader(s, s.sampler(fanouts, seed=1), train, batch_size=64, prefetch=3, seed=seed, node_type="paper")
    res["len"] = len(loader)
    for epoch in range(2):
        seeds, n = [], 0
        for batch in loader:
            _check(set(batch.x) == set(FEATURED), f"Loader epoch {epoch} batch {n}: types {sorted(batch.x)}", res)
            for t in FEATURED:
                _check(_eq(batch.x[t], ref.gather(batch.sample.node[t], node_type=t)), f"Loader epoch {epoch} batch {n} type {t}", res)
            _check(_eq(batch.y, ref.labels(batch.seeds, node_type="paper")), f"Loader epoch {epoch} batch {n} labels", res)
            seeds.extend(batch.seeds.tolist())
            n += 1
        res[f"loader_seeds_{epoch}"] = seeds
        res[f"loader_batches_{epoch}"] = n
    from tierfs import pyg as tierfs_pyg

    pl = tierfs_pyg.NeighborLoader(s, fanouts, input_nodes=("paper", "train"), batch_size=48, shuffle=True, drop_last=True, prefetch=2)
    seeds, n = [], 0
    for data in pl:
        for t in FEATURED:
            _check(_eq(data[t].x, ref.gather(data[t].n_id, node_type=t)), f"pyg batch {n} type {t}", res)
        _check(_eq(data["paper"].y, ref.labels(data["paper"].n_id, node_type="paper")), f"pyg batch {n} labels", res)
        seeds.extend(data["paper"].n_id[: data["paper"].batch_size].tolist())
        n += 1
    res["pyg_seeds"], res["pyg_batches"], res["pyg_len"] = seeds, n, len(pl)
    d = s.stats()["distributed"]
    res["peer_rows"] = {t: d["node_types"][t]["peer_rows"] for t in FEATURED}
    s.close()
    ref.close()


def _hetero_planned(rank: int, path: str, seed: int, timeout: float, res: dict) -> None:
    ref = tierfs.open(path)
    s = tierfs.open(path, gpu_cache=GPU_CACHE, host_cache=HOST_CACHE, cache_mode="shared", timeout=timeout)
    train = s.split("train", node_type="paper")
    fanouts = {et: [4, 3] for et in ETYPES}
    k, bs = 2, 64
    loader = tierfs.Loader(s, s.sampler(fanouts, seed=1), torch.from_numpy(train), batch_size=bs, prefetch=3, seed=seed,
                           node_type="paper", planned_epochs=k)
    for epoch in range(k):
        seeds = []
        for n, batch in enumerate(loader):
            _check(set(batch.x) == set(FEATURED), f"planned epoch {epoch} batch {n}: types {sorted(batch.x)}", res)
            for t in FEATURED:
                _check(_eq(batch.x[t], ref.gather(batch.sample.node[t], node_type=t)), f"planned epoch {epoch} batch {n} type {t}", res)
            _check(_eq(batch.y, ref.labels(batch.seeds, node_type="paper")), f"planned epoch {epoch} batch {n} labels", res)
            seeds.append(batch.seeds.tolist())
        share = tierfs.split_seeds(train, rank, WORLD, epoch, seed).tolist()
        _check(seeds == [share[i : i + bs] for i in range(0, len(share), bs)], f"planned epoch {epoch}'s seeds are split_seeds'", res)
        res[f"seeds_{epoch}"] = sum(seeds, [])
    # Per type, the packed rows are the rows the on-demand gather reads from this rank's disk.
    plan = loader.plan
    packed, ssd, peer = {}, {}, {}
    for t in FEATURED:
        owner = s.owner(np.arange(TYPES[t][0]), node_type=t)
        packed[t] = ssd[t] = peer[t] = 0
        for b in range(min(3, plan.batches_per_epoch)):
            nodes = plan.sample(0, b).node[t]
            before = plan.stats()["rows"]
            _check(_eq(plan.gather(0, b, nodes, node_type=t), ref.gather(nodes, node_type=t)), f"plan.gather type {t} batch {b}", res)
            packed[t] += plan.stats()["rows"] - before
            before = s.stats()["distributed"]["node_types"][t]["ssd_rows"]
            s.gather(nodes, node_type=t)
            ssd[t] += s.stats()["distributed"]["node_types"][t]["ssd_rows"] - before
            peer[t] += int(np.count_nonzero((owner[nodes] >= 0) & (owner[nodes] != rank)))
    res["packed"], res["ssd"], res["peer"] = packed, ssd, peer
    plan.close()
    s.close()
    ref.close()


# Tests ---------------------------------------------------------------------------------------


def test_hetero_planned_epochs_on_a_shared_store(hetero, tmp_path):
    """tierfs.Loader(planned_epochs=K) with a sampler of fanouts by edge type on a shared store: each rank's
    planned epoch is its split_seeds share, every type's rows equal the plain store's, and per
    type the packed rows are the rank's own disk rows (the peer-owned ones are exchanged)."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("hetero_planned", hetero, tmp_path, seed, timeout=60.0)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    for e in range(2):
        a, b = r0[f"seeds_{e}"], r1[f"seeds_{e}"]
        assert len(a) == len(b) and len(set(a) | set(b)) == 500 and len(set(a) & set(b)) <= WORLD - 1, f"seed {seed}"
    for r in (r0, r1):
        assert r["packed"] == r["ssd"], f"seed {seed}: {r['packed']} {r['ssd']}"
        assert sum(r["peer"].values()) > 0 and sum(r["packed"].values()) > 0, f"seed {seed}: {r}"
    print("packed rows per type:", r0["packed"], "peer nodes:", r0["peer"])



def test_hetero_exchange_matches_reference(hetero, tmp_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("hetero_exchange", hetero, tmp_path, seed)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    for t in FEATURED:
        # Ownership per (type, row): one table per type on both ranks, disjoint owned sets of
        # equal size, each the rank's share of the type's global cache; replicated: no owners.
        assert r0[f"shared_{t}_owner_digest"] == r1[f"shared_{t}_owner_digest"], t
        own0, own1 = set(r0[f"shared_{t}_owned"]), set(r1[f"shared_{t}_owned"])
        lay = r0["shared_types"][t]
        assert own0 and not own0 & own1 and len(own0) == len(own1) == lay["owned_rows"], (t, lay)
        assert lay["global_cache_rows"] == 2 * lay["owned_rows"], (t, lay)
        # the host tier holds owned + next where it emulates the GPU tier (gloo), next on a GPU
        want_held = lay["next_hottest_rows"] + (lay["owned_rows"] if BACKEND != "nccl" else 0)
        assert r0[f"shared_{t}_held"] == want_held, (t, lay, r0[f"shared_{t}_held"])
        assert r0[f"replicated_{t}_owned"] == [], t
        if t == "author":  # hotness ranks it: rank r owns ranks r, r+2, ... of n-1, n-2, ...
            n = TYPES[t][0]
            for r, got in ((0, r0), (1, r1)):
                assert sorted(got["shared_author_owned"]) == sorted(range(n - 1 - r, n - 1 - 2 * lay["owned_rows"], -2)), r
        # every type's rows crossed between the ranks in shared mode, none in replicated mode
        for r in (r0, r1):
            assert r["shared_peer_rows"][t] > 0 and r["replicated_peer_rows"][t] == 0, (t, r["shared_peer_rows"])
    for r in (r0, r1):
        assert r["shared_totals"]["owned_rows"] == sum(r["shared_types"][t]["owned_rows"] for t in FEATURED)
        assert r["shared_peer_rows_total"] == sum(r["shared_peer_rows"].values())
    print("per type (shared):", r0["shared_types"], "peer rows:", r0["shared_peer_rows"])
    # Bad input on rank 1: its error names the input, rank 0's names rank 1.
    for mode in ("shared", "replicated"):
        b1, b0 = r1["bad"][mode], r0["bad"][mode]
        assert b1["unknown type"].startswith("KeyNotFoundError") and "'nope'" in b1["unknown type"], b1
        assert b1["no features"].startswith("KeyNotFoundError") and "'venue'" in b1["no features"] and "no features" in b1["no features"], b1
        assert b1["out of range"].startswith("OutOfRangeError") and str(TYPES["author"][0] + 7) in b1["out of range"] and "'author'" in b1["out of range"], b1
        for what in b0:
            if mode == "shared":
                assert b0[what].startswith("PeerError") and "rank 1" in b0[what], (what, b0[what])
            else:
                assert b0[what] == "no error", (what, b0[what])
    m0, m1 = r0["mixed"]["shared"], r1["mixed"]["shared"]
    assert m0.startswith("PeerError") and "'author'" in m0 and "'paper'" in m0, m0
    assert m1.startswith("PeerError") and "'author'" in m1 and "'paper'" in m1, m1
    assert r0["mixed"]["replicated"] == r1["mixed"]["replicated"] == "no error"


def test_hetero_loaders_on_a_shared_store(hetero, tmp_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r0, r1 = _spawn("hetero_loaders", hetero, tmp_path, seed)
    for r in (r0, r1):
        assert not r["failed"], f"seed {seed}: {r['failed']}"
    assert r0["len"] == r1["len"] == r0["loader_batches_0"] == r1["loader_batches_0"] == r0["loader_batches_1"] > 0
    for epoch in (0, 1):
        a, b = r0[f"loader_seeds_{epoch}"], r1[f"loader_seeds_{epoch}"]
        assert len(a) == len(b) and len(set(a) | set(b)) == 500
        assert len(set(a) & set(b)) <= WORLD - 1
    assert r0["loader_seeds_0"] != r0["loader_seeds_1"], "each epoch its own order"
    assert r0["pyg_batches"] == r1["pyg_batches"] == r0["pyg_len"] > 0
    assert not set(r0["pyg_seeds"]) & set(r1["pyg_seeds"])  # drop_last: disjoint
    for r in (r0, r1):
        assert all(v > 0 for v in r["peer_rows"].values()), r["peer_rows"]


def test_typed_hottest_and_place_ids(hetero):
    """Store.hottest and place_ids of one node type's tier stack (what ownership is made of)."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    r = np.random.default_rng(seed)
    with tierfs.open(hetero) as ref, tierfs.open(hetero, host_cache=HOST_CACHE) as s:
        n = TYPES["author"][0]
        hot = r.integers(0, 50, n)
        want = np.lexsort((np.arange(n), -hot))[:100]  # hottest first, ties to the smaller id
        assert s.hottest(100, hot, node_type="author").tolist() == want.tolist()
        ranked = s.hottest(n, node_type="author")
        assert sorted(ranked.tolist()) == list(range(n))
        ids = r.permutation(n)[:37]
        s.place_ids(ids, node_type="author")
        tiers = {x["tier"]: x for x in s.stats()["node_types"]["author"]["tiers"]}
        assert tiers["host"]["rows_held"] == 37
        other = {x["tier"]: x["rows_held"] for x in s.stats()["node_types"]["paper"]["tiers"]}
        assert other["host"] > 37  # the other types' tiers are as they were
        before = tiers["host"]["hits"]
        assert _eq(s.gather(ids, node_type="author"), ref.gather(ids, node_type="author"))
        hits = {x["tier"]: x["hits"] for x in s.stats()["node_types"]["author"]["tiers"]}
        assert hits["host"] - before == 37  # every placed row from the host tier
        with pytest.raises(KeyError, match="'nope'"):
            s.hottest(3, node_type="nope")
        with pytest.raises(KeyError, match="'nope'"):
            s.place_ids([1], node_type="nope")
        with pytest.raises(IndexError, match=f"ids\\[1\\] = {n} is out of range"):
            s.place_ids([1, n], node_type="author")
        with pytest.raises(ValueError, match="one entry per node of node type 'author'"):
            s.hottest(3, hotness=[1, 2], node_type="author")


def test_single_rank_hetero_and_hotness_errors(hetero):
    """One rank without a process group serves every type; hotness of several types is a dict."""
    with tierfs.open(hetero) as ref, tierfs.open(hetero, host_cache=HOST_CACHE, cache_mode="shared") as s:
        r = np.random.default_rng(0)
        for t in FEATURED:
            ids = r.integers(0, TYPES[t][0], 200)
            assert _eq(s.gather(ids, node_type=t), ref.gather(ids, node_type=t)), t
        assert set(s.stats()["distributed"]["node_types"]) == set(FEATURED)
        with pytest.raises(KeyError, match="'venue'.*no features"):
            s.gather([0], node_type="venue")
        with pytest.raises(KeyError, match="'venue'.*no features"):
            s.owner([0], node_type="venue")
        with pytest.raises(NotImplementedError, match="ownership"):
            s.place_ids([0], node_type="author")
        # place: hotness per type (summed over the ranks); a profile takes fanouts per edge type
        with pytest.raises(ValueError, match="several node or edge types takes"):
            s.place(fanouts=[3], batch_size=8)
        assert s.place({"author": np.arange(TYPES["author"][0])})["source"] == "hotness"
        for t in FEATURED:
            ids = r.integers(0, TYPES[t][0], 200)
            assert _eq(s.gather(ids, node_type=t), ref.gather(ids, node_type=t)), t
    with pytest.raises(ValueError, match="hotness of a dataset of several node types with features"):
        tierfs.open(hetero, host_cache=HOST_CACHE, cache_mode="shared", hotness=np.ones(TYPES["paper"][0]))
    with pytest.raises(KeyError, match="hotness names node type 'venue'"):
        tierfs.open(hetero, host_cache=HOST_CACHE, cache_mode="shared", hotness={"venue": np.ones(40)})
    with pytest.raises(ValueError, match="node type 'topic'"):
        tierfs.open(hetero, host_cache=HOST_CACHE, cache_mode="shared", hotness={"topic": np.ones(3)})
