"""Detection and segmentation operators against DALI 2.4's CPU backend, on the same inputs.

Each case builds one pipeline body twice, once with ``nvidia.dali`` and once with ``chute``
(the same code: only the module differs), feeds both the same batches through
``L.fn.external_source`` and compares every output sample. For L.fn.random_bbox_crop, whose window
is random, the windows DALI chose are replayed through chute's pruning and remapping (and the
fully determined configurations are compared end to end).

Skipped when ``nvidia.dali`` is not importable (it is not part of the default test run):
``python3 -m venv V && V/bin/pip install nvidia-dali-cuda130==2.4.0`` plus chute's test
dependencies, then ``PYTHONPATH=core/src V/bin/python -m pytest tests/dali_parity``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("nvidia.dali")

from _harness import DALI, Case, compare, run

from chute.ops.detection import bbox_kernels
from chute.ops.detection.random_bbox_crop import CropSearch, _prune

BATCH = 4


def _case(name: str, define: Any, data: list[list[np.ndarray]], atol: float = 1e-5) -> Case:
    """``define(L, *sources)`` on one external_source per batch of ``data`` (no layout)."""
    return Case(name, define, data[0], atol=atol, layout=None, more_inputs=data[1:])


def _boxes(seed: int, ltrb: bool = True) -> list[np.ndarray]:
    """Random relative boxes per sample, plus a border box, a degenerate box and an empty list."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(BATCH):
        if i == BATCH - 1:
            out.append(np.zeros((0, 4), np.float32))
            continue
        lo = rng.uniform(0, 0.7, (3 + i, 2))
        hi = np.minimum(lo + rng.uniform(0.05, 0.4, lo.shape), 1.0)
        b = np.concatenate([lo, hi], 1)
        b = np.concatenate([b, [[0.0, 0.0, 1.0, 1.0], [0.3, 0.4, 0.3, 0.4]]])
        if not ltrb:
            b[:, 2:] -= b[:, :2]
        out.append(b.astype(np.float32))
    return out


def _scalars(values: list, dtype: Any) -> list[np.ndarray]:
    return [np.array(v, dtype) for v in values]


@pytest.mark.parametrize("ltrb", [True, False])
@pytest.mark.parametrize("horizontal,vertical", [(1, 0), (0, 1), (1, 1), (0, 0)])
def test_bb_flip(ltrb, horizontal, vertical):
    data = [_boxes(1, ltrb)]
    compare(
        _case(
            "bb_flip",
            lambda L, b: L.fn.bb_flip(b, ltrb=ltrb, horizontal=horizontal, vertical=vertical),
            data,
        )
    )


def test_bb_flip_per_sample_arguments():
    data = [_boxes(2), _scalars([1, 0, 1, 0], np.int32), _scalars([0, 1, 1, 0], np.int32)]
    compare(
        _case(
            "bb_flip_per_sample_arguments",
            lambda L, b, h, v: L.fn.bb_flip(b, ltrb=True, horizontal=h, vertical=v),
            data,
        )
    )


@pytest.mark.parametrize("ltrb", [True, False])
def test_bbox_paste(ltrb):
    data = [
        _boxes(3, ltrb),
        _scalars([1.0, 1.5, 3.0, 2.0], np.float32),
        _scalars([0.0, 0.25, 1.0, 0.5], np.float32),
        _scalars([1.0, 0.75, 0.0, 0.5], np.float32),
    ]
    compare(
        _case(
            "bbox_paste",
            lambda L, b, r, x, y: L.fn.bbox_paste(b, ratio=r, paste_x=x, paste_y=y, ltrb=ltrb),
            data,
        )
    )


