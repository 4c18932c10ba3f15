"""Where the C header and library of this tierfs are, for building C/C++ programs against the
package's own copies (a wheel ships ``tierfs/include/tierfs.h`` beside ``tierfs/_lib/libtierfs.so``):

    cc first.c $(python -m tierfs --cflags --libs) -o first

``--libs`` adds ``-Wl,-rpath`` to the library's folder, so the program finds it without
LD_LIBRARY_PATH (it runs while that folder exists: rebuild after moving or upgrading the package).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from . import _native

HEADER = "tierfs.h"
_PKG = Path(__file__).resolve().parent


def get_include() -> str:
    """The folder holding ``tierfs.h``: ``tierfs/include`` of an installed package, else ``capi/``
    of the source checkout (``PYTHONPATH=python``)."""
    for d in (_PKG / "include", _PKG.parent.parent / "capi"):
        if (d / HEADER).is_file():
            return str(d)
    raise FileNotFoundError(
        f"tierfs: no {HEADER} in {_PKG / 'include'} (nor a checkout's capi/): this package was built without "
        "it; reinstall it from a wheel or a checkout of this version"
    )


def get_library() -> str:
    """The path of the libtierfs.so this process loaded (``tierfs.LIBRARY_PATH``)."""
    return str(Path(_native.lib_path).resolve())


def cflags() -> str:
    return "-I" + shlex.quote(get_include())


def libs() -> str:
    d = shlex.quote(str(Path(get_library()).parent))
    return f"-L{d} -Wl,-rpath,{d} -ltierfs"


FLAGS = {
    "--cflags": cflags,
    "--libs": libs,
    "--includedir": get_include,
    "--library": get_library,
}


def main(args: list[str]) -> int:
    """Prints the asked flags on one line, as pkg-config does."""
    out = []
    for a in args:
        if a not in FLAGS:
            raise SystemExit(f"python -m tierfs: unknown flag {a!r}; known: {', '.join(FLAGS)}")
        out.append(FLAGS[a]())
    print(" ".join(out))
    return 0
