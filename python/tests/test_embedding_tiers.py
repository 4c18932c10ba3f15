"""tierfs.Embedding's device tier (gpu_cache=, issue 45): the rows the store's placement ranks
hottest, with their optimizer state, in a tensor on the store's device (a host tensor on a CPU
store) in front of the table's page cache and its disk. After steps of SGD, Adagrad and Adam over
batches sharing rows, spread over the tier, the page cache (two pages: evictions between steps)
and the disk, with the tier placed again between steps, every row and optimizer state equals
torch.nn.Embedding(sparse=True) with the same torch optimizer bit for bit (random graph,
ids and gradients, printed seed), through a checkpoint and a reopen; on the host, and on the GPU
when there is one. The tier holds what the store's ranking puts first, for a featureless type
too."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import tierfs  # noqa: E402
from tierfs._native import lib  # noqa: E402
from torch_geometric.data import Data, HeteroData  # noqa: E402

from conftest import SEED, needs_cuda, rng  # noqa: E402

ROWS, DIM, CACHE = 1200, 16, 8192  # a page cache of 2 pages of 4 KiB; the table is 19 to 58 pages
OPTIMIZERS = {
    "sgd": dict(lr=0.37),
    "adagrad": dict(lr=0.37, lr_decay=0.01, eps=1e-10),
    "adam": dict(lr=0.037, betas=(0.8, 0.99), eps=1e-7),
}
STATE = {"sgd": [], "adagrad": ["sum"], "adam": ["exp_avg", "exp_avg_sq"]}
DEVICES = ["cpu", pytest.param("cuda:0", marks=needs_cuda)]  # the store's device, the tier's


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A one-type featureless graph whose in-degrees are skewed (a few rows far hotter)."""
    r = rng(4701)
    dst = np.minimum(r.zipf(1.5, 20000) - 1, ROWS - 1)
    edges = np.stack([r.integers(0, ROWS, 20000), r.permutation(ROWS)[dst]])
    path = tierfs.from_pyg(Data(edge_index=torch.from_numpy(edges), num_nodes=ROWS), tmp_path_factory.mktemp("embtier") / "g")
    return SimpleNamespace(path=path, in_degree=np.bincount(edges[1], minlength=ROWS))


@pytest.fixture
def deterministic():
    """torch's deterministic kernels on CUDA (its SGD sums repeated ids by atomics otherwise)."""
    was, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was, warn_only=warn)


def _tier_bytes(name, rows):
    """gpu_cache for a device tier of rows rows of optimizer name's slots."""
    return rows * (4 * DIM * (1 + len(STATE[name])) + 8)


def _slots(emb, ids):
    """Whole slots through the core (the table's copy: flushed by a checkpoint)."""
    out = torch.empty((len(ids), emb.info["slot_floats"]), dtype=torch.float32)
    ids = torch.as_tensor(ids, dtype=torch.int64)
    tierfs._native.check(lib.tfs_table_read_slots(emb._h(), ids.data_ptr(), len(ids), out.data_ptr(), out.numel()))
    return out


def _bits_differ(a, b):
    return (a.cpu().view(torch.int32) != b.cpu().view(torch.int32)).sum().item()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_tiered_steps_equal_torch_bit_for_bit(graph, tmp_path, name, device, deterministic):
    seed = SEED * 11 + list(OPTIMIZERS).index(name)
    print(f"seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    hyper = OPTIMIZERS[name]
    store = tierfs.open(graph.path, device=device)
    tier = dict(gpu_cache=_tier_bytes(name, 300), host_cache=CACHE)
    path = tmp_path / "t"
    emb = tierfs.Embedding(store, None, DIM, path, optimizer=name, seed=seed % 1000, **tier, **hyper)
    try:
        assert emb.stats()["gpu"]["device"] == store.device and emb.stats()["gpu"]["rows_held"] == 300
        by_degree = np.lexsort((np.arange(ROWS), -graph.in_degree))[:300]  # a featureless type's ranking
        assert np.array_equal(store.hottest(300), by_degree)
        assert torch.equal(emb._tier.ids.cpu(), torch.from_numpy(np.sort(by_degree)))
        ref = torch.nn.Embedding(ROWS, DIM, sparse=True).to(device)
        with torch.no_grad():
            ref.weight.copy_(emb.read(torch.arange(ROWS)))
        opt = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad, "adam": torch.optim.SparseAdam}[name](ref.parameters(), **hyper)
        hot = torch.from_numpy(store.hottest(100))
        for step in range(1, 25):
            # Repeats, and rows of the tier's beside rows of the cache's and the disk's.
            ids = torch.cat([hot[torch.randint(0, 100, (60,), generator=gen)], torch.randint(0, ROWS, (140,), generator=gen)])
            ids = ids[torch.randperm(200, generator=gen)].to(device)
            g = torch.randn(200, DIM, generator=gen).to(device)
            x = emb(ids)
            assert x.device == ids.device and torch.equal(x.detach(), ref(ids).detach()), f"step {step} (seed {seed})"
            (x * g).sum().backward()
            emb.step()
            opt.zero_grad()
            (ref(ids) * g).sum().backward()
            opt.step()
            if step % 5 == 0:  # the tier takes other rows: its own go back to the table
                emb.place(torch.randint(0, 50, (ROWS,), generator=gen))
            if step == 12:
                emb.checkpoint()
                emb.close()
                emb = tierfs.Embedding(store, None, DIM, path, optimizer=name, **tier)
                assert emb.steps == 12
        got = emb.read(torch.arange(ROWS))
        assert (d := _bits_differ(got, ref.weight.detach())) == 0, f"{d} floats differ from torch (seed {seed})"
        st = emb.stats()
        assert st["gpu"]["hits"] > 0 and st["gpu"]["misses"] > 0 and st["evictions"] > 0, st
        emb.checkpoint()  # the table's copy holds the tier's rows and state now
        slots, state = _slots(emb, torch.arange(ROWS)), opt.state[ref.weight]
        assert _bits_differ(slots[:, :DIM], ref.weight.detach()) == 0, f"seed {seed}"
        for k, key in enumerate(STATE[name]):
            assert _bits_differ(slots[:, DIM * (k + 1) : DIM * (k + 2)], state[key]) == 0, f"{key} differs (seed {seed})"
        emb.close()
        emb = tierfs.Embedding(store, None, DIM, path, optimizer=name, host_cache=CACHE)  # reopened without a tier
        assert emb.steps == 24 and _bits_differ(emb.read(torch.arange(ROWS)), ref.weight.detach()) == 0, f"seed {seed}"
    finally:
        emb.close()
        store.close()