def _anchors(n: int = 60) -> list[float]:
    rng = np.random.default_rng(5)
    centre = rng.uniform(0.05, 0.95, (n, 2))
    size = rng.uniform(0.05, 0.5, (n, 2))
    a = np.concatenate([centre - size / 2, centre + size / 2], 1).clip(0, 1)
    return a.astype(np.float32).ravel().tolist()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"criteria": 0.5},
        {"criteria": 0.3},
        {"criteria": 0.5, "offset": True},
        {
            "criteria": 0.4,
            "offset": True,
            "scale": 2.0,
            "means": [0.1, -0.1, 0.2, 0.0],
            "stds": [0.1, 0.1, 0.2, 0.2],
        },
    ],
)
def test_box_encoder(kwargs):
    boxes = _boxes(4)
    labels = [np.arange(1, len(b) + 1, dtype=np.int32) for b in boxes]
    anchors = _anchors()
    compare(
        _case(
            "box_encoder",
            lambda L, b, lab: L.fn.box_encoder(b, lab, anchors=anchors, **kwargs),
            [boxes, labels],
            atol=1e-4,
        )
    )


def _crop_inputs(seed: int) -> list[list[np.ndarray]]:
    # no empty sample and no zero-area box: DALI would search for ever (every box must reach
    # the threshold), and its num_attempts windows per threshold are not bounded otherwise
    boxes = [b[:-1] for b in _boxes(seed)[: BATCH - 1]]
    boxes.append(np.array([[0.1, 0.1, 0.2, 0.3]], np.float32))
    labels = [np.arange(10, 10 + len(b), dtype=np.int32) for b in boxes]
    return [boxes, labels]


def test_random_bbox_crop_whole_window_is_deterministic():
    """scaling [1, 1] and aspect ratio [1, 1]: the only window is the whole input."""
    compare(
        _case(
            "random_bbox_crop_whole_window_is_deterministic",
            lambda L, b, lab: L.fn.random_bbox_crop(
                b, lab, thresholds=[0.0], scaling=[1.0, 1.0], aspect_ratio=[1.0, 1.0],
                allow_no_crop=False, bbox_layout="xyXY", output_bbox_indices=True,
            ),
            _crop_inputs(6),
        )
    )  # fmt: skip


def test_random_bbox_crop_fixed_crop_shape_equal_to_input():
    """crop_shape == input_shape: the anchor can only be 0 (absolute coordinates)."""
    compare(
        _case(
            "random_bbox_crop_fixed_crop_shape_equal_to_input",
            lambda L, b, lab: L.fn.random_bbox_crop(
                b, lab, thresholds=[0.0], crop_shape=[40, 30], input_shape=[40, 30],
                allow_no_crop=False, bbox_layout="xyXY", output_bbox_indices=True,
            ),
            _crop_inputs(7),
        )
    )  # fmt: skip


