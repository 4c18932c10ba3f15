"""tierfs.from_pyg round trip, and the OGB-shaped inputs ingest takes (valid, (N, 1) and NaN labels)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

import tierfs  # noqa: E402
from conftest import SEED, rng  # noqa: E402


def edge_set(src, dst):
    return set(zip(src.tolist(), dst.tolist()))


def test_from_pyg_round_trip(tmp_path):
    r = rng(70)
    n, e, dim = 600, 4000, 12
    x = torch.from_numpy(r.standard_normal((n, dim)).astype(np.float32))
    edge_index = torch.from_numpy(r.integers(0, n, (2, e)))
    y = torch.from_numpy(r.integers(0, 5, n))
    masks = {k: torch.from_numpy(r.random(n) < f) for k, f in (("train", 0.5), ("val", 0.2), ("test", 0.2))}
    data = Data(x=x, edge_index=edge_index, y=y, train_mask=masks["train"], val_mask=masks["val"], test_mask=masks["test"])
    path = tierfs.from_pyg(data, tmp_path / "ds")
    with tierfs.open(path) as s:
        assert (s.num_nodes(), s.dim, s.num_classes) == (n, dim, 5)
        assert torch.equal(s.gather(torch.arange(n)), x), f"seed {SEED}"
        assert torch.equal(s.labels(torch.arange(n)), y)
        for k, m in masks.items():
            np.testing.assert_array_equal(np.sort(s.split(k)), np.flatnonzero(m.numpy()), err_msg=k)
        indptr, indices = s.csc()
        dst = np.repeat(np.arange(n), np.diff(indptr))
        # CSC lists in-neighbors: edge_index[0] -> edge_index[1], duplicates kept.
        assert len(indices) == e and edge_set(indices, dst) == edge_set(*edge_index.numpy())


def test_from_pyg_idx_splits_extras_and_refusals(tmp_path):
    r = rng(71)
    n = 100
    data = Data(x=torch.zeros(n, 3), edge_index=torch.from_numpy(r.integers(0, n, (2, 300))), y=torch.arange(n).view(-1, 1) % 4,
                train_idx=torch.arange(0, 50), valid_idx=torch.arange(50, 70), edge_attr=torch.zeros(300, 2), note="not a tensor")
    with pytest.warns(UserWarning, match="note"):
        path = tierfs.from_pyg(data, tmp_path / "ds")
    with tierfs.open(path) as s:
        assert s.features["edge_attr"]["of"] == "edge"
        np.testing.assert_array_equal(np.sort(s.split("train")), np.arange(50))
        np.testing.assert_array_equal(np.sort(s.split("val")), np.arange(50, 70))
        np.testing.assert_array_equal(s.labels(np.arange(n)), np.arange(n) % 4)
    with pytest.raises(tierfs.InvalidArgumentError, match="no node types"):
        tierfs.from_pyg(HeteroData(), tmp_path / "h")
    with pytest.raises(tierfs.DTypeError, match="want a torch_geometric.data.Data"):
        tierfs.from_pyg({"x": 1}, tmp_path / "d")
    with pytest.raises(tierfs.InvalidArgumentError, match="from_pyg"):
        tierfs.ingest(tmp_path / "e", edges=data)


def test_data_of_num_nodes_alone(tmp_path):
    """A Data of num_nodes alone (PyG's no-edges loader tests build one, e.g.
    test/loader/test_link_neighbor_loader.py::test_homo_link_neighbor_loader_no_edges) is a
    dataset of that many nodes, no features, no edges; a Data of nothing is refused, naming
    num_nodes."""
    with tierfs.open(tierfs.from_pyg(Data(num_nodes=7), tmp_path / "ds")) as s:
        assert s.num_nodes() == 7 and s.num_edges() == 0 and s.features == {} and s.feature_name is None
        assert s.csc()[0].tolist() == [0] * 8
    with pytest.raises(tierfs.InvalidArgumentError, match="nor num_nodes"):
        tierfs.from_pyg(Data(), tmp_path / "none")


def test_ogb_shaped_inputs(tmp_path):
    """OGB's layouts: split dict with "valid", labels of shape (N, 1), NaN for unlabelled."""
    r = rng(72)
    n = 200
    y = r.integers(0, 7, n).astype(np.float32)
    y[r.random(n) < 0.3] = np.nan
    split = {"train": np.arange(0, 100), "valid": np.arange(100, 150), "test": np.arange(150, 200)}
    path = tierfs.ingest(tmp_path / "ogb", edges=r.integers(0, n, (2, 800)), features=r.standard_normal((n, 4)).astype(np.float32),
                         labels=y.reshape(-1, 1), splits=split)
    with tierfs.open(path) as s:
        want = np.where(np.isnan(y), -1, y).astype(np.int64)
        np.testing.assert_array_equal(s.labels(np.arange(n)), want)
        np.testing.assert_array_equal(np.sort(s.split("val")), split["valid"])
    with pytest.raises(tierfs.InvalidArgumentError, match=r"labels\[3\] = 2.5"):
        tierfs.ingest(tmp_path / "bad", features=np.zeros((5, 2), np.float32), labels=np.array([0, 1, np.nan, 2.5, 1]))
    with pytest.raises(tierfs.InvalidArgumentError, match="same split twice"):
        tierfs.ingest(tmp_path / "twice", features=np.zeros((5, 2), np.float32), splits={"val": [1], "valid": [2]})


