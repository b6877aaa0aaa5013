"""chute's GPU train pipeline under several decoder, lane and reader settings (GPU machine).

    python bench/gpu_probe.py DATA_DIR OUT.json LANES,HW_LOAD,HW_ROI,MAX_DECODERS,MODE[,KEY=VALUE...] ...

KEY=VALUE: BatchDecoder options, or switch=MS (the switch interval decoders set; none).
Each configuration is a chute.runtime.tuning.Tuning that the measured pipeline is built with.
MODE: defer (readers.file default: helper processes read the files), procN (N of them),
mmap (this process's reader thread
maps the files), read (the reader reads them), ext (encoded bytes cached in memory
after their first read), poolNr / poolNm (files read by N threads, read or mapped). Prints img/s (best of 3 x 16 batches) and per-operator ms.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import cupy

import chute.gpu.runtime as runtime
import chute.ops.readers.file as file_reader
import chute.ops.readers.local_files as local_files
from chute import Iterator, LastBatchPolicy
from chute.runtime import tuning
from chute.tools.benchmark.pipelines import train_pipeline

REAL_READ = file_reader.FileSource.read
REAL_FUSE = file_reader.FileReader.fuse
REAL_NEXT = file_reader.FileSource.next_batch
_cache: dict[str, object] = {}


def cached_read(self, path):
    if path not in _cache:
        _cache[path] = REAL_READ(self, path).copy()
    return _cache[path]


def plain_read(self, path):
    return local_files.read_file(path, False)


def pooled_reader(threads: int, use_mmap: bool):
    pool = ThreadPoolExecutor(threads)

    def next_batch(self, batch_size, epoch, iteration):
        slots, meta = self.take_batch(lambda i: self.files[i])
        paths = [self.files[s.index] for s in slots]
        step = -(-len(paths) // threads)
        chunks = [paths[i : i + step] for i in range(0, len(paths), step)]
        parts = pool.map(lambda c: [local_files.read_file(p, use_mmap) for p in c], chunks)
        data = [x for part in parts for x in part]
        labels = [self.labels[s.index : s.index + 1].copy() for s in slots]
        return [data, labels], meta

    return next_batch


def configure(
    lane: str, load: str, roi: str, max_decoders: str, mode: str, *extra: str
) -> tuning.Tuning:
    """Set up one configuration and return its Tuning; ``extra``: BatchDecoder key=value."""
    options: dict[str, object] = {"hw_roi": roi == "1"}
    switch: float | None = tuning.DEFAULTS.switch_interval
    for item in extra:
        key, value = item.split("=")
        if key == "switch":  # Tuning.switch_interval in ms, "none": leave it
            switch = None if value == "none" else float(value) / 1000
            continue
        for kind in (int, float, str):
            try:
                options[key] = kind(value)
                break
            except ValueError:
                continue
    settings = tuning.Tuning(
        gpu_lanes=int(lane),
        hw_load=float(load),
        decoder_options=options,
        max_decoders=int(max_decoders),
        switch_interval=switch,
        read_processes=int(mode[4:]) if mode.startswith("proc") else 2,
    )
    sys.setswitchinterval(0.005)  # the interpreter's default; decoders lower it (switch=)
    runtime.quick_gil_handoff(switch)  # as a new decoder would (decoders are pooled across runs)
    file_reader.FileSource.read = {"ext": cached_read, "read": plain_read}.get(mode, REAL_READ)
    file_reader.FileSource.next_batch = REAL_NEXT
    file_reader.FileReader.fuse = REAL_FUSE
    if mode != "defer" and not mode.startswith("proc"):  # this thread reads
        file_reader.FileReader.fuse = lambda self, node, consumers: None
    if mode.startswith("pool"):
        file_reader.FileSource.next_batch = pooled_reader(int(mode[4:-1]), mode.endswith("m"))
    return settings


TIMES: dict[str, float] = {}


def timed(owner: object, name: str, label: str) -> None:
    """Wrap owner.name to add its wall time (all threads together) to TIMES[label]."""
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            TIMES[label] = TIMES.get(label, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)


def instrument() -> None:
    """Time the steps of mixed decoding (PROBE_TIMES=1): ms per batch in the output."""
    import chute.gpu.codec_api as codec_api
    import chute.gpu.jpeg as jpeg
    import chute.ops.decoders.image_gpu as image_gpu
    import chute.ops.readers.read_processes as procs

    timed(image_gpu, "decode_mixed", "decode_mixed")
    timed(image_gpu, "random_crop_windows", "windows")
    timed(jpeg.BatchDecoder, "parse", "parse")
    timed(jpeg.BatchDecoder, "prepare", "prepare")
    timed(jpeg.BatchDecoder, "_decode_group", "group (queue wait + decode)")
    timed(codec_api.CodecDecoder, "run", "decode call (decoder thread)")
    timed(codec_api.CodecDecoder, "decode", "nvimgcodec decode")
    timed(codec_api.StreamBatch, "__del__", "stream destroy")
    timed(procs.ReadProcesses, "read", "process read")


def measure(root: str) -> dict:
    pipe = train_pipeline(root, 256, 16, "gpu")
    it = Iterator(
        pipe,
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=LastBatchPolicy.DROP,
        auto_reset=True,
    )

    def step():
        try:
            return next(it)
        except StopIteration:
            return next(it)

    for _ in range(5):
        step()
    cupy.cuda.Device().synchronize()
    before = pipe.executor_statistics()
    TIMES.clear()
    reps = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(16):
            step()
        cupy.cuda.Device().synchronize()
        reps.append(round(16 * 256 / (time.perf_counter() - start)))
    after = pipe.executor_statistics()
    ops = {
        k: round((v["total_time_s"] - before.get(k, {}).get("total_time_s", 0)) * 1000 / 48, 2)
        for k, v in after.items()
    }
    sources = pipe._executor.sources.values() if getattr(pipe, "_executor", None) else []
    fallbacks = sum(getattr(getattr(s, "processes", None), "fallbacks", 0) for s in sources)
    pipe.close()
    TIMES["reader fallbacks (count)"] = fallbacks * 48 / 1000
    steps = {k: round(v * 1000 / 48, 2) for k, v in TIMES.items()}
    return {"img_per_s": max(reps), "reps": reps, "ms_per_batch_by_op": ops, "steps": steps}


def main() -> None:
    root, out = sys.argv[1], sys.argv[2]
    if os.environ.get("PROBE_TIMES"):
        instrument()
    results = {}
    for config in sys.argv[3:]:
        with tuning.use(configure(*config.split(","))):  # the pipeline built in measure
            results[config] = measure(root)
        print(f"{config:24s} {results[config]}", flush=True)
        gc.collect()
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
