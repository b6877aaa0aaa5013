"""core.select: each sample goes through the augmentation its index picks, and each
augmentation runs only on the samples that picked it."""

from __future__ import annotations

import numpy as np
import pytest
from auto_aug_reference import forward_warp_nn, per_sample, shear_matrix, translation_matrix

from chute import fn, pipeline_def, types
from chute.auto_aug import augmentations as a
from chute.auto_aug.core import augmentation, select, signed_bin

RNG = np.random.default_rng(5)
IMAGES = [RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8) for _ in range(6)]


def run(graph, batch_size=None):
    batch_size = batch_size or len(IMAGES)

    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=11)
    def pipe():
        x = fn.external_source(source=lambda: IMAGES[:batch_size], layout="HWC")
        return graph(x)

    p = pipe()
    p.build()
    outs = p.run()
    outs = [o.as_cpu() for o in outs]
    return [[np.asarray(o.at(i)) for i in range(len(o))] for o in outs]


def test_each_sample_gets_the_augmentation_it_picked():
    picks = [2, 0, 1, 2, 0, 3]
    ops = [a.invert, a.identity, a.posterize, a.solarize]
    # posterize and solarize at bin 1 of 2: (0, 4) -> 4 bits, (256, 0) -> threshold 0
    (out,) = run(
        lambda x: select(ops, per_sample(*picks), x, magnitude_bin=1, num_magnitude_bins=2)
    )
    expected = {
        0: lambda im: 255 - im,
        1: lambda im: im,
        2: lambda im: im & np.uint8(0xF0),
        3: lambda im: 255 - im,
    }
    for image, pick, got in zip(IMAGES, picks, out):
        np.testing.assert_array_equal(got, expected[pick](image))


def test_augmentations_see_only_their_samples_and_an_unpicked_one_runs_on_none():
    seen: dict[str, list[int]] = {"first": [], "second": [], "third": []}

    def make(tag):
        @augmentation
        def count(data, _):
            def note(batch):
                seen[tag].append(len(batch))
                return batch

            return fn.python_function(data, function=note, batch_processing=True)

        return count

    picks = [1, 1, 0, 1, 0, 1]
    (out,) = run(
        lambda x: select([make("first"), make("second"), make("third")], per_sample(*picks), x)
    )
    # (each batch the pipeline computes, prefetched ones included, splits the same way)
    assert set(seen["first"]) == {2} and set(seen["second"]) == {4} and seen["third"] == []
    for image, got in zip(IMAGES, out):
        np.testing.assert_array_equal(got, image)


def test_per_sample_arguments_are_split_with_the_batch():
    # every sample picks translate or shear; its own sign travels with it into the branch
    picks, signs = [0, 1, 0, 1, 1, 0], [0, 0, 1, 1, 0, 1]
    x_shift = a.translate_x_no_shape.augmentation(mag_range=(0, 2))  # 2 bins: bin 1 = 2 px
    shear = a.shear_x.augmentation(mag_range=(0, 0.25))

    def graph(x):
        mag = signed_bin(1, random_sign=per_sample(*signs))
        return select(
            [x_shift, shear], per_sample(*picks), x, magnitude_bin=mag, num_magnitude_bins=2,
            fill_value=0, interp_type=types.INTERP_NN,
        )  # fmt: skip

    (out,) = run(graph)
    for image, pick, sign, got in zip(IMAGES, picks, signs, out):
        s = -1 if sign else 1
        m = translation_matrix(2 * s, 0) if pick == 0 else shear_matrix(0.25 * s, 0)
        np.testing.assert_array_equal(got, forward_warp_nn(image, m, 0))


def test_a_plain_int_index_applies_one_augmentation_to_all():
    (out,) = run(lambda x: select([a.identity, a.invert], 1, x))
    for image, got in zip(IMAGES, out):
        np.testing.assert_array_equal(got, 255 - image)
    with pytest.raises(IndexError, match="index 2 for 2 ops"):
        run(lambda x: select([a.identity, a.invert], 2, x))


@augmentation
def invert_if_dark(data, _):
    """One's own augmentation with an `if` on a per-sample value."""
    if fn.reductions.mean(data) < 128:
        data = types.Constant(255, dtype=types.UINT8) - data  # 255 alone is int32, as in DALI
    return data


@pytest.mark.parametrize("conditionals", [True, False])
def test_an_if_in_ones_own_augmentation_is_per_sample(conditionals):
    dark = np.full((4, 5, 3), 20, np.uint8)
    bright = np.full((4, 5, 3), 200, np.uint8)
    images = [dark, bright, dark, bright]

    @pipeline_def(
        batch_size=4, num_threads=2, device_id=None, seed=1, enable_conditionals=conditionals
    )
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        return select([a.identity, invert_if_dark], per_sample(1, 1, 0, 1), x)

    (out,) = pipe().run()
    expected = [255 - dark, bright, dark, bright]  # sample 2 picked identity
    for i, want in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(out.at(i)), want)
