#!/usr/bin/env bash
# CPU comparison on this machine: chute vs DALI's CPU-only pipeline vs Pillow threads.
# usage: bench/run_cpu.sh DATA_DIR [THREADS]   (DALI: pip install nvidia-dali-cuda120)
set -euo pipefail
data=$1; threads=${2:-$(nproc)}; day=$(date +%F)
for preset in decode random-crop train; do
  chute bench --data "$data" --preset "$preset" --device cpu --systems chute,dali,pil-threads \
    --threads "$threads" --batch-size 64 --warmup 2 --iters 12 --reps 5 \
    --json "bench/results/cpu_${preset}_${day}.json"
done
