#!/usr/bin/env bash
# ab_homogeneous.sh OLD_TARBALL OUT: the homogeneous end-to-end rows (GraphSAGE [25,10], batch
# 1,024, 10M nodes × 128 float32) with an older build and this one, interleaved in one run on a
# GPU machine, so a change of the core's structure is checked against the figures it must keep.
# OLD_TARBALL holds an older python/tierfs package and its libtierfs.so at its top level (see
# BENCHMARKS.md, "The graph session keeps the homogeneous figures"); this tree's library is
# $TIERFS_LIB (default build/libtierfs.so) and its package python/. Both builds run this tree's
# benchmark (python/bench/benchtrain.py), so only the store differs.
set -euo pipefail
old_tar=${1:?usage: ab_homogeneous.sh OLD_TARBALL OUT}
out=${2:?usage: ab_homogeneous.sh OLD_TARBALL OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
new_lib=${TIERFS_LIB:-$root/build/libtierfs.so}
old=$(mktemp -d)
tar -C "$old" -xJf "$old_tar"
mkdir -p "$out"
nodes=${NODES:-10000000}
ds=${BENCH_DIR:-/var/tmp/tierfs-ab}/ds$nodes
if [ ! -f "$ds/manifest.json" ]; then
  PYTHONPATH=$root/python TIERFS_LIB=$new_lib python3 -m tierfs synth --out "$ds" --nodes "$nodes" --dim 128 --avg-degree 15 --seed 1 | tail -1
fi
for round in ${ROUNDS:-1 2}; do
  for build in old new; do
    if [ $build = old ]; then pp=$old lib=$old/libtierfs.so; else pp=$root/python lib=$new_lib; fi
    PYTHONPATH=$pp:$root/python/bench TIERFS_LIB=$lib python3 -m benchtrain "$ds" \
      --configs memory-gpu,tierfs-cached,tierfs-serial --models sage --fanouts 25,10 --batch-sizes 1024 \
      --batches "${BATCHES:-40}" --warmup 5 --place-epochs 1 --disk-iops 80000 --json "$out/$build-$round.json" ${EXTRA:-} \
      > "$out/$build-$round.txt" 2>&1 || { echo "$build round $round failed"; tail -20 "$out/$build-$round.txt"; }
    echo "== $build, round $round"; grep -E "memory-gpu|tierfs-cached|tierfs-serial" "$out/$build-$round.txt" | tail -6
  done
done
