"""Plugin code with mistakes that mypy must flag: each `# expect: CODE` line, no other.

tests/typing/check_errors.py runs mypy on this file in `nox -s lint`; the frameworks need
not be installed.
"""

from __future__ import annotations

import chute.paddle
import chute.tf
import chute.torch
from chute import fn, pipeline_def
from chute.jax import DALIGenericIterator as JaxIterator
from chute.jax import data_iterator
from chute.pipeline import Pipeline
from chute.torch import fn as torch_fn


def iterators(p: Pipeline) -> None:
    chute.torch.DALIGenericIterator(p, ["x"], reder_name="R")  # expect: call-arg
    chute.torch.DALIClassificationIterator(p, ["data", "label"])  # expect: arg-type
    chute.torch.DALIRaggedIterator(p, ["x"], output_type=["dense"])  # expect: call-arg
    chute.torch.DALIGenericIterator(p, ["x"], size="all")  # expect: arg-type
    chute.paddle.DALIGenericIterator(p, ["x"], auto_rest=True)  # expect: call-arg
    JaxIterator(p, ["x"], dynamic_shape=True)  # expect: call-arg
    JaxIterator(p, ["x"], -1, "R", False, False, "fill", True, None, True)  # expect: call-arg
    chute.tf.DALIDataset(p, output_dtype=(1,))  # expect: call-arg
    chute.torch.ClassificationIterator(p, reder_name="R")  # expect: call-arg
    chute.torch.ClassificationIterator(p, ["data", "label"])  # expect: arg-type
    chute.paddle.ClassificationIterator(p, auto_rest=True)  # expect: call-arg


@data_iterator(output_map=["x"], batch_size=8, num_thread=2)  # expect: call-arg
def jax_iterator() -> object:
    return fn.random.uniform(range=[0.0, 1.0])


@data_iterator(output_map=["x"], batch_size="8")  # expect: arg-type
def jax_iterator_typed() -> object:
    return fn.random.uniform(range=[0.0, 1.0])


@pipeline_def(batch_size=4, num_threds=1)  # expect: call-arg
def torch_pipe() -> object:
    images = fn.random.uniform(range=[0.0, 1.0], shape=[2])
    return torch_fn.torch_python_function(images, fuction=lambda ts: ts)  # expect: call-arg
