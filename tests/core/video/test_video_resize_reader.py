"""fn.readers.video_resize: readers.video's sequences with every frame resized as fn.resize does."""

from __future__ import annotations

import numpy as np
import pytest
from _video_samples import write_video
from PIL import Image

from chute import fn, pipeline_def

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("resize_video") / "a.mp4"  # 256x64, 12 frames
    write_video(str(path), "libx264", "yuv420p", frames=12)
    return str(path)


def read(reader, batch_size=2, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=2)
    def pipe():
        out = reader(name="R", **kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    outs = p.run()
    p.close()
    return [[np.asarray(o.at(k)) for k in range(len(o))] for o in outs], outs[0].layout()


def pillow_resize(video, width, height):
    """Pillow's antialiased bilinear resize of every frame (fn.resize's documented equal)."""
    return np.stack(
        [np.asarray(Image.fromarray(f).resize((width, height), Image.BILINEAR)) for f in video]
    )


def test_frames_are_the_video_readers_frames_resized(video):
    common = dict(filenames=[video], sequence_length=3, step=4, stride=2, enable_frame_num=True)
    (plain, frames), _ = read(fn.readers.video, **common)
    (resized, frames_r), layout = read(fn.readers.video_resize, resize_x=100, resize_y=30, **common)
    assert layout == "FHWC"
    assert [f.tolist() for f in frames_r] == [f.tolist() for f in frames] == [[0], [4]]
    for src, out in zip(plain, resized):
        assert out.shape == (3, 30, 100, 3) and out.dtype == np.uint8
        want = pillow_resize(src, 100, 30).astype(np.int16)
        assert np.abs(out.astype(np.int16) - want).max() <= 1


def test_resize_shorter_keeps_the_aspect_ratio_and_dtype_float(video):
    (out, labels), _ = read(
        fn.readers.video_resize,
        filenames=[video],
        labels=[7],
        sequence_length=2,
        resize_shorter=32,
        dtype=np.float32,
        interp_type="nn",
    )
    (plain, _), _ = read(fn.readers.video, filenames=[video], labels=[7], sequence_length=2)
    assert out[0].shape == (2, 32, 128, 3) and out[0].dtype == np.float32
    # nearest neighbour halving takes every other pixel (DALI's centre sampling: odd ones)
    np.testing.assert_array_equal(out[0], plain[0][:, 1::2, 1::2].astype(np.float32))
    assert labels[0].tolist() == [7]


def test_legacy_name_and_gray(video):
    with pytest.warns(DeprecationWarning, match="readers.video_resize"):
        (out,), _ = read(
            fn.video_reader_resize,
            batch_size=1,
            filenames=[video],
            sequence_length=1,
            image_type="GRAY",
            size=[16, 64],
        )
    assert out[0].shape == (1, 16, 64, 1)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(resize_x=10, size=[4, 4]), "exactly one of"),
        (dict(resize_x=10, resize_z=3), "resize_z"),
        (dict(resize_x=10, roi_start=[0, 0]), "roi_start and roi_end"),
    ],
)
def test_bad_resize_arguments_are_refused_at_trace_time(video, bad, message):
    with pytest.raises(ValueError, match=message):
        read(fn.readers.video_resize, filenames=[video], sequence_length=2, **bad)
