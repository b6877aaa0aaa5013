"""fn.experimental.warp_perspective and fn.experimental.remap on the CPU.

Expected values are written out (identities, integer shifts, flips) or come from
OpenCV with the half-pixel conjugation done here, and from the NumPy sampler
(sampler.py): bilinear / cubic within one level for uint8, nearest neighbour equal on
more than 99% of pixels (float32 ties of OpenCV's division).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from sampler import as_dtype, perspective_points, sample

from chute import fn, pipeline_def, types
from chute.runtime.errors import OperatorError

RNG = np.random.default_rng(7)
IMAGES = [RNG.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((13, 17), (9, 21), (16, 16))]
PERSPECTIVE = np.array([[0.9, 0.1, 2.0], [-0.05, 1.1, -1.5], [0.001, -0.002, 1.0]], np.float32)


def run(graph, images=IMAGES, layout="HWC", **sources):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: images, layout=layout)
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return graph(x, **named)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(images))]


def shift_matrix(tx: float, ty: float) -> list[float]:
    return [1, 0, tx, 0, 1, ty, 0, 0, 1]


def conjugated(m: np.ndarray) -> np.ndarray:
    """A corner-origin matrix in OpenCV's coordinates: T(-1/2) M T(1/2)."""
    t = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1.0]])
    return np.linalg.inv(t) @ np.asarray(m, np.float64) @ t


# ---- warp_perspective -------------------------------------------------------------------
@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC])
@pytest.mark.parametrize("origin", ["corner", "center"])
def test_identity_matrix_gives_the_image(interp, origin):
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x, matrix=shift_matrix(0, 0), interp_type=interp, pixel_origin=origin
        )
    )
    for a, b in zip(out, IMAGES):
        np.testing.assert_array_equal(a, b)


def test_integer_translation_shifts_and_fills():
    # output (x, y) reads input (x + 2, y - 1): content moves left by 2 and down by 1
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x, matrix=shift_matrix(2, -1), fill_value=[5, 6, 7], interp_type=types.INTERP_LINEAR
        )
    )
    for a, img in zip(out, IMAGES):
        expected = np.empty_like(img)
        expected[...] = [5, 6, 7]
        expected[1:, :-2] = img[:-1, 2:]
        np.testing.assert_array_equal(a, expected)


def test_inverse_map_false_moves_the_other_way():
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x, matrix=shift_matrix(2, -1), inverse_map=False, border_mode="replicate"
        )
    )
    for a, img in zip(out, IMAGES):
        padded = np.pad(img, ((0, 1), (2, 0), (0, 0)), mode="edge")
        np.testing.assert_array_equal(a, padded[1:, :-2])


@pytest.mark.parametrize("origin", ["corner", "center"])
@pytest.mark.parametrize("inverse", [True, False])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_matches_opencv_with_dali_pixel_origin(origin, inverse, border):
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x,
            matrix=PERSPECTIVE.ravel().tolist(),
            size=(11, 19),
            inverse_map=inverse,
            pixel_origin=origin,
            border_mode=border,
            fill_value=[9, 99, 199],
        )
    )
    m = PERSPECTIVE.astype(np.float64)
    m = conjugated(m) if origin == "corner" else m
    flags = cv2.INTER_LINEAR | (cv2.WARP_INVERSE_MAP if inverse else 0)
    codes = {
        "constant": cv2.BORDER_CONSTANT,
        "replicate": cv2.BORDER_REPLICATE,
        "reflect": cv2.BORDER_REFLECT,
        "reflect_101": cv2.BORDER_REFLECT_101,
        "wrap": cv2.BORDER_WRAP,
    }
    for a, img in zip(out, IMAGES):
        ref = cv2.warpPerspective(
            img, m, (19, 11), flags=flags, borderMode=codes[border], borderValue=(9, 99, 199)
        )
        assert a.shape == (11, 19, 3)
        assert np.abs(a.astype(int) - ref.astype(int)).max() <= 1


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
def test_matches_numpy_sampler(interp, dtype):
    rng = np.random.default_rng(3)
    img = cv2.GaussianBlur(rng.uniform(0, 200, (30, 40, 3)), (0, 0), 1.5).astype(dtype)
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x,
            matrix=PERSPECTIVE.ravel().tolist(),
            interp_type=getattr(types, f"INTERP_{interp.upper()}"),
            border_mode="reflect_101",
            size=(25, 35),
        ),
        images=[img],
    )[0]
    sx, sy = perspective_points(conjugated(PERSPECTIVE), 25, 35)
    ref = as_dtype(sample(img, sx, sy, interp, "reflect_101"), dtype)
    diff = np.abs(out.astype(np.float64) - ref.astype(np.float64)).max(axis=2)
    if interp == "nn":
        assert np.mean(diff > 0) < 0.01
    else:
        assert diff.max() <= (1 if np.dtype(dtype).kind != "f" else 1e-3)


