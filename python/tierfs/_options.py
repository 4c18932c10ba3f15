"""The option families of the core, as it describes them: the store options of
:func:`tierfs.open` and :class:`tierfs.Store` (``"store"``), the plan options of
:meth:`tierfs.Store.plan_epochs` (``"epochs"``) and the link-sampling options (``"link"``).

Each family is one table in the core (a Go type's tagged fields: ``featurestore.Options``,
``planned.EpochOptions``, ``featurestore.LinkOptions``; name, kind, default, choices, help), which
the library hands over as ``tfs_options_json(family)``; this module turns keyword arguments into
the JSON objects the C calls take (:func:`encode`, :func:`request`), gives each keyword its
default (:func:`defaults`) and writes the option lists of the docstrings (:func:`document`). A
new option in the core is a new keyword here, with no change to this package
(ARCHITECTURE.md, "Adding an option").
"""

from __future__ import annotations

import json
import operator
from ctypes import c_char_p, c_int32, c_int64
from typing import Any, Dict, Iterable, List, Mapping

from . import _native, _util, errors

#: Options Python takes in another form: the core's name -> Python's argument.
PYTHON_FORMS = {"gpu_device": "device"}

_tables: Dict[str, List[Dict[str, Any]]] = {}


def table(family: str = "store") -> List[Dict[str, Any]]:
    """The core's options of ``family`` ("store", "epochs", "link"): [{"name", "kind" ("size",
    "int", "uint", "float", "bool", "string", "map"), "help", and where set "default",
    "choices", "flag"}]."""
    if family not in _tables:
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


def document(fn: Any, family: str = "store", skip: Iterable[str] = ()) -> Any:
    """Writes the options of ``family`` (but ``skip``) into fn's docstring, one line each, at
    the line ``{<family>_options}`` and with its indentation, with each one's default."""
    doc = fn.__doc__
    mark = "{" + family + "_options}"
    at = doc.index(mark)
    indent = doc[doc.rindex("\n", 0, at) + 1 : at]
    lines = []
    for o in table(family):
        if (family == "store" and o["name"] in PYTHON_FORMS) or o["name"] in skip:
            continue
        kind = {"size": "bytes or a string like '4GiB'", "bool": "bool", "int": "int", "uint": "int", "float": "float",
                "string": "str", "map": "dict"}[o["kind"]]
        default = f"; default {o['default']!r}" if o.get("default") is not None else ""
        lines.append(f"{indent}{o['name']} ({kind}{default}): {o['help']}.")
    fn.__doc__ = doc[: at - len(indent)] + "\n".join(lines) + doc[at + len(mark) :]
    return fn
