"""DGL integration of tierfs: features and sampled blocks served from a tierfs Store.

Two DGL APIs are covered.

GraphBolt (``dgl.graphbolt``)
    :class:`Feature` is a ``gb.Feature`` reading one column of a store (the node features, or the
    labels); :class:`FeatureStore` is a ``gb.BasicFeatureStore`` holding
    ``("node", None, "feat")`` and, when the dataset has labels, ``("node", None, "label")``. Hand
    it to ``gb.FeatureFetcher`` / ``datapipe.fetch_feature(store, node_feature_keys=["feat"])``.
    ``Feature.read_async`` / ``read_async_num_stages`` follow the staged protocol of GraphBolt 2.4's
    ``FeatureFetcher`` (the read runs on a worker thread, overlapped with the rest of the
    pipeline); older GraphBolt versions simply call ``read``. :class:`Dataset` is GraphBolt's
    ``Dataset`` over a tierfs dataset (what ``gb.OnDiskDataset(...).load()`` gives): ``feature``,
    ``graph``, ``all_nodes_set`` and ``tasks`` — a node classification task of the stored node
    splits and a link prediction task of the stored edge splits (``seeds`` / ``labels`` /
    ``indexes`` item sets, as GraphBolt link tasks hold them; ``tierfs.from_graphbolt`` stores
    a GraphBolt link task's sets there).

Classic (``dgl.dataloading``)
    :class:`NeighborSampler` is a ``dgl.dataloading.BlockSampler`` that samples with tierfs (so the
    topology may stay on disk) and returns ``(input_nodes, output_nodes, blocks)`` like
    ``dgl.dataloading.NeighborSampler``; :class:`FeatureStorage` is a ``dgl.storages.FeatureStorage``
    (``fetch(indices, device, pin_memory=False)``); :class:`GraphStorage` stands for the graph in
    ``dgl.dataloading.DataLoader`` so that it prefetches features and labels from the store, and
    :class:`DataLoader` is a small self-contained batch iterator that samples and gathers the next
    batch on a background thread while the current one trains.

Heterogeneous graphs (several node or edge types, ``store.is_hetero``)
    :class:`FeatureStore` keys every column as GraphBolt does: ``("node", ntype, name)`` for each
    node type's features and labels, ``("edge", "src:rel:dst", name)`` for edge features (by
    edge id). :class:`NeighborSampler` takes DGL's per-layer fanouts (an int, or a dict over
    every edge type) and seeds ``{ntype: ids}`` of one node type, and returns heterogeneous
    blocks (:func:`hetero_sample_to_blocks`: ``dgl.NID`` per node type, ``dgl.EID`` per edge
    type, laid out as ``dgl.to_block`` lays out the sampled frontier); :class:`DataLoader`
    takes ``{ntype: ids or split}`` and fills each type's default feature and the seeds'
    labels.

Link prediction (homogeneous stores; docs/dgl-link.md)
    :func:`as_edge_prediction_sampler` is DGL's, for a tierfs :class:`NeighborSampler`: it
    returns an :class:`EdgePredictionSampler`, which samples in tierfs's core (no graph in
    memory) and returns DGL's ``(input_nodes, pair_graph, neg_graph, blocks)`` for seed edges
    given as pairs, an ``(n, 2)`` tensor (GraphBolt's ``seeds``) or edge ids of a DGLGraph;
    negatives are DGL's ``Uniform(k)``, ``exclude`` is ``"self"`` or ``"reverse_id"`` (by pair,
    after the draw). :class:`LinkDataLoader` batches seed pairs and gathers their features;
    :meth:`EdgePredictionSampler.sample_minibatch` is a GraphBolt stage filling a ``gb.MiniBatch``
    of ``seeds`` (+ ``labels``) as GraphBolt's negative sampler, neighbor sampler and
    ``exclude_seed_edges`` do. :class:`NeighborSampler` also works inside DGL's own
    ``dgl.dataloading.as_edge_prediction_sampler`` over an in-memory graph
    (:func:`dgl_graph`): it drops the ``exclude_eids`` DGL hands it from every block.

Whole topology, for graphs that fit in memory: :func:`sampling_graph` (GraphBolt's
``FusedCSCSamplingGraph``, to use GraphBolt's own samplers with tierfs features) and
:func:`dgl_graph`.

Sampling semantics. ``fanouts`` follow DGL's order: ``fanouts[i]`` is for GNN layer ``i`` (input
layer first), so ``fanouts[-1]`` is applied to the seeds; tierfs itself is handed the reversed
list. tierfs samples each node once, at the hop where it is first reached (the seeds at hop 0),
and numbers the nodes seeds first, then the nodes each hop reached, so the nodes of hops 0..h are
a prefix of the sample's nodes. The block of layer ``i`` (``h = L-1-i``) has the nodes of hops
0..h as dst nodes and those of hops 0..h+1 as src nodes (dst nodes are a prefix of src nodes, as
DGL requires). With ``cumulative=True`` (the default) its edges are those sampled at hops 0..h: a
node keeps the neighbors it was sampled with in every layer, as PyG's NeighborLoader computes over
one sampled subgraph. With ``cumulative=False`` a block holds only the edges of its own hop, so
dst nodes reached before hop h have no in-edges there. Unlike ``dgl.dataloading.NeighborSampler``,
a node's neighbors are not drawn again for each layer.

Edge ids. Each block's ``edata[dgl.EID]`` holds its edges' positions in the input the dataset
was ingested from (the edge list of each edge type, as DGL numbers the edges of
``dgl.graph((src, dst))`` of it), the ``e_id`` :mod:`tierfs.pyg` batches carry; ``exclude_eids``,
:func:`dgl_graph`'s edges, the ``ORIGINAL_EDGE_ID`` of :func:`sampling_graph` and the edge
features of :class:`FeatureStore` use the same numbering. tierfs's own edge ids (positions in the
CSC it builds: ``store.csc()``'s order, ``Sample.e_id``, the rows of ``store.gather(ids,
feature=<edge feature>)``) stay reachable: :func:`csc_edge_ids` maps DGL's ids to them,
:func:`dgl_edge_ids` back, and ``sample_to_blocks(sample)`` without ``store`` keeps them. Where
no numbering follows the input — an undirected ingest (both directions of input edge i stored
under i), dropped self loops — DGL's ids are tierfs's CSC positions, consistently everywhere;
where the input order is unknown (``dedup``, synthetic graphs) or already by destination the two
are the same.

Processes: the tierfs library runs a Go runtime, which does not survive ``fork``. Worker
processes of ``dgl.dataloading.DataLoader`` / ``torch.utils.data.DataLoader`` must be started with
``multiprocessing_context="spawn"`` (the sampler pickles; each worker reopens the dataset) or not
at all (``num_workers=0``); a forked worker raises ``tierfs.ForkedProcessError``. GraphBolt's
``gb.DataLoader`` runs the feature fetcher in the main process, so tierfs features work with any
``num_workers`` there as long as the sampling stages do not call tierfs.

Tested with DGL 2.1.0 (the newest DGL wheel PyPI has for Linux) and torch 2.2.1.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import weakref
from collections.abc import Mapping

import numpy as np
import torch

import dgl
import dgl.dataloading
import dgl.storages

import tierfs
from tierfs._args import _fanouts
from tierfs import edgeids
from tierfs.hetero import edge_type_tuple
from tierfs.pipeline import MAX_DEPTH

try:  # GraphBolt needs extra packages (torchdata, pydantic, ...) and a build for this torch.
    import dgl.graphbolt as gb
except Exception as _exc:  # pylint: disable=broad-except
    gb = None
    _GRAPHBOLT_ERROR = _exc
else:
    _GRAPHBOLT_ERROR = None

__all__ = [
    "Feature",
    "FeatureStore",
    "FeatureStorage",
    "GraphStorage",
    "NeighborSampler",
    "DataLoader",
    "EdgePredictionSampler",
    "as_edge_prediction_sampler",
    "LinkDataLoader",
    "Dataset",
    "Task",
    "ReadOnlyError",
    "sample_to_blocks",
    "hetero_sample_to_blocks",
    "sampling_graph",
    "dgl_graph",
    "dgl_edge_ids",
    "csc_edge_ids",
    "FEATURE",
    "LABEL",
]

FEATURE = "feat"
LABEL = "label"

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
}


class ReadOnlyError(tierfs.NotSupportedError):
    """Raised by ``update``: a tierfs dataset is read-only once ingested (a
    ``tierfs.NotSupportedError``, so also a ``NotImplementedError`` as GraphBolt's base raises)."""


# --------------------------------------------------------------------------------------------
# helpers


def _ids_tensor(ids) -> torch.Tensor:
    """ids (torch tensor on any device, numpy array, list, range, scalar) as a 1-D int64 CPU tensor."""
    if isinstance(ids, torch.Tensor):
        t = ids.detach()
        if t.dtype == torch.bool:
            raise tierfs.DTypeError("tierfs.dgl: ids must be integer node ids, not a boolean mask")
        if t.is_floating_point() or t.is_complex():
            raise tierfs.DTypeError(f"tierfs.dgl: ids must be integers, got dtype {t.dtype}")
        t = t.to("cpu", torch.int64)
    else:
        a = np.asarray(ids)
        if a.dtype == np.bool_:
            raise tierfs.DTypeError("tierfs.dgl: ids must be integer node ids, not a boolean mask")
        if a.size and a.dtype.kind not in "iu":
            raise tierfs.DTypeError(f"tierfs.dgl: ids must be integers, got dtype {a.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))
    return t.reshape(-1).contiguous()


def _as_tensor(values, dtype_name: str | None = None) -> torch.Tensor:
    """A store's answer (torch tensor or numpy array) as a torch tensor."""
    if isinstance(values, torch.Tensor):
        return values
    a = np.asarray(values)
    if dtype_name == "bfloat16" and a.dtype != np.float32:
        # numpy has no bfloat16: the bits arrive as 2-byte integers or raw void / ml_dtypes.
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _dtype_name(store) -> str:
    """The feature dtype's name ("float32", "bfloat16", ...); ``Store.dtype`` is the numpy dtype
    of gathered rows, which is uint16 for bfloat16."""
    return str(getattr(store, "dtype_name", None) or store.dtype)


def _torch_dtype(store) -> torch.dtype:
    name = _dtype_name(store)
    try:
        return _TORCH_DTYPES[name]
    except KeyError:
        raise tierfs.Error(f"tierfs.dgl: feature dtype {name!r} has no torch equivalent") from None


def _check_kind(kind: str) -> str:
    if kind not in ("feat", "label"):
        raise tierfs.InvalidArgumentError(f"tierfs.dgl: kind must be 'feat' or 'label', got {kind!r}")
    return kind


def _read_rows(store, kind: str, ids: torch.Tensor) -> torch.Tensor:
    """Rows of ids (1-D int64 CPU tensor) of the store's features (kind 'feat') or labels."""
    n = ids.numel()
    if kind == "label":
        if n == 0:
            return torch.empty((0,), dtype=torch.int64)
        return _as_tensor(store.labels(ids)).reshape(n).to(torch.int64)
    if n == 0:
        return torch.empty((0, int(store.dim)), dtype=_torch_dtype(store))
    return _as_tensor(store.gather(ids), _dtype_name(store)).reshape(n, int(store.dim))


def _all_ids(store) -> torch.Tensor:
    return torch.arange(int(store.num_nodes), dtype=torch.int64)


def _is_hetero(store) -> bool:
    return bool(getattr(store, "is_hetero", False))


_NUMBERED = weakref.WeakKeyDictionary()  # store -> {edge type (None: the one): bool}
_NUMBERED_LOCK = threading.Lock()
_NUMBERED_CHUNK = 1 << 22


def _input_numbered(store, edge_type=None) -> bool:
    """Whether DGL's edge ids of ``edge_type`` are positions in the input (the input order numbers
    the edges: ingest's ``input_edge_id`` is a permutation of [0, count)), not tierfs's CSC
    positions. False where the dataset has no ``input_edge_id`` (the orders agree), after an
    undirected ingest (both directions stored under one input position) and where ingest dropped
    input edges (self loops): there no numbering of the edges follows the input. Ingest writes
    either a permutation or positions some of which repeat or are skipped, so the largest being
    count-1 tells them apart; read once per store and edge type (8 bytes an edge)."""
    key = None if edge_type is None else edge_type_tuple(edge_type)
    with _NUMBERED_LOCK:
        known = _NUMBERED.setdefault(store, {})
        if key in known:
            return known[key]
    info = edgeids._edge_feature_info(store, key)
    numbered = False
    if edgeids.INPUT_EDGE_ID in info:
        count = int(info[edgeids.INPUT_EDGE_ID]["rows"])
        top = -1
        for lo in range(0, count, _NUMBERED_CHUNK):
            ids = edgeids.input_edge_ids(store, torch.arange(lo, min(count, lo + _NUMBERED_CHUNK)), key)
            top = max(top, int(ids.max()))
        numbered = top == count - 1
    with _NUMBERED_LOCK:
        _NUMBERED.setdefault(store, {})[key] = numbered
    return numbered


def dgl_edge_ids(store, edge_ids, edge_type=None) -> torch.Tensor:
    """tierfs's edge ids (CSC positions: ``store.csc()``'s order, ``Sample.e_id``, the rows of
    ``store.gather(ids, feature=<edge feature>)``) of ``edge_type`` (None: the store's one) as
    DGL's edge ids, the ``dgl.EID`` of this module's blocks (see "Edge ids" in the module
    docstring). A 1-D int64 CPU tensor. :func:`csc_edge_ids` is the inverse."""
    ids = _ids_tensor(edge_ids)
    if ids.numel() == 0 or not _input_numbered(store, edge_type):
        return ids
    key = None if edge_type is None else edge_type_tuple(edge_type)
    return _ids_tensor(edgeids.input_edge_ids(store, ids, key))


def csc_edge_ids(store, edge_ids, edge_type=None) -> torch.Tensor:
    """DGL's edge ids (``dgl.EID`` of this module's blocks, :func:`dgl_graph`'s edges) of
    ``edge_type`` as tierfs's (CSC positions): the inverse of :func:`dgl_edge_ids`. Reads the
    whole input order of the edge type (8 bytes an edge) on every call where the two differ."""
    ids = _ids_tensor(edge_ids)
    if not _input_numbered(store, edge_type):
        return ids
    key = None if edge_type is None else edge_type_tuple(edge_type)
    inverse = edgeids._input_to_csc(store, key)
    return _ids_tensor(edgeids._map_input_ids(inverse, ids, "csc_edge_ids", "tierfs.dgl"))


def _input_order(store, edge_type, count: int):
    """Every edge's DGL edge id by CSC position (``order[csc] = dgl id``), or None where the two
    are the same numbering."""
    if count == 0 or not _input_numbered(store, edge_type):
        return None
    return dgl_edge_ids(store, torch.arange(count), edge_type)


_UNREAD = object()


class _TypedColumn:
    """One column of a heterogeneous store: a node type's feature (by name; None: its default)
    or labels, or an edge type's feature by edge id."""

    def __init__(self, store, kind: str, node_type, edge_type, name):
        if (node_type is None) == (edge_type is None):
            raise tierfs.InvalidArgumentError("tierfs.dgl: a typed column has a node_type or an edge_type, not both")
        self.store, self.kind, self.node_type, self.name = store, kind, node_type, name
        self._inverse = _UNREAD  # edge features: DGL's edge id -> CSC position (None: the same), read on first use
        self.edge_type = None if edge_type is None else edge_type_tuple(edge_type)
        types = store.types
        if self.edge_type is not None:
            if kind == LABEL:
                raise tierfs.InvalidArgumentError("tierfs.dgl: edge types have no labels")
            info = types["edge_types"].get(self.edge_type)
            if info is None:
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: the store has no edge type {self.edge_type}")
            self.count = int(info["count"])
        else:
            info = types["node_types"].get(node_type)
            if info is None:
                raise tierfs.KeyNotFoundError(
                    f"tierfs.dgl: the store has no node type {node_type!r} (it has {', '.join(types['node_types'])})"
                )
            self.count = int(info["count"])
        if kind == LABEL:
            if not info.get("labels"):
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: node type {node_type!r} has no labels")
            self.info = {"dtype": "int64", "scalar": True, "num_classes": int(info.get("num_classes") or 0)}
            return
        feats = info["features"]
        if name is None:
            name = next((n for n, f in feats.items() if f.get("default")), None) or next(iter(feats), None)
        if name not in feats:
            what = f"edge type {self.edge_type}" if self.edge_type else f"node type {node_type!r}"
            raise tierfs.KeyNotFoundError(f"tierfs.dgl: {what} has no feature {name!r} (it has {', '.join(feats) or 'none'})")
        self.name = name
        self.info = feats[name]

    def metadata(self) -> dict:
        meta = {"dtype": self.info["dtype"]}
        if self.kind == LABEL:
            meta["num_classes"] = self.info["num_classes"]
        return meta

    def size(self) -> torch.Size:
        if self.kind == LABEL or self.info.get("scalar"):
            return torch.Size([])
        return torch.Size([int(self.info["dim"])])

    def read(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows of ids (1-D int64 CPU tensor)."""
        n = ids.numel()
        if self.kind == LABEL:
            if n == 0:
                return torch.empty((0,), dtype=torch.int64)
            return _as_tensor(self.store.labels(ids, node_type=self.node_type)).reshape(n).to(torch.int64)
        dtype = _TORCH_DTYPES.get(self.info["dtype"])
        if dtype is None:
            raise tierfs.Error(f"tierfs.dgl: feature dtype {self.info['dtype']!r} has no torch equivalent")
        shape = (n,) + tuple(self.size())
        if n == 0:
            return torch.empty(shape, dtype=dtype)
        if self.edge_type is not None:
            # Rows are read by DGL's edge ids: through the inverse of the input order where those
            # are input positions.
            if self._inverse is _UNREAD:
                numbered = _input_numbered(self.store, self.edge_type)
                self._inverse = edgeids._input_to_csc(self.store, self.edge_type) if numbered else None
            ids = edgeids._map_input_ids(self._inverse, ids, f"edge type {self.edge_type} feature {self.name!r}", "tierfs.dgl")
            rows = self.store.gather(ids, edge_type=self.edge_type, feature=self.name)
        else:
            rows = self.store.gather(ids, node_type=self.node_type, feature=self.name)
        return _as_tensor(rows, self.info["dtype"]).reshape(shape)


_executor = None
_executor_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The worker threads of read_async (tierfs gathers release the GIL)."""
    global _executor  # pylint: disable=global-statement
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="tierfs-dgl"
            )
        return _executor


_side_streams = {}


def _side_stream(device: torch.device):
    with _executor_lock:
        s = _side_streams.get(device)
        if s is None:
            s = _side_streams[device] = torch.cuda.Stream(device=device)
        return s


class _Future:
    """What the last stage of read_async yields: ``wait()`` returns the values (call it once)."""

    def __init__(self, future: concurrent.futures.Future, device: torch.device | None):
        self._future = future
        self._device = device

    def wait(self) -> torch.Tensor:
        values = self._future.result()
        if self._device is not None and values.device != self._device:
            values = values.to(self._device)
        self._future = None  # drop the reference; waiting twice is undefined, as in GraphBolt
        return values


# --------------------------------------------------------------------------------------------
# GraphBolt

if gb is not None:

    class Feature(gb.Feature):
        """One column of a tierfs store as a GraphBolt feature: the node features
        (``kind="feat"``, rows of ``store.dim`` values of ``store.dtype``) or the labels
        (``kind="label"``, int64, -1 for unlabelled nodes). Read-only.

        In a heterogeneous store, ``node_type`` names the type (``name``: one of its features;
        None: its default) and ``edge_type`` (``(src, rel, dst)`` or ``"src:rel:dst"``) with
        ``name`` an edge feature, read by edge id (``dgl.EID``: the edge's position in the
        input); ids are local to the type.

        ``read(ids)`` answers on the ids' device when they are on a GPU, else on the store's
        device (the CPU unless the store was opened with ``device="cuda:N"``).
        """

        def __init__(
            self,
            store,
            kind: str = FEATURE,
            metadata: dict | None = None,
            *,
            node_type: str | None = None,
            edge_type=None,
            name: str | None = None,
        ):
            super().__init__()
            self._store = store
            self._kind = _check_kind(kind)
            self._column = None
            if node_type is not None or edge_type is not None:
                self._column = _TypedColumn(store, kind, node_type, edge_type, name)
                meta = self._column.metadata()
            else:
                if kind == "label" and not int(store.num_classes):
                    raise tierfs.KeyNotFoundError("tierfs.dgl: this dataset has no labels")
                meta = {"dtype": "int64"} if kind == "label" else {"dtype": _dtype_name(store)}
                if kind == "label":
                    meta["num_classes"] = int(store.num_classes)
            meta.update(metadata or {})
            self._metadata = meta

        @property
        def store(self):
            """The tierfs store read from."""
            return self._store

        @property
        def kind(self) -> str:
            """'feat' or 'label'."""
            return self._kind

        @property
        def node_type(self) -> str | None:
            """The node type of a column of a heterogeneous store (None otherwise)."""
            return None if self._column is None else self._column.node_type

        @property
        def edge_type(self):
            """The edge type ``(src, rel, dst)`` of an edge feature (None otherwise)."""
            return None if self._column is None else self._column.edge_type

        def _read(self, ids_cpu: torch.Tensor) -> torch.Tensor:
            if self._column is not None:
                return self._column.read(ids_cpu)
            return _read_rows(self._store, self._kind, ids_cpu)

        def read(self, ids: torch.Tensor = None):
            """Rows ``ids`` (every row when None: the whole column, materialised in memory)."""
            if ids is None:
                return self._read(torch.arange(self.count(), dtype=torch.int64))
            values = self._read(_ids_tensor(ids))
            if isinstance(ids, torch.Tensor) and ids.is_cuda and values.device != ids.device:
                values = values.to(ids.device)
            return values

        def read_async(self, ids: torch.Tensor):
            """Reads rows ``ids`` in stages (GraphBolt >= 2.4's protocol): a generator to be
            advanced ``read_async_num_stages(ids.device)`` times; the last ``next()`` returns a
            future whose ``wait()`` returns what ``read(ids)`` would.

            CPU ids (1 stage): the read starts on a worker thread and the stage yields its
            future. GPU ids (2 stages): the first stage starts copying the ids to the host on a
            side stream; the second waits for that copy, starts the read and yields the future,
            which moves the rows to the ids' device in ``wait()``.
            """
            if not isinstance(ids, torch.Tensor):
                ids = _ids_tensor(ids)
            if ids.is_cuda:
                device = ids.device
                current = torch.cuda.current_stream(device)
                side = _side_stream(device)
                side.wait_stream(current)
                with torch.cuda.stream(side):
                    ids.record_stream(side)
                    ids_host = ids.to("cpu", non_blocking=True)
                    copied = torch.cuda.Event()
                    copied.record(side)
                yield  # stage 1 done: the ids are on their way to the host

                copied.synchronize()
                future = _pool().submit(self._read, _ids_tensor(ids_host))
                yield _Future(future, device)
            else:
                future = _pool().submit(self._read, _ids_tensor(ids))
                yield _Future(future, None)

        def read_async_num_stages(self, ids_device) -> int:
            """How many times to advance ``read_async(ids)`` for ids on ``ids_device``."""
            return 2 if torch.device(ids_device).type == "cuda" else 1

        def size(self) -> torch.Size:
            """Shape of one row: ``(dim,)`` for features (``()`` for a scalar one), ``()`` for labels."""
            if self._column is not None:
                return self._column.size()
            return torch.Size([int(self._store.dim)]) if self._kind == "feat" else torch.Size([])

        def count(self) -> int:
            """Number of rows (the nodes of the type, or the edges of the edge type)."""
            if self._column is not None:
                return self._column.count
            return int(self._store.num_nodes)

        def update(self, value: torch.Tensor, ids: torch.Tensor = None):
            raise ReadOnlyError(
                "tierfs.dgl: features are read-only; re-ingest the dataset to change them"
            )

        def metadata(self) -> dict:
            return dict(self._metadata)

        def __repr__(self) -> str:
            where = ""
            if self._column is not None:
                c = self._column
                where = f"node_type={c.node_type!r}, " if c.edge_type is None else f"edge_type={c.edge_type!r}, "
                where += f"name={c.name!r}, "
            return (
                f"tierfs.dgl.Feature({where}kind={self._kind!r}, count={self.count()}, "
                f"size={tuple(self.size())}, dtype={self._metadata['dtype']})"
            )

    class FeatureStore(gb.BasicFeatureStore):
        """A GraphBolt feature store over a tierfs store, keyed by ``(domain, type, name)``.

        A homogeneous store (not ``store.is_hetero``), keyed as GraphBolt keys a homogeneous
        graph (``type_name`` None by default): ``("node", type_name, feature_name)`` for its
        default feature, ``("node", type_name, name)`` for each other node feature, ``("node",
        type_name, label_name)`` when the dataset has labels, and ``("edge", type_name, name)``
        for each edge feature (read by edge id: the input's edge order, ``dgl.EID``).

        Several node or edge types (``store.is_hetero``): every feature by its own name,
        ``("node", ntype, name)`` for each node type's features, ``("node", ntype,
        label_name)`` for each type with labels, and ``("edge", "src:rel:dst", name)`` for each
        edge type's features (read by edge id, as ``HeteroSample.edge`` / ``dgl.EID`` give
        them: positions in the input of the edge type); ``feature_name`` and ``type_name`` do
        not apply there. A type's default feature is
        read through its memory tiers, the others from disk.

        ``store`` is an open tierfs Store (not closed by this object) or a dataset path, opened
        with ``open_kwargs`` and closed by :meth:`close`.
        """

        def __init__(
            self,
            store,
            feature_name: str = FEATURE,
            label_name: str | None = LABEL,
            type_name: str | None = None,
            **open_kwargs,
        ):
            self._owned = not hasattr(store, "gather")
            if self._owned:
                store = tierfs.open(str(store), **open_kwargs)
            elif open_kwargs:
                raise TypeError("tierfs.dgl.FeatureStore: open options given with an open store")
            self._store = store
            if _is_hetero(store):
                if type_name is not None or feature_name != FEATURE:
                    raise tierfs.InvalidArgumentError(
                        "tierfs.dgl.FeatureStore: a heterogeneous store keys every feature by its "
                        "own type and name; feature_name and type_name apply to one-type stores"
                    )
                features = _hetero_features(store, label_name)
            else:
                features = _one_type_features(store, feature_name, label_name, type_name)
            super().__init__(features)

        @property
        def store(self):
            """The tierfs store read from."""
            return self._store

        # GraphBolt >= 2.4 looks features up by key (``key in store``, ``store[key]``).
        def __getitem__(self, key):
            return self._features[tuple(key)]

        def __contains__(self, key):
            return tuple(key) in self._features

        def __iter__(self):
            return iter(self._features)

        def count(self, domain: str, type_name: str, feature_name: str) -> int:
            return self._features[(domain, type_name, feature_name)].count()

        def close(self):
            """Closes the store if this object opened it."""
            if self._owned:
                self._store.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def __repr__(self) -> str:
            return f"tierfs.dgl.FeatureStore(keys={self.keys()})"

    def _one_type_features(store, feature_name, label_name, type_name):
        """The columns of a homogeneous store, keyed as GraphBolt keys a homogeneous graph: its
        default feature as ``feature_name``, every other node and edge feature by its own name."""
        features = {}

        def add(key, feature):
            if key in features:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.FeatureStore: two columns are keyed {key} (the store's features are "
                    f"{', '.join(store.features)}); give another feature_name or label_name"
                )
            features[key] = feature

        default, ntype = store.feature_name, store.node_type
        if default is not None:
            add(("node", type_name, feature_name), Feature(store, FEATURE))
        for name in store.types["node_types"][ntype]["features"]:
            if name != default:
                add(("node", type_name, name), Feature(store, FEATURE, node_type=ntype, name=name))
        if label_name is not None and int(store.num_classes):
            add(("node", type_name, label_name), Feature(store, LABEL))
        for etype, info in store.types["edge_types"].items():
            for name in info["features"]:
                if name != "input_edge_id":  # tierfs's record of the input edge order, not a user's feature
                    add(("edge", type_name, name), Feature(store, FEATURE, edge_type=etype, name=name))
        return features

    def _hetero_features(store, label_name):
        """The columns of every type of a heterogeneous store, keyed as GraphBolt keys them."""
        types = store.types
        features = {}
        for ntype, info in types["node_types"].items():
            for name in info["features"]:
                features[("node", ntype, name)] = Feature(store, FEATURE, node_type=ntype, name=name)
            if label_name is not None and info.get("labels"):
                if ("node", ntype, label_name) in features:
                    raise tierfs.InvalidArgumentError(
                        f"tierfs.dgl.FeatureStore: node type {ntype!r} has a feature named "
                        f"{label_name!r}; give another label_name"
                    )
                features[("node", ntype, label_name)] = Feature(store, LABEL, node_type=ntype)
        for etype, info in types["edge_types"].items():
            for name in info["features"]:
                if name == "input_edge_id":  # tierfs's record of the input edge order, not a user's feature
                    continue
                features[("edge", ":".join(etype), name)] = Feature(store, FEATURE, edge_type=etype, name=name)
        return features

else:  # pragma: no cover - only without a working GraphBolt

    class _NoGraphBolt:
        def __init__(self, *args, **kwargs):
            raise ImportError(
                f"tierfs.dgl: dgl.graphbolt could not be imported: {_GRAPHBOLT_ERROR!r}"
            )

    class Feature(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""

    class FeatureStore(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""


def sampling_graph(store):
    """The store's whole topology as a GraphBolt ``FusedCSCSamplingGraph`` (for GraphBolt's own
    samplers with features from :class:`FeatureStore`). Materialises every edge in memory
    (``Store.csc()``): for graphs that fit; sample with :class:`NeighborSampler` otherwise.
    Edges are in tierfs's CSC order; their ``ORIGINAL_EDGE_ID`` (what GraphBolt's samplers hand
    out as ``original_edge_ids``) is the input position, DGL's edge id. A heterogeneous store gives GraphBolt's heterogeneous graph (``gb.from_dglgraph`` of
    :func:`dgl_graph`), whose samplers hand out per-type ids that :class:`FeatureStore` reads."""
    if gb is None:
        raise ImportError(f"tierfs.dgl: dgl.graphbolt could not be imported: {_GRAPHBOLT_ERROR!r}")
    if _is_hetero(store):
        # GraphBolt's heterogeneous layout (type offsets, type per edge) as DGL converts it.
        return gb.from_dglgraph(dgl_graph(store), is_homogeneous=False, include_original_edge_id=True)
    indptr, indices = store.csc()
    order = _input_order(store, None, len(indices))
    attrs = None if order is None else {gb.ORIGINAL_EDGE_ID: order}
    return gb.fused_csc_sampling_graph(torch.from_numpy(indptr), torch.from_numpy(indices), edge_attributes=attrs)


def dgl_graph(store):
    """The store's whole topology as a ``DGLGraph`` (edges neighbor -> node, int64 ids, edge ``i``
    the input's edge ``i``: the ``dgl.EID`` of this module's blocks; see "Edge ids" in the module
    docstring). Materialises every edge in memory (``Store.csc()``): for graphs that fit.

    A heterogeneous store gives a heterograph with every node type (its node count) and every
    canonical edge type ``(src, rel, dst)``, edge ``i`` of an edge type being its input's edge
    ``i`` (``dgl.EID`` of :func:`hetero_sample_to_blocks`'s blocks with ``store``)."""
    if _is_hetero(store):
        return _hetero_dgl_graph(store)
    indptr, indices = store.csc()
    src = torch.from_numpy(indices)
    dst = torch.from_numpy(np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr)))
    order = _input_order(store, None, len(indices))
    if order is not None:
        src, dst = _permuted(src, order), _permuted(dst, order)
    return dgl.graph(
        (src, dst),
        num_nodes=int(store.num_nodes),
        idtype=torch.int64,
    )


def _permuted(values: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """values laid out by order: out[order[i]] = values[i]."""
    out = torch.empty_like(values)
    out[order] = values
    return out


def _hetero_dgl_graph(store, chunk_size: int = 1 << 20):
    """dgl_graph of a heterogeneous store: every in-edge of every node, one sampling pass (all
    neighbors over the edge types into that type) per destination type and chunk."""
    etypes = store.edge_types
    num_nodes = {t: store.num_nodes_of(t) for t in store.node_types}
    src = {e: np.empty(store.num_edges_of(e), dtype=np.int64) for e in etypes}
    dst = {e: np.empty(store.num_edges_of(e), dtype=np.int64) for e in etypes}
    for ntype in store.node_types:
        into = [e for e in etypes if e[2] == ntype]
        if not into:
            continue
        sampler = store.sampler({e: [-1 if e[2] == ntype else 0] for e in etypes})
        try:
            for lo in range(0, num_nodes[ntype], chunk_size):
                seeds = np.arange(lo, min(num_nodes[ntype], lo + chunk_size), dtype=np.int64)
                smp = sampler.sample(seeds, ntype)
                for e in into:
                    eid = np.asarray(smp.edge[e])
                    src[e][eid] = np.asarray(smp.node[e[0]])[np.asarray(smp.row[e])]
                    dst[e][eid] = seeds[np.asarray(smp.col[e])]
        finally:
            sampler.close()
    for e in etypes:
        order = _input_order(store, e, len(src[e]))
        if order is not None:
            src[e][order.numpy()], dst[e][order.numpy()] = src[e].copy(), dst[e].copy()
    return dgl.heterograph(
        {e: (torch.from_numpy(src[e]), torch.from_numpy(dst[e])) for e in etypes},
        num_nodes_dict=num_nodes,
        idtype=torch.int64,
    )


# --------------------------------------------------------------------------------------------
# classic DGL: storages, blocks, loaders


class FeatureStorage(dgl.storages.FeatureStorage):
    """The node features (``kind="feat"``) or labels (``kind="label"``) of a tierfs store as a
    ``dgl.storages.FeatureStorage``: ``fetch(indices, device, pin_memory=False)`` gathers the rows
    and moves them to ``device`` (through pinned memory when ``pin_memory`` and the target is a
    GPU). ``storage[indices]`` is ``fetch(indices, "cpu")``.

    ``node_type`` (a heterogeneous store) picks that type's default feature or labels; ``name``
    another of its features.
    """

    def __init__(self, store, kind: str = FEATURE, node_type: str | None = None, name: str | None = None):
        self.store = store
        self.kind = _check_kind(kind)
        self.node_type = node_type
        self._column = None if node_type is None else _TypedColumn(store, kind, node_type, None, name)

    def fetch(self, indices, device, pin_memory=False, **kwargs):
        if isinstance(indices, Mapping):
            if len(indices) != 1:
                raise tierfs.InvalidArgumentError("tierfs.dgl: a tierfs store has a single node type")
            ((key, ids),) = indices.items()
            return {key: self.fetch(ids, device, pin_memory, **kwargs)}
        ids = _ids_tensor(indices)
        values = self._column.read(ids) if self._column is not None else _read_rows(self.store, self.kind, ids)
        device = torch.device(device)
        if values.device == device:
            return values
        non_blocking = bool(kwargs.pop("non_blocking", False))
        if pin_memory and device.type == "cuda" and values.device.type == "cpu":
            values = values.pin_memory()
            non_blocking = True
        return values.to(device, non_blocking=non_blocking, **kwargs)

    def __getitem__(self, indices):
        return self.fetch(indices, "cpu")

    def __len__(self):
        return self._column.count if self._column is not None else int(self.store.num_nodes)

    @property
    def shape(self):
        if self._column is not None:
            return (self._column.count,) + tuple(self._column.size())
        n = int(self.store.num_nodes)
        return (n, int(self.store.dim)) if self.kind == "feat" else (n,)


class GraphStorage:
    """Stands for the graph in ``dgl.dataloading.DataLoader(GraphStorage(store), ids,
    NeighborSampler(store, fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"]))``:
    DGL asks it for the storages of the lazily prefetched node data (``get_node_storage``). The
    graph itself stays in tierfs; the sampler ignores the graph argument. Worker processes need
    ``multiprocessing_context="spawn"`` (or ``num_workers=0``): see the module docstring.

    A heterogeneous store serves, per node type, its default feature as ``feature_name`` (types
    with features) and its labels as ``label_name`` (labelled types): give DGL's prefetch lists
    per type, ``prefetch_node_feats={"paper": ["feat"], ...}``, and the seeds as ``{ntype: ids}``.
    """

    def __init__(self, store, feature_name: str = FEATURE, label_name: str | None = LABEL):
        self.store = store
        self.device = torch.device("cpu")
        self.hetero = _is_hetero(store)
        if self.hetero:
            # Per node type: its default feature as feature_name, its labels as label_name.
            self._typed = {}
            for t, info in store.types["node_types"].items():
                columns = {}
                if info["features"]:
                    columns[feature_name] = FeatureStorage(store, FEATURE, node_type=t)
                if label_name is not None and info.get("labels"):
                    columns[label_name] = FeatureStorage(store, LABEL, node_type=t)
                self._typed[t] = columns
            return
        self._node = {feature_name: FeatureStorage(store, FEATURE)}
        if label_name is not None and int(store.num_classes):
            self._node[label_name] = FeatureStorage(store, LABEL)

    def get_node_storage(self, key, ntype=None):
        node = self._node if not self.hetero else self._typed.get(ntype)
        if node is None:
            raise tierfs.KeyNotFoundError(f"tierfs.dgl: no node type {ntype!r}; this store has {self.ntypes}")
        try:
            return node[key]
        except KeyError:
            what = f"node type {ntype!r}" if self.hetero else "this store"
            raise tierfs.KeyNotFoundError(
                f"tierfs.dgl: no node data {key!r}; {what} has {sorted(node)}"
            ) from None

    def get_edge_storage(self, key, etype=None):
        raise tierfs.KeyNotFoundError(f"tierfs.dgl: no edge data is prefetched from tierfs ({key!r})")

    def num_nodes(self, ntype=None) -> int:
        if self.hetero and ntype is not None:
            return self.store.num_nodes_of(ntype)
        if self.hetero:
            return sum(self.store.num_nodes_of(t) for t in self.store.node_types)
        return int(self.store.num_nodes)

    def num_edges(self, etype=None) -> int:
        if self.hetero and etype is not None:
            return self.store.num_edges_of(etype)
        if self.hetero:
            return sum(self.store.num_edges_of(e) for e in self.store.edge_types)
        return int(self.store.num_edges)

    @property
    def ntypes(self):
        return list(self.store.node_types) if self.hetero else ["_N"]

    @property
    def canonical_etypes(self):
        return list(self.store.edge_types) if self.hetero else [("_N", "_E", "_N")]


def _sample_arrays(sample):
    def t(x):
        return _ids_tensor(x)

    return (
        t(sample.nodes),
        t(sample.row),
        t(sample.col),
        _ids_tensor(sample.nodes_per_hop).tolist(),
        _ids_tensor(sample.edges_per_hop).tolist(),
        None if sample.e_id is None else t(sample.e_id),
    )


def _drop_edges(row, col, e_id, eph, exclude, what="sample"):
    """(row, col, e_id, eph) of a sample's edges less those whose id is in ``exclude``: each
    hop keeps its other edges in their order, and its count shrinks."""
    if e_id is None:
        raise tierfs.Error(f"tierfs.dgl: the {what} has no edge ids to exclude edges by")
    if e_id.numel() != row.numel() or sum(eph) != row.numel():
        raise tierfs.Error(f"tierfs.dgl: the {what}'s edge counts do not add up")
    keep = ~torch.isin(e_id, _ids_tensor(exclude))
    hop = torch.repeat_interleave(torch.arange(len(eph)), torch.tensor(eph, dtype=torch.int64))
    eph = torch.bincount(hop[keep], minlength=len(eph)).tolist()
    return row[keep], col[keep], e_id[keep], eph


def sample_to_blocks(sample, cumulative: bool = True, device=None, exclude_eids=None, store=None):
    """DGL blocks of a tierfs Sample: ``(input_nodes, output_nodes, blocks)``, blocks from the
    input layer (farthest hop) to the output layer (whose dst nodes are the seeds). Block ``i``
    of ``L`` (hop ``h = L-1-i``) has the nodes of hops 0..h+1 as src nodes and those of hops
    0..h as dst nodes, ``dgl.NID`` in srcdata and dstdata, and the edges of hops 0..h
    (``cumulative``) or of hop h alone, each with its id in ``edata[dgl.EID]`` (when the sample
    has ``e_id``): with ``store`` (the store sampled) DGL's edge id (:func:`dgl_edge_ids`: its
    position in the input the dataset was ingested from, PyG's ``e_id``), else the sample's own
    id (its CSC position).

    ``exclude_eids`` (edge ids, numbered as ``dgl.EID``) leaves those edges out of every block
    after the draw, as
    GraphBolt's ``exclude_seed_edges`` does: a node keeps the other neighbors it drew (no
    redraw), and a node reached only through an excluded edge stays among the src nodes (its
    other edges, if any, are kept).
    """
    nodes, row, col, nph, eph, e_id = _sample_arrays(sample)
    if store is not None and e_id is not None:
        e_id = dgl_edge_ids(store, e_id)
    num_hops = len(eph)
    if num_hops == 0 or len(nph) != num_hops + 1:
        raise tierfs.Error(
            f"tierfs.dgl: sample has {len(nph)} node counts for {num_hops} hops; want hops+1"
        )
    if exclude_eids is not None:
        row, col, e_id, eph = _drop_edges(row, col, e_id, eph, exclude_eids)
    node_prefix = np.cumsum(nph).tolist()  # nodes of hops 0..h: nodes[:node_prefix[h]]
    edge_prefix = np.cumsum([0] + eph).tolist()  # hop h edges: [edge_prefix[h], edge_prefix[h+1])
    if node_prefix[-1] != nodes.numel() or not edge_prefix[-1] == row.numel() == col.numel():
        raise tierfs.Error("tierfs.dgl: sample sizes do not add up")
    if e_id is not None and e_id.numel() != row.numel():
        raise tierfs.Error(f"tierfs.dgl: sample has {e_id.numel()} edge ids for {row.numel()} edges")
    blocks = []
    for h in reversed(range(num_hops)):
        lo = 0 if cumulative else edge_prefix[h]
        hi = edge_prefix[h + 1]
        num_src, num_dst = node_prefix[h + 1], node_prefix[h]
        block = dgl.create_block(
            (row[lo:hi], col[lo:hi]),
            num_src_nodes=num_src,
            num_dst_nodes=num_dst,
            idtype=torch.int64,
        )
        block.srcdata[dgl.NID] = nodes[:num_src]
        block.dstdata[dgl.NID] = nodes[:num_dst]
        if e_id is not None:
            block.edata[dgl.EID] = e_id[lo:hi]
        blocks.append(block)
    input_nodes = nodes[: node_prefix[-1]]
    output_nodes = nodes[: node_prefix[0]]
    if device is not None and torch.device(device).type != "cpu":
        device = torch.device(device)
        blocks = [b.to(device) for b in blocks]
        input_nodes, output_nodes = input_nodes.to(device), output_nodes.to(device)
    return input_nodes, output_nodes, blocks


def hetero_sample_to_blocks(sample, cumulative: bool = True, device=None, exclude_eids=None, store=None):
    """DGL heterogeneous blocks of a :class:`tierfs.HeteroSample`: ``(input_nodes,
    output_nodes, blocks)``, blocks from the input layer to the output layer, as
    :func:`sample_to_blocks` lays them out, per type.

    Block ``i`` of ``L`` (hop ``h = L-1-i``) is ``dgl.create_block`` over every canonical edge
    type ``(src, rel, dst)`` of the sample, with every node type as a src and a dst type: type
    t's dst nodes are its nodes of hops 0..h, its src nodes those of hops 0..h+1 (so dst nodes
    are a prefix of src nodes, and a block's dst nodes are the next block's src nodes); each
    edge type holds its edges of hops 0..h (``cumulative``) or of hop h alone, in the sample's
    local ids. ``srcnodes[t].data[dgl.NID]`` / ``dstnodes[t].data[dgl.NID]`` hold the nodes'
    ids of type t, ``edges[etype].data[dgl.EID]`` the edges' ids (when the sample has them):
    with ``store``, DGL's edge ids (:func:`dgl_edge_ids`: positions in the input of their edge
    type), else the sample's own (CSC positions). ``input_nodes`` is ``{t: ids}`` for every node type (blocks[0]'s src nodes),
    ``output_nodes`` ``{seed type: seeds}``.

    This is what ``dgl.to_block(frontier, dst_nodes)`` makes of the same edges with cumulative
    edges, up to the order of the src nodes after the dst nodes (DGL numbers them in the order
    its edges reach them; tierfs in the order the sampler first reached them).

    ``exclude_eids`` ``{etype: edge ids}`` leaves those edges out of every block, as
    :func:`sample_to_blocks` does.
    """
    ntypes = list(sample.node)
    etypes = list(sample.row)
    nodes = {t: _ids_tensor(sample.node[t]) for t in ntypes}
    nph = {t: [int(c) for c in sample.num_sampled_nodes[t]] for t in ntypes}
    eph = {e: [int(c) for c in sample.num_sampled_edges[e]] for e in etypes}
    num_hops = max((len(v) for v in eph.values()), default=0)
    if num_hops == 0 or any(len(v) != num_hops for v in eph.values()) or any(len(v) != num_hops + 1 for v in nph.values()):
        raise tierfs.Error("tierfs.dgl: hetero sample has uneven hop counts; want hops+1 node counts per type and hops edge counts per edge type")
    node_prefix = {t: np.cumsum(nph[t]).tolist() for t in ntypes}
    row = {e: _ids_tensor(sample.row[e]) for e in etypes}
    col = {e: _ids_tensor(sample.col[e]) for e in etypes}
    eid = {e: None if sample.edge.get(e) is None else _ids_tensor(sample.edge[e]) for e in etypes}
    if store is not None:
        eid = {e: None if ids is None else dgl_edge_ids(store, ids, e) for e, ids in eid.items()}
    for key, ids in _typed_exclude(etypes, exclude_eids).items():
        row[key], col[key], eid[key], eph[key] = _drop_edges(row[key], col[key], eid[key], eph[key], ids, f"edge type {key}")
    edge_prefix = {e: np.cumsum([0] + eph[e]).tolist() for e in etypes}
    for t in ntypes:
        if node_prefix[t][-1] != nodes[t].numel():
            raise tierfs.Error(f"tierfs.dgl: hetero sample: node type {t!r} sizes do not add up")
    for e in etypes:
        m = edge_prefix[e][-1]
        if not m == row[e].numel() == col[e].numel() or (eid[e] is not None and eid[e].numel() != m):
            raise tierfs.Error(f"tierfs.dgl: hetero sample: edge type {e} sizes do not add up")
    blocks = []
    for h in reversed(range(num_hops)):
        data, ranges = {}, {}
        for e in etypes:
            lo = 0 if cumulative else edge_prefix[e][h]
            hi = edge_prefix[e][h + 1]
            data[e] = (row[e][lo:hi], col[e][lo:hi])
            ranges[e] = (lo, hi)
        num_src = {t: node_prefix[t][h + 1] for t in ntypes}
        num_dst = {t: node_prefix[t][h] for t in ntypes}
        block = dgl.create_block(data, num_src_nodes=num_src, num_dst_nodes=num_dst, idtype=torch.int64)
        for t in ntypes:
            block.srcnodes[t].data[dgl.NID] = nodes[t][: num_src[t]]
            block.dstnodes[t].data[dgl.NID] = nodes[t][: num_dst[t]]
        for e in etypes:
            if eid[e] is not None:
                lo, hi = ranges[e]
                block.edges[e].data[dgl.EID] = eid[e][lo:hi]
        blocks.append(block)
    input_nodes = dict(nodes)
    seed_type = sample.seed_type
    output_nodes = {seed_type: nodes[seed_type][: node_prefix[seed_type][0]]}
    if device is not None and torch.device(device).type != "cpu":
        device = torch.device(device)
        blocks = [b.to(device) for b in blocks]
        input_nodes = {t: v.to(device) for t, v in input_nodes.items()}
        output_nodes = {t: v.to(device) for t, v in output_nodes.items()}
    return input_nodes, output_nodes, blocks


def _typed_exclude(etypes, exclude_eids) -> dict:
    """``exclude_eids`` of a heterogeneous sample (``{etype: ids}``, keys canonical or
    ``"src:rel:dst"`` or a relation naming one edge type) keyed by the sample's edge types."""
    if exclude_eids is None:
        return {}
    if not isinstance(exclude_eids, Mapping):
        raise tierfs.InvalidArgumentError(
            f"tierfs.dgl: exclude_eids of a heterogeneous sample is a dict {{edge type: ids}}, got {type(exclude_eids).__name__}"
        )
    out = {}
    for key, ids in exclude_eids.items():
        if isinstance(key, str) and ":" not in key:
            found = [e for e in etypes if e[1] == key]
            if len(found) != 1:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl: exclude_eids key {key!r} names {len(found)} edge types of the sample; use (src, rel, dst)"
                )
            e = found[0]
        else:
            e = edge_type_tuple(key)
            if e not in etypes:
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: exclude_eids names edge type {e}, which the sample does not have ({etypes})")
        out[e] = ids
    return out


def _hetero_fanouts(store, fanouts) -> dict:
    """DGL's per-layer fanouts (each an int for every edge type, or a dict keyed by canonical
    edge type, ``"src:rel:dst"`` or a relation name that names one edge type) as
    ``{(src, rel, dst): [fanout per layer]}``, input layer first, every edge type of the store."""
    etypes = store.edge_types
    by_rel = {}
    for e in etypes:
        by_rel.setdefault(e[1], []).append(e)

    def resolve(key):
        if isinstance(key, str) and ":" not in key:
            found = by_rel.get(key, [])
            if len(found) != 1:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.NeighborSampler: relation {key!r} names {len(found)} edge types; "
                    f"use the canonical (src, rel, dst) (edge types: {etypes})"
                )
            return found[0]
        e = edge_type_tuple(key)
        if e not in etypes:
            raise tierfs.KeyNotFoundError(f"tierfs.dgl.NeighborSampler: no edge type {e} (edge types: {etypes})")
        return e

    out = {e: [] for e in etypes}
    for i, layer in enumerate(fanouts):
        if isinstance(layer, Mapping):
            given = {}
            for k, v in layer.items():
                given[resolve(k)] = v
            missing = [e for e in etypes if e not in given]
            if missing:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.NeighborSampler: fanouts[{i}] gives no fanout for {missing}; as DGL, "
                    "a dict of fanouts names every edge type (0 samples none)"
                )
        else:
            given = {e: layer for e in etypes}
        for e in etypes:
            f = given[e]
            if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < -1:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.NeighborSampler: fanouts[{i}][{e}] = {f!r}; want an int >= -1"
                )
            out[e].append(int(f))
    return out


