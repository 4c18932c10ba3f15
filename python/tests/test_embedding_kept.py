"""tierfs.Embedding's forward keeps the batch's whole slots (row and optimizer state) for the step:
over a batch whose distinct pages exceed the table's page cache, the step reads each page once
(to write it back) instead of twice, and still equals torch.nn.Embedding(sparse=True) with the
same torch optimizer bit for bit; a call that may change a row between forward and step (a
write, another step, a checkpoint, a place) drops the kept slots, and the step sees the change
(random ids and gradients, printed seed)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tierfs  # noqa: E402

from conftest import SEED, needs_cuda  # noqa: E402

OPTIMIZERS = {
    "sgd": dict(lr=0.37),
    "adagrad": dict(lr=0.37, lr_decay=0.01, eps=1e-10),
    "adam": dict(lr=0.037, betas=(0.8, 0.99), eps=1e-7),
}
STATE = {"sgd": [], "adagrad": ["sum"], "adam": ["exp_avg", "exp_avg_sq"]}
ROWS, DIM, CACHE = 3000, 16, 8192  # a cache of 2 pages of 4 KiB; a batch touches tens of pages
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]  # the ids' and the gradient's device


@pytest.fixture
def deterministic():
    """torch's deterministic kernels on CUDA (its SGD sums repeated ids by atomics otherwise)."""
    was, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was, warn_only=warn)


def _reference(name, emb, device="cpu"):
    ref = torch.nn.Embedding(ROWS, DIM, sparse=True).to(device)
    with torch.no_grad():
        ref.weight.copy_(emb.read(torch.arange(ROWS)).to(device))
    opt = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad, "adam": torch.optim.SparseAdam}[name]
    return ref, opt(ref.parameters(), **OPTIMIZERS[name])


