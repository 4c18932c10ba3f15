"""Edge ids in the order of the user's input: tierfs's edge ids are positions in an edge type's
CSC (the order of :meth:`tierfs.Store.csc`, the ``e_id`` of :class:`tierfs.Sampler` samples, the
rows of ``store.gather(ids, feature=<edge feature>)``); PyG's ``e_id`` and DGL's ``dgl.EID`` are
positions in the ``edge_index`` the dataset was ingested from. :func:`input_edge_ids` maps the
first to the second, :func:`csc_edge_ids` back. Both front ends (:mod:`tierfs.pyg`,
:mod:`tierfs.dgl`) use these; they need only torch."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
import torch
from torch import Tensor

from . import errors
from .store import Store

__all__ = ["INPUT_EDGE_ID", "input_edge_ids", "csc_edge_ids"]

#: The int64 edge feature ingest writes where an edge type's tierfs edge ids (CSC positions)
#: differ from the positions of its edges in the ingested ``edge_index`` (ingest's
#: ``InputEdgeIDFeature``): row p holds the input position of edge id p.
INPUT_EDGE_ID = "input_edge_id"


def _edge_feature_info(store: Store, edge_type: Any) -> Dict[str, Any]:
    if store.is_hetero:
        return store.types["edge_types"][tuple(edge_type)]["features"]
    return {n: f for n, f in store.features.items() if f["of"] == "edge"}


def input_edge_ids(store: Store, edge_ids: Any, edge_type: Any = None) -> Tensor:
    """tierfs edge ids (CSC positions: the order of :meth:`tierfs.Store.csc`, the ``e_id`` of
    :class:`tierfs.Sampler` samples, the rows of ``store.gather(ids, feature=<edge feature>)``)
    as positions in the ``edge_index`` the dataset was ingested from — the ``e_id`` of this
    module's samplers and loaders, as PyG's in-memory loaders give it. Both directions of an
    edge of an undirected ingest map to its one input position. Where the dataset holds no
    :data:`INPUT_EDGE_ID` (input sorted by destination, or order unknown: dedup, synth) the
    ids are returned as they are. ``edge_type`` names the edge type of a heterogeneous store."""
    ids = edge_ids if isinstance(edge_ids, Tensor) else torch.as_tensor(np.asarray(edge_ids), dtype=torch.long)
    if INPUT_EDGE_ID not in _edge_feature_info(store, edge_type):
        return ids
    if store.is_hetero:
        out = store.gather(ids, edge_type=tuple(edge_type), feature=INPUT_EDGE_ID)
    else:
        out = store.gather(ids, feature=INPUT_EDGE_ID)
    return out if isinstance(out, Tensor) else torch.from_numpy(out)


def _input_to_csc(store: Store, edge_type: Any = None) -> Optional[Tensor]:
    """The inverse of :data:`INPUT_EDGE_ID` (input position -> an edge id, -1 for an input edge
    ingest dropped), or None where edge ids are input positions. Reads 8 bytes an edge."""
    info = _edge_feature_info(store, edge_type)
    if INPUT_EDGE_ID not in info:
        return None
    count = int(info[INPUT_EDGE_ID]["rows"])
    perm = input_edge_ids(store, torch.arange(count), edge_type).cpu()
    inverse = torch.full((int(perm.max()) + 1 if count else 0,), -1, dtype=torch.long)
    inverse[perm] = torch.arange(count)
    return inverse


def _map_input_ids(inverse: Optional[Tensor], ids: Tensor, what: str, front: str = "tierfs.pyg") -> Tensor:
    """Input positions ids as edge ids through inverse (:func:`_input_to_csc`); errors name
    ``front`` and ``what``."""
    if inverse is None:
        return ids
    flat = ids.cpu()
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= inverse.numel()):
        bad = int(flat.min()) if int(flat.min()) < 0 else int(flat.max())
        raise errors.OutOfRangeError(f"{front}: {what}: edge {bad} is outside the ingested edge_index's [0, {inverse.numel()})")
    out = inverse[flat]
    if out.numel() and int(out.min()) < 0:
        bad = int(flat[out < 0][0])
        raise errors.KeyNotFoundError(f"{front}: {what}: input edge {bad} is not in the dataset (ingest dropped it: a self loop with drop_self_loops)")
    return out.to(ids.device)


def csc_edge_ids(store: Store, e_id: Any, edge_type: Any = None) -> Tensor:
    """The inverse of :func:`input_edge_ids`: positions in the ingested ``edge_index`` (PyG's
    ``e_id``) as tierfs edge ids (CSC positions). Reads the whole :data:`INPUT_EDGE_ID` (8
    bytes an edge) on every call; :class:`FeatureStore` keeps it for its edge attributes."""
    ids = e_id if isinstance(e_id, Tensor) else torch.as_tensor(np.asarray(e_id), dtype=torch.long)
    return _map_input_ids(_input_to_csc(store, edge_type), ids, "csc_edge_ids")
