#!/usr/bin/env bash
# The wheel as a pip user gets it: build it (scripts/build_wheel.sh), install it into a fresh
# venv whose PATH has no Go, run the `tierfs` console script; then install it again with its
# [pyg] extra through pip's resolver, check that `import tierfs, tierfs.pyg` prints no warning, and
# run the README's quick start verbatim (the code blocks between <!-- quickstart --> markers in
# README.md, in order, in an empty directory), examples/train_pyg_graphsage.py with no arguments,
# and the README's C blocks against the wheel.
#
#   scripts/wheel_test.sh [VENV_PY]              (make wheel-test; part of make test)
#
# The fresh venv is made from VENV_PY's base interpreter (default .venv's). Its packages are the
# newest that the extras of python/pyproject.toml allow, but for torch, pinned to the version
# python/requirements-test.txt pins: `make venv` has already downloaded that one, so pip's cache
# serves it (PyPI's Linux torch is the ~5 GB CUDA build; CPU torch is not on PyPI).
#
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
# The base interpreter of VENV_PY when it exists (the Python the test environment runs).
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

# Every module of the source package is in the wheel (a subpackage pyproject.toml does not list
# would be left out: tierfs.dgl needs DGL to import, so the imports above do not reach it).
installed=$(run python -c 'import tierfs, os; print(os.path.dirname(tierfs.__file__))') || fail "no tierfs in the wheel's venv"
missing=$(cd python/tierfs && find . -name '*.py' | sort | while read -r f; do [[ -f "$installed/$f" ]] || echo "tierfs/${f#./}"; done)
[[ -z "$missing" ]] || fail "the wheel lacks $(echo $missing)"
echo "wheel_test: every module of python/tierfs is in the wheel: ok"

# The wheel with its [pyg] extra, resolved by pip as a user's `pip install "tierfs-....whl[pyg]"`
# is, with torch held at the test environment's version.
torch_pin=$(grep -E '^torch==' python/requirements-test.txt) || fail "python/requirements-test.txt pins no torch (torch==X)"
echo "$torch_pin" >"$work/constraints.txt"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check -c "$work/constraints.txt" "$wheel[pyg]" ||
  fail "pip install '$wheel[pyg]' with $torch_pin failed"
echo "wheel_test: [pyg] resolved to $(run python -m pip list --format=freeze | grep -iE '^(torch|torch.geometric|numpy)==' | tr '\n' ' ')"
warnings=$(run python -W always -c 'import tierfs, tierfs.pyg' 2>&1) || fail "import tierfs, tierfs.pyg failed:"$'\n'"$warnings"
[[ -z "$warnings" ]] || fail "import tierfs, tierfs.pyg printed (warnings shown with -W always):"$'\n'"$warnings"
echo "wheel_test: import tierfs, tierfs.pyg: no warnings"

# The README's quick start.
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

# An example as a user runs it: no arguments, from an empty directory (it writes under ./tierfs-examples/).
# A copy, so that its fallback to the checkout's python/ cannot apply: tierfs is the wheel's.
mkdir -p "$work/run/example"
cp examples/train_pyg_graphsage.py "$work/run/example/"
(cd "$work/run/example" && env -u TIERFS_LIB -u TIERFS_CLI -u TIERFS_REPO -u TIERFS_SRC -u PYTHONPATH PATH="$path" \
  python train_pyg_graphsage.py >"$work/example.log" 2>&1) ||
  { tail -30 "$work/example.log"; fail "examples/train_pyg_graphsage.py (no arguments) failed"; }
grep -q "test accuracy" "$work/example.log" || { tail -30 "$work/example.log"; fail "examples/train_pyg_graphsage.py printed no test accuracy"; }
echo "wheel_test: examples/train_pyg_graphsage.py with no arguments: $(grep 'mean test accuracy' -A1 "$work/example.log" | tail -1 | sed 's/^ *//')"

# The README's C blocks (after <!-- c-test -->) against the wheel's tierfs.h and libtierfs.so, on
# the quick start's dataset: built with `python -m tierfs --cflags --libs`, run without LD_LIBRARY_PATH.
if command -v "${CC:-cc}" >/dev/null; then
  flags=$(run python -m tierfs --cflags --libs) || fail "python -m tierfs --cflags --libs exited $?"
  inc=$(run python -c 'import tierfs; print(tierfs.get_include())')
  for h in capi/tierfs*.h; do  # tierfs.h and the header of each concern it includes
    cmp -s "$inc/${h#capi/}" "$h" || fail "the wheel has no ${h#capi/} (or another one)"
  done
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
