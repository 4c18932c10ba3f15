"""gather against numpy: every dtype, every kind of ids, out= buffers, tiers and IO backends."""

from __future__ import annotations

import subprocess
import threading

import numpy as np
import pytest
import torch

import tierfs
from conftest import DTYPES, SEED, needs_cuda, random_features, rng


@pytest.fixture(scope="module", params=DTYPES)
def ingested(request, data_dir):
    """Features of each dtype ingested from arrays: rows smaller and larger than a 4 KiB block."""
    dtype = request.param
    r = rng(100 + DTYPES.index(dtype))
    # dim 23: odd row sizes; 1100 columns of 8 bytes > one block, so rows are packed across blocks
    dim = 1100 if dtype in ("float64", "int64") else 23
    n = 700
    src, expected = random_features(r, n, dim, dtype)
    path = tierfs.ingest(data_dir / f"ingest-{dtype}", None, src)
    return dtype, path, src, expected


@pytest.mark.parametrize("host_cache", [0, "16KiB", "1GiB"], ids=["ssd", "mixed", "host"])
def test_gather_ingested_equals_numpy(ingested, host_cache):
    dtype, path, src, expected = ingested
    r = rng(200)
    with tierfs.open(path, host_cache=host_cache) as s:
        assert s.dtype_name == dtype
        assert (s.num_nodes(), s.dim) == expected.shape
        assert s.row_bytes == expected.shape[1] * expected.dtype.itemsize
        ids = r.integers(0, s.num_nodes(), 3000)  # repeats for sure
        got = s.gather(ids)
        assert got.dtype == expected.dtype and got.shape == (3000, s.dim)
        np.testing.assert_array_equal(got, expected[ids], err_msg=f"seed {SEED}")
        all_rows = s.gather(np.arange(s.num_nodes()))
        np.testing.assert_array_equal(all_rows, expected)


def test_gather_torch_dtype(ingested):
    dtype, path, src, expected = ingested
    with tierfs.open(path) as s:
        ids = torch.from_numpy(rng(201).integers(0, s.num_nodes(), 500))
        got = s.gather(ids)
        assert isinstance(got, torch.Tensor) and got.dtype == getattr(torch, dtype)
        assert s.torch_dtype == getattr(torch, dtype)
        if dtype == "bfloat16":
            torch.testing.assert_close(got, src[ids], rtol=0, atol=0)
            np.testing.assert_array_equal(got.view(torch.int16).numpy().view(expected.dtype), expected[ids.numpy()])
        else:
            np.testing.assert_array_equal(got.numpy(), expected[ids.numpy()])


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_synth_consistent_across_tiers_and_backends(data_dir, dtype):
    """Synthesized data has no numpy source: all tiers, both IO backends and the full read must
    agree row for row."""
    path = tierfs.synth(data_dir / f"synth-{dtype}", nodes=2000, avg_degree=5, dim=19, dtype=dtype, classes=4, seed=7)
    with tierfs.open(path) as ssd:
        ref = ssd.gather(np.arange(ssd.num_nodes()))
        assert ref.shape == (2000, 19) and ref.dtype == ssd.dtype
        assert ssd.dtype_name == dtype
        ids = rng(300).integers(0, 2000, 5000)
        np.testing.assert_array_equal(ssd.gather(ids), ref[ids], err_msg=f"seed {SEED}")
    for kw in (dict(host_cache="1GiB"), dict(host_cache="8KiB", io_backend="pread"), dict(unverified_reads=True),
               dict(coalesce_gap=8192, read_align=-1, unverified_reads=True), dict(coalesce_gap=-1)):
        with tierfs.open(path, **kw) as s:
            np.testing.assert_array_equal(s.gather(ids), ref[ids], err_msg=f"{kw} seed {SEED}")
    # Same seed, same bytes.
    again = tierfs.synth(data_dir / f"synth-{dtype}-again", nodes=2000, avg_degree=5, dim=19, dtype=dtype, classes=4, seed=7)
    with tierfs.open(again) as s:
        np.testing.assert_array_equal(s.gather(np.arange(2000)), ref)