def test_per_sample_matrices_sizes_and_matrix_input():
    ms = [np.array(shift_matrix(t, 0), np.float32).reshape(3, 3) for t in (0, 1, 3)]
    sizes = [np.array(s, np.float32) for s in ((5, 6), (7.5, 2.2), (16, 16))]
    by_arg = run(
        lambda x, m, s: fn.experimental.warp_perspective(x, matrix=m, size=s, border_mode="wrap"),
        m=ms,
        s=sizes,
    )
    by_input = run(
        lambda x, m, s: fn.experimental.warp_perspective(x, m, size=s, border_mode="wrap"),
        m=ms,
        s=sizes,
    )
    for i, (a, b, img) in enumerate(zip(by_arg, by_input, IMAGES)):
        h, w = (5, 6) if i == 0 else ((8, 2) if i == 1 else (16, 16))  # 7.5 -> 8 (half away)
        t = (0, 1, 3)[i]
        cols = (np.arange(w) + t) % img.shape[1]
        np.testing.assert_array_equal(a, img[:h][:, cols])
        np.testing.assert_array_equal(b, a)


def test_sequences_grayscale_and_planar_layouts():
    m = shift_matrix(1, 0)
    seq = [np.stack([img, img[::-1]]) for img in IMAGES]
    out = run(lambda x: fn.experimental.warp_perspective(x, matrix=m), images=seq, layout="FHWC")
    for a, s in zip(out, seq):
        assert a.shape == s.shape
        np.testing.assert_array_equal(a[:, :, :-1], s[:, :, 1:])
        np.testing.assert_array_equal(a[:, :, -1], 0)
    chw = [np.ascontiguousarray(img.transpose(2, 0, 1)) for img in IMAGES]
    out = run(lambda x: fn.experimental.warp_perspective(x, matrix=m), images=chw, layout="CHW")
    for a, c in zip(out, chw):
        np.testing.assert_array_equal(a[:, :, :-1], c[:, :, 1:])
    gray = [img[:, :, 0].astype(np.float32) for img in IMAGES]
    out = run(
        lambda x: fn.experimental.warp_perspective(x, matrix=m, fill_value=-1.5),
        images=gray,
        layout="HW",
    )
    for a, g in zip(out, gray):
        np.testing.assert_array_equal(a[:, :-1], g[:, 1:])
        np.testing.assert_array_equal(a[:, -1], -1.5)


def test_warp_perspective_argument_errors():
    with pytest.raises(OperatorError, match="give the 3x3 'matrix'"):
        run(lambda x: fn.experimental.warp_perspective(x))
    with pytest.raises(ValueError, match="argument 'matrix' needs 9 values"):
        run(lambda x: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0]))
    with pytest.raises(ValueError, match="argument 'matrix' must be finite"):
        run(lambda x: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0, 0, 0, np.inf]))
    with pytest.raises(ValueError, match="interp_type.*accepted"):
        run(
            lambda x: fn.experimental.warp_perspective(
                x, matrix=shift_matrix(0, 0), interp_type=types.INTERP_LANCZOS3
            )
        )
    with pytest.raises(OperatorError, match="'fill_value' has 2 values for 3 channels"):
        run(
            lambda x: fn.experimental.warp_perspective(
                x, matrix=shift_matrix(0, 0), fill_value=[1, 2]
            )
        )
    with pytest.raises(ValueError, match="not both"):
        ms = [np.eye(3, dtype=np.float32)] * 3
        run(lambda x, m: fn.experimental.warp_perspective(x, m, matrix=shift_matrix(0, 0)), m=ms)
    ints = [img.astype(np.int32) for img in IMAGES]
    with pytest.raises(OperatorError, match="uint8, uint16, int16 or float32"):
        run(lambda x: fn.experimental.warp_perspective(x, matrix=shift_matrix(0, 0)), images=ints)
    bad = [np.array([[1, 0], [0, 1]], np.float32)] * 3
    with pytest.raises(OperatorError, match="3x3 float32"):
        run(lambda x, m: fn.experimental.warp_perspective(x, m), m=bad)


# ---- remap ------------------------------------------------------------------------------
def _grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    return x, y


@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC])
def test_remap_identity_maps(interp):
    centers = [_grid(*img.shape[:2]) for img in IMAGES]
    out = run(
        lambda x, mx, my: fn.experimental.remap(x, mx, my, interp=interp, pixel_origin="center"),
        mx=[c[0] for c in centers],
        my=[c[1] for c in centers],
    )
    corners = run(
        lambda x, mx, my: fn.experimental.remap(x, mx, my, interp=interp),
        mx=[c[0][..., None] + 0.5 for c in centers],  # (H, W, 1) maps too
        my=[c[1][..., None] + 0.5 for c in centers],
    )
    for a, b, img in zip(out, corners, IMAGES):
        np.testing.assert_array_equal(a, img)
        np.testing.assert_array_equal(b, img)


