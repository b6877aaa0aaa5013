"""Per-sample conditionals for library code: operators that run only on the samples that
take their branch (what ``if`` becomes in a pipeline with ``enable_conditionals=True``).

Call these inside a pipeline definition (a ``@pipeline_def`` function, ``with pipe:``);
they need no ``enable_conditionals``::

    from chute import conditionals, fn, types

    flip = fn.random.coin_flip(probability=0.5, dtype=types.BOOL)
    images = conditionals.if_else(flip, lambda: fn.flip(images), lambda: images)

    # one of several augmentations per sample, chosen by an index 0..n-1
    which = fn.random.uniform(values=[0, 1, 2], dtype=types.INT32)
    images = conditionals.switch(
        which,
        [lambda: fn.rotate(images, angle=30), lambda: fn.flip(images), lambda: images],
    )

- ``if_else(predicate, if_true, if_false)``: ``predicate`` holds one scalar per sample
  (bool or a number, nonzero is true; on the GPU it is copied to the host). Each closure
  is traced inside its branch: the operators it calls run on that branch's samples
  only (a branch that no sample takes runs nothing), and DataNodes from outside that it
  uses are split into the branch for it. Both return a DataNode or the same structure
  (tuple, list, dict) of them; the result holds, per sample, the value of the branch it
  took, in batch order. Values must agree in dtype, dimensions and layout (shapes may
  differ). A Python predicate traces only the branch it selects.
- ``switch(index, branches)``: ``branches[index]()`` per sample (below 0: the first, past
  the end: the last): the batch is split once into one sub-batch per branch (a branch
  no sample takes runs nothing) and each value of the result is merged in one step.
- Random operators inside a branch draw by the sample's place in the whole batch (and
  its reader key), so a sample's draws do not depend on which other samples share its
  branch: the same seed gives the same outputs however the batch splits.
- Lower level: ``branch_scopes(predicate)`` gives the (if, else) scopes, ``inside(scope)``
  traces a block in one, ``merge(a, b, scopes, name)`` joins two values.
"""

from __future__ import annotations

from chute.graph.conditional import Undefined, branch_scopes, if_else, inside, merge, switch
from chute.graph.scope import Scope

__all__ = ["Scope", "Undefined", "branch_scopes", "if_else", "inside", "merge", "switch"]
