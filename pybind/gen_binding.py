"""Generates the Python binding's ctypes declarations (python/tierfs/_abi.py) from the C headers.

The C ABI is written in capi/tierfs.h and the headers it includes; this is the one place that turns
it into Python. Stdlib only: it parses the headers with pybind/cheader.py and writes, in header
order:

* every integer ``#define TFS_*`` and enumerator as a constant (``TFS_ABI_VERSION``, ``TFS_EIO``),
  and ``DEFINES``/``ENUMS`` holding them by name;
* every struct as a ``ctypes.Structure`` (a :class:`tierfs._cabi.Checked`), named by dropping
  ``tfs_`` and capitalizing the words (``tfs_open_options`` -> ``OpenOptions``), in ``STRUCTS``;
* every callback typedef as a ``CFUNCTYPE`` named the same way (``ProgressFn``), in ``CALLBACKS``;
* ``FUNCTIONS``: every prototype as ``name: (restype, argtypes)``.

Types: C integers of a fixed width as ``c_int64`` etc., an enum as ``c_int``, ``const char *`` as
``c_char_p``, ``void *`` and a handle (a pointer to an opaque struct) as ``c_void_p``, a callback
type as its CFUNCTYPE; any other pointer parameter ``T *`` as ``ptr(T)`` (POINTER(T) that also
takes an address; tierfs/_cabi.py), a pointer field as ``POINTER(T)``, ``char x[16]`` as
``c_char * 16``.

    python3 pybind/gen_binding.py           # (re)writes python/tierfs/_abi.py (make binding)
    python3 pybind/gen_binding.py --check   # exit 1 when the checked-in file is stale
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cheader import HEADER, REPO, CType, Header, ParseError, parse_header  # noqa: E402

OUTPUT = REPO / "python" / "tierfs" / "_abi.py"

# ctypes names of the C scalar types (cheader.C_SCALARS's keys).
CTYPES = {
    "char": "c_char",
    "signed char": "c_byte",
    "unsigned char": "c_ubyte",
    "short": "c_short",
    "unsigned short": "c_ushort",
    "int": "c_int",
    "unsigned int": "c_uint",
    "long": "c_long",
    "unsigned long": "c_ulong",
    "long long": "c_longlong",
    "unsigned long long": "c_ulonglong",
    "int8_t": "c_int8",
    "uint8_t": "c_uint8",
    "int16_t": "c_int16",
    "uint16_t": "c_uint16",
    "int32_t": "c_int32",
    "uint32_t": "c_uint32",
    "int64_t": "c_int64",
    "uint64_t": "c_uint64",
    "size_t": "c_size_t",
    "ssize_t": "c_ssize_t",
    "ptrdiff_t": "c_ssize_t",
    "intptr_t": "c_ssize_t",
    "uintptr_t": "c_size_t",
    "float": "c_float",
    "double": "c_double",
    "long double": "c_longdouble",
    "_Bool": "c_bool",
    "bool": "c_bool",
}


def py_name(c_name: str) -> str:
    """tfs_open_options -> OpenOptions; struct tfs_x -> X."""
    n = c_name.removeprefix("struct ").removeprefix("tfs_")
    return "".join(w[:1].upper() + w[1:] for w in n.split("_") if w)


class _Gen:
    def __init__(self, h: Header) -> None:
        self.h = h
        self.names: set[str] = set()  # ctypes names used, for the import line
        self.uses_ptr = False

    def _c(self, name: str) -> str:
        self.names.add(name)
        return name

    def value(self, t: CType, where: str) -> str:
        """A C type that is no pointer, as a ctypes type."""
        kind, info = self.h.resolve(t.base)
        if kind == "scalar":
            return self._c(CTYPES[t.base])
        if kind == "enum":
            return self._c("c_int")
        if kind == "struct":
            return py_name(info)
        if kind == "funcptr":
            return py_name(t.base)
        raise ParseError(f"{where}: {t} cannot be passed by value")

    def field(self, t: CType, where: str) -> str:
        """A struct field's, a callback parameter's or a result's ctypes type."""
        if t.array is not None:
            return f"{self.field(t.element(), where)} * {t.array}"
        if not t.pointers:
            return self.value(t, where)
        target = t.pointee()
        if not target.pointers:
            kind, _ = self.h.resolve(target.base)
            if target.base == "char" and target.const:
                return self._c("c_char_p")
            if kind in ("void", "opaque"):
                return self._c("c_void_p")
        self.names.add("POINTER")
        return f"POINTER({self.field(target, where)})"

    def param(self, t: CType, where: str) -> str:
        """A function parameter's ctypes argtype."""
        if not t.pointers:
            return self.value(t, where)
        target = t.pointee()
        if not target.pointers:
            kind, _ = self.h.resolve(target.base)
            if (target.base == "char" and target.const) or kind in ("void", "opaque"):
                return self.field(t, where)
        self.uses_ptr = True
        return f"ptr({self.field(target, where)})"

    def result(self, t: CType, where: str) -> str:
        kind, _ = self.h.resolve(t.base)
        if kind == "void" and not t.pointers:
            return "None"
        return self.field(t, where)


