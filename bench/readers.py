"""Reader throughput: readers.file / tfrecord / webdataset from local disk, S3 and HTTP.

Makes an ImageNet-like set of JPEGs with ../shared/tools/make_dataset.py (or takes one with
--data), packs it as TFRecord files (with tfrecord2idx-style index files) and WebDataset
tar shards, starts an S3-compatible server (moto, a subprocess on 127.0.0.1) holding a
copy and an HTTP server with byte ranges (a subprocess serving the folder), then measures
in one run, arm by arm, alternating rounds:

  read          the reader alone (encoded bytes out): images/s and MB/s of JPEG bytes
  read+decode   the reader into fn.decoders.image (CPU), with --decode: images/s

for every reader x source (local, s3, http). With --dali-python (an interpreter with
nvidia-dali-cuda130 2.4) DALI's CPU readers read the same local files in that interpreter
(read, and read+decode with --decode). Medians over --rounds rounds of --epochs epochs,
after one warm-up epoch per arm (listing, indexing, connection pools).

Usage: PYTHONPATH=core/src python bench/readers.py [--n 1024] [--batch 64] [--threads 2]
       [--rounds 3] [--epochs 1] [--decode] [--dali-python /tmp/dalivenv/bin/python]
       [--json bench/results/readers_cpu_<date>.json]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import platform
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


def dali_worker(args) -> None:
    """In the DALI interpreter: every DALI arm of one round, as JSON on stdout."""
    local = Path(args.data)
    results = {}
    for decode in (False, True) if args.decode else (False,):
        for name in args.readers.split(","):
            key = f"dali/{name}/local/{'read+decode' if decode else 'read'}"
            results[key] = measure("dali", name, str(local), local, args, decode)
    print(json.dumps(results))


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
    ap.add_argument("--dali-python")
    ap.add_argument("--dali-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.dali_worker:
        dali_worker(args)
        return

    tmp = tempfile.TemporaryDirectory(prefix="chute-bench-readers-")
    data = Path(args.data) if args.data else Path(tmp.name) / "data"
    if not (data / "images").exists():
        make_images(data / "images", args.n, args.classes)
    sizes = pack(data / "images", data) if not (data / "wds").exists() else None
    sizes = sizes or {
        "images": len(list((data / "images").rglob("*.jpg"))),
        "jpeg_bytes": sum(p.stat().st_size for p in (data / "images").rglob("*.jpg")),
    }
    os.environ.setdefault("CHUTE_CACHE_DIR", str(Path(tmp.name) / "cache"))
    servers = []
    bases = {"local": str(data)}
    try:
        s3, bases["s3"] = start_s3(data)
        servers.append(s3)
        http, bases["http"] = start_http(data)
        servers.append(http)
        runs: dict[str, list[dict]] = {}
        for r in range(args.rounds):
            for decode in (False, True) if args.decode else (False,):
                for name in args.readers.split(","):
                    for source in args.sources.split(","):
                        key = f"chute/{name}/{source}/{'read+decode' if decode else 'read'}"
                        result = measure("chute", name, bases[source], data, args, decode)
                        runs.setdefault(key, []).append(result)
                        print(f"round {r} {key}: {result['img_s']:.0f} img/s", flush=True)
            if args.dali_python:
                cmd = [args.dali_python, __file__, "--dali-worker", "--data", str(data)]
                cmd += ["--batch", str(args.batch), "--threads", str(args.threads)]
                cmd += ["--epochs", str(args.epochs), "--readers", args.readers]
                cmd += ["--decode"] if args.decode else []
                env = {**os.environ, "PYTHONPATH": str(ROOT / "core/src")}
                done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
                for key, result in json.loads(done.stdout.strip().splitlines()[-1]).items():
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
        "what": "reader throughput: local disk vs moto S3 vs HTTP (servers on 127.0.0.1)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "dataset": {**sizes, "tfrecord_files": TFR_FILES, "wds_shards": WDS_SHARDS},
        "settings": {k: getattr(args, k) for k in ("batch", "threads", "rounds", "epochs")},
        "results": summary,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    main()
