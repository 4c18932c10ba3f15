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
