"""Build hook: `pip install ./python` builds the Go core as a C shared library and ships it
inside the package as tierfs/_lib/libtierfs.so, with its C headers in tierfs/include (capi/tierfs.h
and the tierfs_*.h it includes; `python -m tierfs --cflags --libs` builds C programs against them), and the
`tierfs` program (cmd/tierfs) as tierfs/bin/tierfs, which the console script runs.

- With $TIERFS_LIB set to a prebuilt libtierfs.so, that file is copied instead (machines
  without Go, e.g. the GPU machines), and the program is $TIERFS_CLI, else the tierfs beside
  that library (make lib build puts both in build/).
- Otherwise `go build -buildmode=c-shared ./capi` and `go build ./cmd/tierfs` run in the Go
  module root, which is this folder's parent (override with $TIERFS_SRC); $GO names the go
  binary (default: go on PATH).
- The CUDA shim ($TIERFS_CUDA_LIB, else build/libtierfs_cuda.so of the module root when `make
  cuda` made it) goes beside the library when it exists; without it the package serves from the
  host, as everywhere.
- The version is the CLI's (cli/version.go), written once; the build copies it into
  tierfs/_version.py.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
LIB = "libtierfs.so"
CLI = "tierfs"
CUDA_LIB = "libtierfs_cuda.so"


def _version() -> str:
    go = Path(os.environ.get("TIERFS_SRC") or HERE.parent) / "cli" / "version.go"
    m = re.search(r'^const Version = "([^"]+)"', go.read_text(), re.M) if go.is_file() else None
    if not m:
        raise SystemExit(f"tierfs build: no `const Version = \"...\"` in {go}")
    return m.group(1)


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
        (dest_dir.parent / "_version.py").write_text(f'__version__ = "{_version()}"\n')
        self._copy_cuda_shim(dest_dir)
        self._copy_header(dest_dir.parent / "include")
        cli_dest = dest_dir.parent / "bin" / CLI
        cli_dest.parent.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("TIERFS_LIB")
        if prebuilt:
            src = Path(prebuilt).expanduser()
            if not src.is_file():
                raise SystemExit(f"tierfs build: TIERFS_LIB={prebuilt} is not a file")
            cli = Path(os.environ.get("TIERFS_CLI") or src.parent / CLI).expanduser()
            if not cli.is_file():
                raise SystemExit(
                    f"tierfs build: no tierfs program at {cli}: set TIERFS_CLI to a prebuilt tierfs (make build "
                    "builds build/tierfs)"
                )
            self.announce(f"tierfs: using prebuilt {src} and {cli}", level=2)
            shutil.copy2(src, dest)
            shutil.copy2(cli, cli_dest)
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
        cmd = [go, "build", "-trimpath", "-ldflags=-s -w", "-o", str(cli_dest), "./cmd/tierfs"]
        self.announce(f"tierfs: {' '.join(cmd)} (in {root})", level=2)
        subprocess.run(cmd, cwd=root, check=True)
        header = dest_dir / "libtierfs.h"  # go writes the cgo header beside the library
        if header.exists():
            header.unlink()

    def _copy_header(self, include_dir: Path) -> None:
        """tierfs.h and the tierfs_*.h it includes beside the library (tierfs/include), for C
        programs built against the wheel (python -m tierfs --cflags --libs): capi/ of $TIERFS_SRC
        or the checkout."""
        capi = Path(os.environ.get("TIERFS_SRC") or HERE.parent) / "capi"
        if not (capi / "tierfs.h").is_file():
            raise SystemExit(f"tierfs build: no C header {capi / 'tierfs.h'} (set TIERFS_SRC to the tierfs checkout)")
        include_dir.mkdir(parents=True, exist_ok=True)
        for old in include_dir.glob("tierfs*.h"):
            old.unlink()
        for src in sorted(capi.glob("tierfs*.h")):
            shutil.copy2(src, include_dir / src.name)

    def _copy_cuda_shim(self, dest_dir: Path) -> None:
        env = os.environ.get("TIERFS_CUDA_LIB")
        src = Path(env).expanduser() if env else Path(os.environ.get("TIERFS_SRC") or HERE.parent) / "build" / CUDA_LIB
        if env and not src.is_file():
            raise SystemExit(f"tierfs build: TIERFS_CUDA_LIB={env} is not a file")
        if src.is_file():
            self.announce(f"tierfs: with the CUDA shim {src}", level=2)
            shutil.copy2(src, dest_dir / CUDA_LIB)


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    """The package holds a native library: install it into platlib (auditwheel repairs only
    platlib wheels), although it has no CPython extension module."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    """The wheel holds a native library (platform-specific) but no CPython extension, so it
    fits every Python 3: tag py3-none-<platform>."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(version=_version(), distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithGo, "bdist_wheel": BdistWheel})
