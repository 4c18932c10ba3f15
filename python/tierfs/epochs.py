"""Planned epochs (DiskGNN's offline sampling and feature packing; see docs/planned.md).

``store.plan_epochs(...)`` samples K epochs ahead and packs, per batch, the feature rows no
memory tier holds into one contiguous extent of a file per epoch; :class:`PlannedEpochs` serves
batch ``b`` of epoch ``e`` by reading its sample from the plan (a plan of seed nodes of one node
type stores each batch's sample) or sampling it again deterministically (link and heterogeneous
plans), and reading its packed rows with a few large reads. A plan covers the training epochs ``[first_epoch, first_epoch + K)``; an epoch
outside them replays planned epoch ``first_epoch + (e - first_epoch) mod K`` (samples reused).

On a dataset of several node types, ``store.plan_epochs({edge type: fanouts}, ...,
node_type=...)`` plans batches of seeds of ``node_type`` sampled as a :class:`tierfs.Sampler` of
those fanouts samples them, packing per batch the rows of every node type with features;
:meth:`PlannedEpochs.sample` then gives a typed :class:`tierfs.Sample` and
:meth:`PlannedEpochs.gather` takes the node type of the rows.

For link prediction, ``store.plan_epochs(fanouts, ..., seed_edges=...)`` plans batches of seed
edges: batch ``b`` of planned epoch ``e`` is what ``store.sampler(fanouts, seed=s)
.sample_from_edges(...)`` gives for its seed edges with ``s`` the seed the core derives from
``seed``, ``e`` and ``b`` — the same negatives, subgraph and rows — and :meth:`PlannedEpochs.sample`
answers that :class:`tierfs.LinkSample`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from ctypes import byref, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, _options, _util, errors
from ._args import _c_str, _fanouts, _ids
from ._native import check, lib
from ._sample import LinkSample, Sample, _finish_link_labels, _link_labels, _neg_sampling, _take_link_sample, _take_sample
from .hetero import edge_type_key, edge_type_tuple, fanouts_by_key

if TYPE_CHECKING:  # for annotations only: store imports this module
    from .store import Store

__all__ = ["PlannedEpochs"]


class PlannedEpochs(_native.Closeable):
    """An open plan of a store; made by :meth:`tierfs.Store.plan_epochs`.

    Safe to use from several threads. ``report`` is what planning did when this open planned
    (None when it reused a plan already in ``plan_dir``). It covers the training epochs
    ``[first_epoch, first_epoch + planned)``. A plan of a heterogeneous graph
    (``fanouts`` a dict of edge type → fanouts) has ``hetero`` True, ``node_type`` (the seeds'
    type) and ``node_types`` (the types whose rows it packs: those with features). A plan of
    seed edges has ``link`` True and ``edge_type`` (their type, ``(src, rel, dst)``).
    """

    def __init__(
        self,
        store: "Store",
        fanouts: Union[Sequence[int], Mapping[Any, Sequence[int]]],
        batch_size: int,
        epochs: int,
        seeds: Any = None,
        seed_edges: Any = None,
        edge_label: Any = None,
        seed_orders: Any = None,
        elsewhere: Any = None,
        **options: Any,
    ) -> None:
        link, request = plan_request(batch_size, epochs, options)
        node_type = request.get("node_type")
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
        arr, count = None, 0
        self._link: Optional[Tuple[Any, float, Any, Any]] = None  # mode, amount, labels, the core's labels
        if seed_edges is not None:
            if seeds is not None or node_type is not None or seed_orders is not None:
                raise errors.InvalidArgumentError("tierfs: plan_epochs takes seed nodes (seeds, seed_orders, node_type) or seed_edges, not both")
            link_request, arr, self._link = _seed_edges_request(store, isinstance(fanouts, Mapping), seed_edges, edge_label, link)
            count = arr.shape[0] // (3 if link_request["labels"] else 2)
        elif edge_label is not None or any(v not in (False, "", {}) and v != _options.defaults("link")[k] for k, v in link.items()):
            given = next((k for k, v in link.items() if v not in (False, "", {}) and v != _options.defaults("link")[k]), "edge_label")
            raise errors.InvalidArgumentError(f"tierfs: plan_epochs: {given} is a link option; it goes with seed_edges (a plan of seed edges)")
        elif seed_orders is not None:
            if seeds is not None:
                raise errors.InvalidArgumentError("tierfs: plan_epochs takes seeds or seed_orders (each planned epoch's seeds in order), not both")
            orders = [_ids(o, f"seed_orders[{e}]").array for e, o in enumerate(seed_orders)]
            if len(orders) != int(epochs) or len({o.shape[0] for o in orders}) > 1:
                raise errors.InvalidArgumentError(
                    f"tierfs: seed_orders: want {int(epochs)} orders (one per planned epoch) of one length, got lengths {[o.shape[0] for o in orders]}")
            arr = np.ascontiguousarray(np.concatenate(orders))
            count = arr.shape[0]
        elif seeds is not None:
            arr = _ids(seeds, "seeds").array
            count = arr.shape[0]
        elsewhere_ids, elsewhere_parts = _elsewhere(elsewhere)
        self._temp_dir: Optional[str] = None  # made here, removed by close()
        if "plan_dir" not in request:
            request["plan_dir"] = self._temp_dir = tempfile.mkdtemp(prefix="tierfs-plan-")
        request["fanouts"] = fanouts_json
        if seed_edges is not None:
            request["seed_edges"] = link_request
        if seed_orders is not None:
            request["seed_orders"] = True
        if elsewhere_parts is not None:
            request["elsewhere"] = elsewhere_parts
        self._store = store
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        handle = c_void_p()
        check(
            lib.tfs_epochs_open_elsewhere(
                h,
                json.dumps(request).encode(),
                None if arr is None else arr.ctypes.data,
                count,
                elsewhere_ids.ctypes.data if elsewhere_ids.shape[0] else None,
                elsewhere_ids.shape[0],
                byref(handle),
            )
        )
        self._handle = handle.value
        info = self.info()
        self.plan_dir: str = info["dir"]
        self.report: Optional[Dict[str, Any]] = info["report"]
        self.planned: int = info["stats"]["planned"]
        self.first_epoch: int = int(info["stats"].get("first_epoch", 0))
        self.batches_per_epoch: int = info["stats"]["batches_per_epoch"]
        self.hetero: bool = bool(info["hetero"])
        self.node_type: str = info["seed_type"]
        self.node_types: List[str] = list(info["node_types"])
        self.link: bool = bool(info["link"])
        self.edge_type: Optional[Tuple[str, str, str]] = edge_type_tuple(info["edge_type"]) if self.link else None

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

    def seeds(self, epoch: int, batch: int) -> np.ndarray:
        """The seeds of batch ``batch`` of epoch ``epoch``: node ids, or of a link plan the
        positions of its seed edges in ``seed_edges`` (PyG's ``input_id``)."""
        h, e, b = self._h(), int(epoch), int(batch)
        n = c_int64()
        check(lib.tfs_epochs_seeds(h, e, b, None, 0, byref(n)))
        out = np.empty(n.value, dtype=np.int64)
        check(lib.tfs_epochs_seeds(h, e, b, out.ctypes.data, n.value, byref(n)))
        return out

    def sample(self, epoch: int, batch: int) -> Sample:
        """The sample of batch ``batch`` of epoch ``epoch`` (numpy arrays); its first
        ``num_seeds`` nodes are the batch's seeds. A heterogeneous plan's is typed (the seeds
        first in ``node[node_type]``), a store's plan's untyped, as the sampler of the plan's
        fanouts gives them. A link plan's is a :class:`tierfs.LinkSample`, as the on-demand
        ``sample_from_edges`` of the batch's seed edges gives it."""
        if self._link is not None:
            return self._sample_link(epoch, batch)
        hs = c_void_p()
        check(lib.tfs_epochs_sample(self._h(), int(epoch), int(batch), byref(hs)))
        return _take_sample(hs.value, self.node_type if self.hetero else None, bool(self.hetero))

    def _sample_link(self, epoch: int, batch: int) -> LinkSample:
        assert self._link is not None
        mode, amount, lab, core_labels = self._link
        pos = self.seeds(epoch, batch)
        n = pos.shape[0]
        lab = None if lab is None else lab[pos]
        core_labels = None if core_labels is None else core_labels[pos]
        hs = c_void_p()

        def finish(link: tuple) -> tuple:
            eli, label, src_index, dst_pos_index, dst_neg_index = link
            label, dst_neg_index = _finish_link_labels(mode, amount, n, lab, core_labels, eli, label, dst_neg_index)
            return eli, label, src_index, dst_pos_index, dst_neg_index

        check(lib.tfs_epochs_sample(self._h(), int(epoch), int(batch), byref(hs)))
        return _take_link_sample(hs.value, self.edge_type, bool(self.hetero), finish)

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
                self._h(), int(epoch), int(batch), None, nodes.ctypes.data, n, out.ctypes.data, n * store.row_bytes
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
            info[0], info[1], nodes, out, lambda ids_p, n, dst, nbytes: lib.tfs_epochs_gather(h, e, b, nt_c, ids_p, n, dst, nbytes)
        )

    def load(self, epoch: int, batch: int) -> Tuple[Any, Any, Any]:
        """``(seeds, sample, x)`` of batch ``batch`` of epoch ``epoch``; for a heterogeneous
        plan ``x`` is ``{node type: rows of sample.node[type]}`` over ``node_types``. A link
        plan's ``seeds`` are the positions of the batch's seed edges."""
        sample = self.sample(epoch, batch)
        if self._link is not None:
            if sample.typed:
                return self.seeds(epoch, batch), sample, {t: self.gather(epoch, batch, sample.node[t], node_type=t) for t in self.node_types}
            return self.seeds(epoch, batch), sample, self.gather(epoch, batch, sample.nodes)
        if sample.typed:
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

    def __repr__(self) -> str:
        types = f" node_types={self.node_types}" if self.hetero else ""
        if self.link:
            types += f" edge_type={self.edge_type}"
        return f"<tierfs.PlannedEpochs {self.plan_dir!r} epochs={self.first_epoch}..{self.first_epoch + self.planned - 1} batches={self.batches_per_epoch}{types}>"


