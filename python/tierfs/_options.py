"""The store options of :func:`tierfs.open` and :class:`tierfs.Store`, as the core describes them.

The core's ``featurestore.Options`` is the one description (name, kind, help; the library hands
it over as ``tfs_store_options_json``); this module turns keyword arguments into the JSON object
``tfs_open_json`` takes and writes the option list of the docstrings. A new option in the core is
a new keyword here, with no change to this package.
"""

from __future__ import annotations

import json
import operator
from ctypes import c_char_p, c_int32, c_int64
from typing import Any, Dict, List

from . import _native, _util, errors

#: Options Python takes in another form: the core's name -> Python's argument.
PYTHON_FORMS = {"gpu_device": "device"}

_table: List[Dict[str, str]] = []


def table() -> List[Dict[str, str]]:
    """The core's store options: [{"name", "kind" ("size", "int", "bool", "string"), "help"}]."""
    if not _table:
        _table.extend(_native.read_json(lambda buf, cap, needed: _native.lib.tfs_store_options_json(buf, cap, needed)))
    return _table


def names() -> List[str]:
    """The keyword names of the store options Python takes."""
    return [o["name"] for o in table() if o["name"] not in PYTHON_FORMS]


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


def _value(name: str, kind: str, value: Any) -> Any:
    if kind == "bool":
        return bool(value)
    if kind == "string":
        if not isinstance(value, str):
            raise errors.DTypeError(f"{name} must be a string, got {type(value).__name__}")
        _native.check_value(c_char_p, value.encode(), name)
        return value
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


def document(fn: Any) -> Any:
    """Writes the store options into fn's docstring, one line each, at the line
    ``{store_options}`` and with its indentation."""
    doc = fn.__doc__
    at = doc.index("{store_options}")
    indent = doc[doc.rindex("\n", 0, at) + 1 : at]
    lines = []
    for o in table():
        if o["name"] in PYTHON_FORMS:
            continue
        kind = {"size": "bytes or a string like '4GiB'", "bool": "bool", "int": "int", "string": "str"}[o["kind"]]
        lines.append(f"{indent}{o['name']} ({kind}): {o['help']}.")
    fn.__doc__ = doc[: at - len(indent)] + "\n".join(lines) + doc[at + len("{store_options}") :]
    return fn
