"""Execution: the plan built from a graph, the worker pool and the stage threads."""

from chute.executor.executor import Executor
from chute.executor.plan import Plan, build_plan

__all__ = ["Executor", "Plan", "build_plan"]
