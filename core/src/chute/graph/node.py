"""DataNode and OpNode: the traced pipeline graph as plain data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from chute.graph.undefined import fail_if_undefined


class TracedOperator(Protocol):
    """What the graph keeps of an operator: its schema and traits (the classes live in
    chute.ops; chute.runtime.operator.Operator documents the traits)."""

    schema: Any
    kind: str

    def base_name(self, args: Any) -> str: ...

    def fusion_hints(self, node: OpNode, consumers: list, decided: Any) -> Any: ...


# The operators that DataNode's methods add (arithmetic, indexing, transfers, shapes).
# The graph is data and imports no operator: each of those operators' modules binds
# its function here when it is imported (chute.ops.arithmetic, tensor_ops, transfer).
_node_operators: dict[str, Callable[..., Any]] = {}


def bind_node_operator(name: str, function: Callable[..., Any]) -> None:
    """Make ``function`` the operator that DataNode's method ``name`` traces."""
    _node_operators[name] = function


def _node_operator(name: str) -> Callable[..., Any]:
    try:
        return _node_operators[name]
    except KeyError:
        raise RuntimeError(
            f"DataNode operator {name!r} is not bound: import chute (chute.ops binds it)"
        ) from None


@dataclass(eq=False, slots=True)
class OpNode:
    """One operator application in the graph.

    ``args`` holds constant arguments (already checked); ``arg_inputs`` holds
    arguments given as DataNodes, whose values arrive per sample. The fields are all
    there is (slots): what build decides about a node (fusion) is data the plan
    carries (chute.graph.passes), not notes on the node.
    """

    id: int
    op: TracedOperator
    device: str
    inputs: list[DataNode]
    args: dict[str, Any]
    arg_inputs: dict[str, DataNode]
    name: str
    outputs: list[DataNode] = field(default_factory=list)
    # The branch of a per-sample conditional the node runs in (chute.graph.scope.Scope);
    # None: every sample of the batch.
    scope: Any = None

    @property
    def schema(self):
        return self.op.schema

    @property
    def label(self) -> str:
        """How errors name this node: ``fn.resize (node 3 'resize')``."""
        return f"{self.schema.display_name} (node {self.id} '{self.name}')"

    def arg(self, name: str) -> Any:
        """The constant value of an argument, or its declared default."""
        if name in self.args:
            return self.args[name]
        return self.schema.arg(name).default

    def __repr__(self) -> str:
        return f"OpNode({self.id}, {self.schema.name}, device={self.device})"


class DataNode:
    """A traced value: output ``index`` of an operator, one sample per batch entry.

    Arithmetic (``a * 2 + b``), comparisons, bitwise operators and indexing on
    DataNodes add operators to the pipeline being defined.
    """

    __array_priority__ = 1000  # so that numpy scalars defer to our operators

    def __init__(self, producer: OpNode, index: int, device: str):
        self.producer = producer
        self.index = index
        self.device = device

    @property
    def name(self) -> str:
        return f"{self.producer.name}[{self.index}]"

    def __repr__(self) -> str:
        return f"DataNode(name={self.name!r}, device={self.device!r})"

    def gpu(self) -> DataNode:
        """This value on the GPU."""
        return _node_operator("to_device")(self, "gpu")

    def cpu(self) -> DataNode:
        """This value in host memory (GPU -> CPU transfers are allowed)."""
        return _node_operator("to_device")(self, "cpu")

    def shape(self) -> DataNode:
        """The shape of each sample (``fn.shapes``)."""
        return _node_operator("shapes")(self)

    def __bool__(self) -> bool:
        raise TypeError(
            "a DataNode has no truth value at trace time: it holds a different value per sample. "
            "Pass enable_conditionals=True to @pipeline_def to use it in `if` (per-sample "
            "branches), or use arithmetic (mask * a + (1 - mask) * b) or an operator's mask "
            "argument instead."
        )

    def __getitem__(self, index: Any) -> DataNode:
        return _node_operator("subscript")(self, index)

    # Arithmetic: each operator adds one node (the arithmetic operator bound above).
    def _binary(self, op: str, other: Any, reverse: bool = False) -> DataNode:
        fail_if_undefined(other)  # a variable that a conditional left undefined
        arithmetic = _node_operator("arithmetic")
        return arithmetic(op, other, self) if reverse else arithmetic(op, self, other)

    def __add__(self, o):
        return self._binary("add", o)

    def __radd__(self, o):
        return self._binary("add", o, True)

    def __sub__(self, o):
        return self._binary("sub", o)

    def __rsub__(self, o):
        return self._binary("sub", o, True)

    def __mul__(self, o):
        return self._binary("mul", o)

    def __rmul__(self, o):
        return self._binary("mul", o, True)

    def __truediv__(self, o):
        return self._binary("truediv", o)

    def __rtruediv__(self, o):
        return self._binary("truediv", o, True)

    def __floordiv__(self, o):
        return self._binary("floordiv", o)

    def __rfloordiv__(self, o):
        return self._binary("floordiv", o, True)

    def __mod__(self, o):
        return self._binary("mod", o)

    def __rmod__(self, o):
        return self._binary("mod", o, True)

    def __pow__(self, o):
        return self._binary("pow", o)

    def __rpow__(self, o):
        return self._binary("pow", o, True)

    def __and__(self, o):
        return self._binary("bitand", o)

    def __rand__(self, o):
        return self._binary("bitand", o, True)

    def __or__(self, o):
        return self._binary("bitor", o)

    def __ror__(self, o):
        return self._binary("bitor", o, True)

    def __xor__(self, o):
        return self._binary("bitxor", o)

    def __rxor__(self, o):
        return self._binary("bitxor", o, True)

    def __eq__(self, o):  # type: ignore[override]
        return self._binary("eq", o)

    def __ne__(self, o):  # type: ignore[override]
        return self._binary("ne", o)

    def __lt__(self, o):
        return self._binary("lt", o)

    def __le__(self, o):
        return self._binary("le", o)

    def __gt__(self, o):
        return self._binary("gt", o)

    def __ge__(self, o):
        return self._binary("ge", o)

    def __neg__(self):
        return _node_operator("arithmetic")("neg", self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _node_operator("arithmetic")("invert", self)

    __hash__ = object.__hash__
