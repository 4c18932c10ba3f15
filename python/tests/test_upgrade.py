"""tierfs.upgrade and `tierfs upgrade`: a dataset of an older format version (the golden ones of
dataset/testdata/golden) is rewritten to the current version, verified and still serving the same
rows; a current dataset whose manifest was edited down to an older version is corruption."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tierfs

GOLDEN = Path(os.environ.get("TIERFS_REPO") or Path(__file__).resolve().parents[2]) / "dataset" / "testdata" / "golden"


def _golden(version: int, tmp_path: Path) -> str:
    src = GOLDEN / f"v{version}"
    if not src.is_dir():
        pytest.skip(f"no golden dataset at {src}")
    dst = tmp_path / f"v{version}"
    shutil.copytree(src, dst)
    return str(dst)


@pytest.mark.parametrize("version", [1, 3, 6, 7, 8])
def test_upgrade_golden(version, tmp_path):
    path = _golden(version, tmp_path)
    with tierfs.open(path) as s:
        before = s.gather(np.arange(s.num_nodes()))
    seen = []
    assert tierfs.upgrade(path, progress=lambda stage, done, total: seen.append((stage, done, total))) == version
    assert seen and seen[-1][0] == "verify" and seen[-1][1] == seen[-1][2], seen[-3:]
    manifest = json.loads(Path(path, "manifest.json").read_text())
    assert manifest["version"] == 9 and manifest["dataset_id"], manifest["version"]
    assert tierfs.verify(path)["ok"]
    with tierfs.open(path) as s:
        assert np.array_equal(s.gather(np.arange(s.num_nodes())), before)
    assert tierfs.upgrade(path) == 9  # nothing left to do


def test_upgrade_refuses_damage_and_edited_manifests(tmp_path, cli):
    path = _golden(2, tmp_path)
    x = Path(path, "features.x.0.bin")
    raw = bytearray(x.read_bytes())
    raw[5] ^= 0x10
    x.write_bytes(bytes(raw))
    manifest = Path(path, "manifest.json").read_text()
    with pytest.raises(tierfs.CorruptError, match="features.x.0.bin"):
        tierfs.upgrade(path)
    assert Path(path, "manifest.json").read_text() == manifest

    # A current dataset whose manifest says version 1 (hash and dataset id removed) is refused
    # at open, by upgrade and by the CLI.
    cur = _golden(1, tmp_path / "cur")
    tierfs.upgrade(cur)
    m = json.loads(Path(cur, "manifest.json").read_text())
    m["version"] = 1
    del m["manifest_hash"], m["dataset_id"]
    Path(cur, "manifest.json").write_text(json.dumps(m))
    with pytest.raises(tierfs.CorruptError, match="edited down to an older version"):
        tierfs.open(cur)
    with pytest.raises(tierfs.CorruptError, match="edited down"):
        tierfs.upgrade(cur)
    r = subprocess.run([cli, "upgrade", cur], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "edited down" in r.stderr, (r.returncode, r.stderr[-500:])


def test_upgrade_cli(tmp_path, cli):
    path = _golden(3, tmp_path)
    r = subprocess.run([cli, "upgrade", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "from format version 3 to 9" in r.stdout, (r.returncode, r.stdout, r.stderr[-500:])
    with pytest.raises(FileNotFoundError):
        tierfs.upgrade(tmp_path / "missing")

