"""Checks that the ctypes binding (python/tierfs/_native.py) agrees with the C ABI (capi/tierfs.h).

Stdlib only. It parses tierfs.h (structs, function prototypes, enums, ``#define TFS_*``) and checks:

* declarations: every struct of the header has a ctypes class in ``_native.STRUCTS`` with the same
  field names, in the same order, of matching types; every function of the header has argtypes and
  restype declared on the loaded library that match (integer width and signedness, pointer vs
  integer, ``const char *`` as ``c_char_p``, ``POINTER(X)`` with X matching the pointee); every
  ``TFS_*`` constant and enum value has its Python twin (``_native.X`` or ``errors.X``) with the same
  value, and ``errors.STATUS_NAMES`` names every status;
* exports: the library exports every function of the header, and no ``tfs_*`` function the header
  does not declare (read from the ELF dynamic symbol table);
* layout: a C program generated from the parsed header, compiled with the system C compiler,
  prints ``sizeof``/``_Alignof`` of every struct and ``offsetof``/``sizeof`` of every field, which
  must equal ``ctypes.sizeof``/``ctypes.alignment`` of the class and ``Class.field.offset``/``.size``.

Run it (from the repository root, with a Python that has numpy, after ``make lib``)::

    python pybind/check_abi.py            # the source tree's python/tierfs against capi/tierfs.h
    python pybind/check_abi.py --installed --header /path/to/tierfs.h

It prints one line per mismatch and exits 1 when there is any, 2 when the header cannot be parsed.
The parser is strict: a construct it does not understand (a function pointer, a bit-field, a
union, ``#if`` expressions, ...) is a :class:`ParseError`, never silently skipped.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import re
import shutil
import struct as _struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HEADER = REPO / "capi" / "tierfs.h"
PYTHON_DIR = REPO / "python"


class ParseError(Exception):
    """The header holds something this parser does not understand."""


class CompilerNotFound(Exception):
    """No C compiler for the layout check."""


# ---- the header's model ------------------------------------------------------------------------


@dataclass(frozen=True)
class CType:
    """A C type: base type name ("int64_t", "char", "tfs_store", "struct tfs_sample"), whether the
    base is const, one entry per '*' (True where that pointer is itself const), array length."""

    base: str
    const: bool = False
    pointers: tuple[bool, ...] = ()
    array: int | None = None

    def __str__(self) -> str:
        s = ("const " if self.const else "") + self.base
        if self.pointers:
            s += " " + "".join("*" + ("const " if c else "") for c in self.pointers).rstrip()
        if self.array is not None:
            s += f"[{self.array}]"
        return s

    def pointee(self) -> CType:
        return CType(self.base, self.const, self.pointers[:-1])

    def element(self) -> CType:
        return CType(self.base, self.const, self.pointers)


@dataclass
class Field:
    name: str
    ctype: CType
    line: int


@dataclass
class Struct:
    name: str  # the typedef name if any, else "struct TAG"
    tag: str | None
    fields: list[Field]
    line: int

    @property
    def c_name(self) -> str:
        """How C code names the type."""
        return self.name


@dataclass
class Param:
    name: str | None
    ctype: CType


@dataclass
class Function:
    name: str
    ret: CType
    params: list[Param]
    line: int


@dataclass
class Enum:
    name: str  # typedef name if any, else "enum TAG"
    tag: str | None
    members: dict[str, int]
    line: int


@dataclass
class Header:
    path: str
    structs: dict[str, Struct] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    defines: dict[str, int] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    # typedef NAME -> ("struct"|"enum", TAG) for tagged typedefs; aliases of other types.
    _tagged: dict[str, tuple[str, str]] = field(default_factory=dict)
    _struct_tags: dict[str, str] = field(default_factory=dict)  # tag -> struct name
    _enum_tags: dict[str, str] = field(default_factory=dict)
    _forward: set[str] = field(default_factory=set)  # struct tags declared without a body
    # typedef RET (*NAME)(PARAMS): function pointer types (callbacks), by name.
    funcptrs: dict[str, "Function"] = field(default_factory=dict)

    def where(self, line: int) -> str:
        return f"{os.path.basename(self.path)}:{line}"

    def resolve(self, base: str) -> tuple[str, Any]:
        """(kind, info) of a base type name: ("scalar", (family, size, signed)), ("void", None),
        ("struct", name), ("enum", name), ("opaque", name) or ("funcptr", Function)."""
        if base == "void":
            return "void", None
        if base in self.funcptrs:
            return "funcptr", self.funcptrs[base]
        if base in C_SCALARS:
            return "scalar", C_SCALARS[base]
        if base.startswith("struct "):
            tag = base[len("struct ") :]
            if tag in self._struct_tags:
                return "struct", self._struct_tags[tag]
            return "opaque", self._opaque_name(tag)
        if base.startswith("enum "):
            tag = base[len("enum ") :]
            if tag in self._enum_tags:
                return "enum", self._enum_tags[tag]
            raise ParseError(f"{self.path}: enum {tag} is used but not defined")
        if base in self.structs:
            return "struct", base
        if base in self.enums:
            return "enum", base
        if base in self._tagged:
            kind, tag = self._tagged[base]
            return self.resolve(f"{kind} {tag}")
        raise ParseError(f"{self.path}: unknown type {base!r}")

    def _opaque_name(self, tag: str) -> str:
        for name, (kind, t) in self._tagged.items():
            if kind == "struct" and t == tag:
                return name
        return f"struct {tag}"


# (family, size, signed) of the C scalar types; sizes as this platform's C compiler has them
# (ctypes reads them from the same ABI).
def _sz(t) -> int:
    return ctypes.sizeof(t)


C_SCALARS: dict[str, tuple[str, int, bool | None]] = {
    "char": ("char", 1, None),
    "signed char": ("int", 1, True),
    "unsigned char": ("int", 1, False),
    "short": ("int", _sz(ctypes.c_short), True),
    "unsigned short": ("int", _sz(ctypes.c_ushort), False),
    "int": ("int", _sz(ctypes.c_int), True),
    "unsigned int": ("int", _sz(ctypes.c_uint), False),
    "long": ("int", _sz(ctypes.c_long), True),
    "unsigned long": ("int", _sz(ctypes.c_ulong), False),
    "long long": ("int", _sz(ctypes.c_longlong), True),
    "unsigned long long": ("int", _sz(ctypes.c_ulonglong), False),
    "int8_t": ("int", 1, True),
    "uint8_t": ("int", 1, False),
    "int16_t": ("int", 2, True),
    "uint16_t": ("int", 2, False),
    "int32_t": ("int", 4, True),
    "uint32_t": ("int", 4, False),
    "int64_t": ("int", 8, True),
    "uint64_t": ("int", 8, False),
    "size_t": ("int", _sz(ctypes.c_size_t), False),
    "ssize_t": ("int", _sz(ctypes.c_ssize_t), True),
    "ptrdiff_t": ("int", _sz(ctypes.c_ssize_t), True),
    "intptr_t": ("int", _sz(ctypes.c_void_p), True),
    "uintptr_t": ("int", _sz(ctypes.c_void_p), False),
    "float": ("float", 4, None),
    "double": ("float", 8, None),
    "long double": ("float", _sz(ctypes.c_longdouble), None),
    "_Bool": ("bool", 1, None),
    "bool": ("bool", 1, None),
}
_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool"}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict"}


# ---- the parser --------------------------------------------------------------------------------

_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
_INT = re.compile(r"^\(*\s*(-?)\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uUlL]*\s*\)*$")


def _strip_comments(text: str) -> str:
    """Comments become blanks of the same line count (strings are kept)."""

    def repl(m: re.Match) -> str:
        s = m.group(0)
        if s.startswith(("/*", "//")):
            return "\n" * s.count("\n") or " "
        return s

    return _COMMENT_OR_STRING.sub(repl, text)


def _int_literal(s: str) -> int | None:
    m = _INT.match(s.strip())
    if not m or s.count("(") != s.count(")"):
        return None
    digits = m.group(2)
    if digits.startswith(("0x", "0X")):
        v = int(digits, 16)
    elif len(digits) > 1 and digits.startswith("0"):
        v = int(digits, 8)
    else:
        v = int(digits)
    return -v if m.group(1) else v


def _preprocess(text: str, path: str, defines: dict[str, int]) -> str:
    """Keeps the lines a C (not C++) compiler sees; records integer #defines. Line count kept."""
    lines = text.replace("\\\n", " \n").split("\n")  # continuations: keep the line count
    out: list[str] = []
    defined: set[str] = set()
    stack: list[tuple[bool, bool]] = []  # (this branch active, some branch taken)

    def active() -> bool:
        return all(a for a, _ in stack)

    for i, line in enumerate(lines, 1):
        m = re.match(r"\s*#\s*(\w*)\s*(.*?)\s*$", line)
        if not m:
            out.append(line if active() else "")
            continue
        out.append("")
        d, rest = m.group(1), m.group(2)
        if d in ("ifdef", "ifndef"):
            name = rest.split()[0] if rest else ""
            cond = (name in defined) == (d == "ifdef")
            stack.append((cond, cond))
        elif d == "if":
            v = _int_literal(rest)
            if v is None:
                raise ParseError(f"{path}:{i}: #if {rest!r} is not supported (only #if 0 / #if 1)")
            stack.append((bool(v), bool(v)))
        elif d == "else":
            if not stack:
                raise ParseError(f"{path}:{i}: #else without #if")
            _, taken = stack.pop()
            stack.append((not taken, True))
        elif d == "elif":
            raise ParseError(f"{path}:{i}: #elif is not supported")
        elif d == "endif":
            if not stack:
                raise ParseError(f"{path}:{i}: #endif without #if")
            stack.pop()
        elif not active():
            continue
        elif d == "define":
            dm = re.match(r"([A-Za-z_]\w*)(\()?\s*(.*)$", rest)
            if not dm:
                raise ParseError(f"{path}:{i}: cannot read #define {rest!r}")
            name, fnlike, value = dm.group(1), dm.group(2), dm.group(3)
            defined.add(name)
            if fnlike:
                if name.startswith("TFS_"):
                    raise ParseError(f"{path}:{i}: function-like macro {name} is not supported")
                continue
            if value:
                v = _int_literal(value)
                if v is None and value in defines:
                    v = defines[value]
                if v is not None:
                    defines[name] = v
                elif name.startswith("TFS_"):
                    raise ParseError(f"{path}:{i}: #define {name} {value!r}: not an integer constant")
        elif d == "undef":
            defined.discard(rest.strip())
            defines.pop(rest.strip(), None)
        elif d in ("include", "pragma", ""):
            continue
        elif d == "error":
            raise ParseError(f"{path}:{i}: #error {rest}")
        else:
            raise ParseError(f"{path}:{i}: #{d} is not supported")
    if stack:
        raise ParseError(f"{path}: unterminated #if")
    return "\n".join(out)


