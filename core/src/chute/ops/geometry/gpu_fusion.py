"""The GPU validation path fused: decode -> resize -> crop_mirror_normalize.

A GPU ``fn.resize`` whose only reader is a GPU ``fn.crop_mirror_normalize`` with a
constant crop does not write its images: it hands the crop a :class:`PendingResize`
(the source images and each one's output size), and the crop resamples its window
straight from the source (``kernels.resize_crop_mirror_normalize``). The resized batch
is never stored (GPU memory: a 256-image validation batch resized to 256 on the shorter
side is ~70 MB) and one launch is saved. The result differs from resize-then-crop only
by the resize's rounding to uint8 (at most half a level before normalizing).

When that resize reads a mixed decoder that nothing else reads, the decoder decodes only
the region the crop needs, widened by the resampling filter's reach (the header gives
each image's size, hence its resize and crop), so the hardware decoder does ~25% less
work on ImageNet-shaped images. Images whose EXIF orientation turns or flips them are
decoded whole.

Fusion is decided at build time by the fusion pass (chute.graph.passes): the resize's
``fusion_hints`` give it a :class:`FusedResizeCrop`, and the decoder (asked after its
readers) a :class:`DecodeRegion` of it; both come back to the operators in ``setup``
(``ctx.state``). A pipeline that returns or reuses the intermediate images is unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import DecodeRegion, FusedResizeCrop, FusionPlan

__all__ = [
    "PendingResize",
    "crop_after_resize",
    "crop_size",
    "decode_region",
    "decode_regions",
    "pending_resize",
]


def crop_after_resize(resize: OpNode, readers: list[OpNode] | None) -> OpNode | None:
    """The crop_mirror_normalize node that may take ``resize``'s work over, or None."""
    if resize.device != "gpu" or resize.arg_inputs or not readers or len(readers) != 1:
        return None
    (cmn,) = readers
    if cmn.schema.name != "crop_mirror_normalize" or cmn.device != "gpu":
        return None
    if [(d.producer.id, d.index) for d in cmn.inputs] != [(resize.id, 0)]:
        return None
    fixed = ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y")
    if any(k in cmn.arg_inputs for k in fixed) or cmn.arg("pad_output"):
        return None
    if any(resize.args.get(k) is not None for k in ("roi_start", "roi_end", "dtype")):
        return None
    return cmn if crop_size(cmn) is not None else None


def decode_region(
    decoder: OpNode, readers: list[OpNode] | None, decided: FusionPlan
) -> DecodeRegion | None:
    """A mixed decoder's hint when it feeds a fused resize alone: decode just the crop's
    region (``decided`` holds the readers' hints)."""
    if decoder.device != "mixed" or not readers or len(readers) != 1:
        return None
    fused = decided.get(readers[0].id, FusedResizeCrop)
    return DecodeRegion(fused) if fused is not None else None


def crop_size(cmn: OpNode) -> tuple[int, int] | None:
    """crop_mirror_normalize's constant crop (height, width), or None (whole extent)."""
    crop = cmn.arg("crop")
    ch, cw = (crop[0], crop[1]) if crop else (cmn.arg("crop_h"), cmn.arg("crop_w"))
    if not ch or not cw:
        return None
    return round(ch), round(cw)


def _resize_sizes(resize: OpNode, hw: np.ndarray) -> np.ndarray:
    """fn.resize's output (h, w) for each input (h, w), from its constant arguments."""
    from chute.ops.geometry.resize_gpu import output_sizes
    from chute.ops.geometry.resize_ops import size_kwargs
    from chute.runtime.operator import ArgView

    return output_sizes(hw, size_kwargs(ArgView(resize.schema, resize.args, {})))


