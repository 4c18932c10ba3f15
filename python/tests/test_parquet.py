"""Parquet written by pyarrow (dictionary pages, compression, several row groups and pages, the
stored Arrow schema, nulls) ingests to the same dataset as the same arrays in .npy. The Go side
reads Parquet with its own column readers (ingest/parquetsrc.go), so this checks it against
another writer than its own tests'."""

from __future__ import annotations

import numpy as np
import pytest

import tierfs

from conftest import rng

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _gather_all(path):
    with tierfs.open(str(path)) as s:
        return s.gather(np.arange(s.num_nodes())), s.num_nodes()


@pytest.mark.parametrize("layout", ["fixed_size_list", "list", "columns"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint8", "int16", "float64"])
def test_pyarrow_parquet_matches_npy(tmp_path, layout, dtype):
    r = rng(41)
    n, dim, e = 3000, 5, 20000
    src = r.integers(0, n, e).astype(np.int32)
    dst = (r.integers(0, 40, e) * 7 % n).astype(np.int64)  # few values: dictionary pages
    x = (r.standard_normal((n, dim)) * 20).astype(dtype)
    np.save(tmp_path / "edges.npy", np.stack([src.astype(np.int64), dst]))
    np.save(tmp_path / "x.npy", x)
    pq.write_table(pa.table({"src": src, "dst": dst}), tmp_path / "edges.parquet", row_group_size=7000,
                   data_page_size=4096, compression="zstd")
    flat = pa.array(x.reshape(-1))
    if layout == "fixed_size_list":
        table = pa.table({"x": pa.FixedSizeListArray.from_arrays(flat, dim)})
    elif layout == "list":
        table = pa.table({"x": pa.ListArray.from_arrays(pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32)), flat)})
    else:
        table = pa.table({f"d{j}": x[:, j] for j in range(dim)})
    pq.write_table(table, tmp_path / "x.parquet", row_group_size=1100, data_page_size=2048, compression="snappy")
    tierfs.ingest(tmp_path / "a", edges=tmp_path / "edges.npy", features=tmp_path / "x.npy")
    tierfs.ingest(tmp_path / "b", edges=tmp_path / "edges.parquet", features=tmp_path / "x.parquet")
    (ra, na), (rb, nb) = _gather_all(tmp_path / "a"), _gather_all(tmp_path / "b")
    assert na == nb == n
    np.testing.assert_array_equal(np.asarray(rb), np.asarray(ra))
    for name in ("indptr.bin", "indices.bin"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_pyarrow_parquet_nulls_are_refused(tmp_path):
    pq.write_table(pa.table({"src": pa.array([0, 1, None], pa.int64()), "dst": pa.array([1, 2, 0], pa.int64())}), tmp_path / "e.parquet")
    with pytest.raises(tierfs.InvalidArgumentError, match="null"):
        tierfs.ingest(tmp_path / "g", edges=tmp_path / "e.parquet")
    x = pa.array([[1.0, 2.0], None, [3.0, 4.0]], pa.list_(pa.float32()))
    np.save(tmp_path / "e.npy", np.array([[0, 1], [1, 2]], dtype=np.int64))
    pq.write_table(pa.table({"x": x}), tmp_path / "x.parquet")
    with pytest.raises(tierfs.InvalidArgumentError, match="row 1 is null"):
        tierfs.ingest(tmp_path / "h", edges=tmp_path / "e.npy", features=tmp_path / "x.parquet")
