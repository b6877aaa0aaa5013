"""Tuning: the measured performance settings of the engine, in one frozen value.

A pipeline takes the :class:`Tuning` in force when it is built (``current()``)
and keeps it for its life: the executor's lane count, the file reader's helper
processes, the CPU decoders' chunk size and the GPU decoders' settings are read
then, in the building thread, not looked up per batch. To build with other
values (the benchmark's sweeps, tests)::

    from chute.runtime import tuning

    with tuning.use(tuning.Tuning(gpu_lanes=3)):
        pipe.build()

``use`` sets a context variable, so concurrent threads or tasks each see their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import types
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["DEFAULTS", "Tuning", "current", "use"]


@dataclasses.dataclass(frozen=True)
class Tuning:
    """Engine settings whose best values were measured, each with its evidence."""

    # Compute lanes of a pipeline that decodes on the GPU ("mixed"). Measured on an H200
    # (16 cores, ResNet-50 train, batch 256, .tools/probe_pipe.py): with decoding through
    # nvImageCodec's C API (one GIL hand-off per batch, see chute.gpu.codec_api) and one
    # decoder shared by the lanes, 1 lane 7.9-8.4k img/s, 2 lanes 10.3k, 3 lanes 9.2k:
    # while one lane waits on the hardware decoder the other parses headers and launches
    # kernels. (Before, with nvImageCodec's Python binding and a decoder per lane, 2 lanes
    # were slower than 1.)
    gpu_lanes: int = 2
    # CPU pipelines with more than one worker thread: one batch's tail beside the next's
    # start (H100 host, 16 threads, random-crop decode: ~4,700 img/s with one lane, ~5,500
    # with two; bench/results/h100host_cpu_lanes_*).
    cpu_lanes: int = 2
    # Hardware decoder share of the GPU-decoded samples; the rest go to nvJPEG's CUDA
    # decoder. On an H200 (2 lanes, .tools/probe_pipe.py) 1.0 gave 10.3k img/s and 0.9
    # 9.0k; the hardware group still falls back to the CUDA decoder for what the engines
    # reject (progressive JPEGs, ...). On an H100 last measured with the Python binding,
    # 0.76 was best; not re-measured with the C API. A decoder's hw_decoder_load argument
    # overrides it.
    hw_load: float = 1.0
    # Further BatchDecoder settings for the mixed decoders (bench/gpu_path.py tunes them).
    decoder_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Decoders per setting; batches decoded at once beyond this share them. One shared
    # decoder serves concurrent lanes best (H200): its decode calls take turns (the
    # hardware engines are one resource) while the other lane parses headers.
    max_decoders: int = 1
    # The interpreter's switch interval (seconds) once a GPU decoder exists; None leaves
    # it. A decode call lets go of the GIL for ~13 ms a batch; when it returns, its thread
    # waits for the GIL up to the switch interval behind any busy Python thread (5 ms by
    # default), and the hardware decoder idles meanwhile. On an H100
    # (bench/decode_gil_probe.py, decoding on its own thread beside three busy Python
    # threads): 9.1k img/s at 5 ms, 10.8k at 1 ms, 19.1k at 0.2 ms, against 20.2k with no
    # busy thread.
    switch_interval: float | None = 0.0002
    # Helper processes that read the files when only GPU decoders use them (0: this
    # process reads them).
    read_processes: int = 2
    # Samples per chunk of a CPU decoder's batch at most: every chunk costs two takes of
    # the GIL, and on the H100 host with 16 threads chunks of 1 decoded 3,591 img/s, of 4
    # 6,669 and of 8 6,549 (the executor's second lane fills the threads that finish a
    # batch early).
    max_chunk: int = 8

    def __post_init__(self) -> None:
        for name in ("gpu_lanes", "cpu_lanes", "max_decoders", "max_chunk"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Tuning.{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.read_processes, int) or self.read_processes < 0:
            raise ValueError(
                f"Tuning.read_processes must be an int >= 0, got {self.read_processes!r}"
            )
        if not 0.0 <= float(self.hw_load) <= 1.0:
            raise ValueError(f"Tuning.hw_load must be in [0, 1], got {self.hw_load!r}")
        if self.switch_interval is not None and not self.switch_interval > 0:
            raise ValueError(
                f"Tuning.switch_interval must be > 0 seconds or None, got {self.switch_interval!r}"
            )
        # a read-only copy: the value is shared by every pipeline built under it
        object.__setattr__(
            self, "decoder_options", types.MappingProxyType(dict(self.decoder_options))
        )

    def replace(self, **changes: Any) -> Tuning:
        """A copy with ``changes`` (field=value)."""
        return dataclasses.replace(self, **changes)


DEFAULTS = Tuning()

_current: contextvars.ContextVar[Tuning] = contextvars.ContextVar("chute_tuning", default=DEFAULTS)


def current() -> Tuning:
    """The Tuning that pipelines built now take (DEFAULTS outside any ``use``)."""
    return _current.get()


@contextlib.contextmanager
def use(tuning: Tuning) -> Iterator[Tuning]:
    """Make ``tuning`` current in this context for the ``with`` block."""
    if not isinstance(tuning, Tuning):
        raise TypeError(f"tuning.use() takes a Tuning, got {type(tuning).__name__}")
    token = _current.set(tuning)
    try:
        yield tuning
    finally:
        _current.reset(token)
