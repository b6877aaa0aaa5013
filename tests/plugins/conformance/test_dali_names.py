"""DALI's iterator names in every plugin, used as DALI's docs show, with the values written out.

The data set is DALI's docstring example: samples 1..7 (here files holding
the bytes 1..7), batch size 2. TensorFlow has no DALIGenericIterator (its
DALI names are tested in tests/plugins/tf).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from chute import LastBatchPolicy, fn, pipeline_def


@pytest.fixture(scope="module")
def seven_files(tmp_path_factory):
    """7 one-byte files holding 1..7."""
    root = tmp_path_factory.mktemp("seven")
    paths = []
    for i in range(1, 8):
        path = root / f"{i}.bin"
        path.write_bytes(bytes([i]))
        paths.append(str(path))
    return paths


@pytest.fixture
def dali(adapter):
    if adapter.name == "tf":
        pytest.skip("chute.tf has DALIDataset, not DALIGenericIterator (tests/plugins/tf)")
    return adapter


def seven_pipe(files, pad=False, shard_id=0, num_shards=1):
    @pipeline_def(batch_size=2, num_threads=1, seed=3)
    def pipe():
        data, label = fn.readers.file(
            files=files,
            pad_last_batch=pad,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )
        return data, label

    return pipe()


def steps(adapter, it):
    """Every step as a list (one per pipeline) of {name: numpy}; jax's one dict becomes a list of one."""
    out = []
    for step in it:
        dicts = adapter.unpack(step)
        assert isinstance(dicts, list)
        out.append([{k: adapter.to_numpy(v) for k, v in d.items()} for d in dicts])
    return out


def data_of(adapter, it):
    return [s[0]["data"].ravel().tolist() for s in steps(adapter, it)]


# the last batch per DALI's docstring, for each policy and pad_last_batch
DOC_EXAMPLE = [
    (LastBatchPolicy.FILL, True, [[1, 2], [3, 4], [5, 6], [7, 7]], 7, 4),
    (LastBatchPolicy.FILL, False, [[1, 2], [3, 4], [5, 6], [7, 1]], 8, 4),
    (LastBatchPolicy.DROP, True, [[1, 2], [3, 4], [5, 6]], 7, 3),
    (LastBatchPolicy.DROP, False, [[1, 2], [3, 4], [5, 6]], 7, 3),
    (LastBatchPolicy.PARTIAL, True, [[1, 2], [3, 4], [5, 6], [7]], 7, 4),
    (LastBatchPolicy.PARTIAL, False, [[1, 2], [3, 4], [5, 6], [7]], 8, 4),
]


@pytest.mark.parametrize(("policy", "pad", "expected", "size", "length"), DOC_EXAMPLE)
def test_docstring_example(dali, seven_files, policy, pad, expected, size, length):
    if dali.name == "jax" and policy is LastBatchPolicy.PARTIAL:
        with pytest.raises(ValueError, match="PARTIAL"):
            dali.module.DALIGenericIterator(
                seven_pipe(seven_files, pad),
                ["data", "label"],
                reader_name="Reader",
                last_batch_policy=policy,
            )
        return
    it = dali.module.DALIGenericIterator(
        [seven_pipe(seven_files, pad)],
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=policy,
    )
    assert (it.size, it._size, len(it), it.batch_size) == (size, size, length, 2)
    assert data_of(dali, it) == expected
    with pytest.raises(StopIteration):
        next(it)


def test_output_structure_one_dict_per_pipeline(dali, seven_files):
    """Two pipelines (shards 0 and 1): DALI's list of two dicts (jax: arrays stacked per pipeline)."""
    pipes = [seven_pipe(seven_files, shard_id=i, num_shards=2) for i in range(2)]
    it = dali.module.DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader")
    first = next(it)
    if dali.name == "jax":
        assert sorted(first) == ["data", "label"]
        # shard 0 holds 1..3, shard 1 holds 4..7: one leading axis per pipeline, as jax.pmap takes
        assert np.asarray(first["data"]).tolist() == [[[1], [2]], [[4], [5]]]
        return
    assert isinstance(first, list) and len(first) == 2
    assert [sorted(d) for d in first] == [["data", "label"]] * 2
    assert [dali.to_numpy(d["data"]).ravel().tolist() for d in first] == [[1, 2], [4, 5]]


def test_classification_iterator_names_data_and_label(dali, seven_files):
    if dali.name == "jax":
        pytest.skip("DALI's JAX plugin has no DALIClassificationIterator")
    it = dali.module.DALIClassificationIterator(seven_pipe(seven_files), reader_name="Reader")
    (batch,) = next(it)
    assert sorted(batch) == ["data", "label"]
    assert dali.to_numpy(batch["data"]).ravel().tolist() == [1, 2]
    assert dali.to_numpy(batch["label"]).ravel().tolist() == [0, 1]


def test_auto_reset_values(dali, seven_files):
    make = dali.module.DALIGenericIterator
    for value, expected in [("yes", True), (True, True), ("no", False), (None, False)]:
        it = make(
            seven_pipe(seven_files), ["data", "label"], reader_name="Reader", auto_reset=value
        )
        assert it.auto_reset is expected
    with pytest.raises(ValueError, match="auto_reset"):
        make(seven_pipe(seven_files), ["data", "label"], reader_name="Reader", auto_reset="maybe")


