"""Training on real data with learned features: full-batch to_hetero(GraphSAGE) on ACM's papers
with the author and subject features learned as embeddings (the papers' kept), their tables in
tierfs.Embedding (a host cache of a few pages, so every step evicts) against
torch.nn.Embedding(sparse=True) + torch.optim.SparseAdam in memory, from the same model and the
same initial rows, 8 epochs. The bar of issue 45 is test accuracy within a point over 5 seeds
(benchmarks/devvm-2026-12-02-embedding/acm_parity.py, mini-batch); here, a few seconds, the two
must train identically: every learned row bit for bit and the same test accuracy."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import torch.nn.functional as F  # noqa: E402
from torch_geometric.nn import GraphSAGE, to_hetero  # noqa: E402

import tierfs  # noqa: E402
import tierfs.datasets  # noqa: E402
from conftest import SEED  # noqa: E402

LEARNED = {"author": 16 << 10, "subject": 8 << 10}  # host cache bytes: 4 and 2 pages of 4 KiB
DIM, EPOCHS = 16, 8


@pytest.fixture(scope="module")
def acm():
    return tierfs.datasets.acm(as_pyg=True, split=20, derived_x=False)


def train(data, arm, seed, tmp_path):
    """Full-batch training of one arm; returns (test accuracy, the final learned rows)."""
    emb = {}
    for k, t in enumerate(LEARNED):
        n = data[t].num_nodes
        rows = torch.randn(n, DIM, generator=torch.Generator().manual_seed(seed + k)) * 0.1
        if arm == "tierfs":
            emb[t] = tierfs.Embedding(None, t, DIM, tmp_path / f"{t}-{seed}", optimizer="adam", lr=0.01, num_embeddings=n,
                                      init=rows, host_cache=LEARNED[t])
        else:
            emb[t] = torch.nn.Embedding(n, DIM, sparse=True, _weight=rows)
    ids = {t: torch.arange(data[t].num_nodes) for t in LEARNED}

    def x():
        return {"paper": data["paper"].x, **{t: emb[t](ids[t]) for t in LEARNED}}

    torch.manual_seed(seed)
    model = to_hetero(GraphSAGE(-1, 32, num_layers=2, out_channels=3), data.metadata(), aggr="sum")
    with torch.no_grad():
        model(x(), data.edge_index_dict)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    sparse = torch.optim.SparseAdam([e.weight for e in emb.values()], lr=0.01) if arm == "torch" else None
    p = data["paper"]
    for _ in range(EPOCHS):
        opt.zero_grad()
        for e in [sparse] if sparse else emb.values():
            e.zero_grad()
        F.cross_entropy(model(x(), data.edge_index_dict)["paper"][p.train_mask], p.y[p.train_mask]).backward()
        opt.step()
        for e in [sparse] if sparse else emb.values():
            e.step()
    with torch.no_grad():
        pred = model(x(), data.edge_index_dict)["paper"].argmax(-1)
        learned = {t: emb[t](ids[t]).detach().clone() for t in LEARNED}
    if arm == "tierfs":
        st = emb["author"].stats()  # 342 pages, each read twice a step
        assert st["cache_pages"] == 4 and st["evictions"] > EPOCHS * 600, st
        for e in emb.values():
            e.close()
    return 100.0 * (pred[p.test_mask] == p.y[p.test_mask]).float().mean().item(), learned


def test_learned_features_train_as_nn_embedding(acm, tmp_path):
    seed = SEED % 10_000
    print(f"seed {seed}")
    acc, rows = train(acm, "tierfs", seed, tmp_path)
    ref_acc, ref_rows = train(acm, "torch", seed, tmp_path)
    print(f"test accuracy: tierfs.Embedding {acc:.1f}%  nn.Embedding {ref_acc:.1f}%")
    for t in LEARNED:
        diff = (rows[t].view(torch.int32) != ref_rows[t].view(torch.int32)).sum().item()
        assert diff == 0, f"{t}: {diff} of {rows[t].numel()} floats differ from nn.Embedding (seed {seed})"
    init = torch.randn(rows["author"].shape, generator=torch.Generator().manual_seed(seed)) * 0.1
    trained = int((rows["author"] != init).any(dim=1).sum())  # the authors within 2 hops of the 60 training papers
    assert trained > 50, f"{trained} author rows trained (seed {seed})"
    assert acc == ref_acc, (acc, ref_acc, seed)
    assert acc > 53.0, (acc, seed)  # it learned: the majority class is 51.2% of the test papers (seeds 1-5: 61-84%)


def test_embedding_bench_smoke(tmp_path):
    """python/bench/embedding_bench.py runs both arms and reports the cache's counters and the
    disk bound (a table of 3,000 rows behind a cache of a fifth of it, two timed steps)."""
    import embedding_bench

    res = embedding_bench.main(["--rows", "3000", "--dim", "8", "--batch", "16", "--steps", "2", "--warmup", "1",
                                "--device", "cpu", "--disk-iops", "1000", "--dir", str(tmp_path), "--out", str(tmp_path / "r.json")])
    t = res["tierfs"]
    assert t["table_bytes"] == embedding_bench.table_bytes(3000, 8) and t["host_cache_bytes"] == t["table_bytes"] // 5, t
    end = t["stats_at_end"]
    assert t["warmup_steps"] >= 1 and end["misses"] - end["evictions"] == end["cache_pages"] == 14, t  # warmed until full
    assert t["stats"]["evictions"] > 0 and t["pages_written_per_step"] > 0 and t["distinct_pages_per_step"] > 14, t
    assert res["memory"]["seeds_per_s"] > 0 and res["disk_bound_seeds_per_s"] > 0 and 0 < res["ratio"], res
    assert (tmp_path / "r.json").exists() and not list(tmp_path.glob("run-*/table-*"))
