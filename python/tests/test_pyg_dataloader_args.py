"""torch DataLoader's ``pin_memory`` and ``prefetch_factor`` given to tierfs.pyg's loaders (issue
42): taken as a PyG script passes them. ``prefetch_factor`` sets the pipeline's batches in flight
(``num_workers * prefetch_factor``); ``pin_memory=True`` pins every batch's tensors (PyG's
``Data.pin_memory``) where the batch is on the host and CUDA is present, else warns as DataLoader
does. The machine running the tests may have no GPU, so pinning is checked through a stand-in
for ``Tensor.pin_memory`` that marks what it was given."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from conftest import SEED, rng  # noqa: E402


@pytest.fixture(scope="module")
def homo(tmp_path_factory):
    r = rng(4221)
    data = Data(x=torch.from_numpy(r.standard_normal((120, 4)).astype(np.float32)), edge_index=torch.from_numpy(r.integers(0, 120, (2, 600))),
                edge_attr=torch.from_numpy(r.standard_normal((600, 2)).astype(np.float32)))
    with tierfs.open(tierfs.from_pyg(data, tmp_path_factory.mktemp("homo") / "ds")) as store:
        yield store, data


@pytest.fixture
def fake_pinning(monkeypatch):
    """CUDA reported present and Tensor.pin_memory a stand-in: returns a copy and remembers it,
    so a test can tell which of a batch's tensors were pinned."""
    pinned = []

    def pin_memory(self, *args, **kwargs):
        out = self.clone()
        pinned.append(out)
        return out

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    return pinned


def every_tensor(batch):
    stores = batch.stores
    return [v for s in stores for v in s.values() if isinstance(v, torch.Tensor)]


def test_pin_memory_pins_every_tensor_of_each_batch(homo, fake_pinning):
    store, data = homo
    eli = data.edge_index[:, :64]
    for loader in (tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=40, pin_memory=True, transform=lambda d: d),
                   tierfs.pyg.LinkNeighborLoader(store, [3, 2], edge_label_index=eli, batch_size=32, pin_memory=True)):
        batches = list(loader)
        assert len(batches) > 1
        ids = {id(t) for t in fake_pinning}
        for b in batches:
            tensors = every_tensor(b)
            assert tensors and all(id(t) in ids for t in tensors), [k for s in b.stores for k, v in s.items() if isinstance(v, torch.Tensor) and id(v) not in ids]
    fake_pinning.clear()
    unpinned = next(iter(tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=40)))  # pin_memory=False (DataLoader's default)
    assert not fake_pinning and unpinned.x.shape[1] == 4


def test_pin_memory_hetero(tmp_path, fake_pinning):
    r = rng(4222)
    data = HeteroData()
    data["paper"].x = torch.from_numpy(r.standard_normal((50, 3)).astype(np.float32))
    data["author"].x = torch.from_numpy(r.standard_normal((30, 2)).astype(np.float32))
    data["author", "writes", "paper"].edge_index = torch.stack([torch.from_numpy(r.integers(0, 30, 200)), torch.from_numpy(r.integers(0, 50, 200))])
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "ds")) as store:
        b = next(iter(tierfs.pyg.NeighborLoader(store, [2], input_nodes="paper", batch_size=20, pin_memory=True)))
        ids = {id(t) for t in fake_pinning}
        assert every_tensor(b) and all(id(t) in ids for t in every_tensor(b))


def test_pin_memory_without_cuda_warns_and_pins_nothing(homo, monkeypatch):
    store, data = homo
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = tierfs.pyg.NeighborLoader(store, [3], batch_size=40, pin_memory=True)
    b = next(iter(loader))
    assert b.x.shape == (b.num_nodes, 4)
    with pytest.warns(UserWarning, match="pin_memory"):
        tierfs.pyg.LinkNeighborLoader(store, [3], edge_label_index=data.edge_index[:, :10], pin_memory=True)
    for bad in ("yes", 1):
        with pytest.raises(tierfs.InvalidArgumentError, match="pin_memory"):
            tierfs.pyg.NeighborLoader(store, [3], pin_memory=bad)


@pytest.mark.parametrize("workers, factor, prefetch, depth", [(0, None, None, 4), (2, None, None, 2), (2, 3, None, 6), (0, 5, None, 5),
                                                              (4, 0, None, 1), (2, 3, 7, 7), (100, 4, None, 256)])
def test_prefetch_factor_sets_batches_in_flight(homo, workers, factor, prefetch, depth):
    """DataLoader's prefetch_factor (None its default; with workers 2 a worker): the pipeline's
    depth is num_workers * prefetch_factor (at least one worker's worth, 1 to 256), an explicit
    prefetch wins; the batches are those of the defaults."""
    print(f"seed {SEED}")
    store, data = homo
    extra = {} if prefetch is None else {"prefetch": prefetch}
    loader = tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=30, num_workers=workers, prefetch_factor=factor, seed=1, **extra)
    got = list(loader)
    assert loader.stats()["depth"] == depth
    want = list(tierfs.pyg.NeighborLoader(store, [3, 2], batch_size=30, seed=1))
    assert len(got) == len(want) == 4
    for a, b in zip(got, want):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
    link = tierfs.pyg.LinkNeighborLoader(store, [2], edge_label_index=data.edge_index[:, :90], batch_size=30, num_workers=workers,
                                         prefetch_factor=factor, **extra)
    assert len(list(link)) == 3 and link.stats()["depth"] == depth


def test_prefetch_factor_refuses_what_dataloader_refuses(homo):
    store, _ = homo
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(tierfs.InvalidArgumentError, match="prefetch_factor"):
            tierfs.pyg.NeighborLoader(store, [3], prefetch_factor=bad)
