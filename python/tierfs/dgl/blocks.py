"""Samples as DGL blocks: ``sample_to_blocks``, the fanouts and seeds of a heterogeneous
sampler."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

import dgl

import tierfs
from tierfs.hetero import edge_type_tuple

from ._common import _ids_tensor, dgl_edge_ids


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
    """DGL blocks of a :class:`tierfs.Sample`: ``(input_nodes, output_nodes, blocks)``, blocks
    from the input layer (farthest hop) to the output layer (whose dst nodes are the seeds).

    Block ``i`` of ``L`` (hop ``h = L-1-i``) has, of every node type, the nodes of hops 0..h+1
    as src nodes and those of hops 0..h as dst nodes (so dst nodes are a prefix of src nodes,
    and a block's dst nodes are the next block's src nodes), their ids in ``dgl.NID``; of every
    edge type the edges of hops 0..h (``cumulative``) or of hop h alone, in the sample's local
    ids, each with its id in ``dgl.EID`` (when the sample has edge ids): with ``store`` (the
    store sampled) DGL's edge id (:func:`dgl_edge_ids`: its position in the input of its edge
    type the dataset was ingested from, PyG's ``e_id``), else the sample's own id (its CSC
    position).

    An untyped sample (a homogeneous graph's) gives DGL's homogeneous blocks (``srcdata``,
    ``dstdata``, ``edata``) and ``input_nodes`` / ``output_nodes`` as id tensors. A typed one
    (fanouts by edge type: a store of several types, or of one type its maker named) gives
    heterogeneous blocks, ``dgl.create_block`` over every canonical edge type ``(src, rel, dst)``
    of the sample with every node type as a src and a dst type (``srcnodes[t].data[dgl.NID]``,
    ``edges[etype].data[dgl.EID]``), ``input_nodes`` ``{t: ids}`` of every node type and
    ``output_nodes`` ``{seed type: seeds}``. This is what ``dgl.to_block(frontier, dst_nodes)``
    makes of the same edges with cumulative edges, up to the order of the src nodes after the
    dst nodes (DGL numbers them in the order its edges reach them; tierfs in the order the
    sampler first reached them).

    ``exclude_eids`` (edge ids, numbered as ``dgl.EID``; ``{etype: ids}`` for a typed sample,
    keyed by ``(src, rel, dst)``, ``"src:rel:dst"`` or a relation naming one edge type) leaves
    those edges out of every block after the draw, as GraphBolt's ``exclude_seed_edges`` does:
    a node keeps the other neighbors it drew (no redraw), and a node reached only through an
    excluded edge stays among the src nodes (its other edges, if any, are kept).
    """
    typed = bool(sample.typed)
    ntypes, etypes = list(sample.node), list(sample.rows)
    nodes = {t: _ids_tensor(sample.node[t]) for t in ntypes}
    nph = {t: [int(c) for c in sample.num_sampled_nodes[t]] for t in ntypes}
    eph = {e: [int(c) for c in sample.num_sampled_edges[e]] for e in etypes}
    num_hops = max((len(v) for v in eph.values()), default=0)
    if num_hops == 0 or any(len(v) != num_hops for v in eph.values()) or any(len(v) != num_hops + 1 for v in nph.values()):
        raise tierfs.Error(
            f"tierfs.dgl: the sample has {num_hops} hops, node counts per type {[len(v) for v in nph.values()]} and "
            f"edge counts per edge type {[len(v) for v in eph.values()]}; want hops >= 1, hops+1 node counts and hops edge counts"
        )
    row = {e: _ids_tensor(sample.rows[e]) for e in etypes}
    col = {e: _ids_tensor(sample.cols[e]) for e in etypes}
    eid = {e: None if sample.edge.get(e) is None else _ids_tensor(sample.edge[e]) for e in etypes}
    if store is not None:
        eid = {e: None if ids is None else dgl_edge_ids(store, ids, e if typed else None) for e, ids in eid.items()}
    for key, ids in (_typed_exclude(etypes, exclude_eids) if typed else _untyped_exclude(etypes, exclude_eids)).items():
        what = f"edge type {key}" if typed else "sample"
        row[key], col[key], eid[key], eph[key] = _drop_edges(row[key], col[key], eid[key], eph[key], ids, what)
    node_prefix = {t: np.cumsum(nph[t]).tolist() for t in ntypes}  # nodes of hops 0..h: [:node_prefix[t][h]]
    edge_prefix = {e: np.cumsum([0] + eph[e]).tolist() for e in etypes}  # hop h: [edge_prefix[e][h], [h+1])
    for t in ntypes:
        if node_prefix[t][-1] != nodes[t].numel():
            raise tierfs.Error(f"tierfs.dgl: sample: node type {t!r} sizes do not add up")
    for e in etypes:
        m = edge_prefix[e][-1]
        if not m == row[e].numel() == col[e].numel() or (eid[e] is not None and eid[e].numel() != m):
            raise tierfs.Error(f"tierfs.dgl: sample: edge type {e} sizes do not add up")
    blocks = []
    for h in reversed(range(num_hops)):
        ranges = {e: (0 if cumulative else edge_prefix[e][h], edge_prefix[e][h + 1]) for e in etypes}
        data = {e: (row[e][lo:hi], col[e][lo:hi]) for e, (lo, hi) in ranges.items()}
        num_src = {t: node_prefix[t][h + 1] for t in ntypes}
        num_dst = {t: node_prefix[t][h] for t in ntypes}
        if typed:
            block = dgl.create_block(data, num_src_nodes=num_src, num_dst_nodes=num_dst, idtype=torch.int64)
            src_of, dst_of = {t: block.srcnodes[t].data for t in ntypes}, {t: block.dstnodes[t].data for t in ntypes}
            edges_of = {e: block.edges[e].data for e in etypes}
        else:  # DGL's one-type block: its own type names ("_N", "_E") stand for the sample's
            (t,), (e,) = ntypes, etypes
            block = dgl.create_block(data[e], num_src_nodes=num_src[t], num_dst_nodes=num_dst[t], idtype=torch.int64)
            src_of, dst_of, edges_of = {t: block.srcdata}, {t: block.dstdata}, {e: block.edata}
        for t in ntypes:
            src_of[t][dgl.NID] = nodes[t][: num_src[t]]
            dst_of[t][dgl.NID] = nodes[t][: num_dst[t]]
        for e in etypes:
            if eid[e] is not None:
                lo, hi = ranges[e]
                edges_of[e][dgl.EID] = eid[e][lo:hi]
        blocks.append(block)
    seed_type = sample.seed_type
    input_nodes = dict(nodes) if typed else nodes[seed_type]
    output_nodes = nodes[seed_type][: node_prefix[seed_type][0]]
    if typed:
        output_nodes = {seed_type: output_nodes}
    if device is not None and torch.device(device).type != "cpu":
        device = torch.device(device)
        blocks = [b.to(device) for b in blocks]
        moved = lambda v: {t: x.to(device) for t, x in v.items()} if typed else v.to(device)  # noqa: E731
        input_nodes, output_nodes = moved(input_nodes), moved(output_nodes)
    return input_nodes, output_nodes, blocks


def _untyped_exclude(etypes, exclude_eids) -> dict:
    """``exclude_eids`` of an untyped sample (edge ids, or DGL's ``{etype: ids}`` of its one
    edge type) keyed by the sample's edge type."""
    if exclude_eids is None:
        return {}
    if isinstance(exclude_eids, Mapping):
        if len(exclude_eids) != 1:
            raise tierfs.InvalidArgumentError("tierfs.dgl: exclude_eids of a one-type store is edge ids (or a dict of one edge type)")
        (exclude_eids,) = exclude_eids.values()
    (e,) = etypes
    return {e: exclude_eids}


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
