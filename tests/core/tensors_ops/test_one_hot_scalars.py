"""fn.one_hot against np.eye: appended and inserted axes, scalars, out-of-range classes."""

from __future__ import annotations

import numpy as np

from chute import fn, pipeline_def, types


def run(samples, **kw):
    @pipeline_def(batch_size=len(samples), num_threads=1, device_id=None, seed=0)
    def pipe():
        x = fn.external_source(source=lambda: samples, layout="HW" if samples[0].ndim == 2 else "")
        return fn.one_hot(x, **kw)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [out.at(i) for i in range(len(samples))], out


def test_scalar_labels_give_vectors():
    # one-element samples are scalars unless axis is given (DALI's legacy rule)
    labels = [np.array([2], np.int32), np.array([0], np.int32), np.array([7], np.int32)]
    outs, _ = run(labels, num_classes=4)
    np.testing.assert_array_equal(np.stack(outs), [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    assert outs[0].dtype == np.float32
    outs, _ = run(labels[:1], num_classes=3, axis=-1)
    np.testing.assert_array_equal(outs[0], [[0, 0, 1]])


def test_masks_with_inserted_axis_values_and_layout():
    rng = np.random.default_rng(0)
    masks = [rng.integers(0, 3, (4, 5)).astype(np.uint8) for _ in range(2)]
    outs, batch = run(
        masks, num_classes=3, axis=0, axis_name="C", on_value=5, off_value=-1, dtype=types.INT16
    )
    for m, o in zip(masks, outs):
        expected = np.where(np.eye(3, dtype=bool)[m].transpose(2, 0, 1), 5, -1)
        np.testing.assert_array_equal(o, expected)
        assert o.dtype == np.int16 and o.shape == (3, 4, 5)
    assert batch.layout() == "CHW"
    outs, _ = run(masks, num_classes=3)
    np.testing.assert_array_equal(outs[1], np.eye(3, dtype=np.float32)[masks[1]])
