"""Coverage-guided fuzzing (atheris) of the image header parsers, the JPEG checks and the CPU decoders.

Run by ``nox -s atheris`` (time-boxed: ``-max_total_time``); the fuzz corpus's seeds start
it. Any input must give a result or a ``ValueError`` (DecodeError is one); another
exception, a crash or a hang (``-timeout``) is a finding, which libFuzzer writes to
``crash-*`` / ``timeout-*`` in the working folder.

    python tests/reliability/atheris_decoders.py -max_total_time=120 -timeout=10 CORPUS_DIR
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import numpy as np

    from chute.ops.decoders import image_headers, jpeg_structure, turbo
    from chute.ops.decoders.image_codec import decode, decode_scaled, peek_shape

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_corpus import seed_images

MAX_PIXELS = 1 << 22  # 4 megapixels: a fuzzed header may not make the run allocate more


def _entropy(data: bytes) -> list:
    """The entropy check (check_entropy) of the compiled module or the ctypes binding."""
    decoder = turbo.load()
    return [] if decoder is None else decoder.entropy_errors([data], MAX_PIXELS, 1)


def one_input(data: bytes) -> None:
    """The harness: every entry point on ``data``; only ValueError may come out."""
    if len(data) < 2:
        return
    calls = (
        lambda: image_headers.detect_format(data),
        lambda: peek_shape(data),
        lambda: jpeg_structure.structure_error(data),
        lambda: jpeg_structure.structure_errors([data], True, 1),  # compiled where built
        lambda: _entropy(data),
        lambda: decode(data, max_pixels=MAX_PIXELS),
        lambda: decode(data, output_type="GRAY", max_pixels=MAX_PIXELS),
        lambda: decode_scaled(data, (4, 4), max_pixels=MAX_PIXELS),
    )
    for call in calls:
        try:
            out = call()
        except ValueError:
            continue
        if isinstance(out, np.ndarray):
            assert out.ndim == 3 and out.dtype == np.uint8 and min(out.shape) >= 1, out.shape


def main() -> None:
    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):  # no corpus folder: the seeds
        folder = Path(tempfile.mkdtemp(prefix="chute-atheris-"))
        for name, blob in seed_images():
            (folder / name).write_bytes(blob)
        args.append(str(folder))
    atheris.Setup(args, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
