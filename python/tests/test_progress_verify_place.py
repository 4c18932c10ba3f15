"""tierfs.verify (report, damage named, progress) and store.place(progress=): the progress of the
last two long operations from Python."""

from __future__ import annotations

import json
import os

import pytest

import tierfs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return tierfs.synth(tmp_path_factory.mktemp("pv") / "ds", nodes=3000, avg_degree=6, dim=16, seed=3)


def test_verify_report_and_progress(small, tmp_path):
    events = []
    r = tierfs.verify(small, progress=lambda stage, done, total: events.append((stage, done, total)))
    assert r["ok"] and r["problems"] == [] and r["files"] > 0 and r["bytes"] > 0
    assert events and {e[0] for e in events} == {"verify"}
    dones = [e[1] for e in events]
    assert dones == sorted(dones) and events[-1][1] == events[-1][2] == r["bytes"]
    assert tierfs.verify(small) == r  # no progress: the same report

    copy = tierfs.synth(tmp_path / "c", nodes=3000, avg_degree=6, dim=16, seed=3)
    m = json.load(open(os.path.join(copy, "manifest.json")))
    stripe = m["node_types"][0]["features"][0]["files"][0]
    with open(os.path.join(copy, stripe), "r+b") as f:
        f.seek(4096 + 7)
        b = f.read(1)
        f.seek(4096 + 7)
        f.write(bytes([b[0] ^ 1]))
    bad = tierfs.verify(copy)
    assert not bad["ok"] and bad["problems"] == [{"file": stripe, "offset": 4096, "what": "block 1 does not match its checksum"}]

    with pytest.raises(FileNotFoundError):
        tierfs.verify(tmp_path / "nothing")
    with pytest.raises(ValueError, match="limit"):
        tierfs.verify(small, limit=-1)
    with pytest.raises(ZeroDivisionError):
        tierfs.verify(small, progress=lambda *a: 1 / 0)


def test_place_progress(small):
    with tierfs.open(small, host_cache="1MB") as s:
        events = []
        report = s.place(fanouts=[5, 3], batch_size=256, batches=6, recompute=True,
                         progress=lambda stage, done, total: events.append((stage, done, total)))
        assert report["source"] in ("computed", "replanned")
        assert events and {e[0] for e in events} == {"profile"}
        assert events[-1][1] == events[-1][2] and all(0 < d <= t for _, d, t in events)
        with pytest.raises(ValueError, match="progress is for a planned placement"):
            s.place(progress=True)
        with pytest.raises(ZeroDivisionError):
            s.place(fanouts=[5, 3], batch_size=256, batches=6, recompute=True, progress=lambda *a: 1 / 0)
