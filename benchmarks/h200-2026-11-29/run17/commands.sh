#!/usr/bin/env bash
# Session 16, the last device time: the moonshot rows at batch 8,000 not measured before
# (sage and gcn [15,10,5], gcn [25,10]): planned epochs replayed against the limit, medians of
# 3 interleaved repeats of up to 30 batches. Carry ["build/gpu-bundle.tar.xz", ".whl"].
set -u
source benchmarks/h200x2-2026-11-26/common.sh
bench() {  # bench NAME TIMEOUT ARGS...
  local name=$1 t=$2; shift 2
  timeout $t python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 30 --max-seconds 5 \
    --planned-epoch full --batch-sizes 8000 --json $OUT/$name.json "$@" > $OUT/$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "planned|placed|^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/$name.txt
}
bench b8000-15105 230 --models sage,gcn --fanouts 15,10,5
bench gcn-2510-b8000 120 --models gcn --fanouts 25,10