def _statements(text: str, path: str):
    """Top-level declarations: (text, first line), split at ';' outside braces."""
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise ParseError(f"{path}:{text.count(chr(10), 0, i) + 1}: unbalanced '}}'")
        elif ch == ";" and depth == 0:
            stmt = text[start:i]
            if stmt.strip():
                lead = len(stmt) - len(stmt.lstrip())
                yield stmt.strip(), text.count("\n", 0, start + lead) + 1
            start = i + 1
    if text[start:].strip():
        line = text.count("\n", 0, start + len(text[start:]) - len(text[start:].lstrip())) + 1
        raise ParseError(f"{path}:{line}: declaration without ';': {text[start:].strip()[:60]!r}")


_TOKEN = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\S")


def _normalize_base(words: list[str], where: str) -> str:
    """'unsigned long int' -> 'unsigned long', 'signed' -> 'int', typedef names as they are."""
    if words[0] in ("struct", "enum"):
        if len(words) != 2:
            raise ParseError(f"{where}: cannot read type {' '.join(words)!r}")
        return " ".join(words)
    if words[0] == "union":
        raise ParseError(f"{where}: unions are not supported")
    if not all(w in _TYPE_WORDS for w in words):
        if len(words) == 1:
            return words[0]
        raise ParseError(f"{where}: cannot read type {' '.join(words)!r}")
    unsigned = "unsigned" in words
    longs = words.count("long")
    if "void" in words:
        return "void"
    if "_Bool" in words:
        return "_Bool"
    if "float" in words:
        return "float"
    if "double" in words:
        return "long double" if longs else "double"
    if "char" in words:
        return "unsigned char" if unsigned else ("signed char" if "signed" in words else "char")
    if "short" in words:
        base = "short"
    elif longs == 1:
        base = "long"
    elif longs == 2:
        base = "long long"
    else:
        base = "int"
    return "unsigned " + base if unsigned else base


