#!/usr/bin/env bash
# Prepared 2026-11-29 (session 15) for the next single-H200 session: issue 27's planning rows not
# re-measured since windows hold each row once (run 14: a later round of 4 epochs at 0.785 of
# training at [25,10], 0.436 at [15,10,5]). gcn [15,10,5] K=2 was 0.73 and sage [25,10] b8000 K=2
# 1.27 before; since run 14 batches' packed rows are found by a bit per node (dev VM 4.8-5.6 s
# to 4.3 s for 4 epochs of 2M nodes) and a round's files are removed on the planner thread. The
# bench output now splits a later round's time: the call (the core's seconds inside it) and the
# removal of its files (2.7-6 s unexplained over the core on the GPU host). Then, in a second
# call, the full GPU tests: GPU_BENCH=0 ./scripts/gpu_test.sh build (>300 s).
# Carry ["build/gpu-bundle.tar.xz", ".whl"] after `make gpu-bundle`; about 450 s.
set -u
source benchmarks/h200x2-2026-11-26/common.sh
bench sage-b1024 230 --models sage --fanouts 25,10/15,10,5 --batch-sizes 1024 --replan-epochs 4
bench gcn-15105-b1024 120 --models gcn --fanouts 15,10,5 --batch-sizes 1024 --replan-epochs 2
bench sage-2510-b8000 90 --models sage --fanouts 25,10 --batch-sizes 8000 --replan-epochs 2
