#!/usr/bin/env bash
# GPU comparison (H100/H200): chute vs DALI mixed and CPU decoding, torchvision, Pillow DataLoader.
# usage: bench/run_gpu.sh DATA_DIR   (8,192 images from make_dataset.py; DALI on PYTHONPATH)
set -euo pipefail
data=$1; day=$(date +%F)
for preset in train val; do
  chute bench --data "$data" --preset "$preset" --device gpu \
    --systems chute,dali,dali-cpu,tv-gpu,pil-loader,chute-cpu --batch-size 256 --threads 16 \
    --warmup 5 --iters 20 --reps 3 --json "bench/results/gpu_${preset}_${day}.json" \
    --png "bench/results/gpu_${preset}_${day}.png"
done
