"""Every plugin against the raw chute.Iterator: same values, same epochs, same state behaviour."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

from chute import Iterator, LastBatchPolicy, TensorListCPU, fn, pipeline_def, types

POLICIES = list(LastBatchPolicy)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """13 small PNG images (random pixels, 3 sizes) in 3 class folders."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for i in range(13):
        folder = root / f"class_{i % 3}"
        folder.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (5 + i % 3, 5, 3), dtype=np.uint8)).save(
            folder / f"{i}.png"
        )
    return str(root)


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """11 one-byte files whose content is their index."""
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(11):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]))
        paths.append(str(path))
    return paths


def image_pipe(root, seed=7, batch_size=4, **reader):
    @pipeline_def(batch_size=batch_size, num_threads=2, seed=seed)
    def pipe():
        encoded, label = fn.readers.file(
            file_root=root, random_shuffle=True, name="Reader", **reader
        )
        image = fn.decoders.image(encoded, output_type=types.RGB)
        normalized = fn.crop_mirror_normalize(
            image,
            dtype=types.FLOAT,
            crop=(4, 4),
            mean=[100.0, 110.0, 120.0],
            std=[50.0, 60.0, 70.0],
            mirror=fn.random.coin_flip(),
        )
        noise = fn.random.uniform(range=[-1.0, 1.0], shape=[3])
        return encoded, image, normalized, noise, label

    return pipe()


IMAGE_OUTPUTS = ["encoded", "image", "normalized", "noise", "label"]


def index_pipe(files, batch_size=4, shard_id=0, num_shards=1, shuffle=False, pad=False):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=3)
    def pipe():
        data, label = fn.readers.file(
            files=files,
            random_shuffle=shuffle,
            shard_id=shard_id,
            num_shards=num_shards,
            pad_last_batch=pad,
            name="Reader",
        )
        return data, label

    return pipe()


def raw_epoch(it):
    """One epoch of the raw chute.Iterator as [(per pipeline: {name: numpy}, real)]."""
    out = []
    for step in it:
        out.append([(_raw(batch), batch.real) for batch in step])
    return out


def _raw(batch):
    return {
        k: v.as_array() if v.is_dense_tensor() and len(v) else [v.at(i) for i in range(len(v))]
        for k, v in batch.items()
    }


def plugin_epoch(adapter, it):
    out = []
    for step in it:
        batches = adapter.unpack(step)
        out.append([({k: adapter.to_numpy(v) for k, v in b.items()}, b.real) for b in batches])
    return out


def assert_same(expected, got):
    """Bit-for-bit equality of two epochs (dtype, shape and bytes of every value)."""
    assert len(expected) == len(got)
    for step_e, step_g in zip(expected, got):
        assert len(step_e) == len(step_g)
        for (values_e, real_e), (values_g, real_g) in zip(step_e, step_g):
            assert real_e == real_g
            assert values_e.keys() == values_g.keys()
            for name in values_e:
                e, g = values_e[name], values_g[name]
                if isinstance(e, list):
                    assert isinstance(g, list), name
                    pairs = list(zip(e, g))
                    assert len(e) == len(g)
                else:
                    pairs = [(e, g)]
                for a, b in pairs:
                    assert a.dtype == b.dtype, name
                    assert a.shape == b.shape, name
                    assert a.tobytes() == b.tobytes(), name


def test_same_values_as_raw_iterator(adapter, images):
    """Same pipeline, same seed: every output bit for bit equal, over two epochs."""
    raw = Iterator(image_pipe(images), IMAGE_OUTPUTS, reader_name="Reader")
    it = adapter.iterator(image_pipe(images), IMAGE_OUTPUTS, reader_name="Reader")
    for _ in range(2):
        expected, got = raw_epoch(raw), plugin_epoch(adapter, it)
        assert len(expected) == 4  # ceil(13 / 4)
        assert_same(expected, got)
        raw.reset()
        it.reset()
    # encoded files and decoded images are ragged: a list of per-sample tensors
    values = got[0][0][0]
    assert isinstance(values["encoded"], list) and isinstance(values["image"], list)
    assert values["normalized"].shape == (4, 3, 4, 4)


def test_pad_ragged(adapter, images):
    """pad_ragged=True: ragged outputs come as one zero-padded tensor."""
    raw = Iterator(image_pipe(images), IMAGE_OUTPUTS, reader_name="Reader")
    it = adapter.iterator(image_pipe(images), IMAGE_OUTPUTS, reader_name="Reader", pad_ragged=True)
    (batch,) = adapter.unpack(next(it))
    (expected,) = next(raw)
    padded = adapter.to_numpy(batch["encoded"])
    assert padded.dtype == np.uint8
    assert padded.shape == (4, max(len(s) for s in expected["encoded"]))
    for i, sample in enumerate(expected["encoded"]):
        assert padded[i, : len(sample)].tobytes() == np.asarray(sample).tobytes()
        assert not padded[i, len(sample) :].any()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("shuffle", "pad"), [(False, False), (True, False), (True, True)])
