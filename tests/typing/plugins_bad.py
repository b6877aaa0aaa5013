"""Plugin code with mistakes that mypy must flag: each `# expect: CODE` line, no other.

tests/typing/check_errors.py runs mypy on this file in `nox -s lint`; the frameworks need
not be installed.
"""

from __future__ import annotations

import chute.paddle
import chute.tf
import chute.torch
from chute.jax import DALIGenericIterator as JaxIterator
from chute.pipeline import Pipeline


def iterators(p: Pipeline) -> None:
    chute.torch.DALIGenericIterator(p, ["x"], reder_name="R")  # expect: call-arg
    chute.torch.DALIClassificationIterator(p, ["data", "label"])  # expect: arg-type
    chute.torch.DALIRaggedIterator(p, ["x"], output_type=["dense"])  # expect: call-arg
    chute.torch.DALIGenericIterator(p, ["x"], size="all")  # expect: arg-type
    chute.paddle.DALIGenericIterator(p, ["x"], auto_rest=True)  # expect: call-arg
    JaxIterator(p, ["x"], dynamic_shape=True)  # expect: call-arg
    JaxIterator(p, ["x"], -1, "R", False, False, "fill", True, None, True)  # expect: call-arg
    chute.tf.DALIDataset(p, output_dtype=(1,))  # expect: call-arg
