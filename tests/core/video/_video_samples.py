"""Small generated test videos whose frames say their own number.

Frame i is dark with a bright 8-pixel-wide column block at x = 8 i, so the
frame number survives lossy coding: :func:`frame_ids` reads it back.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

av = __import__("pytest").importorskip("av")

WIDTH, HEIGHT = 256, 64
# (file name, encoder, pixel format); VP9 only where this PyAV wheel has the encoder
FORMATS = [
    ("h264.mp4", "libx264", "yuv420p"),
    ("h264.mkv", "libx264", "yuv420p"),
    ("vp9.webm", "libvpx-vp9", "yuv420p"),
    ("mjpeg.avi", "mjpeg", "yuvj420p"),
    ("mpeg4.avi", "mpeg4", "yuv420p"),
]
VFR_STEPS_MS = (40, 10, 100, 33)  # frame durations cycle through these


def frame_image(i: int) -> np.ndarray:
    img = np.full((HEIGHT, WIDTH, 3), 16, np.uint8)
    img[:, 8 * i : 8 * i + 8] = 235
    return img


def frame_ids(video: np.ndarray) -> list[int]:
    """The number drawn in each frame of an FHWC video; -1 for a frame with no bright block."""
    rows = video[:, HEIGHT // 2, :, 0].astype(np.int32)
    return [int(np.argmax(r)) // 8 if r.max() > 128 else -1 for r in rows]


def write_video(
    path: str, codec: str, pix_fmt: str, frames: int = 20, vfr: bool = False, gop: int = 5
) -> None:
    """Encode ``frames`` numbered frames; ``vfr`` gives them irregular durations (1 ms clock)."""
    if codec not in av.codecs_available:
        import pytest

        pytest.skip(f"encoder {codec} is not in this PyAV build")
    with av.open(path, "w") as out:
        stream = out.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, pix_fmt
        stream.codec_context.gop_size = gop
        if codec == "libx264":
            stream.options = {"bf": "2", "preset": "veryfast"}
        if vfr:
            stream.codec_context.time_base = Fraction(1, 1000)
            stream.time_base = Fraction(1, 1000)
        pts = 0
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(frame_image(i), format="rgb24")
            if vfr:
                frame.pts, frame.time_base = pts, Fraction(1, 1000)
                pts += VFR_STEPS_MS[i % len(VFR_STEPS_MS)]
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def vfr_times(frames: int) -> np.ndarray:
    """Presentation times (seconds) of the frames of a ``vfr`` video."""
    steps = [VFR_STEPS_MS[i % len(VFR_STEPS_MS)] for i in range(frames - 1)]
    return np.concatenate([[0.0], np.cumsum(steps)]) / 1000.0
