"""The ``chute`` command: ``chute demo``, ``bench``, ``check``, ``tfrecord2idx``, ``wds2idx``, ``--version``.

Usage errors (a bad option value, an unknown system, ``--device gpu`` where there
is no GPU) print one line, ``chute <command>: error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import sys
import time
from typing import Any, NoReturn

from chute.runtime.tuning import Tuning
from chute.runtime.tuning import current as current_tuning
from chute.runtime.tuning import use as use_tuning
from chute.tools.check import positive_int

DEFAULT_DATA = os.path.join(os.path.expanduser("~"), ".cache", "chute", "sample-imagenet")
FRAMEWORK_PLUGINS = ("torch", "tf", "paddle", "jax")


class UsageError(Exception):
    """A command's options cannot work here; the message says why and what to do."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``prog: error: message (see prog --help)``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def system_list(text: str) -> list[str]:
    """An argparse type: comma-separated names of ``chute bench`` systems."""
    from chute.tools.benchmark.systems import SYSTEMS

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown system {', '.join(map(repr, unknown)) or repr(text)}; "
            f"choose from {', '.join(SYSTEMS)}"
        )
    return names


def _device(choice: str) -> str:
    """``auto``: the GPU when one is usable; ``gpu``: the GPU, or a UsageError saying why not."""
    from chute.gpu.runtime import gpu_available, require_gpu

    if choice == "auto":
        return "gpu" if gpu_available() else "cpu"
    if choice == "gpu":
        try:
            require_gpu("--device gpu", codec=True)
        except RuntimeError as exc:
            raise UsageError(f"{exc}; run with --device cpu (or auto) on this machine") from None
    return choice


def _writable(path: str | None, option: str) -> None:
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    if folder is not None and not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: folder {folder} does not exist")


def _demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from chute import Iterator, LastBatchPolicy, show_batch
    from chute.tools.benchmark.pipelines import MEAN, STD, train_pipeline
    from chute.tools.sample_data import make_imagenet_like

    _writable(args.out, "--out")
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
    # One epoch, timed from its first batch to its last: the rate counts the real
    # samples delivered (a PARTIAL last batch counts what it holds), nothing else.
    count = 0
    first = None
    start = time.perf_counter()
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
        print(f"  {name:7s} {_framework_feed(name, data, args, device)}")
    pipe.close()
    return 0


def _framework_feed(name: str, data: str, args: argparse.Namespace, device: str) -> str:
    """One batch of the same pipeline through a framework plugin, described in a line."""
    import importlib

    from chute.tools.benchmark.pipelines import train_pipeline

    try:
        plugin = importlib.import_module(f"chute.{name}")
    except ImportError as exc:
        return f"not installed ({str(exc).splitlines()[0]})"
    pipe = train_pipeline(data, 8, args.threads, device)
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

    if args.data is not None and not os.path.isdir(args.data):
        raise UsageError(f"--data {args.data}: no such folder")
    _writable(args.json, "--json")
    _writable(args.png, "--png")
    device = _device(args.device)
    settings = tuning_from_strings(args.tuning)
    data = args.data or make_imagenet_like(DEFAULT_DATA, n=args.n, progress=True)
    with use_tuning(settings):
        run_benchmark(
            data,
            args.preset,
            args.systems,
            args.batch_size,
            args.threads,
            device,
            args.warmup,
            args.iters,
            args.reps,
            args.json,
            args.png,
        )
    return 0


def tuning_from_strings(items: list[str]) -> Tuning:
    """The current Tuning with ``NAME=VALUE`` changes (``decoder_options.KEY=VALUE`` too)."""
    changes: dict[str, Any] = {}
    options = dict(current_tuning().decoder_options)
    fields = {f.name for f in dataclasses.fields(Tuning)}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--tuning {item!r}: expected NAME=VALUE")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a bare word: a string
        if name.startswith("decoder_options."):
            options[name.split(".", 1)[1]] = value
        elif name in fields and name != "decoder_options":
            changes[name] = value
        else:
            raise UsageError(
                f"--tuning {item!r}: no setting {name!r}; one of "
                f"{', '.join(sorted(fields - {'decoder_options'}))} or decoder_options.KEY"
            )
    try:
        return current_tuning().replace(**changes, decoder_options=options)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--tuning: {exc}") from None


