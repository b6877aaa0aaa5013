"""TensorFlow under DALI's names: ``from nvidia.dali.plugin.tf import X`` ports to
``from chute.tf import X``.

``DALIDataset`` is DALI's: a ``tf.data.Dataset`` whose every element is one
``pipeline.run()`` (one batch per output); it goes on for as long as the
pipeline does (readers wrap around epochs, so bound it with ``take``,
``steps_per_epoch`` or an external source that stops). ``DALIIterator`` is
DALI's op wrapper: each call returns the pipeline's next batch as tensors.
"""

from __future__ import annotations

from collections.abc import Iterator as PyIterator
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from chute.pipeline import Pipeline

__all__ = [
    "DALIDataset",
    "DALIIterator",
    "dataset_compatible_tensorflow",
    "dataset_distributed_compatible_tensorflow",
    "dataset_inputs_compatible_tensorflow",
    "dataset_options",
]


def _tf_version() -> tuple[int, ...]:
    return tuple(int(p) for p in tf.__version__.split("-")[0].split(".")[:3] if p.isdigit())


def dataset_compatible_tensorflow() -> bool:
    """Whether this TensorFlow runs :class:`DALIDataset` (DALI: 1.15 or newer)."""
    return _tf_version() >= (1, 15)


def dataset_inputs_compatible_tensorflow() -> bool:
    """Whether this TensorFlow runs ``experimental.DALIDatasetWithInputs`` (DALI: 2.4.1 or newer)."""
    return _tf_version() >= (2, 4, 1)


def dataset_distributed_compatible_tensorflow() -> bool:
    """Whether this TensorFlow distributes :class:`DALIDataset` with tf.distribute (2.5.0 or newer)."""
    return _tf_version() >= (2, 5, 0)


def dataset_options() -> tf.data.Options:
    """The ``tf.data.Options`` DALI recommends for its datasets: no default rewrites, no autotune."""
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    options.autotune.enabled = False
    return options


def _as_tuple(value: Any) -> tuple[Any, ...] | None:
    if value is None:
        return None
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _placement_device_id() -> int | None:
    """The GPU of the enclosing ``tf.device`` scope, or None for the CPU."""
    name = tf.constant(0).device.upper()
    if "GPU:" in name:
        return int(name.rsplit("GPU:", 1)[1])
    return None


def _dense(batch: Any, name: str) -> np.ndarray:
    batch = batch.as_cpu()
    if not batch.is_dense_tensor():
        raise ValueError(
            f"DALIDataset: output {name} is ragged (sample shapes {batch.shape()}); "
            "a tf.data element needs one shape per batch: pad or resize it in the pipeline"
        )
    return batch.as_array()


class _PipelineRuns:
    """The generator function behind DALIDataset: ``run()`` after ``run()`` until the pipeline stops."""

    def __init__(self, pipeline: Pipeline, dtypes: Sequence[tf.DType], feed: Any = None):
        self.pipeline = pipeline
        self.dtypes = list(dtypes)
        self.feed = feed  # called before each run (DALIDatasetWithInputs); False = inputs ended
        self.stopped = False

    def __call__(self) -> PyIterator[tuple[np.ndarray, ...]]:
        if self.stopped:  # a new iteration after the pipeline stopped: start it again
            self.pipeline.reset()
            self.stopped = False
        feed = self.feed() if self.feed is not None else None
        while True:
            if feed is not None and not next(feed):
                return
            try:
                outputs = self.pipeline.run()
            except StopIteration:
                self.stopped = True
                return
            yield tuple(self._check(i, out) for i, out in enumerate(outputs))

    def _check(self, i: int, batch: Any) -> np.ndarray:
        array = _dense(batch, str(i))
        if array.dtype != self.dtypes[i].as_numpy_dtype:
            raise TypeError(
                f"DALIDataset: output {i} holds {array.dtype} but output_dtypes[{i}] is "
                f"{self.dtypes[i].name}"
            )
        return array


def _signature(
    dtypes: tuple[tf.DType, ...], shapes: tuple[Any, ...] | None
) -> tuple[tf.TensorSpec, ...]:
    if shapes is not None and len(shapes) != len(dtypes):
        raise ValueError(
            f"DALIDataset: {len(shapes)} output_shapes for {len(dtypes)} output_dtypes"
        )
    return tuple(
        tf.TensorSpec(tf.TensorShape(None if shapes is None else shapes[i]), tf.as_dtype(d))
        for i, d in enumerate(dtypes)
    )


def make_dataset(
    owner: str,
    pipeline: Pipeline,
    output_dtypes: Any,
    output_shapes: Any,
    fail_on_device_mismatch: bool,
    feed: Any = None,
) -> tf.data.Dataset:
    """The dataset of DALIDataset and DALIDatasetWithInputs: checks, signature, generator."""
    if output_dtypes is None:
        raise ValueError(f"{owner}: give output_dtypes (a tf.DType, or a tuple: one per output)")
    single = not isinstance(output_dtypes, (list, tuple))
    dtypes = tuple(tf.as_dtype(d) for d in _as_tuple(output_dtypes))
    shapes = _as_tuple(output_shapes) if not single or output_shapes is None else (output_shapes,)
    pipeline.build()
    outputs = len(pipeline.output_specs())
    if outputs != len(dtypes):
        raise ValueError(
            f"{owner}: the pipeline has {outputs} outputs but output_dtypes names {len(dtypes)}"
        )
    placed = _placement_device_id()
    if fail_on_device_mismatch and placed != pipeline.device_id:
        where = "the CPU" if placed is None else f"GPU {placed}"
        raise RuntimeError(
            f"{owner}: the dataset is placed on {where} (tf.device) but the pipeline has "
            f"device_id={pipeline.device_id}; place it with tf.device('/cpu:0') for a CPU "
            "pipeline, or pass fail_on_device_mismatch=False"
        )
    signature = _signature(dtypes, shapes)
    runs = _PipelineRuns(pipeline, dtypes, feed)
    ds = tf.data.Dataset.from_generator(runs, output_signature=signature)
    return ds.map(lambda *x: x[0]) if single else ds


