#!/usr/bin/env bash
# One H200: the featurestore GPU tests on the code with no device-wide waits on per-batch paths,
# then issue 27's planning with the new planner (half the CPUs sample, 1 GiB windows, ties of the
# plan's placement broken by the profile's order), sage and gcn [25,10] b1024, the epoch planned.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd featurestore && timeout 90 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Elsewhere|Epoch') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; grep -E "^(--- FAIL|FAIL|ok|PASS)" $OUT/featurestore-gpu.log | head; grep -c "^--- PASS" $OUT/featurestore-gpu.log
timeout 220 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-pipelined,tierfs-planned \
  --models sage,gcn --fanouts 25,10 --batch-sizes 1024 --repeats 3 --batches 60 --max-seconds 6 --planned-epoch full \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|replan|placed" $OUT/bench-train.txt | head; tail -22 $OUT/bench-train.txt
