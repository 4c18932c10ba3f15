"""Status codes become typed exceptions that keep the core's message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tierfs
from tierfs import errors


def test_out_of_range_ids(store, graph):
    n = graph["n"]
    for bad in ([0, n], [-1], np.array([5, n + 100])):
        with pytest.raises(tierfs.OutOfRangeError) as e:
            store.gather(bad)
        assert isinstance(e.value, IndexError) and isinstance(e.value, ValueError) and isinstance(e.value, tierfs.Error)
        assert "out of range" in str(e.value) and f"[0, {n})" in str(e.value)  # the core's message
        assert e.value.status == errors.ERANGE and e.value.status_name == "TFS_ERANGE"
    with pytest.raises(IndexError):
        store.labels([n])


def test_closed_store(graph):
    s = tierfs.open(graph["path"])
    sampler = s.sampler([2])
    s.close()
    assert s.closed and "closed" in repr(s)
    for call in (lambda: s.gather([0]), lambda: s.labels([0]), lambda: s.split("train"), s.stats, lambda: s.sampler([1]), s.place, lambda: s.gather([])):
        with pytest.raises(tierfs.ClosedError):
            call()
    with pytest.raises(tierfs.ClosedError) as e:  # the core answers for the sampler of a closed store
        sampler.sample([0])
    assert isinstance(e.value, tierfs.Error) and e.value.status == errors.ECLOSED
    s.close()  # twice is fine
    with tierfs.open(graph["path"]) as s2:
        pass
    with pytest.raises(tierfs.ClosedError):
        s2.gather([0])


def test_wrong_dtype_ids(store):
    for bad in (np.array([1.0, 2.0]), torch.tensor([1.5]), np.array([True, False]), torch.tensor([True]), ["a"], [1.5, 2.5], "12"):
        with pytest.raises(TypeError) as e:
            store.gather(bad)
        assert isinstance(e.value, tierfs.DTypeError) and isinstance(e.value, tierfs.Error)
    with pytest.raises(ValueError):
        store.gather(np.zeros((2, 2), np.int64))
    with pytest.raises(TypeError):
        store.sampler([2]).sample(np.array([0.5]))


def test_missing_split_and_feature(store, graph):
    with pytest.raises(KeyError) as e:
        store.split("holdout")
    assert isinstance(e.value, tierfs.KeyNotFoundError)
    assert "holdout" in str(e.value) and not str(e.value).startswith("'")  # message, not repr
    with pytest.raises(KeyError):
        tierfs.open(graph["path"], feature="no-such-feature")


def test_missing_dataset(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        tierfs.open(tmp_path / "nothing-here")
    assert isinstance(e.value, tierfs.NotFoundError) and "nothing-here" in str(e.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(tierfs.Error):
        tierfs.open(tmp_path / "empty")


def test_bad_options(graph):
    # The core validates the options; its message names the option and the bad value.
    for kw, value in (("io_backend", "carrier-pigeon"), ("gpu_topology", "nvme"), ("host_policy", "lru")):
        with pytest.raises(ValueError) as e:
            tierfs.open(graph["path"], **{kw: value})
        assert isinstance(e.value, tierfs.InvalidArgumentError) and kw in str(e.value) and value in str(e.value)
    with pytest.raises(TypeError):
        tierfs.open(graph["path"], io_backend=5)
    with pytest.raises(ValueError):
        tierfs.open(graph["path"], host_cache="lots")
    with pytest.raises(ValueError):
        tierfs.open(graph["path"], host_cache=-5)
    with pytest.raises(ValueError):
        tierfs.open(graph["path"], device="tpu")


def test_ingest_errors_keep_core_message(tmp_path):
    x = np.zeros((10, 4), np.float32)
    with pytest.raises(ValueError) as e:
        tierfs.ingest(tmp_path / "d", None, x, labels=np.zeros(11, np.int64))
    assert isinstance(e.value, tierfs.Error) and "11 labels" in str(e.value)
    with pytest.raises(FileNotFoundError):
        tierfs.ingest(tmp_path / "d", None, tmp_path / "missing.npy")
    with pytest.raises(ValueError):
        tierfs.ingest(tmp_path / "d", None, x, splits={"holdout": [1]})
    with pytest.raises(ValueError):
        tierfs.ingest(tmp_path / "d")
    with pytest.raises(ValueError):
        tierfs.synth(tmp_path / "s", nodes=10, avg_degree=2, dim=4, dtype="float33")


def test_status_mapping_table():
    cases = {
        errors.EINVAL: ValueError,
        errors.ENOENT: FileNotFoundError,
        errors.ERANGE: IndexError,
        errors.ECORRUPT: OSError,
        errors.EIO: OSError,
        errors.ENOMEM: MemoryError,
        errors.ECLOSED: tierfs.ClosedError,
        errors.ENOTSUP: NotImplementedError,
        errors.EVERSION: tierfs.VersionError,
        errors.EINTERNAL: RuntimeError,
    }
    for status, cls in cases.items():
        e = errors.from_status(status, "core says no")
        assert isinstance(e, cls) and isinstance(e, tierfs.Error)
        assert str(e) == "core says no" and e.status == status
    assert isinstance(errors.from_status(errors.ENOENT, 'dataset /x has no split "a"'), KeyError)
    assert isinstance(errors.from_status(errors.ENOENT, "open /x/manifest.json: no such file or directory"), FileNotFoundError)
    assert isinstance(errors.from_status(99, ""), tierfs.Error)


def test_parse_size():
    p = tierfs.parse_size
    assert p(None) == 0 and p(4096) == 4096 and p("4096") == 4096
    assert p("512MB") == 512 * 10**6 and p("4GiB") == 4 << 30 and p("4GB") == 4 * 10**9
    assert p("1.5G") == int(1.5 * (1 << 30)) and p("64 KiB") == 64 << 10 and p("2k") == 2048
    for bad in ("-1", "GB", "4 XB", True, [1]):
        with pytest.raises(ValueError):
            p(bad)


def test_values_that_would_wrap_or_cut_at_the_c_abi(store, graph, tmp_path):
    """ctypes would wrap 2**32 + 4 to 4 and C would cut a string at a NUL: both are refused,
    naming the input, before anything reaches the core."""
    with pytest.raises(tierfs.OutOfRangeError, match=r"ids\[1\] = 36893488147419103232"):
        store.gather([0, 2**65])
    with pytest.raises(tierfs.InvalidArgumentError, match="queue_depth = 4294967300 does not fit a 32-bit"):
        tierfs.open(graph["path"], queue_depth=2**32 + 4)
    with pytest.raises(tierfs.InvalidArgumentError, match="coalesce_gap"):
        tierfs.open(graph["path"], coalesce_gap=-(2**40))
    with pytest.raises(tierfs.InvalidArgumentError, match="path contains a NUL"):
        tierfs.open(graph["path"] + "\0junk")
    with pytest.raises(tierfs.InvalidArgumentError, match="feature contains a NUL"):
        tierfs.open(graph["path"], feature="x\0y")
    with pytest.raises(tierfs.InvalidArgumentError, match="split name contains a NUL"):
        store.split("train\0x")
    with pytest.raises(tierfs.InvalidArgumentError, match=r"fanouts\[1\] = 1099511627776"):
        store.sampler([2, 2**40])
    with pytest.raises(tierfs.InvalidArgumentError, match="tfs_gather argument 5"):
        tierfs._native.lib.tfs_gather(store._h(), None, None, None, 2**64, None, 0)
    assert store.split("train").shape == graph["splits"]["train"].shape  # the store still works


def test_zero_d_ids_are_scalars(store, graph):
    x = graph["x"]
    for ids in (5, np.int64(5), np.array(5), torch.tensor(5)):
        got = store.gather(ids)
        assert tuple(got.shape) == (x.shape[1],), f"{type(ids).__name__}: shape {tuple(got.shape)}"
        np.testing.assert_array_equal(np.asarray(got), x[5])


FAULT_CHILD = """
import sys, numpy as np, tierfs
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = np.load(sys.argv[4])
r = np.random.default_rng(seed)
outcomes = []
for trial in range(4):
    try:
        with tierfs.open(path, host_cache=trial * 20000) as s:
            ids = r.integers(0, n, 500)
            got = s.gather(ids)
            assert np.array_equal(got, want[ids]), "WRONG ROWS"
            outcomes.append("ok")
    except (tierfs.IOFailedError, tierfs.CorruptError) as e:
        outcomes.append(type(e).__name__)
