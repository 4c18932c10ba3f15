"""What tierfs.pyg's loaders take of PyG's and DataLoader's arguments, checked: PyG's sampling
and worker arguments at their defaults or refused by name, the loader options under PyG's names,
``num_workers`` as pipeline threads, ``prefetch_factor``, ``pin_memory``, temporal arguments, and
link loaders' seed edges (``edge_label_index`` and its edge type)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from .. import _options, errors
from ..hetero import edge_type_tuple
from ..pipeline import MAX_DEPTH
from ..store import Store
from .sampler import _PYG_ONLY
from .stores import EDGE_TYPE


def _refuse_pyg_only(loader: str, kwargs: Dict[str, Any]) -> None:
    """Takes PyG's sampling and worker arguments tierfs does not have (_PYG_ONLY) out of kwargs:
    at PyG's default value they pass (a script written for PyG runs unchanged), any other value
    is a NotSupportedError naming the argument and its default."""
    for name in [k for k in kwargs if k in _PYG_ONLY]:
        value = kwargs.pop(name)
        if name == "filter_per_worker" and value in (None, True, False):
            continue  # batches are made on the pipeline's threads, in this process, either way
        if value is not _PYG_ONLY[name] and value != _PYG_ONLY[name]:
            raise errors.NotSupportedError(
                f"tierfs.pyg.{loader}: {name}={value!r} is not supported (tierfs samples uniformly, by weight_attr or in time, disjoint or not, on its own "
                f"threads in this process; prefetch= sets how many batches are in flight); leave it at {_PYG_ONLY[name]!r}")


#: The loader options under tierfs.pyg's names: PyG's loaders have no seed of the epochs' order
#: and tierfs.pyg's ``seed`` is the sampler's, so the loader's ``seed`` is ``shuffle_seed``.
_PYG_NAMES = {"seed": "shuffle_seed"}


#: PyG's own loader arguments among the loader options: explicit, at PyG's defaults (its
#: DataLoader's), in NeighborLoader's signature; LinkNeighborLoader hands them to PyG's LinkLoader.
_PYG_OWN = ("shuffle", "drop_last")


#: The loader options LinkNeighborLoader takes: it runs PyG's LinkLoader, not tierfs.Loader (no
#: "auto": nothing measures its epochs); PyG makes the labels.
_LINK_TAKES = ("prefetch", "seed", "planned_epochs", "plan_dir", "plan_disk_budget", "reuse_samples", "plan_pack_method", "plan_pack_memory")


def _loader_options(loader: str, kwargs: Dict[str, Any], takes: Tuple[str, ...] = (), **pyg: Any) -> Dict[str, Any]:
    """The loader options (``tierfs._options.LOADER``; of ``takes`` alone where given) of
    tierfs.pyg's ``loader``: those in ``kwargs`` under their :data:`_PYG_NAMES`, taken out of it,
    and PyG's own arguments ``pyg`` as given, checked; the others at the table's defaults."""
    names = {_PYG_NAMES.get(n, n) for n in _options.names("loader") if (not takes or n in takes) and n not in _PYG_OWN and n != "labels"}
    given = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    workers = _num_workers(loader, kwargs)
    factor = _prefetch_factor(loader, kwargs)
    if (workers or factor is not None) and "prefetch" not in given:
        in_flight = workers if factor is None else max(workers, 1) * factor
        given["prefetch"] = max(1, min(in_flight, MAX_DEPTH))
    return _options.loader_options({**given, **pyg}, f"tierfs.pyg.{loader}", rename=_PYG_NAMES, takes=takes)


def _prefetch_factor(loader: str, kwargs: Dict[str, Any]) -> Optional[int]:
    """torch DataLoader's ``prefetch_factor`` (batches loaded ahead per worker; None its
    default), taken out of kwargs: with ``num_workers=N`` the pipeline keeps ``N *
    prefetch_factor`` batches in flight (``max(N, 1)``: the pipeline's threads work without
    workers too; 1 to 256) where ``prefetch`` is not given."""
    factor = kwargs.pop("prefetch_factor", None)
    if factor is None:
        return None
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 0:
        raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: prefetch_factor={factor!r}: want a whole number >= 0 (batches ahead per worker) or None")
    return int(factor)


def _pin_memory(loader: str, kwargs: Dict[str, Any], store: Store) -> bool:
    """torch DataLoader's ``pin_memory``, taken out of kwargs: whether to pin each batch's
    tensors (``Data.pin_memory()``, on the pipeline's threads, after ``transform``). Only where
    the batch is on the host and CUDA is there to pin for: a store on a GPU makes its batches
    there, and without CUDA it warns as DataLoader does and pins nothing."""
    pin = kwargs.pop("pin_memory", False)
    kwargs.pop("pin_memory_device", None)
    if not isinstance(pin, bool):
        raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: pin_memory={pin!r}: want True or False")
    if pin and store.device == "cpu" and not torch.cuda.is_available():
        import warnings

        warnings.warn(f"tierfs.pyg.{loader}: 'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used", stacklevel=3)
    return pin and store.device == "cpu" and torch.cuda.is_available()


def _pinned(batch: Any, pin: bool) -> Any:
    """batch with its tensors in pinned memory where pin (PyG's ``Data.pin_memory``)."""
    return batch.pin_memory() if pin else batch


def _num_workers(loader: str, kwargs: Dict[str, Any]) -> int:
    """PyG's (torch DataLoader's) ``num_workers`` and ``persistent_workers``, taken out of
    kwargs. tierfs's pipeline does a worker's job: its prefetch threads make the batches (sample
    order kept, gathers, ``Data``, ``transform``) in this process, which loaded the Go runtime and
    must not fork; so ``num_workers=N`` is N of them (at most the pipeline's depth) where
    ``prefetch`` is not given, and the batches are those of ``num_workers=0``.
    ``persistent_workers`` and ``multiprocessing_context`` change nothing: no process starts."""
    workers = kwargs.pop("num_workers", 0)
    persistent = kwargs.pop("persistent_workers", False)
    kwargs.pop("multiprocessing_context", None)
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0:
        raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: num_workers={workers!r}: want a whole number >= 0 (the pipeline's threads that make batches)")
    if not isinstance(persistent, bool):
        raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: persistent_workers={persistent!r}: want True or False")
    return int(workers)


def _check_time(loader: str, data: Any, time_attr: Any, temporal_strategy: Any, input_time: Any, planned: Any) -> None:
    """Refuses temporal arguments tierfs.pyg's ``loader`` cannot honor, by name: input_time
    without time_attr (PyG's error), planned epochs."""
    if input_time is not None and time_attr is None:
        raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: Received conflicting 'input_time' and 'time_attr' arguments: 'input_time' is set while 'time_attr' is not set.")
    if time_attr is None:
        if temporal_strategy != "uniform":
            raise errors.InvalidArgumentError(f"tierfs.pyg.{loader}: temporal_strategy={temporal_strategy!r} without time_attr; it is the strategy of temporal sampling")
        return
    if planned:
        raise errors.NotSupportedError(f"tierfs.pyg.{loader}: time_attr with planned_epochs: planned epochs do not sample in time; leave one out")


def _as_is(batch: List[int]) -> List[int]:
    """A DataLoader's collate_fn handing a batch's positions on as they are."""
    return batch


def _link_input(store: Store, edge_label_index: Any) -> Tuple[Tuple[str, str, str], Any]:
    """(edge type, seed edges or None) of LinkNeighborLoader's edge_label_index: a tensor, an
    edge type, or ``(edge type, tensor)``; a heterogeneous store needs the edge type (PyG's
    rule), a homogeneous one has :data:`EDGE_TYPE`. Edge types are PyG's forms
    (:func:`_canonical_edge_type`); seed edges may be of a type the dataset has no edges of, as
    PyG's LinkNeighborLoader takes them, but every edge of a type takes a type it has."""
    if not store.is_hetero:
        if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:
            edge_label_index = edge_label_index[1]
        if isinstance(edge_label_index, str):
            raise errors.InvalidArgumentError(
                f"tierfs.pyg.LinkNeighborLoader: edge_label_index={edge_label_index!r}: want a (2, n) tensor of seed edges, or None for "
                f"every edge; a stored edge split's seed edges and labels are store.edge_split({edge_label_index!r}) "
                f"(pass them as edge_label_index=..., edge_label=...)")
        return EDGE_TYPE, edge_label_index
    types = store.edge_types
    if isinstance(edge_label_index, str) or isinstance(edge_label_index, (tuple, list)) and edge_label_index and isinstance(edge_label_index[0], str):
        edge_type, edges = _canonical_edge_type(store, edge_label_index), None  # PyG: an edge type alone, its every edge
    elif isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:
        edge_type, edges = _canonical_edge_type(store, edge_label_index[0]), edge_label_index[1]
    else:
        raise errors.InvalidArgumentError(
            f"tierfs.pyg.LinkNeighborLoader: a heterogeneous dataset takes edge_label_index=(edge type, (2, n) tensor or None) or an edge type, got {type(edge_label_index).__name__} (edge types: {types})")
    if edge_type not in types and (edges is None or edge_type[0] not in store.node_types or edge_type[2] not in store.node_types):
        raise errors.KeyNotFoundError(
            f"tierfs.pyg.LinkNeighborLoader: edge_label_index names edge type {edge_type!r}, which the dataset lacks (it has {types}; seed edges of "
            f"a type it has no edges of need the tensor of them and node types it has, {store.node_types})")
    return edge_type, edges


def _canonical_edge_type(store: Store, key: Any) -> Tuple[str, str, str]:
    """An edge type in PyG's forms as HeteroData's ``_to_canonical`` resolves it against the
    store's edge types: ``(src, rel, dst)`` (or tierfs's ``"src:rel:dst"``) as it is, a relation
    name alone the one edge type of that relation, ``(src, dst)`` the one edge type between them
    or ``(src, "to", dst)`` where there is none."""
    types = [tuple(et) for et in store.edge_types]
    if isinstance(key, str) and ":" not in key:
        found = [et for et in types if et[1] == key]
        if len(found) != 1:
            raise errors.KeyNotFoundError(f"tierfs.pyg.LinkNeighborLoader: relation {key!r} names {len(found)} edge types of the dataset (it has {types}); give (src, rel, dst)")
        return found[0]
    if isinstance(key, (tuple, list)) and len(key) == 2 and all(isinstance(k, str) for k in key):
        found = [et for et in types if et[0] == key[0] and et[2] == key[1]]
        if len(found) > 1:
            raise errors.InvalidArgumentError(f"tierfs.pyg.LinkNeighborLoader: edge type {tuple(key)!r} is ambiguous: the dataset has {found} between them; give (src, rel, dst)")
        return found[0] if found else (key[0], "to", key[1])  # PyG's DEFAULT_REL
    return edge_type_tuple(tuple(key) if isinstance(key, list) else key)
