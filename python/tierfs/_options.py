"""The option families of the core, as it describes them: the store options of
:func:`tierfs.open` and :class:`tierfs.Store` (``"store"``), the plan options of
:meth:`tierfs.Store.plan_epochs` (``"epochs"``) and the link-sampling options (``"link"``);
and the one family of Python's own, the loader options (``"loader"``, :data:`LOADER`).

Each family is one table in the core (a Go type's tagged fields: ``featurestore.Options``,
``planned.EpochOptions``, ``featurestore.LinkOptions``; name, kind, default, choices, help), which
the library hands over as ``tfs_options_json(family)``; this module turns keyword arguments into
the JSON objects the C calls take (:func:`encode`, :func:`request`), gives each keyword its
default (:func:`defaults`) and writes the option lists of the docstrings (:func:`document`). A
new option in the core is a new keyword here, with no change to this package
(ARCHITECTURE.md, "Adding an option").

The loader options are the one family described here, not in the core: the loader is Python's
alone (the core, the C ABI and the CLI have none; ``tierfs bench train`` is Python's too), so
its table is :data:`LOADER`, read through the same :func:`table`, :func:`names`, :func:`defaults`
and :func:`document`, and checked by :func:`loader_options`. An entry with ``"epochs"`` is that
plan option under the loader's name (its kind, default, choices and help are the core's).
"""

from __future__ import annotations

import json
import operator
import os
from ctypes import c_char_p, c_int32, c_int64
from typing import Any, Dict, Iterable, List, Mapping

from . import _native, _util, errors
from .pipeline import MAX_DEPTH
from .storegather import _NUMPY_DTYPES, dtype_name

#: Options Python takes in another form: the core's name -> Python's argument.
PYTHON_FORMS = {"gpu_device": "device"}

#: The loader options: :class:`tierfs.Loader`'s keywords, which the front ends built on it
#: (:class:`tierfs.pyg.NeighborLoader`) pass on and the other loaders (``LinkNeighborLoader``,
#: :class:`tierfs.dgl.DataLoader`) take where they apply. Entries as the core's tables' (kinds
#: "bool", "int" with "min"/"max", "path", and "epochs": an int or "auto"), or ``"epochs"``:
#: the plan option the entry is, under the loader's name; kind "dtype" takes a name, a numpy or a
#: torch dtype and gives its name.
LOADER: List[Dict[str, Any]] = [
    {"name": "shuffle", "kind": "bool", "default": True,
     "help": "shuffle the seeds each epoch, by seed and the epoch number (planned epochs need it)"},
    {"name": "drop_last", "kind": "bool", "default": False,
     "help": "leave out each epoch's last batch when it is smaller than the batch size"},
    {"name": "prefetch", "kind": "int", "default": 4, "min": 1, "max": MAX_DEPTH,
     "help": "batches in flight: one thread samples ahead, this many gather at once, a thread each"},
    {"name": "seed", "kind": "int", "default": 0, "help": "the seed of every epoch's order of the seeds (with the epoch number)"},
    {"name": "labels", "kind": "bool",
     "help": "gather the seeds' labels into each batch (None: where the seeds' node type has labels)"},
    {"name": "planned_epochs", "kind": "epochs", "default": 0,
     "help": 'serve planned epochs: 0 samples every epoch, K plans rounds of K epochs (the next planned while the '
             'current train), "auto" runs epoch 0 on demand and plans from epoch 1 where the disk bounded it'},
    {"name": "plan_dir", "kind": "path",
     "help": "where the rounds' plans are made (None: temporary directories); with reuse_samples the plan itself, kept"},
    {"name": "plan_disk_budget", "epochs": "disk_budget"},
    {"name": "reuse_samples", "kind": "bool", "default": False,
     "help": "plan K epochs once and serve epoch e as planned epoch e mod K (needs planned_epochs)"},
    {"name": "plan_pack_method", "epochs": "pack_method"},
    {"name": "plan_pack_memory", "epochs": "pack_memory"},
    {"name": "x_dtype", "kind": "dtype",
     "help": "the dtype of each batch's x (torch.float32, \"float32\", ...), cast on the store's device once the rows arrive, "
             "which stay read and cached at the stored dtype (None: the stored dtype, as PyG's loaders give the feature store's)"},
]

_tables: Dict[str, List[Dict[str, Any]]] = {}


def table(family: str = "store") -> List[Dict[str, Any]]:
    """The options of ``family`` ("store", "epochs", "link": the core's; "loader": :data:`LOADER`):
    [{"name", "kind" ("size", "int", "uint", "float", "bool", "string", "map"; the loader's also
    "path", "epochs"), "help", and where set "default", "choices", "flag", "min", "max"}]."""
    if family not in _tables:
        if family == "loader":
            plan = {o["name"]: o for o in table("epochs")}
            _tables[family] = [{**plan[o["epochs"]], **o} if "epochs" in o else o for o in LOADER]
        else:
            fam = family.encode()
            _tables[family] = _native.read_json(lambda buf, cap, needed: _native.lib.tfs_options_json(fam, buf, cap, needed))
    return _tables[family]