def test_remap_shift_flip_and_outside_zero():
    maps = []
    for img in IMAGES:
        x, y = _grid(*img.shape[:2])
        maps.append((img.shape[1] - 1 - x, y - 2))  # mirror, and read 2 rows up
    out = run(
        lambda x, mx, my: fn.experimental.remap(x, mx, my, pixel_origin="center"),
        mx=[m[0] for m in maps],
        my=[m[1] for m in maps],
    )
    for a, img in zip(out, IMAGES):
        expected = np.zeros_like(img)
        expected[2:] = img[:-2, ::-1]
        np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("interp", ["nn", "linear", "cubic"])
def test_remap_random_maps_match_sampler_and_opencv(interp):
    rng = np.random.default_rng(5)
    img = cv2.GaussianBlur(rng.uniform(0, 255, (20, 30, 3)), (0, 0), 1.5).astype(np.uint8)
    mx = rng.uniform(-3, 33, (15, 25)).astype(np.float32)
    my = rng.uniform(-3, 23, (15, 25)).astype(np.float32)
    out = run(
        lambda x, a, b: fn.experimental.remap(
            x, a, b, interp=getattr(types, f"INTERP_{interp.upper()}")
        ),
        images=[img],
        a=[mx],
        b=[my],
    )[0]
    assert out.shape == (15, 25, 3)  # the maps' size
    sx, sy = (mx - np.float32(0.5)).astype(np.float64), (my - np.float32(0.5)).astype(np.float64)
    ref = as_dtype(sample(img, sx, sy, interp, "constant", 0.0), np.uint8)
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    flag = {"nn": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}[interp]
    cv = cv2.remap(img, mx - 0.5, my - 0.5, flag, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    np.testing.assert_array_equal(out, cv)


def test_remap_sequences_take_per_frame_or_shared_maps():
    seq = [np.stack([img, 255 - img]) for img in IMAGES]
    per_frame_x, per_frame_y, shared_x, shared_y = [], [], [], []
    for img in IMAGES:
        x, y = _grid(*img.shape[:2])
        per_frame_x.append(np.stack([x, img.shape[1] - 1 - x]))
        per_frame_y.append(np.stack([y, y]))
        shared_x.append(img.shape[1] - 1 - x)
        shared_y.append(y)
    out = run(
        lambda x, a, b: fn.experimental.remap(
            x, a, b, pixel_origin="center", interp=types.INTERP_NN
        ),
        images=seq,
        layout="FHWC",
        a=per_frame_x,
        b=per_frame_y,
    )
    shared = run(
        lambda x, a, b: fn.experimental.remap(x, a, b, pixel_origin="center"),
        images=seq,
        layout="FHWC",
        a=shared_x,
        b=shared_y,
    )
    for a, s, b in zip(out, seq, shared):
        np.testing.assert_array_equal(a[0], s[0])
        np.testing.assert_array_equal(a[1], s[1][:, ::-1])
        np.testing.assert_array_equal(b, s[:, :, ::-1])


def test_remap_argument_errors():
    x, y = _grid(13, 17)
    good = [x] * 3
    with pytest.raises(OperatorError, match="mapx and mapy differ"):
        run(lambda i, a, b: fn.experimental.remap(i, a, b), a=good, b=[y[:5]] * 3)
    with pytest.raises(OperatorError, match="'mapx' must be float"):
        run(lambda i, a, b: fn.experimental.remap(i, a, b), a=[x.astype(np.int32)] * 3, b=good)
    with pytest.raises(ValueError, match="argument 'interp'.*accepted"):
        run(
            lambda i, a, b: fn.experimental.remap(i, a, b, interp=types.INTERP_GAUSSIAN),
            a=good,
            b=good,
        )
    seq = [np.stack([img] * 2) for img in IMAGES]
    three = [np.stack([g] * 3) for g in good]
    with pytest.raises(OperatorError, match="the maps have 3 frames, the input 2"):
        run(
            lambda i, a, b: fn.experimental.remap(i, a, b),
            images=seq,
            layout="FHWC",
            a=three,
            b=three,
        )


@pytest.mark.parametrize("shape", [(1, 7, 3), (6, 1, 3), (1, 1, 3)])
def test_one_pixel_extents_with_reflect_101_return(shape):
    # OpenCV 5's warps never return on these (cubic); the kernels double the 1-pixel extent
    from chute.ops.geometry import warp_kernels

    img = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape) * 7
    out = run(
        lambda x: fn.experimental.warp_perspective(
            x,
            matrix=PERSPECTIVE.ravel().tolist(),
            interp_type=types.INTERP_CUBIC,
            border_mode="reflect_101",
            size=(3, 4),
        ),
        images=[img],
    )[0]
    sx, sy = perspective_points(conjugated(PERSPECTIVE), 3, 4)
    ref = as_dtype(sample(img, sx, sy, "cubic", "reflect_101"), np.uint8)
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    affine = PERSPECTIVE[:2].astype(np.float64)
    out = warp_kernels.warp_affine(img, affine, (3, 4), interp_type="cubic", border="reflect_101")
    sx, sy = perspective_points(conjugated(np.vstack([affine, [0, 0, 1]])), 3, 4)
    ref = as_dtype(sample(img, sx, sy, "cubic", "reflect_101"), np.uint8)
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
