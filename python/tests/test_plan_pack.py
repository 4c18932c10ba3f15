"""How planning reads the rows it packs: plan_epochs(pack_method=, pack_memory=) and the Loader's
plan_pack_method / plan_pack_memory (docs/planned.md, "Packing: a scan of the feature file").

Whichever method reads, and however large a window, the packed files are byte-identical and a
planned gather gives the rows the store's plain gather gives.
"""

from __future__ import annotations

import json
import os
from ctypes import byref, c_void_p

import numpy as np
import pytest

import tierfs
from tierfs._native import check, lib

from conftest import SEED

FANOUTS, BATCH, EPOCHS = [5, 3], 256, 2


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    seed = SEED % 1000 + 11
    print(f"tierfs.synth seed {seed} (TIERFS_TEST_SEED={SEED})")
    path = tierfs.synth(tmp_path_factory.mktemp("pack") / "g", nodes=20000, avg_degree=8, dim=32, classes=4,
                          train_frac=0.2, seed=seed)
    return str(path)


@pytest.fixture
def store(synth):
    s = tierfs.open(synth, host_cache="64KiB")  # most rows are packed
    yield s
    s.close()


def plan(store, directory, **pack):
    return store.plan_epochs(FANOUTS, BATCH, EPOCHS, plan_dir=directory, seed=SEED % 997, shuffle_seed=SEED % 991,
                             place_tiers=False, **pack)


def packed_files(plan_dir):
    names = sorted(n for n in os.listdir(plan_dir) if n.endswith(".packed"))
    assert len(names) == EPOCHS, names
    out = {}
    for n in names:
        with open(os.path.join(plan_dir, n), "rb") as f:
            out[n] = f.read()
    return out


def test_methods_and_windows_pack_the_same_bytes(store, tmp_path):
    variants = {
        "scan": dict(pack_method="scan"),
        "random": dict(pack_method="random"),
        "scan 64KB": dict(pack_method="scan", pack_memory="64KB"),
        "random 64KiB": dict(pack_method="random", pack_memory=64 << 10),
        "model 1MiB": dict(pack_memory="1MiB"),
        "model": dict(),
    }
    plans = {name: plan(store, tmp_path / name.replace(" ", "-"), **pack) for name, pack in variants.items()}
    try:
        reports = {name: p.report for name, p in plans.items()}
        for name, pack in variants.items():
            r = reports[name]
            assert r is not None and r["planned"] == EPOCHS and r["rows_packed"] > 0, (name, r)
            if "pack_method" in pack:
                assert r["pack_method"] == pack["pack_method"], (name, r["pack_method"])
            else:
                assert r["pack_method"] in ("scan", "random", "scan+random"), r["pack_method"]
            assert r["pack_windows"] >= 1 and r["pack_reads"] > 0 and r["pack_read_bytes"] > 0, (name, r)
        # The default window (1 GiB) holds every epoch of this small graph (a window runs on
        # from one epoch's packed file into the next: one pass of the feature file); 64 KB
        # windows are many.
        assert reports["scan"]["pack_windows"] == 1
        packed = reports["scan"]["bytes_written"] / EPOCHS
        assert packed > 4 * 64_000, packed  # so several windows are forced
        assert reports["scan 64KB"]["pack_windows"] >= EPOCHS * 4, reports["scan 64KB"]["pack_windows"]
        assert reports["random 64KiB"]["pack_windows"] >= EPOCHS * 4, reports["random 64KiB"]["pack_windows"]
        assert 1 <= reports["model 1MiB"]["pack_windows"] < reports["scan 64KB"]["pack_windows"]

        want = packed_files(plans["scan"].plan_dir)
        for name, p in plans.items():
            got = packed_files(p.plan_dir)
            for f in want:
                assert got[f] == want[f], f"{name}: {f} differs from the scan's"
            assert reports[name]["bytes_written"] == reports["scan"]["bytes_written"], name

        # Every batch of every plan: the same sample, and the plain gather's rows.
        served = 0
        for e in range(EPOCHS):
            for b in range(plans["scan"].batches_per_epoch):
                nodes = plans["scan"].sample(e, b).nodes
                ref = store.gather(nodes)
                for name, p in plans.items():
                    np.testing.assert_array_equal(p.sample(e, b).nodes, nodes, err_msg=f"{name} e{e} b{b}")
                    np.testing.assert_array_equal(p.gather(e, b, nodes), ref, err_msg=f"{name} e{e} b{b}")
                served += 1
        for name, p in plans.items():
            st = p.stats()
            assert st["batches"] == served and st["rows"] > 0, (name, st)
    finally:
        for p in plans.values():
            p.close()


