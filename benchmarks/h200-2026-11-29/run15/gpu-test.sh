#!/usr/bin/env bash
# The second call of the next single-H200 session: every GPU test and sanitizer run on this
# session's code (not run in session 15), benchmarks skipped. Logs under $OUT; about 350 s.
# Carry ["build/gpu-bundle.tar.xz", ".whl"] after `make gpu-bundle`.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
GPU_BENCH=0 timeout 540 ./scripts/gpu_test.sh build > $OUT/gpu-test.txt 2>&1
echo "gpu_test rc=$?"; grep -E "^(PASS|FAIL)|passed|failed|ERROR SUMMARY" $OUT/gpu-test.txt | head -40
