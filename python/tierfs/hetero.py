"""Heterogeneous graphs: node types, edge types, and sampling with fanouts per edge type.

A dataset of format version 5 holds several node types (each with its own features, labels and
splits) and several edge types ``(src, rel, dst)``. Ids are local to their type, as in PyG's
``HeteroData`` and GraphBolt. A :class:`tierfs.Store` serves every type: ``store.gather(ids,
node_type="paper")``, ``store.labels(ids, node_type=...)``, ``store.split("train",
node_type=...)``, and ``store.sampler({("author", "writes", "paper"): [10, 5], ...})`` gives a
:class:`tierfs.Sampler` of fanouts per edge type (typed samples). Edge types are given as PyG's
tuples or GraphBolt's ``"src:rel:dst"`` strings and come back as tuples.

This module imports neither store nor the sampler nor the front ends (they import it).
"""

from __future__ import annotations

from ctypes import byref
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Tuple, Union

import numpy as np

from . import errors
from ._args import IdsLike, _c_str, _fanouts, _ids
from ._native import check, lib

if TYPE_CHECKING:  # annotations only: store imports this module
    from .store import Store

__all__ = ["EdgeType", "edge_type_key", "edge_type_tuple"]

#: An edge type: PyG's ``(src, rel, dst)`` tuple or GraphBolt's ``"src:rel:dst"`` string.
EdgeType = Union[Tuple[str, str, str], str]


def edge_type_key(edge_type: EdgeType) -> str:
    """The core's one-string form of an edge type, ``"src:rel:dst"``."""
    if isinstance(edge_type, str):
        parts = edge_type.split(":")
        if len(parts) == 3 and all(parts):
            return edge_type
        raise errors.InvalidArgumentError(f"tierfs: edge type {edge_type!r}: want \"src:rel:dst\" or a (src, rel, dst) tuple")
    if isinstance(edge_type, (tuple, list)) and len(edge_type) == 3 and all(isinstance(p, str) and p for p in edge_type):
        return ":".join(edge_type)
    raise errors.InvalidArgumentError(f"tierfs: edge type {edge_type!r}: want a (src, rel, dst) tuple of names or \"src:rel:dst\"")


def edge_type_tuple(edge_type: EdgeType) -> Tuple[str, str, str]:
    """PyG's ``(src, rel, dst)`` form of an edge type."""
    src, rel, dst = edge_type_key(edge_type).split(":")
    return (src, rel, dst)


def fanouts_by_key(num_neighbors: Mapping[Any, Any]) -> Dict[str, List[int]]:
    """``{edge type: [fanout per hop]}`` with the core's ``"src:rel:dst"`` keys, each fanout an
    int (a float or bool fanout is refused, naming the edge type)."""
    if not isinstance(num_neighbors, Mapping):
        raise errors.DTypeError(f"tierfs: num_neighbors must be a dict of edge type -> fanouts, got {type(num_neighbors).__name__}")
    out: Dict[str, List[int]] = {}
    for et, fanouts in num_neighbors.items():
        out[edge_type_key(et)] = _fanouts(fanouts, f"num_neighbors[{et!r}]")
    return out


