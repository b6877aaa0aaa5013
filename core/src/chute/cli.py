"""The ``chute`` command: ``chute demo``."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _demo(args: argparse.Namespace) -> int:
    from chute import fn, pipeline_def

    rng = np.random.default_rng(0)
    images = [
        rng.integers(0, 256, (rng.integers(200, 400), rng.integers(200, 400), 3), np.uint8)
        for _ in range(64)
    ]

    @pipeline_def(batch_size=args.batch_size, num_threads=args.threads, seed=0)
    def pipe():
        x = fn.external_source(
            source=lambda info: images[info.idx_in_epoch % len(images)], batch=False, layout="HWC"
        )
        scale = fn.random.uniform(range=(0.5, 1.5))
        return fn.cast(fn.math.clamp(x * scale, 0, 255), dtype=np.uint8)

    p = pipe()
    p.run()
    start = time.perf_counter()
    n = 0
    for _ in range(args.iterations):
        (out,) = p.run()
        n += len(out)
    elapsed = time.perf_counter() - start
    p.close()
    print(
        f"chute demo: {n} images in {elapsed:.2f} s = {n / elapsed:.0f} img/s "
        f"(batch {args.batch_size}, {args.threads} threads, CPU)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chute", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a pipeline on generated images and print img/s")
    demo.add_argument("--batch-size", type=int, default=32)
    demo.add_argument("--threads", type=int, default=2)
    demo.add_argument("--iterations", type=int, default=20)
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
