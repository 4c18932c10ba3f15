#!/usr/bin/env bash
# Session 19: bisect session 18's unexplained A/B on the H200 (see ../h200-2026-12-01/README.md).
# Carry build/ab (tarballs of a6d8f53, 16c3f49 and b1659f1: python/tierfs + libtierfs.so, the
# last with the CLI). Builds the CUDA shim of this tree, synthesizes ds10m, then per round and
# build runs sample_ab.py (GPU sampling with the 10/20 store opened beside the cached one).
set -u
root=$PWD
make cuda >/dev/null 2>&1 || { make cuda; exit 1; }
export TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so
for t in build/ab/*.tar.xz; do b=$(basename $t .tar.xz); mkdir -p /tmp/ab/$b && tar -C /tmp/ab/$b -xJf $t; done
t=$(date +%s)
[ -f /var/tmp/ds10m/manifest.json ] || $( [ -x build/tierfs ] && echo build/tierfs || ls /tmp/ab/*/bin/tierfs | head -1) synth --out /var/tmp/ds10m --nodes 10000000 --dim 128 --avg-degree 15 --seed 1 >/dev/null
echo "synth $(( $(date +%s) - t )) s"
[ "${SAMPLE:-1}" = 1 ] && for round in ${ROUNDS:-1 2}; do
  for b in ${BUILDS:-a6d8f53 b1659f1 16c3f49}; do
    PYTHONPATH=/tmp/ab/$b TIERFS_LIB=/tmp/ab/$b/libtierfs.so timeout ${RUN_SECONDS:-150} python3 benchmarks/h200-next/sample_ab.py /var/tmp/ds10m $b \
      2> $OUT/$b-$round.err | tee -a $OUT/sample_ab.jsonl || { echo "$b round $round failed"; tail -5 $OUT/$b-$round.err; }
  done
done
# TRAIN=1: then the training rows of scripts/ab_homogeneous.sh (memory-gpu, tierfs-cached,
# tierfs-serial; sage [25,10] b1024, 40 batches) per build, the builds' order reversed each round.
if [ "${TRAIN:-0}" = 1 ]; then
  order="${BUILDS:-a6d8f53 16c3f49 b1659f1}"
  for round in ${TRAIN_ROUNDS:-1 2}; do
    for b in $order; do
      PYTHONPATH=/tmp/ab/$b:$root/python/bench TIERFS_LIB=/tmp/ab/$b/libtierfs.so timeout ${TRAIN_SECONDS:-120} python3 -m benchtrain /var/tmp/ds10m \
        --configs memory-gpu,tierfs-cached,tierfs-serial --models sage --fanouts 25,10 --batch-sizes 1024 \
        --batches 40 --warmup 5 --place-epochs 1 --disk-iops 80000 --json $OUT/train-$b-$round.json > $OUT/train-$b-$round.txt 2>&1 \
        || { echo "$b round $round failed"; tail -5 $OUT/train-$b-$round.txt; }
      python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; print('== $b round $round:', '  '.join(f\"{x['config']} {x.get('seeds_per_s', 0):,.0f}\" for x in r))" $OUT/train-$b-$round.json
    done
    order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
  done
fi