def test_read_options_and_io_stats(graph):
    with tierfs.open(graph["path"], coalesce_gap=4096, read_align=-1, unverified_reads=True) as s:
        s.gather(rng(302).integers(0, graph["n"], 500))
        st = s.stats()
        assert st["io"]["coalesce_gap"] == 4096 and st["io"]["block_size"] <= 4096
        assert st["read_amplification"] >= 1 and st["reads_per_gather"] > 0 and "gap_bytes" in st["io"]
    with pytest.raises(ValueError, match="coalesce_gap = -7"):
        tierfs.open(graph["path"], coalesce_gap=-7)
    # Verified reads (the default) are whole checksummed blocks; GPU-submitted reads are not checked.
    with pytest.raises(ValueError, match="read_align = 512.*unverified_reads"):
        tierfs.open(graph["path"], read_align=512)
    with pytest.raises(ValueError, match="io_backend = .gpu-uring.*unverified_reads"):
        tierfs.open(graph["path"], io_backend="gpu-uring")
    with pytest.raises(ValueError, match="verify_reads.*unverified_reads"):
        tierfs.open(graph["path"], verify_reads=True)


def test_gather_matches_cli(graph, cli, tmp_path):
    ids = rng(301).integers(0, graph["n"], 777)
    np.save(tmp_path / "ids.npy", ids)
    subprocess.run([cli, "gather", graph["path"], "--ids", str(tmp_path / "ids.npy"), "--out", str(tmp_path / "out.npy")], check=True, capture_output=True)
    with tierfs.open(graph["path"]) as s:
        np.testing.assert_array_equal(s.gather(ids), np.load(tmp_path / "out.npy"))


# kinds of ids ------------------------------------------------------------------------------


def test_ids_numpy_any_integer_dtype(store, graph):
    x = graph["x"]
    ids = rng(400).integers(0, graph["n"], 100)
    for dt in (np.int64, np.int32, np.int16, np.uint32, np.uint64):
        a = ids.astype(dt) if np.iinfo(dt).max >= graph["n"] else None
        if a is None:
            continue
        got = store.gather(a)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, x[ids])
    # non-contiguous view
    big = np.repeat(ids, 2)
    np.testing.assert_array_equal(store.gather(big[::2]), x[ids])


def test_ids_torch(store, graph):
    x = graph["x"]
    ids = rng(401).integers(0, graph["n"], 100)
    for dt in (torch.int64, torch.int32):
        got = store.gather(torch.from_numpy(ids).to(dt))
        assert isinstance(got, torch.Tensor) and got.device.type == "cpu" and got.dtype == torch.float32
        np.testing.assert_array_equal(got.numpy(), x[ids])


def test_ids_list_tuple_range_scalar(store, graph):
    x = graph["x"]
    np.testing.assert_array_equal(store.gather([5, 3, 5]), x[[5, 3, 5]])
    np.testing.assert_array_equal(store.gather((1, 2)), x[[1, 2]])
    np.testing.assert_array_equal(store.gather(range(10, 20)), x[10:20])
    row = store.gather(42)
    assert row.shape == (graph["dim"],)
    np.testing.assert_array_equal(row, x[42])
    np.testing.assert_array_equal(store.gather(np.int64(7)), x[7])
    t = store.gather(torch.tensor(9))
    assert isinstance(t, torch.Tensor) and t.shape == (graph["dim"],)


def test_empty_batch(store, graph):
    for ids in (np.empty(0, np.int64), [], torch.empty(0, dtype=torch.long), range(0)):
        got = store.gather(ids)
        assert tuple(got.shape) == (0, graph["dim"])
    assert store.labels([]).shape == (0,)
    out = np.empty((0, graph["dim"]), np.float32)
    assert store.gather([], out=out) is out


def test_repeated_ids(store, graph):
    ids = np.array([7] * 1000 + [0, 7, 2999, 7])
    np.testing.assert_array_equal(store.gather(ids), graph["x"][ids])


# out= --------------------------------------------------------------------------------------


def test_out_numpy_and_torch(store, graph):
    x = graph["x"]
    ids = rng(402).integers(0, graph["n"], 64)
    out = np.full((64, graph["dim"]), np.nan, np.float32)
    assert store.gather(ids, out=out) is out
    np.testing.assert_array_equal(out, x[ids])
    tout = torch.full((64, graph["dim"]), float("nan"))
    assert store.gather(torch.from_numpy(ids), out=tout) is tout
    np.testing.assert_array_equal(tout.numpy(), x[ids])
    # rows of a bigger preallocated buffer (a contiguous slice)
    big = np.zeros((100, graph["dim"]), np.float32)
    store.gather(ids, out=big[10:74])
    np.testing.assert_array_equal(big[10:74], x[ids])
    assert not big[:10].any() and not big[74:].any()


