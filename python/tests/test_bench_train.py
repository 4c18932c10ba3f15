"""`tierfs bench train` (python/bench/benchtrain.py) as a smoke test on the CPU: every configuration runs a
few batches of a tiny synthetic graph, twice in rotated order (--repeats 2), and reports positive
seeds/s (memmap-budget may instead be skipped with its reason: it needs a cgroup v2 memory
limit); the plots draw from the JSON alone. Figures are not checked: they come from the GPU
machine (docs/bench-train.md)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys

import pytest
import torch

import tierfs

import benchtrain  # python/bench: conftest puts it on sys.path
from conftest import SEED, needs_cuda


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench-train")
    ds = tierfs.synth(d / "g", nodes=4000, avg_degree=8, dim=16, classes=4, seed=SEED % 1000 + 1)
    out = d / "out.json"
    rc = benchtrain.main([
        str(ds), "--device", "cpu", "--models", "sage,gcn", "--hidden", "16", "--fanouts", "4,3/3,2,2",
        "--batch-sizes", "64", "--batches", "2", "--warmup", "1", "--repeats", "2", "--sweep-host", "0.05,0.3",
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
        assert set(got) == set(benchtrain.DEFAULT_CONFIGS), combo
        for cfg, r in got.items():
            if cfg == "memmap-budget" and r.get("skipped"):
                assert "memory limit" in r["skipped"] or "cgroup" in r["skipped"]
                continue
            assert r["seeds_per_s"] > 0 and r["timed_batches"] >= 1, (combo, cfg, r)
            assert r["epoch_seconds"] > 0 and r["stage_ms_per_batch"]["train_host"] > 0
        # every configuration ran twice: its figure is the median of both, each kept
        for cfg, r in got.items():
            assert [x["repeat"] for x in r["repeats"]] == [0, 1], (combo, cfg)
            assert r["seeds_per_s_repeats"] == [x.get("seeds_per_s") for x in r["repeats"]]
            if r.get("seeds_per_s"):
                assert r["seeds_per_s"] == pytest.approx(statistics.median(r["seeds_per_s_repeats"]))
                assert r["median_of"] == 2 and r["figures_from_repeat"] in (0, 1)
        # repeat 1 ran the rows (tierfs-planned apart) in repeat 0's order rotated by one
        rows = [c for c in benchtrain.DEFAULT_CONFIGS if c != "tierfs-planned"]
        for k in (0, 1):
            order = sorted(rows, key=lambda c: got[c]["repeats"][k]["position"])
            assert order == rows[k:] + rows[:k], (combo, k, order)
        # the limit's thread sampled and gathered; the loop waited on it
        assert {"sample", "gather", "wait"} <= set(got["memory-gpu"]["stage_ms_per_batch"])
        assert got["memory-gpu"]["stage_ms_per_batch"]["sample"] > 0
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
        # planning a batch against the limit training one (issue 27): the plan covered the
        # warm-up and timed batches
        got = {r["config"]: r for r in rep["results"] if (r["model"], tuple(r["fanouts"])) == (h["model"], tuple(h["fanouts"]))}
        per_batch = got["tierfs-planned"]["plan_setup_seconds"] / (rep["warmup"] + rep["batches"])
        assert h["planning_over_limit"] == pytest.approx(per_batch / (64 / got["memory-gpu"]["seeds_per_s"]))
        assert h["pipelined_over_limit"] > 0 and h["cached_over_memory_gpu"] > 0
        # ratios of medians; within each repeat's round as well
        assert set(h["by_repeat"]) == {"memory_gpu_overlap_gain", "cached_over_memory_gpu", "pipelined_over_memory_gpu"}
        assert all(len(v) == 2 and all(x > 0 for x in v) for v in h["by_repeat"].values()), h["by_repeat"]
        # same batches, same model init: every configuration but planned, in every repeat, trains
        # the same losses
        assert h["max_loss_diff"] < 1e-4
    sweep = rep["sweep"]["points"]
    assert [p["seeds_per_s"] > 0 for p in sweep] == [True, True]
    held = [p["placement"]["rows_held"]["host"] for p in sweep]
    assert held[0] < held[1]  # the sweep re-placed the host tier at each size


@needs_cuda
def test_overlapped_limit_serves_the_serial_batches(tmp_path):
    """On CUDA, memory-gpu's loop (sampled, copied and gathered on a side stream, a thread
    ahead) gives the training stream bit for bit the batches of the serial loop: a missing
    stream wait would show as rows gathered from ids not yet copied."""
    ds = tierfs.synth(tmp_path / "g", nodes=20000, avg_degree=10, dim=32, classes=4, seed=SEED % 1000 + 7)
    a = benchtrain.parse_args([str(ds), "--device", "cuda", "--configs", "memory-gpu,memory-gpu-serial", "--disk-iops", "1",
                               "--depth", "3", "--seed", str(SEED)])
    b = benchtrain.Bench(a)
    try:
        b.setup()
        seeds = b.order(12 * 256)
        got = {}
        for cfg in ("memory-gpu", "memory-gpu-serial"):
            extra = {"closers": []}
            try:
                got[cfg] = [tuple(t.cpu() for t in batch) for batch in b.fetchers(cfg, [10, 5], 256, seeds, dict(sample=0.0, gather=0.0), extra)]
            finally:
                for c in extra["closers"]:
                    c()
        assert len(got["memory-gpu"]) == len(got["memory-gpu-serial"]) == 12
        for i, (o, s) in enumerate(zip(got["memory-gpu"], got["memory-gpu-serial"])):
            for name, x, y in zip(("seeds", "nodes", "row", "col", "x"), o, s):
                assert torch.equal(x, y), f"seed {SEED}: batch {i}'s {name} differs"
    finally:
        b.close()


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


def test_cli_outside_a_source_tree_says_where_bench_train_runs(cli, tmp_path):
    """The benchmark is not shipped: a tierfs binary outside a checkout (as a wheel installs it)
    says so instead of failing on an import."""
    (tmp_path / "bin").mkdir()
    shutil.copy(cli, tmp_path / "bin" / "tierfs")
    r = subprocess.run([str(tmp_path / "bin" / "tierfs"), "bench", "train", "x"], capture_output=True, text=True,
                       env=dict(os.environ, TIERFS_PYTHON=sys.executable), timeout=60)
    assert r.returncode != 0 and "not shipped with the package" in r.stderr and "python/bench/benchtrain.py" in r.stderr, r.stderr


def test_later_round_of_several_epochs(tmp_path):
    """--planned-epoch full --replan-epochs K times a later round of K epochs: its report says
    K, packs them in one window (one pass of the feature file) and the headline divides its
    time by K epochs' batches."""
    ds = tierfs.synth(tmp_path / "g", nodes=3000, avg_degree=6, dim=16, classes=4, seed=SEED % 1000 + 3)
    out = tmp_path / "out.json"
    rc = benchtrain.main([
        str(ds), "--device", "cpu", "--models", "sage", "--hidden", "16", "--fanouts", "4,3", "--batch-sizes", "64",
        "--batches", "2", "--warmup", "1", "--repeats", "1", "--configs", "memory-gpu,tierfs-planned",
        "--planned-epoch", "full", "--replan-epochs", "3", "--disk-iops", "50000", "--seed", str(SEED), "--json", str(out),
    ])
    assert rc == 0
    rep = json.loads(out.read_text())
    planned = next(r for r in rep["results"] if r["config"] == "tierfs-planned")
    assert planned["replan_epochs"] == 3
    # The round's time is the call that plans and opens it and the removal of its files.
    assert 0 < planned["replan_open_seconds"] and 0 <= planned["replan_remove_seconds"]
    assert planned["replan_open_seconds"] + planned["replan_remove_seconds"] <= planned["replan_seconds"]
    assert planned["replan_report"]["pack_windows"] == 1, planned["replan_report"]
    head = rep["summary"][0]
    assert head["replan_epochs"] == 3 and head["replanning_over_limit"] > 0
    mem = next(r for r in rep["results"] if r["config"] == "memory-gpu")["seeds_per_s"]
    batches = rep["train_seeds"] // 64
    want = (planned["replan_seconds"] / (3 * batches)) / (64 / mem)
    assert head["replanning_over_limit"] == pytest.approx(want)


