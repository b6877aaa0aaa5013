"""GPU video: frames/s of NVDEC decoding (PyNvVideoCodec) beside chute's CPU decoder, one run.

Makes synthetic videos (moving textured pattern) with PyAV in a temporary
directory, then measures on the same files, in one process:

  cpu_clips_fps / gpu_clips_fps   batches of random 16-frame clips through
                        fn.decoders.video with a per-sample start_frame, on the
                        CPU (num_threads workers) and with device="mixed"
  cpu_all_fps / gpu_all_fps       every frame of the video, one sample
  cpu_reader_fps / gpu_reader_fps fn.readers.video over copies of the file, 16-frame
                        sequences, device "cpu" vs "gpu"
  nvdec                 how many videos NVDEC decoded, the CPU fallbacks (by reason) and
                        decoder events (sessions, reuses, reads after a seek, ...)

GPU numbers include copying the frames to fresh pipeline memory and, for the
reader, waiting for them; each timing is the best of --repeats runs after a
warm-up batch. ``--probe`` adds what PyNvVideoCodec reports for a numbered
test video (frame count, pts per index, frame numbers read from the pixels).

Usage: PYTHONPATH=core/src python bench/video_gpu.py [--frames 300] [--threads 8]
       [--json bench/results/video_gpu_<date>.json] [--probe]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from chute import fn, pipeline_def
from chute.ops.video import nvdec
from chute.ops.video.index import build_index

FORMATS = [  # name, encoder, pixel format, size, extra options
    ("h264.mp4", "libx264", "yuv420p", (640, 360), {"bf": "2", "preset": "veryfast", "g": "50"}),
    ("h264_1080p.mp4", "libx264", "yuv420p", (1920, 1080), {"preset": "ultrafast", "g": "50"}),
    (
        "hevc.mp4",
        "libx265",
        "yuv420p",
        (640, 360),
        {"preset": "ultrafast", "x265-params": "keyint=50:log-level=error"},
    ),
    (
        "vp9.webm",
        "libvpx-vp9",
        "yuv420p",
        (640, 360),
        {"g": "50", "deadline": "realtime", "cpu-used": "8"},
    ),
    ("mjpeg.avi", "mjpeg", "yuvj420p", (640, 360), {}),
]
CLIP = 16


def make_video(
    path: str, codec: str, pix_fmt: str, size: tuple, options: dict, frames: int
) -> None:
    """A moving pattern with texture, so that codecs have real work to do."""
    width, height = size
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (height // 4 + frames, width // 4 + frames, 3), dtype=np.uint8)
    with av.open(path, "w") as out:
        stream = out.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.options = options
        for i in range(frames):
            tile = base[i : i + height // 4, i : i + width // 4]
            image = np.ascontiguousarray(np.repeat(np.repeat(tile, 4, 0), 4, 1))
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


def clips_pipe(data: np.ndarray, starts: list[int], batch: int, threads: int, device: str):
    batches = [starts[i : i + batch] for i in range(0, len(starts), batch)]
    state = {"i": 0}

    def next_starts():
        chunk = batches[state["i"] % len(batches)]
        state["i"] += 1
        return [np.array(s, np.int32) for s in chunk]

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0, prefetch_queue_depth=1)
    def pipe():
        first = fn.external_source(source=next_starts, batch=True)
        video = fn.external_source(source=lambda: [data] * batch, batch=True)
        return fn.decoders.video(video, start_frame=first, sequence_length=CLIP, device=device)

    p = pipe()
    p.build()
    return p, len(batches)


def run_batches(p, count: int, device: str) -> None:
    for _ in range(count):
        (out,) = p.run()
    if device != "cpu":
        out.as_cpu()  # wait for the last batch (earlier ones are in stream order before it)


def clips_fps(data, starts, batch, threads, device, repeats) -> float:
    p, count = clips_pipe(data, starts, batch, threads, device)
    run_batches(p, 1, device)  # warm-up: decoder sessions, CUDA context, index cache
    seconds = best_of(repeats, lambda: run_batches(p, count, device))
    p.close()
    return len(starts) * CLIP / seconds


def all_frames_fps(data: np.ndarray, device: str, repeats: int) -> float:
    @pipeline_def(batch_size=1, num_threads=1, device_id=0, prefetch_queue_depth=1)
    def pipe():
        return fn.decoders.video(fn.external_source(source=lambda: [data]), device=device)

    p = pipe()
    p.build()
    (out,) = p.run()
    frames = out.at(0).shape[0]
    seconds = best_of(repeats, lambda: run_batches(p, 1, device))
    p.close()
    return frames / seconds


def reader_fps(files: list[str], batch: int, threads: int, device: str, repeats: int) -> float:
    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0, prefetch_queue_depth=2)
    def pipe():
        return fn.readers.video(
            filenames=files, sequence_length=CLIP, random_shuffle=True, device=device, name="R"
        )

    p = pipe()
    p.build()
    count = max(1, p.epoch_size("R") // batch)
    run_batches(p, 1, device)
    seconds = best_of(repeats, lambda: run_batches(p, count, device))
    p.close()
    return count * batch * CLIP / seconds


def pixel_frame(cp, frame) -> int:
    """The number a probe frame shows: where its bright block is."""
    arr = cp.asnumpy(nvdec._as_cupy(cp, frame))
    line = arr[arr.shape[0] // 2, :, 0].astype(int)
    return int(np.argmax(line)) // 8 if line.max() > 128 else -1


def probe(tmp: str) -> dict:
    """What PyNvVideoCodec reports for a 40-frame H.264 (B-frames) video whose frames show their number."""
    cp, nvc = nvdec.require_nvdec("probe", 0)
    path = os.path.join(tmp, "numbered.mp4")
    width, height, frames = 320, 64, 40
    with av.open(path, "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.gop_size = 8
        stream.options = {"bf": "2", "preset": "veryfast"}
        for i in range(frames):
            img = np.full((height, width, 3), 16, np.uint8)
            img[:, 8 * i : 8 * i + 8] = 235
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    index = build_index(path)
    report: dict = {
        "pynvvideocodec": getattr(nvc, "__version__", "?"),
        "index_pts": index.pts.tolist(),
    }
    try:
        dec = nvc.SimpleDecoder(
            path, gpu_id=0, use_device_memory=True, output_color_type=nvc.OutputColorType.RGB
        )
        report["len"] = len(dec)
        report["metadata"] = repr(dec.get_stream_metadata())
        picks = [0, 1, 2, 3, 5, 8, 13, 21, 34, 39]
        got = dec.get_batch_frames_by_index(picks)
        rows = []
        for i, frame in zip(picks, got):
            rows.append(
                {"index": i, "pts": nvdec._frame_pts(frame), "pixel_frame": pixel_frame(cp, frame)}
            )
        report["frames"] = rows
        dec.seek_to_index(13)
        report["after_seek_13"] = [
            {"pts": nvdec._frame_pts(f), "pixel_frame": pixel_frame(cp, f)}
            for f in dec.get_batch_frames(4)
        ]
        report["repr"] = repr(got[0])[:300]
        report["attributes"] = [a for a in dir(got[0]) if not a.startswith("_")]
        try:
            report["dlpack"] = tuple(cp.from_dlpack(got[0]).shape)
        except Exception as exc:
            report["dlpack"] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--threads", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--clips", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--only", default=None, help="comma-separated video names")
    args = parser.parse_args()
    nvdec.require_nvdec("bench/video_gpu.py", 0)
    rng = np.random.default_rng(1)
    starts = [int(s) for s in rng.integers(0, args.frames - CLIP, args.clips)]
    results = []
    extra = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.probe:
            extra["probe"] = probe(tmp)
            print(json.dumps(extra["probe"]), flush=True)
        for name, codec, pix_fmt, size, options in FORMATS:
            if codec not in av.codecs_available or (args.only and name not in args.only.split(",")):
                continue
            path = os.path.join(tmp, name)
            frames = args.frames if size[1] <= 720 else args.frames // 2
            make_video(path, codec, pix_fmt, size, options, frames)
            data = np.fromfile(path, np.uint8)
            clip_starts = [s % (frames - CLIP) for s in starts]
            copies = []
            for k in range(4):  # the reader reads files: four copies, so batches mix files
                copy = os.path.join(tmp, f"{k}_{name}")
                shutil.copyfile(path, copy)
                copies.append(copy)
            row: dict = {
                "video": name,
                "codec": build_index(path).codec,
                "frames": frames,
                "size": f"{size[0]}x{size[1]}",
                "bytes": int(data.size),
            }
            for device, key in (("cpu", "cpu"), ("mixed", "gpu")):
                nvdec.NVDEC_STATS.reset()
                row[f"{key}_clips_fps"] = round(
                    clips_fps(data, clip_starts, args.batch, args.threads, device, args.repeats), 1
                )
                row[f"{key}_all_fps"] = round(all_frames_fps(data, device, args.repeats), 1)
                row[f"{key}_reader_fps"] = round(
                    reader_fps(
                        copies,
                        args.batch,
                        args.threads,
                        "cpu" if key == "cpu" else "gpu",
                        args.repeats,
                    ),
                    1,
                )
                if key == "gpu":
                    row["nvdec"] = nvdec.NVDEC_STATS.snapshot(events=True)
            row["clips_speedup"] = round(row["gpu_clips_fps"] / row["cpu_clips_fps"], 2)
            print(json.dumps(row), flush=True)
            results.append(row)
    report = {
        "bench": "video_gpu",
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "pyav": av.__version__,
        "threads": args.threads,
        "batch": args.batch,
        "clip_length": CLIP,
        "clips": args.clips,
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "results": results,
        **extra,
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


def machine() -> dict:
    info: dict = {"cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(0)
        info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["driver"] = cp.cuda.runtime.driverGetVersion()
    except Exception as exc:
        info["gpu"] = f"unknown ({exc})"
    try:
        import PyNvVideoCodec as nvc

        info["pynvvideocodec"] = nvc.__version__
    except Exception:
        pass
    return info


if __name__ == "__main__":
    main()
