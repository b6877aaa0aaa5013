"""fn.decoders.inflate (and DALI's deprecated name fn.experimental.inflate): LZ4 chunks inflated.

Each input sample is a 1-D ``uint8`` tensor holding one LZ4 block (raw LZ4, no frame
header, as nvCOMP and ``lz4.block.compress(store_size=False)`` write it) or several
concatenated blocks. ``shape`` and ``dtype`` describe one inflated chunk; with
``chunk_offsets`` and/or ``chunk_sizes`` the sample is a sequence of chunks of that
shape, stacked along a new outer axis named ``sequence_axis_name``. A chunk that
inflates to fewer bytes than ``shape`` holds is padded with zeros (DALI's rule);
one that inflates to more is an error, as is malformed LZ4 data.

DALI runs this operator on the GPU only; chute adds a CPU backend (the ``lz4``
package: ``pip install chute[lz4]``). The GPU backend is inflate_gpu.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.limits import check_output
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

_OP = "fn.decoders.inflate"


def chunk_table(nbytes: int, offsets: Any, sizes: Any) -> tuple[list[int], list[int]] | None:
    """(offsets, sizes) of a sample's chunks as DALI reads them; None: the sample is one chunk.

    ``offsets`` alone: strictly increasing, each chunk ends where the next starts (the
    last at the sample's end). ``sizes`` alone: the chunks are packed from byte 0.
    """
    if nbytes <= 0:
        raise ValueError(f"{_OP}: the input sample is empty; expected LZ4 data")
    if offsets is None and sizes is None:
        return None
    offs = None if offsets is None else [int(v) for v in np.ravel(offsets)]
    lens = None if sizes is None else [int(v) for v in np.ravel(sizes)]
    for o in offs or ():
        if not 0 <= o < nbytes:
            raise ValueError(
                f"{_OP}: argument 'chunk_offsets' has offset {o}, outside the sample's "
                f"{nbytes} bytes"
            )
    for s in lens or ():
        if not 0 < s <= nbytes:
            raise ValueError(
                f"{_OP}: argument 'chunk_sizes' has size {s}; sizes must be in [1, {nbytes}] "
                "(the sample's size)"
            )
    if offs is not None and lens is not None:
        if len(offs) != len(lens):
            raise ValueError(
                f"{_OP}: arguments 'chunk_offsets' and 'chunk_sizes' give {len(offs)} offsets "
                f"and {len(lens)} sizes; they must match"
            )
        for o, s in zip(offs, lens):
            if o + s > nbytes:
                raise ValueError(
                    f"{_OP}: the chunk at offset {o} of size {s} ends past the sample's "
                    f"{nbytes} bytes"
                )
        return offs, lens
    if offs is not None:
        ends = [*offs[1:], nbytes]
        lens = [e - o for o, e in zip(offs, ends)]
        if any(s <= 0 for s in lens):
            raise ValueError(
                f"{_OP}: argument 'chunk_offsets' must be strictly increasing when "
                "'chunk_sizes' is not given"
            )
        return offs, lens
    assert lens is not None
    starts = np.concatenate([[0], np.cumsum(lens[:-1], dtype=np.int64)]).tolist() if lens else []
    if sum(lens) > nbytes:
        raise ValueError(
            f"{_OP}: argument 'chunk_sizes' sums to {sum(lens)} bytes, more than the "
            f"sample's {nbytes}"
        )
    return [int(v) for v in starts], lens


def chunk_shape(shape: Any) -> tuple[int, ...]:
    """The ``shape`` argument of one sample as a tuple of non-negative extents."""
    dims = tuple(int(v) for v in np.ravel(shape))
    if any(d < 0 for d in dims):
        raise ValueError(f"{_OP}: argument 'shape' must hold non-negative extents, got {dims}")
    return dims


def _lz4_block() -> Any:
    try:
        import lz4.block
    except ImportError:
        raise RuntimeError(
            f"{_OP} on the CPU needs the lz4 package: pip install chute[lz4] (or lz4)"
        ) from None
    return lz4.block


def inflate_chunk(data: bytes, capacity: int, index: int) -> bytes:
    """One LZ4 block inflated into ``capacity`` bytes, zero-padded at the end."""
    if capacity == 0:
        return b""
    try:
        raw = _lz4_block().decompress(data, uncompressed_size=capacity)
    except Exception as exc:  # lz4.block.LZ4BlockError: malformed, or longer than capacity
        raise ValueError(
            f"{_OP}: chunk {index} is not an LZ4 block that inflates to at most {capacity} "
            f"bytes (the 'shape' and 'dtype' given): {exc}"
        ) from None
    return raw + bytes(capacity - len(raw))


@register(legacy=("experimental.inflate",))
class Inflate(Operator):
    """Inflates LZ4-compressed samples (or sequences of chunks) to tensors of ``shape``."""

    schema = Schema(
        name="decoders.inflate",
        inputs=("input",),
        args=(
            Arg("shape", "int_list", REQUIRED, "Shape of one inflated chunk."),
            Arg("dtype", "dtype", np.dtype(np.uint8), "Type of the inflated data.", False),
            Arg(
                "chunk_offsets",
                "int_list",
                None,
                "Where each chunk starts in the sample (packed up to the end if no sizes).",
            ),
            Arg(
                "chunk_sizes",
                "int_list",
                None,
                "Size of each chunk (packed from byte 0 if no offsets).",
            ),
            Arg("algorithm", "str", "LZ4", "Decompression algorithm: LZ4 only.", False),
            Arg("layout", "str", "", "Layout of one inflated chunk.", per_sample=False),
            Arg(
                "sequence_axis_name",
                "str",
                "F",
                "Name of the chunk axis added when the samples have chunks.",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if str(args.get("algorithm", "LZ4")).lower() != "lz4":
            raise ValueError(
                f"{_OP}: argument 'algorithm' got {args['algorithm']!r}; only 'LZ4' is supported"
            )
        dtype = args.get("dtype", np.dtype(np.uint8))
        if dtype.kind not in "biuf":
            raise TypeError(
                f"{_OP}: argument 'dtype' must be an integer or float type, got {dtype}"
            )
        if len(args.get("sequence_axis_name", "F")) != 1:
            raise ValueError(
                f"{_OP}: argument 'sequence_axis_name' must be one character, got "
                f"{args['sequence_axis_name']!r}"
            )
        if "shape" in args:
            chunk_shape(args["shape"])
            layout = args.get("layout", "")
            if layout and len(layout) != len(args["shape"]):
                raise ValueError(
                    f"{_OP}: argument 'layout' {layout!r} has {len(layout)} dims, 'shape' "
                    f"{tuple(args['shape'])} has {len(args['shape'])}"
                )

    @staticmethod
    def has_chunks(node: OpNode) -> bool:
        return any(node.arg(k) is not None or k in node.arg_inputs for k in _CHUNK_ARGS)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim is not None and spec.ndim != 1:
            raise ValueError(f"expected 1-D samples of compressed bytes, got {spec.ndim} dims")
        if spec.dtype is not None and spec.dtype != np.uint8:
            raise TypeError(f"expected uint8 samples of compressed bytes, got {spec.dtype}")
        chunked = self.has_chunks(node)
        shape = None if "shape" in node.arg_inputs else node.arg("shape")
        ndim = None if shape is None else len(shape) + chunked
        layout = node.arg("layout") or ""
        if layout and chunked:
            layout = node.arg("sequence_axis_name") + layout
        return [Spec(node.arg("dtype"), ndim, layout or None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (x,) = inputs
        if x.ndim != 1 or x.dtype != np.uint8:
            raise TypeError(f"{_OP}: expected a 1-D uint8 sample, got {x.ndim}-D {x.dtype}")
        shape = chunk_shape(args.raw("shape"))
        dtype = np.dtype(args["dtype"])
        check_output(shape, dtype, "shape")  # each chunk's buffer is this large
        table = chunk_table(x.size, _raw(args, "chunk_offsets"), _raw(args, "chunk_sizes"))
        capacity = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        data = np.ascontiguousarray(x).tobytes()
        if table is None:
            return np.frombuffer(inflate_chunk(data, capacity, 0), dtype).reshape(shape)
        parts = [
            inflate_chunk(data[o : o + s], capacity, k) for k, (o, s) in enumerate(zip(*table))
        ]
        return np.frombuffer(b"".join(parts), dtype).reshape((len(parts), *shape))

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.decoders import inflate_gpu

        return inflate_gpu.inflate(inputs, args, ctx)


_CHUNK_ARGS = ("chunk_offsets", "chunk_sizes")


def _raw(args: ArgView, name: str) -> Any:
    return args.raw(name) if args.given(name) else None
