"""Operator-level tests: fn.* / ops.* of the color and image families inside pipelines.

The kernels are checked against independent references in the other test files; here the
operators must route (per-sample) arguments, masks, dtypes and layouts to them correctly.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, ops, pipeline_def, types
from chute.ops.color import color_kernels as ck
from chute.ops.color.color_space_kernels import color_space_conversion
from chute.ops.image.cmn_kernels import crop_mirror_normalize
from chute.ops.image.filter_kernels import gaussian_blur
from chute.ops.image.normalize_kernels import normalize, normalize_batch

BATCH = 4
RNG = np.random.default_rng(21)
IMAGES = [RNG.integers(0, 256, size=(21 + 2 * i, 27 + i, 3), dtype=np.uint8) for i in range(BATCH)]


def _per_sample(values: list, dtype: type = np.float32) -> list[np.ndarray]:
    return [np.array(v, dtype=dtype) for v in values]


def _run(graph, images: list[np.ndarray] = IMAGES, **sources: list) -> list:
    """Build a pipeline whose inputs are ``images`` plus named per-sample argument sources."""

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        out = graph(x, **named)
        return out if isinstance(out, tuple) else (out,)

    p = pipe()
    p.build()
    return list(p.run())


def _samples(batch) -> list[np.ndarray]:
    return [np.asarray(batch.at(i)) for i in range(len(batch))]


def test_color_twist_per_sample_arguments_and_mask() -> None:
    hue = [10.0, -40.0, 90.0, 0.0]
    sat = [1.5, 0.2, 1.0, 0.0]
    mask = [True, False, True, True]
    (out,) = _run(
        lambda x, h, s, m: fn.color_twist(x, hue=h, saturation=s, brightness=1.1, mask=m),
        h=_per_sample(hue),
        s=_per_sample(sat),
        m=_per_sample(mask, np.bool_),
    )
    assert out.layout() == "HWC"
    for i, got in enumerate(_samples(out)):
        want = (
            ck.color_twist(IMAGES[i], brightness=1.1, hue=hue[i], saturation=sat[i])
            if mask[i]
            else IMAGES[i]
        )
        np.testing.assert_array_equal(got, want)


def test_masked_samples_still_take_the_output_dtype() -> None:
    mask = [False, True, False, True]
    (out,) = _run(
        lambda x, m: fn.brightness_contrast(x, brightness=0.5, dtype=types.FLOAT, mask=m),
        m=_per_sample(mask, np.bool_),
    )
    for i, got in enumerate(_samples(out)):
        assert got.dtype == np.float32
        want = ck.brightness_contrast(IMAGES[i], 0.5, dtype=np.float32) if mask[i] else IMAGES[i]
        np.testing.assert_array_equal(got, np.asarray(want, np.float32))


@pytest.mark.parametrize(
    ("name", "kwargs", "kernel"),
    [
        ("hsv", {"hue": 30.0, "saturation": 0.5, "value": 0.9}, ck.hsv),
        ("hue", {"hue": -25.0}, ck.hue),
        ("saturation", {"saturation": 1.7}, ck.saturation),
        ("brightness", {"brightness": 1.3, "brightness_shift": 0.1}, ck.brightness),
        ("contrast", {"contrast": 0.6, "contrast_center": 100.0}, ck.contrast),
        (
            "brightness_contrast",
            {"brightness": 0.9, "brightness_shift": -0.05, "contrast": 1.4},
            ck.brightness_contrast,
        ),
    ],
)
def test_color_family_matches_kernels(name: str, kwargs: dict, kernel) -> None:
    (out,) = _run(lambda x: getattr(fn, name)(x, **kwargs))
    for i, got in enumerate(_samples(out)):
        np.testing.assert_array_equal(got, kernel(IMAGES[i], **kwargs))


def test_legacy_ops_api_and_bgr() -> None:
    twist = ops.ColorTwist(hue=45.0, image_type=types.BGR)
    (out,) = _run(lambda x: twist(x, saturation=0.3))
    for i, got in enumerate(_samples(out)):
        want = ck.color_twist(IMAGES[i], hue=45.0, saturation=0.3, image_type="BGR")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("src", "dst"), [(types.RGB, types.YCbCr), (types.RGB, types.GRAY), (types.BGR, types.HSV)]
)
def test_color_space_conversion(src, dst) -> None:
    (out,) = _run(lambda x: fn.color_space_conversion(x, image_type=src, output_type=dst))
    for i, got in enumerate(_samples(out)):
        np.testing.assert_array_equal(got, color_space_conversion(IMAGES[i], src, dst))


def test_lookup_table() -> None:
    keys, values = [0, 10, 200], [5.0, 1.5, -1.0]
    (out,) = _run(
        lambda x: fn.lookup_table(x, keys=keys, values=values, default_value=2.0, dtype=types.FLOAT)
    )
    for i, got in enumerate(_samples(out)):
        np.testing.assert_array_equal(
            got, ck.lookup_table(IMAGES[i], keys, values, 2.0, np.float32)
        )
    with pytest.raises(ValueError, match="same length"):
        _run(lambda x: fn.lookup_table(x, keys=[1, 2], values=[1.0]))
    # without dtype the output is float32, as DALI 2.4's default (FLOAT)
    (default,) = _run(lambda x: fn.lookup_table(x, keys=[0, 255], values=[0.5, 7.25]))
    first = _samples(default)[0]
    assert first.dtype == np.float32
    want = np.where(IMAGES[0] == 0, 0.5, np.where(IMAGES[0] == 255, 7.25, 0.0))
    np.testing.assert_array_equal(first, want.astype(np.float32))


def test_gaussian_blur_per_sample_sigma_border_and_mask() -> None:
    sigma = [0.8, 1.5, 2.5, 1.0]
    mask = [True, True, False, True]
    (out,) = _run(
        lambda x, s, m: fn.gaussian_blur(x, sigma=s, border="wrap", mask=m),
        s=_per_sample(sigma),
        m=_per_sample(mask, np.bool_),
    )
    for i, got in enumerate(_samples(out)):
        want = gaussian_blur(IMAGES[i], sigma[i], border="wrap") if mask[i] else IMAGES[i]
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="odd"):
        _run(lambda x: fn.gaussian_blur(x, window_size=4))
    with pytest.raises(ValueError, match="sigma"):
        _run(lambda x: fn.gaussian_blur(x))
    with pytest.raises(ValueError, match="accepted values"):
        _run(lambda x: fn.gaussian_blur(x, sigma=1.0, border="mirror"))


def test_normalize_per_sample_and_batch() -> None:
    images = [RNG.normal(i, 1 + i, size=(9, 11, 3)).astype(np.float32) for i in range(BATCH)]
    per, whole, named = _run(
        lambda x: (
            fn.normalize(x, axes=(0, 1)),
            fn.normalize(x, batch=True, axes=(0, 1), scale=2.0),
            fn.normalize(x, batch=True, axis_names="HW", scale=2.0),
        ),
        images=images,
    )
    batch_want = normalize_batch(images, axes=(0, 1), scale=2.0)
    for i in range(BATCH):
        np.testing.assert_allclose(per.at(i), normalize(images[i], axes=(0, 1)), atol=1e-6)
        np.testing.assert_allclose(whole.at(i), batch_want[i], atol=1e-6)
        np.testing.assert_allclose(named.at(i), batch_want[i], atol=1e-6)
    # Batch statistics differ from per-sample ones.
    assert not np.allclose(whole.at(0), 2 * np.asarray(per.at(0)), atol=1e-2)


def test_normalize_per_sample_mean_and_scale() -> None:
    means = [np.full((1, 1, 3), m, np.float32) for m in (10.0, 50.0, 100.0, 200.0)]
    scale = [1.0, 2.0, 0.5, 4.0]
    (out,) = _run(
        lambda x, m, s: fn.normalize(x, mean=m, stddev=20.0, scale=s, shift=1.0),
        m=means,
        s=_per_sample(scale),
    )
    for i, got in enumerate(_samples(out)):
        want = (IMAGES[i] - means[i].astype(np.float64)) / 20.0 * scale[i] + 1.0
        np.testing.assert_allclose(got, want, atol=1e-4)
    with pytest.raises(TypeError, match="constants"):
        _run(lambda x, m: fn.normalize(x, batch=True, mean=m), m=means)


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_crop_mirror_normalize_per_sample(layout: str) -> None:
    pos_x = [0.0, 0.3, 0.7, 1.0]
    mirror = [0, 1, 1, 0]
    mean, std = [120.0, 110.0, 100.0], [60.0, 58.0, 57.0]
    (out,) = _run(
        lambda x, px, mi: fn.crop_mirror_normalize(
            x,
            crop=(16, 20),
            crop_pos_x=px,
            mirror=mi,
            mean=mean,
            std=std,
            dtype=types.FLOAT16,
            output_layout=layout,
            pad_output=True,
        ),
        px=_per_sample(pos_x),
        mi=_per_sample(mirror, np.int32),
    )
    assert out.layout() == layout
    for i, got in enumerate(_samples(out)):
        want = crop_mirror_normalize(
            IMAGES[i],
            crop=(16, 20),
            crop_pos_x=pos_x[i],
            mirror=bool(mirror[i]),
            mean=mean,
            std=std,
            dtype=np.float16,
            output_layout=layout,
            pad_output=True,
        )
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)


def test_crop_mirror_normalize_checks() -> None:
    with pytest.raises(ValueError, match="not both"):
        _run(lambda x: fn.crop_mirror_normalize(x, crop=(4, 4), crop_h=4))
    with pytest.raises(Exception, match="out_of_bounds_policy"):
        _run(lambda x: fn.crop_mirror_normalize(x, crop=(400, 4)))
    (padded,) = _run(
        lambda x: fn.crop_mirror_normalize(x, crop=(40, 30), out_of_bounds_policy="pad")
    )
    assert padded.at(0).shape == (3, 40, 30)
    with pytest.raises(TypeError):
        _run(lambda x: fn.crop_mirror_normalize(x, cropp=(4, 4)))
