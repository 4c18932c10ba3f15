#!/usr/bin/env bash
# One H200: windows spanning epochs (a later round of 4 epochs packed by fewer passes of the
# feature file), windows as mremap-grown mappings; the featurestore GPU tests; the moonshot rows
# not measured before (gcn [15,10,5] b1024, sage [25,10] b8000).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd featurestore && timeout 60 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Windows') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -2 $OUT/featurestore-gpu.log
bench() {  # bench NAME TIMEOUT ARGS...
  local name=$1 t=$2; shift 2
  timeout $t python3 -m tierfs.benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
    --planned-epoch full --json $OUT/$name.json "$@" > $OUT/$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "planned|placed" $OUT/$name.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|over_limit|keeps up|later round" $OUT/$name.txt
}
bench sage-b1024 230 --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4
bench gcn-15105-b1024 150 --models gcn --fanouts 15,10,5 --batch-sizes 1024 --replan-epochs 2
bench sage-2510-b8000 100 --models sage --fanouts 25,10 --batch-sizes 8000 --replan-epochs 2