def _crop_windows(
    cmn: OpNode, full: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each crop as a (y, x, h, w) window in source pixels, and whether it fits the resized image."""
    ch, cw = crop_size(cmn)  # type: ignore[misc]
    crop = np.array([ch, cw], np.int64)
    pos = np.array([cmn.arg("crop_pos_y"), cmn.arg("crop_pos_x")], np.float64)
    anchors = np.floor(pos * (sizes - crop) + 0.5)  # as crop_mirror_normalize_batch places it
    scale = full.astype(np.float64) / np.maximum(sizes, 1)
    windows = np.empty((len(full), 4), np.float64)
    windows[:, :2] = anchors * scale
    windows[:, 2:] = crop * scale
    return windows, np.all(sizes >= crop, axis=1)


def decode_regions(
    fused: FusedResizeCrop, shapes: np.ndarray, turned: np.ndarray
) -> tuple[list[Any], np.ndarray]:
    """The ROI ``(y, x, h, w)`` to decode of each image (None: whole) and its origin (y, x).

    ``shapes`` are the headers' (h, w), ``turned`` marks images whose EXIF orientation
    the decoder applies. The region holds the crop's source window plus the reach of
    the resampling filter (two taps per output pixel when shrinking, for cubic) and a
    pixel more, so the kernel reads the same pixels as from the whole image.
    """
    n = len(shapes)
    origins = np.zeros((n, 2), np.int64)
    rois: list[Any] = [None] * n
    hw = np.asarray(shapes, np.int64).reshape(n, 2)
    known = np.all(hw > 0, axis=1) & ~np.asarray(turned, bool)
    if not known.any():
        return rois, origins
    sizes = np.ones_like(hw)
    sizes[known] = _resize_sizes(fused.resize, hw[known])
    windows, fits = _crop_windows(fused.crop, hw, sizes)
    reach = np.ceil(2 * np.maximum(1.0, hw / np.maximum(sizes, 1))) + 1
    start = np.maximum(np.floor(windows[:, :2] - reach), 0).astype(np.int64)
    end = np.minimum(np.ceil(windows[:, :2] + windows[:, 2:] + reach), hw).astype(np.int64)
    chosen = known & fits
    origins[chosen] = start[chosen]
    boxes = np.concatenate([start, end - start], axis=1).tolist()
    for i in np.flatnonzero(chosen).tolist():
        rois[i] = tuple(boxes[i])
    return rois, origins


class PendingResize:
    """fn.resize's result before it is computed: the source batch and each sample's size.

    ``full`` are the source images' whole (h, w) and ``origins`` where each stored
    source image lies in it (region decoding). Only the fused crop reads it;
    :meth:`materialize` computes the resize for any other use.
    """

    def __init__(
        self,
        source: Any,
        full: np.ndarray,
        origins: np.ndarray,
        sizes: np.ndarray,
        filters: dict,
        dtype: Any,
        ctx: Any,
    ):
        self.source, self.full, self.origins, self.sizes = source, full, origins, sizes
        self.filters, self.dtype, self.ctx = filters, np.dtype(dtype), ctx
        self.nbytes = 0  # holds no pixels of its own

    def __len__(self) -> int:
        return len(self.sizes)

    def layout(self) -> str:
        return self.source.layout() or "HWC"

    def gather(self, indices: list[int]) -> PendingResize:
        """The samples ``indices`` (on_error replacement), as TensorListGPU.gather."""
        return PendingResize(
            self.source.gather(indices),
            self.full[indices],
            self.origins[indices],
            self.sizes[indices],
            self.filters,
            self.dtype,
            self.ctx,
        )

    def source_windows(self) -> np.ndarray:
        """Each whole image as a (y, x, h, w) window in its stored (maybe cropped) pixels."""
        windows = np.empty((len(self), 4), np.float32)
        windows[:, :2] = -self.origins
        windows[:, 2:] = self.full
        return windows

    def materialize(self) -> Any:
        """The resized batch (what an unfused fn.resize returns)."""
        from chute.gpu import kernels
        from chute.gpu.batches import dense_array, raw_samples
        from chute.tensors.gpu import TensorListGPU

        dense = dense_array(self.source)
        uniform = len(self) > 0 and bool(np.all(self.sizes == self.sizes[0]))
        out = kernels.resize_batch(
            dense if dense is not None else raw_samples(self.source),
            tuple(int(v) for v in self.sizes[0]) if uniform else self.sizes,
            windows=self.source_windows(),
            dtype=self.dtype,
            stream=self.ctx.stream,
            **self.filters,
        )
        return TensorListGPU(out, self.layout(), self.ctx.stream, self.ctx.device_id)

    def crop_windows(self, cmn: OpNode) -> tuple[np.ndarray, bool]:
        """The fused crop's windows in stored source pixels, and whether every crop fits."""
        windows, fits = _crop_windows(cmn, self.full, self.sizes)
        windows[:, :2] -= self.origins
        return windows.astype(np.float32), bool(fits.all())


def pending_resize(batch: Any, fused: FusedResizeCrop, filters: dict, dtype: Any, ctx: Any) -> Any:
    """The fused resize's PendingResize of ``batch`` (a decoded batch may hold regions:
    see decode_regions)."""
    from chute.gpu.batches import sample_shapes

    shapes = sample_shapes(batch)[:, :2]
    full = getattr(batch, "full_shapes", None)
    origins = getattr(batch, "origins", None)
    if full is None or origins is None:
        full, origins = shapes, np.zeros_like(shapes)
    sizes = _resize_sizes(fused.resize, full)
    return PendingResize(batch, full, origins, sizes, filters, dtype, ctx)
