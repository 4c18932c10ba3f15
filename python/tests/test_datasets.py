"""tierfs.datasets.cora against PyG's own reader of the same raw files."""

from __future__ import annotations

import numpy as np
import pytest

import tierfs
import tierfs.datasets


def test_cora_matches_pyg_reader(cora_dir):
    pyg_io = pytest.importorskip("torch_geometric.io.planetoid")
    raw = tierfs.datasets.find_planetoid_raw("cora")
    ref = pyg_io.read_planetoid_data(str(raw), "cora")
    with tierfs.open(cora_dir) as s:
        assert (s.num_nodes(), s.num_edges(), s.dim, s.num_classes) == (2708, 10556, 1433, 7)
        np.testing.assert_array_equal(s.gather(np.arange(2708)), ref.x.numpy())
        np.testing.assert_array_equal(s.labels(np.arange(2708)), ref.y.numpy())
        for name, mask in (("train", ref.train_mask), ("val", ref.val_mask), ("test", ref.test_mask)):
            np.testing.assert_array_equal(np.sort(s.split(name)), mask.nonzero().view(-1).numpy())
        assert [len(s.split(n)) for n in ("train", "val", "test")] == [140, 500, 1000]
        indptr, indices = s.csc()
        dst = np.repeat(np.arange(2708), np.diff(indptr))
        got = set(zip(indices.tolist(), dst.tolist()))
        want = set(zip(*ref.edge_index.tolist()))
        assert got == want


def test_cora_reuses_existing(cora_dir):
    assert tierfs.datasets.cora(cora_dir) == str(cora_dir)


def test_cora_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError):
        tierfs.datasets.cora(tmp_path / "c", source=tmp_path / "nowhere")
