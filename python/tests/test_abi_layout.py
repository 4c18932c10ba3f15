"""The ctypes binding (tierfs._native) against the C ABI (capi/tierfs.h), by pybind/check_abi.py.

Declarations (struct fields, argtypes/restype, constants) and exports are checked without a
compiler; the layout (sizeof, alignment, offsetof of every field) is compiled from the header with
the system C compiler and skipped only where there is none. The mutation tests copy the header,
move or change something, and assert the checker names it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tierfs import _native, errors

REPO = Path(os.environ.get("TIERFS_REPO") or Path(__file__).resolve().parents[2])
HEADER = REPO / "capi" / "tierfs.h"


def _load_checker():
    spec = importlib.util.spec_from_file_location("tierfs_pybind_check_abi", REPO / "pybind" / "check_abi.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


abi = _load_checker()


@pytest.fixture(scope="module")
def cc() -> str:
    try:
        return abi.find_cc()
    except abi.CompilerNotFound as e:
        pytest.skip(f"the layout check compiles C: {e}")


@pytest.fixture(scope="module")
def header():
    return abi.parse_header(HEADER)


def _report(ms) -> str:
    return "\n".join(map(str, ms))


def _names(ms, kind=None) -> set[str]:
    return {m.name for m in ms if kind is None or m.kind == kind}


# ---- the real header and binding agree ---------------------------------------------------------


def test_header_parses(header):
    h = header
    assert set(h.structs) == {"tfs_open_options", "tfs_store_info", "tfs_sampler_options", "tfs_io_options", "tfs_io_request"}
    assert [f.name for f in h.structs["tfs_store_info"].fields][:2] == ["struct_size", "num_nodes"]
    assert str(h.structs["tfs_store_info"].fields[6].ctype) == "char[16]"
    assert str(h.structs["tfs_sampler_options"].fields[1].ctype) == "const int32_t *"
    assert str(h.functions["tfs_io_open"].params[0].ctype) == "const char *const *"
    assert str(h.functions["tfs_sample"].params[3].ctype) == "struct tfs_sample **"
    assert str(h.functions["tfs_last_error"].ret) == "const char *"
    assert h.functions["tfs_abi_version"].params == []
    assert h.enums["tfs_status"].members == {name: getattr(errors, name[4:]) for name in errors.STATUS_NAMES.values()}
    assert h.defines == {"TFS_ABI_VERSION": 2}
    assert h.opaque == {"tfs_store", "tfs_sampler", "tfs_io", "tfs_epochs", "struct tfs_sample", "tfs_hetero_sampler", "struct tfs_hetero_sample"}
    # Every prototype in the text is parsed (an independent, line-based look at the header).
    protos = set(re.findall(r"^(?:const )?\w+ \**(tfs_\w+)\(", HEADER.read_text(), re.M))
    assert protos == set(h.functions) and len(protos) >= 28


def test_binding_matches_header(header):
    ms = abi.check_declarations(header, _native, errors)
    assert not ms, "python/tierfs/_native.py disagrees with capi/tierfs.h:\n" + _report(ms)


def test_library_exports_match_header(header):
    ms = abi.check_exports(header, _native.lib_path)
    assert ms is not None, f"{_native.lib_path} is not a 64-bit little-endian ELF"
    assert not ms, _report(ms)


def test_layout_matches_c(header, cc):
    lay = abi.c_layout(header, cc)
    assert len(lay["fields"]) == sum(len(s.fields) for s in header.structs.values())
    assert lay["structs"]["tfs_store_info"][0] == ctypes.sizeof(_native.StoreInfo) == 80
    ms = abi.check_layout(header, _native, cc)
    assert not ms, "ctypes layout differs from the C compiler's:\n" + _report(ms)


def test_cli(tmp_path, capsys, cc):
    assert abi.main(["--installed", "--header", str(HEADER)]) == 0
    bad = tmp_path / "tierfs.h"
    bad.write_text(HEADER.read_text().replace("TFS_EIO = 5,", "TFS_EIO = 12,"))
    assert abi.main(["--installed", "--header", str(bad)]) == 1
    assert "constant TFS_EIO: 12 in the header, 5 in Python" in capsys.readouterr().out
    bad.write_text("typedef int64_t tfs_count;\n")
    assert abi.main(["--installed", "--header", str(bad)]) == 2
    # A callback type whose parameters changed is caught where the binding passes it.
    capsys.readouterr()
    bad.write_text(HEADER.read_text().replace("const char *stage, int64_t done, int64_t total);", "const char *stage, int64_t done, int32_t total);"))
    assert abi.main(["--installed", "--header", str(bad)]) == 1
    assert "tfs_progress_fn parameter 4 (total)" in capsys.readouterr().out


# ---- a changed header is caught ----------------------------------------------------------------


def _struct_body(text: str, struct: str) -> tuple[int, int]:
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), text, re.S)
    assert m, struct
    return m.start(1), m.end(1)


def _field_line(body: str, field: str) -> str:
    lines = [ln for ln in body.split("\n") if re.match(r"\s*[\w\s*]+?\b%s(\[\d+\])?;" % field, ln)]
    assert len(lines) == 1, (field, lines)
    return lines[0]


def swap_fields(text: str, struct: str, a: str, b: str) -> str:
    s, e = _struct_body(text, struct)
    body = text[s:e]
    la, lb = _field_line(body, a), _field_line(body, b)
    body = body.replace(la, "\0").replace(lb, la).replace("\0", lb)
    return text[:s] + body + text[e:]


def insert_field(text: str, struct: str, after: str, decl: str) -> str:
    s, e = _struct_body(text, struct)
    body = text[s:e]
    la = _field_line(body, after)
    return text[:s] + body.replace(la, la + "\n  " + decl) + text[e:]


def _mutated(tmp_path: Path, text: str):
    p = tmp_path / "tierfs.h"
    p.write_text(text)
    return abi.parse_header(p)


# (struct, edit, layout mismatches expected, declaration mismatches expected)
MOVES = [
    (  # two fields of one type trade places: offsets only
        "swap",
        lambda t: swap_fields(t, "tfs_open_options", "queue_depth", "max_concurrent_io"),
        {"tfs_open_options.queue_depth", "tfs_open_options.max_concurrent_io"},
        {"tfs_open_options.max_concurrent_io"},  # the header's field where the order first differs
    ),
    (  # an int32 and an int64 trade places
        "swap-sizes",
        lambda t: swap_fields(t, "tfs_io_request", "file", "offset"),
        {"tfs_io_request.file", "tfs_io_request.offset"},
        {"tfs_io_request.offset"},
    ),
    (  # a field inserted: the ones after it move, the struct grows
        "insert",
        lambda t: insert_field(t, "tfs_sampler_options", "num_hops", "int32_t flags;"),
        {"tfs_sampler_options", "tfs_sampler_options.flags", "tfs_sampler_options.replace", "tfs_sampler_options.seed", "tfs_sampler_options.workers"},
        {"tfs_sampler_options.flags"},
    ),
    (  # a field inserted into tail padding: nothing moves, sizeof stays; still reported
        "insert-padding",
        lambda t: insert_field(t, "tfs_io_request", "dst_is_device", "int32_t flags;"),
        {"tfs_io_request.flags"},
        {"tfs_io_request.flags"},
    ),
    (  # a field's type narrows (the next int64 field stays at its offset: padding)
        "retype",
        lambda t: t.replace("  int64_t dim;  ", "  int32_t dim;  "),
        {"tfs_store_info.dim"},
        {"tfs_store_info.dim"},
    ),
]


@pytest.mark.parametrize("name,edit,want_layout,want_decl", MOVES, ids=[m[0] for m in MOVES])
def test_moved_field_is_reported(tmp_path, cc, name, edit, want_layout, want_decl):
    text = HEADER.read_text()
    changed = edit(text)
    assert changed != text
    h = _mutated(tmp_path, changed)
    layout = abi.check_layout(h, _native, cc)
    assert _names(layout, "layout") == want_layout, _report(layout)
    decl = abi.check_declarations(h, _native, errors)
    assert _names(decl) == want_decl, _report(decl)


def test_layout_alone_catches_a_swap(tmp_path, cc):
    """The compiled check does not rely on the parser's field order: with the parsed fields put
    back in the binding's order, a swapped header still fails on offsets."""
    h = _mutated(tmp_path, swap_fields(HEADER.read_text(), "tfs_open_options", "gpu_topology", "host_policy"))
    s = h.structs["tfs_open_options"]
    order = [n for n, _ in _native.OpenOptions._fields_]
    s.fields.sort(key=lambda f: order.index(f.name))
    ms = abi.check_layout(h, _native, cc)
    assert _names(ms) == {"tfs_open_options.gpu_topology", "tfs_open_options.host_policy"}, _report(ms)
    assert "offsetof 64 in C, OpenOptions.host_policy.offset 72" in _report(ms)


