"""A strict parser of the tierfs C headers (capi/tierfs.h and the headers it includes).

Stdlib only. :func:`parse_header` reads tierfs.h, follows its ``#include "..."`` of the headers
beside it (``#include <...>`` is the system's and skipped; include guards work), and returns a
:class:`Header`: the structs, function prototypes, callback types, enums and integer
``#define TFS_*`` of all of them, each with the file and line it came from. pybind/gen_binding.py
generates the Python binding from it and pybind/check_abi.py checks the library and the layout
against it.

The parser is strict: a construct it does not understand (a function pointer outside a typedef,
a bit-field, a union, ``#if`` expressions, ...) is a :class:`ParseError`, never silently skipped.
"""

from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HEADER = REPO / "capi" / "tierfs.h"


class ParseError(Exception):
    """The header holds something this parser does not understand."""


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
    path: str  # the header parse_header was given (tierfs.h)
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
    # The files read, in the order their text appears (tierfs.h first, then what it includes);
    # origins[i] is (file, line) of line i + 1 of the text parsed, where the lines of every file
    # stand in place of its #include. Struct, Function and Enum lines count in that text.
    files: list[str] = field(default_factory=list)
    origins: list[tuple[str, int]] = field(default_factory=list)

    def origin(self, line: int) -> tuple[str, int]:
        """(file, line in it) of a line of the parsed text."""
        if 1 <= line <= len(self.origins):
            return self.origins[line - 1]
        return self.path, line

    def file_of(self, line: int) -> str:
        """The base name of the file a line of the parsed text is in ("tierfs_store.h")."""
        return os.path.basename(self.origin(line)[0])

    def where(self, line: int) -> str:
        p, n = self.origin(line)
        return f"{os.path.basename(p)}:{n}"

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
    # each integer type and its unsigned twin
    **{
        name: ("int", size, signed)
        for signed_name, unsigned_name, size in (
            ("signed char", "unsigned char", 1),
            ("short", "unsigned short", _sz(ctypes.c_short)),
            ("int", "unsigned int", _sz(ctypes.c_int)),
            ("long", "unsigned long", _sz(ctypes.c_long)),
            ("long long", "unsigned long long", _sz(ctypes.c_longlong)),
            ("int8_t", "uint8_t", 1),
            ("int16_t", "uint16_t", 2),
            ("int32_t", "uint32_t", 4),
            ("int64_t", "uint64_t", 8),
            ("intptr_t", "uintptr_t", _sz(ctypes.c_void_p)),
        )
        for name, signed in ((signed_name, True), (unsigned_name, False))
    },
    "size_t": ("int", _sz(ctypes.c_size_t), False),
    "ssize_t": ("int", _sz(ctypes.c_ssize_t), True),
    "ptrdiff_t": ("int", _sz(ctypes.c_ssize_t), True),
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


def _preprocess(h: Header, path: str, defined: set[str], text: str | None = None, depth: int = 0) -> list[str]:
    """The lines a C (not C++) compiler sees of the file at path (text: its contents, else read),
    comments blanked, with the files of its #include "..." in place of those lines (resolved beside
    it); records integer #defines in h.defines and where each line is from in h.origins."""
    if depth > 16:
        raise ParseError(f"{path}: #include nested more than 16 deep")
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ParseError(f"{path}: cannot read it: {e}") from None
    if path not in h.files:
        h.files.append(path)
    defines = h.defines
    text = _strip_comments(text)
    lines = text.replace("\\\n", " \n").split("\n")  # continuations: keep the line count
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (this branch active, some branch taken)

    def emit(line: str, i: int) -> None:
        out.append(line)
        h.origins.append((path, i))

    def active() -> bool:
        return all(a for a, _ in stack)

    for i, line in enumerate(lines, 1):
        m = re.match(r"\s*#\s*(\w*)\s*(.*?)\s*$", line)
        if not m:
            emit(line if active() else "", i)
            continue
        emit("", i)
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
        elif d == "include":
            im = re.match(r'"([^"]+)"$', rest)
            if im:
                inc = os.path.join(os.path.dirname(path), im.group(1))
                if not os.path.isfile(inc):
                    raise ParseError(f"{path}:{i}: #include {rest}: no such file {inc}")
                out.extend(_preprocess(h, inc, defined, None, depth + 1))
            elif not re.match(r"<[^>]+>$", rest):
                raise ParseError(f"{path}:{i}: cannot read #include {rest!r}")
        elif d in ("pragma", ""):
            continue
        elif d == "error":
            raise ParseError(f"{path}:{i}: #error {rest}")
        else:
            raise ParseError(f"{path}:{i}: #{d} is not supported")
    if stack:
        raise ParseError(f"{path}: unterminated #if")
    return out


def _statements(text: str, h: Header):
    """Top-level declarations: (text, first line), split at ';' outside braces."""
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise ParseError(f"{h.where(text.count(chr(10), 0, i) + 1)}: unbalanced '}}'")
        elif ch == ";" and depth == 0:
            stmt = text[start:i]
            if stmt.strip():
                lead = len(stmt) - len(stmt.lstrip())
                yield stmt.strip(), text.count("\n", 0, start + lead) + 1
            start = i + 1
    if text[start:].strip():
        line = text.count("\n", 0, start + len(text[start:]) - len(text[start:].lstrip())) + 1
        raise ParseError(f"{h.where(line)}: declaration without ';': {text[start:].strip()[:60]!r}")


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


def parse_header(path: str | os.PathLike = HEADER, text: str | None = None) -> Header:
    """Parses tierfs.h and the headers it includes (text: the contents of path, which is then not
    read; its includes are read beside path)."""
    path = str(path)
    h = Header(path)
    body_text = "\n".join(_preprocess(h, path, set(), text))
    body_text = re.sub(r"\s+", lambda m: "\n" * m.group(0).count("\n") or " ", body_text)
    for stmt, line in _statements(body_text, h):
        where = h.where(line)
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
                s = Struct(tname, tag, _parse_fields(body_stmt, h, line + stmt[: stmt.index("{")].count("\n")), line)
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


def _parse_fields(body: str, h: Header, first_line: int) -> list[Field]:
    fields: list[Field] = []
    if "{" in body:
        raise ParseError(f"{h.where(first_line)}: nested struct/union definitions are not supported")
    pos = 0
    for part in body.split(";"):
        line = first_line + body.count("\n", 0, pos + len(part) - len(part.lstrip()))
        pos += len(part) + 1
        if not part.strip():
            continue
        for name, ct in _parse_decl(" ".join(part.split()), h.where(line), h.defines, need_name=True):
            fields.append(Field(name, ct, line))  # type: ignore[arg-type]
    if not fields:
        raise ParseError(f"{h.where(first_line)}: a struct without fields")
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


