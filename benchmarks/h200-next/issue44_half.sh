#!/usr/bin/env bash
# Session 21, issue 44 item 4 on one H200: the IGBH-shaped heterogeneous row (benchmarks/specs/
# igbh-bench.json, python/bench/hetero_train.py's memory, on-demand and planned arms, as
# issue44.sh) with float32 features against the same values stored at float16 — synth --dtype
# float16 of the same spec and seed holds exactly synth's float32 values rounded to nearest even,
# as `tierfs ingest --store-dtype float16` would store them (ingest's TestSynthDTypeIsStoreDType).
# Same memory in bytes for both: the float32 run at GPU 10% + host 20% of its feature bytes, the
# float16 run at 20% + 40% of its (half) bytes, so its tiers hold twice the rows. The model casts
# the rows to float32 on the GPU (hetero_train.py's Model.forward). ROUNDS rounds, each one
# float32 run then one float16 run (one repeat each), so the medians are of interleaved repeats;
# the runs stay in /var/tmp/half-results while the machine is warm, so rounds split over calls
# (FIRST_ROUND) are summed up by the last. Carry build/issue44.tar.xz as for issue44.sh (the
# setup lines are issue44.sh's).
#
#   PHASE=prep bash benchmarks/h200-next/issue44_half.sh   # synth both (~16 + 8 GB), bench disk
#   PHASE=run  bash benchmarks/h200-next/issue44_half.sh   # ROUNDS (3) x 2 runs, then the summary
#   PHASE=run ROUNDS=2 ...; PHASE=run FIRST_ROUND=3 ROUNDS=1 ...   # the same over two calls (600 s each)
#   bash benchmarks/h200-next/issue44_half.sh              # both, where one call's 600 s allow it
#
# Writes $OUT/{synth-*.txt,disk.{txt,json},hetero-{float32,float16}-R.{txt,json},bytes.txt,half.txt}.
set -u
root=$PWD
PHASE=${PHASE:-all}
[ -f build/issue44.tar.xz ] && mkdir -p build/gpu && tar -C build/gpu -xJf build/issue44.tar.xz
make cuda >/dev/null 2>&1 || { make cuda; exit 1; }
export TIERFS_CUDA_LIB=$root/build/libtierfs_cuda.so TIERFS_LIB=$(ls $root/build/gpu/libtierfs.so* $root/build/libtierfs.so 2>/dev/null | head -1)
cli=$(ls $root/build/gpu/tierfs $root/build/tierfs 2>/dev/null | head -1)
export PYTHONPATH=$root/python
echo "lib $TIERFS_LIB cli $cli phase $PHASE"
if [ "$PHASE" != run ]; then
  t=$(date +%s)
  python3 - <<'PY'
import json
spec = json.load(open("benchmarks/specs/igbh-bench.json"))
for nt in spec["node_types"]:
    nt["dtype"] = "float16"
json.dump(spec, open("/var/tmp/igbh-float16.json", "w"))
PY
  [ -f /var/tmp/igbh/manifest.json ] || $cli synth --spec benchmarks/specs/igbh-bench.json --out /var/tmp/igbh > $OUT/synth-float32.txt 2>&1
  [ -f /var/tmp/igbh-float16/manifest.json ] || $cli synth --spec /var/tmp/igbh-float16.json --out /var/tmp/igbh-float16 > $OUT/synth-float16.txt 2>&1
  echo "synth $(( $(date +%s) - t )) s"; df -h /var/tmp | tail -1; du -sh /var/tmp/igbh /var/tmp/igbh-float16
  $cli bench disk /var/tmp/igbh --json /var/tmp/igbh-disk.json > $OUT/disk.txt 2>&1; cp /var/tmp/igbh-disk.json $OUT/disk.json; tail -4 $OUT/disk.txt
fi
[ "$PHASE" = prep ] && exit 0
bps=$(python3 -c "import json; d=json.load(open('/var/tmp/igbh-disk.json'))['probe']; print(max(p['mb_per_s'] for p in d['points']) * 1e6)")
echo "disk bytes/s for the bound: $bps"
res=/var/tmp/half-results; mkdir -p $res  # every call's runs, for a summary over calls on one warm machine
first=${FIRST_ROUND:-1}
for r in $(seq $first $(( first + ${ROUNDS:-3} - 1 ))); do
  for dt in float32 float16; do
    if [ $dt = float32 ]; then ds=/var/tmp/igbh gpu=0.1 host=0.2; else ds=/var/tmp/igbh-float16 gpu=0.2 host=0.4; fi
    rm -rf /var/tmp/plan-h; mkdir -p /var/tmp/plan-h
    timeout ${HETERO_SECONDS:-150} python3 python/bench/hetero_train.py $ds --arms ${HETERO_ARMS:-memory,tierfs,planned} --fanouts 10,5 --batch 1024 \
      --batches 20 --warmup 4 --repeat 1 --drop-caches --disk-bps $bps --plan-dir /var/tmp/plan-h --gpu-frac $gpu --host-frac $host \
      --fetch-threads ${FETCH_THREADS:-2} --out $res/hetero-$dt-$r.json > $res/hetero-$dt-$r.txt 2>&1
    echo "round $r $dt rc=$?"; grep -E "^run|   (tierfs|planned):" $res/hetero-$dt-$r.txt | head -4
  done
done
rm -rf /var/tmp/plan-h
cp $res/hetero-* $OUT/
# reads and bytes a batch without a model (the same batches through both, host tier 20% of the float32 bytes)
timeout ${BYTES_SECONDS:-120} python3 benchmarks/devvm-2026-12-02-half/hetero_bytes.py /var/tmp/igbh /var/tmp/igbh-float16 > $OUT/bytes.txt 2>&1; tail -3 $OUT/bytes.txt
python3 - "$OUT" <<'PY' | tee $OUT/half.txt
import glob, json, statistics, sys
out = sys.argv[1]
runs = {dt: [json.load(open(p)) for p in sorted(glob.glob(f"{out}/hetero-{dt}-*.json"))] for dt in ("float32", "float16")}
mem32 = statistics.median(r["runs"][0]["memory"] for r in runs["float32"]) if runs["float32"] else None
print("| features | arm | seeds/s (median) | of in-memory float32 | IO reads/batch | IO MB/batch | packed MB/batch | bound seeds/s |")
print("|---|---|---|---|---|---|---|---|")
for dt, rs in runs.items():
    if not rs:
        continue
    for arm in rs[0]["arms"]:
        v = statistics.median(r["runs"][0][arm] for r in rs)
        rep = [r["runs"][0].get(arm + "_report") or {} for r in rs]
        med = lambda k: statistics.median(x[k] for x in rep) if rep and all(k in x for x in rep) else None  # noqa: E731
        f = lambda v, s=1.0, p=0: "—" if v is None else f"{v / s:,.{p}f}"  # noqa: E731
        print(f"| {dt} (GPU {rs[0]['gpu_cache'] / 2**30:.1f} GiB + host {rs[0]['host_cache'] / 2**30:.1f} GiB) | {arm} | {v:,.0f} | "
              f"{f(v / mem32 if mem32 else None, 1, 3)} | {f(med('io_reads_per_batch'))} | {f(med('io_bytes_per_batch'), 1e6, 1)} | "
              f"{f(med('packed_bytes_per_batch'), 1e6, 1)} | {f(med('disk_bound_seeds_per_s'))} |")
PY