def _parse_decl(text: str, where: str, defines: dict[str, int], need_name: bool) -> list[tuple[str | None, CType]]:
    """One declaration ('const char *const *paths', 'char dtype[16]', 'int32_t a, b') ->
    [(name, CType)]."""
    toks = _TOKEN.findall(text)
    for t in toks:
        if t in "()":
            raise ParseError(f"{where}: function pointers and parenthesized declarators are not supported: {text!r}")
        if t in (":", "="):
            raise ParseError(f"{where}: bit-fields and initializers are not supported: {text!r}")
        if not (t[0].isalnum() or t[0] == "_" or t in "*[],"):
            raise ParseError(f"{where}: cannot read {text!r}")
    # Specifiers: the identifiers before the first '*', '[' or ','; the last of them is the
    # declarator's name unless it is a type word or the tag of 'struct X'.
    i = 0
    while i < len(toks) and toks[i] not in ("*", "[", ","):
        i += 1
    ids = toks[:i]
    if not ids:
        raise ParseError(f"{where}: no type in {text!r}")
    non_qual = [t for t in ids if t not in _QUALIFIERS]
    has_name = (
        (i == len(toks) or toks[i] != "*")
        and len(non_qual) >= 2
        and non_qual[-1] not in _TYPE_WORDS
        and non_qual[-2] not in ("struct", "enum", "union")
        and ids[-1] == non_qual[-1]
    )
    spec = ids[:-1] if has_name else ids
    rest = toks[i - 1 :] if has_name else toks[i:]
    const = any(t == "const" for t in spec)
    words = [t for t in spec if t not in _QUALIFIERS]
    if not words:
        raise ParseError(f"{where}: no type in {text!r}")
    base = _normalize_base(words, where)
    # Declarators, split at ','.
    out: list[tuple[str | None, CType]] = []
    decls: list[list[str]] = [[]]
    for t in rest:
        if t == ",":
            decls.append([])
        else:
            decls[-1].append(t)
    for d in decls:
        pointers: list[bool] = []
        name = None
        array = None
        j = 0
        while j < len(d) and (d[j] == "*" or d[j] in _QUALIFIERS):
            if d[j] == "*":
                pointers.append(False)
            elif d[j] == "const":
                if not pointers:
                    raise ParseError(f"{where}: cannot read {text!r}")
                pointers[-1] = True
            j += 1
        if j < len(d) and re.match(r"[A-Za-z_]", d[j]):
            name = d[j]
            j += 1
        if j < len(d) and d[j] == "[":
            if j + 2 >= len(d) or d[j + 2] != "]":
                raise ParseError(f"{where}: cannot read the array size in {text!r}")
            n = _int_literal(d[j + 1])
            if n is None:
                n = defines.get(d[j + 1])
            if n is None:
                raise ParseError(f"{where}: array size {d[j + 1]!r} is not an integer constant")
            array = n
            j += 3
        if j != len(d):
            raise ParseError(f"{where}: cannot read {text!r}")
        if need_name and name is None:
            raise ParseError(f"{where}: a declaration without a name: {text!r}")
        out.append((name, CType(base, const, tuple(pointers), array)))
    return out


