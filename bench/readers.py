"""Reader throughput: readers.file / tfrecord / webdataset from local disk, S3 and HTTP.

Makes an ImageNet-like set of JPEGs with ../shared/tools/make_dataset.py (or packs a folder
that script made, --images, or takes an earlier run's folder, --data), packs it as TFRecord
files (with tfrecord2idx-style index files) and WebDataset tar shards, starts an S3-compatible server (moto, a subprocess on 127.0.0.1) holding a
copy and an HTTP server with byte ranges (a subprocess serving the folder), then measures
in one run, arm by arm, alternating rounds:

  read          the reader alone (encoded bytes out): images/s and MB/s of JPEG bytes
  read+decode   the reader into fn.decoders.image (CPU), with --decode: images/s

for every reader x source (local, s3, http). With --dali-python (an interpreter with
nvidia-dali-cuda130 2.4) DALI's CPU readers read the same local files in that interpreter
(read, and read+decode with --decode). With --torch-python (an interpreter with torch and
the ``webdataset`` package) the ``wds-loader`` arm reads the same tar shards with
``webdataset.WebDataset(...).decode("rgb8").to_tuple("jpg", "cls")`` in a torch DataLoader
with num_workers = --threads (full-size RGB uint8, the decode of the chute and DALI arms).
Every round runs each system (chute, DALI, wds-loader) in a fresh process, in an order
that alternates from round to round. Medians over --rounds rounds of --epochs epochs,
after one warm-up epoch per arm (listing, indexing, connection pools, worker start).

Usage: PYTHONPATH=core/src python bench/readers.py [--n 1024] [--batch 64] [--threads 2]
       [--rounds 3] [--epochs 1] [--decode] [--images DIR] [--dali-python DALI_PY]
       [--torch-python TORCH_PY] [--json bench/results/readers_cpu_<date>.json]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MAKE_DATASET = ROOT.parent / "shared" / "tools" / "make_dataset.py"
READERS = ("file", "tfrecord", "webdataset")
SOURCES = ("local", "s3", "http")
TFR_FILES = 4
WDS_SHARDS = 4


# ---- data -----------------------------------------------------------------------------------


def make_images(folder: Path, n: int, classes: int) -> None:
    make = MAKE_DATASET if MAKE_DATASET.exists() else Path("/work/shared/tools/make_dataset.py")
    subprocess.run(
        [sys.executable, str(make), str(folder), "--n", str(n), "--classes", str(classes)],
        check=True,
    )


def pack(images: Path, out: Path) -> dict:
    """TFRecord files + indexes and WebDataset shards of the images; returns their sizes."""
    from chute import tfrecord

    files = sorted(p for p in images.rglob("*.jpg"))
    classes = sorted({p.parent.name for p in files})
    labels = [classes.index(p.parent.name) for p in files]
    (out / "tfr").mkdir(parents=True, exist_ok=True)
    (out / "wds").mkdir(parents=True, exist_ok=True)
    for k in range(TFR_FILES):
        part = range(k, len(files), TFR_FILES)
        examples = [
            tfrecord.encode_example(
                {"image/encoded": [files[i].read_bytes()], "image/class/label": [labels[i]]}
            )
            for i in part
        ]
        index = tfrecord.write_records(out / "tfr" / f"part{k}.tfrecord", examples)
        (out / "tfr" / f"part{k}.idx").write_text("".join(f"{o} {s}\n" for o, s in index))
    for k in range(WDS_SHARDS):
        with tarfile.open(out / "wds" / f"shard{k}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            for i in range(k, len(files), WDS_SHARDS):
                for ext, blob in (("jpg", files[i].read_bytes()), ("cls", str(labels[i]).encode())):
                    info = tarfile.TarInfo(f"{i:07d}.{ext}")
                    info.size = len(blob)
                    tar.addfile(info, io.BytesIO(blob))
    return {"images": len(files), "jpeg_bytes": sum(p.stat().st_size for p in files)}


# ---- servers (subprocesses, so that they do not share this process's GIL) -------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def start_s3(data: Path) -> tuple[subprocess.Popen, str]:
    """moto's S3 server holding every file under ``data`` in bucket 'bench'."""
    import boto3

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_port(port, proc, "moto server")
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
    )
    client = boto3.client("s3")
    client.create_bucket(Bucket="bench")
    for path in data.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), "bench", path.relative_to(data).as_posix())
    return proc, "s3://bench"


