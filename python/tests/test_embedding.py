"""tierfs.Embedding against torch.nn.Embedding(sparse=True) with the same torch optimizer: every row
and every optimizer state bit for bit after steps of random batches with repeated ids, with the
table's page cache far smaller than the table (rows evicted between steps), a checkpoint and a
reopen half way; on the host, and on the GPU when there is one. The core's own step
(tfs_table_apply, the C ABI's) against torch's SGD, and the errors."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tierfs  # noqa: E402
from tierfs._native import lib  # noqa: E402

from conftest import HAS_CUDA, SEED  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])
OPTIMIZERS = {
    "sgd": dict(lr=0.37),
    "adagrad": dict(lr=0.37, lr_decay=0.01, eps=1e-10),
    "adam": dict(lr=0.037, betas=(0.8, 0.99), eps=1e-7),
}
ROWS, DIM, CACHE = 3000, 16, 8192  # a cache of 2 pages of 4 KiB; the table is 50 to 150 pages


def _reference(name, weight, device, hyper):
    ref = torch.nn.Embedding(ROWS, DIM, sparse=True).to(device)
    with torch.no_grad():
        ref.weight.copy_(weight)
    opt = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad, "adam": torch.optim.SparseAdam}[name]
    return ref, opt(ref.parameters(), **hyper)


def _slots(emb, ids):
    out = torch.empty((len(ids), emb.info["slot_floats"]), dtype=torch.float32)
    ids = torch.as_tensor(ids, dtype=torch.int64)
    tierfs._native.check(lib.tfs_table_read_slots(emb._h(), ids.data_ptr(), len(ids), out.data_ptr(), out.numel()))
    return out


@pytest.fixture
def deterministic(request):
    """torch's deterministic kernels on CUDA: torch's own SGD adds an uncoalesced gradient there by
    index_add_, whose atomics sum repeated ids in no fixed order (so two torch runs differ)."""
    was, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was, warn_only=warn)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_equals_torch_bit_for_bit(tmp_path, name, device, deterministic):
    seed = SEED * 7 + list(OPTIMIZERS).index(name)
    print(f"seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    hyper = OPTIMIZERS[name]
    path = tmp_path / "t"
    emb = tierfs.Embedding(None, "user", DIM, path, optimizer=name, num_embeddings=ROWS, host_cache=CACHE, seed=seed, **hyper)
    all_ids = torch.arange(ROWS)
    ref, opt = _reference(name, emb.read(all_ids).to(device), device, hyper)
    for step in range(1, 41):
        ids = torch.randint(0, ROWS // 3, (200,), generator=gen).to(device)  # repeats
        g = torch.randn(200, DIM, generator=gen).to(device)
        (emb(ids) * g).sum().backward()
        emb.step()
        opt.zero_grad()
        (ref(ids) * g).sum().backward()
        opt.step()
        if step == 20:
            emb.checkpoint()
            emb.close()
            emb = tierfs.Embedding(None, "user", DIM, path, optimizer=name, host_cache=CACHE)
            assert emb.steps == 20
    got = emb.read(all_ids)
    want = ref.weight.detach().cpu()
    diff = (got.view(torch.int32) != want.view(torch.int32)).sum().item()
    assert diff == 0, f"{diff} of {got.numel()} floats differ from torch (seed {seed})"
    state = opt.state[ref.weight]
    slots = _slots(emb, all_ids)
    for k, key in enumerate({"sgd": [], "adagrad": ["sum"], "adam": ["exp_avg", "exp_avg_sq"]}[name]):
        s = slots[:, DIM * (k + 1) : DIM * (k + 2)]
        assert torch.equal(s.view(torch.int32), state[key].cpu().view(torch.int32)), f"{key} differs (seed {seed})"
    st = emb.stats()
    assert st["cache_pages"] == 2 and st["evictions"] > 0 and st["pages_written"] > 0, st
    emb.close()


def test_core_apply_equals_torch_sgd(tmp_path):
    """tfs_table_apply (the core's step, for C callers) applies torch's SGD bit for bit: the
    uncoalesced gradient row by row, one fused multiply-add per element."""
    gen = torch.Generator().manual_seed(SEED)
    emb = tierfs.Embedding(None, None, DIM, tmp_path / "t", optimizer="sgd", lr=0.37, num_embeddings=ROWS, host_cache=CACHE)
    ref, opt = _reference("sgd", emb.read(torch.arange(ROWS)), "cpu", dict(lr=0.37))
    for _ in range(30):
        ids = torch.randint(0, ROWS // 3, (200,), generator=gen)
        g = torch.randn(200, DIM, generator=gen)
        tierfs._native.check(lib.tfs_table_apply(emb._h(), ids.data_ptr(), 200, g.data_ptr(), g.numel()))
        opt.zero_grad()
        (ref(ids) * g).sum().backward()
        opt.step()
    assert torch.equal(emb.read(torch.arange(ROWS)).view(torch.int32), ref.weight.detach().view(torch.int32)), f"seed {SEED}"
    emb.close()


def test_table_of_a_store_node_type(tmp_path, store, graph):
    emb = tierfs.Embedding(store, None, 8, tmp_path / "t", optimizer="adagrad", init="zeros")
    assert emb.num_embeddings == graph["n"] and emb.info["node_type"] == store.node_type
    assert emb.info["dataset_id"] != ""
    x = emb(torch.tensor([0, graph["n"] - 1]))
    assert x.shape == (2, 8) and not x.any()
    emb.close()
    emb = tierfs.Embedding(store, store.node_type, 8, tmp_path / "t", optimizer="adagrad")  # reopened
    emb.close()
    tierfs.Embedding(None, "item", 8, tmp_path / "u", optimizer="sgd", num_embeddings=5).close()
    with pytest.raises(tierfs.InvalidArgumentError, match="a table of 5 rows of node type 'item', not of the store's"):
        tierfs.Embedding(store, None, 8, tmp_path / "u", optimizer="sgd")


def test_init_rows_given_and_errors(tmp_path):
    rows = torch.randn(100, 4)
    emb = tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd", init=rows, num_embeddings=100)
    assert torch.equal(emb.read(torch.arange(100)), rows)
    assert emb.info["generation"] == 2  # the rows written were checkpointed
    with pytest.raises(tierfs.OutOfRangeError, match="ids\\[1\\] = 100 is out of range"):
        emb.read([3, 100])
    with pytest.raises(tierfs.InvalidArgumentError, match="width 3, want dim 4"):
        emb.write([1], torch.zeros(1, 3))
    with pytest.raises(tierfs.InvalidArgumentError, match="open elsewhere"):
        tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd")
    emb.close()
    with pytest.raises(tierfs.InvalidArgumentError, match="dim 4 trained by sgd, not dim 5 by sgd"):
        tierfs.Embedding(None, None, 5, tmp_path / "t", optimizer="sgd")
    with pytest.raises(tierfs.InvalidArgumentError, match="a table keeps its hyper-parameters"):
        tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd", lr=0.5)
    with pytest.raises(tierfs.InvalidArgumentError, match="betas is not a hyper-parameter of sgd"):
        tierfs.Embedding(None, None, 4, tmp_path / "u", optimizer="sgd", betas=(0.9, 0.9), num_embeddings=5)
    with pytest.raises(tierfs.InvalidArgumentError, match="init \\('normal', 0.1\\)"):
        tierfs.Embedding(None, None, 4, tmp_path / "u", optimizer="sgd", init=("normal", 0.1), num_embeddings=5)
    with pytest.raises(tierfs.InvalidArgumentError, match='init "xavier"'):
        tierfs.Embedding(None, None, 4, tmp_path / "u", optimizer="sgd", init="xavier", num_embeddings=5)
    with pytest.raises(tierfs.InvalidArgumentError, match="optimizer 'rmsprop'"):
        tierfs.Embedding(None, None, 4, tmp_path / "u", optimizer="rmsprop", num_embeddings=5)
    with pytest.raises(tierfs.InvalidArgumentError, match="fewer than 2 pages"):
        tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd", host_cache=4096)
    e = tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd")
    e.close()
    with pytest.raises(tierfs.ClosedError):
        e.read([0])
    e.close()  # a second close does nothing


def test_adam_refuses_repeated_ids_in_the_core(tmp_path):
    emb = tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="adam", num_embeddings=10)
    ids = torch.tensor([2, 0, 2])
    g = torch.zeros(3, 4)
    with pytest.raises(tierfs.InvalidArgumentError, match="ids\\[0\\] and ids\\[2\\] are both 2"):
        tierfs._native.check(lib.tfs_table_apply(emb._h(), ids.data_ptr(), 3, g.data_ptr(), g.numel()))
    emb.close()


def test_readme_block_runs(tmp_path):
    """README.md's trainable-embeddings block, as it stands, on paths under tmp_path."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("<!-- embedding-quickstart")[1].split("```python\n")[1].split("```")[0]
    code = block.replace("/tmp/demo-graph", str(tmp_path / "demo-graph"))
    scope: dict = {}
    exec(compile(code, "README.md (trainable embeddings)", "exec"), scope)
    emb = tierfs.Embedding(scope["store"], None, 32, tmp_path / "demo-graph.emb", optimizer="adam")
    assert emb.steps == 10 and emb.info["generation"] == 2
    emb.close()
    scope["store"].close()


def test_damaged_table_is_corrupt_error(tmp_path):
    emb = tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd", num_embeddings=2000)
    emb.close()
    page = tmp_path / "t" / "pages.rows"
    data = bytearray(page.read_bytes())
    data[4096 * 2 + 5] ^= 1
    page.write_bytes(bytes(data))
    emb = tierfs.Embedding(None, None, 4, tmp_path / "t", optimizer="sgd")  # pages are checked as they are read
    with pytest.raises(tierfs.CorruptError, match="page 2 \\(generation 1\\): checksum"):
        emb.read(torch.arange(2000))
    emb.close()