def parse_header(path: str | os.PathLike, text: str | None = None) -> Header:
    """Parses tierfs.h (or text, reported as path)."""
    path = str(path)
    if text is None:
        text = Path(path).read_text()
    h = Header(path)
    body_text = _preprocess(_strip_comments(text), path, h.defines)
    body_text = re.sub(r"\s+", lambda m: "\n" * m.group(0).count("\n") or " ", body_text)
    for stmt, line in _statements(body_text, path):
        where = f"{path}:{line}"
        flat = " ".join(stmt.split())
        if '"' in flat or "extern" in flat.split() or "__attribute__" in flat:
            raise ParseError(f"{where}: not supported: {flat[:80]!r}")
        typedef = flat.startswith("typedef ")
        core = flat[len("typedef ") :] if typedef else flat
        m = re.match(r"^(struct|enum|union)\s*([A-Za-z_]\w*)?\s*\{(.*)\}\s*([A-Za-z_]\w*)?$", core, re.S)
        if m:
            kind, tag, body, name = m.groups()
            if kind == "union":
                raise ParseError(f"{where}: unions are not supported")
            if typedef and not name:
                raise ParseError(f"{where}: typedef without a name")
            if not typedef and name:
                raise ParseError(f"{where}: variable definitions are not supported: {flat[:80]!r}")
            if not typedef and not tag:
                raise ParseError(f"{where}: an anonymous {kind} without a typedef")
            tname = name if typedef else f"{kind} {tag}"
            if kind == "struct":
                body_stmt = stmt[stmt.index("{") + 1 : stmt.rindex("}")]
                s = Struct(tname, tag, _parse_fields(body_stmt, path, line + stmt[: stmt.index("{")].count("\n"), h.defines), line)
                if tname in h.structs:
                    raise ParseError(f"{where}: struct {tname} defined twice")
                h.structs[tname] = s
                if tag:
                    h._struct_tags[tag] = tname
            else:
                e = Enum(tname, tag, _parse_enum(body, where, h.defines), line)
                h.enums[tname] = e
                if tag:
                    h._enum_tags[tag] = tname
            if typedef and tag:
                h._tagged[name] = (kind, tag)
            continue
        m = re.match(r"^(struct|enum|union)\s+([A-Za-z_]\w*)(?:\s+([A-Za-z_]\w*))?$", core)
        if m and (typedef == bool(m.group(3))):
            kind, tag, name = m.groups()
            if kind != "struct":
                raise ParseError(f"{where}: forward {kind} declarations are not supported")
            h._forward.add(tag)
            if name:
                h._tagged[name] = ("struct", tag)
            continue
        fp = re.match(r"^(.*?)\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\((.*)\)$", core) if typedef else None
        if fp:  # typedef RET (*NAME)(PARAMS): a callback type
            ret_text, fname, params_text = fp.groups()
            (_, ret), = _parse_decl(ret_text + " x", where, h.defines, need_name=True)
            params = [Param(pn, pt) for pn, pt in (_parse_decl(p, where, h.defines, need_name=False)[0] for p in params_text.split(","))]
            h.funcptrs[fname] = Function(fname, ret, params, line)
            continue
        if typedef:
            raise ParseError(f"{where}: typedefs of non-tagged types are not supported: {flat[:80]!r}")
        m = re.match(r"^(.*?)\(\s*(.*?)\s*\)$", flat)
        if not m or "(" in m.group(1) or "(" in m.group(2):
            raise ParseError(f"{where}: cannot read the declaration {flat[:80]!r}")
        head, params_text = m.groups()
        decl = _parse_decl(head, where, h.defines, need_name=True)
        (fname, ret), = decl
        if ret.array is not None:
            raise ParseError(f"{where}: {fname} returns an array")
        params: list[Param] = []
        if params_text not in ("void", ""):
            for p in params_text.split(","):
                (pname, pt), = _parse_decl(p, where, h.defines, need_name=False)
                if pt.array is not None:  # an array parameter is a pointer
                    pt = CType(pt.base, pt.const, pt.pointers + (False,))
                params.append(Param(pname, pt))
        elif params_text == "":
            raise ParseError(f"{where}: {fname}() has no prototype; write {fname}(void)")
        if fname in h.functions:
            raise ParseError(f"{where}: function {fname} declared twice")
        h.functions[fname] = Function(fname, ret, params, line)
    for tag in h._forward:
        if tag not in h._struct_tags:
            h.opaque.add(h._opaque_name(tag))
    # Every type used must be known.
    for s in h.structs.values():
        for f in s.fields:
            kind, _ = h.resolve(f.ctype.base)
            if kind in ("void", "opaque") and not f.ctype.pointers:
                raise ParseError(f"{h.where(f.line)}: field {s.name}.{f.name} of incomplete type {f.ctype}")
    for fn in h.functions.values():
        for t in [fn.ret] + [p.ctype for p in fn.params]:
            h.resolve(t.base)
    return h


def _parse_fields(body: str, path: str, first_line: int, defines: dict[str, int]) -> list[Field]:
    fields: list[Field] = []
    if "{" in body:
        raise ParseError(f"{path}:{first_line}: nested struct/union definitions are not supported")
    pos = 0
    for part in body.split(";"):
        line = first_line + body.count("\n", 0, pos + len(part) - len(part.lstrip()))
        pos += len(part) + 1
        if not part.strip():
            continue
        for name, ct in _parse_decl(" ".join(part.split()), f"{path}:{line}", defines, need_name=True):
            fields.append(Field(name, ct, line))  # type: ignore[arg-type]
    if not fields:
        raise ParseError(f"{path}:{first_line}: a struct without fields")
    return fields


