#!/usr/bin/env bash
# CPU comparison on this machine: chute vs DALI's CPU-only pipeline vs Pillow threads.
# usage: bench/run_cpu.sh DATA_DIR [THREADS]   (DALI: pip install nvidia-dali-cuda120)
# Each round starts every system afresh (4 warm-up batches, then 30 timed): steady state,
# as an epoch sees it, rather than start-up (memory pools, threads).
set -euo pipefail
data=$1; threads=${2:-$(nproc)}; day=$(date +%F)
for preset in decode random-crop train; do
  chute bench --data "$data" --preset "$preset" --device cpu --systems chute,dali,pil-threads \
    --threads "$threads" --batch-size 64 --warmup 4 --iters 30 --reps 5 \
    --json "bench/results/cpu_${preset}_${day}.json"
done
