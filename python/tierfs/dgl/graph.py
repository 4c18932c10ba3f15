"""DGL graphs and storages of a store: ``dgl_graph`` (the whole topology), ``FeatureStorage`` and
``GraphStorage`` for DGL's classic dataloaders."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

import dgl
import dgl.dataloading
import dgl.storages

import tierfs

from ._common import FEATURE, LABEL, _TypedColumn, _check_kind, _ids_tensor, _input_order, _is_hetero, _read_rows


def dgl_graph(store):
    """The store's whole topology as a ``DGLGraph`` (edges neighbor -> node, int64 ids, edge ``i``
    the input's edge ``i``: the ``dgl.EID`` of this module's blocks; see "Edge ids" in the module
    docstring). Materialises every edge in memory (``Store.csc()``): for graphs that fit.

    A heterogeneous store gives a heterograph with every node type (its node count) and every
    canonical edge type ``(src, rel, dst)``, edge ``i`` of an edge type being its input's edge
    ``i`` (``dgl.EID`` of :func:`sample_to_blocks`'s blocks with ``store``)."""
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
        num_nodes=store.num_nodes(),
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
    num_nodes = {t: store.num_nodes(t) for t in store.node_types}
    src = {e: np.empty(store.num_edges(e), dtype=np.int64) for e in etypes}
    dst = {e: np.empty(store.num_edges(e), dtype=np.int64) for e in etypes}
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
        return self._column.count if self._column is not None else self.store.num_nodes(self.store.node_type)

    @property
    def shape(self):
        if self._column is not None:
            return (self._column.count,) + tuple(self._column.size())
        n = self.store.num_nodes(self.store.node_type)
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

    # DGL's names of a one-type graph ("_N", "_E") are not the store's: they ask for the only type.
    def num_nodes(self, ntype=None) -> int:
        return self.store.num_nodes(ntype if self.hetero else None)

    def num_edges(self, etype=None) -> int:
        return self.store.num_edges(etype if self.hetero else None)

    @property
    def ntypes(self):
        return list(self.store.node_types) if self.hetero else ["_N"]

    @property
    def canonical_etypes(self):
        return list(self.store.edge_types) if self.hetero else [("_N", "_E", "_N")]
