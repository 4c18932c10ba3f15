#!/usr/bin/env bash
# bench_train.sh TIERFS_BIN OUT: the whole end-to-end training table (issue 12) on a GPU machine,
# in about 9 minutes on one H100 with 16 cores (docs/bench-train.md):
#
#   1. synthesize the dataset into $BENCH_DIR (default /var/tmp/tierfs-bench-train: a real disk,
#      not tmpfs), NODES nodes x 128 float32, average in-degree 15; kept for the next run;
#   2. `tierfs bench disk` on it (OUT/disk.txt, OUT/disk.json);
#   3. `tierfs bench train`: GraphSAGE and GCN (hidden 256) x fanouts [25,10], [15,10,5] x
#      batches 1024, 8000 x every configuration, plus the host-cache sweep
#      (OUT/bench-train.txt, OUT/bench-train.json, OUT/plots/*.png when matplotlib is there).
#
# Needs next to TIERFS_BIN: libtierfs.so (make lib) and, for the GPU, libtierfs_cuda.so (make
# cuda); a Python ($TIERFS_PYTHON, default python3) with torch and torch_geometric.
# Knobs (environment): NODES (10000000; e.g. 1000000 for a quick run), DEVICE (cuda), BATCHES
# (timed batches per configuration, 10), WARMUP (3), MAX_SECONDS (cap per configuration, 5),
# SWEEP (0.05,0.1,0.2,0.4), PLACE_EPOCHS (2), PLANNED_EPOCH (timed), DEPTH (4), SEED (1),
# DROP_CACHES (1: pass --drop-caches), TOTAL_BUDGET (540 s for the whole script: configurations
# that would start after it are reported as skipped), EXTRA (more benchtrain flags).
set -euo pipefail
bin=${1:?usage: bench_train.sh TIERFS_BIN OUT}
out=${2:?usage: bench_train.sh TIERFS_BIN OUT}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
nodes=${NODES:-10000000}
work=${BENCH_DIR:-/var/tmp/tierfs-bench-train}
ds=$work/ds$nodes
mkdir -p "$out" "$work"
dir=$(dirname "$bin")
if [ -z "${TIERFS_CUDA_LIB:-}" ] && [ -f "$dir/libtierfs_cuda.so" ]; then
  export TIERFS_CUDA_LIB=$dir/libtierfs_cuda.so
fi
start=$SECONDS
stamp() { echo "[bench_train] $1 at $((SECONDS - start)) s"; }

if [ ! -f "$ds/manifest.json" ]; then
  "$bin" synth --out "$ds" --nodes "$nodes" --dim 128 --avg-degree 15 --seed 1 | tail -3
  stamp "synth ($nodes nodes) done"
else
  echo "[bench_train] reusing $ds"
fi

"$bin" bench disk "$ds" --json "$out/disk.json" | tee "$out/disk.txt"
stamp "bench disk done"

flags=(--device "${DEVICE:-cuda}" --batches "${BATCHES:-10}" --warmup "${WARMUP:-3}" --max-seconds "${MAX_SECONDS:-5}"
  --sweep-host "${SWEEP:-0.05,0.1,0.2,0.4}" --planned-epoch "${PLANNED_EPOCH:-timed}" --depth "${DEPTH:-4}"
  --seed "${SEED:-1}" --disk-json "$out/disk.json" --tierfs-bin "$bin" --json "$out/bench-train.json" --plots "$out/plots")
if [ -n "${PLACE_EPOCHS:-2}" ]; then flags+=(--place-epochs "${PLACE_EPOCHS:-2}"); fi
if [ "${DROP_CACHES:-1}" = 1 ]; then flags+=(--drop-caches); fi
# What is left of the budget, less ~30 s for the last configuration, the sweep's tail and plots.
left=$(( ${TOTAL_BUDGET:-540} - (SECONDS - start) - 30 ))
flags+=(--time-budget "$(( left > 60 ? left : 60 ))")
# shellcheck disable=SC2086
"$bin" bench train "$ds" "${flags[@]}" ${EXTRA:-} 2>&1 | tee "$out/bench-train.txt"
stamp "bench train done"
