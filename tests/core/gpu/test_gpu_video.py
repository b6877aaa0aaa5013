"""NVDEC decoding (PyNvVideoCodec) against the CPU decoder on the same generated videos.

Frame i shows a bright block at x = 8 i, so each frame's number is read back
from its pixels. Tolerance: the frame numbers are exact and the GPU's RGB
(NVDEC + PyNvVideoCodec's colour conversion) is within a mean of 2 levels of
PyAV's (swscale), 99% of pixels within 16.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from chute import fn, pipeline_def

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "video"))
from _video_samples import frame_ids, write_video

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
av = pytest.importorskip("av")


@pytest.fixture(scope="module", autouse=True)
def nvdec_present():
    from chute.ops.video import nvdec

    if nvdec._import_nvc() is None:
        pytest.skip(
            "PyNvVideoCodec is not installed or cannot load (pip install 'chute[video-gpu]')"
        )


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("gpu_videos")
    paths = {}
    for name, codec, pix_fmt in [
        ("h264.mp4", "libx264", "yuv420p"),  # B-frames (bf=2), keyframe every 5
        ("hevc.mp4", "libx265", "yuv420p"),
        ("vp9.webm", "libvpx-vp9", "yuv420p"),
        ("mpeg4.avi", "mpeg4", "yuv420p"),  # NVDEC path not taken: CPU fallback
    ]:
        if codec in av.codecs_available:
            paths[name] = str(folder / name)
            write_video(paths[name], codec, pix_fmt)
    return paths


@pytest.fixture
def stats():
    from chute.ops.video.nvdec import NVDEC_STATS

    NVDEC_STATS.reset()
    yield NVDEC_STATS
    print("NVDEC stats:", NVDEC_STATS.snapshot())


def decode(samples: list[np.ndarray], device: str, **kwargs) -> list[np.ndarray]:
    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=0, exec_pipelined=False)
    def pipe():
        return fn.decoders.video(
            fn.external_source(source=lambda: samples), device=device, **kwargs
        )

    p = pipe()
    p.build()
    (out,) = p.run()
    if device == "mixed":
        from chute.tensors.gpu import TensorListGPU

        assert isinstance(out, TensorListGPU) and out.layout() == "FHWC"
        out = out.as_cpu()
    result = [np.asarray(out.at(i)) for i in range(len(samples))]
    p.close()
    return result


def assert_same_pictures(gpu: np.ndarray, cpu: np.ndarray) -> None:
    assert gpu.shape == cpu.shape and gpu.dtype == np.uint8
    diff = np.abs(gpu.astype(np.int16) - cpu.astype(np.int16))
    assert diff.mean() < 2, diff.mean()
    assert np.percentile(diff, 99) <= 16, np.percentile(diff, 99)


def encoded(path: str) -> np.ndarray:
    return np.fromfile(path, np.uint8)


def test_explicit_frame_list(videos, stats):
    picks = [7, 3, 12, 19, 0, 13, 3]
    data = [encoded(videos["h264.mp4"])]
    (gpu,) = decode(data, "mixed", frames=picks)
    (cpu,) = decode(data, "cpu", frames=picks)
    assert frame_ids(gpu) == picks
    assert_same_pictures(gpu, cpu)
    assert stats.snapshot() == {"gpu": 1, "fallbacks": {}}


@pytest.mark.parametrize("name", ["h264.mp4", "hevc.mp4", "vp9.webm"])
def test_stride_with_per_sample_start(videos, stats, name):
    if name not in videos:
        pytest.skip("encoder not in this PyAV build")
    data = [encoded(videos[name])] * 3
    starts = [np.array(s, np.int32) for s in (0, 4, 9)]

    def run(device):
        @pipeline_def(batch_size=3, num_threads=2, device_id=0, exec_pipelined=False)
        def pipe():
            video = fn.external_source(source=lambda: data)
            first = fn.external_source(source=lambda: starts)
            return fn.decoders.video(
                video, start_frame=first, stride=3, sequence_length=4, device=device
            )

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if device == "mixed" else out
        result = [np.asarray(out.at(i)) for i in range(3)]
        p.close()
        return result

    gpu, cpu = run("mixed"), run("cpu")
    for s, g, c in zip((0, 4, 9), gpu, cpu):
        assert frame_ids(g) == [s + 3 * k for k in range(4)]
        assert_same_pictures(g, c)
    snapshot = stats.snapshot()
    if name == "h264.mp4":  # the codec every NVDEC decodes: it must not fall back
        assert snapshot == {"gpu": 3, "fallbacks": {}}


@pytest.mark.parametrize("pad_mode", ["constant", "edge", "reflect", "none"])
def test_pad_modes(videos, stats, pad_mode):
    data = [encoded(videos["h264.mp4"])]
    kwargs = dict(start_frame=15, stride=2, sequence_length=5, pad_mode=pad_mode, fill_value=[9])
    (gpu,) = decode(data, "mixed", **kwargs)
    (cpu,) = decode(data, "cpu", **kwargs)
    assert frame_ids(gpu) == frame_ids(cpu)
    assert_same_pictures(gpu, cpu)
    want = {
        "constant": [15, 17, 19, -1, -1],
        "edge": [15, 17, 19, 19, 19],
        "reflect": [15, 17, 19, 17, 15],
        "none": [15, 17, 19],
    }[pad_mode]
    assert frame_ids(gpu) == want
    if pad_mode == "constant":
        assert (gpu[3:] == 9).all()
    assert stats.snapshot()["fallbacks"] == {}


def test_bgr_output(videos, stats):
    data = [encoded(videos["h264.mp4"])]
    (gpu,) = decode(data, "mixed", frames=[2, 8], image_type="BGR")
    (cpu,) = decode(data, "cpu", frames=[2, 8], image_type="BGR")
    assert_same_pictures(gpu, cpu)


def test_codec_without_nvdec_falls_back_to_the_cpu(videos, stats):
    data = [encoded(videos["mpeg4.avi"]), encoded(videos["h264.mp4"])]
    gpu = decode(data, "mixed", frames=[1, 18])
    cpu = decode(data, "cpu", frames=[1, 18])
    for g, c in zip(gpu, cpu):
        assert frame_ids(g) == [1, 18]
    np.testing.assert_array_equal(gpu[0], cpu[0])  # the CPU decoder's own frames, uploaded
    snapshot = stats.snapshot()
    assert snapshot["fallbacks"] == {"codec mpeg4": 1} and snapshot["gpu"] == 1


def test_gpu_reader_matches_cpu_reader(videos, stats):
    files = [videos["h264.mp4"], videos["mpeg4.avi"]]

    def run(device):
        @pipeline_def(batch_size=3, num_threads=2, device_id=0, seed=5)
        def pipe():
            return fn.readers.video(
                filenames=files,
                labels=[3, 4],
                sequence_length=4,
                stride=2,
                step=6,
                pad_mode="edge",
                enable_frame_num=True,
                enable_timestamps=True,
                device=device,
                name="Reader",
            )

        p = pipe()
        p.build()
        batches = []
        for _ in range(p.epoch_size("Reader") // 3):
            outs = p.run()
            if device == "gpu":
                from chute.tensors.gpu import TensorListGPU

                assert all(isinstance(o, TensorListGPU) for o in outs)
                outs = [o.as_cpu() for o in outs]
            batches.append([[np.asarray(o.at(i)) for i in range(3)] for o in outs])
        p.close()
        return batches

    gpu, cpu = run("gpu"), run("cpu")
    assert len(gpu) == len(cpu) == 2
    for bg, bc in zip(gpu, cpu):
        for (vg, lg, fg, tg), (vc, lc, fc, tc) in zip(zip(*bg), zip(*bc)):
            assert frame_ids(vg) == frame_ids(vc)
            assert_same_pictures(vg, vc)
            assert int(lg[0]) == int(lc[0]) and int(fg[0]) == int(fc[0])
            np.testing.assert_array_equal(tg, tc)
    snapshot = stats.snapshot()
    assert snapshot["gpu"] > 0 and set(snapshot["fallbacks"]) <= {"codec mpeg4"}
