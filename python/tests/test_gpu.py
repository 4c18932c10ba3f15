"""GPU path through the C ABI: device gathers into CUDA tensors against the host gather.

Runs under pytest (skips without a GPU) and as a plain script on the GPU machine, which has no
pytest: ``python3 python/tests/test_gpu.py``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

import numpy as np

import tierfs

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch = None
    HAS_CUDA = False

SEED = int(os.environ.get("TIERFS_TEST_SEED") or random.randrange(1 << 31))


def _dataset(tmp: str, n: int, dim: int, dtype: str, rng: np.random.Generator) -> tuple:
    x = rng.integers(-100, 100, size=(n, dim)).astype(dtype)
    src = rng.integers(0, n, size=n * 5)
    dst = rng.integers(0, n, size=n * 5)
    path = tierfs.ingest(os.path.join(tmp, f"g-{dtype}-{dim}"), np.stack([src, dst]), x)
    return str(path), x


def check_device_gather_matches_host(tmp: str) -> None:
    rng = np.random.default_rng(SEED)
    for dtype, dim in [("float32", 128), ("float16", 7), ("int8", 3), ("float64", 512)]:
        n = 4000
        path, x = _dataset(tmp, n, dim, dtype, rng)
        rb = x.dtype.itemsize * dim
        for gpu_rows, host_rows in [(0, 0), (n // 10, n // 5), (n, 0)]:
            with tierfs.open(path, device="cuda:0", gpu_cache=gpu_rows * rb, host_cache=host_rows * (rb + 16)) as s:
                for size in [0, 1, 999, 20000]:
                    ids = torch.from_numpy(rng.integers(0, n, size=size))
                    got = s.gather(ids.cuda())
                    assert got.is_cuda and got.shape == (size, dim), (got.device, got.shape)
                    want = x[ids.numpy()]
                    assert np.array_equal(got.cpu().numpy().view(np.uint8), want.view(np.uint8)), (dtype, dim, gpu_rows, host_rows, size)
                    # out= on the current stream, then a kernel on the same stream reads it.
                    out = torch.empty((size, dim), dtype=got.dtype, device="cuda:0")
                    s.gather(ids, out=out)
                    assert torch.equal(out.view(torch.uint8), got.view(torch.uint8))
                stats = s.stats()
                assert stats["gpu"]["available"], stats["gpu"]
                hits = {t["tier"]: t["hits"] for t in stats["tiers"]}
                if gpu_rows:
                    assert hits["gpu"] > 0, hits


def check_gpu_sampling_matches_host(tmp: str) -> None:
    rng = np.random.default_rng(SEED + 1)
    path, _ = _dataset(tmp, 3000, 4, "float32", rng)
    seeds = rng.integers(0, 3000, size=500)
    with tierfs.open(path) as host, tierfs.open(path, device="cuda:0", gpu_topology="device") as gpu:
        for fanouts in ([10, 5], [-1], [3, 3, 3]):
            a = host.sampler(fanouts, seed=7).sample(seeds)
            b = gpu.sampler(fanouts, seed=7).sample(seeds)
            for name in ("nodes", "row", "col"):
                assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), (fanouts, name)


def check_planned_loader_on_gpu_matches_host(tmp: str) -> None:
    """Planned batches served on the GPU (gather_device: packed rows scattered by a kernel) equal
    the host-served planned batches and the dataset, through tierfs.Loader."""
    rng = np.random.default_rng(SEED + 3)
    n, dim = 5000, 24
    path, x = _dataset(tmp, n, dim, "float32", rng)
    rb = 4 * dim
    seeds = rng.choice(n, size=900, replace=False)
    for gpu_rows, host_rows in [(0, 0), (n // 10, n // 5), (n, 0)]:
        with tierfs.open(path, device="cuda:0", gpu_cache=gpu_rows * rb, host_cache=host_rows * (rb + 16)) as s:
            plan_dir = os.path.join(tmp, f"plan-{gpu_rows}-{host_rows}")
            loader = tierfs.Loader(s, s.sampler([5, 3], seed=3), torch.from_numpy(seeds), batch_size=128, planned_epochs=2, plan_dir=plan_dir)
            for epoch in range(3):
                for b, batch in enumerate(loader):
                    assert batch.x.is_cuda, batch.x.device
                    nodes = np.asarray(batch.sample.nodes.cpu() if hasattr(batch.sample.nodes, "cpu") else batch.sample.nodes)
                    assert np.array_equal(batch.x.cpu().numpy(), x[nodes]), (gpu_rows, host_rows, epoch, b)
                    host = loader.plan.gather(epoch, b, nodes)
                    assert np.array_equal(host, x[nodes])
            if gpu_rows < n:
                assert loader.plan.stats()["rows"] > 0, loader.plan.stats()


def check_pyg_loader_on_gpu_matches_host(tmp: str) -> None:
    """tierfs.pyg.NeighborLoader on a CUDA store (edges and rows handed over on the device, ids on
    the host, as PyG's n_id/e_id) yields the host store's batches, and a model step runs on them."""
    import tierfs.pyg
    from torch_geometric.nn import SAGEConv

    rng = np.random.default_rng(SEED + 4)
    n, dim = 4000, 16
    path, x = _dataset(tmp, n, dim, "float32", rng)
    seeds = torch.from_numpy(rng.choice(n, size=700, replace=False))
    conv = SAGEConv(dim, 8).cuda()
    with tierfs.open(path) as host, tierfs.open(path, device="cuda:0", gpu_cache=n // 10 * 4 * dim, host_cache=n // 5 * (4 * dim + 16)) as dev:
        a = tierfs.pyg.NeighborLoader(host, [5, 3], seeds, batch_size=128, shuffle=True, shuffle_seed=4)
        b = tierfs.pyg.NeighborLoader(dev, [5, 3], seeds, batch_size=128, shuffle=True, shuffle_seed=4)
        for ba, bb in zip(a, b):
            assert bb.x.is_cuda and bb.edge_index.is_cuda, (bb.x.device, bb.edge_index.device)
            assert not bb.n_id.is_cuda, bb.n_id.device
            assert torch.equal(ba.edge_index, bb.edge_index.cpu()) and torch.equal(ba.n_id, bb.n_id)
            assert torch.equal(ba.x, bb.x.cpu()) and torch.equal(ba.e_id, bb.e_id.cpu())
            conv(bb.x, bb.edge_index).sum().backward()


def check_io_stack_into_device_memory(tmp: str) -> None:
    """tfs_io (the IO stack on its own, as Hyperion's IOStack) with device destinations."""
    import ctypes as C

    from tierfs._native import IoOptions as Options
    from tierfs._native import IoRequest as Request
    from tierfs._native import lib

    rng = np.random.default_rng(SEED + 2)
    data = rng.integers(0, 256, size=3 * 1024 * 1024 + 77, dtype=np.uint8)
    path = os.path.join(tmp, "iostack.bin")
    data.tofile(path)
    opts = Options(struct_size=C.sizeof(Options), device=0, queue_depth=16)
    io = C.c_void_p()
    paths = (C.c_char_p * 1)(path.encode())
    assert lib.tfs_io_open(paths, 1, C.byref(opts), C.byref(io)) == 0
    try:
        n = 500
        offsets = rng.integers(0, len(data) - 9000, size=n)
        lengths = rng.integers(1, 9000, size=n)
        out = torch.zeros(int(lengths.sum()), dtype=torch.uint8, device="cuda:0")
        reqs = (Request * n)()
        at = 0
        for i in range(n):
            reqs[i] = Request(0, int(offsets[i]), int(lengths[i]), out.data_ptr() + at, 1)
            at += int(lengths[i])
        stream = torch.cuda.current_stream()
        assert lib.tfs_io_submit(io, reqs, n // 2) == 0  # two submits before one complete
        assert lib.tfs_io_submit(io, C.byref(reqs, C.sizeof(Request) * (n // 2)), n - n // 2) == 0
        assert lib.tfs_io_complete(io, C.c_void_p(stream.cuda_stream)) == 0
        got = out.cpu().numpy()
        want = np.concatenate([data[o:o + ln] for o, ln in zip(offsets, lengths)])
        assert np.array_equal(got, want)
    finally:
        lib.tfs_io_close(io)


def test_io_stack_into_device_memory(tmp_path):
    import pytest

    if not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    check_io_stack_into_device_memory(str(tmp_path))


def test_device_gather_matches_host(tmp_path):
    import pytest

    if not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    check_device_gather_matches_host(str(tmp_path))


def test_planned_loader_on_gpu_matches_host(tmp_path):
    import pytest

    if not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    check_planned_loader_on_gpu_matches_host(str(tmp_path))


def test_pyg_loader_on_gpu_matches_host(tmp_path):
    import pytest

    if not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    check_pyg_loader_on_gpu_matches_host(str(tmp_path))


def test_gpu_sampling_matches_host(tmp_path):
    import pytest

    if not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")
    check_gpu_sampling_matches_host(str(tmp_path))


if __name__ == "__main__":
    print(f"TIERFS_TEST_SEED={SEED}; library {tierfs.LIBRARY_PATH}")
    if not HAS_CUDA:
        print("SKIP: no CUDA GPU")
        sys.exit(0)
    with tempfile.TemporaryDirectory() as tmp:
        check_device_gather_matches_host(tmp)
        print("ok device gather matches host")
        check_gpu_sampling_matches_host(tmp)
        print("ok GPU sampling matches host")
        check_io_stack_into_device_memory(tmp)
        print("ok IO stack into device memory")
        check_planned_loader_on_gpu_matches_host(tmp)
        print("ok planned loader on the GPU matches host")
        check_pyg_loader_on_gpu_matches_host(tmp)
        print("ok PyG loader on the GPU matches host")
