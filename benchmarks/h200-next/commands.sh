#!/usr/bin/env bash
# Prepared 2026-11-29 (session 16) for the next single-H200 session: what slows the training step
# beside tierfs's loader. In run 16 a whole run of fresh planned epochs of gcn [25,10] b1024 was
# 0.84 of the limit, its training step 5.2 / 4.98 ms (host / GPU) against 4.26 / 4.08 in the
# limit's loop; replayed plans showed the same +22-30% with no planner beside (run 2). Two
# suspects: the loader's threads (1 sampler + --depth gather threads, the GIL between their native
# calls and the CUDA driver's context lock) and its GPU work (the packed extent's copy, the
# scatter and split kernels, host-tier rows read over PCIe) sharing the GPU with the step.
# 1. replayed gcn [25,10] at --depth 1, 2 and 4 (gather threads) against the limit, in one run each;
# 2. an nsys profile of one replayed run, if nsys is there: the CUDA API time of the trainer's
#    thread against the gather threads', and kernel overlap. About 400 s.
# 3. (session 17) the planning rows of run 15 again, now that stored samples take half the bytes
#    at [25,10] (index version 5): a later round of sage [25,10] K=4 was 0.584 of training at the
#    limit, 12.8 s, writing 3.9 GB (2.96 GB of samples); it should write about 2.4 GB. About 250 s,
#    in a call of its own: `bash benchmarks/h200-next/commands.sh plan`.
# 4. (session 18, issue 41) the typed-core redesign keeps the homogeneous figures: a6d8f53's
#    package and library against this tree's, interleaved (scripts/ab_homogeneous.sh), and the
#    GPU tests of the planned package it moved out of featurestore (make gpu-test runs them:
#    TestPlannedDeviceGather*). About 300 s, in a call of its own: `bash
#    benchmarks/h200-next/commands.sh ab`, after building build/old-a6d8f53.tar.xz here (a6d8f53's
#    python/tierfs and `go build -buildmode=c-shared -o libtierfs.so ./capi` at its top level).
#    Done in session 19 (benchmarks/h200-2026-12-02/): not reproduced once the order alternates.
# 5. (session 19) the next GPU session: `GPU_BENCH=0 make gpu-test` on the final tree (the
#    Session.Close fix was checked on featurestore's GPU binary and sanitizers only), then the
#    training rows with 3+ rounds a build: `SAMPLE=0 TRAIN=1 TRAIN_ROUNDS="1 2 3" BUILDS="a6d8f53
#    new" bash benchmarks/h200-next/sample_ab.sh` (carry build/ab/a6d8f53.tar.xz and
#    build/ab/new.tar.xz: python/tierfs and libtierfs.so of each; about 330 s).
#    Done in session 20 (benchmarks/h200-2026-12-02/README.md items 5, 6, 9). Note: sample_ab.sh
#    runs this tree's python/bench/benchtrain against each build's package; since session 20 it
#    calls store.num_nodes() (ABI 3's method), so a6d8f53's package no longer runs under it.
# 6. (session 20, issue 44) the heterogeneous planned row again, with two fetch threads and the
#    tiers kept (the rerun of item 11 failed on a harness bug, fixed since): `HETERO_ARMS=
#    memory,tierfs,planned LINK=0 bash benchmarks/h200-next/issue44.sh` after `GPU_BENCH=0 make
#    gpu-test` has unpacked the bundle (or carry build/issue44.tar.xz: libtierfs.so and the CLI).
#    Target: >= 0.9 of the packed bound. About 250 s. Then items 3 and 4 of issue 44 (1, 2, 4
#    loop devices over /dev/shm; float16 rows) once they are built.
# 7. (session 21) Done: item 6 (benchmarks/h200-2026-12-02/README.md items 12-16). Next, in order:
#    a. issue 44 item 4, float16 rows on the IGBH-shaped row, three calls on one warm machine
#       (carry build/issue44.tar.xz): PHASE=prep, then PHASE=run ROUNDS=2, then PHASE=run
#       FIRST_ROUND=3 ROUNDS=1 of `bash benchmarks/h200-next/issue44_half.sh`;
#    b. issue 45's figure (carry the bundle; about 100 s): `PYTHONPATH=python:python/bench
#       TIERFS_LIB=build/libtierfs.so python3 -W ignore::UserWarning python/bench/embedding_bench.py
#       --device cuda --rows 4000000 --dim 64 --batch 1024 --fanout 10 --steps 30 --dir
#       /var/tmp/emb-bench --out $OUT/embedding_bench.json`;
#    c. issue 44 item 3's training rows over 2 and 4 devices (the script sets TIERFS_BIN now):
#       `NS="1 2 4" QDS=512 bash benchmarks/h200-next/devices.sh` (carry build/issue44.tar.xz and
#       build/probe/iobench).
# 8. (session 22) Done: item 7 (benchmarks/h200-2026-12-02/README.md items 17-23). Next, in order:
#    a. `GPU_BENCH=0 make gpu-test` on the final tree: its CUDA list now has test_embedding_tiers.py
#       (the embedding device tier's exactness on cuda:0), test_pyg_bidirectional.py and
#       test_embedding_kept.py, none GPU-run yet (carry the bundle and .whl; about 360 s);
#    b. issue 44 item 3 on the new default (IO stacks of each device): `NS="1 2 4" QDS=512 bash
#       benchmarks/h200-next/devices.sh` for the 1 / 2 / 4 device reads and training rows in one
#       call (carry the bundle and build/probe/iobench; about 300 s); target 0.8·N× one device;
#    c. issue 45's figure with the write path, incremental checkpoints and a device tier:
#       item 7b's command with `--rows 4000000` as before (add a gpu_cache arm if the bench has one).
# 9. (session 23) Done: items 8a and 8b (benchmarks/h200-2026-12-02/README.md items 24-25). Next:
#    a. issue 45's figure with the device tier (carry the bundle; about 200 s): unpack it (`tar -C
#       build -xJf build/gpu-bundle.tar.xz && make cuda`), set TIERFS_LIB=build/gpu/libtierfs.so*,
#       TIERFS_BIN=build/gpu/tierfs, TIERFS_CUDA_LIB=build/libtierfs_cuda.so, then item 7b's command
#       with `--arms memory,tierfs,tierfs-gpu` (the device tier's arm, --gpu-share 0.5);
#    b. issue 42's GPU sampler options once branch gpu-sampler-options (topology.HopDraw: per-node
#       seeds, weights, time lists; LogUnit) has its kernel and gpuTopology side: `GPU_BENCH=0 make
#       gpu-test` with a featurestore GPU test comparing disjoint / weighted / temporal samples
#       against the host sampler.
# Carry ["build/gpu-bundle.tar.xz", ".whl"] after `make gpu-bundle` (and build/old-a6d8f53.tar.xz for ab).
set -u
source benchmarks/h200x2-2026-11-26/common.sh
if [ "${1:-}" = ab ]; then
  mkdir -p /var/tmp/ab && ln -sfn /var/tmp/ds10m /var/tmp/ab/ds10000000  # common.sh made the dataset
  NODES=10000000 BENCH_DIR=/var/tmp/ab ROUNDS="${ROUNDS:-1 2 3}" timeout ${AB_SECONDS:-280} bash scripts/ab_homogeneous.sh build/old-a6d8f53.tar.xz $OUT/ab
  exit
