"""The placement calls of :class:`tierfs.Store` (``place``, ``hottest``, ``profile_reads``,
``place_ids``, ``advise``: what the memory tiers hold and what the core advises), moved here from
store.py as they were; :class:`tierfs.Store` takes them as its methods (``self`` a store)."""

from __future__ import annotations

import json
from ctypes import byref, c_int64, c_void_p
from typing import Any, Dict, Optional, Sequence

import numpy as np

from . import _native, _util, errors
from ._args import IdsLike, _c_str, _check_batching, _fanouts, _ids
from ._native import check, lib
from ._progress import _progress_callback
from .hetero import fanouts_by_key

__all__ = []  # Store's methods, not an API of their own


def place(
    self,
    hotness: Optional[Any] = None,
    *,
    fanouts: Optional[Sequence[int]] = None,
    batch_size: Optional[int] = None,
    policy: str = "unified",
    epochs: Optional[int] = None,
    batches: Optional[int] = None,
    recompute: bool = False,
    host_bytes: Optional[int] = None,
    gpu_bytes: Optional[int] = None,
    progress: Any = None,
    node_type: Optional[str] = None,
    seed: int = 0,
) -> Optional[Dict[str, Any]]:
    """Refills the host tier by ``hotness`` (one count per node, higher is hotter; values
    are clipped to uint32), or by in-degree when None. Waits for running gathers and blocks
    new ones while it runs.

    With ``fanouts`` (and ``batch_size``) it places topology and features together instead,
    as ``tierfs place``: it loads the placement saved in the dataset directory when it was
    made for the dataset as it is and for these inputs, otherwise profiles ``epochs`` epochs
    of the train split (else of every node), each in a fresh order as a loader visits them
    (None: until the held-out estimate converges, at most 8; ``batches`` profiles that many
    batches instead), plans under
    ``policy`` ("unified", "unified-pcie", "topology-first", "features-first", "degree",
    "random", "none") and saves it there (``recompute`` forces this); then applies it to
    this store. The budgets are the store's caches unless ``host_bytes`` / ``gpu_bytes``
    are given. Returns the report as a dict (the JSON of ``tierfs place --json``):
    ``source`` ("loaded", "replanned", "computed"), ``loaded``, ``file``, ``usage`` (per
    kind and tier), ``comparison`` (per policy: ``pcie_bytes_per_batch``,
    ``ssd_bytes_per_batch``, memory taken, ``chosen``), ...
    ``progress`` (a planned placement only) is as :func:`tierfs.ingest`'s: True for a bar,
    or ``callable(stage, done, total)``, called with ``("profile", batches sampled, batches
    planned so far)``.

    With ``fanouts`` a dict (a heterogeneous graph: ``{edge type: [per hop]}`` as
    :meth:`sampler` takes), it profiles ``batches`` batches (default 100) of ``batch_size``
    seeds of ``node_type``'s train split as a shuffling loader visits them, counts how often
    each (type, row) is reached, and fills each type's GPU then host tier with its most
    reached rows, within the type's share of the budgets (split by feature bytes). Returns
    ``{"batches", "seconds", "node_types": {type: {"rows_reached", "memory_rows",
    "reached_in_memory"}}}``. The placement is not saved.

    Raises:
        ValueError (tierfs.InvalidArgumentError): hotness together with fanouts, fanouts
            without batch_size, a bad policy, budget or size, or a plan whose feature rows
            do not fit the store's caches.
    """
    if isinstance(fanouts, dict):
        if hotness is not None or batch_size is None:
            raise errors.InvalidArgumentError("a heterogeneous placement needs fanouts and batch_size, and no hotness")
        if policy != "unified" or epochs is not None or host_bytes is not None or gpu_bytes is not None or recompute:
            raise errors.NotSupportedError("a heterogeneous placement profiles batches= batches and fills each type's share of the store's caches; policy, epochs, budgets and recompute are one-type options")
        req_h = {
            "node_type": node_type if node_type is not None else self.node_type,
            "fanouts": fanouts_by_key(fanouts),
            "batch_size": int(batch_size),
            "batches": int(batches) if batches is not None else 100,
            "seed": int(seed) & 0xFFFFFFFFFFFFFFFF,
        }
        request_h = json.dumps(req_h).encode()
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_place_json(h, request_h, buf, cap, needed))
    if fanouts is not None or batch_size is not None:
        if hotness is not None:
            raise errors.InvalidArgumentError("give hotness or fanouts (a planned placement), not both")
        if fanouts is None or batch_size is None:
            raise errors.InvalidArgumentError("a planned placement needs both fanouts and batch_size")
        req: Dict[str, Any] = dict(
            fanouts=_fanouts(fanouts), batch_size=int(batch_size), policy=str(policy), recompute=bool(recompute),
            node_type=self.node_type if node_type is None else node_type,
        )
        if epochs is not None:
            req["epochs"] = int(epochs)
        if batches is not None:
            req["batches"] = int(batches)
        if host_bytes is not None:
            req["host_bytes"] = int(_util.parse_size(host_bytes)) if isinstance(host_bytes, str) else int(host_bytes)
        if gpu_bytes is not None:
            req["gpu_bytes"] = int(_util.parse_size(gpu_bytes)) if isinstance(gpu_bytes, str) else int(gpu_bytes)
        request = json.dumps(req).encode()
        h = self._h()
        cb, errs = _progress_callback(progress)
        if cb is None:
            return _native.read_json(lambda buf, cap, needed: lib.tfs_place_json(h, request, buf, cap, needed), 1 << 16)
        report = _native.read_json(lambda buf, cap, needed: lib.tfs_place_json_progress(h, request, cb, None, buf, cap, needed), 1 << 16)
        if errs:
            raise errs[0]
        return report
    if progress is not None and progress is not False:
        raise errors.InvalidArgumentError("progress is for a planned placement (fanouts and batch_size); placing by hotness is one quick pass")
    h = self._h()
    typed = node_type is not None and node_type != self.node_type
    nt = _c_str(node_type, "node_type") if typed else self._nt_c
    if hotness is None:
        check(lib.tfs_place(h, nt, None, 0))
        return
    arr = self._hotness_array(hotness, self.num_nodes(node_type) if typed else None, node_type if typed else None)
    check(lib.tfs_place(h, nt, arr.ctypes.data, arr.shape[0]))


