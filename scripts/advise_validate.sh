#!/usr/bin/env bash
# Validation of `tierfs advise` on this machine (issue 5): the model's predicted seeds/s against
# the measured seeds/s of the loader loop (sample, then gather, one batch after another, as
# tierfs.Loader's background thread runs them) for several host cache sizes.
#
#   scripts/advise_validate.sh [TIERFS_BIN] [DATASET_DIR]
#
# For each cache size, `tierfs advise --measure --check --json` probes the disk (random reads at
# the store's queue depth, QD-1 latency) and the host memory path, counts what each tier serves
# per batch over BATCHES batches, predicts seeds/s for the SSDs the dataset sits on now, and then
# times BATCHES fresh batches of the real sample+gather loop. Each cache size runs REPEAT times
# (the machine may be shared: neighbours' load moves single runs); the script exits non-zero when
# the median ratio predicted/measured of a cache size is off by more than TOL.
#
# Environment: NODES (200000), DIM (128), BATCH (1024), BATCHES (50), FANOUTS (10,5),
# CACHES ("0 16MiB 48MiB 128MiB"), REPEAT (3), TOL (0.15), OUT (where the JSON reports go).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:-$ROOT/build/tierfs}"
DIR="${2:-$ROOT/build/advise-validate}"
NODES="${NODES:-200000}"
DIM="${DIM:-128}"
BATCH="${BATCH:-1024}"
BATCHES="${BATCHES:-50}"
FANOUTS="${FANOUTS:-10,5}"
CACHES="${CACHES:-0 16MiB 48MiB 128MiB}"
TOL="${TOL:-0.15}"
REPEAT="${REPEAT:-3}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

if [[ ! -x "$BIN" ]]; then
  echo "advise_validate: building $BIN"
  (cd "$ROOT" && "${GO:-go}" build -o "$BIN" ./cmd/tierfs)
fi
if [[ ! -f "$DIR/manifest.json" ]]; then
  echo "advise_validate: tierfs synth --nodes $NODES --dim $DIM -> $DIR"
  "$BIN" synth --nodes "$NODES" --avg-degree 10 --dim "$DIM" --seed 1 --out "$DIR" >/dev/null
fi

files=()
for k in $(seq 1 "$REPEAT"); do
  for c in $CACHES; do
    f="$OUT/advise-$c-$k.json"
    "$BIN" advise "$DIR" --host-cache "$c" --fanouts "$FANOUTS" --batch-size "$BATCH" --batches "$BATCHES" \
      --ssd-price 150 --machine-price 3000 --measure --check --json >"$f"
    files+=("$c=$f")
  done
done

python3 - "$TOL" "${files[@]}" <<'EOF'
import json, statistics, sys
tol = float(sys.argv[1])
ratios = {}
print(f"{'host cache':>10} {'host hits':>9} {'blocks/batch':>12} {'IOPS':>8} {'link GB/s':>9} "
      f"{'T_sample':>8} {'T_ssd':>7} {'T_link':>7} {'bottleneck':>10} {'predicted':>10} {'measured':>10} {'ratio':>6}")
for arg in sys.argv[2:]:
    cache, path = arg.split("=", 1)
    r = json.load(open(path))
    w, m, cur, chk = r["workload"], r["machine"], r["current"], r["check"]
    host = next((t for t in w["tiers"] if t["tier"] == "host"), {"rows": 0})
    ratios.setdefault(cache, []).append(chk["ratio"])
    print(f"{cache:>10} {100 * host['rows'] / w['rows']:8.1f}% {w['ssd_blocks']:12.0f} {m['ssd_iops']:8.0f} "
          f"{m['link_bytes_per_s'] / 1e9:9.2f} {1e3 * cur['t_sample_s']:6.2f}ms {1e3 * cur['t_ssd_s']:5.2f}ms "
          f"{1e3 * cur['t_pcie_s']:5.2f}ms {cur['bottleneck']:>10} {chk['predicted_seeds_per_s']:10.0f} "
          f"{chk['measured_seeds_per_s']:10.0f} {chk['ratio']:6.2f}")
print(f"mode {r['machine']['mode']}; {r['formula']}")
bad = 0
for cache, rs in ratios.items():
    med = statistics.median(rs)
    ok = abs(med - 1) <= tol
    bad += not ok
    print(f"host cache {cache:>7}: median ratio {med:.2f} of {len(rs)} run(s) {'ok' if ok else 'OFF by more than %d%%' % (100 * tol)}")
sys.exit(1 if bad else 0)
EOF