def _tfrecord2idx(args: argparse.Namespace) -> int:
    from chute.ops.readers import tfrecord_format

    try:
        tfrecord_format.write_index(args.index, tfrecord_format.scan(args.tfrecord))
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.tfrecord}: {exc.strerror or exc}") from None
    return 0


def _wds2idx(args: argparse.Namespace) -> int:
    from chute.ops.readers import wds_format

    index = args.index or os.path.splitext(args.archive)[0] + ".idx"
    try:
        members, problem = wds_format.scan_tar(args.archive)
        if problem is not None:
            raise UsageError(f"{args.archive} at offset {problem.offset}: {problem.message}")
        samples = wds_format.group_samples(members)
        if not samples:
            raise UsageError(f"{args.archive}: no samples (an empty archive)")
        wds_format.write_index(index, samples)
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.archive}: {exc.strerror or exc}") from None
    return 0


def _parser() -> Parser:
    from chute import __version__
    from chute.tools import check

    parser = Parser(prog="chute", description="chute: data loading and augmentation")
    parser.add_argument("--version", action="version", version=f"chute {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo", help="make a sample dataset, run the ResNet-50 pipeline, draw a batch"
    )
    demo.add_argument("--data", default=DEFAULT_DATA, help="dataset folder (made once if missing)")
    demo.add_argument("--n", type=positive_int, default=2048, help="images to make")
    demo.add_argument("--batch-size", type=positive_int, default=64)
    demo.add_argument("--threads", type=positive_int, default=os.cpu_count() or 1)
    demo.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    demo.add_argument("--out", default="chute-demo.png", help="PNG grid of augmented samples")
    demo.set_defaults(run=_demo)

    bench = sub.add_parser("bench", help="chute beside DALI, torchvision and Pillow, one run")
    bench.add_argument(
        "--preset", choices=("train", "val", "decode", "random-crop"), default="train"
    )
    bench.add_argument("--data", default=None, help="dataset folder (default: the demo's)")
    bench.add_argument("--n", type=positive_int, default=2048)
    bench.add_argument(
        "--systems",
        type=system_list,
        default=None,
        help="comma-separated: chute,chute-cpu,dali,dali-cpu,dali-hw,tv-gpu,pil-loader,pil-threads",
    )
    bench.add_argument("--batch-size", type=positive_int, default=64)
    bench.add_argument("--threads", type=positive_int, default=None)
    bench.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    bench.add_argument("--warmup", type=non_negative_int, default=3)
    bench.add_argument("--iters", type=positive_int, default=10)
    bench.add_argument("--reps", type=positive_int, default=3)
    bench.add_argument("--json", default=None, help="write the record as JSON here")
    bench.add_argument("--png", default=None, help="draw the bar chart here")
    bench.add_argument(
        "--tuning",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="engine setting for chute's systems (chute.runtime.tuning.Tuning field, or "
        "decoder_options.KEY for the GPU decoder), repeatable; e.g. hw_load=0.65",
    )
    bench.set_defaults(run=_bench)

    check.add_parser(sub)  # chute check PATH [--no-recursive] [--jobs N] [--all] [--json]

    tfr = sub.add_parser("tfrecord2idx", help="index a TFRecord file (DALI's tfrecord2idx format)")
    tfr.add_argument("tfrecord", help="TFRecord file")
    tfr.add_argument("index", help="index file to write")
    tfr.set_defaults(run=_tfrecord2idx)

    wds = sub.add_parser("wds2idx", help="index a webdataset tar archive (DALI's wds2idx, v1.2)")
    wds.add_argument("archive", help="tar archive")
    wds.add_argument("index", nargs="?", help="index file to write (default: archive's .idx)")
    wds.set_defaults(run=_wds2idx)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``chute`` command with ``argv`` (default: sys.argv[1:]); return its exit status."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"chute {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
