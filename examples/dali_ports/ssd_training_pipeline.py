"""DALI's SSD300 training pipeline (the PyTorch single-stage-detector example), ported.

`create_coco_pipeline` is the example's pipeline; only the imports differ (`nvidia.dali` ->
`chute`). COCO reader -> random_bbox_crop -> decoders.image_slice (device="mixed": the CPU
here, chute's device fallback) -> resize 300 -> hsv + brightness_contrast -> bb_flip +
crop_mirror_normalize (mirror) -> box_encoder against SSD300's 8,732 default boxes.

The example takes its data from its command line and `dboxes300_coco()` from its utils; the
preamble stands in for those: COCO data from `$DALI_EXTRA_PATH/db/coco` (DALI_extra's
layout), SSD300's default boxes written out below, and a single shard where
torch.distributed is not initialized (or torch not installed). The training loop becomes
printed checks on the outputs. tests/core/detection/test_dali_examples.py runs it.
"""

import os
import sys
import types as pytypes
import warnings
from itertools import product
from math import sqrt

import numpy as np

import chute.fn as fn
import chute.types as types
from chute.pipeline import pipeline_def

# preamble: what the example's command line and utils provide
warnings.filterwarnings("ignore", message="no GPU is available")
test_data_root = os.environ["DALI_EXTRA_PATH"]
args = pytypes.SimpleNamespace(
    train_coco_root=os.path.join(test_data_root, "db", "coco", "images"),
    train_annotate=os.path.join(test_data_root, "db", "coco", "instances.json"),
    fp16_mode=False,
    batch_size=int(sys.argv[1]) if len(sys.argv) > 1 else 8,
    num_workers=2,
)


def _single_shard():
    raise RuntimeError("torch.distributed is not initialized")


try:
    import torch

    if not torch.distributed.is_initialized():
        raise ImportError
except ImportError:  # a single shard, as the example does when it catches the RuntimeError
    torch = pytypes.SimpleNamespace(
        distributed=pytypes.SimpleNamespace(get_rank=_single_shard, get_world_size=_single_shard)
    )


class DefaultBoxes:
    """SSD300's default boxes: feature maps 38..1, steps 8..300, scales 21..315 pixels."""

    def __init__(self, fig_size=300, feat_size=(38, 19, 10, 5, 3, 1),
                 steps=(8, 16, 32, 64, 100, 300), scales=(21, 45, 99, 153, 207, 261, 315),
                 aspect_ratios=((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))):  # fmt: skip
        boxes = []
        for idx, fsize in enumerate(feat_size):
            sk1 = scales[idx] / fig_size
            sk2 = scales[idx + 1] / fig_size
            sizes = [(sk1, sk1), (sqrt(sk1 * sk2), sqrt(sk1 * sk2))]
            for alpha in aspect_ratios[idx]:
                w, h = sk1 * sqrt(alpha), sk1 / sqrt(alpha)
                sizes += [(w, h), (h, w)]
            cells = fig_size / steps[idx]
            for i, j in product(range(fsize), repeat=2):
                cx, cy = (j + 0.5) / cells, (i + 0.5) / cells
                boxes += [(cx, cy, w, h) for w, h in sizes]
        self.dboxes = np.clip(np.array(boxes, np.float32), 0, 1)  # xywh (centre)
        c, wh = self.dboxes[:, :2], self.dboxes[:, 2:]
        self.dboxes_ltrb = np.concatenate([c - wh / 2, c + wh / 2], 1)

    def as_ltrb_list(self):
        return self.dboxes_ltrb.ravel().tolist()


def dboxes300_coco():
    return DefaultBoxes()


