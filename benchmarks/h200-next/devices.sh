#!/usr/bin/env bash
# Session 21, issue 44 item 3 on the GPU machine: reads/s and on-demand training over 1, 2 and 4
# devices. Loop devices over /dev/shm files (ext4, mounted; root) stand in for an NVMe array.
# One synth dataset per device count, its features striped over the devices (--device-path), the
# same graph (same seed). For each: `tierfs bench reads --gathers 1,4,16` with each loop device's
# completed reads (/sys/block/loopN/stat) and the machine's CPU use (/proc/stat) over the run, so
# the stage that binds is named; then benchtrain's on-demand loader (tierfs-pipelined) beside the
# in-memory loop. Needs build/gpu/{tierfs,libtierfs.so*} (issue44.tar.xz) and make cuda.
# PROFILE=1: CPU, mutex and block profiles of each count's 16 gathers (bench reads --profile;
# read them here with `go tool pprof build/tierfs FILE`). Writes $OUT/devices/. About 300 s.
# DEVSTACKS_AB=1 (session 22): after the reads above, device-affine IO stacks (one pool a loop
# device, a gather split over them: the default) against every stack reading every file
# (--device-stacks=false, the layout measured before), 4 devices, QD 512, 16 stacks, interleaved,
# ${AB_ROUNDS:-2} rounds: devab.txt; and build/ssd.test's device-stacks tests where carried
# (devtest.txt). The CLI needs --device-stacks (s22-devstacks or later).
# For the A/B alone (about 60 s): DEVSTACKS_AB=1 NS=4 TRAIN_NS= QDS=512.
set -u
root=$PWD; out=$OUT/devices; mkdir -p $out
[ -f build/issue44.tar.xz ] && mkdir -p build/gpu && tar -C build/gpu -xJf build/issue44.tar.xz
cli=$(ls $root/build/gpu/tierfs $root/build/tierfs 2>/dev/null | head -1)
export TIERFS_LIB=$(ls $root/build/gpu/libtierfs.so* $root/build/libtierfs.so 2>/dev/null | head -1)
export TIERFS_BIN=$cli TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so PYTHONPATH=$root/python:$root/python/bench
make cuda >/dev/null 2>&1 || echo "make cuda failed"
NODES=${NODES:-4000000} DIM=${DIM:-128}
loops=()
for k in 0 1 2 3; do
  umount /mnt/tfs$k 2>/dev/null; mkdir -p /mnt/tfs$k
  truncate -s ${DISK_GB:-6}G /dev/shm/tfsdisk$k
  dev=$(losetup -f --show /dev/shm/tfsdisk$k) || { echo "losetup failed"; exit 1; }
  mkfs.ext4 -q -F $dev && mount $dev /mnt/tfs$k || { echo "mkfs/mount $dev failed"; exit 1; }
  loops+=($(basename $dev))
done
echo "loops ${loops[*]}" | tee $out/loops.txt
cpu() { awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat; }   # busy idle jiffies
devreads() { for l in "${loops[@]}"; do awk '{printf "%s ", $1}' /sys/block/$l/stat; done; echo; }
for n in ${NS:-1 2 4}; do
  paths=(); for ((k=0;k<n;k++)); do paths+=(--device-path /mnt/tfs$k); done
  ds=/mnt/tfs0/g$n
  t=$(date +%s)
  $cli synth --out $ds --nodes $NODES --dim $DIM --avg-degree 15 --seed 1 --force "${paths[@]}" > $out/synth$n.txt 2>&1 || { echo "synth $n failed"; tail -3 $out/synth$n.txt; continue; }
  echo "== $n devices (synth $(( $(date +%s) - t )) s)"; ls -la /mnt/tfs*/ | grep -c bin
  sync; echo 3 > /proc/sys/vm/drop_caches
  for qd in ${QDS:-128 512}; do for mc in ${STACKS:-16}; do
    r0=$(devreads); c0=$(cpu)
    (sleep 4; top -b -H -n 1 -w 120 | sed -n 7,16p) > $out/top$n-qd$qd-$mc.txt &
    $cli bench reads $ds --gathers 4,16 --batch 1000 --seconds 3 --qd $qd --max-concurrent-io $mc ${PROFILE:+--profile $out/prof$n-qd$qd} > $out/reads$n-qd$qd.txt 2>&1
    r1=$(devreads); c1=$(cpu)
    echo "-- $n devices qd $qd stacks $mc"; tail -3 $out/reads$n-qd$qd.txt
    wait; [ $n = 4 ] && cat $out/top$n-qd$qd-$mc.txt
    echo "loop reads before: $r0 after: $r1" | tee -a $out/reads$n-qd$qd.txt
    echo "$c0 $c1" | awk '{b=$3-$1; i=$4-$2; printf "cpu busy %.0f%% of %d cores\n", 100*b/(b+i), '"$(nproc)"'}' | tee -a $out/reads$n-qd$qd.txt
  done; done
