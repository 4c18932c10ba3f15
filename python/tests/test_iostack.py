"""tierfs.IOStack (tfs_io_* from Python) against plain file reads on random ranges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tierfs
from conftest import SEED, rng


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    r = rng(800)
    d = tmp_path_factory.mktemp("io")
    paths = []
    for k, size in enumerate(((1 << 20) + 123, 300001, 4096)):
        p = d / f"f{k}.bin"
        p.write_bytes(r.integers(0, 256, size, dtype=np.uint8).tobytes())
        paths.append(p)
    return paths


@pytest.mark.parametrize("kw", [{}, {"backend": "pread"}, {"coalesce": False, "queue_depth": 4}, {"coalesce_gap": 65536}])
def test_reads_equal_the_files(files, kw):
    r = rng(801)
    data = [p.read_bytes() for p in files]
    with tierfs.IOStack(files, **kw) as io:
        for _ in range(3):
            reqs, want = [], []
            for _ in range(int(r.integers(1, 200))):
                f = int(r.integers(0, len(files)))
                n = int(r.integers(1, min(9000, len(data[f])) + 1))
                off = int(r.integers(0, len(data[f]) - n + 1))
                kind = int(r.integers(0, 3))
                dst = np.empty(n, np.uint8) if kind == 0 else torch.empty(n, dtype=torch.uint8) if kind == 1 else bytearray(n)
                reqs.append((f, off, dst))
                want.append(data[f][off : off + n])
            io.submit(reqs[: len(reqs) // 2])
            io.submit(reqs[len(reqs) // 2 :])  # several submits before one complete
            io.complete()
            for i, ((_, _, dst), w) in enumerate(zip(reqs, want)):
                got = bytes(dst.numpy()) if isinstance(dst, torch.Tensor) else bytes(dst)
                assert got == w, f"seed {SEED} {kw}: request {i} differs"
        assert bytes(io.read(1, 5, 100)) == data[1][5:105]
        st = io.stats()
        assert st["pending_requests"] == 0 and st["requests"] > 0 and st["files"] == len(files)
    assert "closed" in repr(io)
    with pytest.raises(tierfs.ClosedError):
        io.read(0, 0, 1)


def test_bad_requests(files):
    with tierfs.IOStack(files) as io:
        with pytest.raises(tierfs.InvalidArgumentError, match=r"reqs\[1\]"):
            io.submit([(0, 0, np.empty(10, np.uint8)), (0, 1 << 40, np.empty(10, np.uint8))])
        with pytest.raises(tierfs.InvalidArgumentError, match=r"requests\[0\] must be"):
            io.submit([(0, 0)])
        with pytest.raises(tierfs.DTypeError, match="numpy array, a torch tensor or a bytearray"):
            io.submit([(0, 0, b"immutable")])
        io.complete()  # the stack stays usable
        assert bytes(io.read(2, 0, 16)) == files[2].read_bytes()[:16]
    with pytest.raises(tierfs.NotFoundError):
        tierfs.IOStack([files[0].parent / "missing.bin"])
    with pytest.raises(tierfs.InvalidArgumentError, match="no files"):
        tierfs.IOStack([])
