#!/usr/bin/env bash
# One H200: windows spanning epochs (a later round of 4 epochs packed by fewer passes of the
# feature file), windows as mremap-grown mappings; the featurestore GPU tests; the moonshot rows
# not measured before (gcn [15,10,5] b1024, sage [25,10] b8000).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
(cd featurestore && timeout 60 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Windows') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; tail -2 $OUT/featurestore-gpu.log
bench sage-b1024 230 --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4
bench gcn-15105-b1024 150 --models gcn --fanouts 15,10,5 --batch-sizes 1024 --replan-epochs 2
bench sage-2510-b8000 100 --models sage --fanouts 25,10 --batch-sizes 8000 --replan-epochs 2
