"""Half the bytes (issue 44): ingest stores float32 features at float16 or bfloat16
(``store_dtype=``), bit for bit as numpy's ``astype(np.float16)`` and torch's
``.to(torch.bfloat16)`` round them; gathers return the stored dtype or cast when asked
(``dtype=``); the loaders give the model the dtype asked (``x_dtype=``); the host tier holds twice
the rows and a gather reads half the bytes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tierfs
import tierfs.pyg
from conftest import SEED, rng

# The largest float16 (65504) and the least float32 that float16 rounds to Inf (65520, halfway
# to 65536); bfloat16's largest finite value and the float32 just below its rounding to Inf.
F16_MAX, F16_INF_FROM = 65504.0, 65520.0
BF16_MAX = float(np.array(0x7F7F, np.uint16).view(ml_dtypes.bfloat16))
BF16_BELOW_INF = np.array(0x7F7F7FFF, np.uint32).view(np.float32)


def _specials(store_dtype: str) -> np.ndarray:
    """Values that test the rounding: ties between neighbours of the store dtype (and a float32
    step either side), subnormals of both dtypes, NaNs with payloads, ±Inf, ±0, the range edge."""
    bits = np.arange(0, 1 << 16, 7, dtype=np.uint32)  # every 7th 16-bit pattern
    if store_dtype == "float16":
        lo = bits.astype(np.uint16).view(np.float16)
        lo = lo[np.isfinite(lo) & (np.abs(lo) < F16_MAX)].astype(np.float32)
        hi = np.nextafter(lo.astype(np.float16), np.float16(np.inf) * np.sign(lo + 0.5).astype(np.float16)).astype(np.float32)
        edge = [F16_MAX, -F16_MAX, np.nextafter(np.float32(F16_INF_FROM), 0), -np.nextafter(np.float32(F16_INF_FROM), 0), 65505.0, 6.1e-5,
                2.0**-24, 2.0**-25, 2.0**-25 * 1.0001, 3 * 2.0**-26, 2.0**-26]
    else:
        lo = (bits << 16).view(np.float32)
        lo = lo[np.isfinite(lo) & (np.abs(lo) < BF16_MAX)]
        hi = ((lo.view(np.uint32) + (1 << 16)) & 0xFFFF0000).view(np.float32)
        edge = [BF16_MAX, -BF16_MAX, BF16_BELOW_INF, -BF16_BELOW_INF]
    mid = ((lo.astype(np.float64) + hi.astype(np.float64)) / 2).astype(np.float32)  # exact: one more bit than the store dtype
    ties = np.concatenate([mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf) * np.sign(mid))])
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FA00000, 0x7FFFFFFF], np.uint32).view(np.float32)
    sub32 = np.array([1, 0x80000001, 0x007FFFFF, 0x00400000], np.uint32).view(np.float32)  # float32 subnormals
    other = np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0] + edge, np.float32)
    return np.concatenate([ties, nans, sub32, other]).astype(np.float32)


def _input(store_dtype: str, dim: int = 16) -> np.ndarray:
    """Random float32 rows over many magnitudes (the test seed), then the special values."""
    r = rng(4400)
    scale = 2.0 ** r.integers(-30, 15 if store_dtype == "float16" else 100, size=4000 * dim)
    rand = (r.standard_normal(4000 * dim) * scale).astype(np.float32)
    if store_dtype == "float16":
        rand = rand[np.abs(rand) < F16_INF_FROM]
    vals = np.concatenate([rand, _specials(store_dtype)])
    vals = np.concatenate([vals, np.zeros(-len(vals) % dim, np.float32)])
    return vals.reshape(-1, dim)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


@pytest.mark.parametrize("store_dtype", ["float16", "bfloat16"])
def test_bit_for_bit_as_numpy_and_torch(tmp_path, store_dtype):
    x = _input(store_dtype)
    path = tierfs.ingest(tmp_path / "g", features=x, store_dtype=store_dtype)
    with tierfs.open(path) as s:
        assert s.dtype_name == store_dtype and s.row_bytes == 2 * x.shape[1]
        got = _bits(s.gather(np.arange(x.shape[0])))
    if store_dtype == "float16":
        with np.errstate(invalid="ignore", over="ignore"):
            want = _bits(x.astype(np.float16))
        bad = np.flatnonzero(got.ravel() != want.ravel())
        assert bad.size == 0, f"TIERFS_TEST_SEED={SEED}: {bad.size} values differ from numpy's astype(np.float16), first " \
            f"{x.ravel()[bad[0]]!r} ({x.view(np.uint32).ravel()[bad[0]]:#010x}): {got.ravel()[bad[0]]:#06x}, numpy {want.ravel()[bad[0]]:#06x}"
        return
    t = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    with np.errstate(invalid="ignore"):
        ml = _bits(x.astype(ml_dtypes.bfloat16))
    nan = np.isnan(x)
    bad = np.flatnonzero((got != t) & ~nan)
    assert bad.size == 0, f"TIERFS_TEST_SEED={SEED}: {bad.size} values differ from torch's .to(torch.bfloat16), first " \
        f"{x.ravel()[bad[0]]!r}: {got.ravel()[bad[0]]:#06x}, torch {t.ravel()[bad[0]]:#06x}"
    # NaN: torch's bits depend on its CPU kernel (0x7fc0 or 0xffff); ml_dtypes' (numpy's
    # bfloat16) are the quiet NaN of the sign, and so are ours.
    assert np.array_equal(got[nan], ml[nan]) and nan.sum() >= 6
    assert np.isnan(got[nan].view(ml_dtypes.bfloat16).astype(np.float32)).all()


def test_float16_overflow_is_refused_naming_the_value(tmp_path):
    x = np.zeros((50, 8), np.float32)
    x[41, 5] = 70000.0
    with pytest.raises(ValueError, match=r'feature "x".*row 41, column 5 holds 70000, outside float16\'s finite range \(largest 65504\).*bfloat16'):
        tierfs.ingest(tmp_path / "g", features=x, store_dtype="float16")
    assert not (tmp_path / "g").exists()
    path = tierfs.ingest(tmp_path / "b", features=x, store_dtype=torch.bfloat16)  # bfloat16 holds it
    with tierfs.open(path) as s:
        assert s.gather(41, dtype=np.float32)[5] == 70144.0  # 70000 rounded to bfloat16's 8 bits


def test_only_float32_converts(tmp_path):
    ints = np.arange(40, dtype=np.int32).reshape(10, 4)
    with pytest.raises(ValueError, match=r"dtype int32; StoreDType float16 converts float32 features only.*default feature"):
        tierfs.ingest(tmp_path / "a", features=ints, store_dtype="float16")
    with pytest.raises(ValueError, match=r'node feature "d".*float64.*float32 features only'):
        tierfs.ingest(tmp_path / "b", features=np.ones((10, 4), np.float32), node_features={"d": np.ones((10, 2))}, store_dtype="float16")
    with pytest.raises(ValueError, match=r"float16 or bfloat16"):
        tierfs.ingest(tmp_path / "c", features=np.ones((10, 4), np.float32), store_dtype="int8")
    with pytest.raises(TypeError, match=r"store_dtype: want a dtype name"):
        tierfs.ingest(tmp_path / "d", features=np.ones((10, 4), np.float32), store_dtype=object())
    np.save(tmp_path / "x.npy", np.ones((10, 4), np.float32))
    with pytest.raises(ValueError, match=r"FeaturesInPlace"):
        tierfs.ingest(tmp_path / "e", features=tmp_path / "x.npy", features_in_place=True, store_dtype="float16")
    # An integer feature beside the default is kept; one already at the store dtype too.
    path = tierfs.ingest(tmp_path / "f", features=np.ones((10, 4), np.float16), node_features={"year": np.arange(10)}, store_dtype="float16")
    with tierfs.open(path) as s:
        assert s.features["x"]["dtype"] == "float16" and s.features["year"]["dtype"] == "int64"


def test_gather_casts_when_asked(tmp_path):
    r = rng(4401)
    x = r.standard_normal((300, 24)).astype(np.float32)
    path = tierfs.ingest(tmp_path / "g", features=x, store_dtype="bfloat16")
    want = torch.from_numpy(x).to(torch.bfloat16).float()
    ids = r.integers(0, 300, 100)
    with tierfs.open(path, host_cache="8KiB") as s:
        assert s.torch_dtype == torch.bfloat16
        assert s.gather(torch.from_numpy(ids)).dtype == torch.bfloat16  # the stored dtype by default
        got = s.gather(torch.from_numpy(ids), dtype=torch.float32)
        assert got.dtype == torch.float32 and torch.equal(got, want[ids])
        got_np = s.gather(ids, dtype=np.float32)
        assert got_np.dtype == np.float32 and np.array_equal(got_np, want[ids].numpy())
        out = torch.empty((100, 24), dtype=torch.float32)
        assert s.gather(torch.from_numpy(ids), out=out, dtype="float32") is out and torch.equal(out, want[ids])
        assert torch.equal(s.gather_async(torch.from_numpy(ids), dtype=torch.float32).wait(), want[ids])
        with pytest.raises(TypeError, match=r"out must be a torch.float32 tensor"):
            s.gather(torch.from_numpy(ids), out=torch.empty((100, 24), dtype=torch.float16), dtype=torch.float32)
        with pytest.raises(TypeError, match=r"not a feature dtype"):
            s.gather(ids, dtype="complex64")


def _tier(stats, name):
    return next(t for t in stats["tiers"] if t["tier"] == name)


def test_host_tier_holds_twice_the_rows_and_reads_halve(tmp_path):
    """For one budget a float16 store's host tier holds twice the rows, and a gather of uncached rows requests and reads half the bytes (8 KiB rows against
    4 KiB: whole blocks either way)."""
    r = rng(4402)
    x = r.standard_normal((600, 2048)).astype(np.float32)
    full = tierfs.ingest(tmp_path / "f32", features=x)
    half = tierfs.ingest(tmp_path / "f16", features=x, store_dtype="float16")
    ids = r.choice(600, 200, replace=False)
    held, disk = {}, {}
    for name, path in (("f32", full), ("f16", half)):
        with tierfs.open(path, host_cache="1MiB") as s:
            held[name] = _tier(s.stats(), "host")["capacity_rows"]
        with tierfs.open(path, host_cache=0) as s:
            s.gather(ids)
            io = s.stats()["io"]
            disk[name] = (io["bytes_requested"], io["bytes_read"])
    assert 2 * held["f32"] <= held["f16"] <= 2 * held["f32"] + 2, held  # the index's 16 B a row: a little more than twice
    assert disk["f16"][0] * 2 == disk["f32"][0] == 200 * 8192, disk
    assert disk["f16"][1] * 2 == disk["f32"][1], disk


def test_loaders_give_the_dtype_asked(tmp_path):
    r = rng(4403)
    n = 400
    x = r.standard_normal((n, 8)).astype(np.float32)
    edges = np.stack([r.integers(0, n, 3000), r.integers(0, n, 3000)])
    path = tierfs.ingest(tmp_path / "g", edges, x, labels=r.integers(0, 3, n), store_dtype="float16")
    want = torch.from_numpy(x.astype(np.float16).astype(np.float32))
    with tierfs.open(path) as s:
        seeds = torch.arange(64)
        b = next(iter(tierfs.Loader(s, s.sampler([3, 2]), seeds, 32)))
        assert b.x.dtype == torch.float16  # the default: the stored dtype
        b = next(iter(tierfs.Loader(s, s.sampler([3, 2]), seeds, 32, x_dtype=torch.float32)))
        assert b.x.dtype == torch.float32 and torch.equal(b.x, want[b.sample.nodes])
        data = next(iter(tierfs.pyg.NeighborLoader(s, [3, 2], input_nodes=seeds, batch_size=32, x_dtype="float32")))
        assert data.x.dtype == torch.float32 and torch.equal(data.x, want[data.n_id])
        with pytest.raises(tierfs.InvalidArgumentError, match=r"x_dtype 'half-ish' must be a feature dtype"):
            tierfs.Loader(s, s.sampler([2]), seeds, 32, x_dtype="half-ish")


def test_from_pyg_store_dtype(tmp_path):
    from torch_geometric.data import Data, HeteroData

    r = rng(4404)
    x = torch.from_numpy(r.standard_normal((50, 6)).astype(np.float32))
    ei = torch.from_numpy(r.integers(0, 50, (2, 200)))
    w = torch.rand(200)
    path = tierfs.from_pyg(Data(x=x, edge_index=ei, edge_weight=w, year=torch.arange(50)), tmp_path / "d", store_dtype="bfloat16")
    with tierfs.open(path) as s:
        assert s.dtype_name == "bfloat16" and s.features["year"]["dtype"] == "int64"
        assert s.features["edge_weight"]["dtype"] == "bfloat16"
        assert torch.equal(s.gather(torch.arange(50), dtype=torch.float32), x.to(torch.bfloat16).float())
    h = HeteroData()
    h["paper"].x, h["author"].x = x, x[:20] * 3
    h["author", "writes", "paper"].edge_index = torch.stack([ei[0] % 20, ei[1]])
    path = tierfs.from_pyg(h, tmp_path / "h", store_dtype=np.float16)
    with tierfs.open(path) as s:
        for t, want in (("paper", x), ("author", x[:20] * 3)):
            got = s.gather(torch.arange(want.shape[0]), node_type=t)
            assert got.dtype == torch.float16 and torch.equal(got, want.half()), t


def test_from_graphbolt_store_dtype(tmp_path):
    from test_graphbolt import make_graphbolt

    _, a = make_graphbolt(tmp_path / "gb", rng(4405), csv=False)
    path = tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds", store_dtype="float16")
    with tierfs.open(path) as s:
        assert {k: f["dtype"] for k, f in s.features.items()} == {"feat": "float16", "year": "int16", "weight": "float16", "input_edge_id": "int64"}
        np.testing.assert_array_equal(_bits(s.gather(np.arange(s.num_nodes()))), _bits(a["feat"].astype(np.float16)), err_msg=f"seed {SEED}")