PROTOS = [
    (
        "narrowed-int",
        ("tfs_gather(tfs_store *store, const int64_t *ids, int64_t n, void *dst, int64_t dst_bytes);",
         "tfs_gather(tfs_store *store, const int64_t *ids, int32_t n, void *dst, int64_t dst_bytes);"),
        {("function", "tfs_gather")},
        "argument 3 (n): `int32_t` in the header, c_int64 in Python",
    ),
    (
        "pointer-to-int",
        ("tfs_labels(tfs_store *store, const int64_t *ids, int64_t n, int64_t *out);",
         "tfs_labels(tfs_store *store, const int64_t *ids, int64_t n, int64_t out);"),
        {("function", "tfs_labels")},
        "argument 4 (out): `int64_t` in the header, c_void_p in Python",
    ),
    (
        "extra-param",
        ("tfs_status tfs_close(tfs_store *store);", "tfs_status tfs_close(tfs_store *store, int32_t flags);"),
        {("function", "tfs_close")},
        "2 parameters in the header",
    ),
    (
        "new-function",
        ("tfs_status tfs_io_close(tfs_io *io);", "tfs_status tfs_io_close(tfs_io *io);\ntfs_status tfs_io_cancel(tfs_io *io);"),
        {("function", "tfs_io_cancel")},
        "the library does not export it",
    ),
    (
        "status-code",
        ("TFS_EINTERNAL = 10 ", "TFS_EINTERNAL = 10,\n  TFS_EBUSY = 11 "),
        {("constant", "TFS_EBUSY")},
        "TFS_EBUSY: 11 in the header; Python defines no EBUSY",
    ),
    (
        "abi-version",
        ("#define TFS_ABI_VERSION 2", "#define TFS_ABI_VERSION 3"),
        {("constant", "TFS_ABI_VERSION")},
        "TFS_ABI_VERSION: 3 in the header, 2 in Python",
    ),
]


