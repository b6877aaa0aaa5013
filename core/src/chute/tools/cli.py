"""The ``chute`` command: ``chute demo``, ``chute bench``, ``chute check``."""

from __future__ import annotations

import argparse
import os
import sys
import time

DEFAULT_DATA = os.path.join(os.path.expanduser("~"), ".cache", "chute", "sample-imagenet")
FRAMEWORK_PLUGINS = ("torch", "tf", "paddle", "jax")


def _gpu_present() -> bool:
    from chute.gpu.runtime import gpu_available

    return gpu_available()


def _device(choice: str) -> str:
    if choice == "auto":
        return "gpu" if _gpu_present() else "cpu"
    return choice


def _demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from chute import Iterator, LastBatchPolicy
    from chute.tools.benchmark.pipelines import MEAN, STD, train_pipeline
    from chute.tools.sample_data import make_imagenet_like
    from chute.tools.show import show_batch

    device = _device(args.device)
    data = make_imagenet_like(args.data, n=args.n, progress=True)
    classes = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
    pipe = train_pipeline(data, args.batch_size, args.threads, device)
    it = Iterator(
        pipe, ["data", "label"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
    )
    print(
        f"chute demo: ResNet-50 training pipeline on {device.upper()}, {args.threads} threads, "
        f"batch {args.batch_size}, {pipe.epoch_size('Reader')} images in {len(classes)} classes"
    )
    start = time.perf_counter()
    count = 0
    first = None
    for (batch,) in tqdm(it, total=len(it), desc="epoch 0", unit="batch"):
        count += batch.real
        if first is None:
            first = batch
    elapsed = time.perf_counter() - start
    print(f"{count} images in {elapsed:.1f} s: {count / elapsed:,.0f} img/s")
    labels = first["label"].as_cpu().as_array().ravel()
    show_batch(first["data"], args.out, captions=[classes[k] for k in labels], mean=MEAN, std=STD)
    print(f"augmented samples with their labels: {args.out}")
    for name in FRAMEWORK_PLUGINS:
        print(f"  {name:7s} {_framework_feed(name, data, args)}")
    pipe.close()
    return 0


def _framework_feed(name: str, data: str, args: argparse.Namespace) -> str:
    """One batch of the same pipeline through a framework plugin, described in a line."""
    import importlib

    from chute.tools.benchmark.pipelines import train_pipeline

    try:
        plugin = importlib.import_module(f"chute.{name}")
    except ImportError as exc:
        return f"not installed ({str(exc).splitlines()[0]})"
    pipe = train_pipeline(data, 8, args.threads, _device(args.device))
    try:
        if name == "tf":
            batch = next(iter(plugin.dataset(pipe, ["data", "label"], reader_name="Reader")))
            x = batch["data"] if isinstance(batch, dict) else batch[0]
        else:
            batch = next(iter(plugin.DataIterator(pipe, ["data", "label"], reader_name="Reader")))
            x = (batch if isinstance(batch, dict) else batch[0])["data"]  # jax yields one dict
        return f"{type(x).__module__}.{type(x).__name__} shape {tuple(x.shape)} dtype {x.dtype}"
    except Exception as exc:  # the demo goes on with the other frameworks
        return f"failed: {type(exc).__name__}: {exc}"
    finally:
        pipe.close()


def _bench(args: argparse.Namespace) -> int:
    from chute.tools.benchmark import run_benchmark
    from chute.tools.sample_data import make_imagenet_like

    data = args.data or make_imagenet_like(DEFAULT_DATA, n=args.n, progress=True)
    systems = args.systems.split(",") if args.systems else None
    run_benchmark(
        data,
        args.preset,
        systems,
        args.batch_size,
        args.threads,
        args.device,
        args.warmup,
        args.iters,
        args.reps,
        args.json,
        args.png,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="chute", description="chute: data loading and augmentation"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo", help="make a sample dataset, run the ResNet-50 pipeline, draw a batch"
    )
    demo.add_argument("--data", default=DEFAULT_DATA, help="dataset folder (made once if missing)")
    demo.add_argument("--n", type=int, default=2048, help="images to make")
    demo.add_argument("--batch-size", type=int, default=64)
    demo.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    demo.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    demo.add_argument("--out", default="chute-demo.png", help="PNG grid of augmented samples")
    demo.set_defaults(run=_demo)

    bench = sub.add_parser("bench", help="chute beside DALI, torchvision and Pillow, one run")
    bench.add_argument(
        "--preset", choices=("train", "val", "decode", "random-crop"), default="train"
    )
    bench.add_argument("--data", default=None, help="dataset folder (default: the demo's)")
    bench.add_argument("--n", type=int, default=2048)
    bench.add_argument(
        "--systems", default=None, help="comma-separated: chute,dali,tv-gpu,pil-loader,pil-threads"
    )
    bench.add_argument("--batch-size", type=int, default=64)
    bench.add_argument("--threads", type=int, default=None)
    bench.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    bench.add_argument("--warmup", type=int, default=3)
    bench.add_argument("--iters", type=int, default=10)
    bench.add_argument("--reps", type=int, default=3)
    bench.add_argument("--json", default=None)
    bench.add_argument("--png", default=None)
    bench.set_defaults(run=_bench)

    from chute.tools.check import add_parser as add_check_parser

    add_check_parser(sub)  # chute check PATH [--recursive] [--jobs N] [--all] [--json]

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
