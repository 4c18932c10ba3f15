#!/usr/bin/env bash
# Gather benchmarks for BENCHMARKS.md: tierfs's own table (ssd tier, mixed, host tier, in-memory
# reference, raw io_uring through gpuio) plus the roofline probe iobench.c (liburing) at the same
# block size and queue depth, and np.memmap fancy indexing with a cold page cache, in one run.
# Usage: scripts/bench.sh TIERFS_BINARY   (NODES, DIM, DIST, BATCHES override)
set -euo pipefail
tierfs=${1:?tierfs binary}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-$here/build/bench-data}
nodes=${NODES:-1000000}
dim=${DIM:-128}
out=$here/build/bench-out
mkdir -p "$out"

if [ ! -f "$dir/manifest.json" ] || ! "$tierfs" info "$dir" | grep -q "^nodes *$nodes\$"; then
  "$tierfs" synth --nodes "$nodes" --avg-degree 10 --dim "$dim" --seed 1 --out "$dir" --force
fi
"$tierfs" info "$dir"
echo
for dist in ${DIST:-sample uniform}; do
  "$tierfs" bench gather "$dir" --dist "$dist" --batches "${BATCHES:-100}" --json "$out/gather-$dist.json"
  echo
done

# Roofline: liburing's random O_DIRECT 4 KiB reads at QD 128 on a file of the same size.
roof=$here/../shared/tools/roofline
if [ -f "$roof/iobench.c" ]; then
  if [ ! -f /usr/include/liburing.h ]; then
    (apt-get install -y -q liburing-dev >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q liburing-dev >/dev/null)) || true
  fi
  if [ -f /usr/include/liburing.h ]; then
    gcc -O2 -o "$out/iobench" "$roof/iobench.c" -luring
    size_mb=$(( $(du -bc "$dir"/features.x.*.bin | tail -1 | cut -f1) / 1048576 ))
    "$out/iobench" "$out/iobench.dat" "$size_mb" 1 1 1 write >/dev/null
    echo "roofline iobench (liburing), ${size_mb} MB file:"
    "$out/iobench" "$out/iobench.dat" "$size_mb" 4096 128 5
    rm -f "$out/iobench.dat"
  else
    echo "liburing-dev not installable here: skipping the iobench roofline"
  fi
fi

# np.memmap fancy indexing on the same feature file, page cache dropped for that file first.
venv=$here/.venv/bin/python
if [ -x "$venv" ]; then
  "$venv" "$here/scripts/memmap_bench.py" "$dir" --batches "${BATCHES:-100}"
else
  echo "no .venv (run make venv): skipping the np.memmap comparison"
fi