def _one_seed_type(seed_nodes):
    """``{ntype: ids}`` (one type with seeds, or a split name; empty entries of other types are
    ignored) as (ntype, ids)."""
    if isinstance(seed_nodes, tuple) and len(seed_nodes) == 2 and isinstance(seed_nodes[0], str):
        return seed_nodes
    if not isinstance(seed_nodes, Mapping):
        raise tierfs.InvalidArgumentError(
            "tierfs.dgl: seeds of a heterogeneous store are a dict {node type: ids}"
        )
    given = [(t, ids) for t, ids in seed_nodes.items() if isinstance(ids, str) or _ids_tensor(ids).numel() > 0]
    if len(given) != 1:
        if not given and len(seed_nodes) == 1:
            return next(iter(seed_nodes.items()))
        raise tierfs.NotSupportedError(
            f"tierfs.dgl: a batch has seeds of one node type (got {[t for t, _ in given] or list(seed_nodes)}); "
            "tierfs samples one seed type per batch"
        )
    return given[0]


class NeighborSampler(dgl.dataloading.BlockSampler):
    """Uniform k-hop neighbor sampling by tierfs, returning DGL blocks like
    ``dgl.dataloading.NeighborSampler``.

    ``fanouts[i]`` is the number of neighbors for GNN layer ``i`` (input layer first, so
    ``fanouts[-1]`` is for the seeds; -1 takes every neighbor). On a heterogeneous store (several
    node or edge types) ``fanouts[i]`` is, as for DGL's ``NeighborSampler``, an int for every
    edge type or a dict ``{etype: fanout}`` naming every edge type (canonical ``(src, rel,
    dst)``, ``"src:rel:dst"`` or a relation name that is unique); seeds are ``{ntype: ids}`` of
    one node type and the blocks are heterogeneous (:func:`hetero_sample_to_blocks`).
    ``exclude_eids`` (what ``dgl.dataloading.as_edge_prediction_sampler`` passes for
    ``exclude="self"`` or ``"reverse_id"``) are left out of every block after the draw, as
    GraphBolt's ``exclude_seed_edges`` does (DGL's own sampler leaves them out before it draws,
    so a node may get fewer neighbors here). ``replace`` samples with
    replacement; ``seed`` makes runs repeat (each call uses seed + call number). See the module
    docstring for ``cumulative``. ``prefetch_node_feats`` / ``prefetch_labels`` /
    ``output_device`` are as in DGL, for use with ``dgl.dataloading.DataLoader`` and
    :class:`GraphStorage`.

    ``sample(seeds)`` and DGL's ``sample(g, seeds)`` (``g`` ignored) both return
    ``(input_nodes, output_nodes, blocks)``. Calls may come from several threads; they are
    serialised.
    """

    def __init__(
        self,
        store,
        fanouts,
        replace: bool = False,
        seed: int = 0,
        *,
        cumulative: bool = True,
        prefetch_node_feats=None,
        prefetch_labels=None,
        output_device=None,
    ):
        super().__init__(
            prefetch_node_feats=prefetch_node_feats,
            prefetch_labels=prefetch_labels,
            prefetch_edge_feats=None,
            output_device=output_device,
        )
        fanouts = list(fanouts)
        if not fanouts:
            raise tierfs.InvalidArgumentError("tierfs.dgl.NeighborSampler: fanouts is empty; give one per layer")
        self.store = store
        self.hetero = _is_hetero(store)
        self.replace = bool(replace)
        self.seed = int(seed)
        self.cumulative = bool(cumulative)
        if self.hetero:
            # {etype: [per layer]}, input layer first; tierfs counts hops from the seeds.
            self.etype_fanouts = _hetero_fanouts(store, fanouts)
            self.fanouts = [{e: f[i] for e, f in self.etype_fanouts.items()} for i in range(len(fanouts))]
            per_hop = {e: list(reversed(f)) for e, f in self.etype_fanouts.items()}
            self._sampler = store.sampler(per_hop, replace=self.replace, seed=self.seed)
        else:
            if any(isinstance(f, Mapping) for f in fanouts):
                raise tierfs.InvalidArgumentError(
                    "tierfs.dgl.NeighborSampler: fanouts per edge type (dicts) need a store of several edge types"
                )
            fanouts = _fanouts(fanouts)
            if any(f < -1 for f in fanouts):
                raise tierfs.InvalidArgumentError(f"tierfs.dgl.NeighborSampler: bad fanouts {fanouts}; each >= -1")
            self.fanouts = fanouts
            self._sampler = store.sampler(list(reversed(fanouts)), replace=self.replace, seed=self.seed)
        self._lock = threading.Lock()

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    # Pickled for spawn worker processes: the store and the tierfs sampler pickle as their path
    # and options (the worker opens the dataset again; its call counter starts at 0).
    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def sample(self, g, seed_nodes=None, exclude_eids=None):  # pylint: disable=arguments-differ
        """``sample(seeds)`` or, as DGL calls it, ``sample(g, seeds, exclude_eids)`` (``g``
        ignored): ``(input_nodes, output_nodes, blocks)``."""
        if seed_nodes is None:
            g, seed_nodes = None, g
        return self.assign_lazy_features(self.sample_blocks(g, seed_nodes, exclude_eids))

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        """The blocks of ``seed_nodes`` (``g`` ignored); ``exclude_eids`` (edge ids in the
        store; ``{etype: ids}`` on a heterogeneous store) are left out of every block after the
        draw (see :func:`sample_to_blocks`)."""
        if self.hetero:
            seed_type, seed_ids = _one_seed_type(seed_nodes)
            device = self.output_device
            if device is None and isinstance(seed_ids, torch.Tensor):
                device = seed_ids.device
            seeds = _ids_tensor(seed_ids).numpy()
            with self._lock:
                sample = self._sampler.sample(seeds, seed_type)
            return hetero_sample_to_blocks(sample, cumulative=self.cumulative, device=device, exclude_eids=exclude_eids, store=self.store)
        if isinstance(seed_nodes, Mapping):
            if len(seed_nodes) != 1:
                raise tierfs.InvalidArgumentError("tierfs.dgl: a tierfs store has a single node type")
            (seed_nodes,) = seed_nodes.values()
        device = self.output_device
        if device is None and isinstance(seed_nodes, torch.Tensor):
            device = seed_nodes.device
        seeds = _ids_tensor(seed_nodes)
        with self._lock:
            sample = self._sampler.sample(seeds)
        if isinstance(exclude_eids, Mapping):
            if len(exclude_eids) != 1:
                raise tierfs.InvalidArgumentError("tierfs.dgl: exclude_eids of a one-type store is edge ids (or a dict of one edge type)")
            (exclude_eids,) = exclude_eids.values()
        return sample_to_blocks(sample, cumulative=self.cumulative, device=device, exclude_eids=exclude_eids, store=self.store)


