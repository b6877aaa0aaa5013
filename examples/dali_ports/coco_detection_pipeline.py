"""DALI's "COCO Reader with Augmentations" guide (detection and segmentation), ported.

The pipelines are the guide's; only the imports differ (`nvidia.dali` -> `chute`): the COCO
reader with polygon masks; random_bbox_crop with segmentation.select_masks, a partial decode
(decoders.image_slice) and the polygons moved into the crop by transforms.crop +
coord_transform; paste + bbox_paste + flip + bb_flip + coord_flip; and pixelwise masks with
segmentation.random_mask_pixel choosing the centre of a crop. The data comes from
`$DALI_EXTRA_PATH/db/coco`, as in the guide (the test writes a tiny COCO dataset there); the
guide's matplotlib figures become printed checks. `device_id=0` and `device='mixed'` run on
the CPU where there is no GPU (chute's device fallback).
tests/core/detection/test_dali_examples.py runs it.
"""

import os.path
import random
import warnings

import numpy as np

import chute.fn as fn
import chute.math as math  # noqa: F401  (imported by the guide)
import chute.types as types
from chute.pipeline import Pipeline

warnings.filterwarnings("ignore", message="no GPU is available")
random.seed(1231231)  # the guide picks plot colours with it

test_data_root = os.environ["DALI_EXTRA_PATH"]
file_root = os.path.join(test_data_root, "db", "coco", "images")
annotations_file = os.path.join(test_data_root, "db", "coco", "instances.json")

num_gpus = 1  # Single GPU for this example
device_id = 0
batch_size = 32
num_threads = 4  # Number of CPU threads