def plan_request(batch_size: Any, epochs: Any, options: Dict[str, Any], where: str = "tierfs: plan_epochs") -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the link options, the JSON of the plan options for tfs_epochs_open) of plan_epochs'
    keyword ``options`` (the core's "epochs" and "link" tables, :mod:`tierfs._options`): each
    checked as its kind says, None left out at the core's default; a name of neither table is an
    InvalidArgumentError listing them. Checked here, as the core checks them, so that a Loader
    refuses a bad one when made rather than when it first plans."""
    options = dict(options)
    link = {k: v for k, v in _options.take("link", options).items() if v is not None}
    plan = _options.take("epochs", options)
    _options.refuse_unknown(options, where, ("epochs", "link"))
    if plan.get("plan_dir") is not None:
        plan["plan_dir"] = os.fspath(plan["plan_dir"])
    return link, _options.request("epochs", {**plan, "batch_size": batch_size, "epochs": epochs}, where)


def _elsewhere(elsewhere: Any) -> Tuple[np.ndarray, Optional[List[Dict[str, Any]]]]:
    """(the ids, options_json's "elsewhere" or None) of plan_epochs' ``elsewhere``: ids of the
    plan's one node type, or ``{node type: ids}``; each type's ids are sorted and deduplicated."""
    if elsewhere is None:
        return np.empty(0, dtype=np.int64), None
    if isinstance(elsewhere, Mapping):
        parts = [(str(t), np.unique(_ids(ids, f"elsewhere[{t!r}]").array)) for t, ids in elsewhere.items()]
        ids = np.concatenate([a for _, a in parts]) if parts else np.empty(0, dtype=np.int64)
        return np.ascontiguousarray(ids), [{"node_type": t, "rows": int(a.shape[0])} for t, a in parts]
    return np.ascontiguousarray(np.unique(_ids(elsewhere, "elsewhere").array)), None


def _seed_edges_request(
    store: "Store", hetero: bool, seed_edges: Any, edge_label: Any, link: Dict[str, Any],
) -> Tuple[Dict[str, Any], np.ndarray, Tuple[Any, float, Any, Any]]:
    """(options_json's seed_edges, the seeds array: src ids, dst ids and the core's labels, and
    (mode, amount, labels, the core's labels) to finish each batch's labels as
    Sampler.sample_from_edges does) of plan_epochs' seed edges and link options (``link``, of the
    core's "link" table). ``seed_edges`` is a (2, n) array or tensor or the name of a stored edge
    split (its labels with it); on a heterogeneous store ``(edge type, either)``."""
    link = dict(link)
    undirected, reverse_edge_types = link.get("undirected", False), link.pop("reverse_edge_types", None)
    amount = link.pop("amount", _options.defaults("link")["amount"])
    edge_type: Any = None
    if isinstance(seed_edges, tuple) and len(seed_edges) == 2 and not isinstance(seed_edges[0], (int, np.integer)):
        edge_type, seed_edges = seed_edges
    if hetero and edge_type is None:
        raise errors.InvalidArgumentError(f"tierfs: seed_edges of a heterogeneous plan: give (edge type, (2, n) seed edges or split name), edge types {store.edge_types}")
    if hetero and (undirected or not isinstance(reverse_edge_types, (Mapping, type(None)))):
        raise errors.InvalidArgumentError("undirected: a heterogeneous plan names the reverse of each edge type instead (reverse_edge_types={edge type: reverse edge type})")
    if not hetero and reverse_edge_types:
        raise errors.InvalidArgumentError("reverse_edge_types: a plan of one edge type takes undirected=True when the graph holds each edge's reverse")
    mode, amount = _neg_sampling(link.pop("neg_sampling", None), amount)
    if isinstance(seed_edges, str):
        if edge_label is not None:
            raise errors.InvalidArgumentError(f"edge_label with seed_edges={seed_edges!r}: an edge split brings its own labels")
        index, edge_label, _ = store._edge_split(seed_edges, edge_type, "index")
        if mode == "triplet" and edge_label is not None:
            if not np.all(edge_label == 1):
                raise errors.InvalidArgumentError(f"seed_edges={seed_edges!r} with triplet negatives: the split holds labels other than 1; triplet negatives are drawn for positive seed edges only")
            edge_label = None
    else:
        a = seed_edges.detach().cpu().numpy() if _util.is_tensor(seed_edges) else np.asarray(seed_edges)
        if a.ndim != 2 or a.shape[0] != 2 or a.dtype.kind not in "iu":
            raise errors.InvalidArgumentError(f"seed_edges: want a (2, n) integer array of (src, dst) pairs or an edge split's name, got {a.dtype} of shape {a.shape}")
        index = a.astype(np.int64)
    n = index.shape[1]
    lab, core_labels = _link_labels(edge_label, mode, n)
    rows = [index[0], index[1]] + ([] if core_labels is None else [core_labels])
    request: Dict[str, Any] = {"edge_type": "" if edge_type is None else edge_type_key(edge_type), "labels": core_labels is not None,
                               **_options.request("link", {**link, "neg_sampling": mode or "", "amount": amount if mode else None}, "tierfs: plan_epochs")}
    if hetero and reverse_edge_types:
        request["reverse_edge_types"] = {edge_type_key(k): edge_type_key(v) for k, v in reverse_edge_types.items()}
    return request, np.ascontiguousarray(np.concatenate(rows)), (mode, amount, lab, core_labels)
