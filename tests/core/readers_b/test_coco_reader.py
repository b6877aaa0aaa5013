"""fn.readers.coco: boxes, labels, masks, ids, filters, order, shards, resume, bad annotations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _listed_reader_checks import check_resume, shard_epochs
from PIL import Image

from chute import OperatorError, fn, pipeline_def
from chute.ops.segmentation.mask_kernels import polygon_mask, rle_counts, rle_decode


def write_coco(tmp_path, extra_annotations=(), n_extra_images=0):
    """4 images (ids 30, 10, 20, 40 in the file; 40 has no object) + n_extra_images."""
    root = tmp_path / "images"
    root.mkdir(exist_ok=True)
    ids = [30, 10, 20, 40] + [100 + k for k in range(n_extra_images)]
    images = []
    for k, image_id in enumerate(ids):
        name = f"img{image_id}.jpg"
        Image.fromarray(np.full((20, 10, 3), k * 20 % 256, np.uint8)).save(root / name)
        images.append({"id": image_id, "file_name": name, "width": 10, "height": 20})
    annotations = [
        {
            "id": 1,
            "image_id": 10,
            "category_id": 7,
            "bbox": [1, 2, 3, 4],
            "iscrowd": 0,
            "segmentation": [[1, 1, 5, 1, 5, 5, 1, 5], [6, 6, 8, 6, 7, 9]],
        },
        {
            "id": 2,
            "image_id": 10,
            "category_id": 3,
            "bbox": [0, 0, 10, 20],
            "iscrowd": 1,
            "segmentation": {"size": [20, 10], "counts": [5, 3, 192]},
        },
        {
            "id": 3,
            "image_id": 30,
            "category_id": 3,
            "bbox": [2.5, 4, 5, 8],
            "iscrowd": 0,
            "segmentation": [[2, 4, 7, 4, 7, 12]],
        },
        {"id": 4, "image_id": 30, "category_id": 7, "bbox": [0, 0, 0.05, 3], "iscrowd": 0},
        {"id": 5, "image_id": 20, "category_id": 5, "bbox": [4, 4, 2, 2], "iscrowd": 0},
        *extra_annotations,
    ]
    for k in range(n_extra_images):
        annotations.append(
            {
                "id": 100 + k,
                "image_id": 100 + k,
                "category_id": 5,
                "bbox": [k, 0, 1, 1],
                "iscrowd": 0,
            }
        )
    # categories listed in the order 7, 3, 5: DALI remaps them to 1, 2, 3 in that order
    doc = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 7, "name": "a"}, {"id": 3, "name": "b"}, {"id": 5, "name": "c"}],
    }
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc))
    return str(root), str(path)


def coco_pipe(root, ann, batch_size=4, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=6)
    def pipe():
        return tuple(fn.readers.coco(file_root=root, annotations_file=ann, name="R", **kw))

    return pipe()


def test_boxes_labels_ids_in_image_id_order(tmp_path):
    root, ann = write_coco(tmp_path)
    images, boxes, labels, ids = coco_pipe(root, ann, image_ids=True).run()
    assert [int(ids.at(i)[0]) for i in range(4)] == [10, 20, 30, 40]
    assert images.at(0).tobytes() == (Path(root) / "img10.jpg").read_bytes()
    assert boxes.dtype == np.float32 and labels.dtype == np.int32
    np.testing.assert_array_equal(boxes.at(0), [[1, 2, 3, 4], [0, 0, 10, 20]])
    assert labels.at(0).tolist() == [1, 2]  # ids 7, 3 -> 1, 2 (order of 'categories')
    assert labels.at(1).tolist() == [3]
    # image 30: the 0.05-wide box is under size_threshold 0.1
    np.testing.assert_array_equal(boxes.at(2), [[2.5, 4, 5, 8]])
    assert boxes.at(3).shape == (0, 4) and labels.at(3).shape == (0,)


def test_ltrb_ratio_no_remapping_no_iscrowd_skip_empty(tmp_path):
    root, ann = write_coco(tmp_path)
    p = coco_pipe(
        root,
        ann,
        3,
        ltrb=True,
        ratio=True,
        avoid_class_remapping=True,
        include_iscrowd=False,
        skip_empty=True,
        size_threshold=0.01,
        image_ids=True,
    )
    assert p.reader_meta("R")["epoch_size"] == 3  # image 40 has no object
    _, boxes, labels, ids = p.run()
    assert [int(ids.at(i)[0]) for i in range(3)] == [10, 20, 30]
    np.testing.assert_allclose(boxes.at(0), [[0.1, 0.1, 0.4, 0.3]])  # (1,2,4,6)/(10,20)
    assert labels.at(0).tolist() == [7] and labels.at(2).tolist() == [3, 7]
    np.testing.assert_allclose(boxes.at(2)[1], [0, 0, 0.005, 0.15])


def test_polygon_masks(tmp_path):
    root, ann = write_coco(tmp_path)
    _, _, labels, polygons, vertices = coco_pipe(root, ann, polygon_masks=True).run()
    # image 10: object 0 has two polygons (4 and 3 vertices); object 1 is an RLE: no polygon
    assert polygons.at(0).tolist() == [[0, 0, 4], [0, 4, 7]]
    np.testing.assert_array_equal(
        vertices.at(0), [[1, 1], [5, 1], [5, 5], [1, 5], [6, 6], [8, 6], [7, 9]]
    )
    assert polygons.at(2).tolist() == [[0, 0, 3]] and polygons.at(1).shape == (0, 3)
    _, _, _, _, rel = coco_pipe(root, ann, polygon_masks=True, ratio=True).run()
    np.testing.assert_allclose(rel.at(2), [[0.2, 0.2], [0.7, 0.2], [0.7, 0.6]])


def coco_string(counts):
    """COCO's compressed RLE string (its rleToString, for the test's reference)."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


