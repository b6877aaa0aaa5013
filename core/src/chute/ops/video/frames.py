"""Decode chosen frames of a video through PyAV, seeking by the packet index, with padding.

For each run of wanted frames the decoder seeks to the keyframe before the
first of them and decodes forward; it seeks again only when the next wanted
frame lies past a later keyframe. Frames are identified by their pts, so
variable frame rate and reordered (B-) frames come out right.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chute.ops.video.index import (
    INDEX_CACHE,
    PacketIndex,
    VideoSource,
    av_module,
    open_container,
    video_stream,
)

PAD_MODES = ("none", "constant", "edge", "reflect")
# also "symmetric" (ABC -> ABCCBA), which experimental.readers.video names reflect_1001
_ALL_PAD_MODES = (*PAD_MODES, "symmetric")
PIXEL_FORMATS = {"RGB": "rgb24", "BGR": "bgr24", "GRAY": "gray"}


def select_frames(
    num_frames: int,
    frames: Sequence[int] | None = None,
    start_frame: int = 0,
    end_frame: int | None = None,
    stride: int = 1,
    sequence_length: int | None = None,
) -> list[int]:
    """The frame numbers asked for; those >= ``num_frames`` are left for padding to resolve.

    ``frames`` lists them outright; else ``sequence_length`` frames from
    ``start_frame`` every ``stride``; else ``start_frame`` to ``end_frame``
    (exclusive, default: the end) every ``stride``.
    """
    if frames is not None:
        wanted = [int(f) for f in frames]
        if any(f < 0 for f in wanted):
            raise ValueError(f"frame numbers must be >= 0, got {wanted}")
        return wanted
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    if start_frame < 0:
        raise ValueError(f"start_frame must be >= 0, got {start_frame}")
    if sequence_length is not None:
        if sequence_length < 1:
            raise ValueError(f"sequence_length must be >= 1, got {sequence_length}")
        return [start_frame + k * stride for k in range(sequence_length)]
    end = num_frames if end_frame is None else end_frame
    return list(range(start_frame, end, stride))


def pad_sources(wanted: Sequence[int], num_frames: int, pad_mode: str) -> list[int]:
    """Map each wanted frame to a frame of the video, or -1 for a constant fill frame.

    "none" drops frames past the end; "constant" fills them; "edge" repeats
    the last frame; "reflect" mirrors back from it (n-2, n-3, ...); "symmetric"
    mirrors back including it (n-1, n-2, ...).
    """
    if pad_mode not in _ALL_PAD_MODES:
        raise ValueError(f"pad_mode must be one of {PAD_MODES}, got {pad_mode!r}")
    last = num_frames - 1
    out = []
    for f in wanted:
        if f <= last:
            out.append(f)
        elif pad_mode == "constant":
            out.append(-1)
        elif pad_mode == "edge":
            out.append(last)
        elif pad_mode == "reflect":
            period = 2 * last
            r = f % period if period else 0
            out.append(period - r if r > last else r)
        elif pad_mode == "symmetric":
            r = f % num_frames if num_frames > 0 else 0
            out.append(r if (f // num_frames) % 2 == 0 else last - r)
        # "none": dropped
    return out


def decode_frames(
    source: VideoSource,
    frames: Sequence[int],
    index: PacketIndex | None = None,
    image_type: str = "RGB",
    where: str = "video",
) -> dict[int, np.ndarray]:
    """Decode ``frames`` (valid frame numbers) of ``source``; returns {frame: HWC uint8 array}."""
    av = av_module()
    index = index or INDEX_CACHE.get(source, where)
    wanted = sorted(set(int(f) for f in frames))
    if not wanted:
        return {}
    if wanted[-1] >= index.num_frames:
        raise ValueError(f"{where}: frame {wanted[-1]} is past the end ({index.num_frames} frames)")
    pixel_format = PIXEL_FORMATS[image_type]
    decoded: dict[int, np.ndarray] = {}
    try:
        container = open_container(source)
    except (av.error.FFmpegError, OSError) as exc:
        raise ValueError(f"{where}: cannot open video: {exc}") from None
    with container:
        stream = video_stream(container, where)
        stream.thread_type = "AUTO"
        pos = 0
        while pos < len(wanted):
            pos = _decode_run(container, stream, index, wanted, pos, decoded, pixel_format, where)
    return decoded


def _decode_run(container, stream, index, wanted, pos, decoded, pixel_format, where) -> int:
    """Seek before wanted[pos], decode forward while useful; returns the next position."""
    av = av_module()
    target = wanted[pos]
    key = index.keyframe_before(target)
    # A seek may land past the keyframe asked for (imprecise container indexes): back off to
    # earlier keyframes, and finally decode from the start.
    for attempt in range(3):
        start_key = key if attempt == 0 else index.keyframe_before(max(0, key - 1))
        if attempt == 2:
            start_key = 0
        container.seek(int(index.pts[start_key]), stream=stream, backward=True, any_frame=False)
        first = True
        try:
            for frame in container.decode(stream):
                stamp = frame.pts if frame.pts is not None else frame.dts
                number = index.frame_of_pts(stamp) if stamp is not None else None
                if number is None:
                    raise ValueError(f"{where}: decoded frames carry no timestamps")
                if first and number > target:
                    break  # landed past the target: retry from an earlier keyframe
                first = False
                while pos < len(wanted) and wanted[pos] == number:
                    decoded[number] = frame.to_ndarray(format=pixel_format)
                    pos += 1
                if pos == len(wanted):
                    return pos
                if wanted[pos] < number:
                    raise ValueError(f"{where}: the decoder skipped frame {wanted[pos]}")
                if index.keyframe_before(wanted[pos]) > number + 1:
                    return pos  # cheaper to seek than to decode up to the next wanted frame
            else:
                if pos < len(wanted):
                    raise ValueError(
                        f"{where}: the stream ended before frame {wanted[pos]} "
                        f"(index says {index.num_frames} frames)"
                    )
                return pos
        except av.error.FFmpegError as exc:
            raise ValueError(f"{where}: cannot decode {index.codec} video: {exc}") from None
        key = start_key
    raise ValueError(f"{where}: cannot seek to frame {target}")


def read_sequence(
    source: VideoSource,
    wanted: Sequence[int],
    pad_mode: str = "constant",
    fill_value: Sequence[int] = (0,),
    image_type: str = "RGB",
    where: str = "video",
) -> tuple[np.ndarray, list[int]]:
    """Frames ``wanted`` of ``source`` as one FHWC uint8 array, padded past the end.

    Returns the array and, per output frame, the video frame it shows (-1 for fill frames).
    """
    index = INDEX_CACHE.get(source, where)
    sources = pad_sources(wanted, index.num_frames, pad_mode)
    decoded = decode_frames(source, [s for s in sources if s >= 0], index, image_type, where)
    channels = 1 if image_type == "GRAY" else 3
    shape = (index.height, index.width, channels)
    if decoded:
        shape = next(iter(decoded.values())).shape
        shape = shape if len(shape) == 3 else (*shape, 1)
    out = np.empty((len(sources), *shape), np.uint8)
    fill = np.broadcast_to(np.asarray(fill_value, np.uint8)[: shape[2]], shape)
    for k, s in enumerate(sources):
        if s < 0:
            out[k] = fill
        else:
            out[k] = decoded[s].reshape(shape)
    return out, sources
