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
