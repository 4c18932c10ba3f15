"""Trainable node embeddings out of core: :class:`Embedding`, a ``torch.nn.Module`` over a table of
the core (``tfs_table_*``, docs/embedding.md) that keeps one float32 row per node of a node type,
with its optimizer state, on disk behind a bounded page cache in host memory.

    emb = tierfs.Embedding(store, "author", 64, "/data/author.emb", optimizer="adam", lr=0.01)
    x = emb(ids)              # (len(ids), 64), on ids' device; backward keeps the rows' gradient
    loss.backward()
    emb.step()                # one sparse optimizer step over the batch's rows, written back
    emb.checkpoint()          # crash-safe: a kill leaves this checkpoint or the one before

The step is torch's own optimizer (``torch.optim.SGD``, ``Adagrad``, ``SparseAdam``) run on the
batch's rows and their state — read whole by the forward and kept for the step (read again
where a write, step, checkpoint, place or close came in between) — with the gradient
``nn.Embedding(sparse=True)`` would give it (uncoalesced, in input order), so every row equals
``nn.Embedding(sparse=True)`` with the same optimizer bit for bit, on the host and on the GPU.
The rows and state go back to the table after the step. Memory: the table's page cache
(``host_cache``) plus one batch's rows and state, from its forward to its step.

With ``gpu_cache`` the table has a device tier in front of its page cache: the rows the store's
placement ranks hottest (:meth:`tierfs.Store.hottest` of the node type), with their optimizer
state, in a tensor on the store's device (a host tensor on a CPU store). Reads serve those rows
from it, and a step runs on the rows gathered from both tiers and puts the tier's back into it,
writing back only the others; a checkpoint writes the tier's rows to the table first.
"""

from __future__ import annotations

import json
import os
import threading
from ctypes import byref, c_char_p, c_void_p
from typing import Any, List, Optional, Tuple

import torch

from . import _native, _util, errors
from ._embtier import DeviceTier
from ._native import check, lib

__all__ = ["Embedding"]

_OPTIMIZERS = ("sgd", "adagrad", "adam")
# The table's hyper-parameters each optimizer takes, as torch names them.
_HYPER = {
    "sgd": ("lr",),
    "adagrad": ("lr", "lr_decay", "eps", "initial_accumulator_value"),
    "adam": ("lr", "betas", "eps"),
}


def _c(s: Optional[str], what: str) -> Optional[bytes]:
    if s is None:
        return None
    b = os.fspath(s).encode()
    _native.check_value(c_char_p, b, what)
    return b


def _spec(dim: int, optimizer: str, hyper: dict, init: Any, std: Optional[float], seed: int, rows: Optional[int]) -> dict:
    if optimizer not in _OPTIMIZERS:
        raise errors.InvalidArgumentError(f"tierfs.Embedding: optimizer {optimizer!r}: want one of {', '.join(_OPTIMIZERS)}")
    opt: dict = {"name": optimizer}
    for name, value in hyper.items():
        if value is None:
            continue
        if name not in _HYPER[optimizer]:
            raise errors.InvalidArgumentError(
                f"tierfs.Embedding: {name} is not a hyper-parameter of {optimizer} (it takes {', '.join(_HYPER[optimizer])})"
            )
        if name == "betas":
            opt["beta1"], opt["beta2"] = (float(b) for b in value)
        else:
            opt[name] = float(value)
    if isinstance(init, str):
        kind = {"kind": init, "seed": int(seed)}
        if std is not None:
            kind["std"] = float(std)
    elif isinstance(init, tuple):
        if len(init) != 3 or init[0] != "uniform":
            raise errors.InvalidArgumentError(f"tierfs.Embedding: init {init!r}: want \"normal\", \"zeros\", (\"uniform\", a, b) or rows")
        kind = {"kind": "uniform", "a": float(init[1]), "b": float(init[2]), "seed": int(seed)}
    else:  # rows given: written after create
        kind = {"kind": "zeros"}
    spec = {"dim": int(dim), "dtype": "float32", "optimizer": opt, "init": kind}
    if rows is not None:
        spec["rows"] = int(rows)
    return spec


