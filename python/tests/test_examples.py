"""The example and the benchmark run in the suite (small settings) so they never rot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_pyg_graphsage.py"
BENCH = ROOT / "python" / "bench" / "overhead.py"


def run(args, timeout=300, cwd=None, ok=True):
    """Runs a Python command; on timeout kills its whole process group (torchrun's ranks too, which
    would otherwise keep the output pipes open and hang the test)."""
    p = subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, COLUMNS="200"), start_new_session=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{args[0]} did not finish in {timeout} s:\n{out[-3000:]}\n{err[-3000:]}")
    if not ok:
        return p.returncode, out, err
    assert p.returncode == 0, f"{args[0]} failed:\n{out[-3000:]}\n{err[-3000:]}"
    return out


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not beside python/")
def test_example_cora_compare_in_memory(cora_dir):
    out = run([EXAMPLE, "--dataset", "cora", "--data", cora_dir, "--epochs", "3", "--seeds", "1", "--compare-in-memory", "--check", "--host-cache", "1MB"])
    assert "epoch   3" in out and "difference:" in out and "test accuracy" in out


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not beside python/")
def test_example_synth(tmp_path):
    out = run([EXAMPLE, "--synth", "3000", "--dim", "16", "--data", tmp_path / "s", "--epochs", "1", "--batch-size", "64", "--max-batches", "3", "--prefetch", "2"])
    assert "test accuracy" in out


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not beside python/")
def test_example_tierfs_loader_planned(tmp_path):
    out = run([EXAMPLE, "--synth", "3000", "--dim", "16", "--data", tmp_path / "s", "--epochs", "2", "--batch-size", "256",
               "--tierfs-loader", "--planned-epochs", "1"])
    assert "epoch   2" in out and "bound: " in out and "test accuracy" in out


@pytest.mark.skipif(not BENCH.exists(), reason="python/bench is missing")
def test_overhead_bench_runs(tmp_path, cli):
    out = run([BENCH, "--nodes", "20000", "--batch", "20000", "--reps", "2", "--loader-batches", "4", "--seeds-per-batch", "256", "--data", tmp_path / "b", "--cli", cli])
    assert "ctypes tfs_gather" in out and "PyG NodeLoader" in out


DDP = ROOT / "examples" / "train_pyg_ddp.py"


@pytest.mark.skipif(not DDP.exists(), reason="examples/ is not beside python/")
def test_example_ddp_two_ranks(tmp_path):
    """The DDP example under torchrun with two CPU ranks (gloo), shared cache placed by a profile."""
    out = run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", DDP, "--synth", "3000", "--dim", "16",
               "--data", tmp_path / "g", "--gpu-cache", "20KB", "--host-cache", "20KB", "--batch-size", "64", "--epochs", "1",
               "--hidden", "32", "--place", "--place-batches", "4", "--json", tmp_path / "fig.json"])
    assert "2 rank(s), shared cache" in out and "epoch   1" in out and "placed by a profile of 4 batches per rank" in out
    import json

    fig = json.loads((tmp_path / "fig.json").read_text())
    assert fig["world_size"] == 2 and fig["peer_bytes_per_batch"] > 0 and fig["seeds_per_s"] > 0
    assert fig["place"]["batches_per_rank"] == 4 and fig["place"]["seconds"] > 0
    assert {"sample", "gather", "exchange", "train"} <= set(fig["rank0_ms_per_batch"])
    assert fig["rank0_peer_bytes_per_batch_by_path"][fig["peer_path"]]["received"] > 0  # "host memory (gloo)" on CPUs


# ---- every example as a new user first runs it: no arguments, from an empty folder, no network;
# its datasets go under that folder, and --help names the defaults it uses ----

DGL_EXAMPLE = ROOT / "examples" / "train_dgl_graphsage.py"  # needs DGL: python/tests_dgl runs it so
NO_ARGS = {EXAMPLE: "test accuracy", DDP: "epoch   2"}


def test_every_example_is_run_with_no_arguments():
    examples = set((ROOT / "examples").glob("*.py"))
    if not examples:
        pytest.skip("examples/ is not beside python/")
    assert examples == set(NO_ARGS) | {DGL_EXAMPLE}, "a new example needs a no-argument run here (or in python/tests_dgl)"


@pytest.mark.parametrize("example", sorted(NO_ARGS), ids=lambda p: p.stem)
def test_example_runs_with_no_arguments(example, tmp_path):
    if not example.exists():
        pytest.skip("examples/ is not beside python/")
    out = run([example], cwd=tmp_path)
    assert NO_ARGS[example] in out, out[-3000:]
    made = [p for p in (tmp_path / "tierfs-examples").iterdir() if (p / "manifest.json").is_file()]
    assert made, f"no dataset under {tmp_path / 'tierfs-examples'}"
    assert str(made[0].relative_to(tmp_path)) in out  # where it went is said
    help_ = run([example, "--help"], cwd=tmp_path)
    assert "tierfs-examples/" in help_


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not beside python/")
def test_example_cora_without_raw_files_says_what_to_do(tmp_path):
    rc, out, err = run([EXAMPLE, "--dataset", "cora", "--cora-source", tmp_path / "none"], cwd=tmp_path, ok=False)
    assert rc != 0 and "--cora-source" in err and "ind.cora" in err, err[-3000:]
    help_ = run([EXAMPLE, "--help"], cwd=tmp_path)
    assert "planetoid-cora/raw" in help_ and "TIERFS_DATASETS" in help_


def test_dgl_example_without_dgl_has_help_and_says_what_it_needs(tmp_path):
    """A user without DGL (this venv has none) can read the DGL example's --help; running it says
    DGL is needed in one line, not a traceback."""
    if not DGL_EXAMPLE.exists():
        pytest.skip("examples/ is not beside python/")
    try:
        import dgl  # noqa: F401

        pytest.skip("DGL is installed here; python/tests_dgl runs the example")
    except ImportError:
        pass
    code, out, err = run([DGL_EXAMPLE, "--help"], cwd=tmp_path, ok=False)
    assert code == 0 and "--fanouts" in out, (code, out, err)
    code, out, err = run([DGL_EXAMPLE], cwd=tmp_path, ok=False)
    assert code != 0 and "needs DGL" in err and "Traceback" not in err, (code, err)
