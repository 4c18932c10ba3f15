#!/usr/bin/env bash
# One H200: distinct-row windows that end by batch counts (run 13's byte estimate made 8 uneven
# windows of 0.8-708 MB in the CLI, 2 in the bench). The CLI plan with this build and with the
# packed-byte windows of fb0754a (tierfs-prev, build/variants.tar.xz), interleaved; later rounds
# of 4 epochs at [25,10] and [15,10,5] (run 13: 0.908 and 0.359); the planned GPU tests.
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
print({k: d.get(k) for k in ('seconds','sample_seconds','read_seconds','write_seconds','pack_windows','pack_window_bytes','pack_reads','pack_read_bytes')})"
  rm -rf /var/tmp/plan-cli
}
plan distinct build/tierfs --pack-memory 1GB
plan prev build/tierfs-prev --pack-memory 1GB
plan distinct-again build/tierfs --pack-memory 1GB
timeout 260 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4 --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
(cd featurestore && timeout 60 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Windows') > /tmp/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -2 /tmp/featurestore-gpu.log
(cd python/tests && timeout 100 python3 -m pytest -q test_planned.py test_plan_pack.py test_gpu.py 2>&1 | tail -3)