def _assert_equal(emb, ref, opt, name, seed):
    ids = torch.arange(ROWS)
    got, want = emb.read(ids), ref.weight.detach().cpu()
    diff = (got.view(torch.int32) != want.view(torch.int32)).sum().item()
    assert diff == 0, f"{diff} of {got.numel()} floats differ from torch (seed {seed})"
    emb._flush()  # the device tier's slots to the table, for read_slots below
    slots = emb._rows(tierfs._native.lib.tfs_table_read_slots, ids, emb._slot_floats, None)
    for k, key in enumerate(STATE[name]):
        s = slots[:, DIM * (k + 1) : DIM * (k + 2)]
        assert torch.equal(s.view(torch.int32), opt.state[ref.weight][key].cpu().view(torch.int32)), f"{key} differs (seed {seed})"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_step_reads_each_page_once_and_equals_torch(tmp_path, name, device, deterministic):
    seed = SEED * 11 + list(OPTIMIZERS).index(name)
    print(f"seed {seed}")
    reads = {}
    for keep in (False, True):  # False: the step reads the slots again (as before)
        gen = torch.Generator().manual_seed(seed)
        emb = tierfs.Embedding(None, None, DIM, tmp_path / f"t{keep}", optimizer=name, num_embeddings=ROWS,
                               host_cache=CACHE, seed=seed, **OPTIMIZERS[name])
        emb._keep_slots = keep
        ref, opt = _reference(name, emb, device)
        per_page = emb.info["rows_per_page"]
        reads[keep] = []
        for _ in range(3):
            ids = torch.randint(0, ROWS, (300,), generator=gen)  # repeats; tens of pages, the cache 2
            g = torch.randn(300, DIM, generator=gen)
            pages = torch.unique(ids // per_page).numel()
            assert pages > 2 * emb.stats()["cache_pages"]
            ids, g = ids.to(device), g.to(device)
            (emb(ids) * g).sum().backward()
            before = emb.stats()["pages_read"]
            emb.step()
            reads[keep].append((emb.stats()["pages_read"] - before, pages))
            opt.zero_grad()
            (ref(ids) * g).sum().backward()
            opt.step()
        _assert_equal(emb, ref, opt, name, seed)
        emb.close()
    # Pages visited in page order through a cache of 2 pages: every visit misses.
    assert all(r == 2 * p for r, p in reads[False]), (reads, seed)
    assert all(r == p for r, p in reads[True]), (reads, seed)


@pytest.mark.parametrize("tier", [False, True])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_change_between_forward_and_step_is_honoured(tmp_path, store, name, tier):
    """Each of write, step, checkpoint and place between a forward and its step, against torch
    doing the same to its weight; with a device tier (half the rows), the kept slots of its rows
    and of the page cache's."""
    seed = SEED * 13 + list(OPTIMIZERS).index(name) + 3 * tier
    print(f"seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    width = DIM * (1 + len(STATE[name]))
    gpu = ROWS // 2 * (4 * width + 8) if tier else None
    emb = tierfs.Embedding(store, None, DIM, tmp_path / "t", optimizer=name, host_cache=CACHE, seed=seed,
                           gpu_cache=gpu, **OPTIMIZERS[name])
    ref, opt = _reference(name, emb)

    def batch():
        return torch.randint(0, ROWS // 4, (200,), generator=gen), torch.randn(200, DIM, generator=gen)

    for between in ("write", "step", "checkpoint", "place", "read"):
        (ids, g), (ids2, g2) = batch(), batch()
        out, ref_out = emb(ids), ref(ids)
        if between == "write":  # rows of the batch set to new values: the step applies to those
            w = torch.unique(ids[:50])
            rows = torch.randn(len(w), DIM, generator=gen)
            emb.write(w, rows)
            with torch.no_grad():
                ref.weight[w] = rows
        elif between == "step":  # another batch sharing rows stepped first
            (emb(ids2) * g2).sum().backward()
            emb.step()
            opt.zero_grad()
            (ref(ids2) * g2).sum().backward()
            opt.step()
        elif between == "checkpoint":
            emb.checkpoint()
        elif between == "place":
            emb.place(torch.randperm(ROWS, generator=gen) if tier else None)
        else:
            assert torch.equal(emb.read(ids), ref.weight[ids].detach()), f"seed {seed}"
        emb.zero_grad()
        (out * g).sum().backward()
        emb.step()
        opt.zero_grad()
        (ref_out * g).sum().backward()
        opt.step()
        _assert_equal(emb, ref, opt, name, f"{seed}, {between} between forward and step")
    emb.close()


def test_eval_mode_keeps_nothing_and_steps_the_same(tmp_path):
    """In eval mode a forward under autograd keeps no slots; its step reads them (same rows)."""
    seed = SEED * 17
    print(f"seed {seed}")
    gen = torch.Generator().manual_seed(seed)
    emb = tierfs.Embedding(None, None, DIM, tmp_path / "t", optimizer="adam", num_embeddings=ROWS, host_cache=CACHE,
                           seed=seed, **OPTIMIZERS["adam"])
    ref, opt = _reference("adam", emb)
    emb.eval()
    ids, g = torch.randint(0, ROWS, (300,), generator=gen), torch.randn(300, DIM, generator=gen)
    (emb(ids) * g).sum().backward()
    assert emb._pending[0][2] is None
    emb.step()
    (ref(ids) * g).sum().backward()
    opt.step()
    _assert_equal(emb, ref, opt, "adam", seed)
    emb.close()


@pytest.mark.parametrize("tier", [False, True])
def test_two_forwards_a_step_equal_reading_again(tmp_path, store, tier):
    """Two forwards sharing rows before one step (one of them older than a write): the step
    takes each row's slot from a forward that kept it valid and reads the rest; the rows and
    state equal those of the module reading every slot again (the gradients concatenated the
    same way), bit for bit."""
    seed = SEED * 19 + tier
    print(f"seed {seed}")
    got = []
    for keep in (False, True):
        gen = torch.Generator().manual_seed(seed)
        gpu = ROWS // 2 * (4 * 3 * DIM + 8) if tier else None
        emb = tierfs.Embedding(store, None, DIM, tmp_path / f"t{keep}", optimizer="adam", host_cache=CACHE, seed=seed,
                               gpu_cache=gpu, **OPTIMIZERS["adam"])
        emb._keep_slots = keep
        for _ in range(3):
            ids = [torch.randint(0, ROWS // 4, (150,), generator=gen) for _ in range(3)]
            g = [torch.randn(150, DIM, generator=gen) for _ in range(3)]
            stale = emb(ids[0])
            emb.write(ids[0][:20], torch.randn(20, DIM, generator=gen))
            outs = [stale, emb(ids[1]), emb(ids[2])]
            sum((o * gi).sum() for o, gi in zip(outs, g)).backward()
            emb.step()
        emb._flush()
        all_ids = torch.arange(ROWS)
        got.append(emb._rows(tierfs._native.lib.tfs_table_read_slots, all_ids, emb._slot_floats, None))
        emb.close()
    diff = (got[0].view(torch.int32) != got[1].view(torch.int32)).sum().item()
    assert diff == 0, f"{diff} floats differ from reading every slot again (seed {seed})"
