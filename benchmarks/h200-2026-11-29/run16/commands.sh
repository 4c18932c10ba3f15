#!/usr/bin/env bash
# Session 16: whole runs of fresh planned epochs (issue 27, item 3: "a run of any number of
# epochs waits for planning at most once"). tierfs-rounds trains 8 whole epochs through
# tierfs.Loader(planned_epochs=4), each later round planned beside the round before on the same
# disk and CPUs, against the limit (memory-gpu, 3 interleaved repeats). About 400 s.
# Carry ["build/gpu-bundle.tar.xz", ".whl"] after `make gpu-bundle`.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
run() {  # run NAME TIMEOUT ARGS...
  local name=$1 t=$2; shift 2
  timeout $t python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-rounds --repeats 3 --batches 60 --max-seconds 6 \
    --run-epochs 8 --replan-epochs 4 --json $OUT/$name.json "$@" > $OUT/$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "placed|tierfs-rounds|^memory-gpu +[0-9]|a run of" $OUT/$name.txt
}
[ "${SECOND:-0}" = 1 ] || { run sage-2510-b1024 200 --models sage --fanouts 25,10 --batch-sizes 1024
run sage-15105-b1024 260 --models sage --fanouts 15,10,5 --batch-sizes 1024; }
[ "${SECOND:-0}" = 1 ] || exit 0
# The second call (the same machine, warm): gcn at [25,10], and batch 8,000, where planned
# training (~1.4M seeds/s) is far faster than planning a round.
run gcn-2510-b1024 200 --models gcn --fanouts 25,10 --batch-sizes 1024
run sage-2510-b8000 200 --models sage --fanouts 25,10 --batch-sizes 8000