def _parse_enum(body: str, where: str, defines: dict[str, int]) -> dict[str, int]:
    members: dict[str, int] = {}
    nxt = 0
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        m = re.match(r"^([A-Za-z_]\w*)\s*(?:=\s*(.+))?$", item)
        if not m:
            raise ParseError(f"{where}: cannot read enumerator {item!r}")
        name, expr = m.groups()
        if expr is not None:
            v = _int_literal(expr)
            if v is None:
                v = members.get(expr.strip(), defines.get(expr.strip()))
            if v is None:
                raise ParseError(f"{where}: enumerator {name} = {expr!r} is not an integer constant")
            nxt = v
        members[name] = nxt
        nxt += 1
    return members


# ---- comparing with ctypes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    kind: str  # "struct", "field", "function", "constant", "layout", "library"
    name: str  # "tfs_open_options.device", "tfs_gather", "TFS_EIO", ...
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.message}"


_CT_SCALAR_CODES = {
    "b": ("int", True),
    "B": ("int", False),
    "h": ("int", True),
    "H": ("int", False),
    "i": ("int", True),
    "I": ("int", False),
    "l": ("int", True),
    "L": ("int", False),
    "q": ("int", True),
    "Q": ("int", False),
    "c": ("char", None),
    "?": ("bool", None),
    "f": ("float", None),
    "d": ("float", None),
    "g": ("float", None),
}


def _is_type(p: Any, base: type) -> bool:
    return isinstance(p, type) and issubclass(p, base)


def _ct_scalar(p: Any) -> tuple[str, int, bool | None] | None:
    if not _is_type(p, ctypes._SimpleCData):
        return None
    code = p._type_
    if code not in _CT_SCALAR_CODES:
        return None
    fam, signed = _CT_SCALAR_CODES[code]
    return fam, ctypes.sizeof(p), signed


def describe(p: Any) -> str:
    """A ctypes type as one writes it: c_int64 rather than c_long."""
    if p is None:
        return "None"
    sc = _ct_scalar(p)
    if sc is not None and sc[0] == "int":
        return f"c_{'' if sc[2] else 'u'}int{sc[1] * 8}"
    if _is_type(p, ctypes._Pointer):
        return f"POINTER({describe(p._type_)})"
    if _is_type(p, ctypes.Array):
        return f"{describe(p._type_)} * {p._length_}"
    return getattr(p, "__name__", repr(p))


def _c_desc(kind: str, info: Any) -> str:
    if kind == "scalar":
        fam, size, signed = info
        if fam == "int":
            return f"a{'' if signed else 'n unsigned'} {size * 8}-bit integer"
        return f"a {size}-byte {fam}"
    return kind


def type_mismatch(h: Header, t: CType, p: Any, structs: dict[str, type]) -> str | None:
    """Why the ctypes type p does not match the C type t, or None if it does."""
    if t.array is not None:
        if not _is_type(p, ctypes.Array):
            return f"the header has an array of {t.array}, Python {describe(p)}"
        if p._length_ != t.array:
            return f"array length {t.array} in the header, {p._length_} in Python"
        r = type_mismatch(h, t.element(), p._type_, structs)
        return None if r is None else f"array element: {r}"
    if t.pointers:
        target = t.pointee()
        is_char = not target.pointers and target.base == "char"
        if _is_type(p, ctypes.c_char_p):
            if not is_char:
                return "c_char_p is for char strings; the header has a pointer to " + str(target)
            if not target.const:
                return "c_char_p for a char buffer the library writes (char *): use c_void_p or POINTER(c_char)"
            return None
        if _is_type(p, ctypes.c_void_p):
            if is_char and target.const:
                return "a C string (const char *) should be c_char_p"
            return None
        if _is_type(p, ctypes._Pointer):
            if not target.pointers and target.base == "void":
                return f"{describe(p)} for void *: use c_void_p"
            r = type_mismatch(h, target, p._type_, structs)
            return None if r is None else f"pointee: {r}"
        if p is None:
            return "a pointer in the header, None (void) in Python"
        sc = _ct_scalar(p)
        if sc is not None:
            return f"a pointer in the header, an integer ({describe(p)}) in Python"
        return f"a pointer in the header, {describe(p)} in Python"
    kind, info = h.resolve(t.base)
    if kind == "funcptr":
        if not (isinstance(p, type) and issubclass(p, ctypes._CFuncPtr)):
            return f"the callback type {t.base} in the header, {describe(p)} in Python (want a ctypes.CFUNCTYPE)"
        if len(p._argtypes_) != len(info.params):
            return f"{t.base} takes {len(info.params)} parameters in the header, {len(p._argtypes_)} in Python"
        for i, (hp, pa) in enumerate(zip(info.params, p._argtypes_)):
            r = type_mismatch(h, hp.ctype, pa, structs)
            if r is not None:
                return f"{t.base} parameter {i + 1} ({hp.name}): {r}"
        r = type_mismatch(h, info.ret, p._restype_, structs)
        return None if r is None else f"{t.base} result: {r}"
    if kind == "void":
        return None if p is None else f"void in the header, {describe(p)} in Python"
    if p is None:
        return f"{t} in the header, None (void) in Python"
    if kind == "scalar":
        sc = _ct_scalar(p)
        if sc != info:
            return f"{_c_desc(kind, info)} in the header, {describe(p)} in Python"
        return None
    if kind == "enum":  # an enum is passed as int; the layout check verifies sizeof(enum)
        sc = _ct_scalar(p)
        if sc is None or sc[0] != "int" or sc[1] != ctypes.sizeof(ctypes.c_int):
            return f"an enum ({ctypes.sizeof(ctypes.c_int)}-byte int) in the header, {describe(p)} in Python"
        return None
    if kind == "struct":
        cls = structs.get(info)
        if cls is None:
            return f"struct {info} has no ctypes class in STRUCTS"
        if p is not cls:
            return f"struct {info} ({cls.__name__}) in the header, {describe(p)} in Python"
        return None
    return f"{t} is an incomplete type and cannot be passed by value"


