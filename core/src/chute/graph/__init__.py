"""Tracing: DataNode, OpNode and the pipeline graph."""

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.trace import Graph, current_pipeline

__all__ = ["REQUIRED", "Arg", "DataNode", "Graph", "OpNode", "Schema", "current_pipeline"]