def test_iter_after_an_ended_epoch_starts_the_next(dali, seven_files):
    """DALI: with auto_reset off, a new `for` loop over the iterator runs the next epoch."""
    it = dali.module.DALIGenericIterator(
        seven_pipe(seven_files, pad=True), ["data", "label"], reader_name="Reader"
    )
    epochs = [data_of(dali, it) for _ in range(2)]
    assert epochs == [[[1, 2], [3, 4], [5, 6], [7, 7]]] * 2


def test_fill_last_batch_is_deprecated(dali, seven_files):
    if dali.name == "jax":
        pytest.skip("DALI's JAX iterator has no fill_last_batch")
    with pytest.warns(Warning, match="Please do not use `fill_last_batch`"):
        it = dali.module.DALIGenericIterator(
            seven_pipe(seven_files),
            ["data", "label"],
            reader_name="Reader",
            fill_last_batch=False,
        )
    assert it.policy is LastBatchPolicy.PARTIAL
    assert data_of(dali, it)[-1] == [7]


def test_size_without_reader_name_warns_as_dali(dali, seven_files):
    with pytest.warns(Warning, match="Please set `reader_name`"):
        it = dali.module.DALIGenericIterator(
            seven_pipe(seven_files),
            ["data", "label"],
            size=4,
            last_batch_policy=LastBatchPolicy.DROP,
        )
    assert (it.size, len(it)) == (4, 2)
    assert data_of(dali, it) == [[1, 2], [3, 4]]


def test_argument_errors(dali, seven_files):
    make = dali.module.DALIGenericIterator
    with pytest.raises(ValueError, match="reader_name or size"):
        make(seven_pipe(seven_files), ["data", "label"], size=7, reader_name="Reader")
    with pytest.raises(ValueError, match="last_batch_padded"):
        make(
            seven_pipe(seven_files), ["data", "label"], reader_name="Reader", last_batch_padded=True
        )
    with pytest.raises(ValueError, match="size cannot be 0"):
        make(seven_pipe(seven_files), ["data", "label"], size=0)
    with pytest.raises(ValueError, match="repeated"):
        make(seven_pipe(seven_files), ["data", "data"], reader_name="Reader")


# DALI 2.4's signatures (nvidia/dali/plugin/{pytorch,paddle,jax}), parameter names in order
DALI_KEYWORDS = [
    "size",
    "reader_name",
    "auto_reset",
    "fill_last_batch",
    "dynamic_shape",
    "last_batch_padded",
    "last_batch_policy",
    "prepare_first_batch",
]
DALI_SIGNATURES = {
    "DALIGenericIterator": ["pipelines", "output_map", *DALI_KEYWORDS],
    "DALIClassificationIterator": ["pipelines", *DALI_KEYWORDS],
    "DALIRaggedIterator": [
        "pipelines", "output_map", "size", "reader_name", "output_types", *DALI_KEYWORDS[2:],
    ],
}  # fmt: skip
JAX_SIGNATURE = [
    "pipelines", "output_map", "size", "reader_name", "auto_reset", "last_batch_padded",
    "last_batch_policy", "prepare_first_batch", "sharding", "pad_ragged",  # pad_ragged: chute's
]  # fmt: skip


def test_signatures_are_dalis_and_a_misspelled_keyword_is_named(dali, seven_files):
    names = {"torch": DALI_SIGNATURES, "paddle": dict(list(DALI_SIGNATURES.items())[:2])}.get(
        dali.name, {"DALIGenericIterator": JAX_SIGNATURE}
    )
    for name, expected in names.items():
        params = inspect.signature(getattr(dali.module, name)).parameters
        assert list(params) == expected, name
        assert params["size"].default == -1 and params["prepare_first_batch"].default is True
    # positional as in DALI: size is the third argument
    it = dali.module.DALIGenericIterator(seven_pipe(seven_files), ["data", "label"], 4)
    assert it.size == 4
    with pytest.raises(
        TypeError, match="unexpected argument 'reader_nmae'; did you mean 'reader_name'"
    ):
        dali.module.DALIGenericIterator(seven_pipe(seven_files), ["data"], reader_nmae="Reader")


@pytest.mark.parametrize("taken", [0, 1, 3])
def test_checkpoints_restore_the_next_batch(dali, seven_files, taken):
    """checkpoints(): one serialized state per pipeline; restoring continues with the next batch."""

    def make():
        return dali.module.DALIGenericIterator(
            seven_pipe(seven_files, pad=True), ["data", "label"], reader_name="Reader"
        )

    it = make()
    for _ in range(taken):
        next(it)
    checkpoints = it.checkpoints()
    assert isinstance(checkpoints, list) and len(checkpoints) == 1
    assert isinstance(checkpoints[0], str)
    rest = data_of(dali, it)
    assert rest == [[1, 2], [3, 4], [5, 6], [7, 7]][taken:]
    restored = make()
    restored.load_checkpoints(checkpoints)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert data_of(dali, restored) == rest
