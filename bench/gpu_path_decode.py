"""bench/gpu_path.py's decode measurements: batch JPEG decoding on the GPU (hardware and
CUDA decoders, ROI or whole image, several host threads), OpenCV decoding with a pinned
upload, and the host time of the Python steps around nvImageCodec."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core" / "src"))

from gpu_path_common import RESULTS, batches, guarded, record, rrc_windows

from chute.gpu.cpu_decode import decode_and_upload
from chute.gpu.jpeg import BatchDecoder


@guarded
def bench_decode(label: str, data, bs, cupy, roi: bool, threads: int = 1, **cfg):
    """Decode-only throughput; ``threads`` decoders run alternate batches concurrently."""
    decs = [BatchDecoder(0, **cfg) for _ in range(threads)]
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(threads)]
    rng = np.random.default_rng(0)
    parsed = [decs[0].parse(b) for b in batches(data, bs)]
    rois = [rrc_windows(p.shapes, rng) if roi else None for p in parsed]
    for p, r in zip(parsed, rois):
        decs[0].prepare(p, r)  # header and ROI host work belong to the prep thread
    t_call = [0.0] * threads
    sources: dict[str, int] = {}

    def work(j: int, idx: list[int]) -> int:
        errors = 0
        for i in idx:
            t0 = time.perf_counter()
            out = decs[j].decode(parsed[i], stream=streams[j], as_cupy=False)
            t_call[j] += time.perf_counter() - t0
            streams[j].synchronize()
            errors += sum(e is not None for e in out.errors)
            for src in out.sources:
                sources[src] = sources.get(src, 0) + 1
        return errors

    work(0, [0])  # warm-up: allocations, HW decoder state
    for j in range(1, threads):
        work(j, [0])
    t_call[:] = [0.0] * threads
    sources.clear()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        errs = sum(
            ex.map(
                work, range(threads), [list(range(j, len(parsed), threads)) for j in range(threads)]
            )
        )
    dt = time.perf_counter() - t0
    r = record(
        label,
        len(data),
        dt,
        roi=roi,
        threads=threads,
        errors=errs,
        call_s=round(sum(t_call), 3),
        sources=sources,
        **cfg,
    )
    for d in decs:
        d.close()
    return r


@guarded
def bench_cpu_decode(data, bs, cupy, workers: int, roi: bool):
    """OpenCV decode + crop + pinned upload on ``workers`` threads, no GPU decoding."""
    stream = cupy.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(0)
    dec = BatchDecoder(0)
    parsed = [dec.parse(b) for b in batches(data, bs)]
    rois = [rrc_windows(p.shapes, rng) if roi else [None] * len(p.encoded) for p in parsed]
    with ThreadPoolExecutor(workers) as ex:
        list(
            ex.map(
                lambda a: decode_and_upload(cupy, 0, a[0], a[1], "RGB", stream),
                zip(parsed[0].encoded, rois[0]),
            )
        )
        t0 = time.perf_counter()
        for p, r in zip(parsed, rois):
            outs = list(
                ex.map(
                    lambda a: decode_and_upload(cupy, 0, a[0], a[1], "RGB", stream),
                    zip(p.encoded, r),
                )
            )
            stream.synchronize()
            del outs
        dt = time.perf_counter() - t0
    return record(
        f"cpu decode opencv {workers} threads{' roi' if roi else ''}",
        len(data),
        dt,
        workers=workers,
    )


@guarded
def bench_overhead(data, bs, cupy):
    """Host time per batch of the Python-side steps around nvImageCodec."""
    from nvidia import nvimgcodec as nv

    dec = BatchDecoder(0, hw_decoder_load=1.0)
    rng = np.random.default_rng(4)
    batch = data[:bs]
    t0 = time.perf_counter()
    p = dec.parse(batch)
    t_parse = time.perf_counter() - t0
    win = rrc_windows(p.shapes, rng)
    t0 = time.perf_counter()
    rrc_windows(p.shapes, rng)
    t_win = time.perf_counter() - t0
    t0 = time.perf_counter()
    subs = [
        cs.get_sub_code_stream(region=nv.Region(int(y), int(x), int(y + h), int(x + w)))
        for cs, (y, x, h, w) in zip(p.streams, win)
    ]
    t_sub = time.perf_counter() - t0
    decoder = dec._groups["hw"][0]
    stream = cupy.cuda.Stream(non_blocking=True)
    images = decoder.decode(subs, cuda_stream=stream.ptr)
    t0 = time.perf_counter()
    images = decoder.decode(subs, cuda_stream=stream.ptr)
    t_call = time.perf_counter() - t0
    stream.synchronize()
    t0 = time.perf_counter()
    with stream:
        arrs = [cupy.from_dlpack(im) for im in images]
    t_dl = time.perf_counter() - t0
    r = {
        "name": f"host overhead per batch of {bs} (ms)",
        "parse": t_parse * 1e3,
        "rrc_windows": t_win * 1e3,
        "sub_code_streams": t_sub * 1e3,
        "hw_decode_call": t_call * 1e3,
        "from_dlpack": t_dl * 1e3,
    }
    r = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
    RESULTS.append(r)
    print(f"  {r}", flush=True)
    del arrs
    dec.close()