fi
if [ "${1:-}" != plan ]; then
args="/var/tmp/ds10m --configs memory-gpu,tierfs-planned --planned-epoch full --models gcn --fanouts 25,10 --batch-sizes 1024 --batches 100 --max-seconds 8"
for d in 1 2 4; do
  timeout 150 python3 -m benchtrain $args --repeats 3 --depth $d --json $OUT/gcn-depth$d.json > $OUT/gcn-depth$d.txt 2>&1
  echo "== depth $d rc=$?"; grep -E "^(memory-gpu|tierfs-planned) +[0-9]" $OUT/gcn-depth$d.txt
  python3 - $OUT/gcn-depth$d.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["config"], {k: round(v, 2) for k, v in r["stage_ms_per_batch"].items()})
PY
done
if command -v nsys >/dev/null; then
  timeout 200 nsys profile -o /tmp/gcn-planned --trace=cuda,osrt --sample=none --force-overwrite=true \
    python3 -m benchtrain $args --repeats 1 --depth 4 > $OUT/nsys-run.txt 2>&1
  nsys stats --report cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum /tmp/gcn-planned.nsys-rep > $OUT/nsys-stats.txt 2>&1
  echo "nsys rc=$?"; head -60 $OUT/nsys-stats.txt
else
  echo "no nsys on this machine"
fi
fi
if [ "${1:-}" = plan ]; then
  bench plan-sage-b1024 230 --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4
fi
