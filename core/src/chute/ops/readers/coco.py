"""fn.readers.coco: encoded images with their boxes, labels, masks and ids from a COCO dataset."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage
from chute.ops.readers.coco_annotations import (
    PREPROCESSED_NAME,
    CocoSample,
    load_preprocessed,
    parse_coco,
    pixelwise_mask,
    save_preprocessed,
)
from chute.ops.readers.file import READER_ARGS
from chute.ops.readers.records import (
    SHUFFLE_AFTER_EPOCH,
    FileCache,
    FileRecordSource,
    check_record_args,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register


def _flag(name: str, default: Any, doc: str, kind: str = "bool") -> Arg:
    return Arg(name, kind, default, doc, per_sample=False)


@register(legacy=("coco_reader",), ops_name="COCO", ops_aliases=("COCOReader",))
class COCOReader(Operator):
    """Reads images (encoded, uint8 1-D) with their boxes, labels and masks from a COCO dataset.

    Outputs, in DALI's order: images, boxes (float32 (N, 4): [x, y, w, h], or
    [l, t, r, b] with ``ltrb``; relative to the image size with ``ratio``), labels
    (int32 (N,): the categories remapped to 1..K in the order the annotations file
    lists them, or their ids with ``avoid_class_remapping``), then with
    ``polygon_masks`` polygons (int32 (P, 3): object index, first vertex, end
    vertex) and vertices (float32 (V, 2)), or with ``pixelwise_masks`` an int32
    (H, W, 1) mask of labels; then with ``image_ids`` the image's id (int32 (1,)).
    Images are read in order of their id (or of ``images``); ``file_root`` joins
    each ``file_name``.
    """

    kind = "source"
    schema = Schema(
        name="readers.coco",
        num_outputs=3,
        args=(
            _flag("file_root", None, "Folder the images' file_name are relative to.", "str"),
            _flag("annotations_file", "", "The COCO instances JSON file.", "str"),
            _flag("images", None, "Image file names to read, in this order.", "str_list"),
            _flag("ltrb", False, "Boxes as [left, top, right, bottom] instead of [x, y, w, h]."),
            _flag("ratio", False, "Boxes and vertices relative to the image size."),
            _flag("skip_empty", False, "Leave out images with no object."),
            _flag(
                "size_threshold",
                0.1,
                "Leave out objects whose box is narrower or lower than this (pixels).",
                "float",
            ),
            _flag("include_iscrowd", True, "Keep annotations marked iscrowd=1."),
            _flag("polygon_masks", False, "Output polygons and vertices of the masks."),
            _flag("pixelwise_masks", False, "Output a pixelwise mask of labels."),
            _flag("image_ids", False, "Output each image's id."),
            _flag("avoid_class_remapping", False, "Labels are the category ids as written."),
            _flag(
                "preprocessed_annotations",
                "",
                "Folder of annotations saved by save_preprocessed_annotations (chute's format).",
                "str",
            ),
            _flag(
                "save_preprocessed_annotations",
                False,
                "Save the parsed annotations (chute's JSON format) for a faster start.",
            ),
            _flag(
                "save_preprocessed_annotations_dir",
                "",
                "Folder to save the preprocessed annotations in.",
                "str",
            ),
            *SHUFFLE_AFTER_EPOCH,
            *READER_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return (
            3
            + 2 * bool(args.get("polygon_masks"))
            + bool(args.get("pixelwise_masks"))
            + bool(args.get("image_ids"))
        )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = "fn.readers.coco"
        check_record_args(op, args)
        if args.get("polygon_masks") and args.get("pixelwise_masks"):
            raise ValueError(
                f"{op}: arguments 'polygon_masks' and 'pixelwise_masks' exclude each other"
            )
        pre = args.get("preprocessed_annotations")
        if not pre and not args.get("annotations_file"):
            raise ValueError(f"{op}: give 'annotations_file' or 'preprocessed_annotations'")
        if pre and args.get("images") is not None:
            raise ValueError(f"{op}: 'images' and 'preprocessed_annotations' exclude each other")
        if args.get("save_preprocessed_annotations") and not args.get(
            "save_preprocessed_annotations_dir"
        ):
            raise ValueError(f"{op}: 'save_preprocessed_annotations' needs its '_dir' argument")
        if args.get("skip_cached_images"):
            raise ValueError(f"{op}: 'skip_cached_images' is not supported (as in DALI)")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        specs = [
            Spec(np.dtype(np.uint8), 1, None),
            Spec(np.dtype(np.float32), 2, None),
            Spec(np.dtype(np.int32), 1, None),
        ]
        if node.arg("polygon_masks"):
            specs += [Spec(np.dtype(np.int32), 2, None), Spec(np.dtype(np.float32), 2, None)]
        if node.arg("pixelwise_masks"):
            specs.append(Spec(np.dtype(np.int32), 3, "HWC"))
        if node.arg("image_ids"):
            specs.append(Spec(np.dtype(np.int32), 1, None))
        return specs

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> CocoSource:
        return CocoSource(node, pipeline)


class CocoSource(FileRecordSource):
    """The parsed samples of the annotations; each batch reads its images' bytes."""

    def __init__(self, node: OpNode, pipeline: Any):
        on_error = on_error_of(node, pipeline)
        self.polygons = node.arg("polygon_masks")
        self.pixelwise = node.arg("pixelwise_masks")
        self.ids = node.arg("image_ids")
        self.files = FileCache(use_mmap=node.arg("dont_use_mmap") is False)
        pre = node.arg("preprocessed_annotations")
        try:
            if pre:
                self.samples = load_preprocessed(storage.join(pre, PREPROCESSED_NAME))
            else:
                self.samples = parse_coco(
                    node.arg("annotations_file"),
                    ltrb=node.arg("ltrb"),
                    ratio=node.arg("ratio"),
                    size_threshold=node.arg("size_threshold"),
                    skip_empty=node.arg("skip_empty"),
                    include_iscrowd=node.arg("include_iscrowd"),
                    remap=not node.arg("avoid_class_remapping"),
                    masks=self.polygons or self.pixelwise,
                    images=None if node.arg("images") is None else list(node.arg("images")),
                    on_error=on_error,
                )
        except ValueError as exc:
            raise ValueError(f"{node.label}: {exc}") from None
        if node.arg("save_preprocessed_annotations"):
            folder = node.arg("save_preprocessed_annotations_dir")
            os.makedirs(folder, exist_ok=True)
            save_preprocessed(self.samples, os.path.join(folder, PREPROCESSED_NAME))
        root = node.arg("file_root")
        self.paths = [storage.join(root, s.file_name) for s in self.samples]
        names = [s.file_name for s in self.samples]
        self.start(node, pipeline.batch_size, len(self.samples), names, on_error)

    def read(self, index: int) -> list[Any]:
        sample: CocoSample = self.samples[index]
        out: list[Any] = [
            self.files.read(self.paths[index]),
            sample.boxes.copy(),
            sample.labels.copy(),
        ]
        if self.polygons:
            out += [sample.polygons.copy(), sample.vertices.copy()]
        if self.pixelwise:
            try:
                out.append(pixelwise_mask(sample))
            except ValueError as exc:
                raise ValueError(f"{self.paths[index]!r}: {exc}") from None
        if self.ids:
            out.append(np.array([sample.image_id], np.int32))
        return out

    def empty(self) -> list[Any]:
        out: list[Any] = [
            np.zeros(0, np.uint8),
            np.zeros((0, 4), np.float32),
            np.zeros(0, np.int32),
        ]
        if self.polygons:
            out += [np.zeros((0, 3), np.int32), np.zeros((0, 2), np.float32)]
        if self.pixelwise:
            out.append(np.zeros((0, 0, 1), np.int32))
        if self.ids:
            out.append(np.zeros(1, np.int32))
        return out
