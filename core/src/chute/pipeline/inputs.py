"""Feeding a pipeline from Python: ``feed_input()`` and ``run(name=batch)``.

A mixin of :class:`chute.pipeline.Pipeline`, apart so that each module stays short.
"""

from __future__ import annotations

from typing import Any

from chute.graph.node import DataNode, OpNode
from chute.pipeline.options import closest_name

__all__ = ["PipelineInputs"]


class PipelineInputs:
    """``feed_input()``, ``input_feed_count()`` and the inputs that ``run()`` takes by name."""

    # set by Pipeline
    _graph: Any
    _plan: Any
    _executor: Any
    _built: bool

    def build(self) -> None:  # pragma: no cover - Pipeline's
        raise NotImplementedError

    def external_source_names(self) -> list[str]:  # pragma: no cover - PipelineState's
        raise NotImplementedError

    def feed_input(
        self,
        data_node: DataNode | str,
        data: Any,
        layout: str | None = None,
        cuda_stream: Any = None,
        use_copy_kernel: bool = False,
    ) -> None:
        """Give the next batch to an ``external_source`` that has no ``source``.

        ``data``: a list of arrays, one array with a leading batch dimension, or a
        TensorListCPU (whose layout is used when ``layout`` is None). ``cuda_stream``
        and ``use_copy_kernel`` are accepted for DALI; chute copies GPU data on the
        pipeline's stream.
        """
        node = self._find(data_node)
        if not getattr(node.op, "feedable", False):
            raise TypeError(f"feed_input: {node.label} is not an external_source")
        if layout is None and callable(getattr(data, "layout", None)):
            layout = data.layout() or None
        if not self._built:
            self.build()
        if layout is not None:
            self._relayout(node, str(layout))
        self._executor.sources[node.id].feed(data, layout)

    def _relayout(self, source: OpNode, layout: str) -> None:
        """Give ``source``'s outputs the layout fed to it and infer the readers' layouts again."""
        specs = self._plan.specs
        keys = [(source.id, i) for i in range(len(source.outputs))]
        if all(k in specs and specs[k].layout == layout for k in keys):
            return
        for k in keys:
            if k in specs:
                specs[k] = specs[k].with_(layout=layout)
        for node in self._plan.nodes:
            if node.op.kind == "source":
                continue
            inputs = [specs[(d.producer.id, d.index)] for d in node.inputs]
            try:
                outs = node.op.infer(node, inputs)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"feed_input(layout={layout!r}): {node.label}: {exc}") from None
            for i, spec in enumerate(outs):
                specs[(node.id, i)] = spec

    def _find(self, key: DataNode | str) -> OpNode:
        if isinstance(key, DataNode):
            return key.producer
        for node in self._graph.nodes:
            if node.name == key:
                return node
        inputs = self.external_source_names()
        close = closest_name(str(key), inputs)
        hint = f"; did you mean {close!r}?" if close else ""
        raise KeyError(
            f"no operator named {key!r} in this pipeline{hint} (external_source names: "
            f"{', '.join(inputs) or 'none'})"
        )

    def input_feed_count(self, input_name: str) -> int:
        """How many batches fed to ``input_name`` the pipeline has not consumed yet."""
        node = self._find(input_name)
        if not getattr(node.op, "feedable", False):
            raise TypeError(f"input_feed_count: {node.label} is not an external_source")
        self.build()
        return self._executor.sources[node.id].pending()

    def _feed_named_inputs(self, inputs: dict[str, Any]) -> None:
        """``run(**inputs)``: check every name first (an external_source with no source),
        then feed each its batch, so that a wrong name feeds nothing."""
        self.build()
        feedable = set(self.external_source_names())
        for name in inputs:
            if name not in feedable:
                node = self._find(name)  # KeyError naming the closest input for unknown names
                raise TypeError(
                    f"run({name}=...): {node.label} is not an external_source without a "
                    f"source; inputs by name go to: {', '.join(sorted(feedable)) or 'none'}"
                )
        for name, data in inputs.items():
            self.feed_input(name, data)
