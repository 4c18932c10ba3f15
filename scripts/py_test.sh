#!/usr/bin/env bash
# Python, PyG and FUSE-from-Python tests of the tierfs package.
#
#   scripts/py_test.sh [VENV_PY] [pytest args...]
#
# Installs ./python into the virtual environment of VENV_PY the documented way (pip builds the
# Go library into the package), builds the CLI if it is missing, and runs python/tests with
# pytest. Exits 0 only when tests ran and all passed (pytest's exit 5, "no tests ran", fails).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
shift || true
# An absolute path: the tests run from python/tests.
if [[ "$PY" != /* ]]; then
  case "$PY" in */*) PY="$PWD/$PY" ;; *) PY="$(command -v "$PY" || echo "$PY")" ;; esac
fi
cd "$ROOT"

if [[ ! -x "$PY" ]]; then
  echo "py_test: $PY is not an executable Python (make venv creates .venv)" >&2
  exit 2
fi

GO="${GO:-go}"
if [[ ! -x build/tierfs ]] || [[ -n "$(find cmd cli cuda internal capi advise featurestore planned topology dataset ingest gpuio tiers fusefs -name '*.go' -newer build/tierfs 2>/dev/null | head -1)" ]]; then
  echo "py_test: building the CLI (build/tierfs)"
  "$GO" build -o build/tierfs ./cmd/tierfs
fi

echo "py_test: pip install ./python (builds libtierfs.so with $("$GO" version | cut -d' ' -f3))"
# The test environment's pinned setuptools builds it: no build isolation, no downloads.
unset TIERFS_LIB
"$PY" -m pip install -q --no-build-isolation --no-deps --force-reinstall ./python
rm -rf python/build python/tierfs.egg-info

# Run from outside python/ so `import tierfs` is the installed package, not the source tree.
export TIERFS_CLI="$ROOT/build/tierfs"
export TIERFS_REPO="$ROOT"
set +e
(cd "$ROOT/python/tests" && "$PY" -m pytest -p no:cacheprovider -ra -q "$@" .)
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
  echo "py_test: pytest collected no tests" >&2
  exit 1
fi
exit $rc
