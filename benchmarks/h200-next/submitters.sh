#!/usr/bin/env bash
# Session 22, issue 44 item 3: is the 4-device shortfall the loop devices' single queue under many
# submitting threads? On the GPU machine (root), four loop devices over /dev/shm as devices.sh.
# (a) iobench on ONE device as 1, 4 and 16 processes sharing QD 512: if a loop device serves fewer
#     reads with more submitters, more submitters per device is what costs;
# (b) tierfs bench reads over 4 devices with 4 and 16 IO stacks (--max-concurrent-io), 4 and 16
#     gathers. Carry build/probe (iobench and a stripped tierfs CLI). Writes $OUT/sub.txt. ~120 s.
set -u
out=$OUT/sub.txt; cli=build/probe/tierfs; iob=build/probe/iobench
for k in 0 1 2 3; do
  mkdir -p /mnt/tfs$k; truncate -s 4G /dev/shm/tfsdisk$k
  dev=$(losetup -f --show /dev/shm/tfsdisk$k) && mkfs.ext4 -q -F $dev && mount $dev /mnt/tfs$k || { echo "loop $k failed"; exit 1; }
done
paths=(); for k in 0 1 2 3; do paths+=(--device-path /mnt/tfs$k); done
$cli synth --out /mnt/tfs0/g4 --nodes 4000000 --dim 128 --avg-degree 15 --seed 1 --force "${paths[@]}" > /dev/null 2>&1 || { echo "synth failed"; exit 1; }
f=$(ls -S /mnt/tfs0/*.bin | head -1); echo "one device's file: $f" | tee $out
for p in 1 4 16; do
  for ((i=0;i<p;i++)); do $iob $f 400 4096 $((512 / p)) 3 > /tmp/iob$i.txt 2>&1 & done; wait
  echo "iobench one device, $p processes x QD $((512 / p)): $(cat /tmp/iob*.txt | awk '{for(i=1;i<=NF;i++) if($(i+1)=="IOPS,") s+=$i} END {printf "%.0f IOPS total", s}')" | tee -a $out
  rm -f /tmp/iob*.txt
done
for s in 4 16; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  echo "-- tierfs 4 devices, $s IO stacks" | tee -a $out
  $cli bench reads /mnt/tfs0/g4 --gathers 4,16 --batch 1000 --seconds 3 --qd 512 --max-concurrent-io $s 2>&1 | tail -3 | tee -a $out
done
for k in 0 1 2 3; do umount /mnt/tfs$k; done; losetup -D; rm -f /dev/shm/tfsdisk*
