"""CPU video: packet-index time vs decoding every frame, and frames/s of chute's decoders.

Makes a few synthetic videos (moving noise pattern, 640x360, 25 fps) with
PyAV in a temporary directory, then measures in one process:

  index_ms            chute's packet index (demux only, no decoding), uncached
  decode_all_ms       decoding every frame with PyAV (no colour conversion): what a
                      frame index built by decoding would cost
  sequential_fps      every frame through fn.decoders.video (RGB output)
  random_clips_fps    batches of random 16-frame clips (fn.decoders.video with a
                      per-sample start_frame), num_threads workers
  dali_random_clips_fps  the same clips through DALI's CPU fn.experimental.decoders.video,
                      when --dali-python names an interpreter with DALI

Usage: PYTHONPATH=core/src python bench/video_cpu.py [--frames 300] [--threads 2]
       [--dali-python /tmp/dalienv/bin/python] [--json bench/results/video_cpu_<date>.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from chute import fn, pipeline_def
from chute.ops.video.index import build_index

FORMATS = [  # name, encoder, pixel format, extra options
    ("h264.mp4", "libx264", "yuv420p", {"bf": "2", "preset": "veryfast", "g": "50"}),
    ("vp9.webm", "libvpx-vp9", "yuv420p", {"g": "50", "deadline": "realtime", "cpu-used": "8"}),
    ("mjpeg.avi", "mjpeg", "yuvj420p", {}),
]
CLIP = 16


def make_video(path: str, codec: str, pix_fmt: str, options: dict, frames: int) -> None:
    """A moving pattern with texture, so that codecs have real work to do."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (360 + frames, 640 + frames, 3), dtype=np.uint8)
    with av.open(path, "w") as out:
        stream = out.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = 640, 360, pix_fmt
        stream.options = options
        for i in range(frames):
            image = np.ascontiguousarray(base[i : i + 360, i : i + 640])
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def best_of(repeats: int, work) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def decode_all(path: str) -> int:
    with av.open(path) as container:
        return sum(1 for _ in container.decode(container.streams.video[0]))


def chute_clips_fps(data: np.ndarray, starts: list[int], batch: int, threads: int) -> float:
    batches = [starts[i : i + batch] for i in range(0, len(starts), batch)]
    feed = iter(batches)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, prefetch_queue_depth=1)
    def pipe():
        first = fn.external_source(source=lambda: [np.int32(s) for s in next(feed)], batch=True)
        video = fn.external_source(source=lambda: [data] * batch, batch=True)
        return fn.decoders.video(video, start_frame=first, sequence_length=CLIP)

    p = pipe()
    p.build()
    start = time.perf_counter()
    for _ in batches:
        p.run()
    elapsed = time.perf_counter() - start
    p.close()
    return len(starts) * CLIP / elapsed


DALI_SCRIPT = """
import sys, time, json, numpy as np
from nvidia.dali import pipeline_def, fn
data = np.fromfile(sys.argv[1], np.uint8)
starts = json.loads(sys.argv[2]); batch = int(sys.argv[3]); threads = int(sys.argv[4])
clip = int(sys.argv[5])
batches = [starts[i:i + batch] for i in range(0, len(starts), batch)]
feed = iter(batches)
@pipeline_def(batch_size=batch, num_threads=threads, device_id=None, prefetch_queue_depth=1,
              exec_async=False, exec_pipelined=False)
def pipe():
    first = fn.external_source(source=lambda: [np.array(s, np.int32) for s in next(feed)])
    video = fn.external_source(source=lambda: [data] * batch)
    return fn.experimental.decoders.video(video, start_frame=first, sequence_length=clip)
p = pipe(); p.build()
t = time.perf_counter()
for _ in batches: p.run()
print(len(starts) * clip / (time.perf_counter() - t))
"""


def dali_clips_fps(
    python: str, path: str, starts: list[int], batch: int, threads: int
) -> float | str:
    try:
        out = subprocess.run(
            [
                python,
                "-c",
                DALI_SCRIPT,
                path,
                json.dumps(starts),
                str(batch),
                str(threads),
                str(CLIP),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        lines = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines() or [repr(exc)]
        reason = next((x for x in lines if "failed" in x.lower()), lines[-1])
        return f"failed: {reason.strip()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--clips", type=int, default=48)
    parser.add_argument("--dali-python", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    starts = [int(s) for s in rng.integers(0, args.frames - CLIP, args.clips)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, codec, pix_fmt, options in FORMATS:
            if codec not in av.codecs_available:
                continue
            path = os.path.join(tmp, name)
            make_video(path, codec, pix_fmt, options, args.frames)
            data = np.fromfile(path, np.uint8)
            index_s = best_of(3, lambda path=path: build_index(path))
            decode_s = best_of(3, lambda path=path: decode_all(path))
            seq_start = time.perf_counter()
            frames = chute_sequential(data)
            seq_fps = frames / (time.perf_counter() - seq_start)
            row = {
                "video": name,
                "codec": build_index(path).codec,
                "frames": args.frames,
                "size": "640x360",
                "bytes": int(data.size),
                "index_ms": round(index_s * 1e3, 2),
                "decode_all_ms": round(decode_s * 1e3, 2),
                "index_speedup": round(decode_s / index_s, 1),
                "sequential_fps": round(seq_fps, 1),
                "random_clips_fps": round(
                    chute_clips_fps(data, starts, args.batch, args.threads), 1
                ),
            }
            if args.dali_python:
                dali = dali_clips_fps(args.dali_python, path, starts, args.batch, args.threads)
                row["dali_random_clips_fps"] = round(dali, 1) if isinstance(dali, float) else dali
            print(json.dumps(row))
            results.append(row)
    report = {
        "bench": "video_cpu",
        "date": datetime.date.today().isoformat(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1m": round(os.getloadavg()[0], 2),
        },
        "pyav": av.__version__,
        "threads": args.threads,
        "batch": args.batch,
        "clip_length": CLIP,
        "clips": args.clips,
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "results": results,
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


def chute_sequential(data: np.ndarray) -> int:
    """Decode every frame through fn.decoders.video; returns the frame count."""

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return fn.decoders.video(fn.external_source(source=lambda: [data]))

    p = pipe()
    p.build()
    (out,) = p.run()
    p.close()
    return out.at(0).shape[0]


if __name__ == "__main__":
    main()