def _module_structs(native: Any) -> dict[str, type]:
    structs = getattr(native, "STRUCTS", None)
    if not isinstance(structs, dict):
        raise AttributeError("the binding has no STRUCTS dict (C struct name -> ctypes class)")
    return structs


def check_declarations(h: Header, native: Any, errors: Any) -> list[Mismatch]:
    """Struct fields, function signatures and constants of the binding against the header.

    native: the tierfs._native module (or an object with STRUCTS, lib and ABI_VERSION);
    errors: the tierfs.errors module (status constants, STATUS_NAMES, from_status)."""
    out: list[Mismatch] = []
    structs = _module_structs(native)

    # Structs.
    for s in h.structs.values():
        cls = structs.get(s.name)
        if cls is None:
            out.append(Mismatch("struct", s.name, f"defined at {h.where(s.line)}, no ctypes class in STRUCTS"))
            continue
        if not _is_type(cls, ctypes.Structure):
            out.append(Mismatch("struct", s.name, f"{describe(cls)} is not a ctypes.Structure"))
            continue
        if getattr(cls, "_pack_", 0):
            out.append(Mismatch("struct", s.name, f"{cls.__name__} sets _pack_; the header uses natural alignment"))
        pyfields = list(getattr(cls, "_fields_", []))
        for f in pyfields:
            if len(f) != 2:
                out.append(Mismatch("field", f"{s.name}.{f[0]}", f"{cls.__name__} declares a bit-field"))
        pytypes = {f[0]: f[1] for f in pyfields}
        cnames = [f.name for f in s.fields]
        pnames = [f[0] for f in pyfields]
        for f in s.fields:
            if f.name not in pytypes:
                out.append(Mismatch("field", f"{s.name}.{f.name}", f"in the header ({h.where(f.line)}), missing from {cls.__name__}._fields_"))
        for n in pnames:
            if n not in cnames:
                out.append(Mismatch("field", f"{s.name}.{n}", f"in {cls.__name__}._fields_, not in the header"))
        common_c = [n for n in cnames if n in pytypes]
        common_p = [n for n in pnames if n in cnames]
        if common_c != common_p:
            k = next(i for i, (a, b) in enumerate(zip(common_c, common_p)) if a != b)
            out.append(
                Mismatch(
                    "field",
                    f"{s.name}.{common_c[k]}",
                    f"field order differs from position {k}: header {', '.join(common_c[k:k + 4])}; "
                    f"{cls.__name__} {', '.join(common_p[k:k + 4])}",
                )
            )
        for f in s.fields:
            if f.name in pytypes:
                r = type_mismatch(h, f.ctype, pytypes[f.name], structs)
                if r:
                    out.append(Mismatch("field", f"{s.name}.{f.name}", f"`{f.ctype}` ({h.where(f.line)}), {describe(pytypes[f.name])} in {cls.__name__}: {r}"))
    for name in structs:
        if name not in h.structs:
            out.append(Mismatch("struct", name, f"in STRUCTS ({describe(structs[name])}), not a struct of the header"))
    if isinstance(native, ModuleType):
        listed = {id(c) for c in structs.values()}
        for attr, v in vars(native).items():
            # A base class without fields of its own (e.g. one that checks assignments) lays out nothing.
            if _is_type(v, ctypes.Structure) and v.__module__ == native.__name__ and id(v) not in listed and "_fields_" in vars(v):
                out.append(Mismatch("struct", attr, "a ctypes.Structure of the binding that STRUCTS does not list (unchecked)"))

    # Functions, as the loaded library has them declared.
    lib = native.lib
    for fn in h.functions.values():
        try:
            f = getattr(lib, fn.name)
        except AttributeError:
            out.append(Mismatch("function", fn.name, f"declared at {h.where(fn.line)}; the library does not export it"))
            continue
        argtypes = getattr(f, "argtypes", None)
        if argtypes is None:
            out.append(Mismatch("function", fn.name, f"declared at {h.where(fn.line)}; no argtypes in the binding (ctypes would guess: Python ints as C int)"))
        elif len(argtypes) != len(fn.params):
            out.append(Mismatch("function", fn.name, f"{len(fn.params)} parameters in the header ({h.where(fn.line)}), {len(argtypes)} argtypes"))
        else:
            for i, (p, a) in enumerate(zip(fn.params, argtypes)):
                r = type_mismatch(h, p.ctype, a, structs)
                if r:
                    out.append(Mismatch("function", fn.name, f"argument {i + 1} ({p.name or '?'}): `{p.ctype}` in the header, {describe(a)} in Python: {r}"))
        restype = getattr(f, "restype", ctypes.c_int)
        r = type_mismatch(h, fn.ret, restype, structs)
        if r:
            out.append(Mismatch("function", fn.name, f"returns `{fn.ret}` in the header, restype {describe(restype)}: {r}"))
    for name, v in vars(lib).items():
        if name.startswith("tfs_") and hasattr(v, "argtypes") and name not in h.functions:
            out.append(Mismatch("function", name, "used by the binding, not declared in the header"))

    # Constants: TFS_X -> X in the binding or the errors module.
    def py_const(n: str) -> tuple[bool, Any]:
        short = n[len("TFS_") :] if n.startswith("TFS_") else n
        for mod in (native, errors):
            if hasattr(mod, short):
                return True, getattr(mod, short)
        return False, None

    consts: dict[str, int] = {n: v for n, v in h.defines.items() if n.startswith("TFS_")}
    for e in h.enums.values():
        consts.update(e.members)
    for n, v in consts.items():
        found, pv = py_const(n)
        if not found:
            out.append(Mismatch("constant", n, f"{v} in the header; Python defines no {n[4:] if n.startswith('TFS_') else n}"))
        elif pv != v:
            out.append(Mismatch("constant", n, f"{v} in the header, {pv!r} in Python"))
    status = h.enums.get("tfs_status")
    names = getattr(errors, "STATUS_NAMES", None)
    if status is not None and names is not None:
        for n, v in status.members.items():
            if names.get(v) != n:
                out.append(Mismatch("constant", n, f"STATUS_NAMES[{v}] is {names.get(v)!r}"))
            if v != 0 and hasattr(errors, "from_status"):
                exc = errors.from_status(v, "x")
                if type(exc) is getattr(errors, "Error", None) or getattr(exc, "status", None) != v:
                    out.append(Mismatch("constant", n, f"from_status({v}) gives {type(exc).__name__} (status {getattr(exc, 'status', None)}), not its own exception class"))
        for v, n in names.items():
            if v not in status.members.values():
                out.append(Mismatch("constant", n, f"STATUS_NAMES has {v}, not a tfs_status value of the header"))
    return out


