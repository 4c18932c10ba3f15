#!/usr/bin/env bash
# c_test.sh BUILD_DIR — tests the C ABI: builds the C and C++ examples and the checking programs of
# examples/c against BUILD_DIR/libtierfs.so and BUILD_DIR/tierfs.h (`make lib`), makes datasets,
# runs everything, and compares gathers byte for byte across independent paths (C, C++, host tier
# on/off, pread with unverified reads, the tierfs CLI when BUILD_DIR/tierfs exists, and .npy inputs of
# known contents). Prints each check and ends with "N passed, M failed"; exits nonzero on failure.
set -u -o pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
BUILD=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$ROOT/examples/c
CC=${CC:-gcc}
CXX=${CXX:-g++}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-c-test.XXXXXX")
cleanup() {
  # A failed run may leave the FUSE mount of the error checks behind.
  if mountpoint -q "$WORK/err/scratch/mnt" 2>/dev/null; then
    umount -l "$WORK/err/scratch/mnt" 2>/dev/null || fusermount3 -uz "$WORK/err/scratch/mnt" 2>/dev/null ||
      fusermount -uz "$WORK/err/scratch/mnt" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0

ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }

# check DESC CMD...: runs CMD, quiet on success, shows its output on failure.
check() {
  local desc=$1 out
  shift
  if out=$("$@" 2>&1); then
    ok "$desc"
  else
    not_ok "$desc"
    echo "$out" | tail -n 20 | sed 's/^/    /'
  fi
}

# tap NAME CMD...: runs a program that prints "ok - ..." / "not ok - ..." lines and counts them;
# a nonzero exit without a "not ok" line counts as one failure.
tap() {
  local name=$1 out rc n_ok n_bad
  shift
  out=$("$@" 2>&1)
  rc=$?
  echo "$out" | grep -E '^(ok|not ok) - ' | sed "s/^\(ok\|not ok\) - /\1 - $name: /"
  n_ok=$(echo "$out" | grep -c '^ok - ')
  n_bad=$(echo "$out" | grep -c '^not ok - ')
  passed=$((passed + n_ok))
  failed=$((failed + n_bad))
  if [[ $rc -ne 0 && $n_bad -eq 0 ]]; then
    not_ok "$name exited with status $rc"
    echo "$out" | tail -n 20 | sed 's/^/    /'
  fi
}

# same_bytes DESC A B: A and B are identical files.
same_bytes() {
  check "$1" cmp "$2" "$3"
}

echo "# tierfs C ABI tests: library $BUILD/libtierfs.so, work dir $WORK"

# ---- the library and its header ----
check "libtierfs.so and tierfs.h are in $BUILD" test -f "$BUILD/libtierfs.so" -a -f "$BUILD/tierfs.h"
if [[ ! -f $BUILD/libtierfs.so || ! -f $BUILD/tierfs.h ]]; then
  echo "$passed passed, $((failed)) failed"
  exit 1
fi
check "tierfs.h compiles alone as C99 (-Wall -Wextra -pedantic -Werror)" \
  bash -c "echo '#include \"tierfs.h\"' | $CC -std=c99 -Wall -Wextra -pedantic -Werror -I '$BUILD' -x c -fsyntax-only -"
check "tierfs.h compiles alone as C++17 (-Wall -Wextra -pedantic -Werror)" \
  bash -c "echo '#include \"tierfs.h\"' | $CXX -std=c++17 -Wall -Wextra -pedantic -Werror -I '$BUILD' -x c++ -fsyntax-only -"
# tierfs.h includes one header per concern (tierfs_store.h, ...); each also compiles when included first.
HEADERS=$(cd "$ROOT/capi" && ls tierfs*.h)
for h in $HEADERS; do
  [[ $h == tierfs.h ]] && continue
  check "$h is in $BUILD and compiles included alone, as C99 and C++17" \
    bash -c "cmp -s '$BUILD/$h' '$ROOT/capi/$h' &&
      echo '#include \"$h\"' | $CC -std=c99 -Wall -Wextra -pedantic -Werror -I '$BUILD' -x c -fsyntax-only - &&
      echo '#include \"$h\"' | $CXX -std=c++17 -Wall -Wextra -pedantic -Werror -I '$BUILD' -x c++ -fsyntax-only -"
