"""What iterators, plugins and checkpoints read of a Pipeline: readers, specs, position.

A mixin of :class:`chute.pipeline.Pipeline` (``chute.iteration`` and the plugins
use only these methods and ``run()``), apart so that each module stays short.
"""

from __future__ import annotations

from typing import Any

from chute.executor.refill import carry_problem
from chute.graph.spec import Spec
from chute.pipeline.checks import encode_checkpoint
from chute.types import LastBatchPolicy

__all__ = ["PipelineState"]


class PipelineState:
    """Readers' metadata, output specs, the position (state_dict, checkpoint)."""

    # set by Pipeline
    seed: int
    _executor: Any
    _plan: Any
    _graph: Any
    _outputs: Any
    _built: bool
    enable_checkpointing: bool

    def build(self) -> None:  # pragma: no cover - Pipeline's
        raise NotImplementedError

    # ---- what iterators and plugins read (chute.iteration, chute.torch, ...) -----------
    def output_specs(self) -> tuple[Spec, ...]:
        """Build-time dtype, ndim and layout of each output, in order (None = known at run time)."""
        self.build()
        return tuple(self._plan.spec(node) for node in self._plan.outputs)

    def last_batch_meta(self) -> list[dict[str, Any]]:
        """Per-sample metadata of the batch that ``run()`` returned last, one dict per sample.

        Readers fill ``source_info``, ``index``, ``epoch`` and ``real`` (False for
        samples that pad a shard's last batch); other sources may leave the dicts empty.
        """
        return list(self._executor.last_meta) if self._built else []

    def external_source_names(self) -> list[str]:
        """Names of the ``external_source`` operators that take ``feed_input()`` (no ``source``)."""
        if self._outputs is None:  # legacy define_graph(): trace it
            self.build()
        return [
            node.name
            for node in self._graph.nodes
            if getattr(node.op, "feedable", False) and node.arg("source") is None
        ]

    def set_last_batch_policy(self, reader_name: str, policy: LastBatchPolicy) -> None:
        """Lay out the epochs of reader ``reader_name`` for an iterator's last-batch policy.

        ``reader_meta(reader_name)["batches_per_epoch"]`` follows the policy; the
        reader keeps its position (batches read ahead are read again).
        """
        reader = self._reader(reader_name)
        plan = getattr(reader, "plan", None)
        if plan is None:
            raise ValueError(f"{reader_name!r} is not a reader with epochs")
        if plan.policy is policy:
            return
        ex = self._executor
        epoch, iteration = ex.last_position
        # no work in flight while it changes
        ex.restore(epoch, iteration, dict(ex.last_states), ex.last_carry)
        reader.set_policy(policy)

    def seek_reader(self, reader_name: str, epoch: int) -> None:
        """Move reader ``reader_name`` to the start of ``epoch`` (an iterator's reset mid-epoch)."""
        self._reader(reader_name)  # builds; KeyError naming the readers if there is no such one
        ex = self._executor
        node = next(n for n in self._plan.sources if n.name == reader_name)
        states = dict(ex.last_states)
        states[node.id] = {"epoch": epoch, "batch_index": 0}
        pos_epoch, iteration = ex.last_position
        ex.restore(pos_epoch, iteration, states)

    # ---- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The position after the last delivered batch: sources, epoch and iteration, and the
        seed of the random streams (which ``Pipeline(checkpoint=...)`` takes over)."""
        self.build()
        epoch, iteration = self._executor.last_position
        names = {n.id: n.name for n in self._plan.sources}
        state = {
            "version": STATE_VERSION,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "epoch": epoch,
            "iteration": iteration,
            "sources": {names[k]: v for k, v in self._executor.last_states.items()},
        }
        if self._executor.last_carry:  # on_error skip: samples of the next batch delivered
            state["carry"] = self._executor.last_carry
        return state

    def load_state_dict(self, state: dict[str, Any], elastic: bool = False) -> None:
        """Continue after the batch at which ``state_dict()`` was taken.

        ``elastic=True`` accepts a state saved with another batch size or number of
        shards (the same dataset and seed): the samples of the epoch that no shard had
        read yet are shared among this setup's shards, and the epoch ends as usual."""
        self.build()
        check_state(state, self.batch_size, elastic)
        ids = {n.name: n.id for n in self._plan.sources}
        missing = set(state["sources"]) - set(ids)
        if missing:
            raise ValueError(
                f"load_state_dict: this pipeline has no sources named {sorted(missing)}"
            )
        states = {ids[k]: v for k, v in state["sources"].items()}
        self._executor.restore(
            state["epoch"], state["iteration"], states, state.get("carry"), elastic
        )

    def checkpoint(self, filename: str | None = None, *, iterator_data: Any = None) -> str:
        """The pipeline's position as a string; ``Pipeline(checkpoint=...)`` continues from it.

        Needs ``enable_checkpointing=True`` (as in DALI). With ``filename`` (DALI's
        argument), the checkpoint is also written there (overwritten; UTF-8, so reading it
        back as bytes or as text both restore). ``iterator_data`` (anything JSON can hold)
        comes back as ``pipe.iterator_data`` after the restore. DALI returns bytes; chute
        returns a str, and ``Pipeline(checkpoint=...)`` takes either.
        """
        if not self.enable_checkpointing:
            raise RuntimeError(
                "Pipeline.checkpoint(): checkpointing is not enabled; create the pipeline "
                "with enable_checkpointing=True"
            )
        text = encode_checkpoint(self.state_dict(), iterator_data)
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(text.encode())
        return text

    # ---- reader information ----------------------------------------------------------------
    def _readers(self) -> dict[str, Any]:
        self.build()
        return {
            n.name: self._executor.sources[n.id]
            for n in self._plan.sources
            if hasattr(self._executor.sources[n.id], "meta")
        }

    def _reader(self, name: str) -> Any:
        readers = self._readers()
        if name not in readers:
            raise KeyError(
                f"no reader named {name!r}; readers: {', '.join(sorted(readers)) or 'none'}"
            )
        return readers[name]

    def reader_meta(self, name: str | None = None) -> dict[str, Any]:
        """Reader ``name``'s metadata (DALI's keys: epoch_size, epoch_size_padded,
        number_of_shards, shard_id, pad_last_batch, stick_to_shard; and chute's
        batches_per_epoch); with no name, ``{reader name: metadata}`` for every reader."""
        if name is None:
            return {k: r.meta() for k, r in self._readers().items()}
        return self._reader(name).meta()

    def epoch_size(self, name: str | None = None) -> int | dict[str, int]:
        """Samples in one epoch of reader ``name`` (all shards); with no name,
        ``{reader name: epoch size}`` for every reader."""
        if name is None:
            return {k: r.meta()["epoch_size"] for k, r in self._readers().items()}
        return self._reader(name).meta()["epoch_size"]


