#!/usr/bin/env bash
set -u
source benchmarks/h200x2-2026-11-26/common.sh
D="--gpu-cache 512MB --host-cache 1GB"
ddp ddp-1-shared-512MB 1 $D
ddp ddp-2-shared-512MB 2 $D
ddp ddp-2-replicated-512MB 2 $D --cache-mode replicated
ddp ddp-1-shared-512MB-place 1 $D --place --place-batches 200
ddp ddp-2-shared-512MB-place 2 $D --place --place-batches 200
ddp ddp-2-shared-2700MB-nodedup 2 --gpu-cache 2700MB --host-cache 256MB
ddp ddp-2-shared-512MB-planned 2 $D --planned-epochs 1
