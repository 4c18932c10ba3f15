#!/usr/bin/env bash
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 200 python3 -m pytest -q -p no:cacheprovider test_distributed.py test_distributed_hetero.py) > $OUT/python-nccl.log 2>&1
echo "nccl tests rc=$?: $(tail -1 $OUT/python-nccl.log)"
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --target-processes all --error-exitcode 3 \
   python3 -m pytest -q -p no:cacheprovider test_distributed.py -k "exchange") > $OUT/sanitizer-memcheck-nccl.log 2>&1
echo "sanitizer rc=$?: $(grep -E 'ERROR SUMMARY' $OUT/sanitizer-memcheck-nccl.log | tail -2 | tr '\n' ' ') $(grep -E 'passed|failed' $OUT/sanitizer-memcheck-nccl.log | tail -1)"
C="--gpu-cache 2700MB --host-cache 256MB"
ddp ddp-1-shared-2700MB 1 $C
ddp ddp-2-shared-2700MB 2 $C
ddp ddp-2-replicated-2700MB 2 $C --cache-mode replicated
ddp ddp-2-shared-2700MB-hostsampler 2 $C --gpu-topology none
ddp ddp-1-shared-2700MB-hostsampler 1 $C --gpu-topology none
