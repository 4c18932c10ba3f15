"""embeddings= on tierfs's own loaders (issue 45, item 4): tierfs.Loader, tierfs.pyg.NeighborLoader
and LinkNeighborLoader put a table's rows of a batch's nodes in the batch (x of a featureless
type), gathered as the batch is handed over, so a prefetched batch sees every earlier step. A few
training steps through each loader equal the same steps with torch.nn.Embedding(sparse=True) and
the same torch sparse optimizer in memory, bit for bit (random graph and gradients, printed seed;
a page cache of two pages, so rows are evicted between steps), with and without a device tier
(gpu_cache: the hottest rows in a tensor in front of the cache, placed again between steps)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from torch_geometric.data import Data, HeteroData  # noqa: E402

from conftest import SEED, rng  # noqa: E402

N, DIM = 400, 8  # nodes of the one-type graph; the table's width
P, A = 60, 300  # papers (features, labels) and authors (featureless) of the typed graph


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A one-type graph without features."""
    r = rng(4601)
    data = Data(edge_index=torch.from_numpy(r.integers(0, N, (2, 3000))), num_nodes=N)
    s = tierfs.open(tierfs.from_pyg(data, tmp_path_factory.mktemp("embl") / "g"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    r = rng(4602)
    data = HeteroData()
    data["paper"].x = torch.from_numpy(r.standard_normal((P, 4)).astype(np.float32))
    data["paper"].y = torch.from_numpy(r.integers(0, 3, P))
    data["author"].num_nodes = A
    data["author", "writes", "paper"].edge_index = torch.from_numpy(np.stack([r.integers(0, A, 900), r.integers(0, P, 900)]))
    data["paper", "rev", "author"].edge_index = torch.from_numpy(np.stack([r.integers(0, P, 900), r.integers(0, A, 900)]))
    s = tierfs.open(tierfs.from_pyg(data, tmp_path_factory.mktemp("embt") / "g"))
    yield s
    s.close()


class Pair:
    """A tierfs.Embedding and an nn.Embedding(sparse=True) with the same rows and optimizer."""

    def __init__(self, store, node_type, path, optimizer, seed, gpu_cache=None):
        lr = {"sgd": 0.5, "adagrad": 0.3, "adam": 0.05}[optimizer]
        rows = store.num_nodes(node_type)
        self.emb = tierfs.Embedding(store, node_type, DIM, path, optimizer=optimizer, lr=lr, seed=seed, host_cache=8192, gpu_cache=gpu_cache)
        self.steps = 0
        self.ref = torch.nn.Embedding(rows, DIM, sparse=True)
        with torch.no_grad():
            self.ref.weight.copy_(self.emb.read(torch.arange(rows)))
        make = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad, "adam": torch.optim.SparseAdam}[optimizer]
        self.opt = make(self.ref.parameters(), lr=lr)

    def step(self, loss, ref_loss):
        self.emb.zero_grad()
        self.opt.zero_grad()
        loss.backward()
        ref_loss.backward()
        self.emb.step()
        self.opt.step()
        self.steps += 1
        if self.emb.stats().get("gpu") and self.steps % 4 == 0:  # other rows in the device tier
            self.emb.place(torch.randint(0, 1000, (self.ref.num_embeddings,)))

    def check_all(self):
        assert torch.equal(self.emb.read(torch.arange(self.ref.num_embeddings)), self.ref.weight.detach())
        tier = self.emb.stats().get("gpu")
        assert tier is None or (tier["hits"] > 0 and tier["misses"] > 0), tier


def _loss(x, row, col, w):
    """A small message-passing loss over the batch's rows: every row's gradient differs."""
    h = x.clone().index_add(0, col, x[row])
    return (torch.tanh(h) * w).sum() + 0.1 * (h**2).mean()


TIERS = [None, 4096]  # gpu_cache: none, or a device tier of a tenth to a quarter of the rows


@pytest.mark.parametrize("gpu_cache", TIERS)
@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_loader_steps_equal_nn_embedding(plain, tmp_path, optimizer, gpu_cache):
    seed = SEED + 4603
    print(f"seed {seed}")
    g = torch.Generator().manual_seed(seed)
    pair = Pair(plain, None, tmp_path / "t.emb", optimizer, seed % 1000, gpu_cache)
    try:
        seeds = torch.randperm(N, generator=g)[:120]
        loader = tierfs.Loader(plain, plain.sampler([4, 3], seed=seed % 1000), seeds, 10, prefetch=4, embeddings={None: pair.emb})
        steps = 0
        for b in loader:  # batches share nodes: each is prefetched before the steps of those before it
            ids = torch.as_tensor(b.sample.nodes)
            xr = pair.ref(ids)
            assert torch.equal(b.x.detach(), xr.detach()), f"batch {steps} does not see the earlier steps"
            row, col = torch.as_tensor(b.sample.row), torch.as_tensor(b.sample.col)
            w = torch.randn(len(ids), DIM, generator=g)
            pair.step(_loss(b.x, row, col, w), _loss(xr, row, col, w))
            steps += 1
        assert steps == 12
        pair.check_all()
    finally:
        pair.emb.close()


@pytest.mark.parametrize("gpu_cache", TIERS)
def test_neighbor_loader_typed_steps_equal_nn_embedding(typed, tmp_path, gpu_cache):
    """NeighborLoader over a typed store: author (featureless) x from the table beside paper's
    dataset x; also through a stores(embeddings=) FeatureStore given as data."""
    seed = SEED + 4604
    print(f"seed {seed}")
    g = torch.Generator().manual_seed(seed)
    pair = Pair(typed, "author", tmp_path / "a.emb", "adam", seed % 1000, gpu_cache)
    try:
        nn = {et: [5, 3] for et in typed.edge_types}
        for data in (typed, tierfs.pyg.stores(typed, embeddings={"author": pair.emb})):
            loader = tierfs.pyg.NeighborLoader(data, nn, input_nodes=("paper", None), batch_size=8, shuffle=True, prefetch=4,
                                               embeddings={"author": pair.emb} if data is typed else None)
            steps = 0
            for b in loader:
                ids = b["author"].n_id
                xr = pair.ref(ids)
                assert torch.equal(b["author"].x.detach(), xr.detach()), f"batch {steps} does not see the earlier steps"
                assert torch.equal(b["paper"].x, torch.as_tensor(typed.gather(b["paper"].n_id, node_type="paper")))
                row, col = b["author", "writes", "paper"].edge_index
                w = torch.randn(b["paper"].num_nodes, DIM, generator=g)

                def loss(x):
                    h = torch.zeros(b["paper"].num_nodes, DIM).index_add(0, col, x[row])
                    return (torch.tanh(h) * w).sum()

                pair.step(loss(b["author"].x), loss(xr))
                steps += 1
            assert steps == len(loader) == P // 8 + 1
        pair.check_all()
        # loader(index) carries the rows too
        b = loader(torch.tensor([0, 5]))
        assert torch.equal(b["author"].x.detach(), pair.ref(b["author"].n_id).detach())
    finally:
        pair.emb.close()


@pytest.mark.parametrize("gpu_cache", TIERS)
def test_link_loader_steps_equal_nn_embedding(plain, tmp_path, gpu_cache):
    """LinkNeighborLoader with binary negatives over a featureless graph: a dot-product link
    loss on the table's rows."""
    seed = SEED + 4605
    print(f"seed {seed}")
    pair = Pair(plain, None, tmp_path / "l.emb", "adagrad", seed % 1000, gpu_cache)
    try:
        torch.manual_seed(seed)  # PyG's DataLoader shuffles with torch's RNG
        loader = tierfs.pyg.LinkNeighborLoader(plain, [3, 2], neg_sampling_ratio=1.0, batch_size=64, shuffle=True, prefetch=4,
                                               seed=seed % 1000, embeddings={None: pair.emb})
        steps = 0
        for b in loader:
            xr = pair.ref(b.n_id)
            assert torch.equal(b.x.detach(), xr.detach()), f"batch {steps} does not see the earlier steps"
            src, dst = b.edge_label_index

            def loss(x):
                return torch.nn.functional.binary_cross_entropy_with_logits((x[src] * x[dst]).sum(-1), b.edge_label)

            pair.step(loss(b.x), loss(xr))
            steps += 1
            if steps == 10:
                break
        assert steps == 10
        pair.check_all()
    finally:
        pair.emb.close()


def test_loader_refusals(typed, plain, tmp_path):
    emb = tierfs.Embedding(typed, "author", DIM, tmp_path / "r.emb", optimizer="sgd")
    try:
        sampler = typed.sampler({et: [2] for et in typed.edge_types})
        with pytest.raises(tierfs.InvalidArgumentError, match=r"node type 'paper': it has the dataset's feature 'x'"):
            tierfs.Loader(typed, sampler, torch.arange(4), 2, node_type="paper", embeddings={"paper": emb})
        with pytest.raises(KeyError, match="no such type"):
            tierfs.pyg.NeighborLoader(typed, {et: [2] for et in typed.edge_types}, input_nodes=("paper", None), embeddings={"venue": emb})
        with pytest.raises(tierfs.InvalidArgumentError, match=rf"{A} rows of node type 'author'; node type None has {N} nodes"):
            tierfs.pyg.LinkNeighborLoader(plain, [2], batch_size=4, embeddings={None: emb})
        with pytest.raises(TypeError, match="want a tierfs.Embedding"):
            tierfs.Loader(plain, plain.sampler([2]), torch.arange(4), 2, embeddings={None: torch.nn.Embedding(N, DIM)})
    finally:
        emb.close()


def test_warm_reads_ahead_within_a_quarter_of_the_cache(tmp_path):
    """The pipeline's read ahead of a batch's table rows brings their pages in only where they
    take at most a quarter of the cache (else it would evict the step's own pages)."""
    from tierfs.embedding import warm

    emb = tierfs.Embedding(None, None, DIM, tmp_path / "w.emb", optimizer="sgd", num_embeddings=10000, host_cache=40 * 4096)
    try:
        per = emb.info["rows_per_page"]
        before = emb.stats()["pages_read"]
        warm({None: emb}, lambda t: torch.arange(3 * per, 13 * per))  # 10 pages: a quarter of 40
        assert emb.stats()["pages_read"] == before + 10
        warm({None: emb}, lambda t: torch.arange(20 * per, 31 * per))  # 11 pages: left to the step
        assert emb.stats()["pages_read"] == before + 10
    finally:
        emb.close()


def test_typed_loader_puts_rows_beside_dataset_features(typed, tmp_path):
    seed = SEED + 4606
    print(f"seed {seed}")
    emb = tierfs.Embedding(typed, "author", DIM, tmp_path / "b.emb", optimizer="sgd", lr=0.5, seed=seed % 1000, host_cache=8192)
    try:
        sampler = typed.sampler({et: [4, 2] for et in typed.edge_types}, seed=seed % 1000)
        loader = tierfs.Loader(typed, sampler, torch.arange(P), 16, node_type="paper", prefetch=3, embeddings={"author": emb})
        for b in loader:
            ids = torch.as_tensor(b.sample.node["author"])
            assert set(b.x) == {"paper", "author"}
            assert torch.equal(b.x["author"].detach(), emb.read(ids))  # after the steps before it
            assert torch.equal(b.x["paper"], torch.as_tensor(typed.gather(b.sample.node["paper"], node_type="paper")))
            emb.zero_grad()
            b.x["author"].pow(2).sum().backward()
            emb.step()
        assert emb.steps == len(loader) == 4
    finally:
        emb.close()