def test_out_checked(store, graph):
    ids = [1, 2, 3]
    with pytest.raises(tierfs.InvalidArgumentError, match="shape"):
        store.gather(ids, out=np.empty((4, graph["dim"]), np.float32))
    with pytest.raises(tierfs.DTypeError, match="dtype"):
        store.gather(ids, out=np.empty((3, graph["dim"]), np.float64))
    with pytest.raises(tierfs.InvalidArgumentError, match="contiguous"):
        store.gather(ids, out=np.empty((graph["dim"], 3), np.float32).T)
    with pytest.raises(tierfs.DTypeError):
        store.gather(ids, out=torch.empty((3, graph["dim"]), dtype=torch.float16))


# labels, splits, stats ---------------------------------------------------------------------


def test_labels_and_splits(store, graph):
    ids = rng(403).integers(0, graph["n"], 500)
    np.testing.assert_array_equal(store.labels(ids), graph["y"][ids])
    t = store.labels(torch.from_numpy(ids))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.int64
    assert store.num_classes == 6
    for name, ids in graph["splits"].items():
        np.testing.assert_array_equal(store.split(name), ids)
    assert store.split_names == ["test", "train", "val"]


def test_stats_move(graph):
    with tierfs.open(graph["path"], host_cache=0) as s:
        before = s.stats()
        s.gather(np.arange(100))
        after = s.stats()
        assert after["gathers"] == before["gathers"] + 1
        assert after["rows_gathered"] == before["rows_gathered"] + 100
        ssd = {t["tier"]: t for t in after["tiers"]}["ssd"]
        assert ssd["hits"] >= 100


def test_place_changes_host_tier(graph):
    n = graph["n"]
    with tierfs.open(graph["path"], host_cache=graph["dim"] * 4 * 50 + 65536) as s:
        hot = np.zeros(n, np.uint32)
        hot[:10] = 1000
        s.place(hot)
        before = {t["tier"]: t for t in s.stats()["tiers"]}["host"]["hits"]
        s.gather(np.arange(10))
        after = {t["tier"]: t for t in s.stats()["tiers"]}["host"]["hits"]
        assert after - before == 10
        s.place()  # back to in-degree
        np.testing.assert_array_equal(s.gather(np.arange(10)), graph["x"][:10])


def test_concurrent_gathers(graph):
    x = graph["x"]
    errors = []
    with tierfs.open(graph["path"], host_cache="32KiB") as s:

        def work(k):
            try:
                r = rng(500 + k)
                for _ in range(20):
                    ids = r.integers(0, graph["n"], 2000)
                    np.testing.assert_array_equal(s.gather(ids), x[ids])
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]


def test_repr(store, graph):
    r = repr(store)
    assert f"nodes={graph['n']}" in r and "dtype=float32" in r and "host_cache=64.00 KiB" in r


# CUDA --------------------------------------------------------------------------------------


@needs_cuda
def test_cuda_store_returns_cuda_tensors(graph):
    x = torch.from_numpy(graph["x"])
    ids = rng(600).integers(0, graph["n"], 1000)
    with tierfs.open(graph["path"], host_cache="64KiB", device="cuda:0") as s:
        assert s.device == "cuda:0"
        for given in (ids, torch.from_numpy(ids), list(ids[:10])):
            got = s.gather(given)
            assert isinstance(got, torch.Tensor) and got.is_cuda
            want = x[torch.as_tensor(np.asarray(given))]
            torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
        lab = s.labels(ids)
        assert lab.is_cuda


@needs_cuda
def test_cuda_ids_give_cuda_output_and_out_buffer(graph):
    x = torch.from_numpy(graph["x"])
    ids = torch.from_numpy(rng(601).integers(0, graph["n"], 1000))
    with tierfs.open(graph["path"]) as s:  # a CPU store
        got = s.gather(ids.cuda())
        assert got.is_cuda
        torch.testing.assert_close(got.cpu(), x[ids], rtol=0, atol=0)
        out = torch.empty((1000, graph["dim"]), device="cuda")
        assert s.gather(ids, out=out) is out
        torch.testing.assert_close(out.cpu(), x[ids], rtol=0, atol=0)
        assert s.gather(torch.empty(0, dtype=torch.long, device="cuda")).shape == (0, graph["dim"])


@needs_cuda
def test_cuda_sample_on_device(store):
    seeds = torch.arange(10, device="cuda")
    s = store.sampler([3]).sample(seeds)
    assert s.nodes.is_cuda and torch.equal(s.nodes[:10].cpu(), seeds.cpu())


def test_cuda_device_needs_a_gpu(graph):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(tierfs.NotSupportedError, match="CUDA"):
        tierfs.open(graph["path"], device="cuda:0")


