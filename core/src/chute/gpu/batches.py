"""Batches on the GPU path: decoded images kept as the decoders made them, pooled decoders.

:class:`DecodedImages` holds a decoded batch as the decoder's images (CuPy views are
made only for a user who asks for a sample), and the helpers here give the kernels a
batch's samples and shapes without a view per sample: at 256 samples a batch,
per-sample Python is what bounds the GPU path. ``decoders`` lends each batch being
decoded a BatchDecoder of its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from chute.gpu.runtime import cupy_module
from chute.runtime.tuning import Tuning
from chute.runtime.tuning import current as current_tuning

__all__ = [
    "batch_storage",
    "decode_batch",
    "decoded_images",
    "decoders",
    "dense_array",
    "gpu_batch",
    "raw_samples",
    "sample_shapes",
    "to_device_samples",
]


class _DecoderPool:
    """BatchDecoders by (device, hardware load, options), lent to the batches being decoded.

    Up to the Tuning's ``max_decoders`` per setting, lent in turn: batches decoded at
    once share them. One shared decoder serves concurrent lanes best (H200): its decode calls
    take turns — the hardware engines are one resource — while the other lane parses
    headers and launches kernels.
    """

    def __init__(self) -> None:
        self._made: dict[tuple, list[Any]] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def use(
        self, device_id: int, hw_load: float | None, tuning: Tuning | None = None
    ) -> Iterator[Any]:
        """Lend a decoder for (device, load, ``tuning``'s decoder options and switch interval).

        ``tuning`` is the one the pipeline was built with (the current one if None);
        ``hw_load`` None takes its ``hw_load``.
        """
        from chute.gpu.jpeg import BatchDecoder

        tuning = tuning or current_tuning()
        load = tuning.hw_load if hw_load is None else float(hw_load)
        options = dict(tuning.decoder_options)
        key = (device_id, round(load * 100), tuple(sorted(options.items())), tuning.switch_interval)
        with self._lock:
            made = self._made.setdefault(key, [])
            if len(made) < tuning.max_decoders:
                made.append(
                    BatchDecoder(
                        device_id,
                        hw_decoder_load=load,
                        switch_interval=tuning.switch_interval,
                        **options,
                    )
                )
            else:
                made.append(made.pop(0))  # the next one in turn
            decoder = made[-1]
        yield decoder


decoders = _DecoderPool()


def decode_batch(
    encoded: Any,
    rois: Any = None,
    output_type: Any = "RGB",
    device_id: int = 0,
    stream: Any = None,
    hw_decoder_load: float = 0.9,
) -> Any:
    """Decode a batch (a :class:`~chute.gpu.jpeg.DecodedBatch`) with the pooled
    BatchDecoder for (device_id, hw_decoder_load) and the current Tuning."""
    with decoders.use(device_id, hw_decoder_load) as decoder:
        return decoder.decode(encoded, rois, output_type, stream)


def _decoded_images_class() -> type:
    from chute.tensors.gpu import TensorListGPU

    class DecodedImages(TensorListGPU):
        """Decoded HWC images as the decoders returned them: a TensorListGPU of samples kept
        as given (its ``shapes=`` path), CuPy views made when a sample is asked for.

        Unlike a plain TensorListGPU, ``batch[i]`` and ``as_tensor()`` give CuPy arrays
        (as decoded batches always have); ``gather`` keeps the staging buffers and what
        region decoding noted (``origins``, ``full_shapes``: ops/geometry/gpu_fusion.py).
        """

        def __getitem__(self, i: int) -> Any:
            return self.at(i)

        def as_tensor(self) -> Any:
            return self.as_array()

        def gather(self, indices: list[int]) -> Any:
            out = super().gather(indices)
            out.keepalive = getattr(self, "keepalive", None)
            for name in ("origins", "full_shapes"):
                if getattr(self, name, None) is not None:
                    setattr(out, name, getattr(self, name)[indices])
            return out

    return DecodedImages


_decoded_images_type: list[type] = []


def decoded_images(images: list, shapes: np.ndarray, ctx: Any) -> Any:
    """A DecodedImages batch (the class is made on first use: it needs CuPy)."""
    if not _decoded_images_type:
        _decoded_images_type.append(_decoded_images_class())
    cls = _decoded_images_type[0]
    return cls(images, "HWC", ctx.stream, ctx.device_id, shapes=shapes, dtype=np.uint8)


def gpu_batch(data: Any, layout: str, ctx: Any) -> Any:
    """A GPU operator's result (one CuPy array or a list of them) as a TensorListGPU on its stream."""
    from chute.tensors.gpu import TensorListGPU

    return TensorListGPU(data, layout, ctx.stream, ctx.device_id)


def raw_samples(batch: Any) -> list:
    """The samples of a GPU batch as the kernels take them (no CuPy view where none exists)."""
    raw = getattr(batch, "raw_samples", None)
    return raw() if raw is not None else batch.samples()


def dense_array(batch: Any) -> Any:
    """The batch's contiguous (N, H, W, C) CuPy array when it is stored as one, else None."""
    dense = getattr(batch, "_dense", None)  # TensorListGPU's contiguous storage
    return dense if dense is not None and dense.ndim == 4 else None


def batch_storage(batch: Any) -> Any:
    """The batch as one contiguous CuPy array when it is stored as one, else its samples."""
    dense = dense_array(batch)
    if dense is None:
        # TensorListGPU's contiguous storage of any rank (dense_array gives HWC batches only)
        dense = getattr(batch, "_dense", None)
    return dense if dense is not None else batch.samples()


def sample_shapes(batch: Any) -> np.ndarray:
    """(N, 3) int64 (height, width, channels) of a batch of HWC images."""
    shapes = getattr(batch, "shapes", None)
    if isinstance(shapes, np.ndarray):
        return shapes
    dense = dense_array(batch)
    if dense is not None:
        return np.tile(np.asarray(dense.shape[1:], np.int64), (dense.shape[0], 1))
    out = np.ones((len(batch), 3), np.int64)
    for i, s in enumerate(batch.shape()):
        out[i, : min(len(s), 3)] = s[:3]
    return out


def to_device_samples(batch: Any) -> list[Any]:
    """A batch from an external source given as CuPy/CUDA arrays, as a list of CuPy samples."""
    cp = cupy_module()
    if isinstance(batch, (list, tuple)):
        return [cp.asarray(s) for s in batch]
    arr = cp.asarray(batch)
    return [arr[i] for i in range(arr.shape[0])]
