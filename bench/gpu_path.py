"""Benchmark chute's GPU path: JPEG batch decoding and the ResNet-50 training path.

Run on a GPU machine (CuPy + nvImageCodec; torchvision for the anchor):

    python bench/gpu_path.py --data DIR_OF_JPEGS --images 8192 --batch 256 --json OUT.json

Measures, in one run: decode-only img/s (hardware decoder with and without ROI, the
hardware/CUDA split, CPU-only OpenCV decoding, hybrid GPU + CPU splits), the fused
kernels alone, the full training path (ROI decode of a random-resized-crop window +
one fused resize/flip/normalize/fp16 launch, double-buffered with threads), and
torchvision.io.decode_jpeg(device="cuda") + per-image torch ops as an anchor.

The decode measurements are in gpu_path_decode.py, what the parts share in
gpu_path_common.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core" / "src"))

from gpu_path_common import (
    JSON_PATH,
    MEAN,
    RESULTS,
    STD,
    batches,
    guarded,
    load_jpegs,
    record,
    rrc_windows,
)
from gpu_path_decode import bench_decode, bench_overhead

from chute.gpu.jpeg import BatchDecoder
from chute.gpu.kernels import (
    crop_mirror_normalize_batch,
    resize_batch,
    resize_crop_mirror_normalize,
    sizes_for_shorter_side,
)


def make_train_step(cupy, kernel_stream):
    def step(decoded, mirror):
        return resize_crop_mirror_normalize(
            decoded.images,
            decoded.windows,
            (224, 224),
            mirror,
            MEAN,
            STD,
            np.float16,
            "CHW",
            stream=kernel_stream,
        )

    return step


@guarded
def bench_train(label: str, data, bs, cupy, decoders: int = 1, ahead: int = 2, **cfg):
    """Full RRC training path as a pipeline of threads.

    A prep thread parses headers and draws windows/flips; ``decoders`` decode threads
    (each its own BatchDecoder) keep ``ahead`` batches in flight; the main thread waits
    for a batch's decode event on its kernel stream and launches the fused kernel, so
    batch i's kernel overlaps the decoding of the next ones.
    """
    decs = [BatchDecoder(0, **cfg) for _ in range(decoders)]
    dstreams = [cupy.cuda.Stream(non_blocking=True) for _ in range(decoders)]
    kstream = cupy.cuda.Stream(non_blocking=True)
    step = make_train_step(cupy, kstream)
    bl = batches(data, bs)
    prep_pool = ThreadPoolExecutor(1, thread_name_prefix="prep")
    dec_pool = ThreadPoolExecutor(decoders, thread_name_prefix="decode")
    t_dec = [0.0]

    def prep(i: int):
        rng = np.random.default_rng((1, i))  # one generator per batch: threads share none
        p = decs[0].parse(bl[i])
        win = rrc_windows(p.shapes, rng)
        decs[0].prepare(p, win)
        return p, win, rng.random(len(win)) < 0.5

    def decode(i: int, prepped):
        j = i % decoders
        p, _win, mirror = prepped.result()
        t0 = time.perf_counter()
        out = decs[j].decode(p, stream=dstreams[j], as_cupy=False)
        ev = cupy.cuda.Event(disable_timing=True)
        ev.record(dstreams[j])
        t_dec[0] += time.perf_counter() - t0
        return out, ev, mirror

    def run(n: int) -> tuple[float, int]:
        errors = 0
        t0 = time.perf_counter()
        preps = [prep_pool.submit(prep, i) for i in range(min(n, ahead + 2))]
        futs = [dec_pool.submit(decode, i, preps[i]) for i in range(min(n, ahead))]
        prev = None
        for i in range(n):
            if len(preps) < n:
                preps.append(prep_pool.submit(prep, len(preps)))
            if len(futs) < n:
                futs.append(dec_pool.submit(decode, len(futs), preps[len(futs)]))
            dec, ev, mirror = futs[i].result()
            kstream.wait_event(ev)
            out = step(dec, mirror)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(kstream)
            errors += sum(e is not None for e in dec.errors)
            if prev is not None:
                prev[2].synchronize()  # the consumer has batch i-1; its inputs can go
            prev = (dec, out, done)
        kstream.synchronize()
        return time.perf_counter() - t0, errors

    run(ahead + 1)  # warm-up
    t_dec[0] = 0.0
    dt, errors = run(len(bl))
    r = record(
        label,
        len(data),
        dt,
        decoders=decoders,
        ahead=ahead,
        errors=errors,
        decode_busy=round(t_dec[0] / dt / decoders, 2),
        **cfg,
    )
    for d in decs:
        d.close()
    prep_pool.shutdown()
    dec_pool.shutdown()
    return r


@guarded
def bench_kernels(data, bs, cupy):
    """GPU time of the fused RRC kernel and the validation resize + CMN, per batch."""
    dec = BatchDecoder(0)
    stream = cupy.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(2)
    p = dec.parse(data[:bs])
    full = dec.decode(p, stream=stream)
    win = rrc_windows(p.shapes, rng).astype(np.float32)
    mirror = rng.random(bs) < 0.5
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()

    def timeit(fn, reps=20) -> float:
        fn()
        e0.record(stream)
        for _ in range(reps):
            fn()
        e1.record(stream)
        e1.synchronize()
        return cupy.cuda.get_elapsed_time(e0, e1) / reps

    t_rrc = timeit(
        lambda: resize_crop_mirror_normalize(
            full.images, win, (224, 224), mirror, MEAN, STD, stream=stream
        )
    )
    sizes = sizes_for_shorter_side([im.shape for im in full.images], 256)
    t_rs = timeit(lambda: resize_batch(full.images, sizes, stream=stream))
    resized = resize_batch(full.images, sizes, stream=stream)
    t_cmn = timeit(
        lambda: crop_mirror_normalize_batch(
            resized, (224, 224), mirror=mirror, mean=MEAN, std=STD, stream=stream
        )
    )
    host0 = time.perf_counter()
    for _ in range(20):
        resize_crop_mirror_normalize(full.images, win, (224, 224), mirror, MEAN, STD, stream=stream)
    host_ms = (time.perf_counter() - host0) / 20 * 1e3
    stream.synchronize()
    r = {
        "name": f"kernels per batch of {bs} (ms, GPU time)",
        "fused_rrc_ms": round(t_rrc, 3),
        "resize_shorter_256_ms": round(t_rs, 3),
        "cmn_224_ms": round(t_cmn, 3),
        "fused_rrc_host_launch_ms": round(host_ms, 3),
    }
    RESULTS.append(r)
    print(f"  {r}", flush=True)
    return r


@guarded
def bench_torchvision(data, bs):
    """Anchor: torchvision batched GPU decode + per-image crop/resize/flip, normalize."""
    import torch
    import torchvision
    from torchvision.io import decode_jpeg
    from torchvision.transforms.v2 import functional as F

    rng = np.random.default_rng(3)
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    import io

    from PIL import Image

    bl = batches(data, bs)
    shapes = [np.array([Image.open(io.BytesIO(b)).size[::-1] for b in batch]) for batch in bl]

    def run(idx, ops: bool) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in idx:
            tensors = [torch.frombuffer(b, dtype=torch.uint8) for b in bl[i]]
            imgs = decode_jpeg(tensors, device="cuda")
            if ops:
                win = rrc_windows(shapes[i], rng)
                flips = rng.random(len(imgs)) < 0.5
                outs = []
                for img, (y, x, h, w), f in zip(imgs, win.tolist(), flips):
                    o = F.resize(img[:, y : y + h, x : x + w], [224, 224], antialias=True)
                    outs.append(o.flip(-1) if f else o)
                ((torch.stack(outs).float() - mean) / std).half()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    run([0], True)
    n = len(bl)
    record(
        f"torchvision {torchvision.__version__} decode_jpeg(cuda) only",
        n * bs,
        run(range(n), False),
    )
    record(
        "torchvision decode_jpeg(cuda) + per-image RRC/flip/normalize", n * bs, run(range(n), True)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--images", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--json", default="gpu_path.json")
    ap.add_argument(
        "--hw-decoder-load", type=float, default=1.0, help="split when hybrid is skipped"
    )
    ap.add_argument("--cpu-share", type=float, default=0.0, help="split when hybrid is skipped")
    ap.add_argument("--sections", default="decode,hybrid,kernels,train,torchvision")
    a = ap.parse_args()
    import cupy

    sections = set(a.sections.split(","))
    JSON_PATH.append(a.json)
    data = load_jpegs(a.data, a.images)
    small = data[: max(a.batch * 8, a.images // 4)]
    sizes = np.array([len(b) for b in data])
    print(f"{len(data)} images, mean {sizes.mean() / 1024:.0f} KiB, batch {a.batch}", flush=True)
    bs = a.batch
    rate = {}
    if "decode" in sections:
        bench_overhead(data, bs, cupy)
        print("decode only, one group at a time (ROI unless noted):", flush=True)
        bench_decode("hw decoder, full image", data, bs, cupy, False, hw_decoder_load=1.0)
        bench_decode(
            "hw decoder, whole image + window",
            data,
            bs,
            cupy,
            True,
            hw_decoder_load=1.0,
            hw_roi=False,
        )
        r = bench_decode("hw decoder, ROI decode", data, bs, cupy, True, hw_decoder_load=1.0)
        rate["hw"] = r["img_per_s"] if r else 1.0
        if "train" in sections:
            bench_train(
                "train: hw decoder only, 1 decode thread", data, bs, cupy, 1, 2, hw_decoder_load=1.0
            )
        bench_decode(
            "hw decoder, 4 host threads", data, bs, cupy, True, hw_decoder_load=1.0, num_threads=4
        )
        r = bench_decode("CUDA decoder only", small, bs, cupy, True, use_hw_decoder=False)
        rate["cuda"] = r["img_per_s"] if r else 1.0
        r = bench_decode(
            "CPU only, nvImageCodec libjpeg-turbo, 16 threads",
            small,
            bs,
            cupy,
            True,
            cpu_share=1.0,
            cpu_threads=16,
        )
        rate["cpu_nv"] = r["img_per_s"] if r else 1.0
        r = bench_decode(
            "CPU only, OpenCV + pinned upload, 16 threads",
            small,
            bs,
            cupy,
            True,
            cpu_share=1.0,
            cpu_backend="opencv",
            cpu_threads=16,
        )
        rate["cpu_cv"] = r["img_per_s"] if r else 1.0
    best = {"hw_decoder_load": a.hw_decoder_load, "cpu_share": a.cpu_share}
    if "hybrid" in sections and rate:
        print("concurrent groups (shares from the rates above, shrunk for contention):", flush=True)
        cpu_key = "cpu_nv" if rate["cpu_nv"] >= rate["cpu_cv"] else "cpu_cv"
        backend = "nvimgcodec" if cpu_key == "cpu_nv" else "opencv"
        tried = []
        fractions = (
            (1.0, 0.0),
            (0.5, 0.0),
            (0.0, 1.0),
            (0.0, 0.5),
            (0.5, 0.5),
            (0.3, 0.3),
            (1.0, 1.0),
        )
        for f_cuda, f_cpu in fractions:
            r_hw, r_cu, r_cp = rate["hw"], rate["cuda"] * f_cuda, rate[cpu_key] * f_cpu
            cpu_share = round(r_cp / (r_hw + r_cu + r_cp), 2)
            hw_load = round(r_hw / (r_hw + r_cu), 2)
            cfg = dict(
                hw_decoder_load=hw_load,
                cpu_share=cpu_share,
                cpu_backend=backend,
                cpu_threads=12 if cpu_share else 0,
            )
            label = f"hw {hw_load} of GPU part, cpu share {cpu_share} ({backend})"
            r = bench_decode(label, data, bs, cupy, True, **cfg)
            if r:
                tried.append((r["img_per_s"], cfg))
        if tried:
            best = max(tried, key=lambda t: t[0])[1]
        print(f"  best split: {best}", flush=True)
    if "kernels" in sections:
        print("kernels:", flush=True)
        bench_kernels(data, bs, cupy)
    if "train" in sections:
        print(
            "full ResNet-50 train path (ROI decode + fused RRC/flip/normalize/fp16 NCHW):",
            flush=True,
        )
        bench_train("train: best split, 1 decode thread", data, bs, cupy, 1, 2, **best)
        bench_train("train: best split, 2 decode threads", data, bs, cupy, 2, 3, **best)
    if "torchvision" in sections:
        print("anchor:", flush=True)
        bench_torchvision(small, bs)

    import cupy as cp

    env = {
        "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "cupy": cp.__version__,
    }
    try:
        from nvidia import nvimgcodec

        env["nvimgcodec"] = nvimgcodec.__version__
    except Exception:
        pass
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "env": env,
        "images": len(data),
        "batch": bs,
        "results": RESULTS,
    }
    Path(a.json).write_text(json.dumps(out, indent=1))
    print("\n| benchmark | img/s |\n|---|---|")
    for r in RESULTS:
        if "img_per_s" in r:
            print(f"| {r['name']} | {r['img_per_s']:.0f} |")
        elif "error" in r:
            print(f"| {r['name']} | ERROR {r['error'][:80]} |")


if __name__ == "__main__":
    main()
