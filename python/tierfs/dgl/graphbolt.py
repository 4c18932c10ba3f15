"""GraphBolt's side of :mod:`tierfs.dgl`: ``Feature`` and ``FeatureStore`` keyed by ``(domain, type,
name)``, ``sampling_graph``, and the ``Dataset`` / ``Task`` of a store."""

from __future__ import annotations

import os

import numpy as np
import torch

import tierfs

from ._common import FEATURE, LABEL, ReadOnlyError, _Future, _GRAPHBOLT_ERROR, _TypedColumn, _as_tensor, _check_kind, _dtype_name, _ids_tensor, _input_order, _is_hetero, _pool, _read_rows, _side_stream, gb
from ..hetero import edge_type_tuple
from .graph import dgl_graph


if gb is not None:

    class _StoreOwner:
        """What FeatureStore and Dataset share: ``store``, an open tierfs Store (not closed by the
        object) or a dataset path, opened with the open options and closed by :meth:`close`."""

        def _open(self, store, open_kwargs: dict, who: str):
            self._owned = not hasattr(store, "gather")
            if self._owned:
                store = tierfs.open(str(store), **open_kwargs)
            elif open_kwargs:
                raise TypeError(f"tierfs.dgl.{who}: open options given with an open store")
            self._store = store
            return store

        @property
        def store(self):
            """The tierfs store read from."""
            return self._store

        def close(self):
            """Closes the store if this object opened it."""
            if self._owned:
                self._store.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    class Feature(gb.Feature):
        """One column of a tierfs store as a GraphBolt feature: the node features
        (``kind="feat"``, rows of ``store.dim`` values of ``store.dtype``) or the labels
        (``kind="label"``, int64, -1 for unlabelled nodes). Read-only.

        ``embedding=`` (a :class:`tierfs.Embedding` of the store's ``node_type``, None in a
        one-type store): the feature is the table's rows, float32 ``(dim,)``; ``read`` gives them
        as they are (no gradient: train through ``emb(ids)``) and ``update`` writes them.
        :class:`FeatureStore`'s ``embeddings={node_type: emb}`` keys them ``("node", node_type,
        "feat")``.

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
            embedding=None,
        ):
            super().__init__()
            self._store = store
            self._kind = _check_kind(kind)
            self._column = None
            self._column_of_one = False
            if embedding is not None:
                if kind != FEATURE or edge_type is not None or name is not None:
                    raise tierfs.InvalidArgumentError("tierfs.dgl.Feature: an embedding is a node type's feature (kind 'feat', no edge_type or name)")
                self._column = _TableColumn(store, node_type, embedding)
                self._dtype = "float32"
            elif node_type is not None or edge_type is not None:
                self._column = _TypedColumn(store, kind, node_type, edge_type, name)
                self._dtype = self._column.info["dtype"]
                # A feature of one value a row is (N, 1), as GraphBolt's OnDiskDataset holds it.
                self._column_of_one = kind == FEATURE and bool(self._column.info.get("scalar"))
            else:
                if kind == LABEL and not int(store.num_classes):
                    raise tierfs.KeyNotFoundError("tierfs.dgl: this dataset has no labels")
                self._dtype = "int64" if kind == LABEL else _dtype_name(store)
            # A row of more than one dimension (GraphBolt's (N, a, b)): its shape, else None.
            self._shape = None
            if kind == FEATURE and embedding is None:
                info = self._column.info if self._column is not None else _default_feature(store)[1]
                self._shape = torch.Size(info["shape"]) if info.get("shape") else None
            # GraphBolt's metadata: what was given (TorchBasedFeature's), nothing of tierfs's own.
            self._metadata = dict(metadata or {})

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
                rows = self._column.read(ids_cpu)
                return rows.reshape(-1, 1) if self._column_of_one else rows
            rows = _read_rows(self._store, self._kind, ids_cpu)
            return rows if self._shape is None else rows.reshape((-1,) + tuple(self._shape))

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
            """Shape of one row: ``(dim,)`` for features (its shape ``(a, b, ...)`` for one ingested
            from an ``(N, a, b, ...)`` array; ``(1,)`` for one of one value a row, read as (N, 1) as
            GraphBolt's ``OnDiskDataset`` holds a 1-D feature), ``()`` for labels."""
            if self._shape is not None:
                return self._shape
            if self._column is not None:
                return torch.Size([1]) if self._column_of_one else self._column.size()
            return torch.Size([int(self._store.dim)]) if self._kind == "feat" else torch.Size([])

        def count(self) -> int:
            """Number of rows (the nodes of the type, or the edges of the edge type)."""
            if self._column is not None:
                return self._column.count
            return self._store.num_nodes(self._store.node_type)

        @property
        def embedding(self):
            """The :class:`tierfs.Embedding` whose rows this feature is (None: a dataset column)."""
            return self._column.embedding if isinstance(self._column, _TableColumn) else None

        def update(self, value: torch.Tensor, ids: torch.Tensor = None):
            """Writes rows of a feature over a :class:`tierfs.Embedding` (``embedding=``): row
            ``ids[i]`` becomes ``value[i]`` (ids None: every row, value of ``count()`` rows); the
            optimizer state is kept. A dataset's feature is read-only: :class:`ReadOnlyError` (a
            ``NotImplementedError``, as GraphBolt's base ``Feature.update`` raises)."""
            emb = self.embedding
            if emb is None:
                raise ReadOnlyError(f"tierfs.dgl: {self!r} is the dataset's and read-only; re-ingest the dataset to change it, or train a tierfs.Embedding")
            value = torch.as_tensor(value)
            n = self.count() if ids is None else int(_ids_tensor(ids).numel())
            if tuple(value.shape) != (n,) + tuple(self.size()):
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl: update of {self!r}: a value of shape {tuple(value.shape)}, want {(n,) + tuple(self.size())} "
                    f"({'every row' if ids is None else 'one row an id'})"
                )
            emb.write(torch.arange(n) if ids is None else _ids_tensor(ids), value.detach())

        def metadata(self) -> dict:
            """The metadata given (``{}`` by default; :class:`FeatureStore` gives the dataset's, e.g.
            GraphBolt's ``num_categories`` kept by :func:`tierfs.from_graphbolt`), as GraphBolt's
            ``TorchBasedFeature``; the dtype is the rows' (``read``), the class count the task's
            (``Dataset.tasks[i].metadata["num_classes"]``)."""
            return dict(self._metadata)

        def __repr__(self) -> str:
            where = ""
            if isinstance(self._column, _TableColumn):
                where = f"node_type={self._column.node_type!r}, embedding={self._column.embedding.path!r}, "
            elif self._column is not None:
                c = self._column
                where = f"node_type={c.node_type!r}, " if c.edge_type is None else f"edge_type={c.edge_type!r}, "
                where += f"name={c.name!r}, "
            return (
                f"tierfs.dgl.Feature({where}kind={self._kind!r}, count={self.count()}, "
                f"size={tuple(self.size())}, dtype={self._dtype})"
            )

    class FeatureStore(_StoreOwner, gb.BasicFeatureStore):
        """A GraphBolt feature store over a tierfs store, keyed by ``(domain, type, name)``.

        A homogeneous store (not ``store.is_hetero``), keyed as GraphBolt keys a homogeneous
        graph (``type_name`` None by default): ``("node", type_name, feature_name)`` for its
        default feature, ``("node", type_name, name)`` for each other node feature, ``("node",
        type_name, label_name)`` when the dataset has labels, and ``("edge", type_name, name)``
        for each edge feature (read by edge id: the input's edge order, ``dgl.EID``).

        Several node or edge types (``store.is_hetero``): every feature by its own name,
        ``("node", ntype, name)`` for each node type's features, ``("node", ntype,
        label_name)`` for each type with labels, and ``("edge", "src:rel:dst", name)`` for each
        edge type's features (read by edge id, as ``Sample.edge`` / ``dgl.EID`` give
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
            embeddings: dict | None = None,
            **open_kwargs,
        ):
            store = self._open(store, open_kwargs, "FeatureStore")
            hetero = _is_hetero(store)
            if hetero:
                if type_name is not None or feature_name != FEATURE:
                    raise tierfs.InvalidArgumentError(
                        "tierfs.dgl.FeatureStore: a heterogeneous store keys every feature by its "
                        "own type and name; feature_name and type_name apply to one-type stores"
                    )
                features = _columns(store, label_name)
            else:
                features = _columns(store, label_name, (feature_name, type_name))
            for ntype, emb in (embeddings or {}).items():
                key = ("node", ntype if hetero else type_name, feature_name)
                if key in features:
                    raise tierfs.InvalidArgumentError(f"tierfs.dgl.FeatureStore: embeddings[{ntype!r}]: the dataset has a feature keyed {key}")
                features[key] = Feature(store, node_type=ntype if hetero else None, embedding=emb)
            super().__init__(features)

        # GraphBolt >= 2.4 looks features up by key (``key in store``, ``store[key]``).
        def __getitem__(self, key):
            return self._features[tuple(key)]

        def __contains__(self, key):
            return tuple(key) in self._features

        def __iter__(self):
            return iter(self._features)

        def count(self, domain: str, type_name: str, feature_name: str) -> int:
            return self._features[(domain, type_name, feature_name)].count()

        def __repr__(self) -> str:
            return f"tierfs.dgl.FeatureStore(keys={self.keys()})"

    def _columns(store, label_name, one_type=None):
        """The store's columns keyed as GraphBolt keys them: ``("node", ntype, name)`` for each
        node type's features and labels, ``("edge", "src:rel:dst", name)`` for each edge type's
        features. ``one_type`` ``(feature_name, type_name)`` keys a homogeneous store's: every
        key's type is ``type_name`` (GraphBolt's None) and the default feature, read through the
        tiers, is keyed ``feature_name``."""
        features = {}

        def add(key, feature):
            if key in features:
                names = "feature_name or label_name" if one_type is not None else "label_name"
                raise tierfs.InvalidArgumentError(f"tierfs.dgl.FeatureStore: two columns are keyed {key}; give another {names}")
            features[key] = feature

        for ntype, info in store.types["node_types"].items():
            key_type = ntype if one_type is None else one_type[1]
            for name, f in info["features"].items():
                meta = f.get("metadata")
                if one_type is not None and f.get("default"):
                    add(("node", key_type, one_type[0]), Feature(store, FEATURE, meta))
                else:
                    add(("node", key_type, name), Feature(store, FEATURE, meta, node_type=ntype, name=name))
            if label_name is None:
                continue
            if one_type is None and info.get("labels"):
                add(("node", key_type, label_name), Feature(store, LABEL, node_type=ntype))
            elif one_type is not None and int(store.num_classes):
                add(("node", key_type, label_name), Feature(store, LABEL))
        for etype, info in store.types["edge_types"].items():
            key_type = ":".join(etype) if one_type is None else one_type[1]
            for name, f in info["features"].items():
                if name != "input_edge_id":  # tierfs's record of the input edge order, not a user's feature
                    add(("edge", key_type, name), Feature(store, FEATURE, f.get("metadata"), edge_type=etype, name=name))
        return features

    class _TableColumn:
        """A node type's rows in a :class:`tierfs.Embedding` (a column with a table's read, count
        and size)."""

        def __init__(self, store, node_type, embedding):
            from ..embedding import Embedding

            if not isinstance(embedding, Embedding):
                raise TypeError(f"tierfs.dgl.Feature: embedding is a {type(embedding).__name__}, want a tierfs.Embedding")
            if node_type is None and _is_hetero(store):
                raise tierfs.InvalidArgumentError("tierfs.dgl.Feature: an embedding of a heterogeneous store names its node_type")
            types = store.types["node_types"]
            if node_type is not None and node_type not in types:
                raise tierfs.KeyNotFoundError(f"tierfs.dgl: the store has no node type {node_type!r} (it has {', '.join(types)})")
            of = embedding.info.get("node_type")
            if of is not None and node_type is not None and of != node_type:
                raise tierfs.InvalidArgumentError(f"tierfs.dgl.Feature: the embedding {embedding.path} is a table of node type {of!r}, not {node_type!r}")
            n = store.num_nodes(node_type) if node_type is not None else store.num_nodes(store.node_type)
            if embedding.num_embeddings != n:
                raise tierfs.InvalidArgumentError(
                    f"tierfs.dgl.Feature: the embedding {embedding.path} has {embedding.num_embeddings} rows, node type {node_type!r} has {n} nodes"
                )
            self.store, self.node_type, self.edge_type, self.name = store, node_type, None, None
            self.embedding, self.count = embedding, n
            self.info = {"dtype": "float32", "scalar": False}

        def read(self, ids_cpu: torch.Tensor) -> torch.Tensor:
            """The rows on the store's device, as a dataset column's gather gives them."""
            rows = self.embedding.read(ids_cpu)
            return rows if self.store.device == "cpu" else rows.to(self.store.device)

        def size(self) -> torch.Size:
            return torch.Size([self.embedding.embedding_dim])

    def _default_feature(store) -> tuple:
        """``(name, types entry)`` of a one-type store's default node feature (``(None, {})``
        when it has none)."""
        feats = store.types["node_types"][store.node_type]["features"]
        return next(((n, f) for n, f in feats.items() if f.get("default")), (None, {}))

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
    (``Store.csc()``): for graphs that fit; sample with :class:`NeighborSampler` otherwise. The
    features made attributes of the sampling graph (``graph.feature_data`` of
    :func:`tierfs.from_graphbolt`) are its ``node_attributes`` / ``edge_attributes``, edge
    attributes in the graph's edge order; of a heterogeneous store laid out as GraphBolt's
    ``OnDiskDataset`` lays them out, one tensor a name over every type (node rows by the graph's
    ``node_type_offset``), a name that does not cover every node (edge) type left out with a
    warning (GraphBolt refuses such a dataset).
    Edges are in tierfs's CSC order; their ``ORIGINAL_EDGE_ID`` (what GraphBolt's samplers hand
    out as ``original_edge_ids``) is the input position, DGL's edge id. A heterogeneous store gives GraphBolt's heterogeneous graph (``gb.from_dglgraph`` of
    :func:`dgl_graph`), whose samplers hand out per-type ids that :class:`FeatureStore` reads."""
    if gb is None:
        raise ImportError(f"tierfs.dgl: dgl.graphbolt could not be imported: {_GRAPHBOLT_ERROR!r}")
    if _is_hetero(store):
        # GraphBolt's heterogeneous layout (type offsets, type per edge) as DGL converts it.
        graph = gb.from_dglgraph(dgl_graph(store), is_homogeneous=False, include_original_edge_id=True)
        nodes, edges = _typed_sampling_attributes(store, graph)
        if nodes:
            graph.node_attributes = {**(graph.node_attributes or {}), **nodes}
        if edges:
            graph.edge_attributes = {**(graph.edge_attributes or {}), **edges}
        return graph
    indptr, indices = store.csc()
    order = _input_order(store, None, len(indices))
    nodes, edges = _sampling_attributes(store)
    if order is not None:
        edges[gb.ORIGINAL_EDGE_ID] = order
    return gb.fused_csc_sampling_graph(torch.from_numpy(indptr), torch.from_numpy(indices),
                                       node_attributes=nodes or None, edge_attributes=edges or None)