def test_whole_run_in_rounds(tmp_path):
    """tierfs-rounds trains --run-epochs whole epochs through a Loader planning rounds of
    --replan-epochs: every batch of them after the warm-up is timed, the rounds are the ones the
    run needed (the first planned before it), and the headline sets the run against the limit."""
    ds = tierfs.synth(tmp_path / "g", nodes=3000, avg_degree=6, dim=16, classes=4, seed=SEED % 1000 + 5)
    out = tmp_path / "out.json"
    rc = benchtrain.main([
        str(ds), "--device", "cpu", "--models", "sage", "--hidden", "16", "--fanouts", "4,3", "--batch-sizes", "64",
        "--batches", "2", "--warmup", "1", "--configs", "memory-gpu,tierfs-rounds", "--run-epochs", "5", "--replan-epochs", "2",
        "--disk-iops", "50000", "--seed", str(SEED), "--json", str(out),
    ])
    assert rc == 0
    rep = json.loads(out.read_text())
    run = next(r for r in rep["results"] if r["config"] == "tierfs-rounds")
    per_epoch = -(-rep["train_seeds"] // 64)  # the Loader keeps a last, smaller batch
    assert run["timed_batches"] == 5 * per_epoch - 1, (run["timed_batches"], per_epoch)
    assert run["run_epochs"] == 5 and run["epochs_per_round"] == 2
    # epochs 0-1, 2-3 and 4-5 served, each planned while the one before trained; the round from
    # epoch 6 may have started too (planned ahead, cancelled when the run closed its loader)
    rounds = run["loader_stats"]["plans"]["rounds"]
    assert [r["first_epoch"] for r in rounds] in ([0, 2, 4], [0, 2, 4, 6]), rounds
    assert run["rounds"] == len(rounds)
    assert run["first_plan_seconds"] > 0 and 0 <= run["later_waits"] <= 2 and run["later_wait_seconds"] >= 0
    head = rep["summary"][0]
    mem = next(r for r in rep["results"] if r["config"] == "memory-gpu")["seeds_per_s"]
    assert head["rounds_over_limit"] == pytest.approx(run["seeds_per_s"] / mem)
    assert head["later_waits"] == run["later_waits"] and head["run_epochs"] == 5
    assert "max_loss_diff" not in head  # the run's batches are its own, not the limit's


def test_rounds_is_not_a_default_configuration():
    a = benchtrain.parse_args(["ds"])
    assert "tierfs-rounds" not in a.configs and "tierfs-planned" in a.configs
    with pytest.raises(SystemExit):
        benchtrain.parse_args(["ds", "--run-epochs", "0"])