class DataLoader:
    """Mini-batches of ``nodes`` (a split name such as ``"train"``, or node ids) as
    ``(input_nodes, output_nodes, blocks)`` with ``blocks[0].srcdata[feature_name]`` and, when
    the dataset has labels, ``blocks[-1].dstdata[label_name]`` filled from the store.

    A heterogeneous store takes ``nodes`` as ``{ntype: ids or split name}`` of one node type and
    yields ``({ntype: ids}, {seed type: seeds}, blocks)`` (:func:`hetero_sample_to_blocks`):
    ``blocks[0].srcnodes[t].data[feature_name]`` holds type t's default feature for every type
    that has features, ``blocks[-1].dstnodes[seed type].data[label_name]`` the seeds' labels.

    Batches are shuffled per epoch when ``shuffle`` (seeded by ``seed`` and the epoch). With
    ``prefetch`` (True: 4, or a number of batches) the batches run through a
    :class:`tierfs.Pipeline`: sampled ahead on one thread, features and labels gathered for up to
    ``prefetch`` batches at once while the current one is used; ``prefetch=False`` loads each
    batch when it is asked for. ``device`` is where the batches go. :meth:`stats` says where the
    latest epoch's time went.
    """

    def __init__(
        self,
        store,
        nodes,
        sampler: NeighborSampler,
        batch_size: int = 1024,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        device="cpu",
        prefetch: bool | int = True,
        feature_name: str | None = FEATURE,
        label_name: str | None = LABEL,
    ):
        if batch_size < 1:
            raise tierfs.InvalidArgumentError(f"tierfs.dgl.DataLoader: batch_size {batch_size} < 1")
        self.seed_type = None
        if _is_hetero(store):
            self.seed_type, nodes = _one_seed_type(nodes)
            if isinstance(nodes, str):
                nodes = store.split(nodes, node_type=self.seed_type)
        elif isinstance(nodes, str):
            nodes = store.split(nodes)
        self.store = store
        self.nodes = _ids_tensor(nodes)
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = int(seed)
        self.device = torch.device(device)
        depth = (4 if prefetch else 0) if isinstance(prefetch, bool) else int(prefetch)
        if not 0 <= depth <= MAX_DEPTH:
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.DataLoader: prefetch {prefetch} must be True, False or a batch count from 0 to {MAX_DEPTH}"
            )
        self.prefetch = depth
        self._run = None
        self.feature_name = feature_name
        if self.seed_type is not None:
            types = store.types["node_types"]
            if self.seed_type not in types:
                raise tierfs.KeyNotFoundError(
                    f"tierfs.dgl.DataLoader: no node type {self.seed_type!r} (it has {', '.join(types)})"
                )
            # Each type's default feature (types with features), the seed type's labels.
            self._columns = {t: _TypedColumn(store, FEATURE, t, None, None) for t, info in types.items() if info["features"]}
            labelled = types[self.seed_type].get("labels")
            self.label_name = label_name if labelled else None
            self._labels = _TypedColumn(store, LABEL, self.seed_type, None, None) if labelled else None
        else:
            self.label_name = label_name if int(store.num_classes) else None
        self.epoch = 0

    def __len__(self) -> int:
        n = self.nodes.numel()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self):
        nodes = self.nodes
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            nodes = nodes[torch.randperm(nodes.numel(), generator=gen)]
        self.epoch += 1
        batches = [nodes[i * self.batch_size : (i + 1) * self.batch_size] for i in range(len(self))]
        if self.seed_type is not None:
            return [{self.seed_type: b} for b in batches]
        return batches

    def _sample(self, batch):
        return self.sampler.sample(batch)

    def _load(self, batch):
        return self._gather(self._sample(batch))

    def _gather_hetero(self, sampled):
        input_nodes, output_nodes, blocks = sampled
        if self.feature_name is not None:
            for t, ids in input_nodes.items():
                column = self._columns.get(t)
                if column is not None:
                    blocks[0].srcnodes[t].data[self.feature_name] = column.read(ids)
        if self.label_name is not None:
            t = self.seed_type
            blocks[-1].dstnodes[t].data[self.label_name] = self._labels.read(output_nodes[t])
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            input_nodes = {t: v.to(self.device) for t, v in input_nodes.items()}
            output_nodes = {t: v.to(self.device) for t, v in output_nodes.items()}
        return input_nodes, output_nodes, blocks

    def _gather(self, sampled):
        if self.seed_type is not None:
            return self._gather_hetero(sampled)
        input_nodes, output_nodes, blocks = sampled
        if self.feature_name is not None:
            blocks[0].srcdata[self.feature_name] = _read_rows(self.store, FEATURE, input_nodes)
        if self.label_name is not None:
            blocks[-1].dstdata[self.label_name] = _read_rows(self.store, LABEL, output_nodes)
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            input_nodes, output_nodes = input_nodes.to(self.device), output_nodes.to(self.device)
        return input_nodes, output_nodes, blocks

    def __iter__(self):
        batches = self._batches()
        if not self.prefetch or len(batches) < 2:
            return (self._load(seeds) for seeds in batches)
        # The gathers run on the default stream (blocks' .to() queues there), so no stream joins.
        pipeline = tierfs.Pipeline(
            len(batches), lambda i: self._sample(batches[i]), lambda i, sampled: self._gather(sampled),
            depth=self.prefetch, store=self.store, name="tierfs-dgl-load",
        )
        self._run = pipeline._st
        return pipeline

    def stats(self) -> dict:
        """Where the latest pipelined epoch's time went (:meth:`tierfs.Pipeline.stats`); empty
        before one ran."""
        return tierfs.pipeline.pipeline_stats(self._run) if self._run is not None else {}