def _sampling_attributes(store) -> tuple:
    """``(node_attributes, edge_attributes)`` of a one-type store: every feature its maker made an
    attribute of the sampling graph (GraphBolt's ``graph.feature_data``, kept by
    :func:`tierfs.from_graphbolt`), whole, in memory; a row of one value 1-D, as given. Edge
    attributes are in the graph's edge order (CSC, as ``indices``), the order GraphBolt's samplers
    index them by."""

    types = store.types
    nodes = {n: _whole(store, n, f, node_type=store.node_type) for n, f in types["node_types"][store.node_type]["features"].items() if f.get("sampling_graph")}
    edges = {n: _whole(store, n, f, edge_type=e) for e, info in types["edge_types"].items() for n, f in info["features"].items() if f.get("sampling_graph")}
    return nodes, edges


def _whole(store, name, f, **where) -> torch.Tensor:
    """Every row of feature ``name`` (its types entry ``f``) of a node or edge type, in memory,
    in its stored order (edges: CSC) and row shape; a row of one value 1-D."""
    rows = _as_tensor(store.gather(np.arange(int(f["rows"])), feature=name, **where), f["dtype"])
    return rows.reshape((-1,) + tuple(f["shape"])) if f.get("shape") else rows


def _sampling_features(kind: str, types: dict) -> dict:
    """``{name: {type: types entry}}`` of the features of ``types`` (a store's node or edge
    types) made attributes of the sampling graph, for the names that every type has; a name
    some types lack is left out with a warning naming them (GraphBolt asserts on it)."""
    import warnings

    by_name: dict = {}
    for t, info in types.items():
        for n, f in info["features"].items():
            if f.get("sampling_graph"):
                by_name.setdefault(n, {})[t] = f
    for n in [n for n, per_type in by_name.items() if set(per_type) != set(types)]:
        missing = ", ".join(sorted(map(str, set(types) - set(by_name.pop(n)))))
        warnings.warn(f"tierfs.dgl.sampling_graph: {kind} feature {n!r} does not cover all {kind} types (it lacks {missing}); "
                      f"it is not an attribute of the sampling graph", stacklevel=4)
    return by_name


