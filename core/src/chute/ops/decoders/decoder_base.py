"""What the image decoders share: their constant settings, checks, output description,
decode plan and the fusion with a resize after them.

:class:`DecoderBase` decodes a whole image (or the region ``roi`` names) through
:mod:`chute.ops.decoders.image_codec`; :class:`WindowDecoder` one window per image. A
decode at reduced DCT scale hands the resize a :class:`ScaledRegion`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import (
    NO_HINTS,
    DecodeRegion,
    FusionPlan,
    Hint,
    NodeHints,
    ScaledDecode,
)
from chute.graph.spec import Spec
from chute.ops.decoders import batch_decode, image_codec
from chute.ops.decoders.decoder_args import mixed_decoder_options
from chute.ops.decoders.entropy_check import CheckedFiles, check_entropy_enabled
from chute.ops.decoders.image_headers import DecodeError
from chute.runtime.operator import ArgView, Operator
from chute.runtime.tuning import current as current_tuning
from chute.types import to_dtype

ALLOWED_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))


class ScaledRegion(np.ndarray):
    """A decoded region at reduced DCT scale, handed by a decoder to the resize fused with it.

    ``roi_window`` = (y0, x0, y1, x1), float pixels of this array, is exactly the
    requested region; the array itself is that region grown to whole pixels.
    """

    roi_window: tuple[float, float, float, float] | None = None

    @classmethod
    def of(cls, image: np.ndarray, window: tuple[float, ...]) -> ScaledRegion:
        """View `image` as a ScaledRegion whose exact region is `window`."""
        region = image.view(cls)
        region.roi_window = tuple(float(v) for v in window)
        return region

    def __array_finalize__(self, obj: Any) -> None:
        # slices and copies are not the region any more: they lose the window
        self.roi_window = None


class DecodeSettings:
    """A decoder node's constant arguments and fusion hints, read once at build time
    (``ctx.state``)."""

    __slots__ = (
        "adjust_orientation",
        "check_entropy",
        "checked",
        "decode_region",
        "downscale_to",
        "dtype",
        "node",
        "output_type",
        "tuning",
    )

    def __init__(self, node: OpNode, hints: NodeHints = NO_HINTS):
        self.node = node
        self.output_type = getattr(node.arg("output_type"), "value", node.arg("output_type"))
        self.dtype = to_dtype(node.arg("dtype"))
        self.adjust_orientation = bool(node.arg("adjust_orientation"))
        self.check_entropy = node.arg("check_entropy")  # None: by on_error (entropy_check.py)
        self.checked = CheckedFiles()  # its verdicts, by dataset index: one check per file
        # decode at a reduced DCT scale for the resize after (fusion_hints)
        scaled = hints.get(ScaledDecode)
        self.downscale_to = scaled.size if scaled is not None else None
        # mixed: decode only the region a fused resize + crop reads (ops/geometry/gpu_fusion.py)
        self.decode_region = hints.get(DecodeRegion)
        # made at build (setup): the Tuning the pipeline is built with, for the batch steps,
        # with the GPU decoder settings a mixed decoder's own arguments ask for
        self.tuning = current_tuning()
        if node.device == "mixed":
            asked = mixed_decoder_options(node)
            if asked:
                options = {**self.tuning.decoder_options, **asked}
                self.tuning = self.tuning.replace(decoder_options=options)


class RandomCropSettings(DecodeSettings):
    """image_random_crop's constant arguments (none of them may be given per sample)."""

    __slots__ = ("area", "aspect_ratio", "num_attempts")

    def __init__(self, node: OpNode, hints: NodeHints = NO_HINTS):
        super().__init__(node, hints)
        self.area = tuple(float(v) for v in node.arg("random_area"))
        self.aspect_ratio = tuple(float(v) for v in node.arg("random_aspect_ratio"))
        self.num_attempts = int(node.arg("num_attempts"))