def inside(points, lo, hi, eps=1e-3):
    """Whether every point lies in the box [lo, hi] (x, y order)."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    return bool(((points >= lo - eps) & (points <= hi + eps)).all())


def report(title, **checks):
    print(f"-- {title}")
    for name, value in checks.items():
        print(f"{name}: {value}")


# 1. Loading the data: images, ltrb boxes, labels and the masks as polygons
pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id)
with pipe:
    inputs, bboxes, labels, polygons, vertices = fn.readers.coco(
        file_root=file_root,
        annotations_file=annotations_file,
        polygon_masks=True,  # masks as polygons
        ltrb=True,  # boxes as left, top, right, bottom
    )
    images = fn.decoders.image(inputs, device="mixed")
    pipe.set_outputs(images, bboxes, labels, polygons, vertices)
pipe.build()

images, bboxes, labels, polygons, vertices = pipe.run()
ok_polygons = ok_boxes = True
for i in range(batch_size):
    img = np.asarray(images.as_cpu().at(i))
    box, poly, vert = (np.asarray(t.at(i)) for t in (bboxes, polygons, vertices))
    h, w = img.shape[:2]
    ok_boxes &= inside(box[:, :2], 0, [w, h]) and inside(box[:, 2:], 0, [w, h])
    for mask_idx, start, end in poly:  # absolute pixel coordinates: polygons inside their box
        ok_polygons &= inside(vert[start:end], box[mask_idx, :2], box[mask_idx, 2:])
report("coco reader", boxes_in_image=ok_boxes, polygons_inside_their_boxes=ok_polygons)


# Wrapping the pipeline definition in separate functions that we can reuse later
def coco_reader_def():
    inputs, bboxes, labels, polygons, vertices = fn.readers.coco(
        file_root=file_root,
        annotations_file=annotations_file,
        polygon_masks=True,  # masks as polygons
        ratio=True,  # boxes and polygons relative to the image size
        ltrb=True,  # boxes as left, top, right, bottom
    )
    return inputs, bboxes, labels, polygons, vertices


def random_bbox_crop_def(bboxes, labels, polygons, vertices):
    # random_bbox_crop works on relative coordinates; these arguments give visible crops
    anchor_rel, shape_rel, bboxes, labels, bbox_indices = fn.random_bbox_crop(
        bboxes,
        labels,
        aspect_ratio=[0.5, 2],  # range of aspect ratios
        thresholds=[0.0],  # no minimum IoU, for the demonstration
        allow_no_crop=False,  # always crop, for the demonstration
        scaling=[0.3, 0.6],  # crop size relative to the image
        seed=12345,  # fixed seed: the same crops every run
        bbox_layout="xyXY",  # left, top, right, bottom
        output_bbox_indices=True,  # which input boxes survived
    )

    # keep the polygons of the boxes that stayed in the crop
    polygons, vertices = fn.segmentation.select_masks(bbox_indices, polygons, vertices)

    return anchor_rel, shape_rel, bboxes, labels, polygons, vertices


# 2. Random crop: partial decoding, polygons and boxes moved into the crop (absolute pixels)
pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id)
with pipe:
    inputs, bboxes, labels, polygons, vertices = coco_reader_def()
    anchor_rel, shape_rel, bboxes, labels, polygons, vertices = random_bbox_crop_def(
        bboxes, labels, polygons, vertices
    )

    # partial decoding of the image
    images = fn.decoders.image_slice(
        inputs, anchor_rel, shape_rel, normalized_anchor=True, normalized_shape=True, device="cpu"
    )
    # cropped image dimensions
    crop_shape = fn.shapes(images, dtype=types.FLOAT)
    crop_h = fn.slice(crop_shape, 0, 1, axes=[0])
    crop_w = fn.slice(crop_shape, 1, 1, axes=[0])

    images = images.gpu()

    # polygons into the crop's frame, in pixels: the crop's top-left corner goes to (0, 0)
    # and its bottom-right corner to (crop_w, crop_h)
    MT_vertices = fn.transforms.crop(
        from_start=anchor_rel,
        from_end=(anchor_rel + shape_rel),
        to_start=(0.0, 0.0),
        to_end=fn.cat(crop_w, crop_h),
    )
    vertices = fn.coord_transform(vertices, MT=MT_vertices)

    # boxes to absolute coordinates
    MT_bboxes = fn.transforms.crop(
        to_start=(0.0, 0.0, 0.0, 0.0), to_end=fn.cat(crop_w, crop_h, crop_w, crop_h)
    )
    bboxes = fn.coord_transform(bboxes, MT=MT_bboxes)

    pipe.set_outputs(images, bboxes, labels, polygons, vertices)

pipe.build()
images, bboxes, labels, polygons, vertices = pipe.run()
ok_boxes = ok_polygons = ok_labels = True
for i in range(batch_size):
    img = np.asarray(images.as_cpu().at(i))
    box, lab = np.asarray(bboxes.at(i)), np.asarray(labels.at(i))
    poly, vert = np.asarray(polygons.at(i)), np.asarray(vertices.at(i))
    h, w = img.shape[:2]
    ok_labels &= len(lab) == len(box) > 0
    ok_boxes &= inside(box[:, :2], 0, [w, h]) and inside(box[:, 2:], 0, [w, h])
    # the polygons keep their input mask ids; clipped to the crop, each lies in a kept box
    for _, start, end in poly:
        clipped = np.clip(vert[start:end], 0, [w, h])
        ok_polygons &= any(inside(clipped, b[:2], b[2:], eps=0.05) for b in box)
report(
    "random bbox crop",
    labels_per_box=ok_labels,
    boxes_in_crop=ok_boxes,
    clipped_polygons_inside_kept_boxes=ok_polygons,
)

# 3. Paste onto a larger canvas and flip: boxes and polygons follow the image
pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=12345)
with pipe:
    inputs, bboxes, labels, polygons, vertices = coco_reader_def()
    orig_shape = fn.peek_image_shape(inputs)
    images = fn.decoders.image(inputs)
    images = images.gpu()
    px = fn.random.uniform(range=(0, 1))
    py = fn.random.uniform(range=(0, 1))
    ratio = fn.random.uniform(range=(1, 2))
    images = fn.paste(images, paste_x=px, paste_y=py, ratio=ratio, fill_value=(32, 64, 128))
    bboxes = fn.bbox_paste(bboxes, paste_x=px, paste_y=py, ratio=ratio, ltrb=True)

    scale = 1.0 / ratio
    margin = ratio - 1.0
    px_1 = scale * px * margin
    py_1 = scale * py * margin
    ver_x = scale * fn.slice(vertices, 0, 1, axes=[1]) + px_1
    ver_y = scale * fn.slice(vertices, 1, 1, axes=[1]) + py_1
    vertices = fn.cat(ver_x, ver_y, axis=1)

    should_flip = fn.random.coin_flip(probability=1.0)  # always, for the demonstration
    images = fn.flip(images, horizontal=should_flip)
    bboxes = fn.bb_flip(bboxes, horizontal=should_flip, ltrb=True)
    vertices = fn.coord_flip(vertices, flip_x=should_flip)

    pipe.set_outputs(images, bboxes, labels, polygons, vertices, orig_shape)

pipe.build()
images, bboxes, labels, polygons, vertices, orig_shape = pipe.run()
ok_polygons = ok_fill = ok_canvas = True
for i in range(batch_size):
    img = np.asarray(images.as_cpu().at(i))
    box, poly, vert = (np.asarray(t.at(i)) for t in (bboxes, polygons, vertices))
    h0, w0 = np.asarray(orig_shape.at(i))[:2]
    h, w = img.shape[:2]
    ok_canvas &= h >= h0 and w >= w0
    for mask_idx, start, end in poly:  # relative coordinates after paste and flip
        ok_polygons &= inside(vert[start:end], box[mask_idx, :2], box[mask_idx, 2:])
    # the canvas is ratio times the image: a margin of fill colour on some side
    if h > h0 + 2 and w > w0 + 2:
        edges = [img[0], img[-1], img[:, 0], img[:, -1]]
        ok_fill &= any(bool((e == (32, 64, 128)).all()) for e in edges)
report(
    "paste and flip",
    canvas_at_least_the_image=ok_canvas,
    fill_colour_margin=ok_fill,
    polygons_inside_their_boxes=ok_polygons,
)

# 4. Pixelwise masks: crops centred on a random (mostly foreground) pixel
pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=device_id, seed=12345)
with pipe:
    # COCO reader with pixelwise masks
    inputs, bboxes, labels, masks = fn.readers.coco(
        file_root=file_root,
        annotations_file=annotations_file,
        pixelwise_masks=True,  # masks as label images
    )
    images = fn.decoders.image(inputs)

    # the reader gives (H, W, 1) masks: drop the trailing dimension
    masks = fn.reshape(masks, rel_shape=(1, 1))

    # a foreground pixel (value > 0) with 70% probability, any pixel otherwise
    center = fn.segmentation.random_mask_pixel(
        masks, foreground=fn.random.coin_flip(probability=0.7)
    )

    # random crop shape (it could be constant)
    crop_h = fn.cast(fn.random.uniform(range=(20, 30), shape=(1,), device="cpu"), dtype=types.INT64)
    crop_w = fn.cast(fn.random.uniform(range=(20, 30), shape=(1,), device="cpu"), dtype=types.INT64)
    crop_shape = fn.cat(crop_h, crop_w, axis=0)

    # top-left corner of the crop window
    crop_anchor = center - crop_shape // 2

    # slice image and mask, padding where the window leaves the image (a foreground
    # pixel can lie near the border)
    out_image = fn.slice(
        images, crop_anchor, crop_shape, axis_names="HW", out_of_bounds_policy="pad"
    )
    out_mask = fn.slice(masks, crop_anchor, crop_shape, axis_names="HW", out_of_bounds_policy="pad")

    pipe.set_outputs(images, masks, center, crop_anchor, crop_shape, out_image, out_mask)
pipe.build()
outputs = pipe.run()
ok_shape = ok_centre = ok_mask = True
foreground = 0
for i in range(batch_size):
    image, mask, center, anchor, shape, out_image, out_mask = (np.asarray(o.at(i)) for o in outputs)
    ok_shape &= out_image.shape == (*shape, 3) and out_mask.shape == tuple(shape)
    ok_centre &= bool((anchor == center - shape // 2).all())
    cy, cx = center - anchor
    ok_mask &= out_mask[cy, cx] == mask[center[0], center[1]]
    ok_mask &= bool((out_image[cy, cx] == image[center[0], center[1]]).all())
    foreground += int(mask[center[0], center[1]] > 0)
report(
    "random mask pixel",
    crop_shapes=ok_shape,
    anchors_centre_the_pixel=ok_centre,
    crops_hold_the_pixel=ok_mask,
    mostly_foreground=foreground > batch_size // 2,
)
