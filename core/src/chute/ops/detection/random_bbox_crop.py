"""fn.random_bbox_crop: a random crop window that keeps bounding boxes valid (CPU, as DALI).

Per sample, one of ``thresholds`` (or "no crop" when ``allow_no_crop``) is drawn; up to
``num_attempts`` windows are drawn for it (random scale and aspect ratio, or the fixed
``crop_shape`` at a random integer anchor). A window is accepted when the overlap metric
(``threshold_type``: IoU, or the fraction of each box inside the window) reaches the
threshold for every box (any box with ``all_boxes_above_threshold=False``) and at least one
box survives pruning. After ``num_attempts`` another option is drawn, until
``total_num_attempts`` is spent, after which the best window seen is used.

Boxes are pruned by their centroid (kept when inside the window), or with
``bbox_prune_threshold`` by the fraction of their area inside it; the kept boxes are
clipped to the window and expressed relative to it. All draws come from ``ctx.rng``.

Where DALI would loop forever (no ``total_num_attempts`` and conditions that cannot be
met, e.g. a sample without boxes and ``allow_no_crop=False``), chute stops after
:data:`MAX_ATTEMPTS` attempts and uses the best window so far (the whole input if none
was ever drawn), so that a bad sample cannot hang the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.detection import bbox_kernels as kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["MAX_ATTEMPTS", "RandomBBoxCrop", "find_crop"]

MAX_ATTEMPTS = 10_000
# options drawn per round of the search: at least ROUND_DRAWS, or enough for ROUND_WINDOWS
# windows (one round then usually settles a sample: numpy calls, not arithmetic, cost here)
ROUND_DRAWS = 4
ROUND_WINDOWS = 64


@dataclass
class CropSearch:
    """The constant part of a sample's crop search (from the operator's arguments)."""

    thresholds: tuple[float, ...]
    allow_no_crop: bool = True
    threshold_type: str = "iou"
    aspect_ratio: tuple[float, ...] = (1.0, 1.0)
    scaling: tuple[float, float] = (1.0, 1.0)
    num_attempts: int = 1
    total_num_attempts: int = -1
    all_boxes_above_threshold: bool = True
    bbox_prune_threshold: float | None = None
    ranges: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        ar = self.aspect_ratio
        self.ranges = [(ar[i], ar[i + 1]) for i in range(0, len(ar), 2)]


@dataclass
class CropResult:
    """The chosen window (``anchor``/``shape`` in x, y, (z) order) and the surviving boxes."""

    anchor: np.ndarray
    shape: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    indices: np.ndarray


def _pair_ranges(search: CropSearch, ndim: int) -> list[tuple[int, int, tuple[float, float]]]:
    """(i, j, range of extent[i] / extent[j]) for each pair of dimensions, x/y first."""
    pairs = [(i, j) for i in range(ndim) for j in range(i + 1, ndim)]
    return [(i, j, search.ranges[k % len(search.ranges)]) for k, (i, j) in enumerate(pairs)]


def _random_shapes(
    search: CropSearch, ndim: int, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` relative window extents ``(count, ndim)`` and whether each one's aspect
    ratios fall inside the ranges."""
    lo, hi = search.scaling
    shape = rng.uniform(lo, hi, (count, ndim)).astype(np.float32)
    pairs = _pair_ranges(search, ndim)
    fixed = {(i, j): r[0] for i, j, r in pairs if r[0] == r[1]}
    if fixed:
        # fixed ratios: derive the extents from each other in a random order (per window),
        # then rescale so that the largest extent is the one drawn
        largest = shape.max(axis=1, keepdims=True)
        order = np.argsort(rng.random((count, ndim)), axis=1)
        rows = np.arange(count)
        for a in range(ndim):
            for b in range(a + 1, ndim):
                d0, d1 = order[:, a], order[:, b]
                base, derived = shape[rows, d0], shape[rows, d1]
                for (i, j), ratio in fixed.items():  # extent[i] / extent[j] == ratio
                    r = np.float32(ratio)
                    derived = np.where((d1 == i) & (d0 == j), base * r, derived)
                    derived = np.where((d0 == i) & (d1 == j), base / r, derived)
                shape[rows, d1] = derived
        shape = (largest * shape / shape.max(axis=1, keepdims=True)).astype(np.float32)
    ok = np.ones(count, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, j, (rmin, rmax) in pairs:
            ratio = shape[:, i] / shape[:, j]
            if rmin == rmax:  # derived above: equal up to float32 rounding
                inside = np.abs(ratio - np.float32(rmin)) <= np.float32(1e-5 * rmin)
            else:
                inside = (ratio >= rmin) & (ratio <= rmax)
            ok &= (shape[:, j] > 0) & inside
    return shape, ok


def _prune(
    search: CropSearch, crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Indices of the boxes kept in the window (centroid inside, or enough of the area)."""
    return np.nonzero(_kept(search, crop_lo, crop_hi, lo, hi))[0]


def _kept(
    search: CropSearch, crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Which boxes a window keeps: ``(n,)`` for one window, ``(m, n)`` for ``(m, 1, ndim)``."""
    if search.bbox_prune_threshold is None:
        center = (lo + hi) * np.float32(0.5)
        return np.all((center >= crop_lo) & (center <= crop_hi), axis=-1)
    fraction = kernels.overlap_metric(crop_lo, crop_hi, lo, hi, "overlap")
    return fraction > search.bbox_prune_threshold


@dataclass
class _Candidates:
    """A block of windows drawn at once: absolute ``anchor``/``extent``, relative ``lo``/``hi``
    (each ``(m, ndim)``) and whether each is a window at all (aspect ratios in range)."""

    anchor: np.ndarray
    extent: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ok: np.ndarray


def _draw(
    search: CropSearch,
    ndim: int,
    count: int,
    rng: np.random.Generator,
    crop_shape: np.ndarray | None,
    input_shape: np.ndarray | None,
) -> _Candidates:
    """``count`` candidate windows from ``rng``: extents first, then anchors."""
    if crop_shape is not None and input_shape is not None:
        room = np.maximum(input_shape - crop_shape, 0)
        anchor = rng.integers(0, room + 1, (count, ndim)).astype(np.float32)
        extent = np.broadcast_to(crop_shape.astype(np.float32), (count, ndim))
        full = input_shape.astype(np.float32)
        return _Candidates(
            anchor, extent, anchor / full, (anchor + extent) / full, np.ones(count, bool)
        )
    shape, ok = _random_shapes(search, ndim, count, rng)
    anchor = (rng.uniform(0.0, 1.0, (count, ndim)) * (1.0 - shape)).astype(np.float32)
    return _Candidates(anchor, shape, anchor, anchor + shape, ok)


def _result(
    search: CropSearch, lo: np.ndarray, hi: np.ndarray, found: _Candidates, k: int
) -> CropResult:
    """Window ``k`` of a block with the boxes it keeps, clipped and relative to it."""
    rel_lo, rel_hi = found.lo[k], found.hi[k]
    keep = _prune(search, rel_lo, rel_hi, lo, hi)
    new_lo, new_hi = kernels.remap_boxes(lo[keep], hi[keep], rel_lo, rel_hi)
    anchor, extent = found.anchor[k].copy(), found.extent[k].astype(np.float32)
    return CropResult(anchor, extent, new_lo, new_hi, keep)


def find_crop(
    search: CropSearch,
    lo: np.ndarray,
    hi: np.ndarray,
    rng: np.random.Generator,
    crop_shape: np.ndarray | None = None,
    input_shape: np.ndarray | None = None,
) -> CropResult:
    """Search a crop window for boxes ``lo``/``hi`` (``(n, ndim)`` relative, x-first).

    ``crop_shape``/``input_shape`` (x-first, absolute) fix the window's size; the anchor and
    shape are then absolute too, the boxes always relative.

    The sequential search (draw an option, try its ``num_attempts`` windows, draw again) runs
    in rounds: a round draws several options and all their windows at once, checks every
    window against every box in one go, and takes the first window, in drawing order, that
    passes for its option (or no crop, when that option comes first).
    """
    ndim = lo.shape[1]
    options: list[float | None] = [*search.thresholds]
    if search.allow_no_crop:
        options.append(None)
    limit = search.total_num_attempts if search.total_num_attempts > 0 else MAX_ATTEMPTS
    per_round = max(ROUND_DRAWS, ROUND_WINDOWS // search.num_attempts)
    has_boxes = len(lo) > 0
    best: tuple[_Candidates, int] | None = None
    best_metric = -1.0
    count = 0
    while count < limit:
        sizes: list[int] = []
        thresholds: list[float] = []
        no_crop = False
        for pick in rng.integers(len(options), size=per_round):
            threshold = options[int(pick)]
            if threshold is None:
                no_crop = True
                break
            if count >= limit:
                break
            sizes.append(min(search.num_attempts, limit - count))
            thresholds.append(threshold)
            count += sizes[-1]
        if sizes:
            block = sum(sizes)
            found = _draw(search, ndim, block, rng, crop_shape, input_shape)
            wlo, whi = found.lo[:, None], found.hi[:, None]
            if has_boxes:
                metrics = kernels.overlap_metric(wlo, whi, lo, hi, search.threshold_type)
                metric = metrics.min(1) if search.all_boxes_above_threshold else metrics.max(1)
                keeps_some = _kept(search, wlo, whi, lo, hi).any(1)
            else:
                metric = np.zeros(block, np.float32)
                keeps_some = np.ones(block, bool)
            metric = np.where(found.ok, metric, np.float32(-1.0))
            needed = np.repeat(np.asarray(thresholds, np.float32), sizes)
            passed = found.ok & (metric >= needed) & keeps_some
            if passed.any():
                return _result(search, lo, hi, found, int(np.argmax(passed)))
            k = int(np.argmax(metric))
            if found.ok[k] and metric[k] > best_metric:
                best, best_metric = (found, k), float(metric[k])
        if no_crop:
            return _whole(lo, hi, crop_shape, input_shape)
    if best is None:
        return _whole(lo, hi, crop_shape, input_shape)
    return _result(search, lo, hi, *best)


def _whole(
    lo: np.ndarray, hi: np.ndarray, crop_shape: np.ndarray | None, input_shape: np.ndarray | None
) -> CropResult:
    """No crop: the whole input keeps every box unchanged."""
    ndim = lo.shape[1]
    full = input_shape is not None and crop_shape is not None
    extent = input_shape.astype(np.float32) if full else np.ones(ndim, np.float32)
    return CropResult(np.zeros(ndim, np.float32), extent, lo, hi, np.arange(len(lo)))


_INTERNAL_SHAPE_LAYOUT = {2: "WH", 3: "WHD"}


@register(ops_name="RandomBBoxCrop")
class RandomBBoxCrop(Operator):
    """Draws a random crop window that keeps the bounding boxes (and labels) consistent.

    Outputs ``anchor`` and ``shape`` of the window (x, y, (z) order; relative, or absolute
    with ``crop_shape``), the kept boxes relative to the window, the labels of the kept
    boxes (when a labels input is given) and their indices (``output_bbox_indices``).
    """

    schema = Schema(
        name="random_bbox_crop",
        inputs=("boxes", "labels"),
        min_inputs=1,
        num_outputs=3,
        args=(
            Arg(
                "thresholds",
                "float_list",
                (0.0,),
                "Minimum overlap values to choose from.",
                per_sample=False,
            ),
            Arg(
                "threshold_type",
                "str",
                "iou",
                "Meaning of thresholds: IoU with the window, or fraction of each box inside it.",
                per_sample=False,
                choices=("iou", "overlap"),
            ),
            Arg(
                "aspect_ratio",
                "float_list",
                (1.0, 1.0),
                "Window aspect ratio range(s) [min, max].",
                per_sample=False,
            ),
            Arg(
                "scaling",
                "float_list",
                (1.0, 1.0),
                "Window extent range relative to the input.",
                per_sample=False,
            ),
            Arg(
                "ltrb",
                "bool",
                True,
                "Deprecated: True = xyXY boxes, False = xyWH.",
                per_sample=False,
            ),
            Arg(
                "bbox_layout",
                "str",
                None,
                "Box coordinate layout (default xyXY / xyzXYZ).",
                per_sample=False,
            ),
            Arg(
                "shape_layout",
                "str",
                None,
                "Order of crop_shape / input_shape (default WH / WHD).",
                per_sample=False,
            ),
            Arg("num_attempts", "int", 1, "Windows tried per drawn threshold.", per_sample=False),
            Arg(
                "total_num_attempts",
                "int",
                -1,
                "Attempts in all before the best window is used.",
                per_sample=False,
            ),
            Arg(
                "all_boxes_above_threshold",
                "bool",
                True,
                "Every box (else any) must reach it.",
                per_sample=False,
            ),
            Arg(
                "allow_no_crop",
                "bool",
                True,
                "Not cropping is one of the outcomes.",
                per_sample=False,
            ),
            Arg(
                "crop_shape",
                "int_list",
                None,
                "Fixed window extent (absolute, shape_layout order).",
            ),
            Arg("input_shape", "int_list", None, "Input extent (absolute, shape_layout order)."),
            Arg(
                "bbox_prune_threshold",
                "float",
                None,
                "Prune boxes with at most this fraction inside (default: by centroid).",
                per_sample=False,
            ),
            Arg(
                "output_bbox_indices",
                "bool",
                False,
                "Also output the kept boxes' indices.",
                per_sample=False,
            ),
        ),
    )

    def num_outputs(self, args: Any, num_inputs: int = 1) -> int:
        # labels, when given, come back as an output of their own
        return 3 + (num_inputs > 1) + bool(args.get("output_bbox_indices", False))

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        name = self.schema.display_name
        given = set(args) | set(arg_inputs)
        if "ltrb" in given and "bbox_layout" in given:
            raise ValueError(
                f"{name}: 'ltrb' and 'bbox_layout' cannot both be given (ltrb is deprecated)"
            )
        if ("crop_shape" in given) != ("input_shape" in given):
            raise ValueError(f"{name}: 'crop_shape' and 'input_shape' must be given together")
        if "crop_shape" in given:
            for other in ("aspect_ratio", "scaling"):
                if other in given:
                    raise ValueError(
                        f"{name}: argument '{other}' is incompatible with 'crop_shape'"
                    )
            if args.get("allow_no_crop"):
                raise ValueError(f"{name}: 'allow_no_crop' is incompatible with 'crop_shape'")
        thresholds = args.get("thresholds", (0.0,))
        if not thresholds or any(not 0.0 <= t <= 1.0 for t in thresholds):
            raise ValueError(
                f"{name}: argument 'thresholds' needs values within [0, 1], got {thresholds}"
            )
        scaling = args.get("scaling", (1.0, 1.0))
        if len(scaling) != 2 or not 0.0 <= scaling[0] <= scaling[1]:
            raise ValueError(
                f"{name}: argument 'scaling' must be [min, max] with 0 <= min <= max, got {scaling}"
            )
        ar = args.get("aspect_ratio", (1.0, 1.0))
        if len(ar) not in (2, 6) or any(not 0.0 < ar[i] <= ar[i + 1] for i in range(0, len(ar), 2)):
            raise ValueError(
                f"{name}: argument 'aspect_ratio' must be 2 (or 6 for 3-D) values of [min, max] "
                f"ranges with 0 < min <= max, got {ar}"
            )
        if args.get("num_attempts", 1) < 1:
            raise ValueError(f"{name}: argument 'num_attempts' must be at least 1")
        total = args.get("total_num_attempts", -1)
        if "total_num_attempts" in args and total < 1:
            raise ValueError(
                f"{name}: argument 'total_num_attempts' must be at least 1, got {total}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        boxes = inputs[0]
        if boxes.dtype is not None and boxes.dtype.kind != "f":
            raise TypeError(f"{self.schema.display_name} expects float boxes, got {boxes.dtype}")
        f32 = np.dtype(np.float32)
        out = [Spec(f32, 1, None), Spec(f32, 1, None), Spec(f32, 2, None)]
        if len(inputs) > 1:
            out.append(inputs[1])
        if node.arg("output_bbox_indices"):
            out.append(Spec(np.dtype(np.int32), 1, None))
        return out

    def setup(self, node: OpNode, hints: Any = None, pipeline: Any = None) -> Any:
        given = node.args
        allow_no_crop = node.arg("allow_no_crop")
        if "crop_shape" in given or "crop_shape" in node.arg_inputs:
            allow_no_crop = False  # left at its default, it yields to the fixed window
        return CropSearch(
            thresholds=tuple(node.arg("thresholds")),
            allow_no_crop=allow_no_crop,
            threshold_type=node.arg("threshold_type"),
            aspect_ratio=tuple(node.arg("aspect_ratio")),
            scaling=tuple(node.arg("scaling")),
            num_attempts=node.arg("num_attempts"),
            total_num_attempts=node.arg("total_num_attempts"),
            all_boxes_above_threshold=node.arg("all_boxes_above_threshold"),
            bbox_prune_threshold=node.arg("bbox_prune_threshold"),
        )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> tuple:
        boxes = np.asarray(inputs[0])
        ncoords = boxes.shape[-1] if boxes.ndim == 2 else 4
        if boxes.ndim not in (1, 2) or ncoords not in (4, 6) or boxes.size % ncoords:
            raise ValueError(f"expected boxes as (n, 4) or (n, 6) tensors, got shape {boxes.shape}")
        ndim = ncoords // 2
        layout = kernels.box_layout(args["bbox_layout"], args["ltrb"], ndim)
        lo, hi = kernels.read_boxes(boxes, layout)
        crop_shape = input_shape = None
        if args["crop_shape"] is not None:
            crop_shape, input_shape = self._shapes(args, ndim)
        found = find_crop(ctx.state, lo, hi, ctx.rng, crop_shape, input_shape)
        outputs: list[np.ndarray] = [
            found.anchor.astype(np.float32),
            found.shape.astype(np.float32),
            kernels.write_boxes(found.lo, found.hi, layout),
        ]
        if len(inputs) > 1:
            labels = np.asarray(inputs[1])
            if len(labels) != len(lo):
                raise ValueError(f"got {len(lo)} boxes but {len(labels)} labels")
            outputs.append(labels[found.indices])
        if args["output_bbox_indices"]:
            outputs.append(found.indices.astype(np.int32))
        return tuple(outputs)

    @staticmethod
    def _shapes(args: ArgView, ndim: int) -> tuple[np.ndarray, np.ndarray]:
        """crop_shape and input_shape in W, H, (D) order, checked."""
        layout = args["shape_layout"] or _INTERNAL_SHAPE_LAYOUT[ndim]
        internal = _INTERNAL_SHAPE_LAYOUT[ndim]
        if sorted(layout) != sorted(internal):
            raise ValueError(
                f"argument 'shape_layout' must be a permutation of {internal!r}, got {layout!r}"
            )
        crop, full = np.asarray(args["crop_shape"]), np.asarray(args["input_shape"])
        if crop.size != ndim or full.size != ndim:
            raise ValueError(
                f"'crop_shape' and 'input_shape' need {ndim} values, got {crop.size} and {full.size}"
            )
        order = [layout.index(c) for c in internal]
        crop, full = crop.reshape(-1)[order], full.reshape(-1)[order]
        if np.any(crop > full) or np.any(crop <= 0):
            raise ValueError(
                f"'crop_shape' {crop.tolist()} must be positive and fit 'input_shape' {full.tolist()}"
            )
        return crop.astype(np.int64), full.astype(np.int64)