def generate(h: Header, header_label: str = "capi/tierfs.h") -> str:
    """The text of _abi.py for the parsed header."""
    g = _Gen(h)
    body: list[str] = []

    consts = {name: v for name, v in h.defines.items() if name.startswith("TFS_")}
    body.append("# ---- constants " + "-" * 84)
    body.append("")
    for name, v in consts.items():
        body.append(f"{name} = {v}")
    for e in h.enums.values():
        body.append("")
        body.append(f"# {e.name} ({h.file_of(e.line)})")
        for name, v in e.members.items():
            body.append(f"{name} = {v}")
    body.append("")
    body.append("DEFINES = {" + ", ".join(f'"{n}": {n}' for n in consts) + "}")
    body.append("ENUMS = {")
    for e in h.enums.values():
        body.append(f'    "{e.name}": {{' + ", ".join(f'"{n}": {n}' for n in e.members) + "},")
    body.append("}")
    body.append("")

    # Structs and callback types, in the order of the text (a struct may hold a callback).
    types = sorted(
        [(s.line, "struct", s.name) for s in h.structs.values()] + [(f.line, "callback", f.name) for f in h.funcptrs.values()]
    )
    body.append("")
    body.append("# ---- structs and callback types " + "-" * 67)
    for _, kind, name in types:
        body.append("")
        if kind == "struct":
            s = h.structs[name]
            body.append("")
            body.append(f"class {py_name(name)}(Checked):")
            body.append(f'    """{name} ({h.file_of(s.line)})."""')
            body.append("")
            body.append("    _fields_ = [")
            for f in s.fields:
                body.append(f'        ("{f.name}", {g.field(f.ctype, h.where(f.line))}),  # {f.ctype}')
            body.append("    ]")
        else:
            fp = h.funcptrs[name]
            where = h.where(fp.line)
            args = [g.result(fp.ret, where)] + [g.field(p.ctype, where) for p in fp.params]
            g.names.add("CFUNCTYPE")
            body.append("")
            body.append(f"#: {name} ({h.file_of(fp.line)}): ({', '.join(p.name or '?' for p in fp.params)})")
            body.append(f"{py_name(name)} = CFUNCTYPE({', '.join(args)})")
    body.append("")
    body.append("")
    body.append("STRUCTS = {" + ", ".join(f'"{n}": {py_name(n)}' for n in h.structs) + "}")
    body.append("CALLBACKS = {" + ", ".join(f'"{n}": {py_name(n)}' for n in h.funcptrs) + "}")
    body.append("")

    body.append("")
    body.append("# ---- functions " + "-" * 84)
    body.append("")
    body.append("#: name -> (restype, argtypes), in the order of the headers.")
    body.append("FUNCTIONS = {")
    current = None
    for fn in sorted(h.functions.values(), key=lambda f: f.line):
        f = h.file_of(fn.line)
        if f != current:
            body.append(f"    # {f}")
            current = f
        where = h.where(fn.line)
        args = ", ".join(g.param(p.ctype, where) for p in fn.params)
        pnames = ", ".join(p.name or "?" for p in fn.params)
        body.append(f'    "{fn.name}": ({g.result(fn.ret, where)}, [{args}]),  # ({pnames})')
    body.append("}")
    body.append("")

    ctypes_names = sorted(g.names, key=lambda n: (n.islower(), n))
    head = [
        '"""The C ABI of tierfs as ctypes declarations: the constants, structs, callback types and',
        f"functions of {header_label} and the headers it includes.",
        "",
        f"Generated by pybind/gen_binding.py from {header_label}; do not edit. `make binding` regenerates",
        "it; python/tests/test_abi_layout.py fails when it differs from what the headers give.",
        '"""',
        "",
        "# ruff: noqa: E501",
        "",
        "from ctypes import " + ", ".join(ctypes_names),
        "",
        "from ._cabi import Checked" + (", ptr" if g.uses_ptr else ""),
        "",
    ]
    return "\n".join(head + body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gen_binding.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", default=str(HEADER), help="the C header (default: %(default)s)")
    ap.add_argument("--output", default=str(OUTPUT), help="the module to write (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when --output differs from what it would get")
    args = ap.parse_args(argv)
    try:
        text = generate(parse_header(args.header))
    except ParseError as e:
        print(f"gen_binding: {e}", file=sys.stderr)
        return 2
    out = Path(args.output)
    old = out.read_text() if out.is_file() else None
    if args.check:
        if old != text:
            print(f"gen_binding: {out} is stale: it is not what {args.header} gives; run `make binding`", file=sys.stderr)
            return 1
        print(f"gen_binding: {out} is what {args.header} gives")
        return 0
    if old != text:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)
        print(f"gen_binding: wrote {out}")
    else:
        print(f"gen_binding: {out} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
