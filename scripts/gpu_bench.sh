#!/usr/bin/env bash
# gpu_bench.sh BUILD OUT: GPU benchmarks of tierfs beside the roofline probes (gather.cu,
# iobench.c), in the same run; results in OUT. See BENCHMARKS.md.
set -uo pipefail
build=${1:-build}
out=${2:-$build/gpu-results}
work=${BENCH_DIR:-/tmp/tierfs-gpu-bench}
mkdir -p "$out" "$work"
roof=$build/gpu/roofline
if [ -f "$roof/gather.cu" ]; then
  nvcc -O3 -arch=sm_90 -o "$work/gather" "$roof/gather.cu" && "$work/gather" | tee "$out/roofline-gather.txt"
fi
"$build/tierfs" synth --force --out "$work/ds512" --nodes 2000000 --dim 128 --avg-degree 10 >/dev/null
"$build/tierfs" synth --force --out "$work/ds4k" --nodes 250000 --dim 1024 --avg-degree 10 >/dev/null
"$build/tierfs" bench gpu "$work/ds512" --kernels --json "$out/bench-gpu-512.json" | tee "$out/bench-gpu-512.txt"
"$build/tierfs" bench gpu "$work/ds4k" --batch 65536 --json "$out/bench-gpu-4k.json" | tee "$out/bench-gpu-4k.txt"
# The same disk through the host path (CPU scatter) and raw gpuio reads, for the SSD ratio.
"$build/tierfs" bench gather "$work/ds4k" --dist uniform --batch 65536 --batches 4 --qd 128 | tee "$out/bench-gather-4k-host.txt"
if [ -x "$build/gpu/iobench" ]; then
  "$build/gpu/iobench" "$work/iobench.dat" 1024 1 1 1 write >/dev/null
  echo "iobench 4 KiB QD128:" | tee "$out/roofline-iobench.txt"
  "$build/gpu/iobench" "$work/iobench.dat" 1024 4096 128 5 | tee -a "$out/roofline-iobench.txt"
fi
if [ -f python/bench/gpu_mixed.py ]; then
  PYTHONPATH=python TIERFS_LIB=$build/libtierfs.so python3 python/bench/gpu_mixed.py "$work/ds512" | tee "$out/bench-mixed-torch.txt"
fi
# The tier redesign's figures: device gather of GPU-tier rows vs torch.index_select, and GraphSAGE
# with every row cached vs features in a CUDA tensor (10M nodes x 128 float32).
if [ -f python/bench/tier_bench.py ] && [ "${TIER_BENCH:-1}" != 0 ]; then
  "$build/tierfs" synth --force --out "$work/ds10m" --nodes "${TIER_BENCH_NODES:-10000000}" --dim 128 --avg-degree 15 >/dev/null
  PYTHONPATH=python TIERFS_LIB=$build/libtierfs.so python3 python/bench/tier_bench.py "$work/ds10m" --json "$out/tier-bench.json" | tee "$out/tier-bench.txt"
fi
# The advisor's model against the measured loader on this machine too (host path).
OUT="$out/advise" REPEAT=2 ./scripts/advise_validate.sh "$build/tierfs" "$work/advise" 2>&1 | tail -12 | tee "$out/advise-validate.txt"