def test_replace_needs_force_and_open_stores_keep_the_old(tmp_path):
    """Writing over a dataset is refused without force; with it the new dataset is swapped in
    whole, and a store open on the old one keeps reading the old rows."""
    out = tmp_path / "ds"
    tierfs.synth(out, nodes=300, avg_degree=3, dim=8, seed=1)
    with tierfs.open(out) as old:
        before = old.gather(np.arange(300))
        with pytest.raises(tierfs.InvalidArgumentError, match="already holds a dataset"):
            tierfs.synth(out, nodes=300, avg_degree=3, dim=8, seed=2)
        with pytest.raises(tierfs.InvalidArgumentError, match="already holds a dataset"):
            tierfs.ingest(out, features=np.zeros((5, 2), np.float32))
        tierfs.synth(out, nodes=300, avg_degree=3, dim=8, seed=2, force=True)
        np.testing.assert_array_equal(old.gather(np.arange(300)), before)  # the old files, still open
    with tierfs.open(out) as new:
        assert not np.array_equal(new.gather(np.arange(300)), before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # nothing left beside it
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(tierfs.InvalidArgumentError, match="1 entries"):
        tierfs.ingest(tmp_path / "mine", features=np.zeros((5, 2), np.float32))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_ingest_csv_and_chosen_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    r = rng(73)
    n = 50
    src, dst = r.integers(0, n, 400), r.integers(0, n, 400)
    src[0], dst[0] = n - 1, 0
    csv = tmp_path / "e.csv"
    csv.write_text("weight,to,from\n" + "".join(f"0.5,{d},{s}\n" for s, d in zip(src, dst)))
    pq.write_table(pa.table({"a": dst, "b": src}), tmp_path / "e.parquet")
    for name, kw in (("csv", dict(edges=csv, edge_columns=("from", "to"))), ("parquet", dict(edges=tmp_path / "e.parquet", edge_columns=(1, 0)))):
        path = tierfs.ingest(tmp_path / name, features=np.zeros((n, 2), np.float32), **kw)
        with tierfs.open(path) as s:
            indptr, indices = s.csc()
            got = edge_set(indices, np.repeat(np.arange(n), np.diff(indptr)))
            assert got == edge_set(src, dst), name
    with pytest.raises(tierfs.InvalidArgumentError, match="has no column"):
        tierfs.ingest(tmp_path / "bad", edges=csv, edge_columns=("src", "dst"))


def test_ingest_errors_name_the_arrays_not_temp_files(tmp_path):
    """An error about an array given to ingest names that array, not the temporary .npy file
    it was written to."""
    edges = np.array([[0, 1, 2], [1, 2, 7]])
    with pytest.raises(tierfs.Error) as e:
        tierfs.ingest(tmp_path / "ds", edges=edges, features=np.zeros((5, 2), np.float32))
    assert "<the edges array>" in str(e.value) and ".tierfs-ingest-" not in str(e.value), str(e.value)
