"""Store: the numpy/torch face of the C API (capi/tierfs.h). Made by :func:`tierfs.open`
(``_open.py``, which also opens distributed stores); the ids and strings it passes are converted
in ``_args.py``, samples copied out in ``_sample.py``. Its gathers are written in
``storegather.py`` and its placement calls in ``storeplace.py`` (functions of a store that the
class takes as its methods), its one-type sampler in ``sampler.py``.

Every method makes a constant number of native calls per batch (a gather is one ``tfs_gather``),
never one per node. ctypes releases the GIL during each call.
"""

from __future__ import annotations

import builtins
import json
import os
from ctypes import byref, c_int64, c_void_p
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native, _options, _util, errors
from ._args import IdsLike, _c_str, _Ids, _ids, _torch
from ._native import check, lib
from ._sample import Sample
from .epochs import PlannedEpochs
from .sampler import Sampler, typed_csc
from . import storeplace as _storeplace
from . import storegather as _storegather
from .storegather import _NUMPY_DTYPES, GatherFuture
from .seedshare import SeedShare
from .hetero import EdgeType, edge_type_key, edge_type_tuple

__all__ = ["Store", "Sampler", "Sample", "GatherFuture", "IdsLike"]


# Store -------------------------------------------------------------------------------------


def _reopen(path: str, options: Dict[str, Any]) -> "Store":
    return Store(path, **options)


