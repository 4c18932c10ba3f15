#!/bin/sh
# before: 017fbed (a stack per gather, each QD 128); after: HEAD (the stacks share a budget of 128)
for r in 1 2 3 4 5 6; do
  for b in before after; do
    /tmp/tfs-$b bench reads /var/var/tmp/h27ds --gathers 1,2,4,8 --batch 1000 --seconds 1.5 --max-concurrent-io 16 2>&1 | tail -4 | sed "s/^/$b r$r /"
  done
done
