"""Checks what generation cannot make true: the built library and the C compiler's layout against
the headers (capi/tierfs.h and the headers it includes) and the generated binding.

Stdlib only (no numpy, no loading of the library):

* binding: python/tierfs/_abi.py is what pybind/gen_binding.py makes of the headers now (a header
  edited without `make binding` is stale);
* exports: the library exports every function of the headers, and no ``tfs_*`` function they do
  not declare (read from the ELF dynamic symbol table);
* layout: a C program generated from the parsed headers, compiled with the system C compiler,
  prints ``sizeof``/``_Alignof`` of every struct and ``offsetof``/``sizeof`` of every field, which
  must equal ``ctypes.sizeof``/``ctypes.alignment`` of the generated class and
  ``Class.field.offset``/``.size``; every enum must be the size of the ``c_int`` it is passed as.

Run it (from the repository root, after ``make lib``)::

    python3 pybind/check_abi.py                 # the source tree's binding and build/libtierfs.so
    python3 pybind/check_abi.py --installed     # the tierfs package Python finds, and its library

It prints one line per mismatch and exits 1 when there is any, 2 when the header cannot be parsed.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import shutil
import struct as _struct
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_binding  # noqa: E402
from cheader import HEADER, REPO, Header, ParseError, parse_header  # noqa: E402

PYTHON_DIR = REPO / "python"
LIB = REPO / "build" / "libtierfs.so"


class CompilerNotFound(Exception):
    """No C compiler for the layout check."""


@dataclass(frozen=True)
class Mismatch:
    kind: str  # "binding", "layout", "library"
    name: str  # "tfs_open_options.device", "tfs_gather", ...
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.message}"


# ---- the binding ---------------------------------------------------------------------------------


def load_abi(package_dir: str | os.PathLike) -> types.ModuleType:
    """The generated _abi.py of the tierfs package in package_dir (python/tierfs), imported on its
    own: without tierfs/__init__.py, numpy or the library."""
    name = f"_tierfs_abi_check_{abs(hash(str(package_dir)))}"
    if name + "._abi" in sys.modules:
        return sys.modules[name + "._abi"]
    pkg = types.ModuleType(name)
    pkg.__path__ = [str(package_dir)]  # type: ignore[attr-defined]
    sys.modules[name] = pkg
    spec = importlib.util.spec_from_file_location(name + "._abi", Path(package_dir) / "_abi.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def check_binding(h: Header, abi_path: str | os.PathLike) -> list[Mismatch]:
    """The checked-in _abi.py against what the generator makes of h."""
    path = Path(abi_path)
    want = gen_binding.generate(h)
    got = path.read_text() if path.is_file() else None
    if got == want:
        return []
    if got is None:
        return [Mismatch("binding", str(path), "missing; run `make binding`")]
    gl, wl = got.splitlines(), want.splitlines()
    k = next((i for i, (a, b) in enumerate(zip(gl, wl)) if a != b), min(len(gl), len(wl)))
    line = wl[k] if k < len(wl) else "(end of file)"
    return [Mismatch("binding", str(path), f"stale from line {k + 1} (the headers give {line.strip()!r}); run `make binding`")]


# ---- exports -------------------------------------------------------------------------------------


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


def check_layout(h: Header, structs: dict[str, type], cc: str | None = None) -> list[Mismatch]:
    """sizeof/alignment/offsetof from the C compiler against the ctypes classes of structs (C name
    -> class: the binding's STRUCTS). Raises CompilerNotFound."""
    lay = c_layout(h, cc)
    out: list[Mismatch] = []
    for s in h.structs.values():
        cls = structs.get(s.name)
        if not (isinstance(cls, type) and issubclass(cls, ctypes.Structure)):
            out.append(Mismatch("layout", s.name, "no ctypes.Structure for it in the binding"))
            continue
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


# ---- entry point ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="check_abi.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", default=str(HEADER), help="the C header (default: %(default)s)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--python-dir", default=str(PYTHON_DIR), help="where the tierfs package is (default: %(default)s)")
    g.add_argument("--installed", action="store_true", help="check the tierfs package `import tierfs` finds, and its library")
    ap.add_argument("--lib", help=f"the library (default: {LIB}, or the installed package's)")
    ap.add_argument("--cc", help="C compiler for the layout check (default: $CC, cc, gcc, clang)")
    ap.add_argument("--no-layout", action="store_true", help="skip the compiled layout check")
    args = ap.parse_args(argv)
    try:
        h = parse_header(args.header)
    except (OSError, ParseError) as e:
        print(f"check_abi: {e}", file=sys.stderr)
        return 2
    if args.installed:
        spec = importlib.util.find_spec("tierfs")
        if spec is None or not spec.submodule_search_locations:
            print("check_abi: no tierfs package installed", file=sys.stderr)
            return 2
        pkg = Path(list(spec.submodule_search_locations)[0])
        lib = Path(args.lib or os.environ.get("TIERFS_LIB") or pkg / "_lib" / "libtierfs.so")
    else:
        pkg = Path(args.python_dir) / "tierfs"
        lib = Path(args.lib or LIB)
    mismatches = [] if args.installed else check_binding(h, pkg / "_abi.py")
    abi = load_abi(pkg)
    ex = check_exports(h, lib) if lib.is_file() else None
    if ex is None:
        print(f"check_abi: exports not checked ({lib} is not a 64-bit little-endian ELF; `make lib` builds it)", file=sys.stderr)
    mismatches += ex or []
    laid = ""
    if not args.no_layout:
        try:
            mismatches += check_layout(h, abi.STRUCTS, args.cc)
            laid = ", layout"
        except CompilerNotFound as e:
            print(f"check_abi: layout not checked: {e}", file=sys.stderr)
        except ParseError as e:
            print(f"check_abi: {e}", file=sys.stderr)
            return 2
    for m in mismatches:
        print(m)
    what = f"{len(h.structs)} structs, {len(h.functions)} functions in {len(h.files)} headers{', exports' if ex is not None else ''}{laid}"
    if mismatches:
        print(f"check_abi: {len(mismatches)} mismatch(es) between {args.header} and {pkg / '_abi.py'}, {lib} ({what})")
        return 1
    print(f"check_abi: {pkg / '_abi.py'} and {lib} agree with {args.header} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
