"""store.mount(): the FUSE view of a running store, from the same process."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tierfs


@pytest.fixture
def mounted(graph, tmp_path):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this machine")
    store = tierfs.open(graph["path"], host_cache="64KiB")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        store.mount(mnt)
    except tierfs.NotSupportedError as e:
        store.close()
        pytest.skip(f"this libtierfs cannot mount: {e}")
    except PermissionError as e:
        store.close()
        pytest.skip(f"mounting is not permitted here: {e}")
    try:
        yield store, mnt
    finally:
        store.close()  # unmounts


def read_stats(mnt):
    with open(mnt / "stats.json") as f:
        return json.load(f)


def test_stats_json_moves_after_gathers(mounted):
    store, mnt = mounted
    before = read_stats(mnt)
    store.gather(np.arange(50))
    store.gather(np.arange(50, 60))
    after = read_stats(mnt)
    assert after["gathers"] == before["gathers"] + 2
    assert after["rows_gathered"] == before["rows_gathered"] + 60


def test_mount_listing_and_unmount(mounted, graph):
    store, mnt = mounted
    names = set(os.listdir(mnt))
    assert {"manifest.json", "stats.json"} <= names
    with open(mnt / "manifest.json") as f:
        assert json.load(f)["node_types"][0]["count"] == graph["n"]
    store.unmount()
    assert "stats.json" not in os.listdir(mnt)