class Store(_native.Closeable):
    """An open tierfs dataset: gather feature rows, read labels and splits, sample.

    Made by :func:`tierfs.open`. Safe to use from several threads at once (each call is one
    native call that releases the GIL). Close it with :meth:`close` or a ``with`` block; calls on
    a closed store raise :class:`tierfs.ClosedError`.

    Pickling a store pickles its path and options; unpickling opens the dataset again in the
    receiving process (its own caches), which is what ``spawn`` worker processes get.
    """

    @_options.document
    def __init__(
        self,
        path: Union[str, os.PathLike],
        host_cache: _util.SizeLike = None,
        gpu_cache: _util.SizeLike = None,
        device: Any = "cpu",
        **options: Any,
    ) -> None:
        """Opens the dataset directory ``path`` (use :func:`tierfs.open`, which documents the
        arguments and also opens distributed stores).

        ``options`` are the core's store options (``tfs_options_json("store")``), with
        ``host_cache`` and ``gpu_cache`` also taken by position:

            {store_options}
        """
        _native.check_process()
        self._handle: Optional[int] = None
        self._path = os.fspath(path)
        self._options = dict(
            host_cache=host_cache,
            gpu_cache=gpu_cache,
            device=str(device) if not isinstance(device, str) else device,
            **options,
        )
        self._device_type, self._device_index = _util.parse_device(device)
        if self._device_type == "cuda":
            torch = _torch()
            if not torch.cuda.is_available() or self._device_index >= torch.cuda.device_count():
                raise errors.NotSupportedError(
                    f"tierfs: device {device!r} requested, but torch sees "
                    f"{torch.cuda.device_count() if torch.cuda.is_available() else 'no'} CUDA device(s)"
                )
        self._host_cache_bytes = _util.parse_size(host_cache, "host_cache")
        gpu_cache_bytes = _util.parse_size(gpu_cache, "gpu_cache")
        request = _options.encode(
            dict(options, host_cache=self._host_cache_bytes, gpu_cache=gpu_cache_bytes),
            self._device_index if self._device_type == "cuda" else 0,
        )
        handle = c_void_p()
        check(lib.tfs_open_json(_c_str(self._path, "path"), request, byref(handle)))
        self._handle = handle.value
        if gpu_cache_bytes or options.get("gpu_topology"):
            gpu = self.stats().get("gpu", {})
            if not gpu.get("available"):
                import warnings

                warnings.warn(
                    f"tierfs: the GPU path is unavailable ({gpu.get('reason', 'unknown')}); "
                    "gpu_cache and gpu_topology are ignored and rows are served from the host",
                    RuntimeWarning,
                    stacklevel=3,
                )
        self._types: Optional[Dict[str, Any]] = None
        info = _native.StoreInfo()
        info.struct_size = _native.ctypes.sizeof(_native.StoreInfo)
        try:
            # The store's own node type (node_type): every call of this store without a node_type
            # names it, so a store of several types serves its first with features.
            self._nt_c = _c_str(self.node_type, "node_type")
            check(lib.tfs_store_info_get(self._handle, self._nt_c, byref(info)))
        except BaseException:
            self.close()
            raise
        self._num_nodes = int(info.num_nodes)
        self._num_edges = int(info.num_edges)
        self._dim = int(info.dim)
        self._row_bytes = int(info.row_bytes)
        self._num_classes = int(info.num_classes)
        self._dtype_name = info.dtype.decode()
        self._io_backend = info.io_backend.decode()
        if self._dtype_name == "" and self._dim == 0:  # a dataset without node features: gathers of its feature are refused
            self._np_dtype: Optional[np.dtype] = None
        elif self._dtype_name not in _NUMPY_DTYPES:
            self.close()
            raise errors.VersionError(f"tierfs: feature dtype {self._dtype_name!r} is not known to this package")
        else:
            self._np_dtype = _NUMPY_DTYPES[self._dtype_name]
        self._device_gather: Optional[bool] = None  # tfs_gather_device works? None: not tried
        self._cuda_ids: Any = None  # _cuda_ids_setup's answer, once asked
        self._manifest: Optional[dict] = None
        self._features: Optional[Dict[str, Dict[str, Any]]] = None

    # properties ------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The dataset directory."""
        return self._path

    @property
    def dim(self) -> int:
        """Feature elements per row."""
        return self._dim

    @property
    def row_bytes(self) -> int:
        """Bytes per feature row."""
        return self._row_bytes

    @property
    def num_classes(self) -> int:
        """Number of label classes (0 without labels)."""
        return self._num_classes

    @property
    def dtype(self) -> np.dtype:
        """numpy dtype of gathered rows: for bfloat16 ``ml_dtypes.bfloat16`` where ml_dtypes is
        installed, else ``uint16`` holding the bits. None for a dataset without node features."""
        return self._np_dtype

    @property
    def dtype_name(self) -> str:
        """The feature dtype as the dataset names it: "float32", "bfloat16", ... ("" for a dataset
        without node features)."""
        return self._dtype_name

    @property
    def torch_dtype(self):
        """torch dtype of gathered rows (``torch.bfloat16`` for bfloat16); None for a dataset
        without node features."""
        return getattr(_torch(), self._dtype_name) if self._dtype_name else None

    @property
    def device(self) -> str:
        """Where gathers return rows: "cpu" or "cuda:N"."""
        return "cpu" if self._device_type == "cpu" else f"cuda:{self._device_index}"

    @property
    def io_backend(self) -> str:
        """How disk reads are served: "io_uring" or "pread"."""
        return self._io_backend

    @property
    def host_cache_bytes(self) -> int:
        """The host tier budget in bytes."""
        return self._host_cache_bytes

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._handle is None

    @property
    def manifest(self) -> dict:
        """The dataset's manifest.json, parsed (read on first use)."""
        if self._manifest is None:
            with builtins.open(os.path.join(self._path, "manifest.json")) as f:
                self._manifest = json.load(f)
        return self._manifest

    @property
    def split_names(self) -> List[str]:
        """Names of the dataset's splits ("train", "val", "test" where present)."""
        return sorted(self.types["node_types"][self.node_type]["splits"])

    def _h(self) -> int:
        _native.check_process()
        h = self._handle
        if h is None:
            raise errors.ClosedError(f"tierfs: store {self._path} is closed")
        return h

    # output placement ------------------------------------------------------------------

    def _out_device(self, ids: _Ids):
        """None for numpy output, else the torch device of the output."""
        if ids.kind == "torch" and ids.device is not None and ids.device.type == "cuda":
            return ids.device
        if self._device_type == "cuda":
            return _torch().device("cuda", self._device_index)
        if ids.kind == "torch":
            return _torch().device("cpu")
        return None

    # gather ----------------------------------------------------------------------------

    gather = _storegather.gather
    _gather_feature = _storegather._gather_feature
    _gather_rows = _storegather._gather_rows
    _gather_typed = _storegather._gather_typed
    _gather_typed_device_ids = _storegather._gather_typed_device_ids
    gather_async = _storegather.gather_async
    _gather_for_future = _storegather._gather_for_future
    _check_out = _storegather._check_out
    _gather_host = _storegather._gather_host
    _gather_device_ids = _storegather._gather_device_ids
    _cuda_ids_setup = _storegather._cuda_ids_setup
    _gather_cuda = _storegather._gather_cuda

    # types ---------------------------------------------------------------------------------

    @property
    def types(self) -> Dict[str, Any]:
        """The dataset's node and edge types: ``{"node_types": {name: {"count", "features":
        {name: {...}}, "labels", "num_classes", "splits": {name: count}}}, "edge_types":
        {(src, rel, dst): {"count", "features": {...}}}, "typed": bool}``. A homogeneous dataset
        has one node type (and at most one edge type) and ``typed`` False; ``typed`` is True when
        the dataset's maker named its types (several types, a one-type ``HeteroData`` or GraphBolt
        dataset); ``task_metadata`` is what the dataset's maker said of the task of its splits
        (GraphBolt's task metadata, ``{}`` for none); ``dataset_name`` the name its maker gave the
        dataset (GraphBolt's ``dataset_name``, ``None`` for none)."""
        if self._types is None:
            h = self._h()
            raw = _native.read_json(lambda buf, cap, needed: lib.tfs_types_json(h, buf, cap, needed))
            node_types = {}
            for t in raw["node_types"]:
                t["features"] = {f.pop("name"): f for f in t["features"]}
                node_types[t.pop("name")] = t
            edge_types = {}
            for e in raw["edge_types"]:
                e["features"] = {f.pop("name"): f for f in e["features"]}
                edge_types[(e["src"], e["rel"], e["dst"])] = e
            self._types = {"node_types": node_types, "edge_types": edge_types, "typed": bool(raw["typed"]),
                           "task_metadata": raw.get("task_metadata") or {}, "dataset_name": raw.get("dataset_name")}
        return self._types

    @property
    def node_types(self) -> List[str]:
        """The dataset's node type names, in its order."""
        return list(self.types["node_types"])

    @property
    def edge_types(self) -> List[tuple]:
        """The dataset's edge types as PyG's ``(src, rel, dst)`` tuples, in its order."""
        return list(self.types["edge_types"])

    @property
    def node_type(self) -> str:
        """The node type this store's own calls (``gather`` without ``node_type``, ``labels``,
        ``split``) serve: the dataset's first node type with features (its first node type when
        none has features: a dataset ingested from edges alone)."""
        types = self.types["node_types"]
        return next((name for name, t in types.items() if any(f["default"] for f in t["features"].values())), next(iter(types)))

    @property
    def is_hetero(self) -> bool:
        """True for a dataset of named types (``types["typed"]``): several node or edge types, or
        one typed type (a one-type ``HeteroData`` or GraphBolt dataset keeps its names). Front
        ends serve it as PyG's ``HeteroData`` and GraphBolt's typed keys."""
        return self.types["typed"]

    def num_nodes(self, node_type: Optional[str] = None) -> int:
        """Number of nodes of ``node_type``; without one, of the only node type, or with several
        the total over the types (DGL's ``DGLGraph.num_nodes``). A type the dataset lacks is a
        :class:`tierfs.KeyNotFoundError` naming the types it has."""
        if node_type is None:
            return sum(int(t["count"]) for t in self.types["node_types"].values())
        return int(self._node_type_info(node_type)["count"])

    def num_edges(self, edge_type: Optional[EdgeType] = None) -> int:
        """Number of edges of ``edge_type`` (a ``(src, rel, dst)`` tuple or ``"src:rel:dst"``);
        without one, of the only edge type, or with several the total over the types (DGL's
        ``DGLGraph.num_edges``; 0 without topology). A type the dataset lacks is a
        :class:`tierfs.KeyNotFoundError` naming the types it has."""
        if edge_type is None:
            return sum(int(e["count"]) for e in self.types["edge_types"].values())
        return int(self._edge_type_info(edge_type_key(edge_type))["count"])

    def _node_type_info(self, node_type: Any) -> Dict[str, Any]:
        if not isinstance(node_type, str):
            raise errors.DTypeError(f"tierfs: node_type must be a str, got {type(node_type).__name__}")
        t = self.types["node_types"].get(node_type)
        if t is None:
            raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no node type {node_type!r} (it has {', '.join(self.types['node_types'])})")
        return t

    def _edge_type_info(self, key: str) -> Dict[str, Any]:
        e = self.types["edge_types"].get(edge_type_tuple(key))
        if e is None:
            raise errors.KeyNotFoundError(f"tierfs: dataset {self._path} has no edge type {edge_type_tuple(key)} (it has {', '.join(map(str, self.types['edge_types'])) or 'none'})")
        return e

    @property
    def features(self) -> Dict[str, Dict[str, Any]]:
        """The dataset's features by name, node features first: ``{"of": "node" | "edge",
        "dtype", "dim", "row_bytes", "rows", "scalar", "default"}``. ``default`` marks the
        feature :meth:`gather` serves (with the tiers); the others are read with
        ``gather(ids, feature=name)``; edge features are indexed by edge id (``Sample.e_id``).
        An edge feature named as a node feature (a typed store's names are unique within a type
        only) is left out: read it with ``gather(ids, edge_type=..., feature=name)``."""
        if self._features is None:
            feats = dict(self.types["node_types"][self.node_type]["features"])
            if len(self.types["edge_types"]) == 1:
                for name, f in next(iter(self.types["edge_types"].values()))["features"].items():
                    feats.setdefault(name, f)
            self._features = feats
        return self._features

    @property
    def feature_name(self) -> Optional[str]:
        """The name of the feature :meth:`gather` serves; None for a dataset without node
        features (PyG's ``Data`` without ``x``), which serves its topology, labels, splits and
        edge features, and whose ``gather(ids)`` raises :class:`tierfs.KeyNotFoundError`."""
        return next((name for name, f in self.features.items() if f["default"]), None)

    # labels and splits -----------------------------------------------------------------

    def labels(self, ids: IdsLike, node_type: Optional[str] = None) -> Any:
        """Labels (int64, -1 where unlabelled) of ``ids`` (of ``node_type``; None: the store's
        own), of the same kind as :meth:`gather`'s output. One native call."""
        h = self._h()
        ids_ = _ids(ids)
        n = ids_.array.shape[0]
        nt = self._nt_c if node_type is None else _c_str(node_type, "node_type")
        result = np.empty(n, dtype=np.int64)
        if n:
            check(lib.tfs_labels(h, nt, ids_.array.ctypes.data, n, result.ctypes.data))
        if ids_.scalar:
            result = result.reshape(())
        dev = self._out_device(ids_)
        if dev is None:
            return result
        t = _torch().from_numpy(result)
        return t if dev.type == "cpu" else t.to(dev)

    def split(self, name: str, node_type: Optional[str] = None) -> np.ndarray:
        """Node ids (int64 numpy array) of the split ``name`` ("train", "val", "test") of
        ``node_type`` (None: the store's own).

        Raises:
            KeyError (tierfs.KeyNotFoundError): the dataset has no such split.
        """
        h = self._h()
        nt = self._nt_c if node_type is None else _c_str(node_type, "node_type")
        nm = _c_str(name, "split name")
        count = c_int64(0)
        check(lib.tfs_split(h, nt, nm, None, 0, byref(count)))
        out = np.empty(count.value, dtype=np.int64)
        if count.value:
            check(lib.tfs_split(h, nt, nm, out.ctypes.data, count.value, byref(count)))
        return out

    # edge splits (link prediction) ---------------------------------------------------

    def edge_splits(self, edge_type: Optional[EdgeType] = None) -> Dict[str, Dict[str, Any]]:
        """The edge splits of ``edge_type`` (None: the dataset's only edge type) by name:
        ``{"count": seed edges, "labels": "int64" | "float32" (absent: none), "neg_per_seed":
        negative destinations per seed (0: none)}``; ``{}`` when it has none."""
        h = self._h()
        key = None if edge_type is None else _c_str(edge_type_key(edge_type), "edge type")
        return _native.read_json(lambda buf, cap, needed: lib.tfs_edge_splits_json(h, key, buf, cap, needed))

    def _edge_split(self, split: str, edge_type: Optional[EdgeType], part: str) -> tuple:
        info = self.edge_splits(edge_type).get(split) if isinstance(split, str) else None
        if info is None:
            # Let the core name what is missing (TFS_ENOENT lists the splits the type has).
            info = {"count": 0}
        key = None if edge_type is None else _c_str(edge_type_key(edge_type), "edge type")
        n = int(info["count"])
        index = labels = neg = None
        if part == "index":
            index = np.empty((2, n), dtype=np.int64)
            if info.get("labels"):
                labels = np.empty(n, dtype=np.dtype(info["labels"]))
        else:
            k = int(info.get("neg_per_seed", 0))
            neg = np.empty((n, k), dtype=np.int64) if k else np.empty((n, 1), dtype=np.int64)
        check(lib.tfs_edge_split_copy(self._h(), key, _c_str(split, "split name"), n,
                                      None if index is None else index.ctypes.data,
                                      None if labels is None else labels.ctypes.data,
                                      None if neg is None else neg.ctypes.data))
        return index, labels, neg

    def edge_split(self, split: str, edge_type: Optional[EdgeType] = None) -> tuple:
        """The seed edges of split ``split`` ("train", "val", "test") of ``edge_type`` (PyG's
        tuple or ``"src:rel:dst"``; None: the dataset's only edge type) as PyG's link loaders
        take them: ``(edge_label_index, edge_label)``, torch tensors — ``edge_label_index`` of
        shape ``[2, n]`` (int64; row 0 ids of the source node type, row 1 of the destination
        type), ``edge_label`` of shape ``[n]`` in the dtype it was ingested as (float32 or
        int64), or None when the split has no labels (every seed a positive, as OGB's splits).
        ``tierfs.pyg.LinkNeighborLoader(data, edge_label_index=..., edge_label=...)`` takes them
        as they are.

        Raises:
            KeyError (tierfs.KeyNotFoundError): no such split or edge type.
        """
        index, labels, _ = self._edge_split(split, edge_type, "index")
        torch = _torch()
        return torch.from_numpy(index), None if labels is None else torch.from_numpy(labels)

    def edge_split_negatives(self, split: str, edge_type: Optional[EdgeType] = None) -> Any:
        """The negative destination candidates of split ``split`` of ``edge_type`` (OGB's
        ``target_node_neg``): an int64 torch tensor ``[n, k]``, row i seed edge i's k candidates
        (ids of the destination node type).

        Raises:
            KeyError (tierfs.KeyNotFoundError): no such split or edge type, or the split has no
                negatives.
        """
        _, _, neg = self._edge_split(split, edge_type, "neg")
        return _torch().from_numpy(neg)

    # sampling --------------------------------------------------------------------------

    def sampler(
        self,
        fanouts: Union[Sequence[int], Dict[Any, Sequence[int]]],
        replace: bool = False,
        seed: int = 0,
        workers: int = 0,
        weight: Optional[str] = None,
        disjoint: bool = False,
        time: Optional[str] = None,
        temporal_strategy: str = "uniform",
    ) -> "Sampler":
        """A k-hop neighbor sampler over this store's topology: uniform, or by edge weight.

        Args:
            fanouts: neighbors to sample per node, per hop (e.g. ``[25, 10]``; the graph's only
                edge type); -1 takes every neighbor. A dict ``{edge type: [per hop]}`` (PyG's
                dict ``num_neighbors``; every edge type of the dataset, one length) samples
                typed graphs: its samples are dicts by type (:class:`tierfs.Sample`).
            replace: sample with replacement.
            seed: each :meth:`Sampler.sample` call uses ``seed + call number``, so batches
                differ but runs repeat.
            workers: goroutines choosing neighbors (0: number of CPUs). Results do not depend
                on it.
            weight: an edge feature of one value an edge (PyG's ``weight_attr``, e.g.
                ``"edge_weight"``): the edge types that have it draw neighbors in proportion to
                it, as pyg-lib does (without replacement: Efraimidis–Spirakis keys, weight-0
                edges only after every other; with replacement: independent draws; a list no
                larger than the fanout whole), on the host; the others uniformly. Weights are
                read once, when the sampler is made.
            disjoint: every seed its own tree (PyG's ``disjoint=True``): a node reached from two
                seeds (or a seed given twice) is a node of each, and samples carry ``batch``, the
                seed index of every node (a dict per node type, PyG's heterogeneous layout, for
                typed samples). On the host, samples of nodes only (not
                :meth:`Sampler.sample_from_edges`).
            time: a node or edge feature of one integer a row (PyG's ``time_attr``): samples in
                time, as pyg-lib does, and so disjoint. A node feature is node-level time (a
                tree takes a neighbor whose time is at most the tree's seed time), an edge
                feature edge-level time (an edge whose time is); with several types, an edge
                type whose source type (or whose edges) lack the feature draws as without time,
                as pyg-lib. The seed times are :meth:`Sampler.sample`'s ``seed_time``, by default
                the seeds' own node times. A node's qualifying neighbors come in time order
                (ties in edge order). With disjoint's limits (on the host, nodes only), not with
                ``weight``; times are read once, when the sampler is made.
            temporal_strategy: ``"uniform"`` draws uniformly among a node's qualifying
                neighbors; ``"last"`` takes the latest ``fanout`` of them (with ``replace``,
                ``fanout`` draws among those), as pyg-lib.
        """
        return Sampler(self, fanouts, replace=replace, seed=seed, workers=workers, weight=weight, disjoint=disjoint, time=time,
                       temporal_strategy=temporal_strategy)

    @property
    def _loader_share(self) -> SeedShare:
        """What a :class:`tierfs.Loader` asks this store about its seeds and the order of its
        gathers (:mod:`tierfs.seedshare`): here one process's, every seed."""
        return SeedShare(self)

    def plan_epochs(self, fanouts: Any, batch_size: int, epochs: int, seeds: Any = None, **options: Any) -> Any:
        """Plans ``epochs`` epochs (DiskGNN's packed reads; docs/planned.md) and opens the plan.

        The plan covers the training epochs ``[first_epoch, first_epoch + epochs)``: planned
        epoch k is epoch ``first_epoch + k`` (its order and its batches' sampling seeds derive
        from that number), so plans of consecutive ranges never repeat an epoch.

        Each epoch permutes ``seeds`` (default: the "train" split) by ``shuffle_seed`` in the
        core, samples every batch with a seed derived from ``seed``, and packs the rows of its
        sample that no memory tier holds into ``plan_dir`` (default: a new temporary directory,
        removed when the plan is closed).
        A plan already there for the same inputs is reused; a stale or missing one is made
        again (``replan=False`` raises instead). ``epochs`` is 1 to 1024. ``disk_budget`` (bytes or
        "20GB") plans as many epochs as fit, at least one; without it, epochs the size of the first
        that would not fit the free disk are refused. ``place_tiers`` first refills the memory tiers with the rows
        the planned epochs read most (the best static placement for exactly these batches; it
        costs one sampling pass, again when the plan is reopened). Returns a
        :class:`tierfs.PlannedEpochs`.

        On a dataset of several types, ``fanouts`` as ``{edge type: [per hop]}`` (every edge
        type, as :meth:`sampler` takes them) plans batches of ``seeds`` of ``node_type`` (default
        seeds: its "train" split) sampled as a :class:`tierfs.Sampler` of those fanouts and
        ``seed`` samples them (batch b of planned epoch e: its first sample with the seed the core derives from
        ``seed``, e and b), packing per batch the rows of every node type with features.

        With ``seed_edges`` (a ``(2, n)`` array or tensor of (src, dst) pairs, or the name of a
        stored edge split, its labels with it; on a heterogeneous dataset ``(edge type, either)``)
        the batches are of seed edges (link prediction): each epoch permutes them, and batch b of
        planned epoch e is what ``sampler(fanouts, seed=s).sample_from_edges(...)`` gives for its
        seed edges with ``edge_label``, ``neg_sampling``, ``amount``, ``strict``,
        ``exclude_seed_edges`` and ``undirected`` (``reverse_edge_types`` on a heterogeneous
        dataset), ``s`` the seed the core derives from ``seed``, e and b: the same negatives,
        subgraph and rows. ``plan.seeds(e, b)`` are then the positions of the batch's seed edges.

        ``seed_orders`` (instead of ``seeds``: ``epochs`` arrays of one length) gives each
        planned epoch's seed nodes in their order (no shuffle: a distributed rank's share of each
        epoch). ``elsewhere`` (ids, or ``{node type: ids}``) are rows another process serves (a
        distributed rank's rows owned by its peers): never packed, and left unwritten by the
        plan's host gathers (``gather_device`` writes them only where a memory tier holds them)
        for the caller to fill; a plan made with another set is stale.

        ``pack_method`` says how planning reads the rows it packs (docs/planned.md, "Packing: a
        scan of the feature file"): ``"scan"`` (each window's rows in one ascending pass over the
        feature files, large reads), ``"random"`` (a read a row, batch by batch), or None / ``""``
        to choose per window by the disk model. ``pack_memory`` (bytes or "256MB"; None or 0: 1
        GiB) bounds the distinct rows of a window; planning holds two, and a scan reads the feature
        files once a window. Neither changes the packed bytes nor the plan's fingerprint (a plan
        made with other values is reused); ``report["pack_method"]`` and
        ``report["pack_windows"]`` say what planning did. Another method, or a negative or
        unparsable size, raises :class:`tierfs.InvalidArgumentError` naming the option.

        The keyword options are the core's plan options (one table, ``planned.EpochOptions``,
        which ``tfs_options_json("epochs")`` hands over: the same names, defaults and help as
        ``tierfs plan-epochs``' flags; a name of no option raises
        :class:`tierfs.InvalidArgumentError` listing them):

            {epochs_options}

        and with ``seed_edges`` (beside ``edge_label``) the link options
        (``tfs_options_json("link")``, as :meth:`tierfs.Sampler.sample_from_edges` takes them;
        ``neg_sampling`` also a PyG ``NegativeSampling``):

            {link_options}
        """
        return PlannedEpochs(self, fanouts, batch_size, epochs, seeds=seeds, **options)

    _options.document(plan_epochs, "epochs", skip=("batch_size", "epochs"))
    _options.document(plan_epochs, "link")

    def csc(self, chunk_size: int = 1 << 20, edge_type: Optional[EdgeType] = None) -> tuple:
        """The whole topology as CSC: ``(indptr, indices)``, int64 numpy arrays, the
        in-neighbors of node v being ``indices[indptr[v]:indptr[v+1]]`` in stored order.
        With ``edge_type``, that edge type's: CSC over its dst type, indices of its src type,
        position = edge id (one native sampling call over every dst node).

        Cost: materializes all edges in memory (8 bytes per edge plus 8 per node, twice that
        while it is built), through sampling every neighbor of ``chunk_size`` nodes per native
        call. Meant for small graphs, tests and conversions; training samples instead.
        """
        if edge_type is not None:
            return typed_csc(self, edge_type)
        self._h()
        n = self._num_nodes
        indptr = np.zeros(n + 1, dtype=np.int64)
        parts = []
        s = self.sampler([-1])
        try:
            for lo in range(0, n, chunk_size):
                hi = min(n, lo + chunk_size)
                sample = s.sample(np.arange(lo, hi, dtype=np.int64))
                indptr[lo + 1 : hi + 1] = np.bincount(sample.col, minlength=hi - lo)
                parts.append(sample.nodes[sample.row])
        finally:
            s.close()
        np.cumsum(indptr, out=indptr)
        indices = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        return indptr, indices

    # placement, stats, mount -----------------------------------------------------------

    place = _storeplace.place
    hottest = _storeplace.hottest
    profile_reads = _storeplace.profile_reads
    place_ids = _storeplace.place_ids
    _hotness_array = _storeplace._hotness_array
    advise = _storeplace.advise

    def stats(self) -> Dict[str, Any]:
        """Counters since open, as a dict: ``gathers``, ``rows_gathered``, per-tier
        ``rows_held`` / ``hits`` / ``bytes_served`` (``tiers``), disk IO (``io``: ``requests``,
        ``reads``, ``bytes_requested``, ``bytes_read``, latency histogram), ``samples``. On a
        store of several node types with features these are the whole store's (summed over the
        types), and ``node_types`` holds each type's own."""
        h = self._h()
        return _native.read_json(lambda buf, cap, needed: lib.tfs_stats_json(h, buf, cap, needed))

    def mount(self, path: Union[str, os.PathLike]) -> None:
        """Mounts a read-only FUSE view of this store at ``path``: manifest.json, live
        stats.json, tiers/{gpu,host,ssd}/, nodes/<id>/..., and embeddings/<node_type>/ for each
        :class:`tierfs.Embedding` of this dataset open in the process (its page cache, dirty
        pages, checkpoint generation, rows); unmounted by :meth:`unmount` or :meth:`close`."""
        check(lib.tfs_mount(self._h(), _c_str(os.fspath(path), "mount path")))

    def unmount(self) -> None:
        """Unmounts what :meth:`mount` mounted."""
        check(lib.tfs_unmount(self._h()))

    # lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the store (unmounting it if mounted) after calls in flight finish. Later calls
        raise :class:`tierfs.ClosedError`; closing again does nothing."""
        h, self._handle = self._handle, None
        if h is not None and not _native._forked:
            check(lib.tfs_close(h))

    def __reduce__(self):
        if self._handle is None:
            raise errors.ClosedError(f"tierfs: cannot pickle the closed store {self._path}")
        return (_reopen, (self._path, self._options))

    def __repr__(self) -> str:
        if self._handle is None:
            return f"<tierfs.Store {self._path!r} closed>"
        parts = [
            f"nodes={self._num_nodes}",
            f"edges={self._num_edges}",
            f"dim={self._dim}",
            f"dtype={self._dtype_name}",
        ]
        if self._num_classes:
            parts.append(f"classes={self._num_classes}")
        parts += [
            f"host_cache={_util.format_bytes(self._host_cache_bytes)}",
            f"device={self.device}",
            f"io={self._io_backend}",
        ]
        return f"<tierfs.Store {self._path!r} " + " ".join(parts) + ">"