print(",".join(outcomes))
"""


@pytest.mark.parametrize("spec", ["eio:every=3", "flip:prob=0.3:seed=5", "short:every=2"])
def test_injected_io_faults_through_the_c_abi(graph, tmp_path, spec):
    """IO faults injected under the store (TIERFS_FAULTS, read when the library loads, hence a
    child process) surface as IOFailedError or CorruptError through the C ABI, never as rows
    that differ from the reference."""
    import os
    import subprocess
    import sys

    np.save(tmp_path / "want.npy", graph["x"])
    env = dict(os.environ, TIERFS_FAULTS=spec)
    r = subprocess.run([sys.executable, "-c", FAULT_CHILD, graph["path"], str(graph["n"]), "1", str(tmp_path / "want.npy")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    outcomes = r.stdout.strip().split(",")
    assert len(outcomes) == 4 and set(outcomes) <= {"ok", "IOFailedError", "CorruptError"}, outcomes
    if spec.startswith("eio"):
        assert "IOFailedError" in outcomes, outcomes


def test_bad_injected_faults_are_an_invalid_argument(graph):
    """A bad TIERFS_FAULTS fails the C ABI's open as InvalidArgumentError naming the variable
    (the C ABI reads it; the core takes the injector in its options)."""
    import os
    import subprocess
    import sys

    child = ("import sys, tierfs\n"
             "try:\n    tierfs.open(sys.argv[1])\nexcept tierfs.InvalidArgumentError as e:\n    print(e)\n")
    env = dict(os.environ, TIERFS_FAULTS="bogus")
    r = subprocess.run([sys.executable, "-c", child, graph["path"]], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "TIERFS_FAULTS" in r.stdout, r.stdout
