"""chute: data loading and augmentation for deep learning, in DALI's vocabulary.

    from chute import pipeline_def, fn, types

No deep-learning framework is imported here; the plugins ``chute.torch``,
``chute.tf``, ``chute.paddle`` and ``chute.jax`` adapt batches to each.
"""

from __future__ import annotations

from pkgutil import extend_path

# Plugin distributions (chute-torch, ...) add subpackages to this package from
# their own folders when installed in editable mode.
__path__ = extend_path(__path__, __name__)


from chute import fn, math, ops, types
from chute.gpu import nvjpeg_guard
from chute.graph import DataNode
from chute.iteration import Batch, Iterator
from chute.pipeline import Pipeline, pipeline_def
from chute.runtime.errors import OperatorError
from chute.tensors import TensorListCPU
from chute.tools.show import show_batch
from chute.types import LastBatchPolicy

# nvImageCodec's libnvjpeg before torchvision's copy can take its name (see nvjpeg_guard)
nvjpeg_guard.preload()

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "DataNode",
    "Iterator",
    "LastBatchPolicy",
    "OperatorError",
    "Pipeline",
    "TensorListCPU",
    "fn",
    "math",
    "ops",
    "pipeline_def",
    "show_batch",
    "types",
]
