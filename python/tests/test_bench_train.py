"""`tierfs bench train` (tierfs.benchtrain) as a smoke test on the CPU: every configuration runs a
few batches of a tiny synthetic graph and reports positive seeds/s (memmap-budget may instead be
skipped with its reason: it needs a cgroup v2 memory limit); the plots draw from the JSON alone.
Figures are not checked: they come from the GPU machine (docs/bench-train.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import tierfs
from tierfs import benchtrain

from conftest import SEED


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench-train")
    ds = tierfs.synth(d / "g", nodes=4000, avg_degree=8, dim=16, classes=4, seed=SEED % 1000 + 1)
    out = d / "out.json"
    rc = benchtrain.main([
        str(ds), "--device", "cpu", "--models", "sage,gcn", "--hidden", "16", "--fanouts", "4,3/3,2,2",
        "--batch-sizes", "64", "--batches", "2", "--warmup", "1", "--sweep-host", "0.05,0.3",
        "--disk-iops", "50000", "--seed", str(SEED), "--json", str(out),
    ])
    assert rc == 0
    with open(out) as f:
        return json.load(f), str(out)


def test_every_configuration_runs(report):
    rep, _ = report
    assert rep["seed"] == SEED
    combos = {(r["model"], tuple(r["fanouts"]), r["batch_size"]) for r in rep["results"]}
    assert combos == {("sage", (4, 3), 64), ("gcn", (4, 3), 64), ("sage", (3, 2, 2), 64), ("gcn", (3, 2, 2), 64)}
    for combo in combos:
        got = {r["config"]: r for r in rep["results"] if (r["model"], tuple(r["fanouts"]), r["batch_size"]) == combo}
        assert set(got) == set(benchtrain.CONFIGS), combo
        for cfg, r in got.items():
            if cfg == "memmap-budget" and r.get("skipped"):
                assert "memory limit" in r["skipped"] or "cgroup" in r["skipped"]
                continue
            assert r["seeds_per_s"] > 0 and r["timed_batches"] >= 1, (combo, cfg, r)
            assert r["epoch_seconds"] > 0 and r["stage_ms_per_batch"]["train_host"] > 0
        # the tiered store misses some rows; the cached one none
        assert got["tierfs-serial"]["ssd_rows_per_batch"] > 0
        assert got["tierfs-cached"]["ssd_rows_per_batch"] == 0
        assert got["tierfs-planned"]["plan_stats_delta"]["batches"] >= 1
    heads = {(h["model"], tuple(h["fanouts"])): h for h in rep["summary"]}
    for h in heads.values():
        # the bound counts distinct 4 KiB blocks read: at least one for a batch with SSD rows,
        # never more than the blocks those rows span
        rb = rep["row_bytes"]
        assert 0 < h["disk_blocks_per_batch"] <= h["ssd_rows_per_batch"] * (-(-rb // 4096) + 1)
        assert h["disk_bound_seeds_per_s"] == pytest.approx(50000 / h["disk_blocks_per_batch"] * 64)
        # the limit overlaps sampling with training; the serial loop is kept beside it
        assert h["memory_gpu_overlap_gain"] > 0
        assert h["pipelined_over_limit"] > 0 and h["cached_over_memory_gpu"] > 0
        # same batches, same model init: every configuration but planned trains the same losses
        assert h["max_loss_diff"] < 1e-4
    sweep = rep["sweep"]["points"]
    assert [p["seeds_per_s"] > 0 for p in sweep] == [True, True]
    held = [p["placement"]["rows_held"]["host"] for p in sweep]
    assert held[0] < held[1]  # the sweep re-placed the host tier at each size


def test_plot_only(report, tmp_path):
    _, path = report
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib is not installed (python/requirements-test.txt pins it): plots not checked")
    assert benchtrain.main(["--plot-only", path, "--plots", str(tmp_path)]) == 0
    for name in ("epoch-time.png", "stages.png", "seeds-vs-cache.png"):
        p = tmp_path / name
        assert p.stat().st_size > 1000
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_runs_the_module(cli, report):
    env = dict(os.environ, TIERFS_PYTHON=sys.executable)
    r = subprocess.run([cli, "bench", "train", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--planned-epoch" in r.stdout
    r = subprocess.run([cli, "bench", "train", "x"], capture_output=True, text=True,
                       env=dict(env, TIERFS_PYTHON="/nonexistent/python"), timeout=60)
    assert r.returncode != 0 and "TIERFS_PYTHON" in r.stderr
