"""store.place(fanouts=...): topology+feature placement through tfs_place_json (`tierfs place`)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tierfs

from conftest import rng

POLICIES = ["unified", "unified-pcie", "topology-first", "features-first", "degree", "random", "none"]


@pytest.fixture(scope="module")
def place_dir(graph, tmp_path_factory):
    """A private copy of the `graph` dataset: placements are saved beside it."""
    d = tmp_path_factory.mktemp("place") / "graph"
    return str(tierfs.ingest(d, graph["edges"], graph["x"], labels=graph["y"], splits=graph["splits"]))


def test_place_report_then_load(place_dir, graph):
    with tierfs.open(place_dir, host_cache="96KiB") as s:
        r = s.place(fanouts=[5, 3], batch_size=64)
        assert r["source"] == "computed" and not r["loaded"] and r["saved"]
        assert r["file"] == os.path.join(place_dir, "placement.v1.bin") and os.path.exists(r["file"])
        assert r["fanouts"] == [5, 3] and r["batch_size"] == 64 and r["policy"] == "unified"
        assert r["seed_source"] == "train split" and r["profile_seeds"] >= len(graph["splits"]["train"])
        assert r["profile_batches"] % -(-len(graph["splits"]["train"]) // 64) == 0 and len(r["convergence"]) >= 1
        assert r["budget"]["host_bytes"] == 96 << 10 and r["budget"]["gpu_bytes"] == 0
        assert r["nodes"] == graph["n"] and r["row_bytes"] == 4 * graph["dim"]
        assert {(u["kind"], u["tier"]) for u in r["usage"]} == {(k, t) for k in ("topology", "feature") for t in ("gpu", "host", "ssd")}
        for k in ("topology", "feature"):
            assert sum(u["items"] for u in r["usage"] if u["kind"] == k) == graph["n"]
        assert sum(u["bytes"] for u in r["usage"] if u["tier"] == "host") <= 96 << 10
        assert [c["policy"] for c in r["comparison"]] == POLICIES
        assert [c["policy"] for c in r["comparison"] if c["chosen"]] == ["unified"]
        by = {c["policy"]: c for c in r["comparison"]}
        assert by["none"]["topology_memory_bytes"] == by["none"]["feature_memory_bytes"] == 0
        assert by["unified"]["pcie_bytes_per_batch"] <= by["none"]["pcie_bytes_per_batch"]
        for c in r["comparison"]:
            assert c["topology_memory_bytes"] + c["feature_memory_bytes"] <= 96 << 10
            assert c["per_batch"]["total"]["pcie_bytes"] == c["pcie_bytes_per_batch"]
            assert c["per_batch"]["total"]["ssd_bytes"] == c["ssd_bytes_per_batch"]
        feat_host = next(u for u in r["usage"] if u["kind"] == "feature" and u["tier"] == "host")
        assert {t["tier"]: t for t in s.stats()["tiers"]}["host"]["rows_held"] == feat_host["items"]

        again = s.place(fanouts=[5, 3], batch_size=64)
        assert again["source"] == "loaded" and again["loaded"] and not again["saved"]
        assert again["usage"] == r["usage"]
        assert [c["pcie_bytes_per_batch"] for c in again["comparison"]] == [c["pcie_bytes_per_batch"] for c in r["comparison"]]

        other = s.place(fanouts=[5, 3], batch_size=64, policy="features-first")
        assert other["source"] == "replanned" and other["policy"] == "features-first"
        assert [c["policy"] for c in other["comparison"] if c["chosen"]] == ["features-first"]
        assert s.place(fanouts=[5, 3], batch_size=64, recompute=True, batches=3)["source"] == "computed"

    # A new store on the same dataset loads what the first saved.
    with tierfs.open(place_dir, host_cache="96KiB") as s2:
        assert s2.place(fanouts=[5, 3], batch_size=64)["source"] == "loaded"


def test_gather_unchanged_after_place(place_dir, graph):
    r = rng(71)
    ids = r.integers(0, graph["n"], 5000)
    with tierfs.open(place_dir) as plain:
        want = plain.gather(ids)
    np.testing.assert_array_equal(want, graph["x"][ids])
    for policy in ("unified", "topology-first", "random"):
        with tierfs.open(place_dir, host_cache="128KiB", topology_memory=False) as s:
            before = s.sampler([4, 2], seed=5).sample(ids[:50])
            rep = s.place(fanouts=[4, 2], batch_size=100, policy=policy)
            assert rep["policy"] == policy
            np.testing.assert_array_equal(s.gather(ids), want)
            after = s.sampler([4, 2], seed=5).sample(ids[:50])
            np.testing.assert_array_equal(before.nodes, after.nodes)
            np.testing.assert_array_equal(before.row, after.row)
            np.testing.assert_array_equal(before.col, after.col)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(fanouts=[5]), ["batch_size"]),
        (dict(batch_size=10), ["fanouts"]),
        (dict(hotness=np.ones(3000), fanouts=[5], batch_size=10), ["not both"]),
        (dict(fanouts=[5], batch_size=0), ["batch size 0"]),
        (dict(fanouts=[], batch_size=10), ["fanouts"]),
        (dict(fanouts=[5], batch_size=10, policy="hottest"), ["hottest", "unified"]),
        (dict(fanouts=[5], batch_size=10, host_bytes=-5), ["-5"]),
        (dict(fanouts=[5], batch_size=10, host_bytes=1 << 60), ["available memory"]),
        (dict(fanouts=[5], batch_size=10, batches=-1), ["-1"]),
        (dict(fanouts=[5], batch_size=10, host_bytes=1 << 20), ["feature rows in memory"]),
    ],
)
def test_place_bad_input(place_dir, kwargs, words):
    with tierfs.open(place_dir, host_cache="64KiB") as s:
        with pytest.raises(ValueError) as e:
            s.place(**kwargs)
        for w in words:
            assert w in str(e.value)


def test_place_batch_larger_than_the_seeds(place_dir, graph):
    """A batch of 10**14 seeds (reported once as an internal bug) is one batch of every seed."""
    with tierfs.open(place_dir, host_cache="96KiB") as s:
        r = s.place(fanouts=[5, 3], batch_size=10**14)
        assert r["batch_size"] == 10**14 and r["profile_seeds"] >= len(graph["splits"]["train"])
