"""fn.multi_paste on the CPU: hand-made layouts with their expected canvases written out.

The rules checked are DALI 2.4's (seen on its CPU backend): later regions cover earlier
ones; relative shapes round up and relative anchors down; a canvas without regions is
zeros with the channels of the output sample's own input; float to integer conversion
rounds halves away from zero and saturates.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.runtime.errors import OperatorError

A = np.arange(4 * 5 * 2, dtype=np.uint8).reshape(4, 5, 2)
B = (100 + np.arange(4 * 5 * 2, dtype=np.uint8)).reshape(4, 5, 2)


def run(graph, inputs, layout="HWC", **sources):
    n = len(inputs[0])

    @pipeline_def(batch_size=n, num_threads=2, device_id=None)
    def pipe():
        xs = [fn.external_source(source=lambda b=b: b, layout=layout) for b in inputs]
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return graph(*xs, **named)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(n)]


def ints(*rows):
    return [
        np.array(r, np.int32).reshape(-1, 2) if np.ndim(r) > 1 else np.array(r, np.int32)
        for r in rows
    ]


def test_in_ids_later_regions_cover_earlier_ones():
    out = run(
        lambda x, ids, oa: fn.multi_paste(x, in_ids=ids, out_anchors=oa, output_size=[6, 7]),
        [[A, B]],
        ids=ints([0, 1], [1]),
        oa=ints([[0, 0], [1, 2]], [[2, 1]]),
    )
    expected0 = np.zeros((6, 7, 2), np.uint8)
    expected0[0:4, 0:5] = A
    expected0[1:5, 2:7] = B
    expected1 = np.zeros((6, 7, 2), np.uint8)
    expected1[2:6, 1:6] = B
    np.testing.assert_array_equal(out[0], expected0)
    np.testing.assert_array_equal(out[1], expected1)


def test_several_inputs_with_anchors_and_shapes():
    out = run(
        lambda x, y, ia, sh, oa: fn.multi_paste(x, y, in_anchors=ia, shapes=sh, out_anchors=oa),
        [[A, B], [B, A]],
        ia=ints([[1, 1], [0, 0]], [[0, 0], [2, 3]]),
        sh=ints([[2, 2], [1, 3]], [[1, 1], [2, 2]]),
        oa=ints([[0, 0], [3, 2]], [[3, 4], [0, 0]]),
    )
    # no output_size: the inputs' common size (4, 5)
    e0 = np.zeros((4, 5, 2), np.uint8)
    e0[0:2, 0:2] = A[1:3, 1:3]
    e0[3:4, 2:5] = B[0:1, 0:3]
    e1 = np.zeros((4, 5, 2), np.uint8)
    e1[3:4, 4:5] = B[0:1, 0:1]
    e1[0:2, 0:2] = A[2:4, 3:5]
    np.testing.assert_array_equal(out[0], e0)
    np.testing.assert_array_equal(out[1], e1)


def test_relative_anchors_and_shapes_round_as_dali():
    f32 = lambda *v: [np.array(v, np.float32).reshape(-1, 2)] * 2  # noqa: E731
    out = run(
        lambda x, ids, ia, sh, oa: fn.multi_paste(
            x, in_ids=ids, in_anchors_rel=ia, shapes_rel=sh, out_anchors_rel=oa, output_size=[7, 7]
        ),
        [[A, B]],
        ids=ints([1], [1]),
        ia=f32(0.5, 0.5),
        sh=f32(0.5, 0.3),
        oa=f32(0.4, 0.2),
    )
    # in anchor floor(4*.5, 5*.5) = (2, 2); shape ceil(4*.5, 5*.3) = (2, 2);
    # out anchor floor(7*.4, 7*.2) = (2, 1)
    expected = np.zeros((7, 7, 2), np.uint8)
    expected[2:4, 1:3] = B[2:4, 2:4]
    np.testing.assert_array_equal(out[0], expected)


def test_empty_paste_lists_sizes_and_region_channels():
    rgba = np.full((3, 3, 4), 7, np.uint8)
    gray = np.full((3, 3, 1), 9, np.uint8)
    out = run(
        lambda x, ids, size: fn.multi_paste(x, in_ids=ids, output_size=size),
        [[rgba, gray, gray]],
        ids=ints([], [0], [1, 2]),
        size=ints([2, 3], [4, 4], [3, 5]),
    )
    assert out[0].shape == (2, 3, 4) and not out[0].any()  # its own input's channels
    assert out[1].shape == (4, 4, 4)  # the region's channels, not its own input's
    np.testing.assert_array_equal(out[1][:3, :3], 7)
    assert out[1][3].sum() == 0 and out[1][:, 3].sum() == 0
    assert out[2].shape == (3, 5, 1)
    np.testing.assert_array_equal(out[2][:, :3], 9)


def test_dtype_conversion_rounds_half_away_and_saturates():
    a = np.array([[[0.5], [1.5], [2.5], [-3.5]], [[300.7], [-1], [254.5], [3.49]]], np.float32)
    u8 = run(lambda x: fn.multi_paste(x, in_ids=[0], dtype=types.UINT8), [[a]])[0]
    i16 = run(lambda x: fn.multi_paste(x, in_ids=[0], dtype=types.INT16), [[a]])[0]
    assert u8.dtype == np.uint8 and i16.dtype == np.int16
    np.testing.assert_array_equal(u8[..., 0], [[1, 2, 3, 0], [255, 0, 255, 3]])
    np.testing.assert_array_equal(i16[..., 0], [[1, 2, 3, -4], [301, -1, 255, 3]])


def test_sequences_paste_every_frame():
    seq_a, seq_b = np.stack([A, 255 - A]), np.stack([B, B // 2])
    out = run(
        lambda x, ids, oa: fn.multi_paste(x, in_ids=ids, out_anchors=oa, output_size=[6, 8]),
        [[seq_a, seq_b]],
        layout="FHWC",
        ids=ints([1, 0], [0]),
        oa=ints([[0, 0], [2, 3]], [[1, 1]]),
    )
    expected = np.zeros((2, 6, 8, 2), np.uint8)
    expected[:, :4, :5] = seq_b
    expected[:, 2:6, 3:8] = seq_a
    np.testing.assert_array_equal(out[0], expected)
    assert out[1].shape == (2, 6, 8, 2)
    np.testing.assert_array_equal(out[1][:, 1:5, 1:6], seq_a)


def test_multi_paste_argument_errors():
    with pytest.raises(ValueError, match="'in_anchors' and 'in_anchors_rel' cannot be given"):
        run(
            lambda x: fn.multi_paste(x, in_ids=[0], in_anchors=[[0, 0]], in_anchors_rel=[[0, 0]]),
            [[A, B]],
        )
    with pytest.raises(OperatorError, match="within the output"):
        run(lambda x: fn.multi_paste(x, in_ids=[0], output_size=[2, 3]), [[A, B]])
    with pytest.raises(OperatorError, match="'in_ids' of output sample 0 has 2, out of range"):
        run(lambda x: fn.multi_paste(x, in_ids=[2]), [[A, B]])
    with pytest.raises(OperatorError, match=r"'shapes' of output sample 0 must be .* \(1, 2\)"):
        run(lambda x: fn.multi_paste(x, in_ids=[0], shapes=[[2, 2], [1, 1]]), [[A, B]])
    with pytest.raises(OperatorError, match=r"'shapes_rel' of output sample 0 must be in \[0, 1\]"):
        run(lambda x: fn.multi_paste(x, in_ids=[0], shapes_rel=[[1.5, 1.0]]), [[A, B]])
    with pytest.raises(OperatorError, match="within its input"):
        run(lambda x: fn.multi_paste(x, in_ids=[0], in_anchors=[[1, 2]], shapes=[[4, 1]]), [[A, B]])
    with pytest.raises(ValueError, match="exactly one input batch"):
        run(lambda x, y: fn.multi_paste(x, y, in_ids=[0]), [[A, B], [B, A]])
    with pytest.raises(OperatorError, match="must have one size"):
        run(lambda x: fn.multi_paste(x, in_ids=[0]), [[A, B[:3]]])
    with pytest.raises(OperatorError, match="must share a channel count"):
        run(lambda x: fn.multi_paste(x, in_ids=[0, 1]), [[A, B[..., :1]]])
    with pytest.raises(ValueError, match="'output_size' takes"):
        run(lambda x: fn.multi_paste(x, in_ids=[0], output_size=[6]), [[A, B]])