# --------------------------------------------------------------------------------------------
# link prediction


def _ndim(x) -> int:
    return x.dim() if isinstance(x, torch.Tensor) else np.ndim(x)


def _seed_pairs(edges, what: str):
    """Seed edges given as pairs, ``(src, dst)`` (two 1-D id arrays) or an ``(n, 2)`` tensor or
    array (GraphBolt's ``seeds``), as two 1-D int64 CPU tensors; None for 1-D edge ids."""
    if isinstance(edges, Mapping):
        raise tierfs.NotSupportedError(
            f"{what}: seed edges {{etype: ...}} of several edge types are not supported by tierfs.dgl's link "
            "sampling yet (homogeneous stores); use dgl.dataloading.as_edge_prediction_sampler around "
            "tierfs.dgl.NeighborSampler with tierfs.dgl.dgl_graph(store)"
        )
    if isinstance(edges, (tuple, list)) and len(edges) == 2 and all(_ndim(e) == 1 for e in edges):
        src, dst = _ids_tensor(edges[0]), _ids_tensor(edges[1])
        if src.numel() != dst.numel():
            raise tierfs.InvalidArgumentError(f"{what}: {src.numel()} src ids but {dst.numel()} dst ids; give one of each per seed edge")
        return src, dst
    if isinstance(edges, (tuple, list)):
        edges = np.asarray(edges)
    ndim = _ndim(edges)
    if ndim == 1:
        return None
    shape = tuple(edges.shape)
    if ndim != 2 or shape[1] != 2:
        raise tierfs.InvalidArgumentError(
            f"{what}: seed edges of shape {shape}; give (src, dst), an (n, 2) tensor of pairs or 1-D edge ids"
        )
    pairs = edges if isinstance(edges, torch.Tensor) else torch.from_numpy(np.asarray(edges))
    return _ids_tensor(pairs[:, 0]), _ids_tensor(pairs[:, 1])


