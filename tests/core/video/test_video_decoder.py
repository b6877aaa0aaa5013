"""fn.decoders.video and the packet index on generated MP4/MKV/WebM/AVI videos."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _video_samples import FORMATS, frame_ids, vfr_times, write_video

from chute import fn, pipeline_def
from chute.ops.video import frames as video_frames
from chute.ops.video.index import INDEX_CACHE, IndexCache, build_index

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("videos")
    paths = {}
    for name, codec, pix_fmt in FORMATS:
        if codec in av.codecs_available:
            paths[name] = str(folder / name)
            write_video(paths[name], codec, pix_fmt)
    for name in ("vfr.mkv", "vfr.mp4"):
        paths[name] = str(folder / name)
        write_video(paths[name], "libx264", "yuv420p", vfr=True)
    short = str(folder / "short.mp4")
    write_video(short, "libx264", "yuv420p", frames=10)
    paths["short.mp4"] = short
    return paths


def encoded(path: str) -> np.ndarray:
    return np.fromfile(path, np.uint8)


def decode(samples: list[np.ndarray], **kwargs) -> list[np.ndarray]:
    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=None)
    def pipe():
        return fn.decoders.video(fn.external_source(source=lambda: samples), **kwargs)

    p = pipe()
    p.build()
    (out,) = p.run()
    assert out.layout() == "FHWC"
    return [out.at(i) for i in range(len(samples))]


ALL = [name for name, _, _ in FORMATS] + ["vfr.mkv", "vfr.mp4"]


@pytest.mark.parametrize("name", ALL)
def test_index_counts_frames_without_decoding(videos, name):
    if name not in videos:
        pytest.skip("encoder not available")
    index = build_index(videos[name])
    assert index.num_frames == 20
    assert index.keyframe[0]
    assert np.all(np.diff(index.pts) > 0)
    assert (index.width, index.height) == (256, 64)


@pytest.mark.parametrize("name", ALL)
def test_frames_by_number_in_every_container(videos, name):
    if name not in videos:
        pytest.skip("encoder not available")
    picks = [7, 3, 12, 19, 0, 13]
    (video,) = decode([encoded(videos[name])], frames=picks)
    assert video.shape == (6, 64, 256, 3) and video.dtype == np.uint8
    assert frame_ids(video) == picks


@pytest.mark.parametrize("name", ["h264.mp4", "vp9.webm", "mpeg4.avi"])
def test_start_stride_and_end(videos, name):
    if name not in videos:
        pytest.skip("encoder not available")
    data = encoded(videos[name])
    (a,) = decode([data], start_frame=2, stride=3)
    assert frame_ids(a) == list(range(2, 20, 3))
    (b,) = decode([data], start_frame=4, end_frame=9)
    assert frame_ids(b) == [4, 5, 6, 7, 8]
    (c,) = decode([data])
    assert frame_ids(c) == list(range(20))


@pytest.mark.parametrize(
    "pad_mode,tail",
    [
        ("constant", [-1] * 6),
        ("edge", [9] * 6),
        ("reflect", [8, 7, 6, 5, 4, 3]),
    ],
)
def test_sixteen_frames_of_a_ten_frame_clip(videos, pad_mode, tail):
    (video,) = decode(
        [encoded(videos["short.mp4"])], sequence_length=16, pad_mode=pad_mode, fill_value=[7]
    )
    assert video.shape[0] == 16
    assert frame_ids(video) == list(range(10)) + tail
    if pad_mode == "constant":
        assert np.all(video[10:] == 7)


def test_pad_mode_none_returns_what_exists(videos):
    (video,) = decode([encoded(videos["short.mp4"])], sequence_length=16, pad_mode="none")
    assert frame_ids(video) == list(range(10))


def test_per_sample_start_frame_and_variable_frame_rate(videos):
    data = encoded(videos["vfr.mkv"])

    @pipeline_def(batch_size=3, num_threads=2, device_id=None)
    def pipe():
        starts = fn.external_source(source=lambda: [np.int32(0), np.int32(5), np.int32(13)])
        return fn.decoders.video(
            fn.external_source(source=lambda: [data] * 3), start_frame=starts, sequence_length=4
        )

    p = pipe()
    p.build()
    (out,) = p.run()
    assert [frame_ids(out.at(i)) for i in range(3)] == [
        [0, 1, 2, 3],
        [5, 6, 7, 8],
        [13, 14, 15, 16],
    ]
    index = build_index(videos["vfr.mkv"])
    np.testing.assert_allclose(index.seconds(np.arange(20)), vfr_times(20), atol=1e-6)


def test_pure_helpers():
    assert video_frames.select_frames(10, start_frame=8, sequence_length=4) == [8, 9, 10, 11]
    assert video_frames.pad_sources([8, 9, 10, 11], 10, "none") == [8, 9]
    assert video_frames.pad_sources([9, 10, 25], 10, "reflect") == [9, 8, 7]
    assert video_frames.pad_sources([3], 1, "reflect") == [0]
    with pytest.raises(ValueError, match="stride"):
        video_frames.select_frames(10, stride=0)


def test_index_cache_by_content_and_by_file(videos, tmp_path):
    cache = IndexCache()
    data = encoded(videos["h264.mp4"])
    cache.get(data)
    cache.get(data.copy())
    assert (cache.misses, cache.hits) == (1, 1)
    path = tmp_path / "copy.mp4"
    path.write_bytes(data.tobytes())
    cache.get(str(path))
    cache.get(str(path))
    assert (cache.misses, cache.hits) == (2, 2)
    write_video(str(path), "libx264", "yuv420p", frames=10)  # new content, new size/mtime
    assert cache.get(str(path)).num_frames == 10
    assert cache.misses == 3


def test_errors_name_the_problem(videos, monkeypatch):
    with pytest.raises(Exception, match="cannot open video") as info:
        decode([np.arange(50, dtype=np.uint8)])
    assert "decoders.video" in str(info.value)
    # a codec this FFmpeg build cannot decode is named in the error
    monkeypatch.setattr(av, "codecs_available", av.codecs_available - {"h264"})
    INDEX_CACHE.clear()
    with pytest.raises(Exception, match="video codec 'h264' is not supported"):
        decode([encoded(videos["short.mp4"])], frames=[0])


def test_import_without_av_and_clear_error():
    code = (
        "import sys; sys.modules['av'] = None\n"
        "import chute\n"
        "from chute.ops.video.index import build_index\n"
        "try:\n"
        "    build_index(b'xx')\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "chute[video]" in out.stdout
