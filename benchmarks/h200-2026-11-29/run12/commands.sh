#!/usr/bin/env bash
# One H200: a window read while the one before is written (run 11: 14.9-17.5 s for 4 epochs
# through 1 GB windows, 10.7-12.9 s of it reading, 1.7-2.0 s writing). The CLI plan twice, then
# later rounds of 4 epochs at [25,10] and [15,10,5] (run 10: 1.036 and 0.523 of training).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
plan() {  # plan NAME ARGS...
  local name=$1; shift
  timeout 100 build/tierfs plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
    --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli --place-tiers=false \
    --pack-method scan --json "$@" > $OUT/$name.json 2> $OUT/$name.err
  echo "$name rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/$name.json'))
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','pack_windows','pack_reads','pack_read_bytes')})"
  rm -rf /var/tmp/plan-cli
}
plan pack-1GB --pack-memory 1GB
plan pack-1GB-again --pack-memory 1GB
timeout 260 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4 --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
