"""features_in_place: node features read from the user's own .npy files, compared through every
read path (backends, verified reads, host tier, named features, the loader, planned epochs,
FUSE) with numpy's np.load(mmap_mode="r") of the same file; changed, flipped and unsupported
files refused; replaces and cleanup never touch the file."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import tierfs
from conftest import SEED, random_graph, rng

# (dtype, dim): rows of 4 B, 100 B, odd sizes, over 4 KiB.
SHAPES = [("float32", 1), ("int8", 100), ("int16", 51), ("float64", 3), ("uint8", 7), ("float16", 33), ("float32", 1100), ("int64", 513)]


def make(tmp_path, r, dtype, dim, n):
    """Edges, splits and two in-place node features x and pos, saved by numpy."""
    src = tmp_path / "in"
    src.mkdir()
    if np.dtype(dtype).kind == "f":
        x = r.standard_normal((n, dim)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = r.integers(info.min, info.max, size=(n, dim), endpoint=True, dtype=dtype)
    np.save(src / "x.npy", x)
    np.save(src / "pos.npy", r.standard_normal(n).astype(np.float32))
    edges = random_graph(r, n, 8 * n)
    train = np.sort(r.choice(n, n // 3, replace=False))
    before = {p: (src / p).read_bytes() for p in ("x.npy", "pos.npy")}
    out = tierfs.ingest(tmp_path / "ds", edges, str(src / "x.npy"), splits={"train": train},
                        node_features={"pos": str(src / "pos.npy")}, features_in_place=True)
    return out, src, train, before


@pytest.mark.parametrize("dtype,dim", SHAPES)
def test_in_place_gathers_match_numpy(tmp_path, dtype, dim):
    r = rng(900 + SHAPES.index((dtype, dim)))
    n = int(r.integers(200, 1500))
    out, src, train, before = make(tmp_path, r, dtype, dim, n)
    ref = np.load(src / "x.npy", mmap_mode="r")
    pos = np.load(src / "pos.npy", mmap_mode="r")
    ids = np.concatenate([r.integers(0, n, 400), [0, n - 1, n - 1, n // 2]])
    msg = f"{dtype} x {dim}, n {n}, seed {SEED}"
    backends = ["io_uring", "pread"]
    for backend in backends:
        for kw in ({}, {"unverified_reads": True}, {"read_align": -1, "unverified_reads": True}, {"host_cache": n // 3 * (ref.shape[1] * ref.itemsize + 64)},
                   {"host_cache": n // 2 * (ref.shape[1] * ref.itemsize + 64), "host_policy": "sieve"}):
            with tierfs.open(out, io_backend=backend, **kw) as s:
                for _ in range(2):
                    np.testing.assert_array_equal(s.gather(ids), ref[ids], err_msg=f"{msg}, {backend} {kw}")
                np.testing.assert_array_equal(s.gather(ids, feature="pos"), pos[ids], err_msg=f"{msg}, {backend} {kw}")
                np.testing.assert_array_equal(s.gather_async(ids).wait(), ref[ids], err_msg=msg)
    with tierfs.open(out, host_cache=n // 4 * ref.shape[1] * ref.itemsize + 4096) as s:
        loader = tierfs.Loader(s, s.sampler([4, 3], seed=3), train, batch_size=97, planned_epochs=1)
        batches = 0
        for b in loader:
            np.testing.assert_array_equal(b.x, ref[b.sample.nodes], err_msg=f"{msg}, planned epoch")
            batches += 1
        assert batches == -(-len(train) // 97)
    from benchtrain import _Memmap  # bench train's np.memmap baseline (python/bench) reads the file too

    np.testing.assert_array_equal(_Memmap(out, np.dtype(dtype), dim).gather(ids), ref[ids], err_msg=msg)
    report = tierfs.verify(out)
    assert report["ok"], report
    for p, raw in before.items():
        assert (src / p).read_bytes() == raw, f"{p} changed"


def test_in_place_mount(tmp_path):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this machine")
    r = rng(920)
    out, src, _, _ = make(tmp_path, r, "int16", 51, 300)
    ref = np.load(src / "x.npy", mmap_mode="r")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with tierfs.open(out) as s:
        try:
            s.mount(mnt)
        except (tierfs.NotSupportedError, PermissionError) as e:
            pytest.skip(f"cannot mount here: {e}")
        for v in [0, 299, int(r.integers(0, 300))]:
            assert (mnt / "nodes" / str(v) / "feature.bin").read_bytes() == ref[v].tobytes(), f"node {v}, seed {SEED}"


def test_in_place_changed_or_flipped(tmp_path):
    r = rng(930)
    out, src, _, _ = make(tmp_path, r, "int8", 100, 500)
    x = src / "x.npy"
    st = os.stat(x)
    raw = bytearray(x.read_bytes())
    raw[-1] ^= 0x10  # the last row's last byte, in the file's partial last block
    x.write_bytes(bytes(raw))
    os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns))
    report = tierfs.verify(out)
    assert not report["ok"] and [p["file"] for p in report["problems"]] == [str(x)], report
    with tierfs.open(out) as s:
        with pytest.raises(tierfs.CorruptError):
            s.gather([499])
    os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(tierfs.CorruptError, match=f"{x}, the feature file this dataset reads in place, changed after ingest"):
        tierfs.open(out)


def test_in_place_file_is_never_removed(tmp_path, cli):
    r = rng(940)
    out, src, _, before = make(tmp_path, r, "float32", 5, 300)
    x = str(src / "x.npy")
    tierfs.ingest(out, features=x, force=True)  # a copied dataset replaces the in-place one
    tierfs.ingest(out, features=x, force=True, features_in_place=True)
    run = subprocess.run([cli, "ingest", "--edges", str(src / "x.npy"), "--features", x, "--features-in-place", "--out", str(out), "--force"],
                         capture_output=True, text=True)
    assert run.returncode != 0  # x.npy is no edge list: a failed replace
    run = subprocess.run([cli, "verify", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([cli, "gather", str(out), "--ids", x, "--out", x], capture_output=True, text=True)
    assert run.returncode != 0 and "the feature file the dataset reads in place" in run.stderr, run.stderr
    for p, raw in before.items():
        assert (src / p).read_bytes() == raw, f"{p} changed"
    run = subprocess.run([cli, "info", str(out)], capture_output=True, text=True)
    assert f"in place: {x}" in run.stdout, run.stdout
    inside = os.path.join(out, "mine.npy")
    np.save(inside, np.zeros((300, 5), np.float32))
    with pytest.raises(ValueError, match="inside the output directory"):
        tierfs.ingest(out, features=inside, force=True, features_in_place=True)
    assert os.path.exists(inside)


def test_in_place_refusals(tmp_path):
    r = rng(950)
    x = r.standard_normal((20, 4)).astype(np.float32)
    cases = {
        "fortran.npy": (lambda p: np.save(p, np.asfortranarray(x)), "Fortran order"),
        "big.npy": (lambda p: np.save(p, x.astype(">f4")), "big-endian"),
        "object.npy": (lambda p: np.save(p, x.astype(object), allow_pickle=True), "not supported"),
    }
    for name, (write, problem) in cases.items():
        p = str(tmp_path / name)
        write(p)
        with pytest.raises(ValueError, match=problem) as e:
            tierfs.ingest(tmp_path / "ds", features=p, features_in_place=True)
        assert p in str(e.value), e.value
    with pytest.raises(ValueError, match="features_in_place needs the node features as .npy paths"):
        tierfs.ingest(tmp_path / "ds", features=x, features_in_place=True)
    assert not (tmp_path / "ds").exists()
