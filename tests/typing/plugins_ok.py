"""Plugin code that a type checker must accept: mypy runs on it in `nox -s lint`.

The frameworks need not be installed: mypy reads the plugins' stubs (their DALI-named
iterators' ``_dali.pyi``, python -m chute.tools.plugin_stubs) and takes torch / tensorflow /
paddle / jax as Any ([tool.mypy] in pyproject.toml).
"""

from __future__ import annotations

import chute.jax
import chute.paddle
import chute.tf
import chute.torch
from chute import fn, pipeline_def
from chute.pipeline import Pipeline
from chute.torch import fn as torch_fn


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def pipe() -> Pipeline:
    raise NotImplementedError  # only its type matters here


def iterators(p: Pipeline) -> None:
    policy = chute.torch.LastBatchPolicy.PARTIAL
    chute.torch.DALIGenericIterator(
        p, ["images", "labels"], reader_name="R", auto_reset="yes", last_batch_policy=policy
    )
    chute.torch.DALIGenericIterator([p, p], ["x"], -1, None, True, None, False, False, "drop")
    chute.torch.DALIClassificationIterator(p, size=100, last_batch_padded=True)
    chute.torch.DALIRaggedIterator(
        p, ["boxes"], output_types=[chute.torch.DALIRaggedIterator.SPARSE_LIST_TAG]
    )
    chute.torch.DataIterator(p, ["x"], reader_name="R", prepare_first_batch=False)
    chute.paddle.DALIGenericIterator(p, [("x", 0)], reader_name="R", dynamic_shape=True)
    chute.paddle.DALIClassificationIterator(p, fill_last_batch=False)
    chute.jax.DALIGenericIterator(p, ["x"], reader_name="R", sharding=None, pad_ragged=True)
    chute.jax.DALIGenericPeekableIterator(p, ["x"], reader_name="R")
    chute.tf.DALIDataset(p, output_dtypes=(1, 2), fail_on_device_mismatch=False)
    chute.tf.dataset(p, ["x"], reader_name="R", last_batch_policy="partial")
    chute.torch.ClassificationIterator(p, reader_name="R", auto_reset=True, pad_ragged=False)
    chute.torch.ClassificationIterator(p, 64, None, "yes")
    chute.paddle.ClassificationIterator(p, size=64, last_batch_policy=policy)


@chute.jax.data_iterator(output_map=["x"], reader_name="R", batch_size=8, num_threads=2, seed=1)
def jax_iterator() -> object:
    return fn.readers.file(file_root="/data", name="R")[0]


@chute.jax.peekable_data_iterator(output_map=["x"], size=16, exec_dynamic=True, py_num_workers=2)
def jax_peekable() -> object:
    return fn.random.uniform(range=[0.0, 1.0])


@pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
def torch_pipe() -> object:
    images = fn.random.uniform(range=[0.0, 1.0], shape=[2])
    return torch_fn.torch_python_function(
        images, function=lambda ts: ts, batch_processing=True, num_outputs=1, device="cpu"
    )