def _negatives_per_edge(negative_sampler) -> int:
    """k of DGL's ``negative_sampler.Uniform(k)`` (or an int k); 0 for None."""
    if negative_sampler is None:
        return 0
    uniform = dgl.dataloading.negative_sampler.PerSourceUniform
    if isinstance(negative_sampler, uniform):
        k = negative_sampler.k
    elif isinstance(negative_sampler, (int, np.integer)) and not isinstance(negative_sampler, bool):
        k = negative_sampler
    else:
        raise tierfs.NotSupportedError(
            f"tierfs.dgl.EdgePredictionSampler: negative_sampler {negative_sampler!r} is not supported; "
            "tierfs draws DGL's Uniform(k) (dgl.dataloading.negative_sampler.Uniform, or k): k uniform "
            "destinations per seed edge with its source"
        )
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise tierfs.InvalidArgumentError(f"tierfs.dgl.EdgePredictionSampler: Uniform(k) with k = {k!r}; want an int >= 1")
    return int(k)


class EdgePredictionSampler:
    """Link prediction by tierfs's core: DGL's ``as_edge_prediction_sampler(sampler, exclude,
    reverse_eids, negative_sampler=Uniform(k))`` with the topology left in tierfs (no graph in
    memory). :func:`as_edge_prediction_sampler` makes one.

    ``sample(seed_edges)`` or ``sample(g, seed_edges)`` (as ``dgl.dataloading.DataLoader``
    calls it) returns what DGL's returns: ``(input_nodes, pair_graph, neg_graph, blocks)``, or
    ``(input_nodes, pair_graph, blocks)`` without negatives. Seed edges are pairs, ``(src,
    dst)`` or an ``(n, 2)`` tensor (GraphBolt's ``seeds``), or edge ids of ``g`` (a
    ``DGLGraph`` numbered as the store's input, e.g. :func:`dgl_graph`; ``g.find_edges`` gives
    their pairs). ``labels`` (one a seed edge) go to ``pair_graph.edata["label"]``.

    ``pair_graph`` holds the seed edges in the order given (``edata[dgl.EID]`` when given as
    ids), ``neg_graph`` seed edge i's ``k`` negatives at ``[i*k, (i+1)*k)`` — its source and a
    uniform destination of ``[0, num_nodes)``, which may be an edge, as DGL's ``Uniform(k)``
    and GraphBolt's ``UniformNegativeSampler`` draw. Both graphs have the seed nodes — the
    distinct endpoints of the seed edges and negatives, ascending (DGL and GraphBolt number
    them in order of appearance) — as nodes, ``ndata[dgl.NID]`` their ids, which are the dst
    nodes of ``blocks[-1]``; the blocks are :class:`NeighborSampler`'s of those seeds, with
    its fanouts, ``cumulative`` and seed (the same draw).

    ``exclude``: None; ``"self"`` leaves the seed edges out of every block, ``"reverse_id"``
    also their reverses. tierfs excludes by pair, after the draw (GraphBolt's
    ``exclude_seed_edges``): every edge (u, v) of a seed edge (u, v), and with
    ``"reverse_id"`` every (v, u); on a graph without parallel edges whose ``reverse_eids``
    pair (u, v) with (v, u) that is DGL's exclusion by id. ``reverse_eids`` is checked against
    ``g`` when seed edges come as ids. Negatives are not excluded. For an exclusion by other
    edge ids use DGL's ``as_edge_prediction_sampler`` around :class:`NeighborSampler`.
    """

    def __init__(self, sampler: "NeighborSampler", exclude=None, reverse_eids=None, negative_sampler=None):
        if not isinstance(sampler, NeighborSampler):
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.EdgePredictionSampler: sampler is a {type(sampler).__name__}; want a tierfs.dgl.NeighborSampler"
            )
        if sampler.hetero:
            raise tierfs.NotSupportedError(
                "tierfs.dgl.EdgePredictionSampler: link sampling of a store of several node or edge types is not "
                "supported yet; use dgl.dataloading.as_edge_prediction_sampler around tierfs.dgl.NeighborSampler "
                "with tierfs.dgl.dgl_graph(store) (seed edges whose endpoints are of one node type)"
            )
        if not (exclude is None or (isinstance(exclude, str) and exclude in ("self", "reverse_id"))):
            raise tierfs.NotSupportedError(
                f"tierfs.dgl.EdgePredictionSampler: exclude={exclude!r}; tierfs excludes None, 'self' or "
                "'reverse_id' (by pair); for other edge ids use dgl.dataloading.as_edge_prediction_sampler "
                "around tierfs.dgl.NeighborSampler"
            )
        self.sampler = sampler
        self.exclude = exclude
        self.reverse_eids = None if reverse_eids is None else _ids_tensor(reverse_eids)
        self.negative_sampler = negative_sampler
        self.k = _negatives_per_edge(negative_sampler)
        self.output_device = sampler.output_device

    def sample(self, g, seed_edges=None, labels=None):
        """``sample(seed_edges)`` or ``sample(g, seed_edges)``; see the class docstring."""
        if seed_edges is None:
            g, seed_edges = None, g
        device = self.output_device
        if device is None and isinstance(seed_edges, torch.Tensor):
            device = seed_edges.device
        eids = None
        pairs = _seed_pairs(seed_edges, "tierfs.dgl.EdgePredictionSampler")
        if pairs is None:
            if not isinstance(g, dgl.DGLGraph):
                raise tierfs.InvalidArgumentError(
                    "tierfs.dgl.EdgePredictionSampler: seed edge ids need the graph they index (sample(g, eids) "
                    "with g a DGLGraph numbered as the store's input, e.g. tierfs.dgl.dgl_graph(store)); or give "
                    "(src, dst) pairs or an (n, 2) tensor"
                )
            eids = _ids_tensor(seed_edges)
            src, dst = (t.to("cpu", torch.int64) for t in g.find_edges(eids))
            self._check_reverse(g, eids, src, dst)
        else:
            src, dst = pairs
        n = src.numel()
        if labels is not None:
            labels = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
            if labels.dim() == 0 or labels.shape[0] != n:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.EdgePredictionSampler: {labels.shape[0] if labels.dim() else 'a scalar'} labels for {n} seed edges; give one a seed edge"
                )
        with self.sampler._lock:
            ls = self.sampler._sampler.sample_from_edges(
                src.numpy(), dst.numpy(),
                neg_sampling="triplet" if self.k else None, amount=self.k or 1,
                exclude_seed_edges=self.exclude is not None, undirected=self.exclude == "reverse_id",
            )
        input_nodes, seeds, blocks = sample_to_blocks(ls, cumulative=self.sampler.cumulative, store=self.sampler.store)
        if self.k:
            pos_src, pos_dst = torch.from_numpy(ls.src_index), torch.from_numpy(ls.dst_pos_index)
            neg_src = pos_src.repeat_interleave(self.k)
            neg_dst = torch.from_numpy(np.ascontiguousarray(ls.dst_neg_index)).reshape(-1)
        else:
            pos_src, pos_dst = (torch.from_numpy(np.ascontiguousarray(a)) for a in ls.edge_label_index)
        pair_graph = dgl.graph((pos_src, pos_dst), num_nodes=seeds.numel(), idtype=torch.int64)
        pair_graph.ndata[dgl.NID] = seeds
        if eids is not None:
            pair_graph.edata[dgl.EID] = eids
        if labels is not None:
            pair_graph.edata[LABEL] = labels.cpu()
        graphs = [pair_graph]
        if self.k:
            neg_graph = dgl.graph((neg_src, neg_dst), num_nodes=seeds.numel(), idtype=torch.int64)
            neg_graph.ndata[dgl.NID] = seeds
            graphs.append(neg_graph)
        if device is not None and torch.device(device).type != "cpu":
            device = torch.device(device)
            blocks = [b.to(device) for b in blocks]
            graphs = [x.to(device) for x in graphs]
            input_nodes = input_nodes.to(device)
        input_nodes, _, blocks = self.sampler.assign_lazy_features((input_nodes, seeds, blocks))
        return (input_nodes, *graphs, blocks)

    def sample_minibatch(self, minibatch):
        """A GraphBolt stage: fills a ``gb.MiniBatch`` of ``seeds`` (an ``(n, 2)`` tensor of
        pairs, as ``gb.ItemSampler`` yields from ``gb.ItemSet((seeds, labels), names=("seeds",
        "labels"))``) as GraphBolt's ``sample_uniform_negative`` + ``sample_neighbor`` +
        ``exclude_seed_edges`` would, in one tierfs call: ``seeds`` becomes the pairs then
        their negatives (seed i's ``k`` at rows ``n + i*k ...``, its source and a uniform
        destination), ``labels`` True for pairs and False for negatives (given labels are kept
        when there are no negatives), ``indexes`` the seed each row belongs to,
        ``compacted_seeds`` the rows in local ids, ``input_nodes`` and ``sampled_subgraphs``
        (so ``minibatch.blocks`` are this sampler's blocks, edges in CSC order of each
        block). Use it as ``datapipe.transform(sampler.sample_minibatch)`` and fetch features
        with :class:`FeatureStore`. GraphBolt's ``exclude_seed_edges`` also drops negatives
        that are edges; tierfs drops the pairs (and with ``"reverse_id"`` their reverses)."""
        if gb is None:
            raise tierfs.NotSupportedError(f"tierfs.dgl: dgl.graphbolt is not available here ({_GRAPHBOLT_ERROR})")
        pairs = None if minibatch.seeds is None else _seed_pairs(minibatch.seeds, "tierfs.dgl.EdgePredictionSampler.sample_minibatch")
        if pairs is None:
            raise tierfs.InvalidArgumentError(
                "tierfs.dgl.EdgePredictionSampler.sample_minibatch: the minibatch has no seed pairs (seeds, an (n, 2) "
                "tensor: gb.ItemSet(pairs, names=\"seeds\"))"
            )
        src, dst = pairs
        n, k = src.numel(), self.k
        input_nodes, pair_graph, *neg, blocks = self.sample((src, dst))
        seeds = pair_graph.ndata[dgl.NID]
        rows = [torch.stack(pair_graph.edges(), 1)]
        device = seeds.device
        if k:
            rows.append(torch.stack(neg[0].edges(), 1))
            positive = torch.arange(n, device=device)
            minibatch.indexes = torch.cat([positive, positive.repeat_interleave(k)])
            minibatch.labels = torch.cat([torch.ones(n, dtype=torch.bool, device=device), torch.zeros(n * k, dtype=torch.bool, device=device)])
        compacted = torch.cat(rows).to(device)
        minibatch.compacted_seeds = compacted
        minibatch.seeds = seeds[compacted]
        minibatch.input_nodes = input_nodes
        minibatch.sampled_subgraphs = [_sampled_subgraph(b) for b in blocks]
        return minibatch

    def _check_reverse(self, g, eids, src, dst):
        """With exclude="reverse_id" and a reverse_eids map, the reverse of seed edge (u, v)
        must be an edge (v, u): tierfs excludes the reversed pair."""
        if self.exclude != "reverse_id" or self.reverse_eids is None or eids.numel() == 0:
            return
        rev = self.reverse_eids[eids]
        rs, rd = g.find_edges(rev)
        bad = torch.nonzero((rs.cpu() != dst) | (rd.cpu() != src)).reshape(-1)
        if bad.numel():
            i = int(bad[0])
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.EdgePredictionSampler: reverse_eids[{int(eids[i])}] = {int(rev[i])} is not an edge "
                f"({int(dst[i])}, {int(src[i])}), the reverse of seed edge ({int(src[i])}, {int(dst[i])}); "
                "tierfs excludes each seed edge's reversed pair"
            )