def DALIDataset(
    pipeline: Pipeline,
    output_dtypes: tf.DType | Sequence[tf.DType] | None = None,
    output_shapes: Any = None,
    fail_on_device_mismatch: bool = True,
    *,
    input_datasets: dict[str, Any] | None = None,
    batch_size: int = 1,
    num_threads: int = 4,
    device_id: int = 0,
    exec_separated: bool = False,
    exec_dynamic: bool = False,
    prefetch_queue_depth: int = 2,
    cpu_prefetch_queue_depth: int = 2,
    gpu_prefetch_queue_depth: int = 2,
    dtypes: Any = None,
    shapes: Any = None,
) -> tf.data.Dataset:
    """DALI's ``DALIDataset``: a ``tf.data.Dataset`` of the pipeline's batches, one per ``run()``.

    ``output_dtypes`` is one ``tf.DType`` per output (a tuple), or a single
    DType for a pipeline of one output, whose elements are then tensors, not
    tuples; ``output_shapes`` likewise (None = unknown; TensorFlow checks each
    batch against it). ``dtypes`` / ``shapes`` are DALI's deprecated
    spellings. The pipeline's own ``batch_size``, ``num_threads`` and
    ``device_id`` rule; the arguments of those names, and the executor ones,
    are accepted for compatibility. ``fail_on_device_mismatch`` checks that
    the ``tf.device`` placement is the pipeline's device (the CPU for
    ``device_id=None``). ``input_datasets`` makes it
    ``experimental.DALIDatasetWithInputs``. Outputs must be dense; batches are
    copied into TensorFlow (``tf.data`` owns its buffers).
    """
    output_dtypes = output_dtypes if output_dtypes is not None else dtypes
    output_shapes = output_shapes if output_shapes is not None else shapes
    if input_datasets is not None:
        from chute.tf.experimental import DALIDatasetWithInputs

        return DALIDatasetWithInputs(
            pipeline,
            output_dtypes,
            output_shapes,
            fail_on_device_mismatch,
            input_datasets=input_datasets,
        )
    return make_dataset(
        "DALIDataset", pipeline, output_dtypes, output_shapes, fail_on_device_mismatch
    )


def _sparse(batch: Any) -> tf.SparseTensor:
    # every element of every sample: index (sample, *position), dense shape = the largest sample
    samples = [np.asarray(batch.at(i)) for i in range(len(batch))]
    ndim = samples[0].ndim if samples else 0
    indices = [
        np.concatenate([np.full((s.size, 1), i), np.indices(s.shape).reshape(ndim, -1).T], axis=1)
        for i, s in enumerate(samples)
    ]
    extent = np.max([s.shape for s in samples], axis=0) if samples else np.zeros(0, np.int64)
    return tf.SparseTensor(
        np.concatenate(indices).astype(np.int64),
        np.concatenate([s.ravel() for s in samples]),
        [len(samples), *[int(e) for e in extent]],
    )


class _IteratorOp:
    """What ``DALIIterator()`` returns: call it with a pipeline for the pipeline's next batch."""

    def __call__(
        self,
        pipeline: Pipeline | None = None,
        serialized_pipeline: Any = None,
        sparse: Sequence[bool] = (),
        shapes: Sequence[Any] = (),
        dtypes: Sequence[tf.DType] = (),
        batch_size: int = -1,
        prefetch_queue_depth: int = 2,
        exec_dynamic: bool = False,
        **kwargs: Any,
    ) -> list[tf.Tensor | tf.SparseTensor]:
        """The next batch of ``pipeline``: one tensor per output (a SparseTensor where ``sparse``)."""
        if pipeline is None:
            raise ValueError(
                "DALIIterator: pass pipeline=...; serialized pipelines are not supported"
            )
        outputs = pipeline.run()
        if dtypes and len(dtypes) != len(outputs):
            raise ValueError(
                f"DALIIterator: {len(dtypes)} dtypes for a pipeline of {len(outputs)} outputs"
            )
        result = []
        for i, out in enumerate(outputs):
            if i < len(sparse) and sparse[i]:
                tensor = _sparse(out.as_cpu())
            else:
                tensor = tf.convert_to_tensor(_dense(out, str(i)))
                if i < len(shapes) and shapes[i] is not None:
                    tensor = tf.ensure_shape(tensor, shapes[i])
            if dtypes and tensor.dtype != tf.as_dtype(dtypes[i]):
                raise TypeError(
                    f"DALIIterator: output {i} holds {tensor.dtype.name}, dtypes[{i}] is "
                    f"{tf.as_dtype(dtypes[i]).name}"
                )
            result.append(tensor)
        return result


def DALIIterator() -> _IteratorOp:
    """DALI's ``DALIIterator()``: the op wrapper; ``DALIIterator()(pipeline=pipe, ...)`` gives a batch."""
    return _IteratorOp()
