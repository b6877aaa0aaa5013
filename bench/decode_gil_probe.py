"""One nvImageCodec decoder beside busy Python threads: img/s by thread layout, switch interval.

    python bench/decode_gil_probe.py DATA_DIR [--share]   (GPU machine; make_dataset.py JPEGs)

--share: the hardware decoder beside a CPU or CUDA decoder on two threads, by share.

seq: one thread prepares, decodes and frees; split: a thread that only runs the decode
calls, fed by another (what chute.gpu.jpeg does). "hogs" are threads running pure Python.
Also checks whether decode calls on one decoder may overlap (lanes that lock only the
submission): their pixels differed from sequential decoding on an H100, so chute does not.
"""

import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from ctypes import byref, c_size_t, c_void_p
from pathlib import Path

import cupy
import numpy as np

from chute.gpu.codec_api import CodecDecoder, api, parse_batch

root = sys.argv[1]
files = sorted(Path(root).rglob("*.jpg"))[:4096]
data = [np.frombuffer(p.read_bytes(), np.uint8) for p in files]
rng = np.random.default_rng(0)


def regions(shapes):
    out = []
    for h, w in shapes.tolist():
        a = rng.uniform(0.08, 1) * h * w
        r = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        cw, ch = min(w, int(np.sqrt(a * r))), min(h, int(np.sqrt(a / r)))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        out.append((y, x, y + ch, x + cw))
    return out


prepared = []
for i in range(0, len(data), 256):
    sb = parse_batch(data[i : i + 256])
    prepared.append((sb, sb.sub_streams(regions(sb.shapes))))
lib = api()
streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(3)]
HW = [("hw", 1.0), ("gpu", 1.0), ("hybrid", 1.0)]
dec = CodecDecoder(0, HW, 0, "")


def alloc_on(s):
    def alloc(n):
        with s:
            return cupy.empty(n, np.uint8)

    return alloc


def submit(job):
    fut = c_void_p()
    lib.check(
        lib.DecoderDecode(
            dec._handle, job.sources, job.images, job.n, byref(dec._decode_params), byref(fut)
        ),
        "dd",
    )
    return fut


def wait(fut, n):
    lib.FutureWaitForAll(fut)
    st = np.zeros(n, np.uint32)
    size = c_size_t(n)
    lib.FutureGetProcessingStatus(fut, st.ctypes.data, byref(size))
    lib.FutureDestroy(fut)
    return st


sums = {}


def checksum(k, buf, s):
    s.synchronize()
    return int(buf.sum(dtype=np.uint64))


stop = False


def hog():
    while not stop:
        sum(range(2000))


def with_hog(fn, hogs):
    global stop
    stop = False
    ts = [threading.Thread(target=hog, daemon=True) for _ in range(hogs)]
    for t in ts:
        t.start()
    try:
        return fn()
    finally:
        stop = True
        for t in ts:
            t.join()


def seq(record=False, check=None):
    s = streams[0]
    tsub = twait = 0.0
    t0 = time.perf_counter()
    for k, (_sb, sub) in enumerate(prepared):
        job = dec.prepare(sub, range(256), "RGB", alloc_on(s), s.ptr)
        a = time.perf_counter()
        fut = submit(job)
        b = time.perf_counter()
        st = wait(fut, 256)
        c = time.perf_counter()
        tsub += b - a
        twait += c - b
        _imgs, buf = dec.finish(job, st)
        if record:
            sums[k] = checksum(k, buf, s)
        if check is not None and k < 4:
            check.append(checksum(k, buf, s) == sums[k])
    s.synchronize()
    dt = time.perf_counter() - t0
    return len(data) / dt, tsub / len(prepared) * 1e3, twait / len(prepared) * 1e3


