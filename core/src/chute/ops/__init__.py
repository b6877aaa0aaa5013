"""Operators as classes (DALI's legacy API): ``ops.Resize(size=224)(images)``.

Constructor arguments are constants; calling the object on DataNodes (with
per-sample arguments as keywords) traces a node. The implementation modules
live in this package too (one family per package or module).

The names are generated from the operator registry (chute.surface): every
class registered with ``@register`` is here under DALI's CamelCase name
(``ops.decoders.Image``, ``ops.Resize``) and its DALI legacy names
(``ops.ImageDecoder``, ``ops.FileReader``). A new operator in a module listed
below needs no other line; a new operator module is imported here once.
"""

from __future__ import annotations

import sys

# The modules that define operators: importing them registers their classes.
from chute.ops import (  # noqa: F401
    arithmetic,
    conditional,
    external_source,
    io,
    python,
    random,
    tensor_ops,
    transfer,
)
from chute.ops import dl_tensor_python as _dl_tensor_python  # noqa: F401
from chute.ops.audio import audio_ops, features_ops, spectrum_ops  # noqa: F401
from chute.ops.color import color_ops  # noqa: F401
from chute.ops.decoders import image_decoders, inflate_ops, numpy_decoder  # noqa: F401
from chute.ops.detection import (  # noqa: F401
    bbox_ops,
    bbox_rotate,
    random_bbox_crop,
    roi_random_crop,
    ssd_random_crop,
)
from chute.ops.geometry import (  # noqa: F401
    crop_generator,
    crop_ops,
    experimental_resize,
    resize_ops,
    transform_ops,
    warp_ops,
)
from chute.ops.geometry import remap_ops as _remap_ops  # noqa: F401
from chute.ops.geometry import tensor_resize_ops as _tensor_resize_ops  # noqa: F401
from chute.ops.image import clahe_ops as _clahe_ops  # noqa: F401
from chute.ops.image import debayer_ops as _debayer_ops  # noqa: F401
from chute.ops.image import distortion_ops as _distortion_ops  # noqa: F401
from chute.ops.image import dump_image as _dump_image  # noqa: F401
from chute.ops.image import filters_ops as _filters_ops  # noqa: F401
from chute.ops.image import image_ops  # noqa: F401
from chute.ops.image import paste_ops as _paste_ops  # noqa: F401
from chute.ops.noise import noise_ops  # noqa: F401
from chute.ops.readers import (  # noqa: F401
    caffe,
    coco,
    file,
    fits,
    mxnet,
    nemo_asr,
    numpy_reader,
    sequence,
    tfrecord,
    webdataset,
)
from chute.ops.reductions import reduction_ops  # noqa: F401
from chute.ops.segmentation import segmentation_ops  # noqa: F401
from chute.ops.tensors import constant_ops, sequence_ops, shape_ops  # noqa: F401
from chute.ops.video import decoder, experimental_reader, reader, resize_reader  # noqa: F401
from chute.runtime.registry import ops_entries, populate

__all__ = populate(sys.modules[__name__], ops_entries())
