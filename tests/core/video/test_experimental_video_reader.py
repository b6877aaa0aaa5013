"""fn.experimental.readers.video: frame numbers per frame, DALI's padding names, uniform sampling,
file_list frame ranges from the end and time rounding, YCbCr output."""

from __future__ import annotations

import numpy as np
import pytest
from _video_samples import frame_ids, write_video

from chute import fn, pipeline_def

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """a.mp4 (20 frames), b.mp4 (12), c.mp4 (3), all 25 frames a second."""
    root = tmp_path_factory.mktemp("xvideo")
    for name, n in (("a.mp4", 20), ("b.mp4", 12), ("c.mp4", 3)):
        write_video(str(root / name), "libx264", "yuv420p", frames=n)
    return root


def read_all(batch_size=1, **kwargs):
    """Every sample of one epoch: a list of (outputs of the sample)."""

    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=3)
    def pipe():
        return fn.experimental.readers.video(name="R", **kwargs)

    p = pipe()
    p.build()
    n = p.epoch_size("R")
    rows = []
    while len(rows) < n:
        outs = p.run()
        rows += [[np.asarray(o.at(k)) for o in outs] for k in range(len(outs[0]))]
    p.close()
    return rows[:n]


@pytest.mark.parametrize(
    ("pad_mode", "tail"),
    [
        ("constant", [10, 11, -1, -1, -1]),
        ("repeat", [10, 11, 11, 11, 11]),
        ("edge", [10, 11, 11, 11, 11]),
        ("reflect_101", [10, 11, 10, 9, 8]),
        ("reflect", [10, 11, 10, 9, 8]),
        ("reflect_1001", [10, 11, 11, 10, 9]),
        ("symmetric", [10, 11, 11, 10, 9]),
    ],
)
def test_padding_names_and_frame_numbers_per_frame(videos, pad_mode, tail):
    rows = read_all(
        filenames=[str(videos / "b.mp4")],
        sequence_length=5,
        pad_mode=pad_mode,
        enable_frame_num="sequence",
    )
    # 12 frames, sequences every 5 frames: starts 0, 5, 10 (the last padded)
    assert [r[1].tolist() for r in rows] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], tail]
    for video, numbers in rows:
        assert frame_ids(video) == [max(-1, f) for f in numbers.tolist()]


def test_no_padding_keeps_whole_sequences_and_scalar_frame_numbers(videos):
    rows = read_all(filenames=[str(videos / "b.mp4")], sequence_length=5, enable_frame_num=True)
    assert [r[1].tolist() for r in rows] == [[0], [5]]
    rows = read_all(filenames=[str(videos / "b.mp4")], sequence_length=5, enable_frame_num="scalar")
    assert [r[1].tolist() for r in rows] == [[0], [5]]
    assert len(read_all(filenames=[str(videos / "b.mp4")], sequence_length=5)[0]) == 1


def test_uniform_sample_one_sequence_per_video(videos):
    rows = read_all(
        filenames=[str(videos / n) for n in ("a.mp4", "b.mp4", "c.mp4")],
        labels=[7, 8, 9],
        sequence_length=5,
        uniform_sample=True,
        stride=3,  # ignored
        enable_frame_num="sequence",
    )
    # linspace(0, n - 1, 5) rounded half up: 20 -> 0, 4.75, 9.5, 14.25, 19
    expected = [[0, 5, 10, 14, 19], [0, 3, 6, 8, 11], [0, 1, 1, 2, 2]]
    assert [r[2].tolist() for r in rows] == expected
    assert [int(r[1][0]) for r in rows] == [7, 8, 9]
    assert [frame_ids(r[0]) for r in rows] == expected


def test_file_list_frames_count_from_the_end(videos, tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{videos / 'a.mp4'} 3 2 -3\n{videos / 'b.mp4'} 4 -5 -1\n")
    rows = read_all(
        file_list=str(listing),
        file_list_format="frames",
        sequence_length=4,
        enable_frame_num="scalar",
    )
    # frames [start, end) with or without include_end, as DALI 2.4's CPU reader reads them:
    # a: frames 2..16 (end -3 = 17): starts 2, 6, 10; b: frames 7..10 (-5 -> 7, -1 -> 11): 7
    expected = [(3, 2), (3, 6), (3, 10), (4, 7)]
    assert [(int(r[1][0]), int(r[2][0])) for r in rows] == expected
    rows = read_all(
        file_list=str(listing),
        file_list_format="frames",
        file_list_include_end=False,
        sequence_length=4,
        enable_frame_num="scalar",
    )
    assert [(int(r[1][0]), int(r[2][0])) for r in rows] == expected


@pytest.mark.parametrize(
    ("rounding", "first", "last"),
    [
        ("start_down_end_up", 1, 6),
        ("start_up_end_down", 2, 5),
        ("all_up", 2, 6),
        ("all_down", 1, 5),
    ],
)
def test_file_list_time_rounding(videos, tmp_path, rounding, first, last):
    listing = tmp_path / "list.txt"
    # frames are 0.04 s apart: 0.05 lies between frames 1 and 2, 0.23 between 5 and 6
    listing.write_text(f"{videos / 'a.mp4'} 0 0.05 0.23\n")
    rows = read_all(
        file_list=str(listing),
        file_list_rounding=rounding,
        sequence_length=1,
        enable_frame_num=True,
    )
    assert [int(r[2][0]) for r in rows] == list(range(first, last + 1))


def test_ycbcr_is_bt601_limited_range_of_the_rgb_frames(videos):
    rgb = read_all(filenames=[str(videos / "c.mp4")], sequence_length=3)[0][0].astype(np.float64)
    ycc = read_all(filenames=[str(videos / "c.mp4")], sequence_length=3, image_type="YCbCr")[0][0]
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    cb = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    cr = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    expected = np.stack([y, cb, cr], axis=-1)
    assert ycc.shape == rgb.shape and ycc.dtype == np.uint8
    assert np.abs(ycc.astype(np.float64) - expected).max() <= 1.0


def test_bad_frame_num_mode_names_the_argument(videos):
    with pytest.raises(ValueError, match="enable_frame_num"):
        read_all(filenames=[str(videos / "c.mp4")], sequence_length=1, enable_frame_num="all")


@pytest.mark.parametrize(
    ("kwargs", "starts"),
    [
        # whole sequences while start + length * stride <= 12 (as DALI 2.4 cuts them)
        ({"sequence_length": 5, "stride": 2, "step": 3}, [0]),
        ({"sequence_length": 4, "stride": 3, "step": 1}, [0]),
        ({"sequence_length": 5, "step": 1}, [0, 1, 2, 3, 4, 5, 6, 7]),
        # with padding, one sequence more at the next step
        ({"sequence_length": 3, "stride": 2, "step": 1, "pad_mode": "constant"}, list(range(8))),
        ({"sequence_length": 5, "pad_mode": "constant"}, [0, 5, 10]),
    ],
)
def test_sequence_starts(videos, kwargs, starts):
    rows = read_all(filenames=[str(videos / "b.mp4")], enable_frame_num="scalar", **kwargs)
    assert [int(r[1][0]) for r in rows] == starts
