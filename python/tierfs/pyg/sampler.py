"""Sampling in tierfs for PyG's loaders: ``NeighborSampler`` (a PyG ``BaseSampler``), PyG's
``num_neighbors`` and ``input_nodes`` forms, link sampling's inputs and outputs."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.sampler import BaseSampler, EdgeSamplerInput, HeteroSamplerOutput, NegativeSampling, NodeSamplerInput, NumNeighbors, SamplerOutput
from torch_geometric.typing import EdgeTypeStr

from .. import errors
from .._sample import _to_torch
from ..hetero import edge_type_tuple
from ..store import Store
from ..edgeids import input_edge_ids
from .stores import EDGE_TYPE, FeatureStore, GraphStore, _unwrap
from .subgraph import BIDIRECTIONAL, DIRECTIONAL, INDUCED, InducedEdges, bidirectional_output, subgraph_type_of


def _edge_type_of(key: Any) -> Tuple[str, str, str]:
    """An edge type key of num_neighbors as a tuple: PyG's tuple, its ``EdgeTypeStr``
    (``"src__rel__dst"``) or tierfs's ``"src:rel:dst"``."""
    if isinstance(key, EdgeTypeStr):
        return tuple(key.to_tuple())  # type: ignore[return-value]
    if isinstance(key, tuple) and len(key) == 2:  # (src, dst): PyG's NumNeighbors reads (src, "to", dst)
        return tuple(EdgeTypeStr(key).to_tuple())  # type: ignore[return-value]
    if isinstance(key, str) and ":" not in key and len(key.split("__")) == 3:
        return tuple(key.split("__"))  # type: ignore[return-value]
    return edge_type_tuple(key)


def _edge_type_key(key: Any) -> Optional[Tuple[str, str, str]]:
    """key as an edge type tuple, or None when it names none."""
    try:
        return _edge_type_of(key)
    except (errors.Error, TypeError, ValueError):
        return None


def _fanouts(value: Any, what: str) -> List[int]:
    """value as a list of int fanouts, or an InvalidArgumentError naming what."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise errors.InvalidArgumentError(f"tierfs.pyg: {what} must be a list of neighbors per hop (ints, -1 for all), got {value!r}")
    out = []
    for k in value:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) and not (isinstance(k, Tensor) and k.numel() == 1 and not k.is_floating_point()):
            raise errors.InvalidArgumentError(f"tierfs.pyg: {what} must be a list of neighbors per hop (ints, -1 for all), got {value!r}")
        out.append(int(k))
    return out


def num_neighbors_of(store: Store, num_neighbors: Any) -> Union[List[int], Dict[Tuple[str, str, str], List[int]]]:
    """PyG's ``num_neighbors`` resolved against a store: a list of fanouts per hop for a one-type
    store; for a heterogeneous one ``{edge type: [fanout per hop]}`` over every edge type of the
    dataset. Takes a list (every edge type alike), a dict keyed by edge type (tuples,
    ``EdgeTypeStr`` or ``"src:rel:dst"``) or PyG's ``NumNeighbors`` (its ``default`` fills the
    edge types the dict leaves out). An edge type the dataset lacks, one left out with no
    default, or hop counts that differ raise ``tierfs.InvalidArgumentError`` (a ``ValueError``) naming it, in
    PyG's words."""
    default = None
    if isinstance(num_neighbors, NumNeighbors):
        default = num_neighbors.default
        num_neighbors = num_neighbors.values
    if isinstance(num_neighbors, (int, np.integer)) or isinstance(num_neighbors, (str, bytes)):
        raise errors.InvalidArgumentError(f"tierfs.pyg: num_neighbors must be a list of neighbors per hop or a dict of them per edge type, got {num_neighbors!r}")
    if not store.is_hetero:
        if isinstance(num_neighbors, Mapping):
            only = [tuple(et) for et in store.edge_types] or [EDGE_TYPE]
            keys = list(num_neighbors)
            if len(keys) != 1 or _edge_type_key(keys[0]) not in only:
                raise errors.InvalidArgumentError(
                    f"tierfs.pyg: num_neighbors {num_neighbors!r}: this dataset has one node type and one edge type ({only[0]}); "
                    f"pass a list of neighbors per hop (or a dict with that one edge type)")
            fanouts = num_neighbors[keys[0]]
            return _fanouts([fanouts] if isinstance(fanouts, (int, np.integer)) else fanouts, f"num_neighbors[{keys[0]!r}]")
        return _fanouts(num_neighbors, "num_neighbors")
    edge_types = [tuple(et) for et in store.edge_types]
    if not isinstance(num_neighbors, Mapping):
        per_hop = _fanouts(num_neighbors, "num_neighbors")
        return {et: list(per_hop) for et in edge_types}
    given: Dict[Tuple[str, str, str], List[int]] = {}
    for key, fanouts in num_neighbors.items():
        et = _edge_type_of(key)
        if et not in edge_types:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg: Not all edge types specified in 'num_neighbors' exist in the graph: {et} does not (it has {', '.join(map(str, edge_types))})")
        given[et] = _fanouts([fanouts] if isinstance(fanouts, (int, np.integer)) else fanouts, f"num_neighbors[{key!r}]")
    out: Dict[Tuple[str, str, str], List[int]] = {}
    for et in edge_types:
        if et in given:
            out[et] = given[et]
        elif default is not None:
            out[et] = _fanouts(default, "num_neighbors.default")
        else:
            raise errors.InvalidArgumentError(
                f"tierfs.pyg: Missing number of neighbors for edge type '{et}' in num_neighbors (give every edge type of the dataset, "
                f"or torch_geometric.sampler.NumNeighbors(values, default=[...]) for those left out)")
    hops = {len(v) for v in out.values()}
    if len(hops) > 1:
        raise errors.InvalidArgumentError(f"tierfs.pyg: Number of hops must be the same across all edge types in num_neighbors, got {out}")
    return out


