"""The CPU train path's fast kernels agree with their plain versions."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.image import cmn_kernels
from chute.ops.image.cmn_kernels import crop_mirror_normalize, normalization
from chute.runtime.dense import BatchSlots

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _plain(image: np.ndarray, mirror: bool, layout: str = "CHW") -> np.ndarray:
    """crop_mirror_normalize's arithmetic in float64 NumPy, whole image, fp16."""
    x = (image.astype(np.float64) - MEAN[: image.shape[2]]) / STD[: image.shape[2]]
    x = x[:, ::-1] if mirror else x
    return (x.transpose(2, 0, 1) if layout == "CHW" else x).astype(np.float16)


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize(
    "view",
    ["contiguous", "row_strided", "rows_reversed", "columns_strided", "gray"],
)
def test_uint8_planes_of_any_view(mirror: bool, layout: str, view: str) -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    image = {
        "contiguous": base,
        "row_strided": base[5:30, 7:50],  # OpenCV reads these rows as they are
        "rows_reversed": base[::-1],  # negative row stride: NumPy's way
        "columns_strided": base[:, ::2],  # pixels not adjacent: NumPy's way
        "gray": base[:, :, :1],
    }[view]
    out = crop_mirror_normalize(
        image,
        mean=MEAN[: image.shape[2]],
        std=STD[: image.shape[2]],
        dtype=np.float16,
        mirror=mirror,
        output_layout=layout,
    )
    ref = _plain(np.ascontiguousarray(image), mirror, layout)
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), atol=2e-3)


@pytest.mark.skipif(cmn_kernels._native_lut is None, reason="chute.runtime._native not built")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.uint8, np.int16, np.float64])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_native_lookup_equals_opencvs(monkeypatch, dtype, layout) -> None:
    rng = np.random.default_rng(8)
    base = rng.integers(0, 256, (50, 70, 4), dtype=np.uint8)
    cases = [
        (base[:, :, :3], {}),
        (base[3:40, 5:66, :3], {"crop": (20, 30), "crop_pos_x": 0.2}),  # a window of a view
        (base[:, :, :1], {"crop": (60, 80), "out_of_bounds_policy": "pad"}),  # padded, gray
        (base, {"pad_output": True}),
        (base[:, :, :3], {"crop": (10, 90), "out_of_bounds_policy": "pad", "fill_values": 7}),
    ]
    for image, kw in cases:
        for mirror in (False, True):
            args = {"mean": 10.0, "std": 50.0, "scale": 3.0, "dtype": dtype, **kw}
            args.update(mirror=mirror, output_layout=layout)
            native = crop_mirror_normalize(image, **args)
            with monkeypatch.context() as m:
                m.setattr(cmn_kernels, "_native_lut", None)
                opencv = crop_mirror_normalize(image, **args)
            np.testing.assert_array_equal(native, opencv)


def test_precomputed_gain_bias_gives_the_same_output() -> None:
    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (31, 29, 3), dtype=np.uint8)
    plain = crop_mirror_normalize(image, mean=MEAN, std=STD, dtype=np.float16, mirror=True)
    gain_bias = normalization(MEAN, STD, 1.0, 0.0, 3)
    fast = crop_mirror_normalize(
        image, mean=0.0, std=1.0, dtype=np.float16, mirror=True, gain_bias=gain_bias
    )
    np.testing.assert_array_equal(fast, plain)
    with pytest.raises(ValueError, match="std must be finite and nonzero"):
        normalization(MEAN, [1.0, 0.0, 1.0], 1.0, 0.0, 3)


def _cmn_pipeline(images: list[np.ndarray], per_sample_mean: bool):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=7)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        mean = fn.random.uniform(range=(100.0, 120.0)) if per_sample_mean else 110.0
        flip = fn.random.coin_flip()
        out = fn.crop_mirror_normalize(
            x, crop=(16, 20), mean=mean, std=50.0, dtype=types.FLOAT16, mirror=flip
        )
        return (out, flip, mean) if per_sample_mean else (out, flip)

    return pipe()


