#!/usr/bin/env bash
# One H200: the planner drawing on the host topology (not the GPU sampler), timed; the cuda
# Mirror test; the featurestore GPU tests. sage [25,10] and [15,10,5], b1024.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd cuda && timeout 60 ../build/gpu/cuda.test -test.count=1 -test.v -test.run 'Mirror') > $OUT/cuda-mirror.log 2>&1
echo "cuda Mirror tests rc=$?"; grep -E "^(--- |ok|FAIL|PASS)" $OUT/cuda-mirror.log | head
(cd featurestore && timeout 90 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Fill|Place|Host') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -3 $OUT/featurestore-gpu.log
timeout 300 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned \
  --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --repeats 3 --batches 60 --max-seconds 6 --planned-epoch full \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|replan|placed|planning" $OUT/bench-train.txt | head -12; grep -E "^(memory-gpu|tierfs-planned) +[0-9]" $OUT/bench-train.txt
