"""The NVDEC path's logic on the CPU: NumPy stands in for CuPy, PyAV for PyNvVideoCodec.

The stand-in decoder numbers frames as PyNvVideoCodec's SimpleDecoder does
(presentation order) and reports each frame's pts, so frame selection,
padding, the pts check, the CPU fallback and the operators' GPU wiring run
here; tests/core/gpu/test_gpu_video.py runs the real decoder.
"""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest
from _video_samples import frame_ids, write_video

from chute import fn, pipeline_def
from chute.ops.video import frames as cpu_frames
from chute.ops.video import nvdec
from chute.ops.video.index import INDEX_CACHE

av = pytest.importorskip("av")


class FakeStream:
    ptr = 1234

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


class FakeCupy(types.ModuleType):
    """numpy, plus the few CUDA objects the code touches."""

    ndarray = np.ndarray

    def __init__(self):
        super().__init__("fake_cupy")
        self.cuda = types.SimpleNamespace(
            Device=lambda i=0: contextlib.nullcontext(),
            Stream=lambda non_blocking=False: FakeStream(),
        )

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def from_dlpack(frame):
        raise TypeError("no DLPack here")  # exercise the CUDA-array-interface branch


class FakeFrame:
    def __init__(self, pixels, pts):
        self._pixels, self._pts = pixels, pts

    def getPTS(self):
        return self._pts

    def __array__(self, dtype=None, copy=None):
        return self._pixels


class FakeSimpleDecoder:
    """Decodes with chute's CPU path and stamps frames as PyNvVideoCodec 2.2 does.

    Frame i (presentation order) carries the i-th decode timestamp; ``pts_shift``
    fakes a decoder that numbers frames otherwise, ``keyframe_seeks`` one whose
    seek_to_index lands on the keyframe before the frame asked for.
    """

    pts_shift = 0
    keyframe_seeks = False
    created = 0

    def __init__(self, source, gpu_id=0, cuda_stream=0, use_device_memory=True, **kwargs):
        assert use_device_memory and cuda_stream == FakeStream.ptr
        assert kwargs["output_color_type"] == "RGB"
        type(self).created += 1
        self.reconfigure_decoder(source)

    def reconfigure_decoder(self, source):
        self.source = source if isinstance(source, str) else np.frombuffer(source, np.uint8)
        self.index = INDEX_CACHE.get(self.source)
        self.position = 0

    def __len__(self):
        return self.index.num_frames

    def _frames(self, numbers):
        got = cpu_frames.decode_frames(self.source, numbers, self.index, "RGB")
        stamps = self.index.decode_stamps
        return [FakeFrame(got[i], int(stamps[i]) + self.pts_shift) for i in numbers]

    def get_batch_frames_by_index(self, indices):
        return self._frames(indices)

    def seek_to_index(self, index):
        self.position = self.index.keyframe_before(index) if self.keyframe_seeks else index

    def get_batch_frames(self, count):
        numbers = list(range(self.position, min(self.position + count, len(self))))
        self.position += len(numbers)
        return self._frames(numbers)


@pytest.fixture
def fake_gpu(monkeypatch):
    fake_nvc = types.SimpleNamespace(
        SimpleDecoder=FakeSimpleDecoder, OutputColorType=types.SimpleNamespace(RGB="RGB")
    )
    monkeypatch.setattr(nvdec, "require_nvdec", lambda what, device_id: (FakeCupy(), fake_nvc))
    monkeypatch.setattr(FakeSimpleDecoder, "pts_shift", 0)
    monkeypatch.setattr(FakeSimpleDecoder, "keyframe_seeks", False)
    nvdec.NVDEC_STATS.reset()
    yield
    nvdec.NVDEC_STATS.reset()


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("nvdec")
    paths = {"h264.mp4": str(folder / "h264.mp4"), "mpeg4.avi": str(folder / "mpeg4.avi")}
    write_video(paths["h264.mp4"], "libx264", "yuv420p")
    write_video(paths["mpeg4.avi"], "mpeg4", "yuv420p")
    return paths


@pytest.mark.parametrize(
    "wanted,pad_mode",
    [
        ([7, 3, 12, 19, 0, 13, 3], "constant"),
        ([15, 17, 19, 21, 23], "constant"),
        ([15, 17, 19, 21, 23], "edge"),
        ([15, 17, 19, 21, 23], "reflect"),
        ([15, 17, 19, 21, 23], "none"),
        ([25, 26], "none"),
    ],
)
def test_sequences_match_the_cpu_path(fake_gpu, videos, wanted, pad_mode):
    decoder = nvdec.NvdecDecoder(0)
    path = videos["h264.mp4"]
    got, shown = decoder.read_sequence(path, wanted, pad_mode, (7, 8, 9))
    want, want_shown = cpu_frames.read_sequence(path, wanted, pad_mode, (7, 8, 9))
    assert shown == want_shown
    assert got.shape == want.shape and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    stats = nvdec.NVDEC_STATS.snapshot()
    assert stats["fallbacks"] == {} and stats["gpu"] == (1 if any(s >= 0 for s in shown) else 0)


