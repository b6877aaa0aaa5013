"""fn.decoders.numpy: NumPy ``.npy`` files given as bytes, decoded to the arrays they hold.

As DALI 2.4's: the input is a 1-D ``uint8`` sample holding a whole ``.npy`` file; the output
has the array's shape and type (``dtype`` converts, rounding and saturating as DALI's
ConvertSat does). C- and Fortran-ordered arrays both decode to the array ``np.load`` gives.
Numbers and bools only: structured, object and complex arrays are refused, as is a file
whose data is shorter than its header says. (DALI reads format version 1.0 only; versions
2.0 and 3.0, which differ only in the header's length field, are read too.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers.npy_format import parse_header
from chute.ops.tensor_ops import convert
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

_OP = "fn.decoders.numpy"


def decode_npy(data: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """The array of one serialized ``.npy`` file (a 1-D byte array), as ``dtype`` if given."""
    if data.dtype not in (np.uint8, np.int8) or data.ndim != 1:
        raise TypeError(
            f"{_OP}: the input must be a 1-D uint8 tensor of .npy file bytes, got "
            f"{data.ndim}-D {data.dtype}"
        )
    if data.size == 0:
        raise ValueError(f"{_OP}: the input sample is empty; expected the bytes of a .npy file")
    raw = np.ascontiguousarray(data).view(np.uint8)
    buffer = memoryview(raw)
    try:
        header = parse_header(lambda offset, size: bytes(buffer[offset : offset + size]))
    except ValueError as exc:
        raise ValueError(f"{_OP}: {exc}") from None
    if header.dtype.kind == "c":
        raise TypeError(f"{_OP}: complex arrays are not supported (dtype {header.dtype})")
    have = raw.size - header.data_offset
    if have < header.nbytes:
        raise ValueError(
            f"{_OP}: truncated .npy data: the header announces {header.nbytes} bytes of "
            f"{header.dtype} {header.shape} at offset {header.data_offset}, the sample holds "
            f"{max(have, 0)}"
        )
    flat = raw[header.data_offset : header.data_offset + header.nbytes].view(header.dtype)
    order = "F" if header.fortran_order else "C"
    array = np.ascontiguousarray(flat.reshape(header.shape, order=order))
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if dtype is not None and array.dtype != dtype:
        return convert(array, dtype)
    return array


@register
class Numpy(Operator):
    """Decodes NumPy arrays from the bytes of serialized ``.npy`` files (1-D uint8 samples)."""

    schema = Schema(
        name="decoders.numpy",
        inputs=("data",),
        args=(
            Arg(
                "dtype",
                "dtype",
                None,
                "Output type (the file's type if not given); converted with rounding and "
                "saturation.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        dtype = args.get("dtype")
        if dtype is not None and dtype.kind not in "biuf":
            raise TypeError(f"{_OP}: argument 'dtype' must be a number or bool type, got {dtype}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim is not None and spec.ndim != 1:
            raise ValueError(f"expected 1-D samples of .npy file bytes, got {spec.ndim} dims")
        if spec.dtype is not None and spec.dtype not in (np.uint8, np.int8):
            raise TypeError(f"expected uint8 samples of .npy file bytes, got {spec.dtype}")
        return [Spec(node.arg("dtype"), None, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return decode_npy(inputs[0], args["dtype"])