class NeighborSampler(BaseSampler):
    """k-hop neighbor sampling in the tierfs core (uniform, or by ``weight_attr``), as a PyG
    ``BaseSampler``.

    ``sample_from_nodes`` is one native call per batch and returns a ``SamplerOutput`` with
    ``node`` (seeds first, in input order), ``row``/``col`` (local ids; messages flow row → col),
    ``num_sampled_nodes``/``num_sampled_edges`` per hop (for ``trim_to_layer``), ``edge`` the
    sampled edges' positions in the ingested ``edge_index`` (PyG's loaders set ``batch.e_id``
    from it, so ``edge_attr[batch.e_id]`` of the user's own tensors is right, as in memory;
    :func:`csc_edge_ids` gives tierfs's CSC positions) and ``batch`` (with ``disjoint=True`` each
    node's seed index, else None).

    On a heterogeneous store (``store.is_hetero``) ``num_neighbors`` is PyG's dict of fanouts
    per edge type (or a ``NumNeighbors``, or a list for every edge type; see
    :func:`num_neighbors_of`), the input's ``input_type`` names the seeds' node type, and
    ``sample_from_nodes`` returns a ``HeteroSamplerOutput`` laid out as PyG's NeighborSampler
    lays it out: per node type the sampled ids (seeds first, then by hop), per edge type
    ``row`` (src-type local ids), ``col`` (dst-type local ids) and ``edge`` (edge ids), counts
    per hop per type, ``batch=None``, ``metadata=(input_id, time)``.

    Args:
        store: a :class:`tierfs.Store` (or one of this module's stores).
        num_neighbors: neighbors per node per hop, e.g. ``[25, 10]``; -1 takes all. For a
            heterogeneous store, a dict ``{(src, rel, dst): [per hop]}`` or ``NumNeighbors``.
        replace: sample with replacement.
        seed: the i-th call samples with ``seed + i``: same seed, same batches.
        workers: goroutines of the sampler (0: CPUs); results do not depend on it.
        strict_negatives, exclude_seed_edges, undirected: link sampling only (beyond PyG):
            redraw negatives that are edges; leave the seed edges (and with ``undirected``
            their reverses) out of the sampled neighborhoods.
        weight_attr: an edge feature of one value an edge (PyG's ``weight_attr``): neighbors are
            drawn in proportion to it, as pyg-lib draws them (:meth:`tierfs.Store.sampler`).
        disjoint: every seed its own tree, as PyG's ``disjoint=True`` (a node reached from two
            seeds is a node of each; the output's ``batch`` holds each node's seed index, per node
            type on a heterogeneous store): nodes only (``sample_from_edges`` refuses it), on the
            host.
        time_attr, temporal_strategy: PyG's temporal sampling, as pyg-lib samples
            (:meth:`tierfs.Store.sampler`'s ``time``): ``time_attr`` names a node feature
            (node-level time) or an edge feature (edge-level time); a seed's tree takes only
            neighbors of time at most the seed's (``NodeSamplerInput.time``, else the seed's own
            node time), ``"uniform"`` among them or the ``"last"`` (latest) ones. Disjoint, with
            disjoint's limits.
        reverse_edge_types: heterogeneous link sampling with ``exclude_seed_edges``:
            ``{edge type: the edge type holding its reverses}`` (DGL's ``reverse_etypes``; e.g.
            ``{("author", "writes", "paper"): ("paper", "rev_writes", "author")}``), whose
            reverses of the seed edges are left out too.
        subgraph_type: PyG's: ``"directional"`` (as sampled), ``"bidirectional"`` (every
            sampled edge with its reverse, as PyG's ``to_bidirectional``) or ``"induced"``
            (every graph edge among the sampled nodes, as torch-sparse's; not with
            ``disjoint``): :mod:`tierfs.pyg.subgraph`. Neither has per-hop counts.
        sample_direction: PyG's; only ``"forward"`` (neighbors along in-edges): ``"backward"``
            raises ``tierfs.NotSupportedError``.
    """

    def __init__(
        self,
        store: Union[Store, FeatureStore, GraphStore],
        num_neighbors: Any,
        replace: bool = False,
        seed: int = 0,
        workers: int = 0,
        strict_negatives: bool = False,
        exclude_seed_edges: bool = False,
        undirected: bool = False,
        reverse_edge_types: Optional[Dict[Any, Any]] = None,
        weight_attr: Optional[str] = None,
        disjoint: bool = False,
        time_attr: Optional[str] = None,
        temporal_strategy: str = "uniform",
        subgraph_type: Any = DIRECTIONAL,
        sample_direction: str = "forward",
    ) -> None:
        super().__init__()
        if sample_direction != "forward":  # PyG 2.8's "backward" samples along out-edges
            raise errors.NotSupportedError(
                f"tierfs.pyg.NeighborSampler: sample_direction={sample_direction!r}: tierfs samples along in-edges only "
                "(PyG's 'forward'); for 'backward', ingest the reversed edge_index and sample it forward")
        self.subgraph_type = subgraph_type_of(subgraph_type, "tierfs.pyg.NeighborSampler", disjoint)
        self.store = _unwrap(store)
        self.num_neighbors = num_neighbors_of(self.store, num_neighbors)
        self.replace = bool(replace)
        self.seed = int(seed)
        self.weight_attr = weight_attr
        if self.store.is_hetero:
            if undirected:
                raise errors.InvalidArgumentError("undirected: a heterogeneous store names the reverse of each edge type instead (reverse_edge_types={edge type: reverse edge type})")
            self.link_options: Dict[str, Any] = dict(strict=bool(strict_negatives), exclude_seed_edges=bool(exclude_seed_edges), reverse_edge_types=reverse_edge_types)
        else:
            if reverse_edge_types:
                raise errors.InvalidArgumentError("reverse_edge_types: a homogeneous store has one edge type; pass undirected=True when it holds each edge's reverse")
            self.link_options = dict(strict=bool(strict_negatives), exclude_seed_edges=bool(exclude_seed_edges), undirected=bool(undirected))
        self.time_attr, self.temporal_strategy = time_attr, temporal_strategy
        self.sampler = self.store.sampler(self.num_neighbors, replace=replace, seed=seed, workers=workers, weight=weight_attr, disjoint=disjoint,
                                          time=time_attr, temporal_strategy=temporal_strategy)
        self._induced = InducedEdges(self.store) if self.subgraph_type == INDUCED else None

    @property
    def is_temporal(self) -> bool:
        return self.time_attr is not None

    @property
    def is_hetero(self) -> bool:
        return self.sampler.typed

    @property
    def disjoint(self) -> bool:
        return self.sampler.disjoint

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> Union[SamplerOutput, HeteroSamplerOutput]:
        seeds = index.node
        if seeds.device.type != "cpu":
            seeds = seeds.cpu()
        if self.is_hetero:
            if index.input_type is None:
                raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborSampler: name the seeds' node type (input_type, one of {', '.join(self.store.node_types)})")
            seed_time = index.time if self.is_temporal else None  # pyg-lib reads seed times of a temporal sample alone
            return self._output(self.sampler.sample(seeds, index.input_type, seed_time=seed_time), (index.input_id, index.time))
        if index.input_type is not None and index.input_type != self.store.node_type:
            raise ValueError(f"tierfs holds one node type; got input_type {index.input_type!r}")
        seed_time = index.time if self.is_temporal else None  # pyg-lib reads seed times of a temporal sample alone
        return self._output(self.sampler.sample(seeds, seed_time=seed_time), (index.input_id, index.time))

    def sample_from_edges(self, inputs: EdgeSamplerInput, neg_sampling: Optional[NegativeSampling] = None) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """Samples around the seed edges ``(inputs.row[i], inputs.col[i])`` in one native call
        (:meth:`tierfs.Sampler.sample_from_edges`) and returns PyG's ``SamplerOutput`` as PyG's
        NeighborSampler's ``edge_sample`` (``disjoint=False``) lays it out: ``node`` the sorted
        distinct endpoints of the seed edges and negatives first, then each hop's new nodes;
        ``metadata = (input_id, edge_label_index, edge_label, None)`` without negatives or with
        ``"binary"`` ones, ``(input_id, src_index, dst_pos_index, dst_neg_index, None)`` with
        ``"triplet"`` ones. On a heterogeneous store ``inputs.input_type`` names the seed edges'
        type and the answer is a ``HeteroSamplerOutput`` (per node type, the sorted distinct
        endpoints of that type first) with the same metadata, sources as local ids of the edge
        type's source type, destinations of its destination type. No weighted negatives.

        A disjoint sampler lays it out as ``edge_sample`` with ``disjoint=True``: every endpoint
        of a seed edge and negative its own tree, in PyG's order, ``batch`` each node's tree mod
        the seed edges, the label indices the seeds' positions. A temporal one (``time_attr``)
        samples at ``inputs.time`` (PyG's ``edge_label_time``, which it needs), both endpoints'
        trees and their negatives', and the metadata's last entry is PyG's ``src_time`` (the
        times repeated over binary negatives)."""
        if inputs.time is not None and not self.disjoint:
            raise errors.InvalidArgumentError("tierfs.pyg.NeighborSampler: edge_label_time (inputs.time) on a sampler that is not disjoint; PyG's edge_sample samples in time disjoint (time_attr or disjoint=True)")
        if self.is_temporal and inputs.time is None:
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborSampler: a temporal sampler (time_attr={self.time_attr!r}) samples seed edges at their times: give edge_label_time (inputs.time)")
        if self.is_hetero:
            return self._sample_hetero_from_edges(inputs, neg_sampling)
        if inputs.input_type is not None and tuple(inputs.input_type) != EDGE_TYPE:
            raise ValueError(f"tierfs holds one edge type, {EDGE_TYPE}; got input_type {inputs.input_type!r}")
        row, col = _host_pair(inputs)
        s = self.sampler.sample_from_edges(row, col, labels=inputs.label, neg_sampling=neg_sampling, edge_label_time=self._link_time(inputs), **self.link_options)
        return self._link_output(inputs, s, neg_sampling)

    def _link_time(self, inputs: EdgeSamplerInput) -> Any:
        """The seed edges' times the core samples at: a temporal sampler's inputs.time (pyg-lib
        reads seed times of a temporal sample alone)."""
        return inputs.time if self.is_temporal else None

    def _link_output(self, inputs: EdgeSamplerInput, s: Any, neg_sampling: Optional[NegativeSampling]) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """PyG's sampler output of the link sample s of the seed edges inputs (a
        :class:`tierfs.LinkSample`, torch tensors)."""
        return self._output(s, _link_metadata(inputs, s, neg_sampling))

    def _sample_hetero_from_edges(self, inputs: EdgeSamplerInput, neg_sampling: Optional[NegativeSampling]) -> HeteroSamplerOutput:
        """sample_from_edges on a heterogeneous store (a typed Sampler.sample_from_edges)."""
        if inputs.input_type is None:
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborSampler: name the seed edges' type (input_type, one of {self.store.edge_types})")
        row, col = _host_pair(inputs)
        h = self.sampler.sample_from_edges(tuple(inputs.input_type), row, col, labels=inputs.label, neg_sampling=neg_sampling,
                                           edge_label_time=self._link_time(inputs), **self.link_options)
        return self._link_output(inputs, h, neg_sampling)

    def _output(self, s: Any, metadata: tuple) -> Union[SamplerOutput, HeteroSamplerOutput]:
        """PyG's sampler output of sample s (a typed sample on a heterogeneous store, else a
        :class:`tierfs.Sample` or :class:`tierfs.LinkSample`; torch tensors) with metadata."""
        if self._induced is not None:
            s = self._induced.sample(s)
        batch = None if s.batch is None else (s.batch if self.is_hetero else s.batch[_only_key(s.batch)])
        both = dict(row=s.row, col=s.col, batch=batch, metadata=metadata)
        if self.is_hetero:
            edge = _input_edge_ids_by_type(self.store, s.edge)
            out: Union[SamplerOutput, HeteroSamplerOutput] = HeteroSamplerOutput(
                node=s.node, edge=edge, num_sampled_nodes=s.num_sampled_nodes, num_sampled_edges=s.num_sampled_edges, **both)
        else:
            edge = input_edge_ids(self.store, s.e_id)
            out = SamplerOutput(node=s.nodes, edge=edge, num_sampled_nodes=s.nodes_per_hop.tolist(), num_sampled_edges=s.edges_per_hop.tolist(), **both)
        if self.subgraph_type == BIDIRECTIONAL:
            return bidirectional_output(out)
        if self.subgraph_type == INDUCED:  # torch-sparse's induced sample has no per-hop counts
            out.num_sampled_nodes = out.num_sampled_edges = None
        return out

    def __repr__(self) -> str:
        kind = "" if self.subgraph_type == DIRECTIONAL else f", subgraph_type={self.subgraph_type!r}"
        return f"tierfs.pyg.NeighborSampler(num_neighbors={self.num_neighbors}, replace={self.replace}, seed={self.seed}{kind})"


