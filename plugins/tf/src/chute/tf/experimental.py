"""DALI's ``nvidia.dali.plugin.tf.experimental``: DALIDatasetWithInputs and Input.

tf.data datasets feed the pipeline's ``fn.external_source(name=...)`` nodes::

    ds = DALIDatasetWithInputs(pipe, output_dtypes=(tf.float32,),
                               input_datasets={"images": Input(images_ds, layout="HWC")})
"""

from __future__ import annotations

from collections.abc import Iterator as PyIterator
from typing import Any

import numpy as np
import tensorflow as tf

from chute.pipeline import Pipeline
from chute.tf._dali import make_dataset

__all__ = ["DALIDatasetWithInputs", "Input"]


class Input:
    """DALI's ``experimental.Input``: a tf.data.Dataset that feeds one external source.

    With ``batch=False`` (the default) each element is one sample and the
    pipeline takes ``batch_size`` of them per run; with ``batch=True`` each
    element is a whole batch. ``layout`` is the samples' layout ("HWC", ...).
    """

    def __init__(self, dataset: tf.data.Dataset, *, layout: str | None = None, batch: bool = False):
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"Input: dataset must be a tf.data.Dataset, got {type(dataset)}")
        self.dataset = dataset
        self.layout = layout
        self.batch = batch


class _Feed:
    """Each call starts one pass over the inputs; each ``next()`` feeds one batch (False: ended)."""

    def __init__(self, pipeline: Pipeline, inputs: dict[str, Input]):
        self.pipeline = pipeline
        self.inputs = inputs

    def __call__(self) -> PyIterator[bool]:
        iterators = {name: iter(i.dataset) for name, i in self.inputs.items()}
        while True:
            batches = {}
            for name, source in self.inputs.items():
                batch = self._take(iterators[name], source)
                if not batch:
                    yield False
                    return
                batches[name] = batch
            for name, batch in batches.items():
                self.pipeline.feed_input(name, batch, layout=self.inputs[name].layout)
            yield True

    def _take(self, iterator: Any, source: Input) -> list[np.ndarray]:
        if source.batch:
            element = next(iterator, None)
            return [] if element is None else list(np.asarray(element))
        samples = []
        for element in iterator:
            samples.append(np.asarray(element))
            if len(samples) == self.pipeline.batch_size:
                break
        return samples


def DALIDatasetWithInputs(
    pipeline: Pipeline,
    output_dtypes: Any = None,
    output_shapes: Any = None,
    fail_on_device_mismatch: bool = True,
    *,
    input_datasets: dict[str, tf.data.Dataset | Input] | None = None,
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
    """DALI's ``DALIDatasetWithInputs``: DALIDataset whose external sources read tf.data datasets.

    ``input_datasets`` maps each external source's ``name`` to a
    ``tf.data.Dataset`` (one sample per element) or an :class:`Input`. Every
    run takes the next batch of every input; the dataset ends when an input
    does (a last, short batch is run as it is). The other arguments are
    :func:`chute.tf.DALIDataset`'s.
    """
    if not input_datasets:
        raise ValueError("DALIDatasetWithInputs: give input_datasets={external source name: ...}")
    inputs = {k: v if isinstance(v, Input) else Input(v) for k, v in input_datasets.items()}
    pipeline.build()
    fed = set(pipeline.external_source_names())
    unknown = sorted(set(inputs) - fed)
    if unknown:
        raise ValueError(
            f"DALIDatasetWithInputs: the pipeline has no fn.external_source named {unknown}; "
            f"its external sources: {sorted(fed)}"
        )
    return make_dataset(
        "DALIDatasetWithInputs",
        pipeline,
        output_dtypes if output_dtypes is not None else dtypes,
        output_shapes if output_shapes is not None else shapes,
        fail_on_device_mismatch,
        feed=_Feed(pipeline, inputs),
    )
