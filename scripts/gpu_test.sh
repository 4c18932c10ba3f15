#!/usr/bin/env bash
# gpu_test.sh BUILD: the GPU tests, sanitizer runs and GPU benchmarks, on a GPU machine.
#
# Needs BUILD/libtierfs_cuda.so (make cuda) and the bundle of `make gpu-bundle` (test binaries,
# CLI, C library), which a machine without Go can receive from one with it. Writes logs and
# results to $OUT (or BUILD/gpu-results). Exits non-zero when a test or a sanitizer run fails;
# skips the benchmarks with GPU_BENCH=0.
set -uo pipefail
build=${1:-build}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ -f "$build/gpu-bundle.tar.xz" ] && [ "$build/gpu-bundle.tar.xz" -nt "$build/gpu" ]; then
  mkdir -p "$build" && tar -C "$build" -xJf "$build/gpu-bundle.tar.xz" && touch "$build/gpu"
fi
out=${OUT:-$build/gpu-results}
mkdir -p "$out"
export TIERFS_CUDA_LIB=$root/$build/libtierfs_cuda.so
failed=()

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"

# 1. Go tests (GPU tests run for real here; they skip where there is no GPU).
for t in "$build"/gpu/*.test; do
  name=$(basename "$t" .test)
  # In its package's directory, as go test runs it (tests read testdata/ and ../dataset/testdata/).
  pkgdir=${name//_//}
  [ -d "$pkgdir" ] || pkgdir=.
  t_abs=$(cd "$(dirname "$t")" && pwd)/$(basename "$t")
  if (cd "$pkgdir" && "$t_abs" -test.count=1 -test.v) >"$out/$name.log" 2>&1; then echo "PASS $name"; else echo "FAIL $name"; failed+=("$name"); fi
  grep -E "^(--- (FAIL|SKIP)|panic)|seed" "$out/$name.log" | head -20
  grep -cE "^--- PASS" "$out/$name.log" | sed "s/^/  passed: /"
done

# 2. compute-sanitizer: memcheck and racecheck over the kernels' tests.
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    for spec in "featurestore:TestGatherDeviceMatchesHost|TestGPUSamplingMatchesHost|TestGatherDeviceIDsOutOfRange|TestCloseDuringGPUSampling" "gpuio:TestDeviceCompletionMatchesHost|TestGPURingErrors"; do
      pkg=${spec%%:*}
      if compute-sanitizer --tool "$tool" --error-exitcode 3 "$build/gpu/$pkg.test" -test.count=1 -test.run "${spec#*:}" \
        >"$out/sanitizer-$tool-$pkg.log" 2>&1; then
        echo "PASS compute-sanitizer $tool $pkg: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool-$pkg.log" | tail -1)"
      else
        echo "FAIL compute-sanitizer $tool $pkg"; tail -30 "$out/sanitizer-$tool-$pkg.log"; failed+=("sanitizer-$tool-$pkg")
      fi
    done
  done
else
  echo "SKIP compute-sanitizer: not installed"
fi

# 3. Python: device gathers against the host gather, through the C ABI.
if PYTHONPATH=$root/python TIERFS_LIB=$root/$build/libtierfs.so python3 python/tests/test_gpu.py >"$out/python-gpu.log" 2>&1; then
  echo "PASS python gpu"; tail -5 "$out/python-gpu.log"
else
  echo "FAIL python gpu"; tail -30 "$out/python-gpu.log"; failed+=(python-gpu)
fi

# 3b. The Python suites that have CUDA cases (store gathers, PyG loaders), under pytest. The GPU
# machine has no pytest: carry wheels in .whl (see BENCHMARKS.md) and they are installed here.
if ! python3 -c "import pytest" 2>/dev/null && ls .whl/pytest-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
if python3 -c "import pytest" 2>/dev/null; then
  if (cd python/tests && PYTHONPATH=$root/python:${PYTHONPATH:-} TIERFS_LIB=$root/$build/libtierfs.so \
    python3 -m pytest -q -p no:cacheprovider test_gather.py test_gpu.py test_pyg.py test_sampler.py test_loader.py test_pipeline.py test_hetero.py test_pyg_hetero.py test_planned_hetero.py test_link.py test_embedding.py test_embedding_tiers.py test_embedding_kept.py test_pyg_bidirectional.py) \
    >"$out/python-pytest.log" 2>&1; then
    echo "PASS python pytest: $(tail -1 "$out/python-pytest.log")"
  else
    echo "FAIL python pytest"; tail -40 "$out/python-pytest.log"; failed+=(python-pytest)
  fi
else
  echo "SKIP python pytest: no pytest here"
fi

# 3c. Two GPUs or more: the distributed stores' scenarios over NCCL, one GPU a rank (the same
# tests CI runs over gloo), then one scenario under compute-sanitizer's memcheck (every rank).
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -ge 2 ] && python3 -c "import pytest" 2>/dev/null; then
  if (cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl PYTHONPATH=$root/python:${PYTHONPATH:-} TIERFS_LIB=$root/$build/libtierfs.so \
    TIERFS_CLI=$root/$build/tierfs python3 -m pytest -q -p no:cacheprovider test_distributed.py test_distributed_hetero.py test_distributed_place.py) >"$out/python-nccl.log" 2>&1; then
    echo "PASS python nccl ($ngpu GPUs): $(tail -1 "$out/python-nccl.log")"
  else
    echo "FAIL python nccl"; tail -40 "$out/python-nccl.log"; failed+=(python-nccl)
  fi
  if command -v compute-sanitizer >/dev/null; then
    if (cd python/tests && TIERFS_TEST_DIST_BACKEND=nccl PYTHONPATH=$root/python:${PYTHONPATH:-} TIERFS_LIB=$root/$build/libtierfs.so \
      TIERFS_CLI=$root/$build/tierfs timeout 400 compute-sanitizer --tool memcheck --report-api-errors no --target-processes all --error-exitcode 3 \
      python3 -m pytest -q -p no:cacheprovider test_distributed.py -k "exchange") >"$out/sanitizer-memcheck-nccl.log" 2>&1; then
      echo "PASS compute-sanitizer memcheck nccl: $(grep -E 'ERROR SUMMARY' "$out/sanitizer-memcheck-nccl.log" | tail -1)"
    else
      echo "FAIL compute-sanitizer memcheck nccl: its distinct reports (addresses masked), most frequent first:"
      grep -E '^========= ' "$out/sanitizer-memcheck-nccl.log" | sed -E 's/0x[0-9a-f]+/0x?/g; s/[0-9]+ bytes/N bytes/g' | sort | uniq -c | sort -rn | head -25
      failed+=(sanitizer-memcheck-nccl)
    fi
  fi
else
  echo "SKIP python nccl: $ngpu GPU(s) or no pytest"
fi

# 4. Benchmarks beside the roofline probes, in the same run.
if [ "${GPU_BENCH:-1}" != 0 ]; then
  ./scripts/gpu_bench.sh "$build" "$out" || failed+=(bench)
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-test: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-test: all passed"
