"""Store.gather_async: the same rows as gather, errors at wait(), several in flight."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tierfs
from conftest import SEED, rng


def test_gather_async_equals_gather(store, graph):
    r = rng(900)
    futures = []
    for k in range(8):
        ids = r.integers(0, graph["n"], int(r.integers(1, 3000)))
        kind = ("numpy", "torch", "list")[k % 3]
        arg = torch.from_numpy(ids) if kind == "torch" else ids.tolist() if kind == "list" else ids
        futures.append((ids, kind, store.gather_async(arg)))
        if kind == "numpy":
            ids[:] = 0  # the caller may reuse its ids once gather_async returned
    for ids, kind, f in futures:
        got = f.wait()
        assert f.done()
        assert isinstance(got, torch.Tensor) == (kind == "torch")
        want = graph["x"][ids] if kind != "numpy" else None
        if want is not None:
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"seed {SEED} {kind}")
    out = np.empty((3, graph["x"].shape[1]), dtype=graph["x"].dtype)
    assert store.gather_async([1, 2, 3], out=out).wait() is out
    np.testing.assert_array_equal(out, graph["x"][[1, 2, 3]])
    np.testing.assert_array_equal(store.gather_async(7).result(), graph["x"][7])


def test_gather_async_reused_numpy_ids(store, graph):
    r = rng(901)
    ids = r.integers(0, graph["n"], 5000)
    want = graph["x"][ids]
    f = store.gather_async(ids)
    ids[:] = 0
    np.testing.assert_array_equal(f.wait(), want, err_msg=f"seed {SEED}")


def test_gather_async_error_at_wait(store, graph):
    f = store.gather_async([0, graph["n"] + 3])
    with pytest.raises(tierfs.OutOfRangeError):
        f.wait()
