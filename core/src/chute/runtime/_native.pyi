"""Types of chute.runtime._native, the compiled CPU kernels (core/csrc); see chute.runtime.native."""

from collections.abc import Callable, Sequence
from typing import Any

from typing_extensions import Buffer

def resample_u8(
    src: Buffer,
    out: Buffer,
    roi_y: tuple[float, float],
    roi_x: tuple[float, float],
    filter_y: str,
    filter_x: str,
    antialias: bool,
    /,
) -> None: ...
def jpeg_bind(path: str, /) -> None: ...
def jpeg_header(buf: Buffer, /) -> tuple[int, int, int, int]: ...
def jpeg_decode(
    buf: Buffer, out: Buffer, pixel_format: int, numerator: int, y0: int, x0: int, /
) -> None: ...
def jpeg_decode_batch(
    items: Sequence[tuple[Buffer, Buffer, int, int, int, int]], threads: int = ..., /
) -> list[str | None]: ...
def jpeg_entropy_batch(
    buffers: Sequence[Buffer], max_pixels: int = ..., threads: int = ..., /
) -> list[str | None]: ...
def philox_blocks(key: Buffer, counter: Buffer, blocks: int, out: Buffer, /) -> None: ...
def random_crop_window(
    height: int,
    width: int,
    area_lo: float,
    area_hi: float,
    ratio_lo: float,
    ratio_hi: float,
    num_attempts: int,
    k0: int,
    k1: int,
    c0: int,
    c1: int,
    c2: int,
    c3: int,
    /,
) -> tuple[int, int, int, int] | None: ...
def lut_u8(src: Buffer, tables: Buffer, dst: Buffer, mirror: bool, /) -> None: ...
def read_files(
    paths: Sequence[str], alloc: Callable[[list[int]], Sequence[Any]], /
) -> list[Any]: ...
def jpeg_check_batch(
    buffers: Sequence[Buffer], only_jpeg: bool = ..., threads: int = ..., /
) -> list[str | None]: ...
def codec_parse(
    create: int,
    info: int,
    destroy: int,
    instance: int,
    buffers: Sequence[Buffer],
    infos: Buffer,
    info_size: int,
    handles: Buffer,
    /,
) -> None: ...
def codec_sub_streams(
    get_sub: int, handles: Buffer, views: Buffer, view_size: int, out: Buffer, /
) -> None: ...
def codec_images(
    create: int, instance: int, infos: Buffer, info_size: int, images: Buffer, /
) -> tuple[int, int]: ...
def codec_destroy(destroy: int, handles: Buffer, /) -> None: ...
def codec_decode(
    decode: int,
    wait: int,
    statuses: int,
    destroy: int,
    decoder: int,
    sources: Buffer,
    images: Buffer,
    params: int,
    out: Buffer,
    /,
) -> tuple[int, int]: ...
def random_crop_windows(
    shapes: Buffer,
    area_lo: float,
    area_hi: float,
    ratio_lo: float,
    ratio_hi: float,
    num_attempts: int,
    keys: Buffer,
    counters: Buffer,
    out: Buffer,
    /,
) -> None: ...
