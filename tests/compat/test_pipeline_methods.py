"""Pipeline methods as DALI's documentation uses them: current, reader_meta, feed_input,
schedule_run/outputs, build, checkpoints, set_outputs, device fallback."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from PIL import Image

from chute import Pipeline, fn, ops, pipeline_def, types
from chute.gpu.runtime import gpu_available


@pytest.fixture
def images(tmp_path):
    for i, label in enumerate(["a", "b"]):
        (tmp_path / label).mkdir()
        for j in range(3):
            pixels = np.full((20 + 4 * j, 30, 3), 40 * i + 10 * j, np.uint8)
            pixels[:, : 10 + j] = 255
            Image.fromarray(pixels).save(tmp_path / label / f"{j}.png")
    return tmp_path


def test_current_is_the_pipeline_being_defined():
    assert Pipeline.current() is None
    pipe = Pipeline(batch_size=1)
    with pipe:
        assert Pipeline.current() is pipe
    assert Pipeline.current() is None
    seen = []

    @pipeline_def(batch_size=1)
    def decorated():
        seen.append(Pipeline.current())
        return fn.random.uniform(range=(0.0, 1.0))

    p = decorated()
    assert seen == [p]


def test_reader_meta_and_epoch_size_of_one_or_all_readers(images):
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        a, _ = fn.readers.file(file_root=str(images), name="A", num_shards=2, shard_id=1)
        b, _ = fn.readers.file(file_root=str(images), name="B", pad_last_batch=True, num_shards=4)
        return a, b

    p = pipe()
    assert p.epoch_size("A") == 6
    assert p.epoch_size() == {"A": 6, "B": 6}
    meta = p.reader_meta()
    assert set(meta) == {"A", "B"}
    dali_keys = {
        "epoch_size": 6,
        "epoch_size_padded": 6,
        "number_of_shards": 2,
        "shard_id": 1,
        "pad_last_batch": False,
        "stick_to_shard": False,
    }
    assert {k: meta["A"][k] for k in dali_keys} == dali_keys
    assert meta["B"]["epoch_size_padded"] == 8  # 4 shards of 2
    assert p.reader_meta("B") == meta["B"]
    with pytest.raises(KeyError, match="readers: A, B"):
        p.reader_meta("C")


def test_feed_input_keeps_the_layout_and_takes_cuda_stream():
    pipe = Pipeline(batch_size=2, num_threads=1, exec_async=False)
    with pipe:
        x = fn.external_source(name="x")
        pipe.set_outputs(fn.flip(x, horizontal=1))
    batch = [np.arange(6, dtype=np.uint8).reshape(1, 2, 3), np.zeros((1, 2, 3), np.uint8)]
    pipe.feed_input("x", batch, layout="HWC", cuda_stream=0)
    (out,) = pipe.run()
    assert out.layout() == "HWC"
    assert out.at(0).tolist() == [[[3, 4, 5], [0, 1, 2]]]
    from chute.tensors import TensorListCPU

    pipe.feed_input(x, TensorListCPU(np.ones((2, 1, 1, 3), np.uint8), "HWC"))
    (out,) = pipe.run()
    assert out.layout() == "HWC"  # from the TensorList
    assert out.as_array().sum() == 6


def test_schedule_run_then_outputs_share_outputs_and_release_outputs():
    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(
            source=lambda info: np.array([info.idx_in_epoch], np.int32), batch=False
        )

    p = pipe()
    with pytest.raises(RuntimeError, match="call schedule_run"):
        p.outputs()  # builds nothing, schedules nothing
    p.schedule_run()
    p.schedule_run()
    (first,) = p.outputs()
    (second,) = p.share_outputs()
    p.release_outputs()
    assert first.as_array().ravel().tolist() == [0, 1]
    assert second.as_array().ravel().tolist() == [2, 3]
    (third,) = p.run()
    assert third.as_array().ravel().tolist() == [4, 5]


def test_build_is_idempotent_and_implicit():
    pipe = Pipeline(batch_size=1)
    with pipe:
        pipe.set_outputs(fn.random.coin_flip(probability=1.0))
    assert (pipe.run()[0].at(0) == 1).all()  # run() builds
    executor = pipe._executor
    pipe.build()
    pipe.build()
    assert pipe._executor is executor


def test_checkpoint_restores_the_next_batch(images):
    @pipeline_def(batch_size=2, num_threads=1, seed=5, enable_checkpointing=True)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(images), random_shuffle=True, name="R")
        return labels, fn.random.uniform(range=(0.0, 1.0))

    p = pipe()
    p.run()
    assert p.is_restored_from_checkpoint is False
    text = p.checkpoint(iterator_data={"epoch": 0})
    assert isinstance(text, str)
    want = [tuple(b.as_array().ravel().tolist()) for b in p.run()]
    q = pipe(checkpoint=text)
    got = [tuple(b.as_array().ravel().tolist()) for b in q.run()]
    assert got == want
    assert q.is_restored_from_checkpoint is True
    assert q.iterator_data == {"epoch": 0}

    plain = Pipeline(batch_size=1)
    with plain:
        plain.set_outputs(fn.random.coin_flip())
    with pytest.raises(RuntimeError, match="enable_checkpointing=True"):
        plain.checkpoint()
    with pytest.raises(ValueError, match="not a chute checkpoint"):
        pipe(checkpoint="{}").build()


def test_a_checkpoint_carries_the_random_streams_to_a_pipeline_of_another_seed(images, tmp_path):
    # DALI's tutorial restores without fixing the seed: the random operators continue as
    # they were, as DALI restores its generators
    @pipeline_def(batch_size=2, num_threads=1, enable_checkpointing=True)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(images), random_shuffle=True, name="R")
        return labels, fn.random.uniform(range=(0.0, 1.0)), fn.random.coin_flip()

    p = pipe()
    for _ in range(3):
        p.run()
    q = pipe(checkpoint=p.checkpoint(), seed=p.seed + 1)  # the checkpoint's seed wins
    q.build()
    assert q.seed == p.seed
    for _ in range(4):
        want = [b.as_array().tolist() for b in p.run()]
        assert [b.as_array().tolist() for b in q.run()] == want
    path = tmp_path / "checkpoint"
    text = p.checkpoint(str(path))  # DALI's filename argument
    assert path.read_bytes() == text.encode()
    from_file = pipe(checkpoint=path.read_bytes())  # DALI writes bytes; read them back
    assert [b.as_array().tolist() for b in from_file.run()] == [
        b.as_array().tolist() for b in p.run()
    ]
    state = p.state_dict()
    assert state["seed"] == p.seed
    with pytest.raises(ValueError, match="field 'seed' must be a non-negative integer"):
        p.load_state_dict({**state, "seed": "x"})


class LegacyPipe(Pipeline):
    """DALI's legacy style: ops in __init__, set_outputs from the constructor."""

    def __init__(self):
        super().__init__(batch_size=2, num_threads=1, seed=3)
        self.source = ops.ExternalSource(
            source=lambda info: np.full(2, info.idx_in_epoch, np.int32), batch=False
        )
        self.cast = ops.Cast(dtype=types.FLOAT)
        with self:
            self.set_outputs(self.cast(self.source()) * 0.5)


