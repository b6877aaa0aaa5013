"""The fused point operation of the auto_aug augmentations (chute.ops.auto_aug): each kind
against its NumPy definition, against the chain of chute operators it replaced (equal to
the last bit), and the GPU backend against the CPU."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.auto_aug.point_kernels import (
    LUMA,
    apply_point,
    lut_channels,
    point_luts,
    sample_stats,
    stats_from_histograms,
)
from chute.ops.auto_aug.point_ops import point_op

RNG = np.random.default_rng(31)
IMAGES = [
    RNG.integers(0, 256, (9, 11, 3), dtype=np.uint8),
    RNG.integers(40, 180, (7, 5, 3), dtype=np.uint8),
    RNG.integers(0, 256, (1, 13, 3), dtype=np.uint8),
    np.full((4, 6, 3), 99, np.uint8),
]
FLAT_GREEN = IMAGES[0].copy()
FLAT_GREEN[..., 1] = 77
IMAGES.append(FLAT_GREEN)


def run(kind, images, params=None, device="cpu", graph=None):
    """``point_op(kind)`` (or ``graph(x, param)``) over a batch, parameters per sample."""

    @pipeline_def(
        batch_size=len(images), num_threads=2, device_id=0 if device == "gpu" else None, seed=1
    )
    def pipe():
        x = fn.external_source(source=lambda: list(images), layout="HWC")
        p = None
        if params is not None:
            p = fn.external_source(source=lambda: [np.float32(v) for v in params])
        if device == "gpu":
            x = x.gpu()
        return graph(x, p) if graph is not None else point_op(x, kind, p)

    pipe_ = pipe()
    pipe_.build()
    (out,) = pipe_.run()
    out = out.as_cpu()
    return [np.asarray(out.at(i)) for i in range(len(images))]


def half_away(x):
    """Round half away from zero and saturate to uint8 (float64 reference)."""
    x = np.asarray(x, np.float64)
    return np.clip(np.trunc(x + np.copysign(0.5, x)), 0, 255).astype(np.uint8)


# -- each kind against its definition ----------------------------------------------------


def test_posterize_solarize_solarize_add_invert_follow_their_definitions():
    params = [0xF0, 0x80, 0xFF, 0xE0, 0xC0]
    for out, image, mask in zip(run("posterize", IMAGES, params), IMAGES, params):
        np.testing.assert_array_equal(out, image & np.uint8(mask))
    thresholds = [128, 0, 256, 100, 77.5]
    for out, image, t in zip(run("solarize", IMAGES, thresholds), IMAGES, thresholds):
        np.testing.assert_array_equal(out, np.where(image < t, image, 255 - image))
    shifts = [0, 33, 110, 127, 5]
    for out, image, s in zip(run("solarize_add", IMAGES, shifts), IMAGES, shifts):
        want = np.where(image < 128, image.astype(int) + s, image).astype(np.uint8)
        np.testing.assert_array_equal(out, want)
    for out, image in zip(run("invert", IMAGES), IMAGES):
        np.testing.assert_array_equal(out, 255 - image)


def test_contrast_scales_the_distance_from_the_mean_luma():
    factors = [1.45, 0.55, 0.0, 1.9, 1.0]
    for out, image, f in zip(run("contrast", IMAGES, factors), IMAGES, factors):
        means = image.reshape(-1, 3).mean(axis=0, dtype=np.float64).astype(np.float32)
        center = np.float32((means * LUMA)[0] + (means * LUMA)[1] + (means * LUMA)[2])
        want = center + (image.astype(np.float32) - center) * np.float32(f)
        np.testing.assert_array_equal(out, half_away(want))
    # factor 0: every pixel becomes the (rounded) mean luma
    assert len(np.unique(run("contrast", IMAGES[:1], [0.0])[0])) == 1


def test_auto_contrast_stretches_each_channel_to_the_full_range():
    for out, image in zip(run("auto_contrast", IMAGES), IMAGES):
        lo = image.min(axis=(0, 1)).astype(np.float64)
        hi = image.max(axis=(0, 1)).astype(np.float64)
        span = hi - lo
        scale = np.where(span > 0, np.float32(255) / np.where(span > 0, span, 1), 1)
        want = (image - np.where(span > 0, lo, 0)) * scale.astype(np.float32)
        np.testing.assert_array_equal(out, half_away(want))
    stretched = run("auto_contrast", IMAGES)
    assert (stretched[4][..., 1] == 77).all()  # a channel with one value is kept
    np.testing.assert_array_equal(stretched[3], IMAGES[3])
    assert stretched[0].min(axis=(0, 1)).tolist() == [0, 0, 0]
    assert stretched[0].max(axis=(0, 1)).tolist() == [255, 255, 255]


def test_equalize_is_opencvs_per_channel_equalize_hist():
    for out, image in zip(run("equalize", IMAGES), IMAGES):
        planes = [cv2.equalizeHist(np.ascontiguousarray(image[..., c])) for c in range(3)]
        np.testing.assert_array_equal(out, np.stack(planes, axis=-1))


# -- equal to the operator chains the augmentations used before --------------------------


def contrast_graph(data, parameter):
    channel_means = fn.reductions.mean(data, axis_names="HW", keep_dims=True)
    weighted = channel_means * types.Constant(LUMA)
    center = fn.reductions.sum(weighted, axis_names="C", keep_dims=True)
    return fn.cast_like(center + (data - center) * parameter, data)


def auto_contrast_graph(data, _):
    u8_max = types.Constant(255, dtype=types.UINT8)
    lo = fn.reductions.min(data, axis_names="HW", keep_dims=True)
    hi = fn.reductions.max(data, axis_names="HW", keep_dims=True)
    span = hi - lo
    stretch = span > 0
    scale = 255 / (span + (stretch ^ True) * u8_max)
    return fn.cast_like((data - lo * stretch) * scale, data)


def solarize_graph(data, threshold):
    below = data < threshold
    return below * data + (below ^ True) * (types.Constant(255, dtype=types.UINT8) - data)


@pytest.mark.parametrize(
    ("kind", "graph", "params"),
    [
        ("contrast", contrast_graph, np.linspace(0.1, 1.9, 12)),
        ("auto_contrast", auto_contrast_graph, None),
        ("solarize", solarize_graph, np.linspace(256, 0, 12)),
    ],
)
def test_equal_to_the_operator_chain_it_replaced(kind, graph, params):
    rng = np.random.default_rng(7)
    images = [
        rng.integers(lo, hi, (int(rng.integers(2, 30)), int(rng.integers(2, 30)), 3), np.uint8)
        for lo, hi in [(0, 256), (60, 190), (10, 40), (200, 256)] * 3
    ]
    images.append(FLAT_GREEN)
    if params is not None:
        params = [*np.float32(params), np.float32(0.77)]
    fused = run(kind, images, params)
    chained = run(kind, images, params, graph=graph)
    for f, c in zip(fused, chained):
        np.testing.assert_array_equal(f, c)


# -- the kernels' pieces -----------------------------------------------------------------


def test_statistics_from_histograms_equal_the_images_own():
    # the GPU backend derives means and ranges from histograms: they must be the CPU's
    for image in IMAGES:
        hist = np.stack([np.bincount(image[..., c].ravel(), minlength=256) for c in range(3)])
        for kind in ("contrast", "auto_contrast", "equalize"):
            direct = sample_stats(kind, image)
            derived = stats_from_histograms(kind, hist[None])
            assert direct.keys() == derived.keys()
            for key in direct:
                np.testing.assert_array_equal(direct[key], derived[key])
                assert direct[key].dtype == derived[key].dtype


@pytest.mark.parametrize("channels", [1, 2, 4, 5])
def test_per_channel_tables_for_any_channel_count(channels):
    image = RNG.integers(0, 256, (6, 7, channels), dtype=np.uint8)
    luts = RNG.integers(0, 256, (channels, 256), dtype=np.uint8)
    want = np.stack([luts[c][image[..., c]] for c in range(channels)], axis=-1)
    np.testing.assert_array_equal(lut_channels(image, luts), want)
    lo, hi = image.min(axis=(0, 1)), image.max(axis=(0, 1))
    stretched = apply_point(image, "auto_contrast", 0)
    np.testing.assert_array_equal(stretched.min(axis=(0, 1)), np.where(hi > lo, 0, lo))


def test_gray_images_and_empty_images():
    gray = RNG.integers(0, 256, (5, 6), dtype=np.uint8)
    np.testing.assert_array_equal(apply_point(gray, "invert", 0), 255 - gray)
    np.testing.assert_array_equal(apply_point(gray, "equalize", 0), cv2.equalizeHist(gray))
    empty = np.zeros((0, 4, 3), np.uint8)
    assert apply_point(empty, "auto_contrast", 0).shape == (0, 4, 3)


def test_tables_of_a_batch_are_per_sample():
    luts = point_luts("posterize", np.array([0x80, 0xFF]), {}, 3)
    assert luts.shape == (2, 3, 256) and luts.dtype == np.uint8
    np.testing.assert_array_equal(luts[0, 2], np.arange(256) & 0x80)
    np.testing.assert_array_equal(luts[1, 0], np.arange(256))


def test_refuses_other_types_and_unknown_kinds():
    with pytest.raises(TypeError, match="uint8"):
        apply_point(np.zeros((2, 2, 3), np.float32), "invert", 0)
    with pytest.raises(ValueError, match="unknown point operation"):
        point_luts("blur", np.array([0.0]), {}, 3)
    with pytest.raises(Exception, match="uint8"):
        run("invert", [np.zeros((2, 2, 3), np.float32)])


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("posterize", [0xF0, 0x80, 0xFF, 0xE0, 0xC0]),
        ("solarize", [128, 0, 256, 100, 77.5]),
        ("solarize_add", [0, 33, 110, 127, 5]),
        ("invert", None),
        ("contrast", [1.45, 0.55, 0.0, 1.9, 1.0]),
        ("auto_contrast", None),
        ("equalize", None),
    ],
)
def test_gpu_equals_cpu(kind, params):
    cpu = run(kind, IMAGES, params)
    gpu = run(kind, IMAGES, params, device="gpu")
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_array_equal(c, g)


def test_sequences_frame_by_frame():
    video = np.stack([IMAGES[0], IMAGES[4], 255 - IMAGES[0]])

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: [video], layout="FHWC")
        return point_op(x, "auto_contrast"), point_op(x, "equalize"), point_op(x, "contrast", 0.5)

    outs = [np.asarray(o.at(0)) for o in pipe().run()]
    for kind, out in zip(("auto_contrast", "equalize", "contrast"), outs):
        assert out.shape == video.shape
        for f in range(len(video)):  # each frame with its own statistics
            np.testing.assert_array_equal(out[f], apply_point(video[f], kind, 0.5))
    assert outs[0][1][..., 1].tolist() == video[1][..., 1].tolist()  # flat channel kept


@pytest.mark.gpu
def test_gpu_sequences_equal_cpu():
    videos = [np.stack([IMAGES[0], IMAGES[4]]), np.stack([IMAGES[4], 255 - IMAGES[0], IMAGES[0]])]

    def outputs(device):
        @pipeline_def(batch_size=2, num_threads=1, device_id=0 if device == "gpu" else None, seed=1)
        def pipe():
            x = fn.external_source(source=lambda: videos, layout="FHWC")
            p = fn.external_source(source=lambda: [np.float32(0.4), np.float32(1.6)])
            x = x.gpu() if device == "gpu" else x
            return point_op(x, "contrast", p), point_op(x, "equalize")

        return [[np.asarray(o.as_cpu().at(i)) for i in range(2)] for o in pipe().run()]

    for c_out, g_out in zip(outputs("cpu"), outputs("gpu")):
        for c, g in zip(c_out, g_out):
            np.testing.assert_array_equal(c, g)
