#!/usr/bin/env bash
# One H200: planning with every change of the day (one goroutine a planned batch, 8 batches at
# once; 1 GiB windows; ties of the plan's placement by the profile; the tiers filled by chunks
# side by side and the GPU tier through two bounce buffers), [25,10] and [15,10,5], sage b1024.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd featurestore && timeout 60 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Fill|Place') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -3 $OUT/featurestore-gpu.log
(cd tiers/gpu && timeout 30 ../../build/gpu/tiers_gpu.test -test.count=1) > $OUT/tiers-gpu.log 2>&1; echo "tiers/gpu tests rc=$?"; tail -2 $OUT/tiers-gpu.log
timeout 240 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned \
  --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --repeats 3 --batches 60 --max-seconds 6 --planned-epoch full \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|replan|placed|planning" $OUT/bench-train.txt | head -12; grep -E "^(memory-gpu|tierfs-planned) +[0-9]" $OUT/bench-train.txt
