"""Seeing a pipeline: its graph, outputs, statistics and skipped samples.

A mixin of :class:`chute.pipeline.Pipeline` (the graph is drawn by chute.graph.dot, the
statistics kept by chute.executor.stats), apart so that each module stays short.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PipelineViews"]

_MEMORY_KEYS = (
    "real_memory_size",
    "max_real_memory_size",
    "reserved_memory_size",
    "max_reserved_memory_size",
)


class PipelineViews:
    """``graph()``, ``executor_statistics()``, ``memory_stats()``, ``errors()``, output lists."""

    # set by Pipeline
    _graph: Any
    _plan: Any
    _executor: Any
    _outputs: Any
    _options: dict[str, Any]
    _built: bool
    enable_memory_stats: bool

    def build(self) -> None:  # pragma: no cover - Pipeline's
        raise NotImplementedError

    @property
    def num_outputs(self) -> int:
        """How many outputs ``run()`` returns (traces a legacy ``define_graph()``)."""
        if self._outputs is None:
            self.build()
        return len(self._outputs)

    @property
    def output_dtype(self) -> list[Any]:
        """The ``output_dtype`` declared for each output (None: not declared), as in DALI."""
        return self._declared("output_dtype")

    @property
    def output_ndim(self) -> list[Any]:
        """The ``output_ndim`` declared for each output (None: not declared), as in DALI."""
        return self._declared("output_ndim")

    def _declared(self, option: str) -> list[Any]:
        value = self._options[option]
        n = self.num_outputs
        return list(value) if isinstance(value, (list, tuple)) else [value] * n

    def errors(self) -> list[dict[str, Any]]:
        """Samples skipped under on_error="skip"/"warn": path, index, operator, reason, epoch.

        The latest ``max_error_entries`` (a pipeline argument, default 1000) of them, oldest
        first; :meth:`error_summary` counts them all.
        """
        return list(self._executor.errors) if self._built else []

    def error_summary(self) -> dict[str, Any]:
        """Counts of every sample skipped so far: ``skipped`` (all), ``kept`` (in
        ``errors()``), ``dropped`` (let go of by the cap), ``by_operator`` and ``first``."""
        if not self._built:
            return {"skipped": 0, "kept": 0, "dropped": 0, "by_operator": {}, "first": None}
        counts = self._executor.error_counts
        kept = len(self._executor.errors)
        return {
            "skipped": counts.total,
            "kept": kept,
            "dropped": counts.total - kept,
            "by_operator": dict(counts.by_operator),
            "first": dict(counts.first) if counts.first is not None else None,
        }

    # ---- seeing the pipeline: graph, statistics (chute.graph.dot, chute.executor.stats) --
    def graph(self, path: str | None = None, format: str = "dot") -> str:
        """The operator graph as DOT text; with ``path``, also write it (.dot, .png, .svg, .pdf)."""
        from chute.graph.dot import graph_dot, render_dot

        if self._outputs is None:  # legacy define_graph(): trace it
            self.build()
        dot = graph_dot(self._graph.nodes, self._outputs)
        if path is not None:
            render_dot(dot, os.fspath(path), None if format == "dot" else format)
        return dot

    def executor_statistics(self) -> dict[str, dict[str, Any]]:
        """Per operator name: fn, device, calls, samples and time; with
        ``enable_memory_stats=True`` also DALI's output memory keys (real_memory_size,
        max_real_memory_size, reserved_memory_size, max_reserved_memory_size)."""
        if not self._built:
            return {}
        stats = self._executor.stats.snapshot()
        if not self.enable_memory_stats:  # DALI reports memory only when asked to
            for entry in stats.values():
                for key in _MEMORY_KEYS:
                    entry.pop(key, None)
        return stats

    def memory_stats(self) -> dict[str, Any]:
        """Bytes of the latest batch's outputs on the host and GPU, and CuPy's pool when loaded."""
        from chute.executor.stats import gpu_pool_bytes, memory_stats

        if not self._built:
            return {"host_output_bytes": 0, "gpu_output_bytes": 0, **(gpu_pool_bytes() or {})}
        return memory_stats(self._plan, self._executor.stats)

    def save_graph_to_dot_file(
        self,
        filename: str,
        *,
        show_tensors: bool = False,
        show_ids: bool | None = None,
        use_colors: bool = False,
    ) -> None:
        """Write the graph as DOT to ``filename`` (DALI's name for ``graph(path)``); the
        drawing options are accepted for DALI and chute draws one style."""
        self.graph(os.fspath(filename))
