"""The RandAugment stage alone on the CPU: decoded 224x224 photos -> rand_augment(n=2, m=9).

No decoding or resizing in the timed loop (bench/rand_augment.py times the whole training
pipeline): an external_source feeds the same decoded photos, so the number is the
augmentations' cost. Prints wall img/s and the process's CPU milliseconds per image (the
steadier figure on a shared machine).

Usage: PYTHONPATH=core/src python bench/rand_augment_stage.py DATA_DIR [THREADS] [BATCHES]
       [OPENCV_THREADS]
DATA_DIR holds JPEGs in class subfolders (e.g. chute.tools.sample_data.make_imagenet_like).
"""

from __future__ import annotations

import glob
import sys
import time

import cv2

from chute import fn, pipeline_def
from chute.auto_aug import rand_augment

BATCH = 32


def main() -> None:
    root = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    if len(sys.argv) > 4 and int(sys.argv[4]) >= 0:
        cv2.setNumThreads(int(sys.argv[4]))
    files = sorted(glob.glob(f"{root}/*/*"))[:64]
    photos = [cv2.resize(cv2.imread(f)[..., ::-1], (224, 224)).copy() for f in files]
    step = [0]

    def next_batch() -> list:
        step[0] += 1
        return [photos[(step[0] * 7 + j) % len(photos)] for j in range(BATCH)]

    @pipeline_def(
        batch_size=BATCH, num_threads=threads, device_id=None, seed=0, enable_conditionals=True
    )
    def pipe():
        images = fn.external_source(source=next_batch, layout="HWC")
        return rand_augment.rand_augment(images, n=2, m=9)

    p = pipe()
    p.build()
    for _ in range(3):
        p.run()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        p.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{batches * BATCH / wall:.0f} img/s  cpu {cpu / batches / BATCH * 1e3:.3f} ms/img")


if __name__ == "__main__":
    main()
