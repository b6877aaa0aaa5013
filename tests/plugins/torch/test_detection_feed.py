"""A Mask R-CNN-style pipeline's ragged outputs (boxes, labels, polygons, vertices) in torch.

The pipeline: readers.coco with polygon masks -> random_bbox_crop (kept box indices) ->
segmentation.select_masks (reindexed to the kept boxes) -> decoders.image_slice -> resize
-> transforms.crop + coord_transform moving the polygons into the crop. chute.torch's
DataIterator gives the ragged outputs as lists of per-sample tensors (or, with pad_ragged,
one zero-padded tensor), DALIRaggedIterator as DALI's sparse_list / dense tags do; they
must equal what the same pipeline gives when run directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import chute.torch  # noqa: E402
from chute import fn, pipeline_def  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "core" / "detection"))
from coco_tiny import SIZES, write_coco  # noqa: E402

BATCH = 4
NAMES = ["images", "boxes", "labels", "polygons", "vertices"]


def _pipeline(coco: Path):
    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=21)
    def maskrcnn():
        jpegs, boxes, labels, polygons, vertices = fn.readers.coco(
            file_root=str(coco / "images"), annotations_file=str(coco / "instances.json"),
            polygon_masks=True, ratio=True, ltrb=True, name="Reader",
        )  # fmt: skip
        anchor, shape, boxes, labels, kept = fn.random_bbox_crop(
            boxes, labels, thresholds=[0.0, 0.3], scaling=[0.5, 1.0], aspect_ratio=[0.5, 2.0],
            bbox_layout="xyXY", output_bbox_indices=True,
        )  # fmt: skip
        polygons, vertices = fn.segmentation.select_masks(
            kept, polygons, vertices, reindex_masks=True
        )
        images = fn.decoders.image_slice(jpegs, anchor, shape)
        images = fn.resize(images, resize_x=64, resize_y=48)
        to_crop = fn.transforms.crop(from_start=anchor, from_end=anchor + shape)
        vertices = fn.coord_transform(vertices, MT=to_crop)
        return images, boxes, labels, polygons, vertices

    p = maskrcnn()
    p.build()
    return p


def _direct(coco: Path, iterations: int) -> list[list[list[np.ndarray]]]:
    p = _pipeline(coco)
    out = []
    for _ in range(iterations):
        out.append([[np.asarray(o.at(i)) for i in range(BATCH)] for o in p.run()])
    return out


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    return write_coco(tmp_path_factory.mktemp("coco"))


def test_data_iterator_gives_ragged_detection_outputs(coco):
    want = _direct(coco, 2)
    it = chute.torch.DataIterator(_pipeline(coco), NAMES, reader_name="Reader")
    batches = [b[0] for b in it]
    assert len(batches) == len(SIZES) // BATCH == 2  # one epoch of the 8 images
    for batch, expected in zip(batches, want):
        images = batch["images"]
        assert isinstance(images, torch.Tensor) and images.shape == (BATCH, 48, 64, 3)
        np.testing.assert_array_equal(images.numpy(), np.stack(expected[0]))
        for k, name in enumerate(NAMES[1:], start=1):
            samples = batch[name]
            assert isinstance(samples, list) and len(samples) == BATCH
            for got, exp in zip(samples, expected[k]):
                np.testing.assert_array_equal(got.numpy(), exp)
        for boxes, labels, polygons, vertices in zip(*(batch[n] for n in NAMES[1:])):
            assert len(labels) == len(boxes) > 0
            assert bool(((boxes >= 0) & (boxes <= 1)).all())
            # reindexed masks point at the kept boxes; vertices in the crop's frame stay in
            # their box once clipped to the crop
            for mask, start, end in polygons.tolist():
                assert 0 <= mask < len(boxes)
                pts = vertices[start:end].clamp(0, 1)
                box = boxes[mask]
                assert bool(((pts >= box[:2] - 1e-4) & (pts <= box[2:] + 1e-4)).all())


def test_pad_ragged_and_dali_ragged_iterator(coco):
    want = _direct(coco, 1)[0]
    (padded,) = next(
        iter(
            chute.torch.DataIterator(_pipeline(coco), NAMES, reader_name="Reader", pad_ragged=True)
        )
    )
    most = max(len(b) for b in want[1])
    assert padded["boxes"].shape == (BATCH, most, 4)
    for i, boxes in enumerate(want[1]):
        np.testing.assert_array_equal(padded["boxes"][i, : len(boxes)].numpy(), boxes)
        assert not padded["boxes"][i, len(boxes) :].any()

    tags = [chute.torch.DALIRaggedIterator.DENSE_TAG] + [
        chute.torch.DALIRaggedIterator.SPARSE_LIST_TAG
    ] * 4
    ragged = chute.torch.DALIRaggedIterator(
        _pipeline(coco), NAMES, reader_name="Reader", output_types=tags
    )
    (batch,) = next(iter(ragged))
    np.testing.assert_array_equal(batch["images"].numpy(), np.stack(want[0]))
    for got, exp in zip(batch["vertices"], want[4]):
        np.testing.assert_array_equal(got.numpy(), exp)
