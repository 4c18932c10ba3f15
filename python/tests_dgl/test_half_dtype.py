"""tierfs.dgl.DataLoader on a half-precision store (issue 44): blocks carry the stored dtype, or
x_dtype's when asked, cast after the rows arrived."""

from __future__ import annotations

import numpy as np
import torch

import tierfs
import tierfs.dgl as tdgl


def test_dataloader_x_dtype(tmp_path):
    r = np.random.default_rng(44)
    n = 300
    x = r.standard_normal((n, 6)).astype(np.float32)
    edges = np.stack([r.integers(0, n, 2000), r.integers(0, n, 2000)])
    path = tierfs.ingest(tmp_path / "g", edges, x, labels=r.integers(0, 3, n), splits={"train": np.arange(100)}, store_dtype="float16")
    want = x.astype(np.float16)
    with tierfs.open(path) as store:
        sampler = tdgl.NeighborSampler(store, [3, 3], seed=2)
        for x_dtype, got_dtype in ((None, torch.float16), (torch.float32, torch.float32)):
            kw = {} if x_dtype is None else {"x_dtype": x_dtype}
            for input_nodes, _, blocks in tdgl.DataLoader(store, "train", sampler, batch_size=32, **kw):
                feat = blocks[0].srcdata["feat"]
                assert feat.dtype == got_dtype
                np.testing.assert_array_equal(feat.float().numpy(), want[input_nodes.numpy()].astype(np.float32))
