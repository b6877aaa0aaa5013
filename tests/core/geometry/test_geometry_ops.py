"""Operator-level tests: the geometry fn.* / ops.* inside pipelines.

The kernels are checked against independent references in the other test files; here the
operators must route constant and per-sample arguments, masks and inputs to them.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, ops, pipeline_def, types
from chute.ops.geometry import crop_kernels as ck
from chute.ops.geometry import distort_kernels as dk
from chute.ops.geometry import transforms_kernels as tk
from chute.ops.geometry import warp_kernels as wk
from chute.ops.geometry.crop_resize_kernels import resize_crop_mirror
from chute.ops.geometry.resize_kernels import resize

BATCH = 4
RNG = np.random.default_rng(31)
IMAGES = [
    RNG.integers(0, 256, size=(37 + 2 * i, 53 - 3 * i, 3), dtype=np.uint8) for i in range(BATCH)
]


def _per_sample(values: list, dtype: type = np.float32) -> list[np.ndarray]:
    return [np.array(v, dtype=dtype) for v in values]


def _run(graph, images: list[np.ndarray] = IMAGES, iterations: int = 1, **sources: list) -> list:
    """Build a pipeline over ``images`` plus named per-sample sources; run it; list the outputs."""

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        out = graph(x, **named)
        return out if isinstance(out, tuple) else (out,)

    p = pipe()
    p.build()
    runs = [list(p.run()) for _ in range(iterations)]
    return runs[0] if iterations == 1 else runs


def _samples(batch) -> list[np.ndarray]:
    return [np.asarray(batch.at(i)) for i in range(len(batch))]


def test_resize_with_per_sample_sizes_and_rois():
    widths = [20.0, 31.0, -25.0, 40.0]
    starts = [(0, 0), (3.5, 2.25), (0, 0), (30, 0)]
    ends = [(37, 53), (30.0, 40.5), (41, 47), (0, 44)]  # the last one is flipped vertically
    (out,) = _run(
        lambda x, w, a, b: fn.resize(x, resize_x=w, roi_start=a, roi_end=b),
        w=_per_sample(widths),
        a=_per_sample(starts),
        b=_per_sample(ends),
    )
    for i, got in enumerate(_samples(out)):
        want = resize(IMAGES[i], resize_x=widths[i], roi_start=starts[i], roi_end=ends[i])
        np.testing.assert_array_equal(got, want)


def test_resize_arguments_reach_the_kernel():
    (a, b, c) = _run(
        lambda x: (
            fn.resize(x, resize_shorter=24, max_size=30, interp_type=types.INTERP_CUBIC),
            fn.resize(x, size=(16, 0), mode="stretch", dtype=types.FLOAT),
            fn.resize(x, size=(20, 20), interp_type=types.INTERP_NN, antialias=False),
        )
    )
    for i in range(BATCH):
        np.testing.assert_array_equal(
            a.at(i), resize(IMAGES[i], resize_shorter=24, max_size=30, interp_type="cubic")
        )
        np.testing.assert_array_equal(
            b.at(i), resize(IMAGES[i], size=(16, 0), mode="stretch", dtype=np.float32)
        )
        np.testing.assert_array_equal(c.at(i), resize(IMAGES[i], size=(20, 20), interp_type="nn"))
    assert np.asarray(b.at(0)).dtype == np.float32


def test_resize_size_arguments_are_checked_at_trace_time():
    with pytest.raises(ValueError, match="exactly one"):
        _run(lambda x: fn.resize(x, resize_x=10, size=(10, 10)))
    with pytest.raises(ValueError, match="exactly one"):
        _run(lambda x: fn.resize(x))
    with pytest.raises(ValueError, match="mode"):
        _run(lambda x: fn.resize(x, resize_shorter=10, mode="stretch"))
    with pytest.raises(TypeError, match="resize_q"):
        _run(lambda x: fn.resize(x, resize_q=10))


def test_crop_rel_crop_and_per_sample_positions():
    pos_x = [0.0, 0.25, 1.0, 0.5]
    (centre, anchored, padded) = _run(
        lambda x, px: (
            fn.crop(x, rel_crop=0.875),
            fn.crop(x, crop=(20, 21), crop_pos_x=px, crop_pos_y=0.1),
            fn.crop(x, crop=(50, 60), out_of_bounds_policy="pad", border="reflect_101"),
        ),
        px=_per_sample(pos_x),
    )
    for i, image in enumerate(IMAGES):
        h, w = image.shape[:2]
        assert centre.at(i).shape == (int(0.875 * h + 0.5), int(0.875 * w + 0.5), 3)  # halves up
        np.testing.assert_array_equal(centre.at(i), ck.crop(image, rel_crop=0.875))
        np.testing.assert_array_equal(
            anchored.at(i), ck.crop(image, crop=(20, 21), crop_pos_x=pos_x[i], crop_pos_y=0.1)
        )
        np.testing.assert_array_equal(
            padded.at(i),
            ck.crop(image, crop=(50, 60), out_of_bounds_policy="pad", border="reflect_101"),
        )


def test_slice_from_arguments_and_from_inputs():
    anchors = [(0.1, 0.2), (0.0, 0.0), (0.5, 0.5), (0.25, 0.1)]
    shapes = [(0.5, 0.5), (1.0, 1.0), (0.5, 0.5), (0.3, 0.6)]
    (by_inputs, by_args, by_names) = _run(
        lambda x, a, s: (
            fn.slice(x, a, s),
            fn.slice(x, rel_start=(0.1, 0.2), rel_end=(0.6, 0.9)),
            fn.slice(x, start=(2, 3), shape=(10, 11), axis_names="HW"),
        ),
        a=_per_sample(anchors),
        s=_per_sample(shapes),
    )
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(by_inputs.at(i), ck.slice_(image, anchors[i], shapes[i]))
        np.testing.assert_array_equal(by_args.at(i), ck.slice_(image, (0.1, 0.2), (0.5, 0.7)))
        np.testing.assert_array_equal(by_names.at(i), image[2:12, 3:14])


def test_slice_takes_constant_anchor_and_shape_inputs():
    """As DALI: fn.slice(x, 0, 1, axes=[0]) with Python numbers as the anchor and shape."""
    (rows, window) = _run(
        lambda x: (
            fn.slice(x, 2, 3, axes=[0]),
            fn.slice(x, np.array([1, 4]), [5, 6], axis_names="HW"),
        )
    )
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(rows.at(i), image[2:5])
        np.testing.assert_array_equal(window.at(i), image[1:6, 4:10])


def test_flip_per_sample_flags_and_mask():
    horizontal = [1, 0, 1, 1]
    vertical = [0, 1, 1, 0]
    mask = [True, True, True, False]
    (out,) = _run(
        lambda x, hz, vt, m: fn.flip(x, horizontal=hz, vertical=vt, mask=m),
        hz=_per_sample(horizontal, np.int32),
        vt=_per_sample(vertical, np.int32),
        m=_per_sample(mask, np.bool_),
    )
    for i, image in enumerate(IMAGES):
        want = ck.flip(image, horizontal[i], vertical[i]) if mask[i] else image
        np.testing.assert_array_equal(out.at(i), want)


def test_pad_to_the_batch_maximum_with_alignment():
    (plain, aligned, bordered) = _run(
        lambda x: (
            fn.pad(x, axis_names="HW", fill_value=9),
            fn.pad(x, axes=(0, 1), align=(8, 16)),
            fn.pad(x, axis_names="HW", shape=(50, -1), border="wrap"),
        )
    )
    max_h = max(im.shape[0] for im in IMAGES)
    max_w = max(im.shape[1] for im in IMAGES)
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(
            plain.at(i), ck.pad(image, axis_names="HW", shape=(max_h, max_w), fill_value=9)
        )
        assert aligned.at(i).shape == (-(-max_h // 8) * 8, -(-max_w // 16) * 16, 3)
        np.testing.assert_array_equal(
            bordered.at(i), ck.pad(image, axis_names="HW", shape=(50, max_w), border="wrap")
        )
    assert plain.is_dense_tensor()


def test_erase_and_paste_with_masks():
    anchors = [(5, 6), (0, 0), (10, 20), (2, 2)]
    mask = [True, False, True, True]
    (erased, pasted) = _run(
        lambda x, a, m: (
            fn.erase(x, anchor=a, shape=(8, 9), fill_value=(1, 2, 3), mask=m),
            fn.paste(x, ratio=1.5, fill_value=(7, 7, 7), paste_x=0.2, mask=m),
        ),
        a=_per_sample(anchors),
        m=_per_sample(mask, np.bool_),
    )
    for i, image in enumerate(IMAGES):
        if mask[i]:
            want_e = ck.erase(image, anchor=anchors[i], shape=(8, 9), fill_value=(1, 2, 3))
            want_p = ck.paste(image, ratio=1.5, fill_value=(7, 7, 7), paste_x=0.2)
        else:
            want_e = want_p = image
        np.testing.assert_array_equal(erased.at(i), want_e)
        np.testing.assert_array_equal(pasted.at(i), want_p)


def test_rotate_per_sample_angles_and_sizes():
    angles = [0.0, 90.0, -33.0, 12.5]
    (free, kept) = _run(
        lambda x, a: (
            fn.rotate(x, angle=a, fill_value=0),
            fn.rotate(x, angle=a, keep_size=True, border="reflect"),
        ),
        a=_per_sample(angles),
    )
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(free.at(i), wk.rotate(image, angles[i], fill_value=0))
        np.testing.assert_array_equal(
            kept.at(i), wk.rotate(image, angles[i], keep_size=True, border="reflect")
        )
    np.testing.assert_array_equal(free.at(1), np.rot90(IMAGES[1]))


def test_warp_affine_matrix_as_argument_input_and_from_transforms():
    matrices = [tk.rotation(a, center=(20, 20)) for a in (5.0, -10.0, 0.0, 30.0)]
    (by_arg, by_input, by_transform, constant) = _run(
        lambda x, m: (
            fn.warp_affine(x, matrix=m, border="reflect"),
            fn.warp_affine(x, m, size=(30, 31), fill_value=5),
            fn.warp_affine(
                x, matrix=fn.transforms.rotation(angle=fn.random.uniform(range=(-5, 5)))
            ),
            fn.warp_affine(x, matrix=[1, 0, 2.5, 0, 1, -1.5], inverse_map=False),
        ),
        m=matrices,
    )
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(
            by_arg.at(i), wk.warp_affine(image, matrices[i], border="reflect")
        )
        np.testing.assert_array_equal(
            by_input.at(i), wk.warp_affine(image, matrices[i], size=(30, 31), fill_value=5)
        )
        assert by_transform.at(i).shape == image.shape
        np.testing.assert_array_equal(
            constant.at(i), wk.warp_affine(image, [[1, 0, 2.5], [0, 1, -1.5]], inverse_map=False)
        )


def test_transforms_operators_compose_per_sample():
    angles = [10.0, 20.0, -30.0, 45.0]
    (rot, chained, combined, sheared, cropped) = _run(
        lambda x, a: (
            fn.transforms.rotation(angle=a, center=(1, 2)),
            fn.transforms.scale(fn.transforms.translation(offset=(3, 4)), scale=(2, 0.5)),
            fn.transforms.combine(
                fn.transforms.translation(offset=(3, 4)), fn.transforms.rotation(angle=a)
            ),
            fn.transforms.shear(angles=(10, 0), center=(5, 5)),
            fn.transforms.crop(
                from_start=(0, 0), from_end=(10, 20), to_start=(-1, -1), to_end=(1, 1)
            ),
        ),
        a=_per_sample(angles),
    )
    for i in range(BATCH):
        assert rot.at(i).dtype == np.float32 and rot.at(i).shape == (2, 3)
        np.testing.assert_allclose(rot.at(i), tk.rotation(angles[i], center=(1, 2)), atol=1e-6)
        np.testing.assert_allclose(
            chained.at(i), tk.combine(tk.translation((3, 4)), tk.scale((2, 0.5))), atol=1e-6
        )
        np.testing.assert_allclose(
            combined.at(i), tk.combine(tk.translation((3, 4)), tk.rotation(angles[i])), atol=1e-6
        )
        np.testing.assert_allclose(
            sheared.at(i), tk.shear(angles=(10, 0), center=(5, 5)), atol=1e-6
        )
        np.testing.assert_allclose(
            cropped.at(i), tk.crop((0, 0), (10, 20), (-1, -1), (1, 1)), atol=1e-6
        )
    with pytest.raises(ValueError, match="exactly one"):
        _run(lambda x: fn.transforms.shear(shear=(1, 1), angles=(1, 1)))


def test_transforms_crop_any_number_of_dimensions():
    """As DALI 2.4 (its outputs written out): the longest argument sets the dimensions, one
    value stands for every axis; 4 coordinates map boxes (DALI's COCO guide)."""
    (boxes4, absolute3, one_d, default, boxes) = _run(
        lambda x: (
            fn.transforms.crop(to_start=(0.0, 0.0, 0.0, 0.0), to_end=(2.0, 3.0, 4.0, 5.0)),
            fn.transforms.crop(
                from_start=(0.1, 0.2, 0.3), from_end=(0.5, 1.0, 0.9),
                to_start=(1.0, 1.0, 1.0), to_end=(2.0, 2.0, 2.0), absolute=True,
            ),
            fn.transforms.crop(from_start=(0.1,), from_end=(0.5,), to_end=(4.0,)),
            fn.transforms.crop(),
            fn.coord_transform(
                fn.constant(fdata=[0.1, 0.2, 0.5, 0.6], shape=(1, 4)),
                MT=fn.transforms.crop(to_end=(200.0, 100.0, 200.0, 100.0)),
            ),
        )
    )  # fmt: skip
    for i in range(BATCH):
        np.testing.assert_allclose(
            boxes4.at(i), np.hstack([np.diag([2.0, 3.0, 4.0, 5.0]), np.zeros((4, 1))])
        )
        np.testing.assert_allclose(
            absolute3.at(i),
            [[2.5, 0.0, 0.0, 0.75], [0.0, 1.25, 0.0, 0.75], [0.0, 0.0, 5 / 3, 0.5]],
            atol=1e-6,
        )
        np.testing.assert_allclose(one_d.at(i), [[10.0, -1.0]], atol=1e-6)
        np.testing.assert_allclose(default.at(i), [[1.0, 0.0]])
        np.testing.assert_allclose(boxes.at(i), [[20.0, 20.0, 100.0, 60.0]], atol=1e-4)


def test_coord_flip_and_coord_transform():
    boxes = [np.array([[0.1, 0.2, 0.3, 0.4]] * (i + 1), dtype=np.float32) for i in range(BATCH)]
    flips = [1, 0, 1, 0]
    (flipped, moved) = _run(
        lambda x, b, f: (
            fn.coord_flip(b, flip_x=f, flip_y=1, center_y=0.6),
            fn.coord_transform(
                b.__getitem__((slice(None), slice(0, 2))), MT=fn.transforms.scale(scale=(2, 3))
            ),
        ),
        b=boxes,
        f=_per_sample(flips, np.int32),
    )
    for i in range(BATCH):
        np.testing.assert_allclose(
            flipped.at(i),
            tk.coord_flip(boxes[i], flip_x=bool(flips[i]), flip_y=True, center_y=0.6),
            atol=1e-6,
        )
        np.testing.assert_allclose(moved.at(i), boxes[i][:, :2] * [2, 3], atol=1e-6)


def test_random_ops_are_reproducible_and_follow_their_kernels():
    def graph(x):
        return (
            fn.random_resized_crop(x, size=(16, 16)),
            fn.jitter(x, nDegree=3),
            fn.water(x, ampl_x=2, ampl_y=3, phase_x=fn.random.uniform(range=(0, 6.28))),
            fn.sphere(x, fill_value=(1, 2, 3)),
            fn.resize_crop_mirror(x, resize_shorter=30, crop=(24, 24), mirror=1),
        )

    first = _run(graph)
    again = _run(graph)
    for a, b in zip(first, again):
        for i in range(BATCH):
            np.testing.assert_array_equal(a.at(i), b.at(i))
    rrc, jit, wat, sph, rcm = first
    for i, image in enumerate(IMAGES):
        assert rrc.at(i).shape == (16, 16, 3)
        assert jit.at(i).shape == image.shape and not np.array_equal(jit.at(i), image)
        assert wat.at(i).shape == image.shape
        np.testing.assert_array_equal(sph.at(i), dk.sphere(image, fill_value=(1, 2, 3)))
        np.testing.assert_array_equal(
            rcm.at(i), resize_crop_mirror(image, resize_shorter=30, crop=(24, 24), mirror=1)
        )


def test_legacy_ops_api():
    rotate = ops.Rotate(angle=90.0)
    resize_op = ops.Resize(size=(10, 12))
    rotation = ops.transforms.Rotation(angle=10.0)
    (r, s, m) = _run(lambda x: (rotate(x), resize_op(x), rotation()))
    for i, image in enumerate(IMAGES):
        np.testing.assert_array_equal(r.at(i), np.rot90(image))
        np.testing.assert_array_equal(s.at(i), resize(image, size=(10, 12)))
        np.testing.assert_allclose(m.at(i), tk.rotation(10.0), atol=1e-6)


def test_fastai_style_pipeline():
    """Random rotation of a random subset, random affine warps from fn.transforms with
    reflect borders, then a centre crop at 87.5% of each image's size."""
    batch = [
        np.random.default_rng(s).integers(0, 256, (33 + 4 * s, 41 + 2 * s, 3), dtype=np.uint8)
        for s in range(8)
    ]

    def graph(x):
        rotate_mask = fn.random.coin_flip(probability=0.075)
        angle = fn.random.uniform(range=(-10.0, 10.0))
        rotated = fn.rotate(x, angle=angle, keep_size=True, border="reflect", mask=rotate_mask)
        matrix = fn.transforms.rotation(
            fn.transforms.scale(scale=fn.random.uniform(range=(0.9, 1.1), shape=(2,))),
            angle=fn.random.uniform(range=(-5.0, 5.0)),
        )
        warped = fn.warp_affine(rotated, matrix=matrix, border="reflect")
        cropped = fn.crop(warped, rel_crop=0.875)
        return cropped, rotate_mask, angle, matrix

    runs = _run(graph, images=batch, iterations=3)
    rotated_any = 0
    for cropped, mask, angle, matrix in runs:
        for i, image in enumerate(batch):
            rotated = (
                wk.rotate(image, float(angle.at(i)), keep_size=True, border="reflect")
                if mask.at(i)
                else image
            )
            rotated_any += int(mask.at(i))
            warped = wk.warp_affine(rotated, np.asarray(matrix.at(i)), border="reflect")
            want = ck.crop(warped, rel_crop=0.875)
            h, w = image.shape[:2]
            assert cropped.at(i).shape == (int(0.875 * h + 0.5), int(0.875 * w + 0.5), 3)
            np.testing.assert_array_equal(cropped.at(i), want)
    # 24 draws at 7.5%: a small subset, and (with this seed) not an empty one
    assert 0 < rotated_any <= 10
