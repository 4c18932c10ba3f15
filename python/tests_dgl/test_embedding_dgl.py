"""tierfs.dgl.Feature over a tierfs.Embedding (issue 45, item 4): GraphBolt's Feature.update writes
a featureless type's rows through the table and read / read_async / the FeatureStore give them,
against a plain in-memory reference of the same updates (random rows and ids, printed seed); a
dataset feature's update raises ReadOnlyError (GraphBolt's base Feature.update raises
NotImplementedError, which it is)."""

from __future__ import annotations

import random
import time

import pytest
import torch

import tierfs
import tierfs.dgl as tdgl

import hetero_data

SEED = random.randrange(1 << 31)
DIM = 6


@pytest.fixture(scope="module")
def hstore(tmp_path_factory):
    het = hetero_data.ingest(hetero_data.synthetic(), tmp_path_factory.mktemp("tierfs-dgl-emb"))
    s = tierfs.open(het.dir, host_cache="1MB")
    yield s
    s.close()


@pytest.fixture
def emb(hstore, tmp_path):
    assert hstore.types["node_types"]["field"]["features"] == {}
    e = tierfs.Embedding(hstore, "field", DIM, tmp_path / "field.emb", optimizer="adagrad", lr=0.1, host_cache=8192)
    yield e
    e.close()


def test_update_writes_through_table(hstore, emb):
    print(f"seed {SEED}")
    g = torch.Generator().manual_seed(SEED)
    n = hstore.num_nodes("field")
    fs = tdgl.FeatureStore(hstore, embeddings={"field": emb})
    f = fs[("node", "field", "feat")]
    assert f.embedding is emb and f.count() == n and f.size() == torch.Size([DIM])
    ref = emb.read(torch.arange(n)).clone()
    assert torch.equal(f.read(), ref)
    whole = torch.randn(n, DIM, generator=g)
    f.update(whole)
    ref.copy_(whole)
    for i in range(15):
        ids = torch.randint(0, n, (int(torch.randint(1, 10, (1,), generator=g)),), generator=g).unique()
        rows = torch.randn(len(ids), DIM, generator=g)
        if i % 2:
            fs.update("node", "field", "feat", rows, ids)
        else:
            f.update(rows, ids)
        ref[ids] = rows
        probe = torch.randint(0, n, (20,), generator=g)
        assert torch.equal(f.read(probe), ref[probe])
        assert torch.equal(fs.read("node", "field", "feat", probe), ref[probe])
        stages = f.read_async(probe)
        for _ in range(f.read_async_num_stages(probe.device)):
            fut = next(stages)
        assert torch.equal(fut.wait(), ref[probe])
    assert torch.equal(emb.read(torch.arange(n)), ref)  # what the module trains from
    with pytest.raises(tierfs.InvalidArgumentError, match=r"shape \(2, 5\), want \(2, 6\)"):
        f.update(torch.zeros(2, 5), torch.tensor([0, 1]))
    with pytest.raises(tierfs.InvalidArgumentError, match=r"want \(%d, 6\) \(every row\)" % n):
        f.update(torch.zeros(3, DIM))


def test_dataset_features_read_only(hstore, emb):
    fs = tdgl.FeatureStore(hstore, embeddings={"field": emb})
    paper = fs[("node", "paper", "feat")]
    with pytest.raises(tdgl.ReadOnlyError, match=r"node_type='paper', name='feat'.* is the dataset's and read-only") as e:
        paper.update(torch.zeros(1, paper.size()[0]), torch.tensor([0]))
    assert isinstance(e.value, NotImplementedError)  # as GraphBolt's base Feature.update
    with pytest.raises(tdgl.ReadOnlyError):
        fs.update("node", "paper", "label", torch.zeros(1, dtype=torch.int64), torch.tensor([0]))
    with pytest.raises(tierfs.InvalidArgumentError, match=r"embeddings\['paper'\]: the dataset has a feature keyed \('node', 'paper', 'feat'\)"):
        tdgl.FeatureStore(hstore, embeddings={"paper": emb})
    with pytest.raises(tierfs.InvalidArgumentError, match=r"is a table of node type 'field', not 'author'"):
        tdgl.Feature(hstore, node_type="author", embedding=emb)
    with pytest.raises(TypeError, match="want a tierfs.Embedding"):
        tdgl.Feature(hstore, node_type="field", embedding=torch.nn.Embedding(3, DIM))


@pytest.mark.parametrize("prefetch", [False, 3])
def test_dataloader_embeddings_train_as_nn_embedding(hstore, tmp_path, prefetch):
    """tierfs.dgl.DataLoader(embeddings=) puts the table's rows of each batch's field nodes in
    blocks[0].srcnodes["field"].data["feat"], gathered as the batch is handed over: training
    through it (batches sharing rows, 3 in flight, a cache of two pages) equals the same steps
    with nn.Embedding(sparse=True) and torch's Adagrad, bit for bit."""
    print(f"seed {SEED}")
    g = torch.Generator().manual_seed(SEED)
    n = hstore.num_nodes("field")
    emb = tierfs.Embedding(hstore, "field", DIM, tmp_path / "t.emb", optimizer="adagrad", lr=0.3, seed=SEED, host_cache=8192)
    ref = torch.nn.Embedding(n, DIM, sparse=True)
    with torch.no_grad():
        ref.weight.copy_(emb.read(torch.arange(n)))
    opt = torch.optim.Adagrad(ref.parameters(), lr=0.3)
    sampler = tdgl.NeighborSampler(hstore, [3, 3], seed=SEED % 1000)
    loader = tdgl.DataLoader(hstore, {"paper": torch.arange(200)}, sampler, batch_size=32, shuffle=True, seed=1, prefetch=prefetch, embeddings={"field": emb})
    batches = 0
    for input_nodes, _, blocks in loader:
        time.sleep(0.05)  # the pipeline makes the next batches meanwhile: they must still see this step
        ids = input_nodes["field"]
        x = blocks[0].srcnodes["field"].data["feat"]
        assert x.requires_grad and torch.equal(x.detach(), ref.weight[ids].detach())  # every earlier step seen
        w = torch.randn(len(ids), DIM, generator=g)
        emb.zero_grad()
        opt.zero_grad()
        (torch.tanh(x) * w).sum().backward()
        (torch.tanh(ref(ids)) * w).sum().backward()
        emb.step()
        opt.step()
        batches += 1
    assert batches == len(loader) == 7
    assert torch.equal(emb.read(torch.arange(n)), ref.weight.detach())
    emb.close()