def _only_key(d: Dict[Any, Any]) -> Any:
    """The one key of a one-type sample's dict."""
    return next(iter(d))


def _host_pair(inputs: EdgeSamplerInput) -> tuple:
    """The seed edges' (row, col) on the host, where the sampler takes them."""
    row, col = inputs.row, inputs.col
    if row.device.type != "cpu":
        row, col = row.cpu(), col.cpu()
    return row, col


def _link_sample_to_torch(s: Any) -> Any:
    """A numpy LinkSample (a plan's) as the sampler gives it for CPU torch seed edges: every
    array a torch tensor."""
    return _to_torch(s, None)


def _link_metadata(inputs: EdgeSamplerInput, s: Any, neg_sampling: Optional[NegativeSampling]) -> tuple:
    """The metadata PyG's LinkLoader expects of a link sample s (one type's or several types'):
    triplet (input_id, src_index, dst_pos_index, dst_neg_index, src_time), else (input_id,
    edge_label_index, edge_label, src_time) — the input's labels as they are without negatives;
    src_time is edge_sample's: inputs.time (None without), repeated over binary negatives."""
    src_time = inputs.time
    if neg_sampling is not None and NegativeSampling.cast(neg_sampling).is_triplet():
        return (inputs.input_id, s.src_index, s.dst_pos_index, s.dst_neg_index, src_time)
    edge_label = s.edge_label
    if inputs.label is not None and neg_sampling is None:
        edge_label = inputs.label  # PyG passes the input's labels through as they are
    if src_time is not None and neg_sampling is not None:
        amount = NegativeSampling.cast(neg_sampling).amount
        src_time = src_time.repeat(1 + math.ceil(amount))[: s.edge_label_index.size(1)]
    return (inputs.input_id, s.edge_label_index, edge_label, src_time)