def hottest(self, k: int, hotness: Optional[Any] = None, node_type: Optional[str] = None) -> np.ndarray:
    """The (at most) ``k`` node ids :meth:`place` would put in memory, hottest first (int64
    numpy array): ranked by ``hotness`` (one count per node, ties to the smaller id), or
    when None by the applied placement (``place(fanouts=...)``), else by in-degree (in a
    dataset of several types: by how often the type's nodes are neighbors). With
    ``node_type``, that type's tier stack and ids (``hotness`` one count per node of it); a
    type without features, which has no tier stack, is ranked as one of it would be with no
    placement applied (:class:`tierfs.Embedding` places its device tier by this).
    One native call; :mod:`tierfs.distributed` decides ownership from this order."""
    h = self._h()
    k = int(k)
    if k < 0:
        raise errors.InvalidArgumentError(f"hottest: k = {k} is negative")
    typed = node_type is not None and node_type != self.node_type
    rows = self.num_nodes(node_type) if typed else self._num_nodes
    k = min(k, rows)
    hot = None if hotness is None else self._hotness_array(hotness, rows, node_type if typed else None)
    out = np.empty(k, dtype=np.int64)
    count = c_int64(0)
    hot_p, hot_n = (None, 0) if hot is None else (hot.ctypes.data, hot.shape[0])
    nt = _c_str(node_type, "node_type") if typed else self._nt_c
    check(lib.tfs_hottest(h, nt, hot_p, hot_n, k, out.ctypes.data, byref(count)))
    return out[: count.value]


