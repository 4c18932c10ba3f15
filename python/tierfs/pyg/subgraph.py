"""PyG's ``subgraph_type`` on tierfs's samples.

``"directional"`` keeps a batch's edges as sampled (messages flow neighbor → node it was
sampled for). ``"bidirectional"`` is PyG's ``SamplerOutput.to_bidirectional``: every sampled
edge with its reverse, each pair once, in PyG's order (by destination, then source), without
``num_sampled_nodes``/``num_sampled_edges`` (the hops no longer split the edges). It is made
per batch from the batch's own edges with a few vectorised torch ops (no graph read), on the
device the sample is on. ``"induced"`` is torch-sparse's ``neighbor_sample(directed=False)``,
which PyG runs for it: the nodes sampled as directional sampling samples them, and every edge of
the graph between two of them (:class:`InducedEdges`: one more native call a batch and edge
type, every in-edge of the sampled nodes, kept where the source is sampled too), with their edge
ids, without per-hop counts; not with ``disjoint`` (PyG refuses it too).

Edge ids: one-type batches keep ``e_id`` (PyG's does), an edge's id being that of the first
sampled edge of the same pair in its own direction, else that of its reverse (PyG takes any
one of them). Heterogeneous batches drop the edge ids of every edge type they make
bidirectional, as PyG's ``HeteroSamplerOutput.to_bidirectional`` does (so no ``e_id`` and no
edge features there), and pair edge types as PyG pairs them: ``(a, rel, a)`` with itself,
``(a, rel, b)`` with ``(b, rev_rel, a)``, else with the only edge type from ``b`` to ``a``; an
edge type with no reverse stays directional, with PyG's warning."""

from __future__ import annotations

import copy
import threading
import warnings
from collections import defaultdict
from typing import Any, Dict, Optional, Tuple, Union

import torch
from torch import Tensor
from torch_geometric.sampler import HeteroSamplerOutput, SamplerOutput
from torch_geometric.sampler.base import SubgraphType

from .. import errors

DIRECTIONAL = "directional"
BIDIRECTIONAL = "bidirectional"
INDUCED = "induced"

EdgeType = Tuple[str, str, str]


def subgraph_type_of(value: Any, where: str, disjoint: bool = False) -> str:
    """PyG's ``subgraph_type`` (a ``SubgraphType`` or its name) as ``"directional"``,
    ``"bidirectional"`` or ``"induced"``; another value, or ``"induced"`` with ``disjoint``
    (PyG's refusal), raises ``tierfs.InvalidArgumentError`` naming ``where``."""
    try:
        name = SubgraphType(value).value
    except ValueError:
        raise errors.InvalidArgumentError(
            f"{where}: subgraph_type={value!r}: want 'directional', 'bidirectional' or 'induced' (or torch_geometric.sampler.base.SubgraphType)") from None
    if name == INDUCED and disjoint:
        raise errors.InvalidArgumentError(f"{where}: 'disjoint' sampling not supported for neighbor sampling with `subgraph_type='induced'`")
    return name


