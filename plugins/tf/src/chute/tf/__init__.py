"""chute for TensorFlow: a pipeline as a ``tf.data.Dataset``, or an iterator of tf.Tensors.

    ds = chute.tf.dataset(pipe, ["images", "labels"], reader_name="reader")
    model.fit(ds, epochs=5)            # every epoch of the dataset = the pipeline's next

Epochs, shards, last batches and state come from ``chute.iteration``, so
every plugin sees the same batches. Under ``tf.distribute``, give the
dataset a callable ``pipeline_fn(shard_id=..., num_shards=...)`` and the
strategy's ``InputContext`` (``input_context=ctx``).

DALI's names work too (``from nvidia.dali.plugin.tf import X`` ports to
``from chute.tf import X``): ``DALIDataset``, ``DALIIterator``,
``experimental.DALIDatasetWithInputs`` / ``experimental.Input``,
``dataset_options`` and the ``dataset_*_compatible_tensorflow`` checks.
"""

from __future__ import annotations

try:
    import tensorflow  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.tf needs tensorflow; install it with: pip install tensorflow-cpu"
    ) from exc

from chute.tf import experimental
from chute.tf._dali import (
    DALIDataset,
    DALIIterator,
    dataset_compatible_tensorflow,
    dataset_distributed_compatible_tensorflow,
    dataset_inputs_compatible_tensorflow,
    dataset_options,
)
from chute.tf._dataset import dataset
from chute.tf._iterator import DataIterator, shard_info, to_tf
from chute.types import LastBatchPolicy

__all__ = [
    "DALIDataset",
    "DALIIterator",
    "DataIterator",
    "LastBatchPolicy",
    "dataset",
    "dataset_compatible_tensorflow",
    "dataset_distributed_compatible_tensorflow",
    "dataset_inputs_compatible_tensorflow",
    "dataset_options",
    "experimental",
    "shard_info",
    "to_tf",
]