def test_bgr_and_gray_come_from_the_rgb_frames(fake_gpu, videos):
    decoder = nvdec.NvdecDecoder(0)
    path = videos["h264.mp4"]
    rgb, _ = decoder.read_sequence(path, [4, 9])
    bgr, _ = decoder.read_sequence(path, [4, 9], image_type="BGR")
    gray, _ = decoder.read_sequence(path, [4, 9], image_type="GRAY")
    np.testing.assert_array_equal(bgr, rgb[..., ::-1])
    assert gray.shape == (2, 64, 256, 1)
    want, _ = cpu_frames.read_sequence(path, [4, 9], image_type="GRAY")
    assert np.abs(gray.astype(int) - want).mean() < 20  # BT.601 luma vs swscale's gray
    assert frame_ids(np.repeat(gray, 3, axis=3)) == [4, 9]


def test_runs_of_frames_are_read_after_one_seek_each(fake_gpu, videos):
    decoder = nvdec.NvdecDecoder(0)
    got, _ = decoder.read_sequence(videos["h264.mp4"], [1, 3, 4, 12, 13, 19])
    assert frame_ids(got) == [1, 3, 4, 12, 13, 19]
    # keyframes every 5 frames: 1-4, then 12-13 (past keyframe 10), then 19 (past 15)
    frames = [1, 3, 4, 12, 13, 19]
    assert nvdec._spans(frames, INDEX_CACHE.get(videos["h264.mp4"])) == [(1, 4), (12, 13), (19, 19)]
    stats = nvdec.NVDEC_STATS.snapshot(events=True)
    assert stats["events"]["span"] == 3 and "by_index" not in stats["events"]
    assert decoder._spans is True


def test_seeks_that_land_elsewhere_switch_to_batch_access_by_index(fake_gpu, videos):
    FakeSimpleDecoder.keyframe_seeks = True
    decoder = nvdec.NvdecDecoder(0)
    for picks in ([7, 8, 9], [12, 16]):
        got, _ = decoder.read_sequence(videos["h264.mp4"], picks)
        assert frame_ids(got) == picks
    stats = nvdec.NVDEC_STATS.snapshot(events=True)
    assert stats["fallbacks"] == {} and stats["gpu"] == 2
    assert stats["events"]["by_index"] == 2 and "span" not in stats["events"]
    assert decoder._spans is False


def test_a_decoder_that_numbers_frames_otherwise_falls_back_to_the_cpu(fake_gpu, videos):
    FakeSimpleDecoder.pts_shift = 2048  # past the frame's pts: a frame from later on
    decoder = nvdec.NvdecDecoder(0)
    got, _ = decoder.read_sequence(videos["h264.mp4"], [2, 5, 11])
    assert frame_ids(got) == [2, 5, 11]
    (reason,) = nvdec.NVDEC_STATS.snapshot()["fallbacks"]
    assert "timestamp" in reason and nvdec.NVDEC_STATS.gpu == 0


def test_stamps_between_decode_order_and_pts_are_accepted(fake_gpu, videos):
    FakeSimpleDecoder.pts_shift = 512  # what PyNvVideoCodec reported for some HEVC frames
    decoder = nvdec.NvdecDecoder(0)
    got, _ = decoder.read_sequence(videos["h264.mp4"], [2, 5, 11])
    assert frame_ids(got) == [2, 5, 11]
    assert nvdec.NVDEC_STATS.snapshot() == {"gpu": 1, "fallbacks": {}}


def test_codecs_nvdec_does_not_take_go_to_the_cpu(fake_gpu, videos):
    decoder = nvdec.NvdecDecoder(0)
    got, _ = decoder.read_sequence(videos["mpeg4.avi"], [1, 18])
    assert frame_ids(got) == [1, 18]
    assert nvdec.NVDEC_STATS.snapshot()["fallbacks"] == {"codec mpeg4": 1}


def test_one_decoder_per_thread_is_reconfigured_for_each_file(fake_gpu, videos, tmp_path):
    other = str(tmp_path / "other.mp4")
    write_video(other, "libx264", "yuv420p", frames=12)
    decoder = nvdec.NvdecDecoder(0)
    before = FakeSimpleDecoder.created
    for path in (videos["h264.mp4"], other, other, videos["h264.mp4"]):
        got, _ = decoder.read_sequence(path, [10, 11])
        assert frame_ids(got) == [10, 11]
    assert FakeSimpleDecoder.created == before + 1
    events = nvdec.NVDEC_STATS.snapshot(events=True)["events"]
    assert events["reconfigured"] == 2 and events["reused"] == 1