def test_rle_and_polygon_rasterization():
    counts = [5, 3, 192, 40, 7, 1000, 2]
    assert rle_counts(coco_string(counts)) == counts
    assert rle_counts("0W1") == [0, 39]
    # column-major runs: 1 zero, 2 ones (pixels 1 and 2), 3 zeros
    assert rle_decode(2, 3, [1, 2, 3]).tolist() == [[False, True, False], [True, False, False]]
    # runs may stop short (the rest is 0), never run past the mask
    assert rle_decode(2, 2, [1, 1]).tolist() == [[False, False], [True, False]]
    with pytest.raises(ValueError, match="cover 7 pixels"):
        rle_decode(2, 3, [1, 2, 4])
    with pytest.raises(ValueError, match="truncated"):
        rle_counts("0W")  # 'W' says that more groups follow
    square = polygon_mask(6, 6, np.array([[1, 1], [4, 1], [4, 4], [1, 4]], np.float32))
    expected = np.zeros((6, 6), bool)
    expected[1:4, 1:4] = True
    np.testing.assert_array_equal(square, expected)
    triangle = polygon_mask(4, 4, np.array([[0, 0], [4, 0], [0, 4]], np.float32))
    centres = np.add.outer(np.arange(4) + 0.5, np.arange(4) + 0.5)  # x + y of each centre
    np.testing.assert_array_equal(triangle, centres < 4)
    # COCO's rule on a concave outline and a diamond (written out from its definition: the
    # outline traced on a 5x grid, toggles where it crosses a pixel-column centre)
    notch = polygon_mask(5, 6, np.array([[0, 0], [6, 0], [6, 4], [3, 1], [0, 4]], np.float32))
    assert notch.astype(int).tolist() == [
        [1, 1, 1, 1, 1, 1],
        [1, 1, 0, 0, 1, 1],
        [1, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
    ]
    diamond = polygon_mask(7, 6, np.array([[1, 0], [4, 3], [1, 6], [-2, 3]], np.float32))
    assert diamond.astype(int).tolist() == [
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
    ]
    assert not polygon_mask(3, 3, np.zeros((0, 2), np.float32)).any()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools on NumPy 2
def test_masks_match_pycocotools():
    """Random polygons (inside and beyond the image, half-pixel vertices too) and random
    masks' RLEs (compressed and not) against pycocotools, which DALI's reader embeds."""
    coco_mask = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(0)
    for k in range(200):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        xy = rng.uniform(-4, max(h, w) + 4, (int(rng.integers(3, 9)), 2))
        if k % 2:
            xy = np.round(xy * 2) / 2
        rle = coco_mask.frPyObjects([xy.ravel().tolist()], h, w)
        expected = coco_mask.decode(rle)[..., 0].astype(bool)
        np.testing.assert_array_equal(polygon_mask(h, w, xy), expected, err_msg=f"case {k}")
        mask = np.asfortranarray(rng.random((h, w)) < rng.random())
        encoded = coco_mask.encode(mask.astype(np.uint8))
        np.testing.assert_array_equal(rle_decode(h, w, encoded["counts"].decode()), mask)
        runs = np.diff(np.flatnonzero(np.diff(np.r_[0, mask.T.ravel(), 2]) != 0), prepend=0)
        uncompressed = {"size": [h, w], "counts": runs.tolist()}
        via_coco = coco_mask.decode(coco_mask.frPyObjects(uncompressed, h, w)).astype(bool)
        np.testing.assert_array_equal(via_coco, mask)
        np.testing.assert_array_equal(rle_decode(h, w, runs.tolist()), mask)


def test_pixelwise_masks(tmp_path):
    root, ann = write_coco(tmp_path)
    _, _, labels, masks = coco_pipe(root, ann, pixelwise_masks=True).run()
    m = masks.at(0)
    assert m.shape == (20, 10, 1) and m.dtype == np.int32
    assert labels.at(0).tolist() == [1, 2]
    expected = np.zeros((20, 10), np.int32)
    expected[1:5, 1:5] = 1  # object 0's square (1,1)-(5,5): pixel centres 1.5 .. 4.5
    expected |= polygon_mask(20, 10, np.array([[6, 6], [8, 6], [7, 9]], np.float32)) * 1
    expected[5:8, 0] = 2  # object 1's RLE [5, 3, 192]: pixels 5..7 of column 0
    np.testing.assert_array_equal(m[..., 0], expected)
    assert masks.at(3).shape == (20, 10, 1) and not masks.at(3).any()


@pytest.mark.parametrize("num_shards", [1, 2, 3])
def test_shards_cover_every_image_once(tmp_path, num_shards):
    root, ann = write_coco(tmp_path, n_extra_images=5)

    def make(shard, shards):
        return coco_pipe(
            root, ann, 2, image_ids=True, shard_id=shard, num_shards=shards, random_shuffle=True
        )

    epochs = shard_epochs(
        make, ["i", "b", "l", "id"], lambda b, i: int(b["id"].at(i)[0]), num_shards
    )
    every = [10, 20, 30, 40, 100, 101, 102, 103, 104]
    for per_shard in epochs:
        assert sorted(k for keys in per_shard for k in keys) == every


def test_images_argument_order_duplicates_and_preprocessed(tmp_path):
    root, ann = write_coco(tmp_path)
    save = tmp_path / "pre"
    p = coco_pipe(
        root,
        ann,
        3,
        images=["img40.jpg", "img10.jpg", "img40.jpg", "nope.jpg"],
        image_ids=True,
        save_preprocessed_annotations=True,
        save_preprocessed_annotations_dir=str(save),
    )
    _, boxes, labels, ids = p.run()
    assert [int(ids.at(i)[0]) for i in range(3)] == [40, 10, 40]

    @pipeline_def(batch_size=3, num_threads=1, device_id=None)
    def again():
        return tuple(
            fn.readers.coco(file_root=root, preprocessed_annotations=str(save), image_ids=True)
        )

    _, boxes2, labels2, ids2 = again().run()
    assert [int(ids2.at(i)[0]) for i in range(3)] == [40, 10, 40]
    np.testing.assert_array_equal(boxes2.at(1), boxes.at(1))
    assert labels2.at(1).tolist() == labels.at(1).tolist()


def test_resume_mid_epoch(tmp_path):
    root, ann = write_coco(tmp_path, n_extra_images=3)
    check_resume(
        lambda: coco_pipe(root, ann, 2, image_ids=True, random_shuffle=True),
        ["i", "b", "l", "id"],
        lambda b: [int(b["id"].at(i)[0]) for i in range(len(b["id"]))],
    )


def test_bad_annotation_and_missing_image(tmp_path):
    root, ann = write_coco(
        tmp_path,
        extra_annotations=[
            {"id": 9, "image_id": 999, "category_id": 3, "bbox": [0, 0, 1, 1]},
        ],
    )
    with pytest.raises(ValueError, match=r"instances\.json.*annotations\[5\].*image_id 999"):
        coco_pipe(root, ann).build()
    root, ann = write_coco(tmp_path)
    (tmp_path / "images" / "img20.jpg").unlink()
    with pytest.raises((OperatorError, OSError), match=r"img20\.jpg"):
        coco_pipe(root, ann).run()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, on_error="skip")
    def pipe():
        images, boxes, labels, ids = fn.readers.coco(
            file_root=root, annotations_file=ann, image_ids=True, name="R"
        )
        return images, ids + 0

    p = pipe()
    _, ids = p.run()
    assert sorted({int(ids.at(i)[0]) for i in range(4)}) == [10, 30, 40]
    (error,) = p.errors()
    assert error["path"].endswith("img20.jpg")