def _sampled_subgraph(block):
    """A homogeneous DGL block as GraphBolt's ``SampledSubgraphImpl`` (CSC of its edges, its
    src and dst nodes' ids, its edges' ids), which ``gb.MiniBatch.blocks`` turns back into it
    with the edges ordered by destination."""
    s, d = block.edges()
    order = torch.argsort(d, stable=True)
    indptr = torch.zeros(block.num_dst_nodes() + 1, dtype=torch.int64, device=d.device)
    indptr[1:] = torch.cumsum(torch.bincount(d, minlength=block.num_dst_nodes()), 0)
    return gb.SampledSubgraphImpl(
        sampled_csc=gb.CSCFormatBase(indptr=indptr, indices=s[order]),
        original_column_node_ids=block.dstdata[dgl.NID],
        original_row_node_ids=block.srcdata[dgl.NID],
        original_edge_ids=block.edata[dgl.EID][order] if dgl.EID in block.edata else None,
    )


def as_edge_prediction_sampler(sampler, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None, prefetch_labels=None):
    """DGL's ``dgl.dataloading.as_edge_prediction_sampler`` for a tierfs sampler: an
    :class:`EdgePredictionSampler` (link sampling in tierfs, no graph in memory) for a
    :class:`NeighborSampler`; any other sampler gets DGL's own."""
    if not isinstance(sampler, NeighborSampler):
        return dgl.dataloading.as_edge_prediction_sampler(
            sampler, exclude=exclude, reverse_eids=reverse_eids, reverse_etypes=reverse_etypes,
            negative_sampler=negative_sampler, prefetch_labels=prefetch_labels,
        )
    if reverse_etypes is not None or prefetch_labels:
        raise tierfs.NotSupportedError(
            "tierfs.dgl.as_edge_prediction_sampler: reverse_etypes and prefetch_labels are not supported for a "
            "tierfs sampler (homogeneous stores; labels go to EdgePredictionSampler.sample(..., labels=))"
        )
    return EdgePredictionSampler(sampler, exclude=exclude, reverse_eids=reverse_eids, negative_sampler=negative_sampler)


