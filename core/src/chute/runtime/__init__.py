"""What operators and the engine share: layer 3, below the device toolkit and the operators.

- :mod:`~chute.runtime.operator`: the ``Operator`` base class and its traits, ``ArgView``.
- :mod:`~chute.runtime.context`: the sample and batch contexts an operator runs in.
- :mod:`~chute.runtime.philox`: counter-based random streams (NumPy-exact, batched).
- :mod:`~chute.runtime.crop_window`: crop-window geometry the CPU and GPU backends share.
- :mod:`~chute.runtime.errors`: ``OperatorError``.
- :mod:`~chute.runtime.output_pool`, :mod:`~chute.runtime.dense`: recycled host memory and
  dense output batches.
- :mod:`~chute.runtime.workers`: the CPU worker pool.
- :mod:`~chute.runtime.source`: the ``Source`` protocol of readers.
- :mod:`~chute.runtime.native`: whether the compiled kernels (``chute.runtime._native``) are there.

Nothing here imports an operator, the executor, the GPU toolkit or a framework.
"""