@pytest.mark.parametrize("prune", [None, 0.5])
def test_random_bbox_crop_windows_prune_and_remap_as_dali(prune):
    """DALI's random windows, replayed through chute's pruning and box remapping."""
    extra = {} if prune is None else {"bbox_prune_threshold": prune}
    data = _crop_inputs(8)
    (anchor, shape, boxes, labels, indices) = run(
        DALI,
        _case(
            "random_bbox_crop",
            lambda L, b, lab: L.fn.random_bbox_crop(
                b, lab, thresholds=[0.1, 0.3, 0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
                allow_no_crop=False, bbox_layout="xyXY", output_bbox_indices=True,
                num_attempts=20, total_num_attempts=200, all_boxes_above_threshold=False,
                **extra,
            ),
            data,
        ),
    )  # fmt: skip
    search = CropSearch(thresholds=(0.1, 0.3, 0.5), bbox_prune_threshold=prune)
    for i in range(BATCH):
        gt = data[0][i]
        lo, hi = gt[:, :2], gt[:, 2:]
        crop_lo = anchor[i].astype(np.float32)
        crop_hi = (anchor[i] + shape[i]).astype(np.float32)
        keep = _prune(search, crop_lo, crop_hi, lo, hi)
        np.testing.assert_array_equal(keep, indices[i])
        np.testing.assert_array_equal(data[1][i][keep], labels[i].reshape(-1))
        new_lo, new_hi = bbox_kernels.remap_boxes(lo[keep], hi[keep], crop_lo, crop_hi)
        np.testing.assert_allclose(np.concatenate([new_lo, new_hi], 1), boxes[i], atol=1e-5)


@pytest.mark.parametrize(
    "kwargs,ndim",
    [
        ({"M": [0.5, 0.25, -1.0, 2.0], "T": [3.0, -1.0]}, 2),
        ({"M": 2.5, "T": 1.0}, 2),
        ({"MT": [1.0, 2.0, 0.5, 0.0, -1.0, 4.0, 2.0, 0.0, 0.0]}, 2),  # 2D -> 3D
        ({"M": [1.0, 0.0, 2.0, 0.5, 1.0, 0.0]}, 3),  # 3D -> 2D
        ({"T": [0.5, -2.0, 1.0]}, 3),
    ],
)
def test_coord_transform(kwargs, ndim):
    rng = np.random.default_rng(9)
    pts = [rng.uniform(-5, 5, (n, ndim)).astype(np.float32) for n in (5, 1, 0, 7)]
    compare(
        _case("coord_transform", lambda L, p: L.fn.coord_transform(p, **kwargs), [pts], atol=1e-4)
    )


@pytest.mark.parametrize(
    "kwargs,ndim",
    [
        ({"layout": "xy"}, 2),
        ({"layout": "xy", "flip_x": 0, "flip_y": 1, "center_y": 0.25}, 2),
        ({"layout": "yx", "flip_x": 1, "flip_y": 1, "center_x": 0.7}, 2),
        ({"layout": "xyz", "flip_x": 0, "flip_z": 1}, 3),
    ],
)
def test_coord_flip(kwargs, ndim):
    rng = np.random.default_rng(10)
    pts = [rng.uniform(0, 1, (n, ndim)).astype(np.float32) for n in (4, 1, 0, 6)]
    compare(_case("coord_flip", lambda L, p: L.fn.coord_flip(p, **kwargs), [pts]))


def _masks() -> list[list[np.ndarray]]:
    polygons = [
        np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10]], np.int32),
        np.array([[0, 0, 4], [0, 4, 7], [1, 7, 10]], np.int32),
        np.array([[3, 0, 3], [1, 3, 6]], np.int32),
        np.array([[0, 0, 3]], np.int32),
    ]
    vertices = [
        np.arange(2 * int(p[:, 2].max()), dtype=np.float32).reshape(-1, 2) / 10 + i
        for i, p in enumerate(polygons)
    ]
    mask_ids = [
        np.array([2, 0], np.int32),
        np.array([1], np.int32),
        np.array([1, 3], np.int32),
        np.array([], np.int32),
    ]
    return [mask_ids, polygons, vertices]


@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks(reindex):
    compare(
        _case(
            "select_masks",
            lambda L, ids, poly, vert: L.fn.segmentation.select_masks(
                ids, poly, vert, reindex_masks=reindex
            ),
            _masks(),
        )
    )


def _rotate_inputs() -> list[list[np.ndarray]]:
    boxes = [
        np.array([[0.1, 0.2, 0.4, 0.5], [0.6, 0.6, 0.9, 0.95], [0.0, 0.0, 1.0, 1.0]], np.float32),
        np.array([[0.45, 0.45, 0.55, 0.55]], np.float32),
        np.array([[0.0, 0.0, 0.1, 0.1], [0.8, 0.1, 1.0, 0.3]], np.float32),
        np.array([[0.2, 0.3, 0.6, 0.4]], np.float32),
    ]
    labels = [np.arange(1, len(b) + 1, dtype=np.int32) for b in boxes]
    return [boxes, labels]


@pytest.mark.parametrize("angle", [0.0, 30.0, 90.0, -45.0, 180.0])
@pytest.mark.parametrize("mode", ["expand", "halfway", "fixed"])
def test_bbox_rotate(angle, mode):
    compare(
        _case(
            "bbox_rotate",
            lambda L, b, lab: L.fn.bbox_rotate(
                b, lab, angle=angle, input_shape=[60, 80], mode=mode
            ),
            _rotate_inputs(),
            atol=1e-4,
        )
    )