def bidirectional_edges(
    row: Tensor,
    col: Tensor,
    edge: Optional[Tensor] = None,
    rev_row: Optional[Tensor] = None,
    rev_col: Optional[Tensor] = None,
    rev_edge: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """The edges ``row → col`` together with the reverses ``rev_col → rev_row`` of a second
    edge list (by default the same one), each distinct pair once, sorted by ``col`` then
    ``row``: PyG's ``to_bidirectional``. With ``edge`` and ``rev_edge`` (``edge`` where the
    second list is the first) the ids of the pairs: a pair's first edge among ``row → col``,
    else its first reverse; None without them."""
    if rev_row is None or rev_col is None:
        rev_row, rev_col, rev_edge = row, col, edge
    src = torch.cat([row, rev_col]).to(torch.int64)
    dst = torch.cat([col, rev_row]).to(torch.int64)
    every = None if edge is None or rev_edge is None else torch.cat([edge, rev_edge]).to(torch.int64)
    if src.numel() == 0:
        return src, dst, every
    width = int(src.max()) + 1
    pairs, which = torch.unique(dst * width + src, sorted=True, return_inverse=True)
    ids = None
    if every is not None:
        # on the edges' device (a CUDA store's batch has them there), the ids where they are (the host)
        first = torch.full((pairs.numel(),), every.numel(), dtype=torch.int64, device=which.device)
        first.scatter_reduce_(0, which, torch.arange(every.numel(), device=which.device), reduce="amin")
        ids = every[first.to(every.device)]
    return pairs % width, pairs // width, ids


def bidirectional_typed(
    rows: Dict[EdgeType, Tensor],
    cols: Dict[EdgeType, Tensor],
    edges: Optional[Dict[EdgeType, Optional[Tensor]]],
) -> Tuple[Dict[EdgeType, Tensor], Dict[EdgeType, Tensor], Optional[Dict[EdgeType, Optional[Tensor]]]]:
    """A heterogeneous sample's ``(rows, cols, edges)`` by edge type made bidirectional as
    PyG's ``HeteroSamplerOutput.to_bidirectional`` makes it (the module's doc): new dicts,
    the edge ids of each edge type made bidirectional None."""
    out_rows, out_cols = dict(rows), dict(cols)
    out_edges = None if edges is None else dict(edges)
    by_ends: Dict[Tuple[str, str], list] = defaultdict(list)
    for et in rows:
        by_ends[(et[0], et[2])].append(et)
    for et in [et for et in rows if not et[1].startswith("rev_")]:
        src, rel, dst = et
        rev = (dst, f"rev_{rel}", src)
        if rev not in rows and src == dst:
            rev = et
        elif rev not in rows:
            found = by_ends.get((dst, src), [])
            if len(found) != 1:
                warnings.warn(f"Cannot convert to bidirectional graph since the edge type {et} does not seem to have a reverse edge type", stacklevel=3)
                continue
            rev = found[0]
        out_rows[et], out_cols[et], _ = bidirectional_edges(rows[et], cols[et], None, rows[rev], cols[rev])
        if out_edges is not None:
            out_edges[et] = None
        if rev != et and rev == (dst, f"rev_{rel}", src):  # the named reverse is the same edges, turned
            out_rows[rev], out_cols[rev] = out_cols[et], out_rows[et]
            if out_edges is not None:
                out_edges[rev] = None
    return out_rows, out_cols, out_edges


def bidirectional_output(out: Union[SamplerOutput, HeteroSamplerOutput]) -> Union[SamplerOutput, HeteroSamplerOutput]:
    """A copy of PyG's sampler output ``out`` made bidirectional (``to_bidirectional()``'s
    result, without ``keep_orig_edges``): its edges as :func:`bidirectional_edges` or
    :func:`bidirectional_typed` make them, no per-hop counts."""
    out = copy.copy(out)
    out.num_sampled_nodes = out.num_sampled_edges = None
    if isinstance(out, HeteroSamplerOutput):
        out.row, out.col, out.edge = bidirectional_typed(out.row, out.col, out.edge)
    else:
        out.row, out.col, out.edge = bidirectional_edges(out.row, out.col, out.edge)
    return out


def _positions(nodes: Tensor, ids: Tensor) -> Tensor:
    """Each of ids' position in nodes (its first), -1 where nodes lacks it."""
    if nodes.numel() == 0 or ids.numel() == 0:
        return torch.full_like(ids, -1)
    order = torch.argsort(nodes, stable=True)
    ranked = nodes[order]
    at = torch.searchsorted(ranked, ids).clamp_(max=ranked.numel() - 1)
    return torch.where(ranked[at] == ids, order[at], torch.full_like(at, -1))


class InducedEdges:
    """Every edge of a store's graph between two nodes of a sample (PyG's
    ``subgraph_type="induced"``): per edge type, one native call takes every in-edge of the
    sample's nodes of its destination type (fanout -1, one hop), and the edges whose source is
    one of the sample's nodes are kept, in local ids of the sample, with their edge ids (CSC
    positions, as a sample's), by destination in the sample's order. Thread-safe (the samplers
    are)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._samplers: Dict[Any, Any] = {}  # edge type (None: a one-type store's) -> one-hop sampler of all its in-edges
        self._lock = threading.Lock()  # the pipeline's threads make batches at once

    def __getstate__(self) -> Dict[str, Any]:
        return {"store": self.store}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["store"])  # type: ignore[misc]

    def _sampler(self, edge_type: Optional[EdgeType]) -> Any:
        with self._lock:
            if edge_type not in self._samplers:
                if edge_type is None:
                    fanouts: Any = [-1]
                else:
                    fanouts = {tuple(e): [-1 if tuple(e) == edge_type else 0] for e in self.store.edge_types}
                self._samplers[edge_type] = self.store.sampler(fanouts)
            return self._samplers[edge_type]

    def _of(self, edge_type: Optional[EdgeType], sources: Tensor, targets: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """(row, col, edge) of the graph's edges of edge_type from a node of sources into one of targets."""
        if targets.numel() == 0:
            empty = torch.empty(0, dtype=torch.int64, device=targets.device)
            return empty, empty, empty
        if edge_type is None:
            s = self._sampler(None).sample(targets)
            src, col, edge = s.nodes[s.row], s.col, s.e_id
        else:
            s = self._sampler(edge_type).sample(targets, edge_type[2])
            src, col, edge = s.node[edge_type[0]][s.rows[edge_type]], s.cols[edge_type], s.edge[edge_type]
        row = _positions(sources, src.to(sources.device))
        keep = row >= 0
        return row[keep], col[keep.to(col.device)], edge[keep.to(edge.device)]

    def sample(self, s: Any) -> Any:
        """A copy of the tierfs sample s (one-type or typed, torch) with the induced edges of its
        nodes as its edges."""
        out = copy.copy(s)
        out.rows, out.cols, out.edge = {}, {}, {}
        for key in s.rows:  # the edges where the sample had them (a CUDA store's: on the device), ids where its ids are
            row, col, edge = self._of(None, s.nodes, s.nodes) if not s.typed else self._of(tuple(key), s.node[key[0]], s.node[key[2]])
            device = s.rows[key].device
            out.rows[key], out.cols[key], out.edge[key] = row.to(device), col.to(device), edge.to(s.edge[key].device)
        return out