def names(family: str = "store") -> List[str]:
    """The keyword names of the options of ``family`` Python takes."""
    return [o["name"] for o in table(family) if family != "store" or o["name"] not in PYTHON_FORMS]


def defaults(family: str) -> Dict[str, Any]:
    """{name: the default a keyword left out takes} of ``family``'s options (None where the
    table has none: the zero value, which the core reads as its own default)."""
    return {o["name"]: o.get("default") for o in table(family)}


def take(family: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """Removes the options of ``family`` from ``options`` and returns them (None values too)."""
    return {k: options.pop(k) for k in names(family) if k in options}


def refuse_unknown(options: Mapping[str, Any], where: str, families: Iterable[str]) -> None:
    """An InvalidArgumentError naming the first key of ``options`` (those left after the
    families took theirs) and listing the options of ``families``; nothing when it is empty."""
    for name in options:
        known = [n for f in families for n in names(f)]
        raise errors.InvalidArgumentError(f"{where}: no option {name!r}; the options are {', '.join(known)}")


def request(family: str, options: Dict[str, Any], where: str) -> Dict[str, Any]:
    """The JSON object of ``options`` of ``family`` for its C call: each value checked and
    converted as its kind says (sizes parsed, strings checked against their choices); None
    leaves an option out, at the core's default (the table's). A name that is no option is an
    InvalidArgumentError listing them."""
    kinds = {o["name"]: o for o in table(family)}
    out: Dict[str, Any] = {}
    for name, value in options.items():
        o = kinds.get(name)
        if o is None:
            raise errors.InvalidArgumentError(f"{where}: no {family} option {name!r}; the options are {', '.join(names(family))}")
        if value is None:
            continue
        out[name] = _value(name, o["kind"], value, o.get("choices"), negative_sizes=False)
    return out


def loader_options(given: Mapping[str, Any], where: str, rename: Mapping[str, str] = {}, takes: Iterable[str] = ()) -> Dict[str, Any]:
    """Every loader option's value by the table's name: those in ``given`` (under a front end's
    names: ``rename`` maps the table's name to its own) checked as their kind says, the others
    at the table's default. ``takes`` (none: every option) names the options a front end that is
    not built on :class:`tierfs.Loader` takes. A name that is none of them is an
    InvalidArgumentError listing them, a bad value one naming it and saying what it must be."""
    opts = [o for o in table("loader") if not takes or o["name"] in takes]
    front = {rename.get(o["name"], o["name"]): o for o in opts}
    for name in given:
        if name not in front:
            raise errors.InvalidArgumentError(f"{where}: no loader option {name!r}; the options are {', '.join(front)}")
    out: Dict[str, Any] = {}
    for name, o in front.items():
        value = given[name] if name in given else o.get("default")
        out[o["name"]] = _loader_value(where, name, o, value)
    return out


def _loader_value(where: str, name: str, o: Dict[str, Any], value: Any) -> Any:
    kind = o["kind"]
    if kind == "epochs":
        if isinstance(value, str) and value == "auto":
            return value
        n = _index(value)
        if n is None or n < 0:
            raise errors.InvalidArgumentError(f'{where}: {name} {value!r} must be 0 (sample every epoch), K >= 1 (plan K epochs) or "auto"')
        return n
    if value is None and o.get("default") is None:
        return None
    if kind == "bool":
        return bool(value)
    if kind == "path":
        return os.fspath(value)
    if kind == "dtype":
        name = dtype_name(value, f"{where}: {name}")
        if name not in _NUMPY_DTYPES:
            raise errors.InvalidArgumentError(f"{where}: {o['name']} {value!r} must be a feature dtype ({', '.join(_NUMPY_DTYPES)})")
        return name
    if kind == "int":
        n, lo, hi = _index(value), o.get("min"), o.get("max")
        if n is None:
            raise errors.InvalidArgumentError(f"{where}: {name} {value!r} must be an int ({o['help']})")
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise errors.InvalidArgumentError(f"{where}: {name} {value!r} must be from {lo} to {hi} ({o['help']})")
        return n
    return _value(name, kind, value, o.get("choices"), negative_sizes=False)


def _index(value: Any) -> Any:
    """value as an int (numpy and 0-d torch integers too); None for a bool or a non-integer."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def encode(options: Dict[str, Any], gpu_device: int) -> bytes:
    """The JSON object of ``options`` (keyword arguments; None leaves an option at its default)
    for tfs_open_json, with ``gpu_device``. A name that is no option is an InvalidArgumentError
    listing the options; a value of the wrong type a DTypeError (strings), an InvalidArgumentError
    (sizes, integers), each naming the option. The core validates the values."""
    kinds = {o["name"]: o["kind"] for o in table()}
    out: Dict[str, Any] = {"gpu_device": gpu_device}
    for name, value in options.items():
        kind = kinds.get(name)
        if kind is None or name in PYTHON_FORMS:
            hint = f" (use {PYTHON_FORMS[name]}=)" if name in PYTHON_FORMS else ""
            raise errors.InvalidArgumentError(
                f"tierfs.open: no store option {name!r}{hint}; the options are {', '.join(names())}"
            )
        if value is None:
            continue
        out[name] = _value(name, kind, value)
    return json.dumps(out).encode()


def _value(name: str, kind: str, value: Any, choices: Any = None, negative_sizes: bool = True) -> Any:
    if kind == "bool":
        return bool(value)
    if kind == "string":
        if choices is not None and (not isinstance(value, str) or value not in choices):
            want = ", ".join(json.dumps(c) for c in choices if c) + (' or None / ""' if "" in choices else "")
            raise errors.InvalidArgumentError(f"tierfs: option {name} = {value!r}: want {want}")
        if not isinstance(value, str):
            raise errors.DTypeError(f"{name} must be a string, got {type(value).__name__}")
        _native.check_value(c_char_p, value.encode(), name)
        return value
    if kind == "uint":  # 64 bits, e.g. a seed: a negative one taken modulo 2^64, as numpy does
        if isinstance(value, bool):
            raise errors.InvalidArgumentError(f"tierfs: {name} = {value!r} is not an integer")
        try:
            return operator.index(value) & 0xFFFFFFFFFFFFFFFF
        except TypeError:
            raise errors.InvalidArgumentError(f"tierfs: {name} = {value!r} is not an integer") from None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise errors.DTypeError(f"{name} must be a number, got {value!r}")
        return float(value)
    if kind == "map":
        if not isinstance(value, Mapping):
            raise errors.InvalidArgumentError(f"tierfs: {name} must be a mapping, got {type(value).__name__}")
        return {str(k): str(v) for k, v in value.items()}
    if kind == "size" and not negative_sizes:
        n = _util.parse_size(value, name)
        _native.check_value(c_int64, n, name)
        return n
    if kind == "size":
        # A byte count, "4GiB", or False / a negative number (topology_memory: keep it on disk;
        # the core refuses a negative size where an option takes none).
        if value is False:
            return -1
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            _native.check_value(c_int64, value, name)
            return value
        n = _util.parse_size(value, name)
        _native.check_value(c_int64, n, name)
        return n
    # "int": a whole number (numpy and 0-d torch integers too) within 32 bits, as the C ABI's
    # tfs_open_options holds it.
    if isinstance(value, bool):
        raise errors.InvalidArgumentError(f"tierfs: {name} = {value!r} is not an integer")
    try:
        n = operator.index(value)
    except TypeError:
        raise errors.InvalidArgumentError(f"tierfs: {name} = {value!r} is not an integer") from None
    _native.check_value(c_int32, n, name)
    return n


def document(fn: Any, family: str = "store", skip: Iterable[str] = (), rename: Mapping[str, str] = {},
             takes: Iterable[str] = ()) -> Any:
    """Writes the options of ``family`` (but ``skip``; of ``takes`` alone where given) into fn's
    docstring, one line each, at the line ``{<family>_options}`` and with its indentation, with
    each one's default and under a front end's name (``rename``: the table's name to it)."""
    takes = set(takes)
    doc = fn.__doc__
    mark = "{" + family + "_options}"
    at = doc.index(mark)
    indent = doc[doc.rindex("\n", 0, at) + 1 : at]
    lines = []
    for o in table(family):
        if (family == "store" and o["name"] in PYTHON_FORMS) or o["name"] in skip or (takes and o["name"] not in takes):
            continue
        kind = {"size": "bytes or a string like '4GiB'", "bool": "bool", "int": "int", "uint": "int", "float": "float",
                "string": "str", "map": "dict", "path": "str or path", "epochs": 'int or "auto"',
                "dtype": "a dtype: name, numpy or torch"}[o["kind"]]
        if o.get("min") is not None:
            kind += f" from {o['min']} to {o['max']}"
        default = f"; default {o['default']!r}" if o.get("default") is not None else ""
        lines.append(f"{indent}{rename.get(o['name'], o['name'])} ({kind}{default}): {o['help']}.")
    fn.__doc__ = doc[: at - len(indent)] + "\n".join(lines) + doc[at + len(mark) :]
    return fn
