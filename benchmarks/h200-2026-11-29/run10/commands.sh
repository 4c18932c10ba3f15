#!/usr/bin/env bash
# Prepared 2026-11-29 for the next single-H200 session (issue 27's last open target): the
# four-reader scan (copies on its readers), bucketed sort, async samples writer and huge-page
# windows, none of them yet timed on the GPU host. 1: a scan of 4 epochs against run 8/9's 21.5-22.3 s
# (the sequential pass, 2.11 s, is the bound); 2: later rounds of 4 epochs at [25,10] and
# [15,10,5] (was 1.26-1.33 and 0.67-0.71 of training); 3: the GPU tests (no -x: every suite).
# Carry ["build/gpu-bundle.tar.xz", ".whl"] after `make gpu-bundle`; about 450 s.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
timeout 120 build/tierfs plan-epochs /var/tmp/ds10m --fanouts 25,10 --batch-size 1024 --epochs 4 --seed 1 --shuffle-seed 1 \
  --gpu-cache 512MB --host-cache 1GB --gpu-topology device --topology-memory 2GiB --plan-dir /var/tmp/plan-cli --place-tiers=false \
  --pack-method scan --json --pack-memory 1GB --cpuprofile $OUT/pack-1GB.prof > $OUT/pack-1GB.json 2> $OUT/pack-1GB.err
echo "pack-1GB rc=$?"; python3 -c "
import json; d=json.load(open('$OUT/pack-1GB.json'))
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','rows_packed','pack_windows','pack_reads','pack_read_bytes','disk_model')})"
rm -rf /var/tmp/plan-cli
timeout 260 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4 --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
(cd featurestore && timeout 60 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Windows') > /tmp/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -2 /tmp/featurestore-gpu.log
(cd python/tests && timeout 150 python3 -m pytest -q test_planned.py test_plan_pack.py test_planned_rounds.py test_planned_hetero.py test_gpu.py 2>&1 | tail -4)