def _typed_sampling_attributes(store, graph) -> tuple:
    """``(node_attributes, edge_attributes)`` of a heterogeneous store for its sampling graph
    ``graph`` (before they are set), as GraphBolt's OnDiskDataset collects them: per name
    (:func:`_sampling_features`) one tensor over the graph's nodes (type t's rows from
    ``node_type_offset[t]``) or edges (in the graph's edge order, by ``type_per_edge`` and
    ``ORIGINAL_EDGE_ID``, each type's input edge id)."""
    types = store.types
    nodes = {}
    offsets, ntype_ids = graph.node_type_offset, graph.node_type_to_id
    for n, per_type in _sampling_features("node", types["node_types"]).items():
        parts = {t: _whole(store, n, f, node_type=t) for t, f in per_type.items()}
        first = next(iter(parts.values()))
        out = torch.empty((int(graph.total_num_nodes),) + tuple(first.shape[1:]), dtype=first.dtype)
        for t, rows in parts.items():
            k = ntype_ids[t]
            out[int(offsets[k]):int(offsets[k + 1])] = rows
        nodes[n] = out
    edges = {}
    etype_ids = {edge_type_tuple(k): v for k, v in graph.edge_type_to_id.items()}
    original, type_per_edge = graph.edge_attributes[gb.ORIGINAL_EDGE_ID], graph.type_per_edge
    for n, per_type in _sampling_features("edge", types["edge_types"]).items():
        out = None
        for et, f in per_type.items():
            rows = _whole(store, n, f, edge_type=et)  # by the type's CSC position
            order = _input_order(store, et, int(rows.shape[0]))  # order[csc] = input edge id
            if order is not None:
                by_input = torch.empty_like(rows)
                by_input[order] = rows
                rows = by_input
            if out is None:
                out = torch.empty((int(graph.total_num_edges),) + tuple(rows.shape[1:]), dtype=rows.dtype)
            at = (type_per_edge == etype_ids[edge_type_tuple(et)]).nonzero().view(-1)
            out[at] = rows[original[at].long()]
        edges[n] = out
    return nodes, edges