def test_set_outputs_in_legacy_use():
    (out,) = LegacyPipe().run()
    assert out.dtype == np.float32
    assert out.as_array().tolist() == [[0.0, 0.0], [0.5, 0.5]]

    pipe = Pipeline(batch_size=1)
    with pipe:
        x = fn.random.coin_flip(probability=1.0)
    pipe.set_outputs(x)  # after the block, as DALI allows
    assert pipe.run()[0].at(0) == 1
    with pytest.raises(TypeError, match="output 0 is a int"):
        pipe.set_outputs(3)


no_gpu = pytest.mark.skipif(gpu_available(), reason="the fallback is for machines without a GPU")


def _dali_style(folder, **kwargs):
    @pipeline_def(batch_size=3, num_threads=2, device_id=0, seed=1, **kwargs)
    def pipe(device):
        jpegs, labels = fn.readers.file(file_root=str(folder))
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu")
        images = fn.resize(images, resize_x=16, resize_y=12, device=device)
        return images, labels.gpu() if device == "gpu" else labels

    return pipe


@no_gpu
def test_a_gpu_pipeline_runs_on_the_cpu_with_one_warning(images):
    pipe = _dali_style(images)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = pipe("gpu")
        p.build()
    moved = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(moved) == 1
    text = str(moved[0].message)
    assert "decoders.image (mixed)" in text and "resize (gpu)" in text and "to_gpu (mixed)" in text
    images_out, labels = p.run()
    cpu_images, cpu_labels = pipe("cpu").run()
    assert type(images_out).__name__ == "TensorListCPU"
    assert images_out.shape() == [(12, 16, 3)] * 3
    np.testing.assert_array_equal(images_out.as_array(), cpu_images.as_array())
    np.testing.assert_array_equal(labels.as_array(), cpu_labels.as_array())


@no_gpu
def test_the_fallback_can_be_turned_off(images, monkeypatch):
    with pytest.raises(RuntimeError, match="GPU"):
        _dali_style(images, device_fallback=False)("gpu").build()
    monkeypatch.setenv("CHUTE_DEVICE_FALLBACK", "0")
    with pytest.raises(RuntimeError, match="GPU"):
        _dali_style(images)("gpu").build()
    # an explicit argument wins over the environment
    _dali_style(images, device_fallback=True)("gpu").run()
