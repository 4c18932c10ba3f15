# sourced: unpack the bundle, build the CUDA shim, environment, the 10M dataset
# Run from the repository root on the GPU machine with OUT set, the bundle of `make gpu-bundle` carried as build/gpu-bundle.tar.xz.
root=$PWD
mkdir -p build && tar -C build -xJf build/gpu-bundle.tar.xz && touch build/gpu
make cuda >/dev/null 2>&1 || { echo "make cuda failed"; make cuda; exit 1; }
export TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so TIERFS_LIB=$root/build/libtierfs.so TIERFS_CLI=$root/build/tierfs PYTHONPATH=$root/python:$root/python/bench  # bench: benchtrain.py
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
[ -f /var/tmp/ds10m/manifest.json ] || build/tierfs synth --out /var/tmp/ds10m --nodes 10000000 --dim 128 --avg-degree 15 --seed 1 >/dev/null
ddp() {  # ddp NAME NPROC ARGS...: one run of the example, its figures in $OUT/NAME.json
  local name=$1 n=$2; shift 2
  echo "== $name"
  timeout 170 python3 -m torch.distributed.run --standalone --nproc_per_node=$n examples/train_pyg_ddp.py --data /var/tmp/ds10m \
    --epochs 1 --json $OUT/$name.json "$@" > /tmp/$name.log 2>&1
  grep -E "^(epoch|  +rank|[0-9] rank|placed|planned)" /tmp/$name.log | head -8
  # A failed run: its traceback and last lines (the filter above would cut them).
  [ -f $OUT/$name.json ] || { echo "-- $name failed or timed out; its log ends:"; grep -v "^W[0-9]" /tmp/$name.log | tail -40; }
}
bench() {  # bench NAME TIMEOUT ARGS...: the limit against replayed planned epochs, its figures in $OUT/NAME.json
  local name=$1 t=$2; shift 2
  timeout $t python3 -m benchtrain /var/tmp/ds10m --configs memory-gpu,tierfs-planned --repeats 3 --batches 60 --max-seconds 6 \
    --planned-epoch full --json $OUT/$name.json "$@" > $OUT/$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "planned|placed" $OUT/$name.txt | head -8; grep -E "^(memory-gpu|tierfs-planned) +[0-9]|over_limit|keeps up|later round" $OUT/$name.txt
}
