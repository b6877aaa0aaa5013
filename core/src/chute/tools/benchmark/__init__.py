"""``chute bench``: the ImageNet input pipeline in chute and in the systems users run today."""

from chute.tools.benchmark.runner import run_benchmark

__all__ = ["run_benchmark"]