def test_decoders_that_cannot_switch_to_in_memory_videos_are_made_anew(fake_gpu, tmp_path):
    class PathOnly(FakeSimpleDecoder):
        def reconfigure_decoder(self, source):
            if not isinstance(source, str) and hasattr(self, "source"):
                raise TypeError("reconfigure_decoder(): incompatible arguments")
            super().reconfigure_decoder(source)

    decoder = nvdec.NvdecDecoder(0)
    decoder.nvc = types.SimpleNamespace(
        SimpleDecoder=PathOnly, OutputColorType=decoder.nvc.OutputColorType
    )
    data = []
    for frames in (20, 12, 15):
        write_video(str(tmp_path / f"{frames}.mp4"), "libx264", "yuv420p", frames=frames)
        data.append(np.fromfile(str(tmp_path / f"{frames}.mp4"), np.uint8))
    before = PathOnly.created
    for video in (*data, data[2]):
        got, _ = decoder.read_sequence(video, [3, 9, 10])
        assert frame_ids(got) == [3, 9, 10]
    assert PathOnly.created == before + 3 and decoder._bytes_reconfigure is False
    stats = nvdec.NVDEC_STATS.snapshot(events=True)
    assert stats["gpu"] == 4 and stats["fallbacks"] == {} and stats["events"]["reused"] == 1


class FakeTensorListGPU:
    def __init__(self, data, layout="", stream=None, device_id=0):
        self.data = list(data)
        self._layout = layout

    def at(self, i):
        return self.data[i]

    def __len__(self):
        return len(self.data)

    def layout(self):
        return self._layout


@pytest.fixture
def fake_pipeline_gpu(fake_gpu, monkeypatch):
    import chute.executor.gpu
    import chute.tensors.gpu

    class FakeContext:  # the executor's GPUContext, minus CUDA
        def __init__(self, device_id):
            self.device_id, self.stream = device_id, FakeStream()

        def lane_stream(self, lane):
            return self.stream

        def activate(self, stream=None):
            return contextlib.nullcontext()

        def close(self):
            pass

    monkeypatch.setattr(chute.executor.gpu, "GPUContext", FakeContext)
    monkeypatch.setattr(chute.tensors.gpu, "TensorListGPU", FakeTensorListGPU)


def test_mixed_decoder_in_a_pipeline(fake_pipeline_gpu, videos):
    data = [np.fromfile(videos[n], np.uint8) for n in ("h264.mp4", "mpeg4.avi", "h264.mp4")]
    starts = [np.array(s, np.int32) for s in (0, 5, 14)]

    # device_fallback=False: the GPU is faked, the pipeline must not move to the CPU
    @pipeline_def(
        batch_size=3, num_threads=2, device_id=0, exec_pipelined=False, device_fallback=False
    )
    def pipe():
        encoded = fn.external_source(source=lambda: data)
        first = fn.external_source(source=lambda: starts)
        return fn.decoders.video(
            encoded, start_frame=first, stride=3, sequence_length=3, pad_mode="edge", device="mixed"
        )

    p = pipe()
    p.build()
    (out,) = p.run()
    assert isinstance(out, FakeTensorListGPU) and out.layout() == "FHWC"
    assert [frame_ids(out.at(i)) for i in range(3)] == [[0, 3, 6], [5, 8, 11], [14, 17, 19]]
    stats = nvdec.NVDEC_STATS.snapshot()
    assert stats["gpu"] == 2 and stats["fallbacks"] == {"codec mpeg4": 1}


def test_gpu_reader_in_a_pipeline(fake_pipeline_gpu, videos, tmp_path):
    @pipeline_def(batch_size=2, num_threads=2, device_id=0, seed=3)
    def pipe():
        return fn.readers.video(
            filenames=[videos["h264.mp4"]],
            labels=[4],
            sequence_length=4,
            stride=2,
            step=6,
            pad_mode="constant",
            enable_frame_num=True,
            enable_timestamps=True,
            device="gpu",
            name="Reader",
        )

    p = pipe()
    p.build()
    assert p.epoch_size("Reader") == 4  # starts 0, 6, 12, 18 (the last padded)
    seen = {}
    for _ in range(2):
        video, label, first, times = p.run()
        for i in range(2):
            start = int(first.at(i)[0])
            assert int(label.at(i)[0]) == 4 and times.at(i).shape == (4,)
            seen[start] = frame_ids(video.at(i))
    assert seen == {0: [0, 2, 4, 6], 6: [6, 8, 10, 12], 12: [12, 14, 16, 18], 18: [18, -1, -1, -1]}


def test_missing_gpu_pieces_fail_at_build_naming_the_extra(videos):
    from chute.gpu.runtime import gpu_available

    if gpu_available() and nvdec._import_nvc() is not None:
        pytest.skip("this machine has everything NVDEC needs")

    # without the fallback to the CPU backends (on by default where no GPU is usable)
    @pipeline_def(batch_size=1, num_threads=1, device_id=0, device_fallback=False)
    def mixed():
        encoded = fn.external_source(source=lambda: [np.zeros(4, np.uint8)])
        return fn.decoders.video(encoded, device="mixed")

    @pipeline_def(batch_size=1, num_threads=1, device_id=0, device_fallback=False)
    def reader():
        return fn.readers.video(filenames=[videos["h264.mp4"]], sequence_length=2, device="gpu")

    for make in (mixed, reader):
        with pytest.raises(RuntimeError, match=r"chute\[video-gpu\]"):
            make().build()