@pytest.mark.parametrize("name,edit,want,message", PROTOS, ids=[p[0] for p in PROTOS])
def test_changed_declaration_is_reported(tmp_path, name, edit, want, message):
    text = HEADER.read_text()
    old, new = edit
    assert text.count(old) == 1, old
    h = _mutated(tmp_path, text.replace(old, new))
    ms = abi.check_declarations(h, _native, errors)
    assert {(m.kind, m.name) for m in ms} == want, _report(ms)
    assert message in _report(ms)


def test_new_function_is_not_exported(tmp_path):
    text = HEADER.read_text().replace("tfs_status tfs_io_close(tfs_io *io);", "tfs_status tfs_io_close(tfs_io *io);\ntfs_status tfs_io_cancel(tfs_io *io);")
    ms = abi.check_exports(_mutated(tmp_path, text), _native.lib_path)
    assert {(m.kind, m.name) for m in ms} == {("library", "tfs_io_cancel")}, _report(ms)


# ---- a wrong binding is caught -----------------------------------------------------------------


def test_wrong_binding_is_reported(header):
    fields = list(_native.SamplerOptions._fields_)
    fields[1] = ("fanouts", ctypes.c_int64)  # a pointer declared as an integer
    fields[4] = ("seed", ctypes.c_int64)  # uint64_t declared signed
    bad_sampler = type("BadSamplerOptions", (ctypes.Structure,), {"_fields_": fields})
    info_fields = list(_native.StoreInfo._fields_)
    info_fields[6] = ("dtype", ctypes.c_char * 8)
    bad_info = type("BadStoreInfo", (ctypes.Structure,), {"_fields_": info_fields})
    structs = dict(_native.STRUCTS, tfs_sampler_options=bad_sampler, tfs_store_info=bad_info)
    del structs["tfs_io_request"]
    structs["tfs_bogus"] = _native.IoRequest

    funcs = {}
    for name in header.functions:
        f = getattr(_native.lib, name)
        funcs[name] = SimpleNamespace(argtypes=list(f.argtypes), restype=f.restype)
    funcs["tfs_split"].argtypes[3] = ctypes.c_int32  # cap is int64_t
    funcs["tfs_mount"].argtypes[1] = ctypes.c_void_p  # dir is a const char *
    funcs["tfs_stats_json"].argtypes[1] = ctypes.c_char_p  # buf is written by the library
    funcs["tfs_sample_sizes"].argtypes[3] = ctypes.POINTER(ctypes.c_int64)  # num_hops is int32_t *
    funcs["tfs_open"].argtypes[1] = ctypes.POINTER(_native.SamplerOptions)  # the wrong struct
    funcs["tfs_io_complete"].argtypes[1] = ctypes.c_int64  # cuda_stream is a pointer
    funcs["tfs_last_error"].restype = ctypes.c_int  # default restype: a truncated pointer
    funcs["tfs_unmount"].argtypes = None
    del funcs["tfs_close"]
    funcs["tfs_frobnicate"] = SimpleNamespace(argtypes=[], restype=ctypes.c_int)
    native = SimpleNamespace(STRUCTS=structs, lib=SimpleNamespace(**funcs), ABI_VERSION=3)

    names = dict(errors.STATUS_NAMES)
    del names[errors.EINTERNAL]
    names[11] = "TFS_EBUSY"
    errs = SimpleNamespace(**dict(vars(errors), EIO=55, STATUS_NAMES=names))

    ms = abi.check_declarations(header, native, errs)
    got = {(m.kind, m.name) for m in ms}
    want = {
        ("field", "tfs_sampler_options.fanouts"),
        ("field", "tfs_sampler_options.seed"),
        ("field", "tfs_store_info.dtype"),
        ("struct", "tfs_io_request"),
        ("struct", "tfs_bogus"),
        ("function", "tfs_split"),
        ("function", "tfs_mount"),
        ("function", "tfs_stats_json"),
        ("function", "tfs_sample_sizes"),
        ("function", "tfs_open"),
        ("function", "tfs_io_complete"),
        ("function", "tfs_last_error"),
        ("function", "tfs_unmount"),
        ("function", "tfs_close"),
        ("function", "tfs_frobnicate"),
        ("function", "tfs_store_info_get"),  # takes a tfs_store_info, declared StoreInfo
        ("function", "tfs_sampler_create"),  # takes a tfs_sampler_options, declared SamplerOptions
        ("constant", "TFS_ABI_VERSION"),
        ("constant", "TFS_EIO"),
        ("constant", "TFS_EINTERNAL"),
        ("constant", "TFS_EBUSY"),
    }
    assert got == want, _report(ms)
    text = _report(ms)
    for part in (
        "tfs_sampler_options.fanouts: `const int32_t *`",
        "a pointer in the header, an integer (c_int64) in Python",
        "argument 4 (cap): `int64_t` in the header, c_int32 in Python",
        "argument 2 (dir): `const char *` in the header, c_void_p in Python: a C string (const char *) should be c_char_p",
        "c_char_p for a char buffer the library writes",
        "argument 4 (num_hops): `int32_t *` in the header, POINTER(c_int64) in Python",
        "array length 16 in the header, 8 in Python",
        "no argtypes in the binding",
    ):
        assert part in text, part