class LinkDataLoader(DataLoader):
    """Mini-batches of seed edges for link prediction: ``(input_nodes, pair_graph, neg_graph,
    blocks)`` (without ``neg_graph`` when the sampler draws no negatives), as
    ``dgl.dataloading.DataLoader`` yields them over ``as_edge_prediction_sampler``, with
    ``blocks[0].srcdata[feature_name]`` gathered from the store and, when ``labels`` are
    given (one a seed edge), ``pair_graph.edata["label"]`` the batch's.

    ``edges`` are pairs: ``(src, dst)`` or an ``(n, 2)`` tensor (GraphBolt's ``ItemSet`` of
    ``seeds``, with ``labels`` its ``labels``), or the name of one of the dataset's edge splits
    (``"train"``, ``"val"``, ``"test"``: its seed edges, and its labels unless ``labels`` is
    given; ``store.edge_split``). ``sampler`` is an :class:`EdgePredictionSampler`.
    ``batch_size``, ``shuffle``, ``drop_last``, ``seed``, ``device`` and ``prefetch`` are as
    in :class:`DataLoader`.
    """

    def __init__(
        self,
        store,
        edges,
        sampler: EdgePredictionSampler,
        labels=None,
        batch_size: int = 1024,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int = 0,
        device="cpu",
        prefetch: bool | int = True,
        feature_name: str | None = FEATURE,
    ):
        if not isinstance(sampler, EdgePredictionSampler):
            raise tierfs.InvalidArgumentError(
                f"tierfs.dgl.LinkDataLoader: sampler is a {type(sampler).__name__}; want a tierfs.dgl.EdgePredictionSampler"
            )
        if isinstance(edges, str):
            edges, stored_labels = store.edge_split(edges)
            edges = (edges[0], edges[1])
            labels = stored_labels if labels is None else labels
        pairs = _seed_pairs(edges, "tierfs.dgl.LinkDataLoader")
        if pairs is None:
            raise tierfs.InvalidArgumentError(
                "tierfs.dgl.LinkDataLoader: edges are pairs, (src, dst) or an (n, 2) tensor, or an edge split's name; "
                "not 1-D edge ids"
            )
        self.src, self.dst = pairs
        super().__init__(
            store, torch.arange(self.src.numel()), sampler, batch_size=batch_size, shuffle=shuffle,
            drop_last=drop_last, seed=seed, device=device, prefetch=prefetch, feature_name=feature_name, label_name=None,
        )
        self.labels = None
        if labels is not None:
            self.labels = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
            if self.labels.dim() == 0 or self.labels.shape[0] != self.src.numel():
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.LinkDataLoader: {self.labels.shape[0] if self.labels.dim() else 'a scalar'} labels "
                    f"for {self.src.numel()} seed edges; give one a seed edge"
                )

    def _sample(self, batch):
        labels = None if self.labels is None else self.labels[batch]
        return self.sampler.sample((self.src[batch], self.dst[batch]), labels=labels)

    def _gather(self, sampled):
        input_nodes, *graphs, blocks = sampled
        if self.feature_name is not None:
            blocks[0].srcdata[self.feature_name] = _read_rows(self.store, FEATURE, input_nodes.cpu()).to(input_nodes.device)
        if self.device.type != "cpu":
            blocks = [b.to(self.device) for b in blocks]
            graphs = [x.to(self.device) for x in graphs]
            input_nodes = input_nodes.to(self.device)
        return (input_nodes, *graphs, blocks)


