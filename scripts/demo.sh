#!/usr/bin/env bash
# The main job on the built-in default dataset: make a synthetic power-law graph, inspect and
# verify it, gather and sample through the store, and benchmark gather per tier.
# Usage: scripts/demo.sh TIERFS_BINARY DATASET_DIR   (NODES, DIM override the size)
set -euo pipefail
tierfs=${1:?tierfs binary}
dir=${2:?dataset directory}
nodes=${NODES:-1000000}
dim=${DIM:-128}
out=$(dirname "$dir")/demo-out
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "synth: $nodes nodes, average in-degree 10, $dim float32 features, 16 classes"
if [ -f "$dir/manifest.json" ] && "$tierfs" info "$dir" | grep -q "^nodes *$nodes\$"; then
  echo "(reusing $dir)"
else
  "$tierfs" synth --nodes "$nodes" --avg-degree 10 --dim "$dim" --classes 16 --seed 1 --out "$dir" --force
fi
step "info"
"$tierfs" info "$dir"
step "verify (every block against its xxhash64)"
"$tierfs" verify "$dir"
step "gather the test split's rows with a 64 MB host cache"
"$tierfs" gather "$dir" --ids split:test --out "$out/test_features.npy" --host-cache 64MB
ls -l "$out/test_features.npy"
step "sample 2-hop [25, 10] neighborhoods of the train split"
"$tierfs" sample "$dir" --seeds split:train --fanouts 25,10 --seed 1 --out "$out/sample"
step "bench gather: ssd tier, mixed and raw io_uring (one run each); host tier vs in-memory reference (5 alternating rounds)"
"$tierfs" bench gather "$dir" --batches 50 --json "$out/bench.json"
echo
echo "README.md (\"Figures\") quotes these ratios as this demo printed them on the 2-core dev VM; CPU and"
echo "disk timings swing with what else the machine runs (python/tests/test_readme_demo.py checks them)."
echo
echo "demo done: dataset in $dir, outputs in $out"
