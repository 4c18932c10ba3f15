#!/usr/bin/env bash
# One H200: what bounds a scan pass (run 10: 3.4 s a window for 5.1 GB against a 2.11 s sequential
# pass). 4 epochs packed through 1 GB windows by CLIs built with 1, 4 (as landed), 8 and 16 scan
# readers; with unchecked reads; and through one 4 GB window. Carry build/variants.tar.xz too
# (stripped CLIs: tierfs-r1, -r8, -r16).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
tar -C build -xJf build/variants.tar.xz
plan() {  # plan NAME CLI ARGS...
  local name=$1 cli=$2; shift 2
  timeout 100 $cli plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
    --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli --place-tiers=false \
    --pack-method scan --json "$@" > $OUT/$name.json 2> $OUT/$name.err
  echo "$name rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/$name.json'))
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','pack_windows','pack_reads','pack_read_bytes')})"
  rm -rf /var/tmp/plan-cli
}
plan r4 build/tierfs --pack-memory 1GB
plan r1 build/tierfs-r1 --pack-memory 1GB
plan r8 build/tierfs-r8 --pack-memory 1GB
plan r16 build/tierfs-r16 --pack-memory 1GB
plan r4-unverified build/tierfs --pack-memory 1GB --unverified-reads
plan r4-4GB build/tierfs --pack-memory 4GB
plan r4-again build/tierfs --pack-memory 1GB --cpuprofile $OUT/r4-again.prof