done
declared=$(cat $(printf "$BUILD/%s " $HEADERS) | grep -oE '\btfs_[a-z_]+\(' | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$BUILD/libtierfs.so" | awk '$2 == "T" {print $3}' | grep '^tfs_' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
if [[ -z $missing && -z $extra ]]; then
  ok "the library exports exactly the $(echo "$declared" | wc -l) tfs_ functions tierfs.h and its headers declare"
else
  not_ok "exports differ from the header: missing [${missing//$'\n'/ }], extra [${extra//$'\n'/ }]"
fi

# ---- build the programs ----
CFLAGS=(-std=c11 -Wall -Wextra -Werror -O2 -pthread -I "$BUILD")
LDFLAGS=(-L "$BUILD" -ltierfs "-Wl,-rpath,$BUILD")
check "gcc -Wall -Werror examples/c/example.c" "$CC" "${CFLAGS[@]}" "$SRC/example.c" "${LDFLAGS[@]}" -o "$WORK/example"
check "g++ -std=c++17 -Wall -Werror examples/c/example.cpp" \
  "$CXX" -std=c++17 -Wall -Wextra -Werror -O2 -I "$BUILD" "$SRC/example.cpp" "${LDFLAGS[@]}" -o "$WORK/example_cpp"
check "gcc -Wall -Werror examples/c/roundtrip.c" "$CC" "${CFLAGS[@]}" "$SRC/roundtrip.c" "${LDFLAGS[@]}" -o "$WORK/roundtrip"
check "gcc -Wall -Werror examples/c/errors.c" "$CC" "${CFLAGS[@]}" "$SRC/errors.c" "${LDFLAGS[@]}" -o "$WORK/errors"
check "gcc -Wall -Werror examples/c/iostack.c" "$CC" "${CFLAGS[@]}" "$SRC/iostack.c" "${LDFLAGS[@]}" -o "$WORK/iostack"
check "gcc -Wall -Werror examples/c/embedding.c" "$CC" "${CFLAGS[@]}" "$SRC/embedding.c" "${LDFLAGS[@]}" -lm -o "$WORK/embedding"
for p in example example_cpp roundtrip errors iostack embedding; do
  if [[ ! -x $WORK/$p ]]; then
    echo "# $p did not build; stopping"
    echo "$passed passed, $failed failed"
    exit 1
  fi
done

# ---- the examples as a new user first runs them: no arguments, from an empty folder; each makes
# (or reuses) ./tierfs-examples/c-synth there ----
mkdir -p "$WORK/noargs"
check "example (C) runs with no arguments, writing ./tierfs-examples/c-synth" \
  bash -c "cd '$WORK/noargs' && '$WORK/example' && test -f tierfs-examples/c-synth/manifest.json"
hc=$(cd "$WORK/noargs" && "$WORK/example" 2>&1 | grep 'byte hash')
rm -rf "$WORK/noargs/tierfs-examples"
hcpp=$(cd "$WORK/noargs" && "$WORK/example_cpp" 2>&1 | grep 'byte hash')
if [[ -n $hc && $hc == "$hcpp" && -f $WORK/noargs/tierfs-examples/c-synth/manifest.json ]]; then
  ok "example (C++) with no arguments writes the same dataset and gathers the same bytes ($hc)"
else
  not_ok "examples with no arguments: C [$hc], C++ [$hcpp]"
fi

# ---- datasets: A (float16 rows of 200 bytes, many per block), B (float32 rows of 4400 bytes,
# straddling blocks) ----
CLI=$BUILD/tierfs
[[ -x $CLI ]] || CLI=""
DATASETS=("A 20000 100 float16" "B 3000 1100 float32")
for spec in "${DATASETS[@]}"; do
  read -r name nodes dim dtype <<<"$spec"
  check "tfs_synth dataset $name ($nodes nodes, dim $dim, $dtype)" "$WORK/example" --synth "$WORK/ds$name" "$nodes" "$dim" "$dtype"
  if [[ -n $CLI ]]; then
    check "tierfs synth dataset $name with the same options" "$CLI" synth --nodes "$nodes" --avg-degree 8 --dim "$dim" \
      --dtype "$dtype" --classes 10 --seed 7 --out "$WORK/cli$name"
    same=1
    for f in "$WORK/ds$name"/*.bin "$WORK/ds$name"/*.ids; do
      cmp -s "$f" "$WORK/cli$name/$(basename "$f")" || same=0
    done
    if [[ $same -eq 1 ]]; then
      ok "dataset $name: tfs_synth (JSON options) and tierfs synth (flags) wrote identical data files"
    else
      not_ok "dataset $name: tfs_synth and tierfs synth data files differ"
    fi
  fi
done

# ---- the examples, then gathers of the same ids through independent paths ----
for spec in "${DATASETS[@]}"; do
  read -r name nodes dim dtype <<<"$spec"
  ds=$WORK/ds$name
  check "example (C) runs on dataset $name" "$WORK/example" "$ds"
  check "example (C++) runs on dataset $name" "$WORK/example_cpp" "$ds"
  hc=$("$WORK/example" "$ds" 2>&1 | grep 'byte hash')
  hcpp=$("$WORK/example_cpp" "$ds" 2>&1 | grep 'byte hash')
  if [[ -n $hc && $hc == "$hcpp" ]]; then
    ok "dataset $name: C and C++ examples sample and gather the same bytes ($hc)"
  else
    not_ok "dataset $name: C and C++ examples differ: [$hc] vs [$hcpp]"
  fi

  ids=$WORK/ids$name
  check "write 5000 random ids for dataset $name" "$WORK/roundtrip" --ids 5000 "$nodes" 3 "$ids.bin" "$ids.npy"
  check "dataset $name: C gather, no host tier, default IO" "$WORK/example" "$ds" "$ids.bin" "$WORK/g$name.c"
  check "dataset $name: C gather, host tier holding every row" "$WORK/example" --host-cache 1073741824 "$ds" "$ids.bin" "$WORK/g$name.cache"
  check "dataset $name: C gather, pread with unverified reads" "$WORK/example" --pread --unverified "$ds" "$ids.bin" "$WORK/g$name.verify"
  check "dataset $name: C++ gather, partial host tier" "$WORK/example_cpp" --host-cache 300000 "$ds" "$ids.bin" "$WORK/g$name.cpp"
  rows=$(($(stat -c %s "$WORK/g$name.c" 2>/dev/null || echo 0)))
  if [[ $rows -gt 0 ]]; then ok "dataset $name: the gather wrote $rows bytes"; else not_ok "dataset $name: the gather wrote nothing"; fi
  same_bytes "dataset $name: full host tier == no host tier, byte for byte" "$WORK/g$name.c" "$WORK/g$name.cache"
  same_bytes "dataset $name: pread + unverified reads == default IO, byte for byte" "$WORK/g$name.c" "$WORK/g$name.verify"
  same_bytes "dataset $name: C++ partial host tier == C, byte for byte" "$WORK/g$name.c" "$WORK/g$name.cpp"
  if [[ -n $CLI ]]; then
    check "dataset $name: tierfs gather of the same ids" "$CLI" gather "$ds" --ids "$ids.npy" --out "$WORK/ref$name.npy"
    if tail -c "$rows" "$WORK/ref$name.npy" 2>/dev/null | cmp -s - "$WORK/g$name.c"; then
      ok "dataset $name: the C API's rows == tierfs gather's rows (the .npy's data), byte for byte"
    else
      not_ok "dataset $name: the C API's rows differ from tierfs gather's"
    fi
  fi
done
[[ -n $CLI ]] || echo "# $BUILD/tierfs not built: skipped the CLI comparisons (make build)"

# ---- ground truth: .npy inputs of known contents through tfs_ingest ----
tap roundtrip "$WORK/roundtrip" "$WORK/rt"

# ---- the IO stack on its own (tfs_io_*): random unaligned reads checked against pread; the seed
# is printed (set TIERFS_IO_SEED to repeat a run) ----
io_seed=${TIERFS_IO_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "# iostack seed $io_seed"
tap iostack "$WORK/iostack" "$WORK/io" "$io_seed"
mkdir -p "$WORK/emb"
tap embedding "$WORK/embedding" "$WORK/emb" "$io_seed"

# ---- error paths: on copies of dataset A with a newer manifest version, a flipped byte in the
# first feature block, and a manifest that is not JSON ----
E=$WORK/err
if [[ -f $WORK/dsA/manifest.json ]]; then
  mkdir -p "$E/scratch" "$E/badman"
  cp -r "$WORK/dsA" "$E/v99" && sed -i 's/"version": [0-9]*,/"version": 99,/' "$E/v99/manifest.json"
  check "the version-99 copy's manifest says version 99" grep -q '"version": 99,' "$E/v99/manifest.json"
  cp -r "$WORK/dsA" "$E/corrupt"
  feat=$(ls "$E/corrupt"/features.*.0.bin | head -n 1)
  printf '\xff' | dd of="$feat" bs=1 seek=3 conv=notrunc status=none
  cmp -s "$feat" "$WORK/dsA/$(basename "$feat")" && printf '\x00' | dd of="$feat" bs=1 seek=3 conv=notrunc status=none
  check "the corrupt copy differs from dataset A in its first feature file" \
    bash -c "! cmp -s '$feat' '$WORK/dsA/$(basename "$feat")'"
  echo '{ not json' >"$E/badman/manifest.json"
  tap errors "$WORK/errors" "$WORK/dsA" "$E/v99" "$E/corrupt" "$E/badman" "$E/scratch"
else
  not_ok "error paths: dataset A is missing, so they did not run"
fi

# ---- as a C user gets it: `make install` into a temporary prefix, pkg-config, and the README's C
# blocks (each ```c block after a <!-- c-test --> marker) compiled verbatim and run on the quick
# start's dataset (its sh block, run with the tierfs binary of BUILD_DIR) ----
P=$WORK/prefix
# GO=true: install the library under test as it is in BUILD_DIR (no rebuild, no Go needed).
if out=$(make -s -C "$ROOT" install GO=true BUILD="$BUILD" PREFIX="$P" 2>&1); then
  ok "make install PREFIX=$P"
else
  not_ok "make install PREFIX=$P"
  echo "$out" | tail -n 20 | sed 's/^/    /'
fi
check "make install DESTDIR=... PREFIX=/opt/tierfs stages under DESTDIR; tierfs.pc names /opt/tierfs" \
  bash -c "make -s -C '$ROOT' install GO=true BUILD='$BUILD' PREFIX=/opt/tierfs DESTDIR='$WORK/dest' >/dev/null &&
    test -f '$WORK/dest/opt/tierfs/include/tierfs.h' && grep -qx 'libdir=/opt/tierfs/lib' '$WORK/dest/opt/tierfs/lib/pkgconfig/tierfs.pc'"
N=$(sed -n 's/^#define TFS_ABI_VERSION \([0-9][0-9]*\).*/\1/p' "$ROOT/capi/tierfs.h")
check "installed lib/libtierfs.so.$N, lib/libtierfs.so -> it, include/tierfs.h, lib/pkgconfig/tierfs.pc" \
  bash -c "test -f '$P/lib/libtierfs.so.$N' -a ! -L '$P/lib/libtierfs.so.$N' -a \"\$(readlink '$P/lib/libtierfs.so')\" = libtierfs.so.$N \
    -a -f '$P/include/tierfs.h' -a -f '$P/lib/pkgconfig/tierfs.pc' && cmp -s '$P/include/tierfs.h' '$ROOT/capi/tierfs.h'"
check "installed every header: $(echo $HEADERS)" \
  bash -c "for h in $(echo $HEADERS); do cmp -s '$P/include/'\$h '$ROOT/capi/'\$h || { echo \$h; exit 1; }; done"
check "libtierfs.so.$N has SONAME libtierfs.so.$N (TFS_ABI_VERSION)" \
  bash -c "readelf -d '$P/lib/libtierfs.so.$N' | grep -q 'SONAME.*\[libtierfs.so.$N\]'"
check "make install leaves no cgo header (libtierfs.h) in $BUILD or $P" \
  bash -c "! ls '$BUILD/libtierfs.h' '$P/include/libtierfs.h' 2>/dev/null | grep -q ."
if command -v pkg-config >/dev/null; then
  pc() { PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config "$@" tierfs; }
  if flags=$(pc --cflags --libs 2>&1); then ok "pkg-config --cflags --libs tierfs: $flags"; else not_ok "pkg-config tierfs: $flags"; fi
  R=$WORK/readme-c
  mkdir -p "$R/bin"
  check "the tierfs binary $BUILD/tierfs (make build) is there for the quick start" cp "$BUILD/tierfs" "$R/bin/tierfs"
  qs=$(awk '/<!-- quickstart/{on=1; next} /<!-- \/quickstart -->/{on=0} on' "$ROOT/README.md" |
    awk '/^```sh/{inb=1; next} /^```/{if (inb) exit} inb')
  if [[ -n $qs ]]; then
    check "the README quick start's sh block (dataset) with the tierfs binary" \
      bash -c "cd '$R' && PATH='$R/bin':\$PATH && $qs"
  else
    not_ok "README.md has no sh block in its <!-- quickstart --> section"
  fi
  nblocks=0
  while IFS= read -r -d '' code; do
    nblocks=$((nblocks + 1))
    printf '%s' "$code" >"$R/readme$nblocks.c"
    # shellcheck disable=SC2046
    check "README C block $nblocks builds with \$(pkg-config --cflags --libs tierfs) (-Wall -Wextra -Werror)" \
      "$CC" -std=c11 -Wall -Wextra -Werror "$R/readme$nblocks.c" $(pc --cflags --libs) -o "$R/readme$nblocks"
    if [[ -x $R/readme$nblocks ]]; then
      # No LD_LIBRARY_PATH: the rpath of tierfs.pc finds the library.
      if out=$(cd "$R" && env -u LD_LIBRARY_PATH "./readme$nblocks" 2>&1); then
        ok "README C block $nblocks runs on the quick start's dataset: ${out//$'\n'/ | }"
      else
        not_ok "README C block $nblocks exited non-zero"
        echo "$out" | tail -n 20 | sed 's/^/    /'
      fi
    fi
  done < <(awk '/<!-- c-test/{want=1; next} want && /^```c/{inb=1; want=0; next} inb && /^```/{inb=0; printf "%c", 0; next} inb' "$ROOT/README.md")
  if [[ $nblocks -ge 1 ]]; then ok "README.md: $nblocks C block(s) marked <!-- c-test -->"; else not_ok "README.md has no C block after a <!-- c-test --> marker"; fi
else
  echo "# no pkg-config on PATH: skipped the README's C blocks against make install"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
