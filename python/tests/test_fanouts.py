"""Fanouts cross into the library whole: a value that is not a whole number is refused, naming
it, instead of being truncated (1.5 used to become 1)."""

from __future__ import annotations

import numpy as np
import pytest

import tierfs
from tierfs._args import _fanouts


def test_fanouts_conversion():
    assert _fanouts(3) == [3]
    assert _fanouts([10, 5]) == [10, 5]
    assert _fanouts((np.int32(4), np.int64(-1))) == [4, -1]
    assert _fanouts(np.array([2, 3])) == [2, 3]
    assert _fanouts([2.0]) == [2]
    with pytest.raises(tierfs.InvalidArgumentError, match=r"fanouts\[1\] = 1.5 is not a whole number") as e:
        _fanouts([10, 1.5])
    assert isinstance(e.value, ValueError)
    with pytest.raises(tierfs.InvalidArgumentError, match=r"fanouts\[0\] = 0.5"):
        _fanouts(np.array([0.5]))
    for bad in (["2"], [True], "10", None):
        with pytest.raises(tierfs.DTypeError):
            _fanouts(bad)


def test_plan_epochs_refuses_fractional_fanouts(store, graph, tmp_path):
    with pytest.raises(tierfs.InvalidArgumentError, match=r"fanouts\[0\] = 1.5"):
        store.plan_epochs([1.5], batch_size=100, epochs=1, seeds=graph["splits"]["train"], plan_dir=tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_fanouts_torch():
    torch = pytest.importorskip("torch")
    assert _fanouts(torch.tensor([4, 2])) == [4, 2]
    with pytest.raises(tierfs.InvalidArgumentError, match="1.5"):
        _fanouts(torch.tensor([1.5]))


def test_a_sample_past_its_edge_bound_is_refused(store, graph, cli, tmp_path):
    """A fanout whose sample would not fit memory is refused before anything is allocated,
    naming the bound, from Python and the CLI alike (it used to end the process with Go's fatal
    out-of-memory)."""
    import subprocess

    with pytest.raises(tierfs.InvalidArgumentError, match=r"MaxEdges") as e:
        store.sampler([2**31 - 1], replace=True).sample([0, 1, 2, 3])
    assert isinstance(e.value, ValueError) and "134217728" in str(e.value)
    # the store still serves
    assert len(store.sampler([2]).sample([0, 1]).nodes) >= 2
    np.save(tmp_path / "seeds.npy", np.arange(4, dtype=np.int64))
    r = subprocess.run([cli, "sample", "--fanouts", "2147483647", "--replace", "--seeds", str(tmp_path / "seeds.npy"), "--out", str(tmp_path / "s"), graph["path"]],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "MaxEdges" in r.stderr, (r.returncode, r.stderr[-500:])


def test_max_sample_edges_bounds_every_front_end(graph, cli, tmp_path):
    """The store option max_sample_edges sets the bound: a sample past it is refused naming its
    seeds, fanouts and the bound; raising it lets the same sample through (Python keyword and CLI
    flag alike)."""
    import subprocess

    seeds = np.arange(4, dtype=np.int64)
    with tierfs.open(graph["path"], max_sample_edges=10) as s:
        with pytest.raises(tierfs.InvalidArgumentError, match=r"a sample of 4 seeds with fanouts \[5 5\]") as e:
            s.sampler([5, 5], replace=True).sample(seeds)
        assert "bound of 10 edges" in str(e.value) and "max_sample_edges" in str(e.value), e.value
    with tierfs.open(graph["path"], max_sample_edges=4 * 5 + 4 * 5 * 5) as s:
        out = s.sampler([5, 5], replace=True).sample(seeds)
        assert len(out.row) <= 4 * 5 + 4 * 5 * 5 and len(out.row) > 10
    with pytest.raises(tierfs.InvalidArgumentError, match="max_sample_edges"):
        tierfs.open(graph["path"], max_sample_edges=-1)
    np.save(tmp_path / "seeds.npy", seeds)
    args = [cli, "sample", "--fanouts", "5,5", "--replace", "--seeds", str(tmp_path / "seeds.npy"), graph["path"]]
    r = subprocess.run(args[:2] + ["--max-sample-edges", "10", "--out", str(tmp_path / "a")] + args[2:], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "bound of 10 edges" in r.stderr, (r.returncode, r.stderr[-500:])
    r = subprocess.run(args[:2] + ["--max-sample-edges", "120", "--out", str(tmp_path / "b")] + args[2:], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-500:]


def test_fractional_fanouts_refused_by_every_sampler(store):
    """A fanout of 1.5 is refused by each front end that builds a sampler, never truncated."""
    with pytest.raises(tierfs.InvalidArgumentError, match="1.5"):
        store.sampler([10, 1.5])
    pytest.importorskip("torch_geometric")
    from tierfs.pyg import num_neighbors_of

    with pytest.raises(tierfs.InvalidArgumentError, match="1.5"):
        num_neighbors_of(store, [10, 1.5])


def test_max_sample_edges_bounds_heterogeneous_samples(tmp_path):
    """The store option bounds a heterogeneous sampler too (golden v5: two node and edge types)."""
    import os
    import shutil
    from pathlib import Path

    golden = Path(os.environ.get("TIERFS_REPO") or Path(__file__).resolve().parents[2]) / "dataset" / "testdata" / "golden" / "v5"
    if not golden.is_dir():
        pytest.skip(f"no golden dataset at {golden}")
    path = str(tmp_path / "v5")
    shutil.copytree(golden, path)
    fanouts = {("author", "writes", "paper"): [-1, -1], ("paper", "cites", "paper"): [-1, -1]}
    with tierfs.open(path) as s:
        full = s.sampler(fanouts).sample([0, 1, 2, 3], node_type="paper")
        drawn = sum(len(r) for r in full.row.values()) if isinstance(full.row, dict) else None
    assert drawn, full
    with tierfs.open(path, max_sample_edges=drawn - 1) as s:
        with pytest.raises(tierfs.InvalidArgumentError, match=rf"a sample of 4 seeds .*bound of {drawn - 1} edges.*max_sample_edges"):
            s.sampler(fanouts).sample([0, 1, 2, 3], node_type="paper")
    with tierfs.open(path, max_sample_edges=drawn) as s:
        s.sampler(fanouts).sample([0, 1, 2, 3], node_type="paper")
