"""The console script's path: the CLI run inside libtierfs (tfs_cli_main) through tierfs._cli, as
`tierfs ...` from a wheel runs it. It must behave as the Go binary: output, exit statuses."""

from __future__ import annotations

import os
import subprocess
import sys

import tierfs


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if "TIERFS_LIB" not in env:  # the library this test process loaded
        env["TIERFS_LIB"] = tierfs.LIBRARY_PATH
    return subprocess.run([sys.executable, "-m", "tierfs._cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_version_is_the_package_version():
    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"tierfs {tierfs.__version__}\n"


def test_synth_then_info_as_the_binary(tmp_path, cli):
    out = tmp_path / "g"
    r = run_cli("synth", "--nodes", "500", "--avg-degree", "4", "--dim", "8", "--seed", "3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    ours = run_cli("info", str(out))
    theirs = subprocess.run([cli, "info", str(out)], capture_output=True, text=True, timeout=300)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout
    with tierfs.open(str(out)) as s:
        assert s.num_nodes == 500


def test_exit_statuses():
    r = run_cli("no-such-command")
    assert r.returncode == 2
    assert 'unknown command "no-such-command"' in r.stderr
    r = run_cli("info", "/nonexistent/tierfs-dataset")
    assert r.returncode == 1
    assert r.stderr.startswith("tierfs info: ")
    assert run_cli("info", "-h").returncode == 0
    assert run_cli().returncode == 2
