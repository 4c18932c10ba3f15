#!/usr/bin/env bash
# Session 20, issue 44 items 1 and 2 on one H200: planned epochs of a heterogeneous graph (the
# IGBH-shaped spec) and of seed edges (ds10m link prediction) timed beside the in-memory loop and
# on demand, with the packed-extent bound (bytes a batch over the disk's sequential bandwidth,
# `tierfs bench disk`'s fitted rate). Carry build/issue44.tar.xz (libtierfs.so and the CLI of this tree).
# Writes $OUT/{disk,hetero,link}.{txt,json}. About 450 s.
set -u
root=$PWD
# the CLI and library: build/issue44.tar.xz where carried, else the gpu bundle's (after make gpu-test)
[ -f build/issue44.tar.xz ] && mkdir -p build/gpu && tar -C build/gpu -xJf build/issue44.tar.xz
make cuda >/dev/null 2>&1 || { make cuda; exit 1; }
export TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so TIERFS_LIB=$(ls $root/build/gpu/libtierfs.so* $root/build/libtierfs.so 2>/dev/null | head -1)
cli=$(ls $root/build/gpu/tierfs $root/build/tierfs 2>/dev/null | head -1)
export PYTHONPATH=$root/python
echo "lib $TIERFS_LIB cli $cli"
t=$(date +%s)
[ -f /var/tmp/igbh/manifest.json ] || $cli synth --spec benchmarks/specs/igbh-bench.json --out /var/tmp/igbh > $OUT/synth-igbh.txt 2>&1
[ "${LINK:-1}" = 0 ] || [ -f /var/tmp/ds10m/manifest.json ] || $cli synth --out /var/tmp/ds10m --nodes 10000000 --dim 128 --avg-degree 15 --seed 1 > $OUT/synth-ds10m.txt 2>&1
echo "synth $(( $(date +%s) - t )) s"; df -h /var/tmp | tail -1
$cli bench disk /var/tmp/igbh --json $OUT/disk.json > $OUT/disk.txt 2>&1; tail -4 $OUT/disk.txt
# the bound's bandwidth: the best measured point's MB/s (the largest reads), not the fit
bps=$(python3 -c "import json; d=json.load(open('$OUT/disk.json'))['probe']; print(max(p['mb_per_s'] for p in d['points']) * 1e6)")
echo "disk bytes/s for the bound: $bps"
rm -rf /var/tmp/plan-h /var/tmp/plan-l; mkdir -p /var/tmp/plan-h /var/tmp/plan-l
timeout ${HETERO_SECONDS:-300} python3 python/bench/hetero_train.py /var/tmp/igbh --arms ${HETERO_ARMS:-memory,tierfs,planned} --fanouts 10,5 --batch 1024 \
  --batches 20 --warmup 4 --repeat ${HETERO_REPEAT:-3} --drop-caches --disk-bps $bps --plan-dir /var/tmp/plan-h \
  --fetch-threads ${FETCH_THREADS:-4} --out $OUT/hetero.json > $OUT/hetero.txt 2>&1
echo "hetero rc=$?"; grep -E "^(planned|run|median)|planned:" $OUT/hetero.txt | head -20; rm -rf /var/tmp/plan-h
[ "${LINK:-1}" = 0 ] && exit 0
timeout ${LINK_SECONDS:-200} python3 python/bench/link_train.py /var/tmp/ds10m --arms memory,tierfs,planned --fanouts 10,5 --batch 1024 \
  --batches 30 --warmup 5 --repeat 3 --drop-caches --disk-iops 80000 --disk-bps $bps --plan-dir /var/tmp/plan-l --out $OUT/link.json > $OUT/link.txt 2>&1
echo "link rc=$?"; grep -E "^(planned|run|median)|   (tierfs|planned):" $OUT/link.txt | head -20
