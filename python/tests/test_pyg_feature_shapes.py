"""Features of rows of more than one dimension (GraphBolt's ``(N, a, b)``, stored by
:func:`tierfs.from_graphbolt` with their row shape, manifest v9 ``shape``) through tierfs.pyg
(issue 42): the FeatureStore and the loaders serve them in that shape, as PyG's in-memory
``Data`` holding the same tensors does (test/data/test_feature_store.py's reads, PyG 2.8)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402

N, E = 40, 150


def graphbolt_dataset(root, r):
    """A GraphBolt dataset of N nodes and E random edges, node features feat (N, 4) and cube
    (N, 2, 3), edge feature w (E, 2, 2); returns the arrays."""
    arrays = {"edges": r.integers(0, N, (2, E)), "feat": r.standard_normal((N, 4)).astype(np.float32),
              "cube": r.standard_normal((N, 2, 3)).astype(np.float32), "w": r.standard_normal((E, 2, 2)).astype(np.float32)}
    root.mkdir(parents=True)
    for k, v in arrays.items():
        np.save(root / f"{k}.npy", v)
    entries = "".join(f"  - domain: {d}\n    name: {k}\n    format: numpy\n    path: {k}.npy\n" for d, k in (("node", "feat"), ("node", "cube"), ("edge", "w")))
    (root / "metadata.yaml").write_text(
        f"dataset_name: shapes\ngraph:\n  nodes:\n    - num: {N}\n  edges:\n    - format: numpy\n      path: edges.npy\nfeature_data:\n{entries}")
    return arrays


def test_feature_store_and_loader_keep_row_shapes(tmp_path):
    print(f"seed {SEED}")
    a = graphbolt_dataset(tmp_path / "gb", rng(4211))
    cube, w = torch.from_numpy(a["cube"]), torch.from_numpy(a["w"])
    with tierfs.open(tierfs.from_graphbolt(tmp_path / "gb", tmp_path / "ds")) as store:
        fs, _ = tierfs.pyg.stores(store)
        ids = torch.tensor([3, 0, 3, 39])
        assert torch.equal(fs.get_tensor(attr_name="cube", index=ids), cube[ids])
        assert torch.equal(fs[None, "cube", ids], cube[ids])
        assert torch.equal(fs.get_tensor(attr_name="cube"), cube)
        assert fs.get_tensor_size(attr_name="cube") == (N, 2, 3)
        assert fs.get_tensor_size(attr_name="feat") == (N, 4)
        assert torch.equal(fs.get_tensor(attr_name="cube", index=5), cube[5])  # one row: (a, b)
        eids = torch.tensor([0, 149, 7])
        assert torch.equal(fs[tierfs.pyg.EDGE_TYPE, "w", eids], w[eids])
        assert fs.get_tensor_size(group_name=tierfs.pyg.EDGE_TYPE, attr_name="w") == (E, 2, 2)
        # a batch's features by n_id and e_id, as PyG's loader over the in-memory Data gives them
        data = Data(feat=torch.from_numpy(a["feat"]), cube=cube, edge_index=torch.from_numpy(a["edges"]), w=w, num_nodes=N)
        ours = list(tierfs.pyg.NeighborLoader(store, [4, 3], batch_size=16, seed=2))
        mem = list(NodeLoader(data, node_sampler=tierfs.pyg.NeighborSampler(store, [4, 3], seed=2), batch_size=16))
        assert len(ours) == len(mem) == 3
        for b, m in zip(ours, mem):
            assert b.cube.shape == (b.num_nodes, 2, 3) and b.w.shape == (b.e_id.numel(), 2, 2)
            assert torch.equal(b.cube, m.cube) and torch.equal(b.w, m.w) and torch.equal(b.feat, m.feat), f"seed {SEED}"


def test_typed_feature_store_and_loader_keep_row_shapes(tmp_path):
    """The same on a typed dataset (GraphBolt's named types): node type user's cube (N, 2, 3)
    and edge type user:follows:user's w (E, 2, 2) by the HeteroData's keys."""
    print(f"seed {SEED}")
    r = rng(4212)
    root = tmp_path / "gb"
    root.mkdir()
    a = {"edges": r.integers(0, N, (2, E)), "feat": r.standard_normal((N, 4)).astype(np.float32),
         "cube": r.standard_normal((N, 2, 3)).astype(np.float32), "w": r.standard_normal((E, 2, 2)).astype(np.float32)}
    for k, v in a.items():
        np.save(root / f"{k}.npy", v)
    et = "user:follows:user"
    entries = "".join(f"  - domain: {d}\n    type: \"{t}\"\n    name: {k}\n    format: numpy\n    path: {k}.npy\n"
                      for d, t, k in (("node", "user", "feat"), ("node", "user", "cube"), ("edge", et, "w")))
    (root / "metadata.yaml").write_text(
        f"dataset_name: shapes\ngraph:\n  nodes:\n    - type: user\n      num: {N}\n  edges:\n    - type: \"{et}\"\n      format: numpy\n"
        f"      path: edges.npy\nfeature_data:\n{entries}")
    cube, w = torch.from_numpy(a["cube"]), torch.from_numpy(a["w"])
    follows = ("user", "follows", "user")
    with tierfs.open(tierfs.from_graphbolt(root, tmp_path / "ds")) as store:
        assert store.is_hetero
        fs, _ = tierfs.pyg.stores(store)
        ids = torch.tensor([1, 39, 1])
        assert torch.equal(fs["user", "cube", ids], cube[ids]) and fs.get_tensor_size("user", "cube") == (N, 2, 3)
        assert torch.equal(fs[follows, "w", torch.tensor([5, 0])], w[[5, 0]]) and fs.get_tensor_size(follows, "w") == (E, 2, 2)
        b = next(iter(tierfs.pyg.NeighborLoader(store, [3], input_nodes="user", batch_size=10, seed=1)))
        assert torch.equal(b["user"].cube, cube[b["user"].n_id]), f"seed {SEED}"
        assert torch.equal(b[follows].w, w[b[follows].e_id]), f"seed {SEED}"
