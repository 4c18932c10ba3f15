#!/usr/bin/env bash
# Session 21, issue 44 item 3: the Budget as an atomic count (gpuio) against d6e7efa's channel,
# reads over 4 loop devices, interleaved rounds. Carry build/ab2/{old,new}.tar.xz (libtierfs.so and
# the CLI of each) and build/probe/iobench. Writes $OUT/ab.txt. About 120 s.
set -u
for b in old new; do mkdir -p build/ab2/$b && tar -C build/ab2/$b -xJf build/ab2/$b.tar.xz; done
for k in 0 1 2 3; do
  umount /mnt/tfs$k 2>/dev/null; mkdir -p /mnt/tfs$k; truncate -s 4G /dev/shm/tfsdisk$k
  dev=$(losetup -f --show /dev/shm/tfsdisk$k) && mkfs.ext4 -q -F $dev && mount $dev /mnt/tfs$k || exit 1
done
build/ab2/new/tierfs synth --out /mnt/tfs0/g4 --nodes 4000000 --dim 128 --avg-degree 15 --seed 1 --force \
  --device-path /mnt/tfs0 --device-path /mnt/tfs1 --device-path /mnt/tfs2 --device-path /mnt/tfs3 > /dev/null || exit 1
for n in ${DEVS:-4 2 1}; do
  ds=/mnt/tfs0/g4; [ $n != 4 ] && { build/ab2/new/tierfs synth --out /mnt/tfs0/g$n --nodes 4000000 --dim 128 --avg-degree 15 --seed 1 --force $(for ((k=0;k<n;k++)); do echo --device-path /mnt/tfs$k; done) > /dev/null || exit 1; ds=/mnt/tfs0/g$n; }
  for r in ${ROUNDS:-1 2 3}; do for b in old new; do
    echo "-- $n devices round $r $b: $(build/ab2/$b/tierfs bench reads $ds --gathers 4,16 --batch 1000 --seconds 3 --qd 512 | tail -2 | awk '{printf "g%s %s reads/s %s us/read; ", $1, $2, $5}')"
  done; done
done 2>&1 | tee $OUT/ab.txt
for k in 0 1 2 3; do umount /mnt/tfs$k; done; losetup -D; rm -f /dev/shm/tfsdisk*