def profile_reads(
    self, fanouts: Any, batch_size: int, batches: Optional[int] = None, seeds: Optional[IdsLike] = None,
    seed: int = 0, replace: bool = False, node_type: Optional[str] = None,
) -> Any:
    """How often a loader's batches read each feature row (one uint32 count per node),
    placing nothing: pre-samples ``batches`` batches of ``batch_size`` ``seeds`` (None: the
    train split, else every node) with ``fanouts``, the first epoch in the order given and
    later ones reshuffled (None: one epoch), and counts for each node the batches that read
    its row, seeds included. These are the counts :meth:`place` (``fanouts=``) plans from;
    :meth:`tierfs.DistributedStore.place` sums every rank's counts of its own seeds. ``seed``
    seeds the sampling. One native call (``tfs_profile_reads``).

    With ``fanouts`` a dict (a graph of several types: ``{edge type: [per hop]}`` as
    :meth:`sampler` takes) the seeds are of ``node_type`` (None: the store's type; default
    seeds its train split), in the same loader order (as :meth:`place` profiles them), and
    the result is ``{node type: counts}`` for every node type with features.

    Raises:
        ValueError (tierfs.InvalidArgumentError): empty fanouts, batch_size or batches below
            1, no seeds (the message names the argument).
        IndexError (tierfs.OutOfRangeError): a seed out of range.
    """
    hetero = isinstance(fanouts, dict)
    fo: Any = fanouts_by_key(fanouts) if hetero else _fanouts(fanouts)
    if not fo:
        raise errors.InvalidArgumentError("profile_reads: fanouts is empty; give one fanout per hop")
    _check_batching("profile_reads", batch_size, batches, "the seeds")
    nt = self.node_type if node_type is None else node_type
    if seeds is None:
        if hetero:
            seeds = self.split("train", node_type=nt)
        else:
            seeds = self.split("train") if "train" in self.split_names else np.arange(self._num_nodes, dtype=np.int64)
    arr = _ids(seeds, "seeds").array
    if arr.shape[0] == 0:
        raise errors.InvalidArgumentError("profile_reads: seeds is empty: no batches to profile")
    req: Dict[str, Any] = dict(node_type=nt, fanouts=fo, batch_size=int(batch_size), batches=int(batches or 0),
                               seed=int(seed) & 0xFFFFFFFFFFFFFFFF, replace=bool(replace))
    infos = self.types["node_types"]
    if hetero:
        out = {t: np.zeros(int(info["count"]), dtype=np.uint32) for t, info in infos.items()
               if any(f["default"] for f in info["features"].values())}
    else:  # the seeds' type's counts alone
        out = {nt: np.zeros(int(infos[nt]["count"]) if nt in infos else 0, dtype=np.uint32)}
    ptrs = (c_void_p * len(infos))(*[out[t].ctypes.data if t in out and out[t].shape[0] else None for t in infos])
    lens = np.array([int(info["count"]) for info in infos.values()], dtype=np.int64)
    check(lib.tfs_profile_reads(self._h(), arr.ctypes.data, arr.shape[0], json.dumps(req).encode(), ptrs, lens.ctypes.data, len(infos)))
    return out if hetero else out[nt]


def place_ids(self, ids: IdsLike, node_type: Optional[str] = None) -> None:
    """Refills the memory tiers (of ``node_type``'s tier stack; None: the store's own) with
    ``ids`` in the order given: the GPU tier takes the first rows it holds, the host tier the
    next; ids beyond both are not cached. The ids must be distinct and in range. Waits for
    running gathers and blocks new ones while it runs."""
    h = self._h()
    arr = _ids(ids, "place_ids ids").array
    ptr = arr.ctypes.data if arr.shape[0] else None
    nt = self._nt_c
    if node_type is not None and node_type != self.node_type:
        self._node_type_info(node_type)
        nt = _c_str(node_type, "node_type")
    check(lib.tfs_place_ids(h, nt, ptr, arr.shape[0]))