class _Lookup(torch.autograd.Function):
    """Rows of ids gathered from the table; backward hands the rows' gradient to the module."""

    @staticmethod
    def forward(ctx, anchor, ids, module):  # type: ignore[override]
        ctx.module, ctx.ids = module, ids
        out, ctx.kept = module._gather_for_step(ids)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        ctx.module._pending.append((ctx.ids.reshape(-1), grad.reshape(-1, grad.shape[-1]), ctx.kept))
        ctx.kept = None  # the step's now: held until it runs or zero_grad drops it
        return None, None, None


class _KeptSlots:
    """The whole slots a forward read for the step: of ``ids`` (host, sorted, distinct), in
    ``slots`` on the output's device, valid while the module's ``version`` is ``version``."""

    __slots__ = ("ids", "slots", "version")

    def __init__(self, ids: torch.Tensor, slots: torch.Tensor, version: int) -> None:
        self.ids, self.slots, self.version = ids, slots, version


class Embedding(torch.nn.Module, _native.Finalized):
    """A trainable table of ``dim`` float32 rows per node of ``node_type`` (see the module doc).

    Args:
        store: the tierfs store whose node type the rows are of (its count is the table's rows);
            None with ``num_embeddings`` for a table of no store.
        node_type: the node type (None: the store's only one).
        dim: the row width.
        path: the table's directory: opened when it holds a table (its dim and optimizer must
            match), else created.
        optimizer: "sgd", "adagrad" or "adam" (torch.optim.SparseAdam).
        lr, betas, eps, lr_decay, initial_accumulator_value: the optimizer's hyper-parameters,
            torch's names and defaults (a table opened keeps those it was created with).
        init: "normal" (nn.Embedding's, std 1 or ``std``), "zeros", ("uniform", a, b), or a
            (rows, dim) tensor of the initial rows.
        seed: the initializer's seed.
        host_cache: the bound of the table's page cache in host memory (bytes or "256MiB").
        gpu_cache: the bound of the device tier (bytes or "1GiB"; 8 B of id and the slot of each
            row, its row and optimizer state): the rows the store's placement ranks hottest, kept
            on the store's device, a host tensor on a CPU store (None or 0: no device tier;
            needs a store). :meth:`place` places it again.
    """

    def __init__(
        self,
        store: Any,
        node_type: Optional[str],
        dim: int,
        path: Any,
        *,
        optimizer: str = "adam",
        lr: Optional[float] = None,
        betas: Optional[Tuple[float, float]] = None,
        eps: Optional[float] = None,
        lr_decay: Optional[float] = None,
        initial_accumulator_value: Optional[float] = None,
        init: Any = "normal",
        std: Optional[float] = None,
        seed: int = 0,
        host_cache: Any = "64MiB",
        gpu_cache: Any = None,
        num_embeddings: Optional[int] = None,
    ) -> None:
        torch.nn.Module.__init__(self)
        _native.check_process()
        self._handle: Optional[int] = None
        self._tier: Optional[DeviceTier] = None
        self._lock = threading.RLock()  # the device tier's: a loader reads ahead on its threads
        gpu_bytes = _util.parse_size(gpu_cache, "gpu_cache") if gpu_cache is not None else 0
        if gpu_bytes and store is None:
            raise errors.InvalidArgumentError(
                "tierfs.Embedding: gpu_cache needs a store: the device tier holds the rows the store's placement ranks hottest"
            )
        # (ids, gradient, the forward's kept slots or None) of each backward since the last step.
        self._pending: List[Tuple[torch.Tensor, torch.Tensor, Optional[_KeptSlots]]] = []
        # Goes up with every call that may change a row (write, step, place, checkpoint, close):
        # a forward's kept slots serve the step only at the version they were read at.
        self._version = 0
        # Whether a training forward under autograd reads whole slots and keeps them for the
        # step (False: the step reads them again; the benchmark's baseline).
        self._keep_slots = True
        self.path = os.fspath(path)
        hyper = {"lr": lr, "betas": betas, "eps": eps, "lr_decay": lr_decay, "initial_accumulator_value": initial_accumulator_value}
        created = not os.path.exists(os.path.join(self.path, "manifest.json"))
        if created:
            if store is None and num_embeddings is None:
                raise errors.InvalidArgumentError("tierfs.Embedding: without a store, give num_embeddings")
            spec = _spec(dim, optimizer, hyper, init, std, seed, num_embeddings)
            h = store._h() if store is not None else None
            check(lib.tfs_table_create(h, _c(node_type, "node_type"), _c(self.path, "path"), json.dumps(spec).encode()))
        handle = c_void_p()
        opts = json.dumps({"host_cache_bytes": _util.parse_size(host_cache, "host_cache")}).encode()
        check(lib.tfs_table_open(_c(self.path, "path"), opts, byref(handle)))
        self._handle = handle.value
        info = self.info
        self._check_opened(info, dim, optimizer, hyper, created)
        if store is not None and not created:
            self._check_store(info, store, node_type)
        self.num_embeddings: int = info["rows"]
        self.embedding_dim: int = info["dim"]
        self.optimizer: str = info["optimizer"]["name"]
        self._hyper = _native_hyper(info["optimizer"])
        self._slot_floats: int = info["slot_floats"]
        self._rows_per_page: int = info["rows_per_page"]
        self._cache_pages: int = min(info["host_cache_bytes"] // info["page_bytes"], info["pages"])
        self._step = int(info["step"])
        if created and not isinstance(init, (str, tuple)):
            self._write_initial(init)
        self._store = store
        if gpu_bytes:
            capacity = min(gpu_bytes // DeviceTier.row_bytes(self._slot_floats), self.num_embeddings)
            self._tier = DeviceTier(store.device, self._slot_floats, capacity)
            self.place()

    @property
    def info(self) -> dict:
        """The table: rows, dim, dtype, optimizer (its hyper-parameters), init, node_type,
        dataset_id, table_id, generation (of its last checkpoint), step, slot_floats,
        page_bytes, rows_per_page, pages, direct_io, host_cache_bytes."""
        return _native.read_json(lambda b, c, n: lib.tfs_table_info_json(self._h(), b, c, n))

    def _check_opened(self, info: dict, dim: int, optimizer: str, hyper: dict, created: bool) -> None:
        if info["dim"] != dim or info["optimizer"]["name"] != optimizer:
            self.close()
            raise errors.InvalidArgumentError(
                f"tierfs.Embedding: {self.path} holds a table of dim {info['dim']} trained by "
                f"{info['optimizer']['name']}, not dim {dim} by {optimizer}"
            )
        if not created and any(v is not None for v in hyper.values()):
            kept = _native_hyper(info["optimizer"])
            asked = {k: (tuple(v) if k == "betas" else v) for k, v in hyper.items() if v is not None}
            if any(kept.get(k) != v for k, v in asked.items()):
                self.close()
                raise errors.InvalidArgumentError(
                    f"tierfs.Embedding: {self.path} was created with {kept}; asked for {asked} (a table keeps its hyper-parameters)"
                )

    def _check_store(self, info: dict, store: Any, node_type: Optional[str]) -> None:
        """Refuses a table opened for a store whose node type it is not of."""
        types = store.types["node_types"]
        name = node_type if node_type is not None else (next(iter(types)) if len(types) == 1 else None)
        count = types[name]["count"] if name in types else None
        if info["node_type"] != name or info["rows"] != count:
            self.close()
            raise errors.InvalidArgumentError(
                f"tierfs.Embedding: {self.path} is a table of {info['rows']} rows of node type "
                f"{info['node_type']!r}, not of the store's node type {name!r} ({count} nodes)"
            )

    def _write_initial(self, rows: Any) -> None:
        rows = torch.as_tensor(rows, dtype=torch.float32).cpu().contiguous()
        if tuple(rows.shape) != (self.num_embeddings, self.embedding_dim):
            shape = (self.num_embeddings, self.embedding_dim)
            self.close()
            raise errors.InvalidArgumentError(f"tierfs.Embedding: init rows of shape {tuple(rows.shape)}, want {shape}")
        chunk = max(1, (64 << 20) // (4 * self.embedding_dim))
        for first in range(0, self.num_embeddings, chunk):
            ids = torch.arange(first, min(first + chunk, self.num_embeddings), dtype=torch.int64)
            self.write(ids, rows[first : first + len(ids)])
        self.checkpoint()

    def _h(self) -> int:
        _native.check_process()
        if self._handle is None:
            raise errors.ClosedError(f"tierfs.Embedding: table {self.path} is closed")
        return self._handle

    # rows --------------------------------------------------------------------------------

    @staticmethod
    def _ids(ids: Any) -> torch.Tensor:
        t = torch.as_tensor(ids)
        if t.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
            raise errors.DTypeError(f"tierfs.Embedding: ids of dtype {t.dtype}: want integers")
        return t.reshape(-1).to("cpu", torch.int64).contiguous()

    def _rows(self, fn: Any, ids: torch.Tensor, width: int, buf: Optional[torch.Tensor], *extra: Any) -> torch.Tensor:
        if buf is None:
            buf = torch.empty((len(ids), width), dtype=torch.float32)
        check(fn(self._h(), ids.data_ptr(), len(ids), buf.data_ptr(), buf.numel(), *extra))
        return buf

    def read(self, ids: Any) -> torch.Tensor:
        """The parameter rows of ids (shape ids.shape + (dim,)), on ids' device; no gradient."""
        t = torch.as_tensor(ids)
        flat = self._ids(t)
        if self._tier is None:
            out = self._rows(lib.tfs_table_gather, flat, self.embedding_dim, None)
        else:
            out = self._tiered(flat, self.embedding_dim, lib.tfs_table_gather, self._tier.device)
        return out.reshape(*t.shape, self.embedding_dim).to(t.device)

    def _tiered(self, ids: torch.Tensor, width: int, fn: Any, device: torch.device) -> torch.Tensor:
        """The first ``width`` floats of the slots of host ids on ``device``: the device tier's
        rows from it, the others through the core call ``fn`` (gather or read_slots)."""
        self._check_ids(ids)
        with self._lock:
            tier = self._tier
            held, pos = tier.locate(ids)
            hits, miss = tier.count(held)
            out = torch.empty((len(ids), width), dtype=torch.float32, device=device)
            if hits:
                out[held.to(device)] = tier.slots[pos[held], :width].to(device)
            if hits < len(ids):
                out[miss.to(device)] = self._rows(fn, ids[miss].contiguous(), width, None).to(device)
            return out

    def write(self, ids: Any, rows: Any) -> None:
        """Sets the parameter rows of ids (a later repeat wins); their optimizer state is kept."""
        self._version += 1  # first: a write that fails half way has changed rows too
        ids = self._ids(ids)
        rows = torch.as_tensor(rows, dtype=torch.float32).reshape(len(ids), -1).cpu().contiguous()
        if rows.shape[1] != self.embedding_dim:
            raise errors.InvalidArgumentError(f"tierfs.Embedding.write: rows of width {rows.shape[1]}, want dim {self.embedding_dim}")
        if self._tier is None:
            self._rows(lib.tfs_table_write, ids, self.embedding_dim, rows)
            return
        with self._lock:
            held, pos = self._tier.locate(ids)
            miss = (~held).cpu()
            if not bool(miss.all()):
                self._check_ids(ids)  # every id in range before the tier changes
                # The last write of each id the tier holds (a later repeat wins).
                keep = held.cpu() & _last_of_each(ids)
                at = pos[keep.to(pos.device)]
                self._tier.slots[at, : self.embedding_dim] = rows[keep].to(self._tier.device)
                self._tier.dirty = True
            if bool(miss.any()):
                self._rows(lib.tfs_table_write, ids[miss].contiguous(), self.embedding_dim, rows[miss].contiguous())

    def _prefetch(self, ids: torch.Tensor) -> None:
        """Reads the rows of host ids that the device tier does not hold through the table's
        page cache, and drops them (a loader's read ahead: :func:`warm`); counts nothing."""
        if self._tier is not None:
            with self._lock:
                ids = ids[(~self._tier.locate(ids)[0]).cpu()]
        if len(ids):
            self._rows(lib.tfs_table_gather, ids.contiguous(), self.embedding_dim, None)

    def _check_ids(self, ids: torch.Tensor) -> None:
        """The core's error for an id out of range, before a tier serves any of ids."""
        bad = ((ids < 0) | (ids >= self.num_embeddings)).nonzero()
        if len(bad):
            i = int(bad[0])
            raise errors.OutOfRangeError(f"tierfs.Embedding: ids[{i}] = {int(ids[i])} is out of range [0, {self.num_embeddings})")

    def forward(self, ids: Any) -> torch.Tensor:  # type: ignore[override]
        """The rows of ids on ids' device; under autograd, backward keeps their gradient for
        step(). In training mode (``self.training``, torch's default) a forward under autograd
        reads the whole slots of ids' distinct rows (row and optimizer state) and keeps them for
        the step, which then reads nothing again, unless a call that may change a row (write,
        step, place, checkpoint, close) came in between: then the step reads them anew."""
        t = torch.as_tensor(ids)
        if not torch.is_grad_enabled():
            return self.read(t)
        anchor = torch.empty(0, requires_grad=True)
        return _Lookup.apply(anchor, t, self)

    def _gather_for_step(self, ids: torch.Tensor) -> Tuple[torch.Tensor, Optional[_KeptSlots]]:
        """forward's rows of ids, and the distinct rows' whole slots kept for the step (None
        where it keeps none: in eval mode, or ``_keep_slots`` off)."""
        if not (self.training and self._keep_slots):
            return self.read(ids), None
        flat = self._ids(ids)
        self._check_ids(flat)  # the error read gives, naming the position in ids
        uniq, inverse = torch.unique(flat, return_inverse=True)
        uniq = uniq.contiguous()
        slots = self._read_slots(uniq, ids.device)
        rows = slots[inverse.to(ids.device), : self.embedding_dim]
        return rows.reshape(*ids.shape, self.embedding_dim), _KeptSlots(uniq, slots, self._version)

    def _read_slots(self, ids: torch.Tensor, device: torch.device) -> torch.Tensor:
        """The whole slots of host ids on ``device``, from both tiers."""
        if self._tier is None:
            return self._read_back(ids).to(device)
        return self._tiered(ids, self._slot_floats, lib.tfs_table_read_slots, device)

    # training ----------------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:  # type: ignore[override]
        """Drops the gradients kept since the last step."""
        self._pending.clear()

    def step(self) -> None:
        """One optimizer step over the rows of the batches since the last step (their gradients
        concatenated in backward order; torch's own accumulation of several uses orders them
        otherwise, so the bit-for-bit equality holds for one forward per step); a step with no
        gradient does nothing."""
        if not self._pending:
            return
        ids = torch.cat([i.to(g.device) for i, g, _ in self._pending])
        grads = torch.cat([g for _, g, _ in self._pending]).to(torch.float32)
        kept = [k for _, _, k in self._pending if k is not None and k.version == self._version]
        self._pending.clear()
        device = grads.device
        uniq, inverse = torch.unique(ids, return_inverse=True)
        uniq_cpu = uniq.cpu().contiguous()
        dim = self.embedding_dim
        slots = self._step_slots(uniq_cpu, kept, device)
        del kept
        param = torch.nn.Parameter(slots[:, :dim].contiguous())
        # The gradient nn.Embedding(sparse=True) gives: uncoalesced, in input order (local rows).
        param.grad = torch.sparse_coo_tensor(inverse.reshape(1, -1), grads, param.shape, check_invariants=False)
        opt = self._torch_optimizer(param)
        state = opt.state[param]
        if self.optimizer == "adagrad":
            state["step"].fill_(float(self._step))
            state["sum"].copy_(slots[:, dim : 2 * dim])
        elif self.optimizer == "adam":
            state["step"] = self._step
            state["exp_avg"] = slots[:, dim : 2 * dim].contiguous()
            state["exp_avg_sq"] = slots[:, 2 * dim :].contiguous()
        opt.step()
        parts = [param.detach()]
        if self.optimizer == "adagrad":
            parts.append(state["sum"])
        elif self.optimizer == "adam":
            parts += [state["exp_avg"], state["exp_avg_sq"]]
        out = torch.cat(parts, dim=1)
        self._step += 1
        self._version += 1
        self._put_slots(uniq_cpu, out)

    def _step_slots(self, ids: torch.Tensor, kept: List[_KeptSlots], device: torch.device) -> torch.Tensor:
        """The whole slots of the step's distinct host ids on ``device``: those the forwards
        kept (still valid), the rest read from the tiers."""
        if len(kept) == 1 and torch.equal(kept[0].ids, ids):  # one forward a step: its slots
            return kept[0].slots.to(device)
        if not kept:
            return self._read_slots(ids, device)
        slots = torch.empty((len(ids), self._slot_floats), dtype=torch.float32, device=device)
        have = torch.zeros(len(ids), dtype=torch.bool)
        for k in kept:
            pos = torch.searchsorted(k.ids, ids).clamp_(max=len(k.ids) - 1)
            hit = (k.ids[pos] == ids) & ~have
            slots[hit.to(device)] = k.slots[pos[hit].to(k.slots.device)].to(device)
            have |= hit
        rest = ~have
        if bool(rest.any()):
            slots[rest.to(device)] = self._read_slots(ids[rest].contiguous(), device)
        return slots

    def _put_slots(self, ids: torch.Tensor, slots: torch.Tensor) -> None:
        """Writes the whole slots of distinct host ids, at the step count: the device tier's into
        it, the others through the core."""
        if self._tier is None:
            self._write_back(ids, slots.cpu().contiguous())
            return
        with self._lock:
            tier = self._tier
            held, pos = tier.locate(ids)
            miss = (~held).cpu()
            if not bool(miss.all()):
                tier.slots[pos[held]] = slots[held.to(slots.device)].to(tier.device)
                tier.dirty = True
            if bool(miss.any()):
                self._write_back(ids[miss].contiguous(), slots[miss.to(slots.device)].cpu().contiguous())

    def _write_back(self, ids: torch.Tensor, slots: torch.Tensor) -> None:
        """Writes the whole slots of distinct host ids to the table, at the step count."""
        self._rows(lib.tfs_table_write_slots, ids, self._slot_floats, slots, self._step)

    def _read_back(self, ids: torch.Tensor) -> torch.Tensor:
        """The whole slots of ids read from the table (not the device tier), on the host."""
        return self._rows(lib.tfs_table_read_slots, ids.cpu().contiguous(), self._slot_floats, None)

    def place(self, hotness: Any = None) -> None:
        """Places the device tier again: writes its rows back to the table and fills it with
        the rows the store's placement ranks hottest now (:meth:`tierfs.Store.hottest` of the
        table's node type; ``hotness``, one count per row, ranks them instead). A table without
        a device tier has nothing to place."""
        self._h()  # a closed table's tier is gone
        if self._tier is None:
            return
        self._version += 1
        with self._lock:
            self._tier.flush(self._write_back)
            ranked = self._store.hottest(self._tier.capacity, hotness=hotness, node_type=self.info["node_type"])
            self._tier.fill(torch.from_numpy(ranked), self._read_back)

    def _torch_optimizer(self, param: torch.nn.Parameter) -> torch.optim.Optimizer:
        o = self._hyper
        if self.optimizer == "sgd":
            return torch.optim.SGD([param], lr=o["lr"])
        if self.optimizer == "adagrad":
            return torch.optim.Adagrad([param], lr=o["lr"], lr_decay=o["lr_decay"], eps=o["eps"])
        return torch.optim.SparseAdam([param], lr=o["lr"], betas=o["betas"], eps=o["eps"])

    # the table ---------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        """Optimizer steps taken (torch's per-tensor ``step``), checkpointed with the rows."""
        return self._step

    def checkpoint(self) -> None:
        """Makes the table's rows, state and step count its last checkpoint, crash-safely (the
        device tier's rows written to the table first)."""
        self._version += 1
        self._flush()
        check(lib.tfs_table_checkpoint(self._h()))

    def _flush(self) -> None:
        """Writes the device tier's rows, and the step count, to the table."""
        if self._tier is not None:
            with self._lock:
                self._tier.flush(self._write_back)  # at the step count

    def stats(self) -> dict:
        """The page cache's counters since open: pages_read, pages_written, hits, misses,
        evictions, dirty, cache_pages, checkpoints; with a device tier, ``gpu``: the tier's
        device, rows_held, capacity_rows, bytes_held, and the rows of reads and steps it served
        (hits) and did not hold (misses)."""
        out = _native.read_json(lambda b, c, n: lib.tfs_table_stats_json(self._h(), b, c, n))
        if self._tier is not None:
            out["gpu"] = self._tier.stats()
        return out

    def close(self) -> None:
        """Closes the table (the device tier's rows written to it first, and the tier freed);
        what changed since the last checkpoint is dropped."""
        h = getattr(self, "_handle", None)
        if h is None:
            return
        self._version += 1
        try:
            self._flush()
        finally:
            self._handle, self._tier = None, None
            check(lib.tfs_table_close(h))

    def extra_repr(self) -> str:
        tier = "" if self._tier is None else f", device_tier={self._tier.capacity} rows on {self._tier.device}"
        return f"{self.num_embeddings}, {self.embedding_dim}, optimizer={self.optimizer}, path={self.path!r}{tier}"


def _last_of_each(ids: torch.Tensor) -> torch.Tensor:
    """The mask of the last occurrence of each id in ids (host int64)."""
    uniq, inverse = torch.unique(ids, return_inverse=True)
    last = torch.full((len(uniq),), -1, dtype=torch.int64).scatter_reduce_(0, inverse, torch.arange(len(ids)), "amax")
    mask = torch.zeros(len(ids), dtype=torch.bool)
    mask[last] = True
    return mask


def _native_hyper(o: dict) -> dict:
    """The table's hyper-parameters under torch's names."""
    out = {"lr": o["lr"]}
    if o["name"] == "adagrad":
        out.update(lr_decay=o.get("lr_decay", 0.0), eps=o["eps"], initial_accumulator_value=o.get("initial_accumulator_value", 0.0))
    if o["name"] == "adam":
        out.update(betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    return out


# loaders ------------------------------------------------------------------------------------


def loader_tables(store: Any, embeddings: Optional[dict], who: str) -> dict:
    """The ``embeddings=`` of a loader, checked: ``{node type: Embedding}`` (``None`` for a
    one-type store's type, which is also the key returned for it), each a table of that
    featureless type's rows."""
    tables: dict = {}
    types = store.types["node_types"]
    for t, emb in (embeddings or {}).items():
        if not isinstance(emb, Embedding):
            raise TypeError(f"{who}: embeddings[{t!r}] is a {type(emb).__name__}, want a tierfs.Embedding")
        if store.is_hetero:
            if t not in types:
                raise KeyError(f"{who}: embeddings for node type {t!r}: the dataset has no such type (it has {list(types)})")
            has = next((n for n, f in types[t]["features"].items() if f["default"]), None)
        else:
            if t is not None and t not in types:
                raise KeyError(f"{who}: embeddings for node type {t!r}: the store's one type is {next(iter(types))!r} (or None)")
            t, has = None, store.feature_name
        if has is not None:
            raise errors.InvalidArgumentError(f"{who}: embeddings for node type {t!r}: it has the dataset's feature {has!r}; a table gives a featureless type's x")
        n = store.num_nodes(t)
        of = emb.info.get("node_type")
        if emb.num_embeddings != n or (store.is_hetero and of is not None and of != t):
            raise errors.InvalidArgumentError(f"{who}: embeddings[{t!r}] is a table of {emb.num_embeddings} rows of node type {of!r}; node type {t!r} has {n} nodes")
        tables[t] = emb
    return tables


def warm(tables: dict, ids_of: Any) -> None:
    """Reads the rows of ``ids_of(node type)`` of each table and drops them: on a pipeline
    thread, so that the pages a batch needs are in the tables' caches when the batch is handed
    over and its rows are gathered (:func:`rows_of`). Only where the batch's pages take at most
    a quarter of the table's cache: in a cache smaller than a few batches, reading ahead would
    evict the pages the step in progress needs (on ACM's authors with a cache of 64 pages it
    added a third to the misses)."""
    for t, emb in tables.items():
        ids = ids_of(t)
        if ids is None or not len(ids):
            continue
        ids = emb._ids(ids)
        if 4 * torch.unique(ids // emb._rows_per_page).numel() <= emb._cache_pages:
            emb._prefetch(ids)


def rows_of(tables: dict, ids_of: Any, device: Any) -> dict:
    """``{node type: emb(ids_of(node type))}`` on ``device`` (the store's), gathered now, in the
    caller's thread and autograd mode: the rows as every step taken so far left them."""
    out = {}
    for t, emb in tables.items():
        ids = ids_of(t)
        if ids is None:  # no nodes of the type in the batch
            continue
        ids = torch.as_tensor(ids)
        out[t] = emb(ids if device is None or str(device) == "cpu" else ids.to(device))
    return out