#: GraphBolt's task sets by the names of tierfs's node and edge splits.
_TASK_SETS = (("train", "train_set"), ("val", "validation_set"), ("test", "test_set"))


def _link_item_set(store, split: str, edge_type):
    """Edge split ``split`` of ``edge_type`` (None: the store's one) as GraphBolt 2.1's
    ``OnDiskDataset`` reads a link prediction set: ``node_pairs`` (n, 2), with ``labels`` where
    the split has them and ``negative_dsts`` (n, k) where it has stored negatives (OGB's
    ``target_node_neg``), so an item is ``(pair, negatives)``."""
    index, labels = store.edge_split(split, edge_type=edge_type)
    pairs = index.t().contiguous()
    columns, names = [pairs], ["node_pairs"]
    if labels is not None:
        columns.append(labels)
        names.append("labels")
    k = int(store.edge_splits(edge_type)[split].get("neg_per_seed", 0))
    if k:
        columns.append(store.edge_split_negatives(split, edge_type=edge_type).reshape(pairs.shape[0], k))
        names.append("negative_dsts")
    if len(columns) == 1:
        return gb.ItemSet(pairs, names="node_pairs")
    return gb.ItemSet(tuple(columns), names=tuple(names))


def _node_item_set(store, split: str, node_type):
    """Node split ``split`` of ``node_type`` (None: the store's one) as GraphBolt 2.1's node
    classification item set: ``seed_nodes`` (node ids) and their ``labels`` where the type has
    them."""
    if node_type is None:
        ids = torch.from_numpy(store.split(split))
        labelled = bool(int(store.num_classes))
    else:
        ids = torch.from_numpy(store.split(split, node_type=node_type))
        labelled = bool(store.types["node_types"][node_type].get("labels"))
    if not labelled:
        return gb.ItemSet(ids, names="seed_nodes")
    labels = _as_tensor(store.labels(ids.numpy(), node_type=node_type)).reshape(-1).to(torch.int64)
    return gb.ItemSet((ids, labels), names=("seed_nodes", "labels"))


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

    class Dataset(_StoreOwner, gb.Dataset):
        """A tierfs dataset as GraphBolt's ``Dataset`` (what ``gb.OnDiskDataset(...).load()``
        answers): ``feature`` (:class:`FeatureStore`, every feature keyed by its own name, the
        default one too, as ``OnDiskDataset`` keys them), ``graph`` (:func:`sampling_graph`, the
        whole topology in memory, built on first use), ``tasks``, ``all_nodes_set`` and
        ``dataset_name`` (metadata.yaml's, as ``OnDiskDataset`` answers, where the dataset came
        from GraphBolt; the directory's name otherwise).

        ``tasks`` read the splits stored in the dataset, in this order:

        Item sets are named as GraphBolt 2.1 (the pinned DGL) names them; tierfs's samplers also
        take GraphBolt 2.2's ``seeds``.

        - ``"node_classification"`` (where the dataset has node splits): each split's
          ``seed_nodes`` (node ids) and ``labels``; on a store of several types an
          ``ItemSetDict`` keyed by node type. ``metadata["num_classes"]`` where there are labels.
        - ``"link_prediction"`` (where an edge type has edge splits, e.g. from
          :func:`tierfs.from_graphbolt` of a link task, ``from_pyg`` of ``RandomLinkSplit``
          outputs or OGB's edge split): each split's ``node_pairs`` (n, 2), with its ``labels``
          where it has them and its ``negative_dsts`` (n, k) where it has stored negatives
          (items ``(pair, negatives)``, as GraphBolt 2.1's link-prediction example evaluates
          them); on a store of several types an ``ItemSetDict`` keyed ``"src:rel:dst"``.
          GraphBolt's ``indexes`` of a split ingested with seeds, labels and indexes are not
          stored, so they do not come back.

        ``store`` is an open tierfs Store (not closed here) or a dataset path, opened with
        ``open_kwargs`` and closed by :meth:`close`.
        """

        def __init__(self, store, **open_kwargs):
            self._open(store, open_kwargs, "Dataset")
            self._graph = None
            self._feature = None
            self._tasks = None

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
                # Every feature by its own name, as OnDiskDataset keys the dataset's feature_data.
                name = None if _is_hetero(self._store) else _default_feature(self._store)[0]
                self._feature = FeatureStore(self._store) if name is None else FeatureStore(self._store, feature_name=name)
            return self._feature

        @property
        def dataset_name(self) -> str:
            """The name the dataset's maker gave it (metadata.yaml's ``dataset_name``, kept by
            :func:`tierfs.from_graphbolt`), else the dataset directory's name."""
            return self._store.types.get("dataset_name") or os.path.basename(os.path.normpath(self._store.path))

        @property
        def all_nodes_set(self):
            if not _is_hetero(self._store):
                return gb.ItemSet(torch.tensor(self._store.num_nodes()), names="seed_nodes")
            # By type name, as OnDiskDataset's (its graph's node_type_to_id, which DGL sorts)
            return gb.ItemSetDict(
                {t: gb.ItemSet(torch.tensor(self._store.num_nodes(t)), names="seed_nodes") for t in sorted(self._store.node_types)}
            )

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
        # The metadata of the task its maker gave (GraphBolt's, kept by from_graphbolt): as given.
        given = types.get("task_metadata")
        if given and len(tasks) == 1:
            tasks[0]._metadata = dict(given)
        return tasks

else:  # pragma: no cover - only without a working GraphBolt

    class Task(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""

    class Dataset(_NoGraphBolt):  # type: ignore[no-redef]
        """Unavailable: dgl.graphbolt could not be imported."""