@pytest.mark.parametrize("angle", [30.0, -60.0])
def test_bbox_rotate_keep_size_removes_cut_boxes(angle):
    compare(
        _case(
            "bbox_rotate_keep_size_removes_cut_boxes",
            lambda L, b, lab: L.fn.bbox_rotate(
                b, lab, angle=angle, input_shape=[60, 80], keep_size=True, remove_threshold=0.3
            ),
            _rotate_inputs(),
            atol=1e-4,
        )
    )


def test_bbox_rotate_xywh_absolute():
    boxes = [b.copy() for b in _rotate_inputs()[0]]
    for b in boxes:
        b[:, 2:] -= b[:, :2]
        b *= np.array([80, 60, 80, 60], np.float32)
    compare(
        _case(
            "bbox_rotate_xywh_absolute",
            lambda L, b: L.fn.bbox_rotate(
                b, angle=20.0, input_shape=[60, 80], bbox_layout="xyWH", bbox_normalized=False
            ),
            [boxes],
            atol=1e-3,
        )
    )


def _blob_masks() -> list[np.ndarray]:
    masks = []
    for i in range(BATCH):
        m = np.zeros((12, 15), np.int32)
        m[2 + i : 6 + i, 3 : 9 + i] = 3  # the largest object, class 3
        m[9:11, 12:14] = 5  # a small object, class 5
        m[0, 0] = 3  # a single pixel of class 3, separate from the block
        masks.append(m)
    return masks


@pytest.mark.parametrize("fmt", ["anchor_shape", "start_end", "box"])
def test_random_object_bbox_largest_object(fmt):
    """foreground_prob 1 and k_largest 1: the box of the largest blob, no randomness left."""
    compare(
        _case(
            "random_object_bbox_largest_object",
            lambda L, m: L.fn.segmentation.random_object_bbox(
                m, format=fmt, foreground_prob=1.0, k_largest=1, classes=[3]
            ),
            [_blob_masks()],
        )
    )


def test_random_mask_pixel_single_foreground_pixel():
    masks = []
    for i in range(BATCH):
        m = np.zeros((9, 11), np.uint8)
        m[1 + i, 10 - 2 * i] = 1
        masks.append(m)
    compare(
        _case(
            "random_mask_pixel_single_foreground_pixel",
            lambda L, m: L.fn.segmentation.random_mask_pixel(m, foreground=1),
            [masks],
        )
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"to_start": (0.0, 0.0, 0.0, 0.0), "to_end": (2.0, 3.0, 4.0, 5.0)},  # boxes, 4-D
        {"from_start": (0.1, 0.2, 0.3), "from_end": (0.5, 1.0, 0.9), "to_end": (2.0, 2.0, 2.0)},
        {"from_start": (0.9, 0.1), "from_end": (0.1, 0.8), "absolute": True},
        {"from_start": (0.1,), "from_end": (0.5,), "to_end": (4.0,)},
        {},
    ],
)
def test_transforms_crop_dimensions(kwargs):
    """The COCO guide maps boxes with a 4-D transforms.crop: dimensions as DALI infers them."""
    data = [_scalars([0, 1, 2, 3], np.int32)]
    compare(_case("transforms_crop_dimensions", lambda L, _: L.fn.transforms.crop(**kwargs), data))


def test_slice_constant_and_integer_inputs():
    """L.fn.slice(x, 1, 2, axes=[0]) (the guide's idiom): constants, integers absolute."""
    rng = np.random.default_rng(11)
    data = [[rng.uniform(0, 1, (5, 6)).astype(np.float32) for _ in range(BATCH)]]
    compare(
        _case(
            "slice_constant_and_integer_inputs",
            lambda L, x: (
                L.fn.slice(x, 1, 2, axes=[0]),
                L.fn.slice(x, np.array([2, 1], np.int32), np.array([3, 4], np.int32)),
                L.fn.slice(x, np.float32(0.2), np.float32(0.4), axes=[0]),
            ),
            data,
        )
    )
