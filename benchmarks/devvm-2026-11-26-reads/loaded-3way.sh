#!/bin/sh
# interleaved: before (old engine), shared (gpuio.Shared), budget (gpuio.Budget)
for r in 1 2 3 4 5 6; do
  for b in before shared budget; do
    bin=/tmp/tfs-$b; [ $b = shared ] && bin=/tmp/tfs-after
    $bin bench reads /var/var/tmp/h27ds --gathers 1,4,8 --batch 1000 --seconds 1.5 --max-concurrent-io 16 2>&1 | tail -3 | sed "s/^/$b r$r /"
  done
done
