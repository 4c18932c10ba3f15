"""Planned epochs (DiskGNN's offline sampling and feature packing; see docs/planned.md).

``store.plan_epochs(...)`` samples K epochs ahead and packs, per batch, the feature rows no
memory tier holds into one contiguous extent of a file per epoch; :class:`PlannedEpochs` serves
batch ``b`` of epoch ``e`` (from planned epoch ``e mod K``: samples are reused) by sampling it
again deterministically and reading its packed rows with a few large reads.

On a dataset of several node types, ``store.plan_epochs({edge type: fanouts}, ...,
node_type=...)`` plans batches of seeds of ``node_type`` sampled as a
:class:`tierfs.HeteroSampler` samples them, packing per batch the rows of every node type with
features; :meth:`PlannedEpochs.sample` then gives a :class:`tierfs.HeteroSample` and
:meth:`PlannedEpochs.gather` takes the node type of the rows.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, _util, errors
from ._args import _c_str, _fanouts, _ids
from ._native import check, lib
from ._sample import Sample, _take_sample
from .hetero import HeteroSample, _take_hetero_sample, fanouts_by_key

if TYPE_CHECKING:  # for annotations only: store imports this module
    from .store import Store

__all__ = ["PlannedEpochs"]


class PlannedEpochs:
    """An open plan of a store; made by :meth:`tierfs.Store.plan_epochs`.

    Safe to use from several threads. ``report`` is what planning did when this open planned
    (None when it reused a plan already in ``plan_dir``). A plan of a heterogeneous graph
    (``fanouts`` a dict of edge type → fanouts) has ``hetero`` True, ``node_type`` (the seeds'
    type) and ``node_types`` (the types whose rows it packs: those with features).
    """

    def __init__(
        self,
        store: "Store",
        fanouts: Union[Sequence[int], Mapping[Any, Sequence[int]]],
        batch_size: int,
        epochs: int,
        seeds: Any = None,
        plan_dir: Optional[str] = None,
        disk_budget: Any = None,
        replace: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        shuffle_seed: int = 0,
        replan: bool = True,
        workers: int = 0,
        place_tiers: bool = True,
        node_type: Optional[str] = None,
    ) -> None:
        h = store._h()
        if isinstance(fanouts, int):
            fanouts = [fanouts]
        if isinstance(fanouts, Mapping):
            fanouts_json: Any = fanouts_by_key(fanouts)
        else:
            if node_type is not None and node_type != store.node_type:
                raise errors.InvalidArgumentError(
                    f"tierfs: plan_epochs with node_type={node_type!r} needs fanouts per edge type ({{edge type: fanouts}}), got {list(fanouts)!r}"
                )
            fanouts_json = _fanouts(fanouts)
        self._temp_dir: Optional[str] = None  # made here, removed by close()
        if plan_dir is None:
            plan_dir = self._temp_dir = tempfile.mkdtemp(prefix="tierfs-plan-")
        request = {
            "plan_dir": str(plan_dir),
            "fanouts": fanouts_json,
            "node_type": "" if node_type is None else str(node_type),
            "replace": bool(replace),
            "batch_size": int(batch_size),
            "drop_last": bool(drop_last),
            "seed": int(seed) & 0xFFFFFFFFFFFFFFFF,
            "shuffle_seed": int(shuffle_seed) & 0xFFFFFFFFFFFFFFFF,
            "epochs": int(epochs),
            "disk_budget": 0 if disk_budget is None else _util.parse_size(disk_budget, "disk_budget"),
            "replan": bool(replan),
            "place_tiers": bool(place_tiers),
            "workers": int(workers),
        }
        arr = None
        if seeds is not None:
            arr = _ids(seeds, "seeds").array
        self._store = store
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        handle = c_void_p()
        check(
            lib.tfs_epochs_open(
                h,
                json.dumps(request).encode(),
                None if arr is None else arr.ctypes.data,
                0 if arr is None else arr.shape[0],
                byref(handle),
            )
        )
        self._handle = handle.value
        info = self.info()
        self.plan_dir: str = info["dir"]
        self.report: Optional[Dict[str, Any]] = info["report"]
        self.planned: int = info["stats"]["planned"]
        self.batches_per_epoch: int = info["stats"]["batches_per_epoch"]
        self.hetero: bool = bool(info["hetero"])
        self.node_type: str = info["seed_type"]
        self.node_types: List[str] = list(info["node_types"])

    def _h(self) -> int:
        _native.check_process()
        h = self._handle
        if h is None:
            raise errors.ClosedError("tierfs: planned epochs are closed")
        return h

    def info(self) -> Dict[str, Any]:
        """``{"dir", "report", "stats"}``; stats counts batches, packed rows read, bytes read,
        reads, and the planning time."""
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_epochs_info_json(h, buf, cap, needed), 1 << 12)

    def stats(self) -> Dict[str, Any]:
        return self.info()["stats"]

    def sample(self, epoch: int, batch: int) -> Union["Sample", HeteroSample]:
        """The sample of batch ``batch`` of epoch ``epoch`` (numpy arrays); its first
        ``num_seeds`` nodes are the batch's seeds. A heterogeneous plan's is a
        :class:`tierfs.HeteroSample` (the seeds first in ``node[node_type]``)."""
        hs = c_void_p()
        if self.hetero:
            check(lib.tfs_epochs_sample_hetero(self._h(), int(epoch), int(batch), byref(hs)))
            return _take_hetero_sample(hs.value, self.node_type)
        check(lib.tfs_epochs_sample(self._h(), int(epoch), int(batch), byref(hs)))
        return Sample(*_take_sample(hs))

    def gather(self, epoch: int, batch: int, nodes: Any, out: Any = None, node_type: Optional[str] = None) -> Any:
        """Feature rows of ``nodes`` (the batch's ``sample.nodes``) into a host numpy array.

        With ``node_type`` (a heterogeneous plan: one of ``node_types``), the rows of that
        type's default feature of ``nodes`` (the batch's ``sample.node[node_type]``), returned
        where and as ``store.gather(nodes, node_type=...)`` returns them."""
        if node_type is not None or self.hetero:
            return self._gather_typed(epoch, batch, nodes, out, node_type)
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        n = nodes.shape[0]
        store = self._store
        if out is None:
            out = np.empty((n, store.dim), dtype=store.dtype)
        elif not isinstance(out, np.ndarray):
            raise errors.InvalidArgumentError(f"out must be a numpy array, got {type(out).__name__}")
        else:
            store._check_out(out, (n, store.dim))
        check(
            lib.tfs_epochs_gather(
                self._h(), int(epoch), int(batch), nodes.ctypes.data, n, out.ctypes.data, n * store.row_bytes
            )
        )
        return out

    def gather_device(self, epoch: int, batch: int, nodes: Any, out: Any = None, node_type: Optional[str] = None) -> Any:
        """Feature rows of ``nodes`` (host ids: the batch's ``sample.nodes``, or of ``node_type``)
        into a CUDA tensor on the store's device (``out``, or a new one), ordered on the current
        CUDA stream: the rows the memory tiers hold are copied on the GPU, the batch's packed
        rows read in one read into pinned memory, checked, and scattered there by a kernel —
        no host copy of any row. Needs a store with a GPU path (``device="cuda:N"``)."""
        import torch

        store = self._store
        if node_type is None and self.hetero:
            if len(self.node_types) != 1:
                raise errors.InvalidArgumentError(f"tierfs: name the node type of the rows (node_type=, one of {', '.join(self.node_types)})")
            node_type = self.node_types[0]
        if node_type is not None and node_type not in self.node_types:
            raise errors.KeyNotFoundError(
                f"tierfs: node type {node_type!r} has no rows in this plan (it packs {', '.join(self.node_types)}: the node types with features)"
            )
        if isinstance(nodes, torch.Tensor):
            nodes = nodes.cpu().numpy()
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        n = nodes.shape[0]
        if node_type is None:
            dim, dtype, rb = store.dim, store.torch_dtype, store.row_bytes
        else:
            info = next(f for f in store._node_type_info(node_type)["features"].values() if f["default"])
            dim, rb = int(info["dim"]), int(info["row_bytes"])
            dtype = getattr(torch, np.dtype(info["dtype"]).name)
        if store.device == "cpu":
            raise errors.InvalidArgumentError("tierfs: gather_device needs a store opened with device=\"cuda:N\"")
        device = torch.device(store.device)
        if out is None:
            out = torch.empty((n, dim), dtype=dtype, device=device)
        elif not (isinstance(out, torch.Tensor) and out.is_cuda and out.is_contiguous() and tuple(out.shape) == (n, dim) and out.dtype == dtype):
            raise errors.InvalidArgumentError(f"tierfs: out must be a contiguous CUDA tensor of shape ({n}, {dim}) and dtype {dtype}")
        stream = torch.cuda.current_stream(out.device).cuda_stream
        nt = None if node_type is None else _c_str(node_type, "node_type")
        check(lib.tfs_epochs_gather_device(self._h(), int(epoch), int(batch), nt, nodes.ctypes.data, n, out.data_ptr(), n * rb, stream))
        return out

    def _gather_typed(self, epoch: int, batch: int, nodes: Any, out: Any, node_type: Optional[str]) -> Any:
        if node_type is None:
            if len(self.node_types) != 1:
                raise errors.InvalidArgumentError(f"tierfs: name the node type of the rows (node_type=, one of {', '.join(self.node_types)})")
            node_type = self.node_types[0]
        if node_type not in self.node_types:
            raise errors.KeyNotFoundError(
                f"tierfs: node type {node_type!r} has no rows in this plan (it packs {', '.join(self.node_types)}: the node types with features)"
            )
        store = self._store
        info = next(f for f in store._node_type_info(node_type)["features"].items() if f[1]["default"])
        h, nt_c = self._h(), _c_str(node_type, "node_type")
        e, b = int(epoch), int(batch)
        return store._gather_rows(
            info[0], info[1], nodes, out, lambda ids_p, n, dst, nbytes: lib.tfs_epochs_gather_typed(h, e, b, nt_c, ids_p, n, dst, nbytes)
        )

    def load(self, epoch: int, batch: int) -> Tuple[Any, Any, Any]:
        """``(seeds, sample, x)`` of batch ``batch`` of epoch ``epoch``; for a heterogeneous
        plan ``x`` is ``{node type: rows of sample.node[type]}`` over ``node_types``."""
        sample = self.sample(epoch, batch)
        if isinstance(sample, HeteroSample):
            xs = {t: self.gather(epoch, batch, sample.node[t], node_type=t) for t in self.node_types}
            return sample.node[self.node_type][: sample.num_seeds], sample, xs
        x = self.gather(epoch, batch, sample.nodes)
        return sample.nodes[: sample.num_seeds], sample, x

    def close(self) -> None:
        with self._lock:
            h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            lib.tfs_epochs_close(h)
        temp, self._temp_dir = getattr(self, "_temp_dir", None), None
        if temp is not None and not _native._forked:
            shutil.rmtree(temp, ignore_errors=True)

    def __enter__(self) -> "PlannedEpochs":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        types = f" node_types={self.node_types}" if self.hetero else ""
        return f"<tierfs.PlannedEpochs {self.plan_dir!r} planned={self.planned} batches={self.batches_per_epoch}{types}>"
