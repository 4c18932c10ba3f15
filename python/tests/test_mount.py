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


def _kv(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split(" ", 1) for line in f)


def test_mount_shows_open_embedding_tables(mounted, graph, tmp_path):
    """embeddings/<type>/ lists the Embedding tables the process has open for the store's
    dataset, with their cache as the host tier and their checkpoint generation."""
    torch = pytest.importorskip("torch")
    store, mnt = mounted
    assert os.listdir(mnt / "embeddings") == []
    emb = tierfs.Embedding(store, None, 8, tmp_path / "node.emb", optimizer="sgd", lr=0.1, host_cache=4 * 4096)
    try:
        (name,) = os.listdir(mnt / "embeddings")
        tdir = mnt / "embeddings" / name
        assert name == emb.info["node_type"]
        info = _kv(tdir / "info.txt")
        assert (info["rows"], info["dim"], info["generation"]) == (str(graph["n"]), "8", "1")
        ids = torch.tensor([3, 1500, 2999])
        emb(ids).sum().backward()
        emb.step()
        host = _kv(tdir / "tiers" / "host" / "summary.txt")
        assert int(host["dirty_pages"]) == emb.stats()["dirty"] >= 1
        with open(tdir / "nodes" / "1500" / "feature.bin", "rb") as f:
            assert torch.equal(torch.from_numpy(np.frombuffer(f.read(), np.float32).copy()), emb.read(ids[1:2])[0])
        emb.checkpoint()
        assert _kv(tdir / "tiers" / "ssd" / "summary.txt")["generation"] == "2"
        assert _kv(tdir / "tiers" / "host" / "summary.txt")["dirty_pages"] == "0"
    finally:
        emb.close()
    assert os.listdir(mnt / "embeddings") == []
