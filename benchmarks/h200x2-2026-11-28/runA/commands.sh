#!/usr/bin/env bash
# Every row cached on two GPUs: 1 vs 2 GPUs interleaved three times, then placed rows.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
C="--gpu-cache 2700MB --host-cache 256MB"
for k in 1 2 3; do
  ddp ddp-1-shared-2700MB-r$k 1 $C
  ddp ddp-2-shared-2700MB-r$k 2 $C
done
ddp ddp-2-replicated-2700MB 2 $C --cache-mode replicated
ddp ddp-1-shared-2700MB-place 1 $C --place --place-batches 200
ddp ddp-2-shared-2700MB-place 2 $C --place --place-batches 200
