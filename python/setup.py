"""Build hook: `pip install ./python` builds the Go core as a C shared library and ships it
inside the package as tierfs/_lib/libtierfs.so.

- With $TIERFS_LIB set to a prebuilt libtierfs.so, that file is copied instead (machines
  without Go, e.g. the GPU machines).
- Otherwise `go build -buildmode=c-shared ./capi` runs in the Go module root, which is this
  folder's parent (override with $TIERFS_SRC); $GO names the go binary (default: go on PATH).
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
LIB = "libtierfs.so"


def _go_root() -> Path:
    root = Path(os.environ.get("TIERFS_SRC") or HERE.parent).resolve()
    if not (root / "go.mod").is_file() or not (root / "capi").is_dir():
        raise SystemExit(
            f"tierfs build: {root} is not the tierfs Go module (no go.mod and capi/). Install from "
            "a checkout (pip install ./python in the repository root), set TIERFS_SRC to the "
            "checkout, or set TIERFS_LIB to a prebuilt libtierfs.so."
        )
    return root


class BuildPyWithGo(build_py):
    def run(self):
        super().run()
        dest_dir = Path(self.build_lib).resolve() / "tierfs" / "_lib"
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / LIB
        prebuilt = os.environ.get("TIERFS_LIB")
        if prebuilt:
            src = Path(prebuilt).expanduser()
            if not src.is_file():
                raise SystemExit(f"tierfs build: TIERFS_LIB={prebuilt} is not a file")
            self.announce(f"tierfs: using prebuilt {src}", level=2)
            shutil.copy2(src, dest)
            return
        go = os.environ.get("GO") or shutil.which("go")
        if not go:
            raise SystemExit(
                "tierfs build: the Go toolchain (go) is not on PATH; install Go, or set TIERFS_LIB "
                "to a prebuilt libtierfs.so (make lib builds build/libtierfs.so)"
            )
        root = _go_root()
        # -s -w: no symbol table / DWARF (panics still name functions); a smaller wheel.
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", str(dest), "./capi"]
        self.announce(f"tierfs: {' '.join(cmd)} (in {root})", level=2)
        subprocess.run(cmd, cwd=root, check=True)
        header = dest_dir / "libtierfs.h"  # go writes the cgo header beside the library
        if header.exists():
            header.unlink()


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel


class BdistWheel(bdist_wheel):
    """The wheel holds a native library (platform-specific) but no CPython extension, so it
    fits every Python 3: tag py3-none-<platform>."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(cmdclass={"build_py": BuildPyWithGo, "bdist_wheel": BdistWheel})