# The layout of Pipeline.state_dict(); states without "version" (before it) still load.
STATE_VERSION = 1


def check_state(state: Any, batch_size: int, elastic: bool = False) -> None:
    """Refuse a state that is not what state_dict() gives, naming the field at fault."""
    if not isinstance(state, dict):
        raise TypeError(
            f"load_state_dict: expected the dict that state_dict() returns, "
            f"got {type(state).__name__}"
        )
    for key in ("epoch", "iteration", "sources"):
        if key not in state:
            raise ValueError(
                f"load_state_dict: the state has no {key!r} field (it has {sorted(state)})"
            )
    version = state.get("version", STATE_VERSION)
    if version != STATE_VERSION:
        raise ValueError(
            f"load_state_dict: state version {version!r}; this chute reads version {STATE_VERSION}"
        )
    for key in ("epoch", "iteration"):
        value = state[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"load_state_dict: field {key!r} must be a non-negative integer, got {value!r}"
            )
    seed = state.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(
            f"load_state_dict: field 'seed' must be a non-negative integer, got {seed!r}"
        )
    if not isinstance(state["sources"], dict):
        raise TypeError("load_state_dict: field 'sources' must be a dict of source states")
    problem = carry_problem(state.get("carry"))
    if problem:
        raise ValueError(f"load_state_dict: field 'carry' {problem}")
    if elastic and state.get("carry"):
        raise ValueError(
            "load_state_dict: an elastic resume cannot continue a state taken while "
            "on_error='skip' was filling a batch (field 'carry'); take it at another batch"
        )
    saved = state.get("batch_size", batch_size)
    if saved != batch_size and not elastic:
        raise ValueError(
            f"load_state_dict: field 'batch_size' is {saved!r}, this pipeline's is {batch_size}"
        )
