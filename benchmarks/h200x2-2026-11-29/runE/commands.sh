#!/usr/bin/env bash
# runD's 2-GPU shared run hung (no error until the 170 s timeout). With no device-wide CUDA waits
# left on per-batch paths (cudaFree/cudaFreeHost of outgrown buffers, stream-0 syncs), the same
# run three times, each under a watchdog that dumps every Python thread (faulthandler, SIGABRT)
# if it is still running after 100 s; then the NCCL tests and the featurestore GPU tests.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
export PYTHONFAULTHANDLER=1
D="--gpu-cache 512MB --host-cache 1GB"
for k in 1 2 3; do
  ( sleep 100; pkill -ABRT -f train_pyg_ddp.py && echo "watchdog: run $k hung; threads dumped" ) & wd=$!
  ddp ddp-2-shared-512MB-$k 2 $D
  kill $wd 2>/dev/null
  [ -f $OUT/ddp-2-shared-512MB-$k.json ] || grep -A30 "Thread 0x\|Current thread" /tmp/ddp-2-shared-512MB-$k.log | head -150 > $OUT/hang-$k.txt
done
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 150 python3 -m pytest -q -p no:cacheprovider -x \
  test_distributed.py test_distributed_hetero.py test_distributed_place.py) > $OUT/python-nccl.log 2>&1
echo "nccl pytest rc=$?"; tail -6 $OUT/python-nccl.log
(cd featurestore && timeout 100 ../build/gpu/featurestore.test -test.count=1 -test.run 'Device|GPU|Planned|Elsewhere') > $OUT/featurestore-gpu.log 2>&1
echo "featurestore gpu tests rc=$?"; grep -E "^(--- FAIL|FAIL|ok|PASS)" $OUT/featurestore-gpu.log | head