def lanes(lock_all, nlanes=2, check=None):
    lock = threading.Lock()
    idx = iter(range(len(prepared)))
    ilock = threading.Lock()

    def lane(s):
        while True:
            with ilock:
                k = next(idx, None)
            if k is None:
                return
            job = dec.prepare(prepared[k][1], range(256), "RGB", alloc_on(s), s.ptr)
            if lock_all:
                with lock:
                    st = wait(submit(job), 256)
            else:
                with lock:
                    fut = submit(job)
                st = wait(fut, 256)
            _imgs, buf = dec.finish(job, st)
            if check is not None and k < 4:
                check.append(checksum(k, buf, s) == sums[k])

    t0 = time.perf_counter()
    ts = [threading.Thread(target=lane, args=(streams[i],)) for i in range(nlanes)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in streams:
        s.synchronize()
    return len(data) / (time.perf_counter() - t0)


def pipelined(check=None):
    s0, s1 = streams[0], streams[1]
    t0 = time.perf_counter()
    pending = None
    for k, (_sb, sub) in enumerate(prepared):
        s = (s0, s1)[k % 2]
        job = dec.prepare(sub, range(256), "RGB", alloc_on(s), s.ptr)
        fut = submit(job)
        if pending is not None:
            pk, pjob, pfut, ps = pending
            _, buf = dec.finish(pjob, wait(pfut, 256))
            if check is not None and pk < 4:
                check.append(checksum(pk, buf, ps) == sums[pk])
        pending = (k, job, fut, s)
    pk, pjob, pfut, ps = pending
    dec.finish(pjob, wait(pfut, 256))
    for s in streams:
        s.synchronize()
    return len(data) / (time.perf_counter() - t0)


def split_threads():
    """prep thread: prepare+finish; decode thread: submit+wait only."""
    q_in, q_out = queue.Queue(4), queue.Queue(4)

    def decoder():
        while True:
            job = q_in.get()
            if job is None:
                q_out.put(None)
                return
            q_out.put((job, wait(submit(job), 256)))

    t = threading.Thread(target=decoder)
    t.start()

    def finisher():
        while True:
            item = q_out.get()
            if item is None:
                return
            dec.finish(*item)

    f = threading.Thread(target=finisher)
    f.start()
    t0 = time.perf_counter()
    for k, (_sb, sub) in enumerate(prepared):
        s = streams[k % 3]
        q_in.put(dec.prepare(sub, range(256), "RGB", alloc_on(s), s.ptr))
    q_in.put(None)
    t.join()
    f.join()
    for s in streams:
        s.synchronize()
    return len(data) / (time.perf_counter() - t0)


_others: dict = {}


def shared(others: str, share: float, threads: int = 0) -> float:
    """The hardware decoder and a second decoder ("cpu" or "cuda") on two threads at once.

    Each batch: the first (1 - share) samples to the hardware decoder, the rest to the
    other one (CPU: libjpeg-turbo into pinned memory; cuda: nvJPEG on the SMs).
    """
    kinds = {"cpu": [("cpu", 1.0)], "cuda": [("gpu", 1.0), ("hybrid", 1.0)]}[others]
    if others not in _others:  # made once: a new decoder's first batches are slow
        _others[others] = CodecDecoder(0, kinds, threads, "", host=others == "cpu")
    other = _others[others]
    import cupyx

    def host_alloc(n):
        return cupyx.empty_pinned(n, np.uint8)

    pool = ThreadPoolExecutor(2)
    t0 = time.perf_counter()
    for k, (_sb, sub) in enumerate(prepared):
        s = streams[k % 3]
        m = round(256 * (1 - share))
        jobs = [
            (dec, dec.prepare(sub, range(m), "RGB", alloc_on(s), s.ptr)),
            (
                other,
                other.prepare(
                    sub, range(m, 256), "RGB", host_alloc if others == "cpu" else alloc_on(s), s.ptr
                ),
            ),
        ]
        runs = [pool.submit(d.run, j) for d, j in jobs]
        for (d, j), r in zip(jobs, runs):
            d.finish(j, r.result())
    for s in streams:
        s.synchronize()
    pool.shutdown()
    return len(data) / (time.perf_counter() - t0)


if "--share" in sys.argv:
    seq(), shared("cpu", 0.2), shared("cuda", 0.2)  # warm-up
    for _ in range(2):
        print(f"hw alone              img/s {seq()[0]:.0f}")
        for others, share in (
            ("cpu", 0.1),
            ("cpu", 0.2),
            ("cpu", 0.3),
            ("cuda", 0.1),
            ("cuda", 0.2),
        ):
            print(f"hw + {others} {share:.1f}          img/s {shared(others, share):.0f}")
else:
    seq(record=True)
    print("seq no hog            img/s {:.0f} submit {:.2f} ms wait {:.2f} ms".format(*seq()))
    print(f"split no hog          img/s {split_threads():.0f}")
    for interval in (0.005, 0.001, 0.0002):
        sys.setswitchinterval(interval)
        for hogs in (1, 3):
            print(f"--- switch {interval * 1e3:.1f} ms, {hogs} hog(s)")
            print(
                "seq                   img/s {:.0f} submit {:.2f} ms wait {:.2f} ms".format(
                    *with_hog(seq, hogs)
                )
            )
            print(f"split                 img/s {with_hog(split_threads, hogs):.0f}")
