"""A pipeline that a type checker must reject: each `# expect: CODE` line gives that mypy error.

tests/typing/check_errors.py (run by `nox -s lint` and tests/core/test_stubs.py) checks it.
"""

from __future__ import annotations

from chute import fn, ops, pipeline_def
from chute.graph.node import DataNode


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def pipe() -> DataNode:
    jpegs, _ = fn.readers.file(file_root="images")
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resise_x=3)  # expect: call-arg
    images = fn.rotate(images, angle="15")  # expect: arg-type
    images = fn.resize(images, mode="smaller")  # expect: arg-type
    images = fn.resise(images)  # expect: attr-defined
    return ops.Flip(horizonal=1)(images)  # expect: call-arg