def test_unchecked_structure_is_reported(header):
    mod = type(sys)("fake_native")
    mod.STRUCTS = dict(_native.STRUCTS)
    mod.lib = _native.lib
    mod.ABI_VERSION = _native.ABI_VERSION
    mod.Extra = type("Extra", (ctypes.Structure,), {"_fields_": [("x", ctypes.c_int)], "__module__": "fake_native"})
    ms = abi.check_declarations(header, mod, errors)
    assert {(m.kind, m.name) for m in ms} == {("struct", "Extra")}, _report(ms)


# ---- the parser refuses what it does not understand --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "typedef int64_t tfs_count;",
        "typedef struct tfs_x { int32_t a : 3; } tfs_x;",
        "typedef union tfs_u { int32_t a; int64_t b; } tfs_u;",
        "typedef struct tfs_x { struct { int a; } inner; } tfs_x;",
        "#if TFS_ABI_VERSION > 1\n#endif",
        "#define TFS_FLAG (1 << 3)",
        "tfs_status tfs_f(cudaStream_t s);",
        "tfs_status tfs_g();",
        "typedef struct tfs_x { int32_t a; } tfs_x",
        "int64_t tfs_global_counter;",
    ],
)
def test_parser_is_strict(text):
    with pytest.raises(abi.ParseError):
        abi.parse_header("t.h", "#include <stdint.h>\n" + text + "\n")


