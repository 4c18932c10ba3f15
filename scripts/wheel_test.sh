#!/usr/bin/env bash
# The wheel as a pip user gets it: build it (scripts/build_wheel.sh), install it into a fresh
# venv whose PATH has no Go, run the `tierfs` console script, then the README's quick start
# verbatim (the code blocks between <!-- quickstart --> markers in README.md, in order, in an
# empty directory).
#
#   scripts/wheel_test.sh [VENV_PY]              (make wheel-test; part of make test)
#
# The fresh venv gets the wheel and its one dependency, numpy, from pip (pip's cache after the
# first run). torch and torch_geometric are too big to install each run: the quick start borrows
# them from VENV_PY's environment (default .venv, the test venv) through a .pth file, which puts
# that site-packages after the fresh venv's own, so `import tierfs` is the wheel's, never the
# tierfs installed there. Without torch_geometric in VENV_PY the quick start is skipped, saying so.
#
# Prints SKIP and exits 0 when the build tools are missing (no Go, no venv, no PyPI for the
# pinned wheel tools or numpy); any other failure exits non-zero.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV_PY="${1:-$ROOT/.venv/bin/python}"
start=$SECONDS
skip() { echo "wheel_test: SKIP: $*"; exit 0; }
fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }

out=$(scripts/build_wheel.sh 2>&1)
rc=$?
[[ $rc -eq 3 ]] && skip "$(tail -1 <<<"$out")"
[[ $rc -ne 0 ]] && { echo "$out"; fail "scripts/build_wheel.sh exited $rc"; }
grep '^build_wheel: .*\.whl$' <<<"$out" | tail -1
wheel=$(tail -1 <<<"$out")

work=$(mktemp -d /tmp/tierfs-wheel-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The base interpreter of VENV_PY when it exists (the borrowed packages are built for it).
base=python3
[[ -x "$VENV_PY" ]] && base=$("$VENV_PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
"$base" -m venv "$work/venv" || skip "$base cannot make a venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" ||
  skip "cannot install $wheel and numpy into a fresh venv (no PyPI?)"

# PATH without any directory holding go; no TIERFS_* variable points back at the checkout.
path="$work/venv/bin"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do [[ -n "$d" && ! -x "$d/go" ]] && path="$path:$d"; done
run() { (cd "$work/run" && env -u TIERFS_LIB -u TIERFS_CLI -u TIERFS_REPO -u TIERFS_SRC -u PYTHONPATH PATH="$path" "$@"); }
mkdir -p "$work/run"
run bash -c '! command -v go >/dev/null' || fail "go is still on PATH"

want="tierfs $(sed -n 's/^const Version = "\(.*\)"$/\1/p' cli/version.go)"
got=$(run tierfs --version) || fail "tierfs --version exited $?"
[[ "$got" == "$want" ]] || fail "tierfs --version printed '$got', want '$want'"
run tierfs synth --nodes 2000 --avg-degree 5 --dim 16 --seed 1 --out g >/dev/null || fail "tierfs synth failed"
run tierfs verify g >/dev/null || fail "tierfs verify failed"
run python -c 'import tierfs, sys; s = tierfs.open("g"); assert s.gather([0, 1999]).shape == (2, 16); assert "/venv/" in tierfs.LIBRARY_PATH, tierfs.LIBRARY_PATH' ||
  fail "import tierfs from the wheel failed"
echo "wheel_test: tierfs --version, synth, verify and import from the wheel, without Go: ok"

# The README's quick start.
"$VENV_PY" -c 'import torch_geometric' 2>/dev/null ||
  { echo "wheel_test: SKIP the README quick start: no torch_geometric in $VENV_PY to borrow"; echo "wheel_test: ok ($((SECONDS - start)) s)"; exit 0; }
borrowed=$("$VENV_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$borrowed" >"$site/zz-borrowed-torch.pth"
awk '/<!-- quickstart/{on=1; next} /<!-- \/quickstart -->/{on=0} on' README.md >"$work/quickstart.md"
[[ -s "$work/quickstart.md" ]] || fail "README.md has no <!-- quickstart --> ... <!-- /quickstart --> section"
n=0
while IFS= read -r -d '' block; do
  lang=${block%%$'\n'*}
  code=${block#*$'\n'}
  n=$((n + 1))
  case "$lang" in
    sh) run bash -euo pipefail -c "$code" || fail "README quick start block $n (sh) failed:"$'\n'"$code" ;;
    python) run python -c "$code" || fail "README quick start block $n (python) failed:"$'\n'"$code" ;;
    *) fail "README quick start block $n has language '$lang' (want sh or python)" ;;
  esac
done < <(awk '/^```/{ if (!inb) { inb=1; sub(/^```/, ""); printf "%s\n", $0; next } else { inb=0; printf "%c", 0; next } } inb' "$work/quickstart.md")
[[ $n -ge 2 ]] || fail "README quick start: found $n code blocks"
echo "wheel_test: README quick start ($n blocks) from the wheel: ok"

# The README's C blocks (after <!-- c-test -->) against the wheel's tierfs.h and libtierfs.so, on
# the quick start's dataset: built with `python -m tierfs --cflags --libs`, run without LD_LIBRARY_PATH.
if command -v "${CC:-cc}" >/dev/null; then
  flags=$(run python -m tierfs --cflags --libs) || fail "python -m tierfs --cflags --libs exited $?"
  [[ -f "$(run python -c 'import tierfs; print(tierfs.get_include())')/tierfs.h" ]] || fail "the wheel has no tierfs.h"
  c=0
  while IFS= read -r -d '' code; do
    c=$((c + 1))
    printf '%s' "$code" >"$work/run/readme$c.c"
    # shellcheck disable=SC2086
    run "${CC:-cc}" -std=c11 -Wall -Wextra -Werror "readme$c.c" $flags -o "readme$c" || fail "README C block $c did not build with $flags"
    run env -u LD_LIBRARY_PATH "./readme$c" || fail "README C block $c (built against the wheel) failed"
  done < <(awk '/<!-- c-test/{want=1; next} want && /^```c/{inb=1; want=0; next} inb && /^```/{inb=0; printf "%c", 0; next} inb' README.md)
  [[ $c -ge 1 ]] || fail "README.md has no C block after a <!-- c-test --> marker"
  echo "wheel_test: README C blocks ($c) built with python -m tierfs --cflags --libs: ok"
else
  echo "wheel_test: SKIP the README C blocks: no C compiler (${CC:-cc})"
fi
echo "wheel_test: ok ($((SECONDS - start)) s)"
