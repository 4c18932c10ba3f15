#!/usr/bin/env bash
set -u
source benchmarks/h200x2-2026-11-26/common.sh
# Go GPU tests of the merged planned/elsewhere code (featurestore binary, the planned and device paths)
(cd featurestore && timeout 150 ../build/gpu/featurestore.test -test.count=1 -test.run 'Elsewhere|Epoch|Planned|Device|Profile' > $OUT/go-featurestore-gpu.log 2>&1); echo "go featurestore GPU rc=$?: $(tail -1 $OUT/go-featurestore-gpu.log)"
grep -E "^--- FAIL|panic" $OUT/go-featurestore-gpu.log | head
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 240 python3 -m pytest -q -p no:cacheprovider test_distributed.py test_distributed_hetero.py test_distributed_place.py) > $OUT/python-nccl.log 2>&1
echo "nccl tests rc=$?: $(tail -1 $OUT/python-nccl.log)"; grep -E "^FAILED|^E  " $OUT/python-nccl.log | head -20
C="--gpu-cache 2700MB --host-cache 256MB"
ddp ddp-1-shared-2700MB 1 $C
ddp ddp-2-shared-2700MB 2 $C
ddp ddp-2-replicated-2700MB 2 $C --cache-mode replicated
ddp ddp-2-shared-512MB-perhost 2 --gpu-cache 512MB --host-cache 2GB --host-tier per_host
