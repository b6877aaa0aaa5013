"""Soak: many epochs of a skipping decode pipeline leak no memory, threads or files.

The default run takes ``CHUTE_SOAK_EPOCHS`` (default 4) epochs; ``nox -s soak`` takes 40.
After a warm-up epoch, resident memory may grow by less than 5% and the counts of
threads must come back to where they were, epoch after epoch, and every file descriptor
opened is closed with the pipeline.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from fuzz_corpus import write_corpus

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

EPOCHS = max(3, int(os.environ.get("CHUTE_SOAK_EPOCHS", "4")))

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_epochs_leak_no_memory_threads_or_files(tmp_path):
    files = [str(p) for p in write_corpus(tmp_path, 200, seeds=64)]

    @pipeline_def(batch_size=32, num_threads=2, seed=0, on_error="skip", device_id=None)
    def pipe():
        data, labels = fn.readers.file(files=files, name="R", random_shuffle=True)
        image = fn.decoders.image(data)
        return fn.resize(image, size=(24, 24)), labels

    fds_before = open_fds()
    p = pipe()
    it = Iterator(p, ["image", "label"], reader_name="R", last_batch_policy=LastBatchPolicy.FILL)
    samples = []
    marks = []
    for _ in range(EPOCHS):
        count = 0
        for (b,) in it:
            count += b.real
            assert np.asarray(b["image"].at(0)).shape == (24, 24, 3)
        it.reset()
        samples.append(count)
        marks.append((rss_bytes(), threading.active_count(), open_fds()))
    p.close()
    assert len(set(samples)) == 1 and samples[0] > 64  # the same good samples each epoch
    skipped_per_epoch = p.error_summary()["skipped"] / EPOCHS
    assert samples[0] + skipped_per_epoch == len(files)
    # two warm-up epochs: the first batches start helper threads and caches
    base_rss, base_threads, _ = marks[1]
    rss = [m[0] for m in marks]
    fds = [m[2] for m in marks[1:]]
    print("soak: RSS MB per epoch", [round(r / 2**20, 1) for r in rss], "fds", fds)
    assert all(m[1] == base_threads for m in marks[1:]), marks  # threads: flat
    # files being read ahead for the next epoch are open when an epoch ends: the count
    # varies with the timing (two compute lanes under skip hold up to ~2 batches more),
    # bounded by the prefetch; whatever was opened is closed once the pipeline is
    assert max(fds) <= fds_before + 4 * 32, (fds_before, fds)
    assert open_fds() <= fds_before, (fds_before, open_fds(), fds)
    if len(fds) >= 8:  # a long run (nox -s soak): the count must not creep up either
        half = len(fds) // 2
        assert min(fds[half:]) <= min(fds[:half]), fds
    assert max(rss[2:]) < base_rss * 1.05, f"RSS grew from {base_rss} to {max(rss[2:])} bytes"
