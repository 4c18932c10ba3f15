#!/usr/bin/env bash
# Session 11, device call 1 on 2 GPUs: NCCL tests + sanitizer (summarised), exchange profile, baselines.
set -u
root=$PWD
mkdir -p build && tar -C build -xJf build/gpu-bundle.tar.xz && touch build/gpu
make cuda >/dev/null 2>&1 || { echo "make cuda failed"; make cuda; exit 1; }
export TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so TIERFS_LIB=$root/build/libtierfs.so TIERFS_CLI=$root/build/tierfs PYTHONPATH=$root/python
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $OUT/gpu.txt
nvidia-smi topo -m > $OUT/topo.txt 2>&1
(time build/tierfs synth --out /var/tmp/ds10m --nodes 10000000 --dim 128 --avg-degree 15 --seed 1 >/dev/null) 2>&1 | grep real &
# NCCL tests
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 200 python3 -m pytest -q -p no:cacheprovider test_distributed.py test_distributed_hetero.py) > $OUT/python-nccl.log 2>&1
echo "nccl tests rc=$?: $(tail -1 $OUT/python-nccl.log)"
# sanitizer over one NCCL scenario, summarised
(cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl timeout 240 compute-sanitizer --tool memcheck --target-processes all --error-exitcode 3 \
   python3 -m pytest -q -p no:cacheprovider test_distributed.py -k "exchange") > /tmp/san.log 2>&1
echo "sanitizer rc=$?"
grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -5
grep -E '^========= ' /tmp/san.log | sed -E 's/0x[0-9a-f]+/0x?/g; s/[0-9]+ bytes/N bytes/g' | sort | uniq -c | sort -rn | head -30 > $OUT/sanitizer-summary.txt
head -c 60000 /tmp/san.log > $OUT/sanitizer-head.log
cat $OUT/sanitizer-summary.txt | head -30
wait
# exchange profile: every row cached over two GPUs (2.7 GB each), and disk-bound
for cfg in "2700MB 256MB" "512MB 1GB"; do
  set -- $cfg
  for n in 1 2; do
    timeout 150 python3 -m torch.distributed.run --standalone --nproc_per_node=$n scripts/ddp_exchange_profile.py /var/tmp/ds10m \
      --gpu-cache $1 --host-cache $2 --batches 40 --out $OUT 2>&1 | grep -v OMP_NUM | grep -v '^\*\*\*' | tail -3
  done
done
# the example, every row cached, 1 and 2 GPUs
for n in 1 2; do
  timeout 150 python3 -m torch.distributed.run --standalone --nproc_per_node=$n examples/train_pyg_ddp.py --data /var/tmp/ds10m \
    --gpu-cache 2700MB --host-cache 256MB --cache-mode shared --epochs 1 --json $OUT/ddp-$n-shared-2700MB.json 2>&1 | grep -v OMP_NUM | grep -v '^\*\*\*' | tail -4
done