def test_options_do_not_make_a_plan_stale(store, tmp_path):
    """Neither option is part of the fingerprint: a plan made by one method opens with the other."""
    first = plan(store, tmp_path / "p", pack_method="random", pack_memory="64KB")
    assert first.report is not None and first.report["pack_method"] == "random"
    # Planned with place_tiers=False: no placement pass in the report's breakdown.
    assert first.report["place_seconds"] == first.report["place_sample_seconds"] == first.report["fill_seconds"] == 0, first.report
    want = packed_files(first.plan_dir)
    first.close()
    again = plan(store, tmp_path / "p", pack_method="scan")
    try:
        assert again.report is None  # reused, not planned again
        assert packed_files(again.plan_dir) == want
    finally:
        again.close()


@pytest.mark.parametrize("pack, match", [
    (dict(pack_method="bogus"), r"pack_method = 'bogus': want \"scan\", \"random\""),
    (dict(pack_method="SCAN"), r"pack_method = 'SCAN'"),
    (dict(pack_method=1), r"pack_method = 1"),
    (dict(pack_memory=-1), r"pack_memory: -1 bytes is negative"),
    (dict(pack_memory="lots"), r"pack_memory: 'lots' is not a byte count"),
    (dict(pack_memory=True), r"pack_memory: True is not a byte count"),
])  # fmt: skip
def test_bad_pack_options_name_the_option(store, synth, tmp_path, pack, match):
    with pytest.raises(tierfs.InvalidArgumentError, match=match):
        plan(store, tmp_path / "p", **pack)
    assert not os.path.exists(tmp_path / "p" / "epoch-0000.packed")
    loader_pack = {"plan_" + k: v for k, v in pack.items()}
    for planned in (1, "auto"):  # refused when made, not when the first round plans
        with pytest.raises(tierfs.InvalidArgumentError, match=match):
            tierfs.Loader(store, store.sampler(FANOUTS), store.split("train"), BATCH, planned_epochs=planned, **loader_pack)


def test_c_pack_options_are_checked(store, tmp_path):
    """tfs_epochs_open's pack_method and pack_memory, called as C would (the core's own checks)."""
    base = {"plan_dir": str(tmp_path / "p"), "fanouts": FANOUTS, "batch_size": BATCH, "epochs": 1, "place_tiers": False, "replan": True}
    for extra, match in [
        ({"pack_method": "bogus"}, r'option pack_method = "bogus": want "scan", "random" or ""'),
        ({"pack_memory": -1}, r"option pack_memory = -1: want bytes >= 0"),
        ({"pack_memory": "1GB"}, r"pack_memory.*keys: .*pack_method, pack_memory"),
        ({"pack_windows": 2}, r"pack_windows.*keys: .*pack_method, pack_memory"),
    ]:
        h = c_void_p()
        with pytest.raises(tierfs.InvalidArgumentError, match=match):
            check(lib.tfs_epochs_open(store._h(), json.dumps({**base, **extra}).encode(), None, 0, byref(h)))
    h = c_void_p()
    check(lib.tfs_epochs_open(store._h(), json.dumps({**base, "pack_method": "random", "pack_memory": 65536}).encode(), None, 0, byref(h)))
    try:
        from tierfs import _native

        info = _native.read_json(lambda buf, cap, needed: lib.tfs_epochs_info_json(h, buf, cap, needed), 1 << 12)
        assert info["report"]["pack_method"] == "random" and info["report"]["pack_windows"] > 1, info["report"]
    finally:
        check(lib.tfs_epochs_close(h))


def test_loader_forwards_pack_options(store, tmp_path):
    seeds = store.split("train")
    loader = tierfs.Loader(store, store.sampler(FANOUTS, seed=3), seeds, BATCH, seed=5, planned_epochs=1,
                           plan_dir=str(tmp_path / "rounds"), prefetch=2, plan_pack_method="scan", plan_pack_memory="64KB")
    try:
        r = loader.plan.report
        assert r["pack_method"] == "scan" and r["pack_windows"] > 1, r
        for batch in loader:
            np.testing.assert_array_equal(batch.x, store.gather(batch.sample.nodes))
        assert loader.plan.stats()["rows"] > 0
    finally:
        loader.close()
