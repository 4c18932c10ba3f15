#!/usr/bin/env bash
# io_scale.sh TIERFS_BIN OUTDIR: does the IO engine scale with threads? `tierfs bench io` at
# 1,4,8,16 threads beside liburing's iobench (one process per thread), on four memory-backed
# loop devices and on the machine's disk (a file under /var/tmp). Run as root (losetup) on the
# machine to measure; needs no Go: TIERFS_BIN is the prebuilt CLI (build/tierfs of the GPU
# bundle), iobench is found beside it (gpu/iobench) unless IOBENCH names it.
#
# Environment (defaults): THREADS (1,4,8,16), QD (128), RUN_SECONDS (5 per thread count and program),
# DEV_GB (4, per loop device, in /dev/shm), DISK_GB (8), DISK_DIR (/var/tmp), SQPOLL (0; 1 adds a
# --sqpoll run on the loop devices), NO_LOOP (0; 1 skips losetup and reads /dev/shm files).
# Writes OUTDIR/env.txt, io-loop.{txt,json}, io-disk.{txt,json} (and io-loop-sqpoll.*).
# Removes its loop devices and files on exit, also on failure or Ctrl-C.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 TIERFS_BIN OUTDIR" >&2
  exit 2
fi
bin=$(realpath "$1")
out=$2
threads=${THREADS:-1,4,8,16}
qd=${QD:-128}
secs=${RUN_SECONDS:-5} # not SECONDS: bash's own
devgb=${DEV_GB:-4}
diskgb=${DISK_GB:-8}
diskdir=${DISK_DIR:-/var/tmp}
iobench=${IOBENCH:-$(dirname "$bin")/gpu/iobench}
mkdir -p "$out"
[ -x "$bin" ] || { echo "io_scale: $bin is not executable" >&2; exit 2; }
ib=()
if [ -x "$iobench" ]; then
  ib=(--iobench "$iobench")
else
  echo "io_scale: no iobench at $iobench (set IOBENCH): the engine runs alone, no ratio" >&2
fi

shm=() loops=() disk=""
cleanup() {
  for d in "${loops[@]}"; do losetup -d "$d" 2>/dev/null || echo "io_scale: losetup -d $d failed" >&2; done
  rm -f "${shm[@]}"
  [ -n "$disk" ] && rm -f "$disk"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; echo "kernel: $(uname -r)"; echo "cpus: $(nproc)"
  grep -m1 "model name" /proc/cpuinfo || true
  free -g | head -2
  echo "io_uring_disabled: $(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo n/a)"
  echo "tierfs: $bin"; echo "iobench: ${ib[1]:-none}"
  echo "threads $threads, QD $qd, $secs s per run"
} >"$out/env.txt"

# Four memory-backed devices: files in /dev/shm behind loop devices with direct IO on, filled
# once (a hole reads as zeros without touching memory).
for i in 0 1 2 3; do
  f=/dev/shm/tierfs-io-scale.$$.$i
  truncate -s "${devgb}G" "$f"
  shm+=("$f")
done
targets=()
how="loop devices (losetup --direct-io=on) over /dev/shm files"
if [ "${NO_LOOP:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
  for f in "${shm[@]}"; do
    if d=$(losetup --direct-io=on -f --show "$f" 2>>"$out/env.txt"); then
      loops+=("$d"); targets+=("$d")
    else
      break
    fi
  done
fi
if [ ${#loops[@]} -ne 4 ]; then
  for d in "${loops[@]}"; do losetup -d "$d" 2>/dev/null || true; done
  loops=() targets=("${shm[@]}")
  how="plain /dev/shm files (losetup failed or was skipped: not root, no loop devices, or NO_LOOP=1)"
  echo "io_scale: FALLBACK: reading $how; tmpfs has no block layer, so this is not the loop-device figure" | tee -a "$out/env.txt" >&2
fi
echo "memory devices: $how: ${targets[*]}" | tee -a "$out/env.txt"
for d in "${loops[@]}"; do
  n=$(basename "$d")
  echo "$d: dio $(cat /sys/block/$n/loop/dio 2>/dev/null), nr_requests $(cat /sys/block/$n/queue/nr_requests 2>/dev/null), hw queues $(ls /sys/block/$n/mq 2>/dev/null | wc -l)" >>"$out/env.txt"
done
for t in "${targets[@]}"; do
  dd if=/dev/zero of="$t" bs=4M count=$((devgb * 256)) oflag=direct conv=notrunc status=none &
done
wait

files=$(IFS=,; echo "${targets[*]}")
run() { # NAME FILES [FLAGS]
  local name=$1 files=$2
  shift 2
  echo "== $name: $files"
  "$bin" bench io --files "$files" --threads "$threads" --qd "$qd" --seconds "$secs" "${ib[@]}" --json "$out/$name.json" "$@" | tee "$out/$name.txt"
}
run io-loop "$files"
if [ "${SQPOLL:-0}" = 1 ]; then
  run io-loop-sqpoll "$files" --sqpoll
fi

# The machine's disk: one file, written once with O_DIRECT so every block is on the device.
disk=$diskdir/tierfs-io-scale.$$.bin
if dd if=/dev/zero of="$disk" bs=4M count=$((diskgb * 256)) oflag=direct status=none; then
  run io-disk "$disk"
else
  echo "io_scale: could not write ${diskgb} GiB to $disk: no disk run" >&2
fi
echo "results in $out"