def _input_edge_ids_by_type(store: Store, edges: Dict[Any, Any]) -> Dict[Any, Any]:
    """input_edge_ids of each edge type's sampled edge ids (None stays None)."""
    return {et: None if e is None else input_edge_ids(store, e, et) for et, e in edges.items()}


# PyG NeighborLoader arguments that have no meaning here, and the value that is fine to pass.
_PYG_ONLY = {
    "input_time": None,
    "disjoint": False,
    "temporal_strategy": "uniform",
    "time_attr": None,
    "transform_sampler_output": None,
    "is_sorted": False,
    "filter_per_worker": None,
    "neighbor_sampler": None,
    "directed": True,
}


def _hetero_input_nodes(store: Store, input_nodes: Any) -> Tuple[str, Tensor]:
    """PyG's heterogeneous input_nodes, ``node_type`` or ``(node_type, None | split name | mask |
    ids)``, as (node type, int64 CPU ids)."""
    types = store.node_types
    if isinstance(input_nodes, str):
        input_nodes = (input_nodes, None)
    if not (isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str)):
        raise errors.InvalidArgumentError(
            f"tierfs.pyg.NeighborLoader: a heterogeneous dataset takes input_nodes=(node type, ids, mask, split name or None), got {input_nodes!r} (node types: {', '.join(types)})")
    node_type, nodes = input_nodes
    if node_type not in types:
        raise errors.KeyNotFoundError(f"tierfs.pyg.NeighborLoader: input_nodes names node type {node_type!r}, which the dataset lacks (it has {', '.join(types)})")
    return node_type, _input_nodes(store, nodes, node_type)


