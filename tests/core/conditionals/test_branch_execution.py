"""Running branches: determinism across batch splits and batch sizes, checkpoint/resume,
on_error skip inside a branch, and GPU operators in branches on a machine without a GPU
(the CPU fallback)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conditional_inputs import per_sample, run, samples
from PIL import Image

from chute import fn, pipeline_def, types


@pytest.fixture
def images(tmp_path):
    """Twelve small PNGs in two classes, each image a distinct constant colour."""
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for j in range(6):
            pixels = np.full((12 + j, 16, 3), 20 * j + (100 if label == "b" else 0), np.uint8)
            Image.fromarray(pixels).save(tmp_path / label / f"{j}.png")
    return tmp_path


@pipeline_def(enable_conditionals=True, num_threads=2, device_id=None, seed=11)
def augmented(file_root, shuffle=True):
    jpegs, labels = fn.readers.file(file_root=file_root, random_shuffle=shuffle, name="R")
    images = fn.decoders.image(jpegs)
    if fn.random.coin_flip(probability=0.5, dtype=types.BOOL):
        images = fn.rotate(images, angle=fn.random.uniform(range=(10, 30)), fill_value=0)
        jitter = fn.random.uniform(range=(0.0, 1.0))
    else:
        images = fn.flip(images, horizontal=1)
        jitter = fn.random.uniform(range=(5.0, 6.0))
    images = fn.resize(images, size=(8, 8))
    return images, labels, jitter


def _batches(pipe, n):
    return [[samples(out) for out in pipe.run()] for _ in range(n)]


def test_same_seed_same_outputs_for_batch_sizes_4_and_8(images):
    """Readers key a sample's streams by its dataset index: the batches of 4 are the
    batches of 8 cut in two, whichever branch each sample takes."""
    four = _batches(augmented(str(images), shuffle=False, batch_size=4), 2)
    eight = _batches(augmented(str(images), shuffle=False, batch_size=8), 1)
    for k in range(3):  # images, labels, jitter
        assert four[0][k] + four[1][k] == eight[0][k]
    jitters = eight[0][2]
    assert any(j < 1 for j in jitters) and any(j >= 5 for j in jitters)  # both branches


def test_generator_draws_for_batch_sizes_4_and_8():
    """Without a reader the streams are keyed by (epoch, iteration, index in the batch):
    the first four samples of a batch of 8 equal a batch of 4."""

    @pipeline_def(enable_conditionals=True)
    def pipe():
        coin = fn.random.coin_flip(probability=0.5)
        if coin:
            value = fn.random.uniform(range=(0.0, 1.0))
        else:
            value = fn.random.normal() + 10.0
        return coin, value

    coin4, value4 = (samples(b) for b in run(pipe, 4))
    coin8, value8 = (samples(b) for b in run(pipe, 8))
    assert coin4 == coin8[:4] and value4 == value8[:4]
    assert len(set(coin8)) == 2


def test_checkpoint_resume_reproduces_branch_draws(images):
    pipe = augmented(str(images), batch_size=4, enable_checkpointing=True)
    pipe.run()
    text = pipe.checkpoint()
    want = _batches(pipe, 3)  # crosses the epoch's end (12 samples, batches of 4)
    restored = augmented(str(images), batch_size=4, checkpoint=text)
    assert _batches(restored, 3) == want


def test_on_error_skip_inside_a_branch_replaces_the_sample_and_reports_it():
    def fragile(sample):
        if int(sample) == 3:
            raise ValueError("bad sample 3")
        return sample * 2

    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2, 3, 4, 5, 6])
        if x % 2 == 1:
            y = fn.python_function(x, function=fragile)
        else:
            y = x * 10
        return x, y

    p = pipe(
        batch_size=6, num_threads=1, device_id=None, seed=1, on_error="skip", exec_pipelined=False
    )
    x, y = p.run()
    # sample 2 (x == 3) failed: the source's next sample (1, of the next batch) fills
    # its place (issue 30: skip draws further samples)
    assert samples(x) == [1, 2, 4, 5, 6, 1]
    assert samples(y) == [2, 20, 40, 10, 60, 2]
    # the next batch gave a sample: its own failure (x == 3 again) is reported with it
    assert [e["reason"] for e in p.errors()] == ["ValueError: bad sample 3"] * 2
    assert [(e["index"], e["iteration"]) for e in p.errors()] == [(2, 0), (2, 1)]
    assert [m.get("real", True) for m in x.meta] == [True] * 6


def test_gpu_operators_in_branches_fall_back_to_the_cpu(images):
    @pipeline_def(enable_conditionals=True, num_threads=2, device_id=0, seed=3)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(images), name="R")
        small = labels[0] == 0
        if small:
            out = fn.decoders.image(jpegs, device="mixed")
            out = fn.resize(out, size=(4, 4))
        else:
            out = fn.decoders.image(jpegs, device="cpu").gpu()
            out = fn.flip(out, horizontal=1, device="gpu")
            out = fn.resize(out, size=(4, 4))
        return out, labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "no GPU is available: ..."
        out, labels = pipe(batch_size=12).run()
    got = samples(out)
    for i, label in enumerate(samples(labels)):
        level = np.asarray(got[i])[0, 0, 0]
        assert level == 20 * (i % 6) + 100 * label[0]