def start_http(data: Path) -> tuple[subprocess.Popen, str]:
    """The tests' HTTP server (index pages and byte ranges) serving ``data``."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from _remote_servers import RangeServer; "
        "s = RangeServer(sys.argv[2]); print(s.url, flush=True); s.serve_forever()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT / "tests/core/remote"), str(data)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not url:
        raise SystemExit("the HTTP server did not start")
    return proc, url


# ---- arms -------------------------------------------------------------------------------------


def reader_node(fn, name: str, base: str, local: Path, decode: bool, tfrec) -> tuple:
    """(image bytes or decoded images, label) of reader ``name`` reading under ``base``."""
    if name == "file":
        jpegs, labels = fn.readers.file(file_root=f"{base}/images", name="R")
    elif name == "tfrecord":
        parts = [f"part{k}" for k in range(TFR_FILES)]
        out = fn.readers.tfrecord(
            path=[f"{base}/tfr/{p}.tfrecord" for p in parts],
            index_path=[f"{base}/tfr/{p}.idx" for p in parts],
            features={
                "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            },
            name="R",
        )
        jpegs, labels = out["image/encoded"], out["image/class/label"]
    else:
        jpegs, labels = fn.readers.webdataset(
            paths=[f"{base}/wds/shard{k}.tar" for k in range(WDS_SHARDS)],
            ext=["jpg", "cls"],
            name="R",
        )
    if decode:
        return fn.decoders.image(jpegs, device="cpu"), labels
    return jpegs, labels


def measure(lib: str, name: str, base: str, local: Path, args, decode: bool) -> dict:
    """images/s and MB/s over ``args.epochs`` epochs after a warm-up epoch."""
    if lib == "dali":
        from nvidia.dali import fn, pipeline_def
        from nvidia.dali import tfrecord as tfrec
    else:
        from chute import fn, pipeline_def
        from chute import tfrecord as tfrec

    @pipeline_def(
        batch_size=args.batch, num_threads=args.threads, device_id=None, prefetch_queue_depth=2
    )
    def pipe():
        return reader_node(fn, name, base, local, decode, tfrec)

    p = pipe()
    p.build()
    size = int(p.reader_meta("R")["epoch_size"])
    per_epoch = -(-size // args.batch)

    def epoch() -> tuple[int, int]:
        images = nbytes = 0
        for _ in range(per_epoch):
            try:
                out, _ = p.run()
            except StopIteration:  # chute: the epoch ended
                p.reset()
                out, _ = p.run()
            images += len(out)
            if not decode:
                nbytes += sum(np.asarray(out[i]).nbytes for i in range(len(out)))
        return images, nbytes

    epoch()  # warm-up: listing, indexes, connections
    start = time.perf_counter()
    images = nbytes = 0
    for _ in range(args.epochs):
        i, b = epoch()
        images, nbytes = images + i, nbytes + b
    seconds = time.perf_counter() - start
    out = {"img_s": images / seconds, "seconds": seconds, "images": images}
    if not decode:
        out["MB_s"] = nbytes / seconds / 1e6
    return out


def _as_list(batch: list) -> list:
    return batch  # images differ in size: the DataLoader hands out the batch's samples


def measure_wds_loader(local: Path, args, decode: bool) -> dict:
    """The ``webdataset`` library in a torch DataLoader reading the local tar shards."""
    import torch
    import webdataset as wds

    urls = [str(local / "wds" / f"shard{k}.tar") for k in range(WDS_SHARDS)]
    ds = wds.WebDataset(urls, shardshuffle=False, empty_check=False)
    if decode:
        ds = ds.decode("rgb8")  # PIL, full size, HWC uint8 RGB
    ds = ds.to_tuple("jpg", "cls")
    workers = args.threads
    loader = torch.utils.data.DataLoader(
        ds,
        batch_size=args.batch,
        num_workers=workers,
        collate_fn=_as_list,
        persistent_workers=workers > 0,
        prefetch_factor=2 if workers > 0 else None,
    )

    def epoch() -> tuple[int, int]:
        images = nbytes = 0
        for batch in loader:
            images += len(batch)
            if not decode:
                nbytes += sum(len(jpeg) for jpeg, _ in batch)
            elif batch and np.asarray(batch[0][0]).dtype != np.uint8:
                raise SystemExit("wds-loader: the decoded images are not uint8")
        return images, nbytes

    epoch()  # warm-up: worker start
    start = time.perf_counter()
    images = nbytes = 0
    for _ in range(args.epochs):
        i, b = epoch()
        images, nbytes = images + i, nbytes + b
    seconds = time.perf_counter() - start
    out = {"img_s": images / seconds, "seconds": seconds, "images": images}
    if not decode:
        out["MB_s"] = nbytes / seconds / 1e6
    return out


def worker(args) -> None:
    """In a fresh process: every arm of one system for one round, as JSON on stdout."""
    local = Path(args.data)
    bases = {"local": str(local), **json.loads(args.bases)}
    results = {}
    for decode in (False, True) if args.decode else (False,):
        mode = "read+decode" if decode else "read"
        if args.worker == "wds-loader":
            results[f"wds-loader/webdataset/local/{mode}"] = measure_wds_loader(local, args, decode)
            continue
        sources = args.sources.split(",") if args.worker == "chute" else ["local"]
        for name in args.readers.split(","):
            for source in sources:
                key = f"{args.worker}/{name}/{source}/{mode}"
                results[key] = measure(args.worker, name, bases[source], local, args, decode)
                print(f"  {key}: {results[key]['img_s']:.0f} img/s", file=sys.stderr, flush=True)
    print(json.dumps(results))


def run_worker(system: str, python: str, data: Path, bases: dict, args) -> dict:
    """One system's arms of one round in a fresh ``python`` process."""
    cmd = [python, __file__, "--worker", system, "--data", str(data), "--bases", json.dumps(bases)]
    cmd += ["--batch", str(args.batch), "--threads", str(args.threads)]
    cmd += ["--epochs", str(args.epochs), "--readers", args.readers, "--sources", args.sources]
    cmd += ["--decode"] if args.decode else []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "core/src")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"the {system} worker failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--readers", default=",".join(READERS), help="e.g. tfrecord,webdataset")
    ap.add_argument("--sources", default=",".join(SOURCES), help="e.g. local,http")
    ap.add_argument("--data", help="a folder made by an earlier run (images/, tfr/, wds/)")
    ap.add_argument("--images", help="a folder of JPEGs made by make_dataset.py to pack")
    ap.add_argument("--dali-python", help="an interpreter with nvidia.dali: DALI's arms")
    ap.add_argument("--torch-python", help="an interpreter with torch + webdataset: wds-loader")
    ap.add_argument("--worker", choices=("chute", "dali", "wds-loader"), help=argparse.SUPPRESS)
    ap.add_argument("--bases", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    tmp = tempfile.TemporaryDirectory(prefix="chute-bench-readers-")
    data = Path(args.data) if args.data else Path(tmp.name) / "data"
    if not (data / "images").exists():
        if args.images:
            shutil.copytree(args.images, data / "images")  # a copy: S3 gets it uploaded too
        else:
            make_images(data / "images", args.n, args.classes)
    sizes = pack(data / "images", data) if not (data / "wds").exists() else None
    sizes = sizes or {
        "images": len(list((data / "images").rglob("*.jpg"))),
        "jpeg_bytes": sum(p.stat().st_size for p in (data / "images").rglob("*.jpg")),
    }
    os.environ.setdefault("CHUTE_CACHE_DIR", str(Path(tmp.name) / "cache"))
    systems = [("chute", sys.executable)]
    systems += [("dali", args.dali_python)] if args.dali_python else []
    systems += [("wds-loader", args.torch_python)] if args.torch_python else []
    servers = []
    bases = {}
    order = []
    try:
        sources = args.sources.split(",")
        if "s3" in sources:
            s3, bases["s3"] = start_s3(data)
            servers.append(s3)
        if "http" in sources:
            http, bases["http"] = start_http(data)
            servers.append(http)
        runs: dict[str, list[dict]] = {}
        for r in range(args.rounds):
            this_round = systems if r % 2 == 0 else systems[::-1]
            order.append([name for name, _ in this_round])
            for system, python in this_round:
                for key, result in run_worker(system, python, data, bases, args).items():
                    runs.setdefault(key, []).append(result)
                    print(f"round {r} {key}: {result['img_s']:.0f} img/s", flush=True)
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(10)
    summary = {
        key: {
            "img_s_median": round(statistics.median(x["img_s"] for x in rs), 1),
            "img_s_rounds": [round(x["img_s"], 1) for x in rs],
            **(
                {"MB_s_median": round(statistics.median(x["MB_s"] for x in rs), 1)}
                if "MB_s" in rs[0]
                else {}
            ),
        }
        for key, rs in runs.items()
    }
    report = {
        "what": "reader throughput: chute local disk vs moto S3 vs HTTP (servers on 127.0.0.1), "
        "DALI's readers and the webdataset library in a torch DataLoader on the local files",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_at_end": os.getloadavg(),
        },
        "dataset": {**sizes, "tfrecord_files": TFR_FILES, "wds_shards": WDS_SHARDS},
        "settings": {k: getattr(args, k) for k in ("batch", "threads", "rounds", "epochs")},
        "round_order": order,
        "results": summary,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    main()
