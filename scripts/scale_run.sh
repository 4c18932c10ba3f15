#!/usr/bin/env bash
# scale_run.sh TIERFS_BIN OUT: issue 12's scale run on a GPU machine, inside one 10-minute call:
#
#   1. `tierfs synth` a graph of NODES nodes (default 50M) x 128 float32 with average in-degree
#      AVG_DEGREE (default 10: 500M edges, ~25.6 GB of features) onto the machine's disk
#      ($SCALE_DIR, default /var/tmp/tierfs-scale; reused when it is already there);
#   2. `tierfs bench disk` on it (4 KiB IOPS: the disk bound);
#   3. a fixed number of training batches (GraphSAGE hidden 256, fanouts 25,10, batch 1024)
#      through tierfs with caches holding GPU_FRAC / HOST_FRAC of the feature bytes (default
#      0.1 / 0.2), serial and pipelined (`tierfs bench train --configs tierfs-serial,tierfs-pipelined`).
#
# Every step prints its wall time and the machine's free memory and disk, so what bounded the run
# (synth, placement, disk, sampling) can be read off OUT/scale.txt. Needs what bench_train.sh needs
# (libtierfs.so next to TIERFS_BIN, libtierfs_cuda.so for the GPU, Python with torch and PyG).
# Knobs: NODES, AVG_DEGREE, DIM (128), GPU_FRAC, HOST_FRAC, BATCHES (60), DEVICE (cuda),
# PLACE_EPOCHS (1), TOTAL_BUDGET (560 s), KEEP (1: keep the dataset for the next run).
set -euo pipefail
bin=${1:?usage: scale_run.sh TIERFS_BIN OUT}
out=${2:?usage: scale_run.sh TIERFS_BIN OUT}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
nodes=${NODES:-50000000}
deg=${AVG_DEGREE:-10}
dim=${DIM:-128}
work=${SCALE_DIR:-/var/tmp/tierfs-scale}
ds=$work/ds$nodes-$deg-$dim
mkdir -p "$out" "$work"
dir=$(dirname "$bin")
if [ -z "${TIERFS_CUDA_LIB:-}" ] && [ -f "$dir/libtierfs_cuda.so" ]; then
  export TIERFS_CUDA_LIB=$dir/libtierfs_cuda.so
fi
start=$SECONDS
log=$out/scale.txt
: >"$log"
stamp() {
  {
    echo "[scale] $1 at $((SECONDS - start)) s"
    free -g | sed -n 2p | awk '{print "[scale]   memory: " $3 " GiB used, " $7 " GiB available"}'
    df -h "$work" | tail -1 | awk '{print "[scale]   disk: " $3 " used, " $4 " free"}'
  } | tee -a "$log"
}
stamp "start: $nodes nodes, average in-degree $deg, $dim float32 ($(nproc) CPUs)"

if [ ! -f "$ds/manifest.json" ]; then
  "$bin" synth --out "$ds" --nodes "$nodes" --avg-degree "$deg" --dim "$dim" --seed 1 --force 2>&1 | tail -8 | tee -a "$log"
  stamp "synth done"
else
  echo "[scale] reusing $ds" | tee -a "$log"
fi
"$bin" info "$ds" | tee -a "$log"

"$bin" bench disk "$ds" --json "$out/disk.json" 2>&1 | tee -a "$log" | tail -12
stamp "bench disk done"

left=$(( ${TOTAL_BUDGET:-560} - (SECONDS - start) - 20 ))
"$bin" bench train "$ds" --device "${DEVICE:-cuda}" --configs tierfs-serial,tierfs-pipelined --models sage \
  --fanouts 25,10 --batch-sizes 1024 --batches "${BATCHES:-60}" --warmup 3 --max-seconds 120 \
  --cache-fractions "${GPU_FRAC:-0.1},${HOST_FRAC:-0.2}" --place-epochs "${PLACE_EPOCHS:-1}" \
  --disk-json "$out/disk.json" --tierfs-bin "$bin" --time-budget "$(( left > 60 ? left : 60 ))" \
  --json "$out/scale-train.json" 2>&1 | tee -a "$log"
stamp "training batches done"
if [ "${KEEP:-1}" != 1 ]; then
  rm -rf "$ds"
fi
