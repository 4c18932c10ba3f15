"""tierfs.pyg.FeatureStore over a tierfs.Embedding (issue 45, item 4): put_tensor / update_tensor
write a featureless type's rows through the table, get_tensor and PyG's NodeLoader read them,
against a plain in-memory reference of the same writes (random rows and ids, printed seed); the
dataset's features refuse writes, naming the attribute."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import tierfs  # noqa: E402
import tierfs.pyg  # noqa: E402
from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402

from conftest import SEED, rng  # noqa: E402

P, A, DIM = 40, 300, 8  # papers (features, labels) and authors (featureless)


@pytest.fixture(scope="module")
def hetero(tmp_path_factory):
    r = rng(4501)
    data = HeteroData()
    data["paper"].x = torch.from_numpy(r.standard_normal((P, 4)).astype(np.float32))
    data["paper"].y = torch.from_numpy(r.integers(0, 3, P))
    data["author"].num_nodes = A
    data["author", "writes", "paper"].edge_index = torch.from_numpy(np.stack([r.integers(0, A, 600), r.integers(0, P, 600)]))
    data["paper", "rev", "author"].edge_index = torch.from_numpy(np.stack([r.integers(0, P, 600), r.integers(0, A, 600)]))
    path = tierfs.from_pyg(data, tmp_path_factory.mktemp("emb") / "g")
    s = tierfs.open(path)
    yield s
    s.close()


@pytest.fixture
def emb(hetero, tmp_path):
    # a page cache of two 4 KiB pages: the table's 300 rows of 32 B span three, so rows are evicted
    e = tierfs.Embedding(hetero, "author", DIM, tmp_path / "author.emb", optimizer="sgd", lr=0.1, seed=SEED % 1000, host_cache=8192)
    yield e
    e.close()


def test_put_update_get_equal_reference(hetero, emb):
    seed = SEED + 4502
    print(f"seed {seed}")
    g = torch.Generator().manual_seed(seed)
    fs, _ = tierfs.pyg.stores(hetero, embeddings={"author": emb})
    ref = emb.read(torch.arange(A)).clone()
    assert torch.equal(fs.get_tensor("author", "x"), ref)  # every row, as initialized
    whole = torch.randn(A, DIM, generator=g)
    assert fs.put_tensor(whole, group_name="author", attr_name="x", index=None)
    ref.copy_(whole)
    for i in range(20):
        ids = torch.randint(0, A, (int(torch.randint(1, 50, (1,), generator=g)),), generator=g).unique()  # no repeats: the last wins either way
        rows = torch.randn(len(ids), DIM, generator=g)
        if i % 2:
            assert fs.update_tensor(rows, group_name="author", attr_name="x", index=ids)
        else:
            fs["author", "x", ids] = rows
        ref[ids] = rows
        probe = torch.randint(0, A, (64,), generator=g)
        assert torch.equal(fs.get_tensor(group_name="author", attr_name="x", index=probe), ref[probe])
    fs.put_tensor(torch.full((DIM,), 7.0), group_name="author", attr_name="x", index=5)  # one row
    ref[5] = 7.0
    mask = torch.rand(A, generator=g) < 0.3
    assert torch.equal(fs["author", "x", mask], ref[mask])
    assert torch.equal(fs["author", "x", 10:20], ref[10:20])
    assert torch.equal(emb.read(torch.arange(A)), ref)  # what the module trains from
    assert fs.get_tensor_size("author", "x") == (A, DIM)
    assert ("author", "x") in [(a.group_name, a.attr_name) for a in fs.get_all_tensor_attrs()]


def test_nodeloader_reads_table_rows(hetero, emb):
    seed = SEED + 4503
    print(f"seed {seed}")
    g = torch.Generator().manual_seed(seed)
    rows = torch.randn(A, DIM, generator=g)
    fs, gs = tierfs.pyg.stores(hetero, embeddings={"author": emb})
    fs.put_tensor(rows, group_name="author", attr_name="x")
    nn = {et: [4, 4] for et in hetero.edge_types}
    loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(hetero, nn, seed=3), input_nodes=("paper", torch.arange(P)), batch_size=16)
    n = 0
    for b in loader:
        assert b["author"].n_id.numel() > 0
        assert torch.equal(b["author"].x, rows[b["author"].n_id])
        assert torch.equal(b["paper"].x, torch.as_tensor(hetero.gather(b["paper"].n_id, node_type="paper")))
        n += 1
    assert n == 3


def test_dataset_features_refuse_writes(hetero, emb):
    fs, _ = tierfs.pyg.stores(hetero, embeddings={"author": emb})
    with pytest.raises(tierfs.NotSupportedError, match=r"attribute 'x' of 'paper' is the dataset's and immutable"):
        fs.put_tensor(torch.zeros(P, 4), group_name="paper", attr_name="x")
    with pytest.raises(tierfs.NotSupportedError, match=r"attribute 'y' of 'paper'"):
        fs.update_tensor(torch.zeros(2, dtype=torch.long), group_name="paper", attr_name="y", index=torch.tensor([0, 1]))
    with pytest.raises(tierfs.NotSupportedError, match=r"cannot put attribute 'h' of 'author'"):
        fs.put_tensor(torch.zeros(A, 2), group_name="author", attr_name="h")
    plain, _ = tierfs.pyg.stores(hetero)  # no table: author has no x to write
    with pytest.raises(tierfs.NotSupportedError, match=r"cannot put attribute 'x' of 'author'"):
        plain.put_tensor(torch.zeros(A, DIM), group_name="author", attr_name="x")
    with pytest.raises(tierfs.InvalidArgumentError, match=r"shape \(3, 5\), want \(3, 8\)"):
        fs.put_tensor(torch.zeros(3, 5), group_name="author", attr_name="x", index=torch.tensor([0, 1, 2]))
    with pytest.raises(tierfs.NotSupportedError, match="does not pickle"):
        pickle.dumps(fs)


def test_attach_refusals(hetero, emb, tmp_path):
    with pytest.raises(tierfs.InvalidArgumentError, match=r"node type 'paper': it has the dataset's feature 'x'"):
        tierfs.pyg.FeatureStore(hetero, embeddings={"paper": emb})
    with pytest.raises(KeyError, match="no such type"):
        tierfs.pyg.FeatureStore(hetero, embeddings={"venue": emb})
    papers = tierfs.Embedding(hetero, "paper", DIM, tmp_path / "paper.emb", optimizer="sgd")
    try:  # a table of another node type
        with pytest.raises(tierfs.InvalidArgumentError, match=r"embeddings\['author'\] is a table of node type 'paper'"):
            tierfs.pyg.FeatureStore(hetero, embeddings={"author": papers})
    finally:
        papers.close()
    other = tierfs.Embedding(None, None, DIM, tmp_path / "other.emb", optimizer="sgd", num_embeddings=A + 1)
    try:
        with pytest.raises(tierfs.InvalidArgumentError, match=r"has 301 rows, node type 'author' has 300 nodes"):
            tierfs.pyg.FeatureStore(hetero, embeddings={"author": other})
    finally:
        other.close()
    with pytest.raises(TypeError, match="want a tierfs.Embedding"):
        tierfs.pyg.FeatureStore(hetero, embeddings={"author": torch.nn.Embedding(A, DIM)})


def test_one_type_featureless_store(tmp_path):
    """A one-type store without features: the table is its x (group_name None), in get_tensor and
    in PyG's NodeLoader's Data batches."""
    seed = SEED + 4504
    print(f"seed {seed}")
    g = torch.Generator().manual_seed(seed)
    n = 50
    data = Data(edge_index=torch.randint(0, n, (2, 200), generator=g), num_nodes=n)
    with tierfs.open(tierfs.from_pyg(data, tmp_path / "g")) as s:
        emb = tierfs.Embedding(s, None, 4, tmp_path / "e.emb", optimizer="sgd", lr=0.1)
        try:
            fs, gs = tierfs.pyg.stores(s, embeddings={None: emb})
            ref = torch.randn(n, 4, generator=g)
            fs.put_tensor(ref, attr_name="x")
            ids = torch.randint(0, n, (7,), generator=g).unique()
            rows = torch.randn(len(ids), 4, generator=g)
            fs.update_tensor(rows, attr_name="x", index=ids)
            ref[ids] = rows
            assert torch.equal(fs.get_tensor(attr_name="x"), ref)
            assert [a.attr_name for a in fs.get_all_tensor_attrs()] == ["x"]
            loader = NodeLoader((fs, gs), node_sampler=tierfs.pyg.NeighborSampler(s, [3], seed=1), input_nodes=torch.arange(n), batch_size=16)
            for b in loader:
                assert torch.equal(b.x, ref[b.n_id])
            with pytest.raises(KeyError, match="one-type store's group_name is None"):
                tierfs.pyg.FeatureStore(s, embeddings={"node": emb})
        finally:
            emb.close()
