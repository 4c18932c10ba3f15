#!/usr/bin/env bash
# Disk-bound caches: 1 vs 2 GPUs, shared and replicated, with and without place; planned epochs on 2 GPUs.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
D="--gpu-cache 512MB --host-cache 1GB"
P="--place --place-batches 200"
ddp ddp-1-shared-512MB 1 $D
ddp ddp-2-shared-512MB 2 $D
ddp ddp-1-shared-512MB-place 1 $D $P
ddp ddp-2-shared-512MB-place 2 $D $P
ddp ddp-2-replicated-512MB-place 2 $D $P --cache-mode replicated
ddp ddp-2-shared-512MB-planned 2 $D --planned-epochs 1
