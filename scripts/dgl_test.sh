#!/usr/bin/env bash
# DGL integration tests (python/tests_dgl) in their own virtual environment, .venv-dgl.
#
#   scripts/dgl_test.sh [pytest args...]        (make dgl-test)
#
# DGL pins an old torch, so it cannot share .venv with the rest of the Python tests. PyPI's newest
# DGL for Linux x86_64 is 2.1.0 (the 2.2.x wheels there are not built for Linux); its GraphBolt
# ships native libraries for torch 2.0.0 - 2.2.1, so torch is 2.2.1, numpy is < 2 and torchdata
# is 0.7.1 (the last release before GraphBolt's torch range moved on; installed without its
# torch pin). Every package is pinned, transitive ones included, and installed with --no-deps so
# no resolver can move them. The environment is reused while .venv-dgl/.complete holds the same
# requirement list and Python version; otherwise it is rebuilt from scratch.
#
# tierfs is used from the source tree (PYTHONPATH=python) with the library of `make lib`
# (TIERFS_LIB, default build/libtierfs.so; built here when missing).
#
# Exit status: pytest's (exit 5, no tests collected, counts as a failure). Only when the
# environment itself cannot be built (venv or pip fails) does it print SKIP and exit 0.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-dgl
MARKER=$VENV/.complete

read -r -d '' REQUIREMENTS <<'EOF'
dgl==2.1.0
torch==2.2.1
torchdata==0.7.1
numpy==1.26.4
scipy==1.13.1
networkx==3.6.1
pandas==2.2.2
python-dateutil==2.9.0.post0
six==1.17.0
pytz==2024.1
tzdata==2024.1
pydantic==2.7.4
pydantic_core==2.18.4
annotated-types==0.7.0
PyYAML==6.0.1
psutil==5.9.8
tqdm==4.66.4
requests==2.32.3
urllib3==2.2.1
idna==3.7
certifi==2024.6.2
charset-normalizer==3.3.2
filelock==3.14.0
fsspec==2024.6.0
Jinja2==3.1.4
MarkupSafe==2.1.5
sympy==1.12.1
mpmath==1.3.0
typing_extensions==4.12.2
triton==2.2.0
nvidia-cublas-cu12==12.1.3.1
nvidia-cuda-cupti-cu12==12.1.105
nvidia-cuda-nvrtc-cu12==12.1.105
nvidia-cuda-runtime-cu12==12.1.105
nvidia-cudnn-cu12==8.9.2.26
nvidia-cufft-cu12==11.0.2.54
nvidia-curand-cu12==10.3.2.106
nvidia-cusolver-cu12==11.4.5.107
nvidia-cusparse-cu12==12.1.0.106
nvidia-nccl-cu12==2.19.3
nvidia-nvjitlink-cu12==12.5.40
nvidia-nvtx-cu12==12.1.105
pytest==9.2.0
iniconfig==2.3.1
packaging==26.3
pluggy==1.7.0
Pygments==2.21.0
EOF

skip() {
  echo "SKIP: DGL tests not run: $* (the DGL environment $VENV could not be built here)"
  exit 0
}

expected() {
  printf '%s\n' "$REQUIREMENTS"
  "$PYTHON" -c 'import sys; print("python", sys.version.split()[0])'
}

if [[ -f $MARKER ]] && cmp -s "$MARKER" <(expected); then
  echo "dgl_test: reusing $VENV"
else
  echo "dgl_test: building $VENV (DGL 2.1.0, torch 2.2.1, numpy 1.26.4)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV" || skip "'$PYTHON -m venv' failed"
  reqfile=$(mktemp)
  trap 'rm -f "$reqfile"' EXIT
  printf '%s\n' "$REQUIREMENTS" >"$reqfile"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$reqfile" ||
    skip "pip install of the pinned DGL requirements failed"
  expected >"$MARKER"
fi

# The tierfs library: $TIERFS_LIB, else the checkout's build/libtierfs.so (built when missing).
if [[ -z ${TIERFS_LIB:-} ]]; then
  TIERFS_LIB=$PWD/build/libtierfs.so
  if [[ ! -f $TIERFS_LIB ]]; then
    make -s lib || { echo "dgl_test: make lib failed" >&2; exit 1; }
  fi
fi
export TIERFS_LIB
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export DGLBACKEND=pytorch

"$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests_dgl "$@"
rc=$?
if [[ $rc -eq 5 ]]; then
  echo "dgl_test: FAILED: pytest collected no tests" >&2
  exit 1
fi
exit $rc
