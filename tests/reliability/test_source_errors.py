"""A serial external_source whose callable fails names the sample, as the parallel one does."""

from __future__ import annotations

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def


def test_serial_per_sample_source_error_names_the_sample():
    def source(info):
        if info.idx_in_epoch == 5:
            raise ValueError("bad record")
        return np.full((2,), info.idx_in_epoch, np.int32)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=0)
    def pipe():
        return fn.external_source(source=source, batch=False, name="src")

    p = pipe()
    p.build()
    (first,) = p.run()
    assert first.as_array()[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(OperatorError) as info:
        p.run()
    err = info.value
    assert err.sample == 1 and err.iteration == 1
    message = str(err)
    assert "fn.external_source" in message and "'src'" in message
    assert "sample 1 of iteration 1 (idx_in_epoch 5)" in message
    assert "ValueError: bad record" in message
    assert isinstance(err.__cause__, ValueError)
    p.close()
