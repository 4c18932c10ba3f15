#!/usr/bin/env bash
# One H200: windows about even (no pass of the feature file for a small remainder); the
# planner's CPU profile (tierfs plan-epochs, 4 epochs, tiers placed as bench train's 10/20
# store); bench train sage [25,10] and [15,10,5] b1024 with a later round of 4 epochs.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
timeout 120 build/tierfs plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
  --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli \
  --cpuprofile $OUT/plan-epochs.prof --json > $OUT/plan-epochs.json 2> $OUT/plan-epochs.err
echo "plan-epochs rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/plan-epochs.json'))
print({k: d.get(k) for k in ('seconds','place_seconds','place_sample_seconds','fill_seconds','sample_seconds','read_seconds','write_seconds','rows_packed','pack_windows','pack_window_bytes','pack_reads','pack_read_bytes','pack_method','disk_model')})"
rm -rf /var/tmp/plan-cli
timeout 260 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4 --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