class DecoderBase(Operator):
    """Shared checks and output description of the image decoders."""

    settings_class: type[DecodeSettings] = DecodeSettings
    # CPU: a batch step, chunks of samples decoded without the GIL (batch_decode.py)
    cpu_batch_wise = True
    decodes = True

    def setup(
        self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None
    ) -> DecodeSettings:
        """The node's constant decode arguments and fusion hints, so that samples need no
        argument lookups."""
        return self.settings_class(node, hints)

    def _settings(self, ctx: Any) -> DecodeSettings:
        state = ctx.state
        if isinstance(state, self.settings_class) and state.node is ctx.node:
            return state
        return self.settings_class(ctx.node)  # a context made without setup()

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        dtype = args.get("dtype")
        if dtype is not None and to_dtype(dtype) not in ALLOWED_DTYPES:
            raise ValueError(
                f"{self.schema.display_name}: argument 'dtype' got {dtype!r}; accepted: "
                "uint8, uint16, float32"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        dtype = to_dtype(node.arg("dtype") or np.uint8)
        return [Spec(dtype, 3, "HWC")]

    def fusion_hints(
        self, node: OpNode, consumers: list[list[OpNode] | None], decided: FusionPlan
    ) -> tuple[Hint, ...]:
        # With dct_scaling, when the only reader is a resize to a fixed size, decode at
        # the smallest DCT scale (1/2, 1/4, 1/8) that keeps the region at least that
        # large: the inverse DCT does most of the downscaling, the resize the rest.
        from chute.ops.geometry.resize_ops import fixed_output_size

        readers = consumers[0]
        if node.arg("dct_scaling") and node.device == "cpu" and readers and len(readers) == 1:
            size = fixed_output_size(readers[0], node)
            if size is not None:
                return (ScaledDecode(size),)
        return ()

    def roi(self, inputs: tuple, args: ArgView, ctx: Any, i: int, meta: dict | None) -> Any:
        """Sample ``i``'s region: None (all), or a function of the image's (height, width)."""
        return None

    def prepare(
        self, inputs: tuple, args: ArgView, ctx: Any, i: int, meta: dict | None
    ) -> image_codec.DecodeJob:
        """Read sample ``i``'s header and plan its decode (image_codec.prepare)."""
        settings = self._settings(ctx)
        return image_codec.prepare(
            inputs[0],
            settings.output_type,
            settings.dtype,
            settings.adjust_orientation,
            self.roi(inputs, args, ctx, i, meta),
            settings.downscale_to,
        )

    def refuse_corrupt(
        self, jobs: list[image_codec.DecodeJob], ctx: Any, metas: list | None = None
    ) -> dict[int, str]:
        """{k: reason} for the region jobs among ``jobs`` whose JPEG data a full decode
        refuses, where the node's check_entropy (or its on_error) asks for the check;
        those jobs are dropped from decoding (``job.jpeg = None``)."""
        on_error = getattr(ctx, "on_error", "raise")  # a SampleContext has none
        if not check_entropy_enabled(self._settings(ctx).check_entropy, on_error):
            return {}
        parts = [k for k, job in enumerate(jobs) if image_codec.reads_part(job)]
        metas = metas if metas is not None else [None] * len(jobs)
        settings = self._settings(ctx)  # on this pool thread:
        faults = settings.checked.corrupt([jobs[k].buf for k in parts], [metas[k] for k in parts])
        out = {parts[j]: reason for j, reason in faults.items()}
        for k in out:
            jobs[k].jpeg = None
        return out

    def finish(self, job: image_codec.DecodeJob, ctx: Any) -> np.ndarray:
        """The output of a prepared (and maybe decoded) sample."""
        image, numerator, window = image_codec.finish(job)
        if self._settings(ctx).downscale_to is None or numerator == 8:
            return image
        return ScaledRegion.of(image, window)

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        job = self.prepare(inputs, args, ctx, ctx.idx_in_batch, ctx.meta)
        refused = self.refuse_corrupt([job], ctx, [ctx.meta])
        if refused:
            raise DecodeError(refused[0])
        return self.finish(job, ctx)

    def run_batch(self, inputs: list, args: Any, ctx: Any) -> list:
        # on the CPU the executor runs the decoders batch-wise (see fuse, batch_decode.py)
        return batch_decode.run_batch(self, inputs, args, ctx, self._settings(ctx).tuning.max_chunk)


def checked_roi(window: tuple[int, int, int, int], height: int, width: int, op: str) -> tuple:
    """The (y0, x0, y1, x1) region of a (y0, x0, height, width) crop window; an error naming
    ``op`` when it does not fit the image."""
    y0, x0, crop_h, crop_w = window
    if y0 < 0 or x0 < 0 or y0 + crop_h > height or x0 + crop_w > width:
        raise ValueError(
            f"{op}: crop window {crop_h}x{crop_w} (HxW) at (y={y0}, x={x0}) does not fit "
            f"the {height}x{width} image"
        )
    return y0, x0, y0 + crop_h, x0 + crop_w


class WindowDecoder(DecoderBase):
    """A decoder of one window per image, given by ``window(inputs, args)`` (both backends)."""

    def window(self, inputs: tuple, args: ArgView) -> Callable[[int, int], tuple]:
        raise NotImplementedError

    def roi(self, inputs: tuple, args: ArgView, ctx: Any, i: int, meta: dict | None) -> Any:
        return self.window(inputs, args)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.decoders import image_gpu

        return image_gpu.image_window_mixed(self, inputs, args, ctx)
