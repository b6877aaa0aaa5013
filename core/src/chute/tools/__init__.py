"""chute's tools, the top layer: the ``chute`` command (demo, bench, check) and ``show_batch``.

They use the public API (``chute.pipeline_def``, ``chute.fn``, ``chute.Iterator``) and
the layers below it; nothing below imports them.
"""