# ---- exports -----------------------------------------------------------------------------------


def exported_functions(lib_path: str | os.PathLike) -> set[str] | None:
    """Names of the functions a 64-bit little-endian ELF shared object exports (.dynsym: defined,
    global or weak, default or protected visibility); None for other files."""
    data = Path(lib_path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff = _struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = _struct.unpack_from("<HH", data, 0x3A)
    secs = [_struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sec in secs:
        if sec[1] != 11:  # SHT_DYNSYM
            continue
        strtab_off = secs[sec[6]][4]
        names = set()
        for off in range(sec[4], sec[4] + sec[5], 24):
            st_name, st_info, st_other, st_shndx, _, _ = _struct.unpack_from("<IBBHQQ", data, off)
            if st_shndx == 0 or (st_info & 0xF) != 2 or (st_info >> 4) not in (1, 2) or (st_other & 3) not in (0, 3):
                continue
            start = strtab_off + st_name
            names.add(data[start : data.index(b"\0", start)].decode())
        return names
    return None


def check_exports(h: Header, lib_path: str | os.PathLike, prefix: str = "tfs_") -> list[Mismatch] | None:
    """The library's exported functions against the header's; None if it is not a readable ELF."""
    names = exported_functions(lib_path)
    if names is None:
        return None
    out = []
    for fn in h.functions.values():
        if fn.name not in names:
            out.append(Mismatch("library", fn.name, f"declared at {h.where(fn.line)}, not exported by {lib_path}"))
    for n in sorted(names):
        if n.startswith(prefix) and n not in h.functions:
            out.append(Mismatch("library", n, f"exported by {lib_path}, not declared in the header"))
    return out


# ---- layout ------------------------------------------------------------------------------------


def find_cc(cc: str | None = None) -> str:
    for c in ([cc] if cc else []) + [os.environ.get("CC") or "", "cc", "gcc", "clang"]:
        if c:
            path = shutil.which(c.split()[0])
            if path:
                return path
    raise CompilerNotFound("no C compiler (cc, gcc, clang or $CC) on PATH")


def layout_program(h: Header) -> str:
    """C source printing every struct's size and alignment and every field's offset and size."""
    hp = os.path.abspath(h.path).replace("\\", "\\\\").replace('"', '\\"')
    lines = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        f'#include "{hp}"',
        "",
        "int main(void) {",
    ]
    for s in h.structs.values():
        t = s.c_name
        lines.append(f'  printf("struct %s %zu %zu\\n", "{s.name}", sizeof({t}), _Alignof({t}));')
        for f in s.fields:
            lines.append(
                f'  printf("field %s %s %zu %zu\\n", "{s.name}", "{f.name}", offsetof({t}, {f.name}), sizeof((({t} *)0)->{f.name}));'
            )
    for e in h.enums.values():
        lines.append(f'  printf("enum %s %zu\\n", "{e.name}", sizeof({e.name}));')
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def c_layout(h: Header, cc: str | None = None) -> dict[str, Any]:
    """Compiles and runs layout_program: {"structs": {name: (size, align)},
    "fields": {(struct, field): (offset, size)}, "enums": {name: size}}."""
    compiler = find_cc(cc)
    with tempfile.TemporaryDirectory(prefix="tierfs-abi-") as d:
        src = Path(d) / "layout.c"
        exe = Path(d) / "layout"
        src.write_text(layout_program(h))
        r = subprocess.run([compiler, "-std=c11", "-o", str(exe), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise ParseError(f"{h.path}: the layout program does not compile with {compiler}:\n{r.stderr.strip()}")
        r = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    res: dict[str, Any] = {"structs": {}, "fields": {}, "enums": {}}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "struct":
            res["structs"][w[1]] = (int(w[2]), int(w[3]))
        elif w[0] == "field":
            res["fields"][(w[1], w[2])] = (int(w[3]), int(w[4]))
        elif w[0] == "enum":
            res["enums"][w[1]] = int(w[2])
    return res


def check_layout(h: Header, native: Any, cc: str | None = None) -> list[Mismatch]:
    """sizeof/alignment/offsetof from the C compiler against ctypes. Raises CompilerNotFound."""
    lay = c_layout(h, cc)
    structs = _module_structs(native)
    out: list[Mismatch] = []
    for s in h.structs.values():
        cls = structs.get(s.name)
        if not _is_type(cls, ctypes.Structure):
            continue  # reported by check_declarations
        size, align = lay["structs"][s.name]
        if ctypes.sizeof(cls) != size:
            out.append(Mismatch("layout", s.name, f"sizeof {size} in C, ctypes.sizeof({cls.__name__}) {ctypes.sizeof(cls)}"))
        if ctypes.alignment(cls) != align:
            out.append(Mismatch("layout", s.name, f"_Alignof {align} in C, ctypes.alignment({cls.__name__}) {ctypes.alignment(cls)}"))
        for f in s.fields:
            off, fsize = lay["fields"][(s.name, f.name)]
            pf = cls.__dict__.get(f.name)  # the ctypes CField descriptor
            if hasattr(pf, "offset") and hasattr(pf, "size"):
                if pf.offset != off:
                    out.append(Mismatch("layout", f"{s.name}.{f.name}", f"offsetof {off} in C, {cls.__name__}.{f.name}.offset {pf.offset}"))
                if pf.size != fsize:
                    out.append(Mismatch("layout", f"{s.name}.{f.name}", f"sizeof {fsize} in C, {cls.__name__}.{f.name}.size {pf.size}"))
            else:
                out.append(Mismatch("layout", f"{s.name}.{f.name}", f"at offset {off} in C ({fsize} bytes), no such field in {cls.__name__}"))
    for name, size in lay["enums"].items():
        if size != ctypes.sizeof(ctypes.c_int):
            out.append(Mismatch("layout", name, f"sizeof enum {size} in C; the binding passes enums as c_int ({ctypes.sizeof(ctypes.c_int)})"))
    return out


# ---- entry points ------------------------------------------------------------------------------


def load_binding(python_dir: str | os.PathLike | None = PYTHON_DIR) -> tuple[ModuleType, ModuleType]:
    """(tierfs._native, tierfs.errors), imported from python_dir (None: wherever `import tierfs`
    finds it). Importing _native loads libtierfs.so."""
    if python_dir is not None:
        sys.path.insert(0, str(python_dir))
    native = importlib.import_module("tierfs._native")
    errors = importlib.import_module("tierfs.errors")
    if python_dir is not None:
        want = Path(python_dir).resolve()
        got = Path(native.__file__).resolve()
        if want not in got.parents:
            raise ImportError(f"tierfs._native was already imported from {got}, not from {want}")
    return native, errors


def check(
    header: str | os.PathLike | Header = HEADER,
    native: Any = None,
    errors: Any = None,
    layout: bool = True,
    exports: bool = True,
    cc: str | None = None,
) -> list[Mismatch]:
    """Every check; native/errors default to the installed tierfs package. Raises ParseError and,
    with layout, CompilerNotFound."""
    h = header if isinstance(header, Header) else parse_header(header)
    if native is None or errors is None:
        native, errors = load_binding(None)
    out = check_declarations(h, native, errors)
    if exports and getattr(native, "lib_path", None):
        out += check_exports(h, native.lib_path) or []
    if layout:
        out += check_layout(h, native, cc)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="check_abi.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", default=str(HEADER), help="the C header (default: %(default)s)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--python-dir", default=str(PYTHON_DIR), help="where the tierfs package is (default: %(default)s)")
    g.add_argument("--installed", action="store_true", help="check the tierfs package `import tierfs` finds")
    ap.add_argument("--cc", help="C compiler for the layout check (default: $CC, cc, gcc, clang)")
    ap.add_argument("--no-layout", action="store_true", help="skip the compiled layout check")
    args = ap.parse_args(argv)
    try:
        h = parse_header(args.header)
    except (OSError, ParseError) as e:
        print(f"check_abi: {e}", file=sys.stderr)
        return 2
    native, errors = load_binding(None if args.installed else args.python_dir)
    mismatches = check_declarations(h, native, errors)
    ex = check_exports(h, native.lib_path)
    if ex is None:
        print(f"check_abi: exports not checked ({native.lib_path} is not a 64-bit little-endian ELF)", file=sys.stderr)
    mismatches += ex or []
    laid = ""
    if not args.no_layout:
        try:
            mismatches += check_layout(h, native, args.cc)
            laid = ", layout"
        except CompilerNotFound as e:
            print(f"check_abi: layout not checked: {e}", file=sys.stderr)
        except ParseError as e:
            print(f"check_abi: {e}", file=sys.stderr)
            return 2
    for m in mismatches:
        print(m)
    what = f"{len(h.structs)} structs, {len(h.functions)} functions, {sum(len(e.members) for e in h.enums.values()) + len(h.defines)} constants{laid}"
    if mismatches:
        print(f"check_abi: {len(mismatches)} mismatch(es) between {args.header} and {native.__file__} ({what})")
        return 1
    print(f"check_abi: {native.__file__} agrees with {args.header} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
