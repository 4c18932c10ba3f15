#!/bin/sh
uptime
for r in 1 2 3 4 5 6; do
  for b in before after; do
    /tmp/tfs-$b bench reads /var/var/tmp/h27ds --gathers 4,8,16 --batch 1000 --seconds 1.5 --max-concurrent-io 16 2>&1 | tail -3 | sed "s/^/$b r$r /"
  done
done
uptime
