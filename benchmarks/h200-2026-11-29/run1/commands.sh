#!/usr/bin/env bash
# One H200 (the 2-GPU kind was not lent): the GPU tests on the landed code (session 12's exchange,
# SSD counter, spool and fill changes), then issue 27's bench train for sage [25,10] b1024 with
# the whole epoch planned, which also times a later round (replanning_over_limit).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
GPU_BENCH=0 OUT=/tmp/gt timeout 300 ./scripts/gpu_test.sh build > $OUT/gpu-test.txt 2>&1
echo "gpu_test rc=$?"; grep -E "^(PASS|FAIL|SKIP|gpu-test)" $OUT/gpu-test.txt
tar -C /tmp -czf $OUT/gpu-test-logs.tgz gt
timeout 250 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-cached,tierfs-pipelined,tierfs-planned \
  --models sage --fanouts 25,10 --batch-sizes 1024 --repeats 3 --batches 100 --max-seconds 8 --planned-epoch full \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; tail -30 $OUT/bench-train.txt
