#!/usr/bin/env bash
# GPU comparison (H100/H200): chute vs DALI mixed and CPU decoding, torchvision, Pillow DataLoader.
# usage: bench/run_gpu.sh DATA_DIR [OUT_DIR]   (8,192 images from make_dataset.py; DALI on PYTHONPATH)
# Writes OUT_DIR/gpu_{train,val}_DATE.{json,png} (default OUT_DIR: bench/results).
set -uo pipefail
data=$1; out=${2:-bench/results}; day=$(date +%F)
for preset in train val; do
  timeout 280 python3 -m chute bench --data "$data" --preset "$preset" --device gpu \
    --systems chute,dali,dali-cpu,tv-gpu,pil-loader,chute-cpu --batch-size 256 --threads 16 \
    --warmup 5 --iters 20 --reps 3 --json "$out/gpu_${preset}_${day}.json" \
    --png "$out/gpu_${preset}_${day}.png" 2>&1 | grep -v -i "nvtiff\|nvjpeg2k\|Note:"
done