def _hotness_array(self, hotness: Any, rows: Optional[int] = None, node_type: Optional[str] = None) -> np.ndarray:
    rows = self._num_nodes if rows is None else rows
    if _util.is_tensor(hotness):
        hotness = hotness.detach().cpu().numpy()
    arr = np.asarray(hotness)
    if arr.ndim != 1 or arr.shape[0] != rows:
        of = "" if node_type is None else f" of node type {node_type!r}"
        raise errors.InvalidArgumentError(f"hotness must have one entry per node{of} ({rows}), got shape {arr.shape}")
    if arr.dtype != np.uint32:
        if arr.dtype.kind not in "iuf":
            raise errors.DTypeError(f"hotness must be numbers, got {arr.dtype}")
        arr = np.clip(arr, 0, np.iinfo(np.uint32).max).astype(np.uint32)
    return np.ascontiguousarray(arr)


def advise(
    self,
    fanouts: Sequence[int],
    batch_size: int,
    ssd_price: float,
    machine_price: float,
    *,
    budget: Optional[float] = None,
    max_ssds: int = 8,
    measure: bool = False,
    train_ms: float = 0.0,
    ssd_iops: Optional[float] = None,
    pcie_gbps: Optional[float] = None,
    alpha_us: Optional[float] = None,
    block_cost: Optional[float] = None,
    batches: int = 20,
    seed: int = 1,
    replace: bool = False,
    mode: Optional[str] = None,
    current_ssds: Optional[int] = None,
    check: bool = False,
) -> Dict[str, Any]:
    """How many SSDs to buy: Hyperion's throughput-per-dollar model, as ``tierfs advise``.

    Runs this store's sampler and gather for ``batches`` batches of ``batch_size`` seeds
    (its caches as they are), counts the rows and disk reads each tier serves per batch,
    and predicts, for 1..``max_ssds`` SSDs, ``T_ssd = N_ssd / (IOPS * Q) + alpha``,
    ``T_pcie = bytes / link throughput``, the batch time, seeds/s and TPC (seeds/s per unit
    of price, ``ssd_price * Q + machine_price``). ``measure`` probes the disk and the host
    memory path of this machine (about 2 s); otherwise throughputs come from ``ssd_iops``
    (per SSD), ``pcie_gbps`` (GB/s), ``alpha_us`` and ``block_cost`` (the cost of each block
    past a merged read's first, in single-block reads) or their defaults. ``check`` times
    fresh batches afterwards and compares. Takes seconds; releases the GIL.

    Returns the report as a dict (the JSON of ``tierfs advise --json``): ``configs`` (one
    per SSD count: ``t_ssd_s``, ``t_pcie_s``, ``t_sample_s``, ``t_train_s``, ``t_batch_s``,
    ``bottleneck``, ``seeds_per_s``, ``tpc``, ``price``, ``within_budget``),
    ``recommended_ssds``, ``recommended``, ``current``, ``workload``, ``machine``,
    ``prices``, ``formula``, ``notes`` and, with ``check``, ``check``.

    Raises:
        ValueError (tierfs.InvalidArgumentError): a zero or negative price, size or
            throughput, or a budget that affords no configuration.
    """
    req: Dict[str, Any] = dict(
        fanouts=_fanouts(fanouts),
        batch_size=int(batch_size),
        ssd_price=float(ssd_price),
        machine_price=float(machine_price),
        max_ssds=int(max_ssds),
        measure=bool(measure),
        train_ms=float(train_ms),
        batches=int(batches),
        seed=int(seed),
        replace=bool(replace),
        check=bool(check),
    )
    for key, val in (("budget", budget), ("ssd_iops", ssd_iops), ("pcie_gbps", pcie_gbps), ("alpha_us", alpha_us), ("block_cost", block_cost)):
        if val is not None:
            req[key] = float(val)
    if mode is not None:
        req["mode"] = str(mode)
    if current_ssds is not None:
        req["current_ssds"] = int(current_ssds)
    request = json.dumps(req).encode()
    h = self._h()
    return _native.read_json(lambda buf, cap, needed: lib.tfs_advise_json(h, request, buf, cap, needed), 1 << 16)