# the example's pipeline
@pipeline_def
def create_coco_pipeline(default_boxes, args):
    try:
        shard_id = torch.distributed.get_rank()
        num_shards = torch.distributed.get_world_size()
    except RuntimeError:
        shard_id = 0
        num_shards = 1

    images, bboxes, labels = fn.readers.coco(
        file_root=args.train_coco_root,
        annotations_file=args.train_annotate,
        skip_empty=True,
        shard_id=shard_id,
        num_shards=num_shards,
        ratio=True,
        ltrb=True,
        random_shuffle=False,
        shuffle_after_epoch=True,
        name="Reader",
    )

    crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
        bboxes,
        labels,
        device="cpu",
        aspect_ratio=[0.5, 2.0],
        thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9],
        scaling=[0.3, 1.0],
        bbox_layout="xyXY",
        allow_no_crop=True,
        num_attempts=50,
    )
    images = fn.decoders.image_slice(
        images, crop_begin, crop_size, device="mixed", output_type=types.RGB
    )
    flip_coin = fn.random.coin_flip(probability=0.5)
    images = fn.resize(
        images, resize_x=300, resize_y=300, min_filter=types.DALIInterpType.INTERP_TRIANGULAR
    )

    saturation = fn.random.uniform(range=[0.5, 1.5])
    contrast = fn.random.uniform(range=[0.5, 1.5])
    brightness = fn.random.uniform(range=[0.875, 1.125])
    hue = fn.random.uniform(range=[-0.5, 0.5])

    # float, so that the intermediate result is neither clipped nor quantized
    images = fn.hsv(images, dtype=types.FLOAT, hue=hue, saturation=saturation)
    images = fn.brightness_contrast(
        images,
        contrast_center=128,  # float input, in the 0..255 range
        dtype=types.UINT8,
        brightness=brightness,
        contrast=contrast,
    )

    dtype = types.FLOAT16 if args.fp16_mode else types.FLOAT

    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip_coin)
    images = fn.crop_mirror_normalize(
        images,
        crop=(300, 300),
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
        mirror=flip_coin,
        dtype=dtype,
        output_layout="CHW",
        pad_output=False,
    )

    bboxes, labels = fn.box_encoder(
        bboxes, labels, criteria=0.5, anchors=default_boxes.as_ltrb_list()
    )

    labels = labels.gpu()
    bboxes = bboxes.gpu()

    return images, bboxes, labels


# instead of the training loop: run a few batches and check what the model would get
default_boxes = dboxes300_coco()
pipe = create_coco_pipeline(
    default_boxes, args, batch_size=args.batch_size, num_threads=args.num_workers,
    device_id=0, seed=42,
)  # fmt: skip
pipe.build()
print(f"default boxes {len(default_boxes.dboxes)}")
anchors = default_boxes.dboxes
shapes, dtypes = set(), set()
finite = in_unit = labels_ok = every_sample_matched = unmatched_are_anchors = True
# (x - mean) / std of uint8 pixels stays within these bounds per channel
mean = np.array([0.485, 0.456, 0.406]) * 255
std = np.array([0.229, 0.224, 0.225]) * 255
low, high = (-mean / std)[:, None, None] - 1e-4, ((255 - mean) / std)[:, None, None] + 1e-4
in_range = True
for _ in range(3):
    images, bboxes, labels = (out.as_cpu() for out in pipe.run())
    for i in range(len(images)):
        img, box, lab = np.asarray(images.at(i)), np.asarray(bboxes.at(i)), labels.at(i)
        lab = np.asarray(lab)
        shapes.add((img.shape, box.shape, lab.shape))
        dtypes.add((str(img.dtype), str(box.dtype)))
        finite &= bool(np.isfinite(img).all())
        in_range &= bool(((img >= low) & (img <= high)).all())
        matched = lab > 0
        every_sample_matched &= bool(matched.any())
        labels_ok &= set(lab[matched].tolist()) <= {1, 2, 3}
        # offset=False: a matched anchor gets its box as (centre x, centre y, w, h)
        lo = box[matched, :2] - box[matched, 2:] / 2
        hi = box[matched, :2] + box[matched, 2:] / 2
        in_unit &= bool((lo >= -1e-5).all() and (hi <= 1 + 1e-5).all())
        unmatched_are_anchors &= bool(np.allclose(box[~matched], anchors[~matched], atol=1e-6))
print(f"shapes {sorted(shapes)}")
print(f"dtypes {sorted(dtypes)}")
print(f"images finite: {finite}")
print(f"images are normalized uint8 values: {in_range}")
print(f"every sample has matched anchors: {every_sample_matched}")
print(f"matched labels are remapped categories: {labels_ok}")
print(f"matched boxes inside the image: {in_unit}")
print(f"unmatched rows hold their default box: {unmatched_are_anchors}")
