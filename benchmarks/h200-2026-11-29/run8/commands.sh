#!/usr/bin/env bash
# One H200: what bounds a plan's reading. The disk's random reads 512 B..128 KiB (bench disk), a
# sequential O_DIRECT pass over the feature file (bench fill), and 4 epochs packed by scans
# through windows of 1 GB and of 4 GB (one window), checked and unchecked reads.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
build/tierfs bench disk /var/tmp/ds10m --json $OUT/disk.json > $OUT/disk.txt 2>&1; echo "bench disk rc=$?"; tail -12 $OUT/disk.txt
timeout 90 build/tierfs bench fill /var/tmp/ds10m --host-cache 1GB --rounds 1 --json $OUT/fill.json > $OUT/fill.txt 2>&1; echo "bench fill rc=$?"; tail -8 $OUT/fill.txt
plan() {  # plan NAME ARGS...
  local name=$1; shift
  timeout 120 build/tierfs plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
    --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli --place-tiers=false \
    --pack-method scan --json "$@" > $OUT/$name.json 2> $OUT/$name.err
  echo "$name rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/$name.json'))
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','rows_packed','pack_windows','pack_window_bytes','pack_reads','pack_read_bytes')})"
  rm -rf /var/tmp/plan-cli
}
plan pack-1GB --pack-memory 1GB --cpuprofile $OUT/pack-1GB.prof
plan pack-4GB --pack-memory 4GB --cpuprofile $OUT/pack-4GB.prof
plan pack-4GB-unverified --pack-memory 4GB --unverified-reads
