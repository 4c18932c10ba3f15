#!/usr/bin/env bash
# Issue 28 on the landed exchange (split and local rows started before the exchange lock, 08d1df5):
# disk-bound 1 vs 2 GPUs, shared, replicated, placed, planned; then the NCCL tests.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
D="--gpu-cache 512MB --host-cache 1GB"
ddp ddp-1-shared-512MB 1 $D
ddp ddp-2-shared-512MB 2 $D
ddp ddp-2-replicated-512MB 2 $D --cache-mode replicated
ddp ddp-2-shared-512MB-place 2 $D --place --place-batches 200
ddp ddp-2-shared-512MB-planned 2 $D --planned-epochs 1
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 170 python3 -m pytest -q -p no:cacheprovider \
  test_distributed.py test_distributed_hetero.py test_distributed_place.py) > $OUT/python-nccl.log 2>&1
echo "nccl pytest rc=$?"; tail -15 $OUT/python-nccl.log
