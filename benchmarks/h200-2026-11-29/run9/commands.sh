#!/usr/bin/env bash
# One H200: the disk model probed by the store itself (no --coalesce-gap -1): 4 epochs packed by
# scans through 1 GB windows (run 8: 21.5 s of reading under the default model), then bench
# train sage [25,10] b1024 with a later round of 4 epochs.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
timeout 120 build/tierfs plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
  --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli --place-tiers=false \
  --pack-method scan --json --pack-memory 1GB > $OUT/pack-1GB.json 2> $OUT/pack-1GB.err
echo "pack-1GB rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/pack-1GB.json'))
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','rows_packed','pack_windows','pack_reads','pack_read_bytes','disk_model')})"
rm -rf /var/tmp/plan-cli
timeout 200 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10 --batch-sizes 1024 --replan-epochs 4 --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
