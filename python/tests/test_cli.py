"""The console script's path: tierfs._cli runs the tierfs program (the package's bin/tierfs, here
$TIERFS_CLI or the checkout's build/tierfs) in its place, as `tierfs ...` from a wheel does. It
must behave as the Go binary: output, exit statuses; the library has no CLI in it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tierfs


def run_cli(*args: str, cwd=None, env=None) -> subprocess.CompletedProcess:
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
        assert s.num_nodes() == 500


def test_exit_statuses():
    r = run_cli("no-such-command")
    assert r.returncode == 2
    assert r.stderr == 'tierfs: unknown command "no-such-command"\nRun \'tierfs --help\' for usage.\n'
    r = run_cli("info", "/nonexistent/tierfs-dataset")
    assert r.returncode == 1
    assert r.stderr.startswith("tierfs info: ")
    r = run_cli("info", "--help")
    assert r.returncode == 0 and "tierfs info DIR [flags]" in r.stdout
    assert run_cli("info", "-h").returncode == 0
    assert run_cli().returncode == 2


def test_the_program_it_runs(tmp_path, cli):
    """$TIERFS_CLI names the program; one that is not there is exit 127 and a message naming it."""
    env = dict(os.environ, TIERFS_CLI=cli)
    assert run_cli("--version", env=env).stdout == f"tierfs {tierfs.__version__}\n"
    missing = tmp_path / "nope"
    r = run_cli("--version", env=dict(os.environ, TIERFS_CLI=str(missing)))
    assert r.returncode == 127 and f"TIERFS_CLI={missing} is not an executable file" in r.stderr


def test_library_has_no_cli():
    """The console script no longer goes through the library: it exports no tfs_cli_main."""
    from tierfs import _native

    assert not hasattr(_native.lib, "tfs_cli_main")
    with pytest.raises(AttributeError):
        _native.lib._cdll.tfs_cli_main  # noqa: B018