def _input_nodes(store: Store, input_nodes: Any, node_type: Optional[str] = None) -> Tensor:
    """PyG's input_nodes forms as int64 CPU ids (of node_type; None: the only one): None
    (every node), a split name ("valid" is "val"), a bool mask of num_nodes, or ids (numpy,
    torch, list)."""
    n = store.num_nodes(node_type)
    if input_nodes is None:
        return torch.arange(n)
    if isinstance(input_nodes, str):
        names = store.split_names if node_type is None else list(store.types["node_types"][node_type]["splits"])
        name = "val" if input_nodes == "valid" and "valid" not in names else input_nodes
        if name not in names:
            of = "" if node_type is None else f" of node type {node_type!r}"
            raise errors.KeyNotFoundError(f"tierfs.pyg.NeighborLoader: input_nodes {input_nodes!r} is not a split{of} of this dataset (it has {names})")
        return torch.from_numpy(store.split(name, node_type=node_type))
    if isinstance(input_nodes, tuple):
        raise errors.NotSupportedError(f"tierfs.pyg.NeighborLoader: input_nodes {input_nodes!r}: tierfs holds one node type; pass the ids, a mask or a split name")
    if isinstance(input_nodes, (list, range)):
        input_nodes = np.asarray(input_nodes) if len(input_nodes) else np.empty(0, dtype=np.int64)
    if isinstance(input_nodes, np.ndarray):
        input_nodes = torch.from_numpy(input_nodes)
    if not isinstance(input_nodes, Tensor):
        raise errors.DTypeError(f"tierfs.pyg.NeighborLoader: input_nodes must be None, a split name, a mask or node ids, got {type(input_nodes).__name__}")
    t = input_nodes.detach().cpu()
    if t.dtype == torch.bool:
        if t.dim() != 1 or t.numel() != n:
            raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: a mask as input_nodes needs one entry per node ({n}), got shape {tuple(t.shape)}")
        return t.nonzero().view(-1)
    if t.is_floating_point() or t.is_complex():
        raise errors.DTypeError(f"tierfs.pyg.NeighborLoader: input_nodes must be integer ids or a bool mask, got {t.dtype}")
    if t.dim() != 1:
        raise errors.InvalidArgumentError(f"tierfs.pyg.NeighborLoader: input_nodes must be 1-D, got shape {tuple(t.shape)}")
    t = t.to(torch.int64)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
        bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
        raise errors.OutOfRangeError(f"tierfs.pyg.NeighborLoader: input_nodes holds {bad}, outside [0, {n})")
    return t
