"""tierfs.synth's shape knobs and presets: the same options as the CLI's, the same bytes."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import tierfs


def _args(path):
    with open(path / "manifest.json") as f:
        return json.load(f)["created"]["args"]


def _data_files(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.suffix in (".bin", ".ids")}


def test_synth_knobs_recorded_and_deterministic(tmp_path):
    kw = dict(nodes=3000, avg_degree=6, dim=4, seed=3, degree_exponent=2.4, locality=0.7, community_size=128)
    a = tierfs.synth(tmp_path / "a", **kw)
    b = tierfs.synth(tmp_path / "b", **kw)
    assert _data_files(tmp_path / "a") == _data_files(tmp_path / "b")
    args = _args(tmp_path / "a")
    assert "degree-exponent=2.4" in args and "locality=0.7" in args and "community-size=128" in args
    # Edges inside blocks of 128 ids: about the locality asked.
    indptr = np.fromfile(tmp_path / "a" / "indptr.bin", np.int64)[:3001]
    idx = np.fromfile(tmp_path / "a" / "indices.bin", np.int32)[: 3000 * 6]
    dst = np.repeat(np.arange(3000), np.diff(indptr))
    intra = np.mean(dst // 128 == idx // 128)
    assert abs(intra - (0.7 + 0.3 * 128 / 3000)) < 0.03, intra
    assert a != b


def test_synth_preset_matches_cli(tmp_path, cli):
    tierfs.synth(tmp_path / "py", preset="ogbn-products", scale=0.001, dim=8, seed=2)
    with tierfs.open(tmp_path / "py") as m:
        assert (m.num_nodes(), m.num_classes) == (2449, 47)
    subprocess.run([cli, "synth", "--preset", "ogbn-products", "--scale", "0.001", "--dim", "8", "--seed", "2",
                    "--out", str(tmp_path / "cli")], check=True, capture_output=True)
    assert _data_files(tmp_path / "py") == _data_files(tmp_path / "cli")


def test_synth_bad_shape_options(tmp_path):
    with pytest.raises(ValueError, match="locality 1.5 is out of range"):
        tierfs.synth(tmp_path / "s", nodes=10, avg_degree=2, dim=4, locality=1.5)
    with pytest.raises(ValueError, match="degree-exponent 1.2 is out of range"):
        tierfs.synth(tmp_path / "s", nodes=10, avg_degree=2, dim=4, degree_exponent=1.2)
    with pytest.raises(ValueError, match=r'unknown preset "ogbn-arxiv" \(presets: igb-medium, igb-small, ogbn-papers100M, ogbn-products\)'):
        tierfs.synth(tmp_path / "s", preset="ogbn-arxiv")
    with pytest.raises(ValueError, match="scale"):
        tierfs.synth(tmp_path / "s", preset="igb-small", scale=0.01, nodes=100)
    with pytest.raises(ValueError, match="needs"):
        tierfs.synth(tmp_path / "s", nodes=10, avg_degree=2, dim=4, scale=0.5)
    with pytest.raises(ValueError, match="nodes, avg_degree, dim required"):
        tierfs.synth(tmp_path / "s")


def test_synth_and_ingest_report_progress(tmp_path, capsys):
    calls = []
    tierfs.synth(tmp_path / "s", nodes=200000, avg_degree=4, dim=16, seed=1, progress=lambda *a: calls.append(a))
    stages = {c[0] for c in calls}
    assert {"features", "commit"} <= stages, stages
    for stage in stages:
        last = [c for c in calls if c[0] == stage][-1]
        assert last[2] <= 0 or last[1] == last[2], f"{stage} never reported its completion: {last}"
    for a, b in zip(calls, calls[1:]):
        if a[0] == b[0]:
            assert b[1] >= a[1], f"{a[0]} went backwards: {a} then {b}"
    # True: bars on stderr (tqdm or plain lines); a failing callback's error comes back after the call.
    tierfs.ingest(tmp_path / "i", features=np.zeros((10, 2), np.float32), progress=True)
    assert "commit" in capsys.readouterr().err

    def boom(stage, done, total):
        raise RuntimeError(f"stop at {stage}")

    with pytest.raises(RuntimeError, match="stop at"):
        tierfs.synth(tmp_path / "b", nodes=100, avg_degree=2, dim=4, progress=boom)
    with pytest.raises(tierfs.DTypeError, match="progress"):
        tierfs.synth(tmp_path / "c", nodes=100, avg_degree=2, dim=4, progress="yes")