done
if [ -n "${DEVSTACKS_AB:-}" ] && [ -f /mnt/tfs0/g4/manifest.json ]; then
  for r in $(seq ${AB_ROUNDS:-2}); do for ds in false true; do
    c0=$(cpu)
    res=$($cli bench reads /mnt/tfs0/g4 --gathers 4,16 --batch 1000 --seconds 3 --qd 512 --max-concurrent-io ${AB_STACKS:-16} --device-stacks=$ds 2>&1)
    c1=$(cpu)
    echo "-- 4 devices round $r device-stacks=$ds: $(echo "$res" | grep -o 'over [0-9]* device pool(s)') $(echo "$res" | tail -2 | awk '{printf "g%s %s reads/s %s us/read; ", $1, $2, $5}')$(echo "$c0 $c1" | awk '{b=$3-$1; i=$4-$2; printf "cpu busy %.0f%%", 100*b/(b+i)}')"
  done; done 2>&1 | tee $out/devab.txt
  # Device destinations through device-affine stacks (completion kernels, gpu-uring): carry
  # build/ssd.test (go test -c -o build/ssd.test ./tiers/ssd).
  [ -x build/ssd.test ] && { build/ssd.test -test.run 'DeviceStacks' -test.v > $out/devtest.txt 2>&1; echo "-- ssd device-stacks tests rc=$?: $(grep -cE '^--- (PASS|FAIL|SKIP)' $out/devtest.txt) run"; grep -E '^--- (FAIL|SKIP)' $out/devtest.txt; }
fi
# The peer: iobench (../shared/tools/roofline, built static with liburing: build/probe/iobench),
# one process per device on that device's stripe of the last dataset, 4 KiB O_DIRECT reads, QD 128
# each, all at once: the devices' own limit beside tierfs's figure.
if [ -x build/probe/iobench ]; then
  for k in 1 2 4; do
    files=(); for ((d=0;d<k;d++)); do files+=($(ls -S /mnt/tfs$d/*.bin 2>/dev/null | head -1)); done
    for f in "${files[@]}"; do build/probe/iobench $f 400 4096 ${PEER_QD:-128} 3 > $out/peer$k-$(basename $(dirname $f)).txt 2>&1 & done; wait
    echo "-- peer $k devices: $(cat $out/peer$k-*.txt | tr '\n' ' ')"
  done
fi
for n in ${TRAIN_NS:-1 2 4}; do
  [ -f /mnt/tfs0/g$n/manifest.json ] || continue
  timeout ${TRAIN_SECONDS:-60} python3 -m benchtrain /mnt/tfs0/g$n --configs $([ $n = 1 ] && echo memory-gpu,)tierfs-pipelined --models sage --fanouts 10,5 \
    --batch-sizes 1024 --cache-fractions 0.02,0.05 --batches 30 --warmup 5 --max-seconds 6 --drop-caches --json $out/train$n.json > $out/train$n.txt 2>&1
  rc=$?; echo "== train $n devices rc=$rc"; grep -E "^(memory-gpu|tierfs-pipelined) +[0-9]" $out/train$n.txt
  [ $rc = 0 ] || tail -8 $out/train$n.txt
done
tar -C $OUT -czf $OUT/devices.tgz devices && rm -rf $out
for k in 0 1 2 3; do umount /mnt/tfs$k; done; losetup -D; rm -f /dev/shm/tfsdisk*
