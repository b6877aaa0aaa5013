"""fn.readers.video_resize(device="gpu"): CPU-decoded frames resized on the GPU, against the CPU reader.

The same reader with the same arguments runs with device="cpu" and device="gpu";
the sequences, labels and frame numbers must agree, the frames within the tolerance of
the CPU-vs-GPU resize tests (test_gpu_geometry.py): uint8 within 2 levels with a mean
under 0.5 (Pillow rounds between its passes, the kernel does not), float32 within 2,
nearest neighbour equal but for under 1% of pixels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from chute import fn, pipeline_def

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "video"))
from _video_samples import write_video

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
av = pytest.importorskip("av")


def _write_textured(path: str, width: int, height: int, frames: int) -> None:
    """A video of smooth gradients with a moving block: something for a resize to average."""
    yy, xx = np.mgrid[0:height, 0:width]
    with av.open(path, "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            img = np.stack(
                [(xx * 255 // width), (yy * 255 // height), np.full_like(xx, 40 + 10 * i)], -1
            ).astype(np.uint8)
            img[10:30, 6 * i : 6 * i + 20] = 230
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("gpu_resize_videos")
    a, b = str(folder / "a.mp4"), str(folder / "b.mp4")
    write_video(a, "libx264", "yuv420p", frames=12)  # 256x64
    _write_textured(b, 160, 96, 12)
    return [a, b]


def read_both(batch_size: int = 2, **kwargs) -> tuple[list, list]:
    """Every output's samples of one batch of readers.video_resize on the CPU and the GPU."""
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(
            batch_size=batch_size,
            num_threads=2,
            device_id=0 if device == "gpu" else None,
            seed=5,
        )
        def pipe():
            out = fn.readers.video_resize(device=device, name="R", **kwargs)
            return tuple(out) if isinstance(out, (list, tuple)) else (out,)

        p = pipe()
        p.build()
        outs = p.run()
        host = []
        for out in outs:
            if device == "gpu":
                assert hasattr(out, "as_cpu"), "video_resize(device='gpu') outputs on the GPU"
                out = out.as_cpu()
            host.append([np.asarray(out.at(i)) for i in range(len(out))])
        results.append(host)
        p.close()
    return results[0], results[1]


def assert_frames_close(cpu: list, gpu: list, nn: bool = False) -> None:
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert g.shape == c.shape and g.dtype == c.dtype, (i, g.shape, c.shape, g.dtype, c.dtype)
        diff = np.abs(g.astype(np.float64) - c.astype(np.float64))
        if nn:
            assert np.mean(diff > 0) < 0.01, (i, np.mean(diff > 0))
        else:
            assert diff.max() <= 2.0 and diff.mean() < 0.5, (i, diff.max(), diff.mean())


def test_gpu_resize_x_y_matches_cpu_across_videos_of_two_sizes(videos):
    # one batch holds sequences of both videos: one launch with per-sequence sizes
    (cpu, cpu_labels, cpu_frames), (gpu, gpu_labels, gpu_frames) = read_both(
        batch_size=4,
        filenames=videos,
        labels=[3, 8],
        sequence_length=3,
        step=6,
        enable_frame_num=True,
        resize_x=100,
        resize_y=30,
    )
    assert [v.shape for v in gpu] == [(3, 30, 100, 3)] * 4
    assert_frames_close(cpu, gpu)
    assert (
        [x.tolist() for x in gpu_labels] == [x.tolist() for x in cpu_labels] == [[3], [3], [8], [8]]
    )
    assert [x.tolist() for x in gpu_frames] == [x.tolist() for x in cpu_frames] == [[0], [6]] * 2


def test_gpu_resize_shorter_keeps_each_videos_aspect_ratio(videos):
    cpu, gpu = read_both(
        batch_size=4, filenames=videos, sequence_length=2, step=6, resize_shorter=48
    )
    assert [v.shape for v in gpu[0]] == [(2, 48, 192, 3)] * 2 + [(2, 48, 80, 3)] * 2
    assert_frames_close(cpu[0], gpu[0])


@pytest.mark.parametrize("interp", ["linear", "cubic", "nn"])
def test_gpu_interp_and_float_output_match_cpu(videos, interp):
    cpu, gpu = read_both(
        filenames=videos[1:],
        sequence_length=2,
        size=[40, 56],
        interp_type=interp,
        dtype=np.float32,
    )
    assert gpu[0][0].dtype == np.float32
    assert_frames_close(cpu[0], gpu[0], nn=interp == "nn")


def test_gpu_roi_and_gray_match_cpu(videos):
    cpu, gpu = read_both(
        filenames=videos[1:],
        sequence_length=2,
        image_type="GRAY",
        resize_x=64,
        resize_y=32,
        roi_start=[0.25, 0.1],
        roi_end=[0.75, 0.9],
        roi_relative=True,
    )
    assert gpu[0][0].shape == (2, 32, 64, 1)
    assert_frames_close(cpu[0], gpu[0])
