"""store.advise: Hyperion's TPC model through tfs_advise_json (the JSON of `tierfs advise`)."""

from __future__ import annotations

import json
import subprocess

import pytest

import tierfs


def test_advise_report_shape_and_arithmetic(store):
    r = store.advise([5, 3], 64, ssd_price=150, machine_price=3000, batches=3, ssd_iops=100_000, pcie_gbps=10, alpha_us=50, max_ssds=4)
    assert r["recommended_ssds"] in range(1, 5)
    assert [c["ssds"] for c in r["configs"]] == [1, 2, 3, 4]
    w, m = r["workload"], r["machine"]
    assert w["batch_size"] == 64 and w["fanouts"] == [5, 3] and w["batches_measured"] == 3
    assert {t["tier"] for t in w["tiers"]} >= {"host", "ssd"}
    assert w["rows"] == pytest.approx(sum(t["rows"] for t in w["tiers"]))
    assert m["ssd_iops"] == 100_000 and m["link_bytes_per_s"] == 10e9 and m["alpha_seconds"] == pytest.approx(50e-6)
    ssd = next(t for t in w["tiers"] if t["tier"] == "ssd")
    host = next(t for t in w["tiers"] if t["tier"] == "host")
    for c in r["configs"]:
        q = c["ssds"]
        assert c["price"] == 150 * q + 3000
        if w["ssd_blocks"] > 0:  # block_cost 1 (not measured): every block is a transaction
            assert c["n_ssd"] == pytest.approx(w["ssd_blocks"])
            assert c["t_ssd_s"] == pytest.approx(w["ssd_blocks"] / (100_000 * q) + 50e-6)
        assert c["t_pcie_s"] == pytest.approx((ssd["bytes"] + host["bytes"]) / 10e9)
        assert c["seeds_per_s"] == pytest.approx(64 / c["t_batch_s"])
        assert c["tpc"] == pytest.approx(c["seeds_per_s"] / c["price"])
        assert c["bottleneck"] in ("ssd", "pcie", "sample", "train")
    best = max(r["configs"], key=lambda c: (c["tpc"], -c["ssds"]))
    assert r["recommended"]["ssds"] == r["recommended_ssds"]
    assert r["recommended"]["tpc"] == pytest.approx(best["tpc"])


def test_advise_train_bound_recommends_one_ssd(store):
    r = store.advise([5], 32, ssd_price=100, machine_price=1000, batches=2, train_ms=10_000, ssd_iops=1e6, alpha_us=1)
    assert all(c["bottleneck"] == "train" for c in r["configs"])
    assert r["recommended_ssds"] == 1


def test_advise_measure_and_check(store):
    r = store.advise([5, 3], 64, ssd_price=150, machine_price=3000, batches=3, measure=True, check=True)
    p = r["machine"]["probe"]
    assert 0 < p["block_cost"] <= 1 and r["machine"]["block_cost"] == p["block_cost"]
    assert r["machine"]["measured"] and p["iops"] > 0 and p["alpha_seconds"] > 0 and p["reads"] > 0
    assert r["check"]["measured_seeds_per_s"] > 0 and r["check"]["ratio"] > 0
    assert r["current"]["ssds"] == r["machine"]["current_ssds"]


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(ssd_price=0, machine_price=3000), ["SSD price", "0"]),
        (dict(ssd_price=150, machine_price=-1), ["machine price", "-1"]),
        (dict(ssd_price=150, machine_price=3000, budget=1000), ["budget 1000", "3150"]),
        (dict(ssd_price=150, machine_price=3000, ssd_iops=-5), ["SSD IOPS", "-5"]),
        (dict(ssd_price=150, machine_price=3000, mode="sideways"), ["sideways"]),
    ],
)
def test_advise_errors_name_the_numbers(store, kwargs, words):
    with pytest.raises(ValueError) as e:
        store.advise([5], 16, batches=1, **kwargs)
    assert isinstance(e.value, tierfs.InvalidArgumentError)
    for w in words:
        assert w in str(e.value)


def test_advise_bad_batch(store):
    with pytest.raises(ValueError, match="batch size = 0"):
        store.advise([5], 0, ssd_price=1, machine_price=1)


def test_advise_closed_store(graph):
    s = tierfs.open(graph["path"])
    s.close()
    with pytest.raises(tierfs.ClosedError):
        s.advise([5], 16, ssd_price=1, machine_price=1)


def test_advise_cli_json_matches_shape(cli, graph, tmp_path):
    png = tmp_path / "tpc.png"
    out = subprocess.run(
        [cli, "advise", graph["path"], "--fanouts", "5,3", "--batch-size", "64", "--batches", "2", "--ssd-price", "150",
         "--machine-price", "3000", "--max-ssds", "3", "--json", "--plot", str(png)],
        check=True, capture_output=True, text=True,
    ).stdout
    r = json.loads(out)
    assert [c["ssds"] for c in r["configs"]] == [1, 2, 3]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