@needs_cuda
def test_gpu_cache_option(graph):
    """gpu_cache opens either way: served by the GPU tier where the library has the CUDA path,
    else ignored with a RuntimeWarning."""
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with tierfs.open(graph["path"], device="cuda:0", gpu_cache="1MB", host_cache="64KiB") as s:
            ids = rng(602).integers(0, graph["n"], 300)
            torch.testing.assert_close(s.gather(ids).cpu(), torch.from_numpy(graph["x"][ids]), rtol=0, atol=0)


def test_ingest_and_synth_striped_over_device_paths(tmp_path):
    r = rng(603)
    x = r.standard_normal((5000, 40)).astype(np.float32)  # 160-byte rows, several 1 MiB stripes
    devs = [tmp_path / "ssd0", tmp_path / "ssd1", tmp_path / "ssd2"]
    for d in devs:
        d.mkdir()
    path = tierfs.ingest(tmp_path / "striped", None, x, device_paths=devs)
    assert all(any(d.iterdir()) for d in devs)
    with tierfs.open(path) as s:
        ids = r.integers(0, 5000, 4000)
        np.testing.assert_array_equal(s.gather(ids), x[ids], err_msg=f"seed {SEED}")
    sdevs = [tmp_path / "s0", tmp_path / "s1"]
    for d in sdevs:
        d.mkdir()
    a = tierfs.synth(tmp_path / "synth-striped", nodes=3000, avg_degree=3, dim=40, seed=2, device_paths=sdevs)
    b = tierfs.synth(tmp_path / "synth-plain", nodes=3000, avg_degree=3, dim=40, seed=2)
    with tierfs.open(a) as sa, tierfs.open(b) as sb:
        np.testing.assert_array_equal(sa.gather(np.arange(3000)), sb.gather(np.arange(3000)))


@needs_cuda
def test_cuda_tensor_ids_on_a_gpu_store(graph):
    """CUDA-tensor ids on a CUDA store with a GPU tier are split on the GPU (tfs_gather_device_ids):
    every row cached (one launch, no wait), some rows on the SSD tier (misses come to the host),
    int32 and strided ids (converted on the device), a side stream, and a bad id (an error, now
    or from the next call)."""
    x = torch.from_numpy(graph["x"])
    n, rb = graph["n"], graph["x"].shape[1] * graph["x"].itemsize
    r = rng(605)
    for gpu_rows in (n, n // 3):
        with tierfs.open(graph["path"], device="cuda:0", gpu_cache=gpu_rows * rb, host_cache=0) as s:
            ids = torch.from_numpy(r.integers(0, n, 2000)).cuda()
            torch.testing.assert_close(s.gather(ids).cpu(), x[ids.cpu()], rtol=0, atol=0)
            i32 = ids.to(torch.int32)
            torch.testing.assert_close(s.gather(i32).cpu(), x[ids.cpu()], rtol=0, atol=0)
            strided = ids[::3]
            torch.testing.assert_close(s.gather(strided).cpu(), x[strided.cpu()], rtol=0, atol=0)
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                got = s.gather(ids)
            side.synchronize()
            torch.testing.assert_close(got.cpu(), x[ids.cpu()], rtol=0, atol=0)
            bad = ids.clone()
            bad[7] = n
            with pytest.raises(IndexError, match=r"ids\[7\]"):
                s.gather(bad)
                torch.cuda.synchronize()
                s.gather(ids[:10])  # a gather that did not wait reports it here
            torch.testing.assert_close(s.gather(ids).cpu(), x[ids.cpu()], rtol=0, atol=0)
            if gpu_rows == n:
                assert s.stats()["gpu"]["device_gathers"] > 0


def test_bfloat16_numpy_dtype(data_dir):
    """bfloat16 rows come as ml_dtypes.bfloat16 where ml_dtypes is installed (else uint16 bits);
    a uint16 `out` takes the same bits either way."""
    path = tierfs.synth(data_dir / "synth-bf16-dtype", nodes=500, avg_degree=3, dim=8, dtype="bfloat16", seed=3)
    with tierfs.open(path) as s:
        try:
            import ml_dtypes

            assert s.dtype == np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            assert s.dtype == np.uint16
        ids = rng(310).integers(0, 500, 100)
        got = s.gather(ids)
        bits = np.empty((100, 8), dtype=np.uint16)
        assert s.gather(ids, out=bits) is bits
        np.testing.assert_array_equal(bits, got.view(np.uint16))
        np.testing.assert_array_equal(s.gather(torch.from_numpy(ids)).view(torch.int16).numpy().view(np.uint16), bits)
