"""DALI 2.4's deprecated operator names, and the warning each gives when it is used.

One table serves both APIs: ``fn.file_reader(...)`` and ``ops.FileReader()(...)``
warn (``DeprecationWarning``) when the operator is applied, as DALI's do, with
DALI's first line in chute's module names::

    WARNING: `chute.fn.file_reader` is now deprecated. Use `chute.fn.readers.file` instead.

followed by a line that says why. Unlike DALI, which repeats it at every use, a name
warns once per process. The names that chute has are generated from this table
where their operator exists (chute.surface for ``fn``, :func:`ops_alias_entries`
for ``ops``); a deprecated name that is an operator of its own (``fn.shapes``) warns
through the same table.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

__all__ = ["DEPRECATED", "Deprecated", "deprecated_class", "warn_deprecated"]

_READERS = (
    "DALI 1.0 moved the readers into the readers submodule, under names that follow one "
    "pattern; this name stays as an alias with the same behaviour."
)
_DECODERS = (
    "DALI 1.0 moved the decoders into the decoders submodule, under names that follow one "
    "pattern; this name stays as an alias with the same behaviour."
)
_STABLE = "The operator left the experimental module; this name stays as an alias."
_DECODERS_STABLE = "The experimental decoders' features are in the decoders module now."


@dataclass(frozen=True)
class Deprecated:
    """One deprecated DALI name: its ``fn`` and ``ops`` spellings, what replaces it, why."""

    fn_name: str
    ops_name: str
    use_instead: str | None
    why: str = ""


DEPRECATED: dict[str, Deprecated] = {
    d.fn_name: d
    for d in (
        Deprecated("audio_decoder", "AudioDecoder", "decoders.audio", _DECODERS),
        Deprecated("caffe2_reader", "Caffe2Reader", "readers.caffe2", _READERS),
        Deprecated("caffe_reader", "CaffeReader", "readers.caffe", _READERS),
        Deprecated("coco_reader", "COCOReader", "readers.coco", _READERS),
        Deprecated("coin_flip", "CoinFlip", "random.coin_flip"),
        Deprecated("fast_resize_crop_mirror", "FastResizeCropMirror", "resize_crop_mirror"),
        Deprecated("file_reader", "FileReader", "readers.file", _READERS),
        Deprecated("image_decoder", "ImageDecoder", "decoders.image", _DECODERS),
        Deprecated("image_decoder_crop", "ImageDecoderCrop", "decoders.image_crop", _DECODERS),
        Deprecated(
            "image_decoder_random_crop",
            "ImageDecoderRandomCrop",
            "decoders.image_random_crop",
            _DECODERS,
        ),
        Deprecated("image_decoder_slice", "ImageDecoderSlice", "decoders.image_slice", _DECODERS),
        Deprecated("mxnet_reader", "MXNetReader", "readers.mxnet", _READERS),
        Deprecated("nemo_asr_reader", "NemoAsrReader", "readers.nemo_asr", _READERS),
        Deprecated("normal_distribution", "NormalDistribution", "random.normal"),
        Deprecated("numpy_reader", "NumpyReader", "readers.numpy", _READERS),
        Deprecated("sequence_reader", "SequenceReader", "readers.sequence", _READERS),
        Deprecated("shapes", "Shapes", None, "Use DataNode.shape() instead."),
        Deprecated("ssd_random_crop", "SSDRandomCrop", "random_bbox_crop"),
        Deprecated("tfrecord_reader", "TFRecordReader", "readers.tfrecord", _READERS),
        Deprecated("transform_translation", "TransformTranslation", "transforms.translation"),
        Deprecated("uniform", "Uniform", "random.uniform"),
        Deprecated("video_reader", "VideoReader", "readers.video", _READERS),
        Deprecated("video_reader_resize", "VideoReaderResize", "readers.video_resize", _READERS),
        Deprecated(
            "experimental.audio_resample", "experimental.AudioResample", "audio_resample", _STABLE
        ),
        Deprecated("experimental.debayer", "experimental.Debayer", "debayer", _STABLE),
        Deprecated("experimental.equalize", "experimental.Equalize", "equalize", _STABLE),
        Deprecated("experimental.filter", "experimental.Filter", "filter", _STABLE),
        Deprecated("experimental.inflate", "experimental.Inflate", "decoders.inflate"),
        Deprecated(
            "experimental.peek_image_shape",
            "experimental.PeekImageShape",
            "peek_image_shape",
            _DECODERS_STABLE,
        ),
        Deprecated(
            "experimental.tensor_resize", "experimental.TensorResize", "tensor_resize", _STABLE
        ),
        Deprecated(
            "experimental.decoders.image",
            "experimental.decoders.Image",
            "decoders.image",
            _DECODERS_STABLE,
        ),
        Deprecated(
            "experimental.decoders.image_crop",
            "experimental.decoders.ImageCrop",
            "decoders.image_crop",
            _DECODERS_STABLE,
        ),
        Deprecated(
            "experimental.decoders.image_random_crop",
            "experimental.decoders.ImageRandomCrop",
            "decoders.image_random_crop",
            _DECODERS_STABLE,
        ),
        Deprecated(
            "experimental.decoders.image_slice",
            "experimental.decoders.ImageSlice",
            "decoders.image_slice",
            _DECODERS_STABLE,
        ),
        Deprecated(
            "experimental.decoders.video", "experimental.decoders.Video", "decoders.video", _STABLE
        ),
        Deprecated(
            "readers.sequence",
            "readers.Sequence",
            None,
            "It may be removed in a future release; fn.external_source can read in any pattern.",
        ),
    )
}


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_deprecated(entry: Deprecated, api: str) -> None:
    """DALI's warning for a deprecated name used through ``api`` ("fn" or "ops"), once per name.

    Called by ``fn.x`` or ``ops.X.__call__``: the warning points at their caller.
    """
    name = entry.fn_name if api == "fn" else entry.ops_name
    with _warned_lock:
        if f"{api}.{name}" in _warned:
            return
        _warned.add(f"{api}.{name}")
    message = f"WARNING: `chute.{api}.{name}` is now deprecated."
    if entry.use_instead:
        message += f" Use `chute.fn.{entry.use_instead}` instead."
    if entry.why:
        message += "\n" + entry.why
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # shown even where DeprecationWarnings are ignored
        warnings.warn(message, DeprecationWarning, stacklevel=3)


_classes: dict[tuple[type, str], type] = {}


def deprecated_class(op_class: type, entry: Deprecated) -> type:
    """``ops.<entry.ops_name>``: a subclass of ``op_class`` that warns when it is applied.

    Made once per name: the same class object each time it is asked for. Its
    ``deprecated`` attribute holds ``entry``; ``isinstance`` sees ``op_class``.
    """
    known = _classes.get((op_class, entry.ops_name))
    if known is not None:
        return known

    def __call__(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        warn_deprecated(entry, "ops")
        return op_class.__call__(self, *inputs, **kwargs)

    namespace, _, short = entry.ops_name.rpartition(".")
    doc = f"Deprecated DALI name of ``ops`` {op_class.__name__}" + (
        f" (use ``fn.{entry.use_instead}``)." if entry.use_instead else "."
    )
    cls = type(
        short,
        (op_class,),
        {
            "__call__": __call__,
            "__doc__": f"{doc}\n\n{op_class.__doc__ or ''}",
            "__module__": "chute.ops" + (f".{namespace}" if namespace else ""),  # where it lives
            "__qualname__": short,
            "deprecated": entry,
        },
    )
    _classes[(op_class, entry.ops_name)] = cls
    return cls
