"""fn.readers.video: sequences, labels, frame numbers, timestamps, shards, shuffling, state."""

from __future__ import annotations

import numpy as np
import pytest
from _video_samples import frame_ids, vfr_times, write_video

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """Two classes: cats/{a (20 frames), b (12)}.mp4 and dogs/c.mkv (16 frames, VFR)."""
    root = tmp_path_factory.mktemp("library")
    (root / "cats").mkdir()
    (root / "dogs").mkdir()
    write_video(str(root / "cats" / "a.mp4"), "libx264", "yuv420p", frames=20)
    write_video(str(root / "cats" / "b.mp4"), "libx264", "yuv420p", frames=12)
    write_video(str(root / "dogs" / "c.mkv"), "libx264", "yuv420p", frames=16, vfr=True)
    return root


def build(batch_size=2, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=11)
    def pipe():
        return fn.readers.video(name="Reader", **kwargs)

    p = pipe()
    p.build()
    return p


def batch_samples(outputs):
    return [[out.at(i) for i in range(len(out))] for out in outputs]


def test_file_root_sequences_labels_frame_numbers(library):
    p = build(
        batch_size=4,
        file_root=str(library),
        sequence_length=4,
        step=5,
        stride=2,
        enable_frame_num=True,
        enable_timestamps=True,
    )
    # span 7 frames: a (20) starts 0,5,10; b (12) starts 0,5; c (16) starts 0,5
    assert p.epoch_size("Reader") == 7
    seen = []
    for _ in range(2):
        video, label, first, times = batch_samples(p.run())
        for v, lab, f, t in zip(video, label, first, times):
            assert v.shape == (4, 64, 256, 3)
            assert frame_ids(v) == [int(f[0]) + 2 * k for k in range(4)]
            seen.append((int(lab[0]), int(f[0])))
            assert t.dtype == np.float32 and t.shape == (4,)
    assert sorted(seen[:7]) == [(0, 0), (0, 0), (0, 5), (0, 5), (0, 10), (1, 0), (1, 5)]


def test_vfr_timestamps(library):
    path = str(library / "dogs" / "c.mkv")
    p = build(batch_size=1, filenames=[path], sequence_length=3, step=6, enable_timestamps=True)
    want = vfr_times(16)
    for start in (0, 6):
        video, times = batch_samples(p.run())
        assert frame_ids(video[0]) == [start, start + 1, start + 2]
        np.testing.assert_allclose(times[0], want[start : start + 3], atol=1e-6)


def test_padding_reads_video_tails(library):
    path = str(library / "cats" / "b.mp4")  # 12 frames
    p = build(
        batch_size=3,
        filenames=[path],
        labels=[4],
        sequence_length=8,
        step=5,
        pad_mode="edge",
        enable_timestamps=True,
    )
    assert p.epoch_size("Reader") == 3  # starts 0, 5, 10
    video, label, times = batch_samples(p.run())
    assert [frame_ids(v) for v in video] == [
        list(range(8)),
        [5, 6, 7, 8, 9, 10, 11, 11],
        [10, 11] + [11] * 6,
    ]
    assert [int(x[0]) for x in label] == [4, 4, 4]
    assert times[1][-1] == times[1][-2]  # an edge frame shows the last frame's time
    constant = build(batch_size=3, filenames=[path], sequence_length=8, step=5, pad_mode="constant")
    (video,) = batch_samples(constant.run())
    assert frame_ids(video[2]) == [10, 11] + [-1] * 6


def test_file_list_frame_and_time_ranges(library, tmp_path):
    a = library / "cats" / "a.mp4"
    c = library / "dogs" / "c.mkv"
    frames_list = tmp_path / "frames.txt"
    frames_list.write_text(f"{a} 3 4 9\n{c} 7\n")
    p = build(
        batch_size=4,
        file_list=str(frames_list),
        file_list_format="frames",
        sequence_length=3,
        enable_frame_num=True,
    )
    # a: frames 4..9 inclusive -> starts 4, 7; c: 16 frames -> starts 0, 3, 6, 9, 12
    assert p.epoch_size("Reader") == 7
    video, label, first = batch_samples(p.run())
    assert [int(f[0]) for f in first] == [4, 7, 0, 3]
    assert [int(x[0]) for x in label] == [3, 3, 7, 7]
    assert frame_ids(video[1]) == [7, 8, 9]
    # seconds: c's frames sit at 0, .04, .05, .15, .183, .223, ... ; [0.05, 0.2] -> frames 2..4
    times_list = tmp_path / "times.txt"
    times_list.write_text(f"{c} 1 0.05 0.2\n")
    q = build(
        batch_size=1, file_list=str(times_list), sequence_length=2, step=1, enable_frame_num=True
    )
    assert q.epoch_size("Reader") == 2
    starts = [int(batch_samples(q.run())[2][0][0]) for _ in range(2)]
    assert starts == [2, 3]


@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_cover_every_sequence_once(library, shuffle):
    files = [str(library / "cats" / "a.mp4"), str(library / "cats" / "b.mp4")]
    total = 20 // 2 + 12 // 2  # sequence_length 2, step 2
    per_epoch = []
    for epoch in range(2):
        seen = []
        for shard in range(3):

            @pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=3)
            def pipe(shard=shard):
                video, label, first = fn.readers.video(
                    filenames=files,
                    labels=[0, 1],
                    sequence_length=2,
                    random_shuffle=shuffle,
                    shard_id=shard,
                    num_shards=3,
                    enable_frame_num=True,
                    name="Reader",
                )
                return label, first

            it = Iterator(
                pipe(),
                ["label", "first"],
                reader_name="Reader",
                last_batch_policy=LastBatchPolicy.PARTIAL,
            )
            assert len(it) == 3  # ceil(ceil(16 / 3) / 2), the same on every shard
            for _ in range(epoch):
                list(it)
                it.reset()
            for (batch,) in it:
                for i in range(batch.real):
                    seen.append((int(batch["label"].at(i)[0]), int(batch["first"].at(i)[0])))
            for p in it.pipelines:
                p.close()
        assert sorted(seen) == sorted(
            [(0, s) for s in range(0, 20, 2)] + [(1, s) for s in range(0, 12, 2)]
        )
        assert len(seen) == total
        per_epoch.append(seen)
    if shuffle:
        assert per_epoch[0] != per_epoch[1]


def test_state_restore_continues_with_the_next_batch(library):
    kwargs = dict(
        filenames=[str(library / "cats" / "a.mp4")],
        sequence_length=2,
        random_shuffle=True,
        enable_frame_num=True,
    )
    p = build(**kwargs)
    p.run()
    state = p.state_dict()
    expected = [int(f[0]) for f in batch_samples(p.run())[1]]
    q = build(**kwargs)
    q.load_state_dict(state)
    assert [int(f[0]) for f in batch_samples(q.run())[1]] == expected


def test_argument_errors(library):
    with pytest.raises(TypeError, match="sequence_length"):
        build(filenames=[str(library / "cats" / "a.mp4")])
    with pytest.raises(ValueError, match="no sequence of 50 frames"):
        build(filenames=[str(library / "cats" / "a.mp4")], sequence_length=50)
    with pytest.raises(ValueError, match="labels"):
        build(filenames=["x.mp4"], labels=[1, 2], sequence_length=2)