# ---- the declarations added for the IO stack work ----------------------------------------------


def test_io_stack_round_trip(tmp_path):
    """tfs_io_* with host destinations through the binding's declarations (IoOptions, IoRequest)."""
    lib = _native.lib
    data = (np.arange((1 << 20) + 123, dtype=np.int64) * 7919 % 251).astype(np.uint8)
    path = tmp_path / "io.bin"
    data.tofile(path)
    opts = _native.IoOptions(struct_size=ctypes.sizeof(_native.IoOptions), device=-1, queue_depth=8)
    io = ctypes.c_void_p()
    paths = (ctypes.c_char_p * 1)(str(path).encode())
    _native.check(lib.tfs_io_open(paths, 1, ctypes.byref(opts), ctypes.byref(io)))
    try:
        offsets = [0, 4097, len(data) - 10, 1 << 19, 5]
        lengths = [100, 9000, 10, 65536, 1]
        out = np.zeros(sum(lengths), dtype=np.uint8)
        reqs = (_native.IoRequest * len(offsets))()
        at = 0
        for i, (o, n) in enumerate(zip(offsets, lengths)):
            reqs[i] = _native.IoRequest(0, o, n, out.ctypes.data + at, 0)
            at += n
        _native.check(lib.tfs_io_submit(io, reqs, 2))
        _native.check(lib.tfs_io_submit(io, ctypes.byref(reqs, 2 * ctypes.sizeof(_native.IoRequest)), len(offsets) - 2))
        _native.check(lib.tfs_io_complete(io, None))
        assert np.array_equal(out, np.concatenate([data[o : o + n] for o, n in zip(offsets, lengths)]))
        past_end = (_native.IoRequest * 1)(_native.IoRequest(0, len(data), 1, out.ctypes.data, 0))
        assert lib.tfs_io_submit(io, past_end, 1) == errors.EINVAL
        assert "reqs[0]" in _native.last_error()
        needed = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(1 << 16)
        _native.check(lib.tfs_io_stats_json(io, buf, len(buf), ctypes.byref(needed)))
        assert needed.value == len(buf.value) + 1
        assert json.loads(buf.value)["requests"] == len(offsets)
    finally:
        assert lib.tfs_io_close(io) == 0
