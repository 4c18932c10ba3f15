#!/usr/bin/env bash
# Disk-bound 2-GPU rows with the exchange no longer waiting for the local rows under its lock,
# then issue 27 on GPU 0 alone: planned epochs with stored samples against the limit.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
D="--gpu-cache 512MB --host-cache 1GB"
ddp ddp-1-shared-512MB 1 $D
ddp ddp-2-shared-512MB 2 $D
ddp ddp-2-shared-512MB-place 2 $D --place --place-batches 200
ddp ddp-2-shared-512MB-planned 2 $D --planned-epochs 1
CUDA_VISIBLE_DEVICES=0 timeout 230 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-pipelined,tierfs-planned \
  --models sage --fanouts 25,10 --batch-sizes 1024 --repeats 3 --batches 100 --max-seconds 8 --planned-epoch full \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
tail -30 $OUT/bench-train.txt