# --------------------------------------------------------------------------------------------
# GraphBolt dataset and tasks

#: GraphBolt's task sets by the names of tierfs's node and edge splits.
_TASK_SETS = (("train", "train_set"), ("val", "validation_set"), ("test", "test_set"))


def _link_item_set(store, split: str, edge_type):
    """Edge split ``split`` of ``edge_type`` (None: the store's one) as GraphBolt's link
    prediction item set: ``seeds`` (n, 2) pairs, with ``labels`` where the split has them; a
    split with stored negatives (OGB's ``target_node_neg``, GraphBolt 1.x's ``negative_dsts``)
    is laid out as GraphBolt 2's ``UniformNegativeSampler`` lays out a batch: the n seed edges,
    then seed edge i's k negatives (its source, each candidate) at rows ``n + i*k ...``,
    ``labels`` the given ones (True without) then 0 (False), ``indexes`` the seed edge (ranking
    query) each row belongs to."""
    index, labels = store.edge_split(split, edge_type=edge_type)
    seeds = index.t().contiguous()
    k = int(store.edge_splits(edge_type)[split].get("neg_per_seed", 0))
    if not k:
        if labels is None:
            return gb.ItemSet(seeds, names="seeds")
        return gb.ItemSet((seeds, labels), names=("seeds", "labels"))
    n = seeds.shape[0]
    neg = store.edge_split_negatives(split, edge_type=edge_type).reshape(n * k)
    negatives = torch.stack([seeds[:, 0].repeat_interleave(k), neg], 1)
    positive = torch.ones(n, dtype=torch.bool) if labels is None else labels
    query = torch.arange(n)
    return gb.ItemSet(
        (
            torch.cat([seeds, negatives]),
            torch.cat([positive, torch.zeros(n * k, dtype=positive.dtype)]),
            torch.cat([query, query.repeat_interleave(k)]),
        ),
        names=("seeds", "labels", "indexes"),
    )


def _node_item_set(store, split: str, node_type):
    """Node split ``split`` of ``node_type`` (None: the store's one) as GraphBolt's node
    classification item set: ``seeds`` (node ids) and their ``labels`` where the type has them."""
    if node_type is None:
        ids = torch.from_numpy(store.split(split))
        labelled = bool(int(store.num_classes))
    else:
        ids = torch.from_numpy(store.split(split, node_type=node_type))
        labelled = bool(store.types["node_types"][node_type].get("labels"))
    if not labelled:
        return gb.ItemSet(ids, names="seeds")
    labels = _as_tensor(store.labels(ids.numpy(), node_type=node_type)).reshape(-1).to(torch.int64)
    return gb.ItemSet((ids, labels), names=("seeds", "labels"))


def _typed_sets(store, hetero: bool, keys: list, make) -> dict:
    """``{set name: ItemSet or ItemSetDict or None}`` of each tierfs split for the types in
    ``keys`` (``[(type, GraphBolt key, split names)]``); one type of a one-type store gives
    plain ItemSets, several types ``ItemSetDict``s keyed as GraphBolt keys types."""
    out = {}
    for split, attr in _TASK_SETS:
        parts = {key: make(t, split) for t, key, names in keys if split in names}
        if not parts:
            out[attr] = None
        elif not hetero:
            out[attr] = next(iter(parts.values()))
        else:
            out[attr] = gb.ItemSetDict(parts)
    return out


if gb is not None:

    class Task(gb.Task):
        """One task of a :class:`Dataset`: its ``metadata`` and GraphBolt item sets
        ``train_set``, ``validation_set``, ``test_set`` (None where the dataset has no such
        split)."""

        def __init__(self, metadata: dict, train_set=None, validation_set=None, test_set=None):
            self._metadata = dict(metadata)
            self._train_set, self._validation_set, self._test_set = train_set, validation_set, test_set

        @property
        def metadata(self) -> dict:
            return self._metadata

        @property
        def train_set(self):
            return self._train_set

        @property
        def validation_set(self):
            return self._validation_set

        @property
        def test_set(self):
            return self._test_set

        def __repr__(self) -> str:
            sets = ", ".join(f"{a}={getattr(self, a)!r}" for _, a in _TASK_SETS)
            return f"tierfs.dgl.Task(metadata={self._metadata!r}, {sets})"

    class Dataset(gb.Dataset):
        """A tierfs dataset as GraphBolt's ``Dataset`` (what ``gb.OnDiskDataset(...).load()``
        answers): ``feature`` (:class:`FeatureStore`), ``graph`` (:func:`sampling_graph`, the
        whole topology in memory, built on first use), ``tasks``, ``all_nodes_set`` and
        ``dataset_name``.

        ``tasks`` read the splits stored in the dataset, in this order:

        - ``"node_classification"`` (where the dataset has node splits): each split's ``seeds``
          (node ids) and ``labels``; on a store of several types an ``ItemSetDict`` keyed by
          node type. ``metadata["num_classes"]`` where there are labels.
        - ``"link_prediction"`` (where an edge type has edge splits, e.g. from
          :func:`tierfs.from_graphbolt` of a link task, ``from_pyg`` of ``RandomLinkSplit``
          outputs or OGB's edge split): each split's ``seeds`` (n, 2) and ``labels``, and for
          a split with stored negatives also ``indexes`` (see :func:`_link_item_set`: the
          layout of GraphBolt 2's negative sampler); on a store of several types an
          ``ItemSetDict`` keyed ``"src:rel:dst"``. GraphBolt's ``indexes`` of a split ingested
          with seeds, labels and indexes are not stored, so they do not come back.

        ``store`` is an open tierfs Store (not closed here) or a dataset path, opened with
        ``open_kwargs`` and closed by :meth:`close`.
        """

        def __init__(self, store, **open_kwargs):
            self._owned = not hasattr(store, "gather")
            if self._owned:
                store = tierfs.open(str(store), **open_kwargs)
            elif open_kwargs:
                raise TypeError("tierfs.dgl.Dataset: open options given with an open store")
            self._store = store
            self._graph = None
            self._feature = None
            self._tasks = None

        @property
        def store(self):
            """The tierfs store read from."""
            return self._store

        @property
        def tasks(self) -> list:
            if self._tasks is None:
                self._tasks = _tasks(self._store)
            return self._tasks

        @property
        def graph(self):
            if self._graph is None:
                self._graph = sampling_graph(self._store)
            return self._graph

        @property
        def feature(self):
            if self._feature is None:
                self._feature = FeatureStore(self._store)
            return self._feature

        @property
        def dataset_name(self) -> str:
            return os.path.basename(os.path.normpath(self._store.path))

        @property
        def all_nodes_set(self):
            if not _is_hetero(self._store):
                return gb.ItemSet(torch.tensor(int(self._store.num_nodes)), names="seed_nodes")
            return gb.ItemSetDict(
                {t: gb.ItemSet(torch.tensor(self._store.num_nodes_of(t)), names="seed_nodes") for t in self._store.node_types}
            )

        def close(self):
            """Closes the store if this object opened it."""
            if self._owned:
                self._store.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def __repr__(self) -> str:
            return f"tierfs.dgl.Dataset({self.dataset_name!r}, tasks={[t.metadata.get('name') for t in self.tasks]})"

    def _tasks(store) -> list:
        """The node classification and link prediction tasks of the splits stored in ``store``."""
        hetero = _is_hetero(store)
        tasks = []
        types = store.types
        node_keys = []
        num_classes = 0
        for t, info in types["node_types"].items():
            names = set((info.get("splits") or {}) if hetero else store.split_names)
            if names:
                node_keys.append((None if not hetero else t, t, names))
                num_classes = max(num_classes, int(info.get("num_classes") or 0))
        if node_keys:
            meta = {"name": "node_classification"}
            if num_classes:
                meta["num_classes"] = num_classes
            tasks.append(Task(meta, **_typed_sets(store, hetero, node_keys, lambda t, s: _node_item_set(store, s, t))))
        edge_keys = []
        for e in types["edge_types"]:
            names = set(store.edge_splits(e if hetero else None))
            if names:
                edge_keys.append((e if hetero else None, ":".join(e), names))
        if edge_keys:
            tasks.append(Task({"name": "link_prediction"}, **_typed_sets(store, hetero, edge_keys, lambda e, s: _link_item_set(store, s, e))))
        return tasks

else:  # pragma: no cover - only without a working GraphBolt

    class Task(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""

    class Dataset(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""
