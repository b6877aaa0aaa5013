"""Bad arguments and bad user data give one clear error naming the operator and what was expected.

Constants are checked when the pipeline is traced; per-sample values and user
data when the sample runs, wrapped in OperatorError (operator, sample, iteration).
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def, types

IMAGES = [np.arange(8 * 10 * 3, dtype=np.uint8).reshape(8, 10, 3) for _ in range(2)]


def make(body, source=None, **source_args):
    """A pipeline: external_source of HWC images -> body(x)."""

    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source(source=source or (lambda: IMAGES), layout="HWC", **source_args)
        return body(x)

    return pipe()


def trace_error(body, exc=ValueError):
    with pytest.raises(exc) as info:
        make(body)
    return str(info.value)


def run_error(body, source=None, **source_args):
    p = make(body, source, **source_args)
    with pytest.raises(OperatorError) as info:
        p.run()
    p.close()
    return info.value


# ---- sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"resize_shorter": -5}, "resize_shorter"),
        ({"resize_longer": -1}, "resize_longer"),
        ({"resize_shorter": 4, "max_size": -3}, "max_size"),
        ({"size": (4, 4, 4)}, "size"),
        ({"size": (float("nan"), 4)}, "size"),
        ({"resize_x": float("inf")}, "resize_x"),
    ],
)
def test_resize_bad_sizes_fail_at_trace(kwargs, argument):
    message = trace_error(lambda x: fn.resize(x, **kwargs))
    assert "fn.resize" in message and f"'{argument}'" in message


def test_resize_negative_size_flips_as_in_dali():
    # Not an error: DALI's convention, kept for ports.
    p = make(lambda x: fn.resize(x, resize_x=-10, resize_y=8))
    (out,) = p.run()
    assert out.at(0).shape == (8, 10, 3)
    np.testing.assert_array_equal(out.at(0), IMAGES[0][:, ::-1])
    p.close()


def test_resize_needs_exactly_one_way_to_size():
    message = trace_error(lambda x: fn.resize(x, size=4, resize_shorter=4))
    assert "fn.resize" in message and "exactly one" in message
    message = trace_error(lambda x: fn.resize(x))
    assert "exactly one" in message


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"crop": (-1, 4)}, "crop"),
        ({"crop_h": -3, "crop_w": 4}, "crop_h"),
        ({"crop": (1, 2, 3)}, "crop"),
    ],
)
def test_crop_bad_sizes_fail_at_trace(kwargs, argument):
    message = trace_error(lambda x: fn.crop(x, **kwargs))
    assert "fn.crop" in message and f"'{argument}'" in message


def test_crop_per_sample_negative_size_fails_at_run():
    error = run_error(lambda x: fn.crop(x, crop_h=fn.random.uniform(range=(-5, -4)), crop_w=4))
    assert "fn.crop" in str(error) and "sample 0" in str(error) and "positive" in str(error)


def test_crop_larger_than_the_image_with_policy_error():
    error = run_error(lambda x: fn.crop(x, crop=(20, 20), out_of_bounds_policy="error"))
    message = str(error)
    assert "fn.crop" in message and "sample 0" in message
    assert "(8, 10, 3)" in message and "out_of_bounds_policy" in message


def test_crop_larger_than_the_image_with_pad_is_fine():
    p = make(lambda x: fn.crop(x, crop=(20, 20), out_of_bounds_policy="pad"))
    (out,) = p.run()
    assert out.at(0).shape == (20, 20, 3)
    p.close()


def test_crop_anchor_outside_unit_range():
    error = run_error(lambda x: fn.crop(x, crop=(2, 2), crop_pos_x=2.0))
    assert "crop_pos_x" in str(error) and "[0, 1]" in str(error)


# ---- angles ----------------------------------------------------------------------------------


@pytest.mark.parametrize("angle", [float("nan"), float("inf"), -float("inf")])
def test_rotate_non_finite_angle_fails_at_trace(angle):
    message = trace_error(lambda x: fn.rotate(x, angle=angle))
    assert "fn.rotate" in message and "'angle'" in message and "finite" in message


def test_rotate_non_finite_per_sample_angle_fails_at_run():
    error = run_error(lambda x: fn.rotate(x, angle=fn.random.uniform(range=(0, 1)) * np.inf))
    assert "fn.rotate" in str(error) and "'angle'" in str(error) and "finite" in str(error)


# ---- mean / std ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"mean": [1, 2], "std": [1, 1, 1]}, "mean has 2 values, the image has 3 channels"),
        ({"mean": [1, 2, 3], "std": [1, 1, 1, 1]}, "std has 4 values, the image has 3 channels"),
        ({"mean": [1, 2, 3], "std": [1, 0, 1]}, "std must be finite and nonzero"),
    ],
)
def test_crop_mirror_normalize_mean_std(kwargs, fragment):
    error = run_error(lambda x: fn.crop_mirror_normalize(x, **kwargs))
    assert "fn.crop_mirror_normalize" in str(error) and fragment in str(error)


@pytest.mark.parametrize("mean", [[1.0, 2.0], np.zeros((1, 1, 2), np.float32)])
def test_normalize_mean_of_the_wrong_shape(mean):
    error = run_error(
        lambda x: fn.normalize(fn.cast(x, dtype=types.FLOAT), mean=mean, stddev=1.0, axes=(0, 1))
    )
    message = str(error)
    assert "fn.normalize" in message and "'mean'" in message
    assert "(8, 10, 3)" in message and "(1, 1, 3)" in message


def test_normalize_mean_of_the_right_shape_works():
    p = make(
        lambda x: fn.normalize(
            fn.cast(x, dtype=types.FLOAT), mean=[1.0, 2.0, 3.0], stddev=2.0, axes=(0, 1)
        )
    )
    (out,) = p.run()
    expected = (IMAGES[0].astype(np.float32) - [1, 2, 3]) / 2
    np.testing.assert_allclose(out.at(0), expected, rtol=1e-5)
    p.close()


# ---- dtypes ----------------------------------------------------------------------------------


def test_resize_unsupported_output_dtype_fails_at_trace():
    message = trace_error(lambda x: fn.resize(x, size=4, dtype=np.complex64), TypeError)
    assert "fn.resize" in message and "'dtype'" in message and "complex64" in message


def test_decoder_unsupported_dtype_fails_at_trace():
    with pytest.raises(ValueError, match=r"fn.decoders.image: argument 'dtype'.*uint8, uint16"):

        @pipeline_def(batch_size=1, num_threads=1)
        def pipe():
            data = fn.external_source(source=lambda: [np.zeros(4, np.uint8)])
            return fn.decoders.image(data, dtype=types.INT32)

        pipe()


def test_not_a_dtype_fails_at_trace():
    message = trace_error(lambda x: fn.cast(x, dtype="banana"), TypeError)
    assert "fn.cast" in message and "'dtype'" in message and "banana" in message


# ---- user data from external_source ------------------------------------------------------------


def test_external_source_wrong_dtype_against_its_argument():
    error = run_error(
        lambda x: x, source=lambda: [np.zeros((8, 10, 3), np.float32)] * 2, dtype=types.UINT8
    )
    message = str(error)
    assert "fn.external_source" in message and "sample 0" in message
    assert "float32" in message and "expected uint8" in message


def test_external_source_dtype_changing_between_samples():
    source = lambda: [np.zeros((8, 10, 3), np.uint8), np.zeros((8, 10, 3), np.float32)]  # noqa: E731
    error = run_error(lambda x: x, source=source)
    assert "sample 1" in str(error) and "float32" in str(error) and "uint8" in str(error)


def test_external_source_wrong_ndim_against_its_layout():
    error = run_error(lambda x: x, source=lambda: [np.zeros((8, 10), np.uint8)] * 2)
    message = str(error)
    assert "fn.external_source" in message and "2 dimensions" in message
    assert "(8, 10)" in message and "expected 3" in message


def test_external_source_too_many_samples():
    error = run_error(lambda x: x, source=lambda: np.zeros((3, 8, 10, 3), np.uint8))
    assert "3 samples" in str(error) and "batch_size=2" in str(error)


def test_ragged_batch_where_dense_is_required():
    source = lambda: [np.zeros((8, 10, 3), np.uint8), np.zeros((9, 10, 3), np.uint8)]  # noqa: E731
    p = make(lambda x: x, source=source)
    (out,) = p.run()
    with pytest.raises(ValueError, match=r"ragged.*\(8, 10, 3\), \(9, 10, 3\).*pad"):
        out.as_array()
    p.close()


# ---- python_function ---------------------------------------------------------------------------


def test_python_function_that_raises():
    def explode(image):
        raise KeyError("no such augmentation")

    error = run_error(lambda x: fn.python_function(x, function=explode))
    message = str(error)
    assert "fn.python_function" in message and "sample 0" in message
    assert "KeyError" in message and "no such augmentation" in message
    assert isinstance(error.__cause__, KeyError)