def test_epochs_match_raw_iterator(adapter, index_files, policy, shuffle, pad):
    """Batches per epoch, real counts, len() and values equal the raw iterator's, 2 shards."""
    for num_shards, batch_size in itertools.product((1, 2), (3, 4)):
        for shard_id in range(num_shards):
            kw = dict(reader_name="Reader", last_batch_policy=policy)
            pipes = [
                index_pipe(index_files, batch_size, shard_id, num_shards, shuffle, pad)
                for _ in range(2)
            ]
            raw = Iterator(pipes[0], ["data", "label"], **kw)
            it = adapter.iterator(pipes[1], ["data", "label"], **kw)
            assert len(it) == len(raw)
            for _ in range(2):
                expected, got = raw_epoch(raw), plugin_epoch(adapter, it)
                assert len(got) == len(it)
                assert_same(expected, got)
                for step in got:
                    ((values, real),) = step
                    n = len(values["label"])
                    if policy is LastBatchPolicy.PARTIAL:
                        assert n == real
                    else:
                        assert n == batch_size
                raw.reset()
                it.reset()


def test_size_instead_of_reader_name(adapter, index_files):
    """size= (samples per epoch) gives the same length and real counts as the raw iterator."""
    for policy in POLICIES:
        raw = Iterator(index_pipe(index_files), ["d", "l"], size=11, last_batch_policy=policy)
        it = adapter.iterator(
            index_pipe(index_files), ["d", "l"], size=11, last_batch_policy=policy
        )
        assert len(it) == len(raw)
        assert_same(raw_epoch(raw), plugin_epoch(adapter, it))


def test_reset_and_auto_reset(adapter, index_files):
    """StopIteration ends an epoch; reset() (or auto_reset) starts the next, same length."""
    it = adapter.iterator(
        index_pipe(index_files, shuffle=True), ["data", "label"], reader_name="Reader"
    )
    first = plugin_epoch(adapter, it)
    with pytest.raises(StopIteration):
        next(it)
    it.reset()
    second = plugin_epoch(adapter, it)
    assert len(first) == len(second) == len(it) == 3
    auto = adapter.iterator(
        index_pipe(index_files, shuffle=True),
        ["data", "label"],
        reader_name="Reader",
        auto_reset=True,
    )
    assert_same(first, plugin_epoch(adapter, auto))
    assert_same(second, plugin_epoch(adapter, auto))  # no reset() needed
    # reset() half-way skips the rest of the epoch
    cut = adapter.iterator(
        index_pipe(index_files, shuffle=True), ["data", "label"], reader_name="Reader"
    )
    next(cut)
    cut.reset()
    assert_same(second, plugin_epoch(adapter, cut))


@pytest.mark.parametrize("taken", [0, 1, 2, 3])
def test_save_and_restore(adapter, index_files, taken):
    """state_dict() after `taken` batches; a fresh iterator restored from it continues exactly."""

    def make():
        return adapter.iterator(
            index_pipe(index_files, shuffle=True),
            ["data", "label"],
            reader_name="Reader",
            prepare_first_batch=False,
        )

    it = make()
    plugin_epoch(adapter, it)  # a whole epoch first: restore into epoch 1
    it.reset()
    for _ in range(taken):
        next(it)
    state = it.state_dict()
    expected = plugin_epoch(adapter, it)
    it.reset()
    expected_next = plugin_epoch(adapter, it)

    restored = make()
    restored.load_state_dict(state)
    assert_same(expected, plugin_epoch(adapter, restored))
    restored.reset()
    assert_same(expected_next, plugin_epoch(adapter, restored))


def test_cpu_zero_copy(adapter):
    """A dense CPU batch becomes a tensor over the TensorList's own memory (where documented)."""
    # 64-byte aligned storage: some frameworks alias only aligned buffers
    storage = np.zeros(4 * 6 * 64 + 64, dtype=np.uint8)
    offset = (-storage.ctypes.data) % 64
    array = storage[offset : offset + 4 * 6 * 4].view(np.float32).reshape(4, 6)
    array[:] = np.arange(24, dtype=np.float32).reshape(4, 6)
    it = adapter.iterator(
        index_pipe([__file__]), ["data", "label"], size=1, prepare_first_batch=False
    )
    tensor = adapter.convert(it, TensorListCPU(array))
    assert adapter.to_numpy(tensor).tolist() == array.tolist()
    shares = adapter.data_pointer(tensor) == array.ctypes.data
    assert shares == adapter.zero_copy
    if shares:
        array[0, 0] = 99.0  # the tensor sees the change: same memory
        assert adapter.to_numpy(tensor)[0, 0] == 99.0


def test_empty_partial_batch_keeps_dtype(adapter, index_files):
    """A shard with no samples gets empty PARTIAL batches with the outputs' dtype and ndim."""
    # 1 file over 2 shards: shard 0 is empty, yet it yields as many batches as shard 1
    it = adapter.iterator(
        index_pipe(index_files[:1], batch_size=2, shard_id=0, num_shards=2),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy="partial",
    )
    ((step,),) = [adapter.unpack(s) for s in it]
    assert step.real == 0
    data, label = adapter.to_numpy(step["data"]), adapter.to_numpy(step["label"])
    assert data.shape == (0, 0) and data.dtype == np.uint8
    assert label.shape == (0, 0) and label.dtype == np.int32
