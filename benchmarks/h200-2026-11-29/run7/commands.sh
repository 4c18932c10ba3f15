#!/usr/bin/env bash
# One H200: a later round of 4 epochs at [25,10] with 2 GiB packing windows (pack_memory):
# two passes of the feature file instead of three; then the planned-epoch pytest suites on CUDA.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
timeout 200 python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
  --planned-epoch full --models sage --fanouts 25,10 --batch-sizes 1024 --replan-epochs 4 --plan-pack-memory 2GiB \
  --json $OUT/bench-train.json > $OUT/bench-train.txt 2>&1
echo "bench rc=$?"; grep -E "planned|placed" $OUT/bench-train.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|keeps up|later round" $OUT/bench-train.txt
(cd python/tests && timeout 200 python3 -m pytest -q -x test_planned.py test_plan_pack.py test_planned_rounds.py test_planned_hetero.py test_gpu.py test_bench_train.py 2>&1 | tail -5) > $OUT/pytest.log 2>&1
echo "pytest:"; cat $OUT/pytest.log