@pytest.mark.parametrize("per_sample_mean", [False, True])
def test_operator_with_constant_and_per_sample_arguments(per_sample_mean: bool) -> None:
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (24, 30, 3), dtype=np.uint8) for _ in range(6)]
    p = _cmn_pipeline(images, per_sample_mean)
    p.build()
    out, flips, *means = p.run()
    for i, image in enumerate(images):
        mean = float(np.asarray(means[0].at(i))) if per_sample_mean else 110.0
        ref = crop_mirror_normalize(
            image,
            crop=(16, 20),
            mean=mean,
            std=50.0,
            dtype=np.float16,
            mirror=bool(flips.at(i)),
        )
        np.testing.assert_array_equal(out.at(i), ref)
    assert len({bool(flips.at(i)) for i in range(len(images))}) == 2  # both ways were taken


def _dense_pipeline(images: list[np.ndarray], ragged: bool = False, **kw: object):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=3, **kw)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        out = fn.crop_mirror_normalize(
            x,
            crop_h=fn.random.uniform(range=(10.0, 20.0)) if ragged else 16.0,
            crop_w=20.0,
            mean=MEAN,
            std=STD,
            dtype=types.FLOAT16,
            mirror=fn.random.coin_flip(),
        )
        return out, fn.random.coin_flip()

    return pipe()


def test_output_batch_is_written_in_place_as_one_array() -> None:
    rng = np.random.default_rng(6)
    images = [rng.integers(0, 256, (24 + i, 30, 3), dtype=np.uint8) for i in range(5)]
    p = _dense_pipeline(images)
    p.build()
    (first, _), (second, _) = p.run(), p.run()
    assert first._dense is not None and first._dense.shape == (5, 3, 16, 20)
    assert not np.shares_memory(first.as_array(), second.as_array())  # fresh every batch
    ragged = _dense_pipeline(images, ragged=True)
    ragged.build()
    (samples, _) = ragged.run()
    assert samples._dense is None  # per-sample sizes: the sample list, as before
    for i, image in enumerate(images):
        ref = crop_mirror_normalize(
            image,
            crop_h=16.0,
            crop_w=20.0,
            mean=MEAN,
            std=STD,
            dtype=np.float16,
            mirror=False,
        )
        got = first.at(i)
        assert np.array_equal(got, ref) or np.array_equal(got, ref[:, :, ::-1])


def test_output_batch_with_a_replaced_sample_falls_back_to_samples() -> None:
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (24, 30, 3), dtype=np.uint8) for _ in range(4)]
    images[2] = images[2][:10]  # too small for the 16-row crop: this sample fails
    p = _dense_pipeline(images, on_error="skip")
    p.build()
    out, _ = p.run()
    assert out._dense is None
    assert len(out) == 4 and all(out.at(i).shape == (3, 16, 20) for i in range(4))
    # the place goes to the (cycling) source's next sample; that batch's own failing
    # sample 2 is reported with the batch that drew from it (issue 30: skip refills)
    assert [(e["index"], e["iteration"]) for e in p.errors()] == [(2, 0), (2, 1)]


def test_output_batch_memory_is_reused_only_after_the_user_drops_it() -> None:
    shape = (4, 3, 64, 64)  # 96 KiB of float16: large enough to be pooled
    held = BatchSlots(4)
    first = held.slot(0, shape[1:], np.dtype(np.float16))
    assert first is not None and held.array is not None
    address = held.array.__array_interface__["data"][0]
    second = BatchSlots(4)
    second.slot(0, shape[1:], np.dtype(np.float16))
    assert not np.shares_memory(second.array, held.array)  # the first batch is still held
    del held, first
    third = BatchSlots(4)
    third.slot(0, shape[1:], np.dtype(np.float16))
    assert third.array.__array_interface__["data"][0] == address  # dropped: used again