def test_steps_on_tier_rows_alone_are_checkpointed(graph, tmp_path):
    """A step whose rows are all the tier's writes nothing to the table; the checkpoint writes
    them and the step count."""
    store = tierfs.open(graph.path)
    emb = tierfs.Embedding(store, None, DIM, tmp_path / "t", optimizer="adam", gpu_cache=_tier_bytes("adam", 50))
    try:
        hot = torch.from_numpy(store.hottest(50))
        before = emb.read(hot)
        for _ in range(3):
            emb(hot[:20]).sum().backward()
            emb.step()
        written = emb.stats()["pages_written"]
        after = emb.read(hot)
        assert not torch.equal(after[:20], before[:20]) and torch.equal(after[20:], before[20:])
        assert emb.stats()["gpu"]["misses"] == 0
        emb.checkpoint()
        assert emb.stats()["pages_written"] > written
        emb.close()
        emb = tierfs.Embedding(store, None, DIM, tmp_path / "t", optimizer="adam")
        assert emb.steps == 3 and torch.equal(emb.read(hot), after)
    finally:
        emb.close()
        store.close()


def test_write_read_and_errors_with_a_tier(graph, tmp_path):
    store = tierfs.open(graph.path)
    emb = tierfs.Embedding(store, None, DIM, tmp_path / "t", optimizer="adagrad", init="zeros", gpu_cache=_tier_bytes("adagrad", 30))
    try:
        hot = torch.from_numpy(store.hottest(30))
        cold = torch.from_numpy(store.hottest(ROWS)[-5:])
        ids = torch.cat([hot[:3], cold[:2], hot[:1]])  # hot[0] twice: the later write wins
        rows = torch.arange(6 * DIM, dtype=torch.float32).reshape(6, DIM)
        emb.write(ids, rows)
        want = torch.cat([rows[5:6], rows[1:5]])
        assert torch.equal(emb.read(torch.cat([hot[:3], cold[:2]])), want)
        emb.checkpoint()
        assert torch.equal(_slots(emb, torch.cat([hot[:3], cold[:2]]))[:, :DIM], want)
        with pytest.raises(tierfs.OutOfRangeError, match=rf"ids\[1\] = {ROWS} is out of range"):
            emb.read(torch.tensor([int(hot[0]), ROWS]))
        with pytest.raises(tierfs.OutOfRangeError, match=rf"ids\[0\] = -1 is out of range"):
            emb.write(torch.tensor([-1, int(hot[0])]), torch.zeros(2, DIM))
        assert torch.equal(emb.read(hot[:1]), rows[5:6])  # the refused write changed nothing
        with pytest.raises(tierfs.InvalidArgumentError, match="gpu_cache needs a store"):
            tierfs.Embedding(None, None, DIM, tmp_path / "u", optimizer="sgd", num_embeddings=10, gpu_cache="1MiB")
    finally:
        emb.close()
        store.close()


def test_tier_of_a_featureless_type_is_the_stores_ranking(tmp_path):
    """A featureless type has no tier stack; the store ranks its rows as one would be: by how
    often they are neighbors in the edge types whose source type it is (ties to the smaller id)."""
    r = rng(4702)
    papers, authors = 50, 300
    data = HeteroData()
    data["paper"].x = torch.from_numpy(r.standard_normal((papers, 4)).astype(np.float32))
    data["author"].num_nodes = authors
    src = np.minimum(r.zipf(1.4, 1500) - 1, authors - 1)
    data["author", "writes", "paper"].edge_index = torch.from_numpy(np.stack([src, r.integers(0, papers, 1500)]))
    data["paper", "rev", "author"].edge_index = torch.from_numpy(np.stack([r.integers(0, papers, 200), r.integers(0, authors, 200)]))
    store = tierfs.open(tierfs.from_pyg(data, tmp_path / "g"))
    emb = tierfs.Embedding(store, "author", DIM, tmp_path / "a", optimizer="sgd", gpu_cache=_tier_bytes("sgd", 40))
    try:
        counts = np.bincount(src, minlength=authors)
        want = np.lexsort((np.arange(authors), -counts))[:40]
        assert np.array_equal(store.hottest(40, node_type="author"), want)
        assert torch.equal(emb._tier.ids, torch.from_numpy(np.sort(want)))
        hotness = r.integers(0, 1000, authors)
        emb.place(hotness)
        assert torch.equal(emb._tier.ids, torch.from_numpy(np.sort(np.lexsort((np.arange(authors), -hotness))[:40])))
    finally:
        emb.close()
        store.close()
