"""fn.readers.file and chute.Iterator: DESIGN.md's epoch invariants over a sweep, state, shuffling."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from chute import Iterator, LastBatchPolicy, fn, pipeline_def
from chute.ops.readers.sharding import EpochPlan

POLICIES = list(LastBatchPolicy)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """23 small files, content = their index, in 3 class folders."""
    root = tmp_path_factory.mktemp("files")
    paths = []
    for i in range(23):
        cls = root / f"class_{i % 3}"
        cls.mkdir(exist_ok=True)
        p = cls / f"{i:03d}.jpg"
        p.write_bytes(bytes([i]))
        paths.append(str(p))
    return root, paths


def reader_pipe(files, batch_size, shard_id=0, num_shards=1, shuffle=False, pad=False, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=5, exec_pipelined=False)
    def pipe():
        data, label = fn.readers.file(
            files=files,
            random_shuffle=shuffle,
            shard_id=shard_id,
            num_shards=num_shards,
            pad_last_batch=pad,
            name="Reader",
            **kw,
        )
        return data, label

    return pipe()


def epoch_of(it):
    """Every batch of one epoch as (sample ids, real count)."""
    out = []
    for (batch,) in it:
        ids = [int(batch["data"].at(i)[0]) for i in range(len(batch["data"]))]
        out.append((ids, batch.real))
    return out


def test_epoch_plan_sweep():
    """The pure plan: all invariants over N 1..23, S 1..4, B 1..5, policies, shuffle, padding."""
    for n, s, b, policy, shuffle, pad in itertools.product(
        range(1, 24), range(1, 5), range(1, 6), POLICIES, (False, True), (False, True)
    ):
        plans = [EpochPlan(n, b, s, i, shuffle, 3, pad, True, policy) for i in range(s)]
        counts = {p.batches_per_epoch for p in plans}
        assert len(counts) == 1  # invariant 1
        k = counts.pop()
        seen = []
        for p in plans:
            for j in range(k):
                slots = p.batch(0, j)
                assert len(slots) == b
                real = [sl.index for sl in slots if sl.real]
                # reals come first, fillers after (invariant 3: counted, never mixed in)
                assert [sl.real for sl in slots] == sorted((sl.real for sl in slots), reverse=True)
                seen += real
        if policy is LastBatchPolicy.DROP:
            assert len(seen) == len(set(seen))  # invariant 2 (DROP)
        else:
            assert sorted(seen) == list(range(n))  # invariant 2


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    ("shuffle", "pad"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_iterator_invariants_over_shards(dataset, policy, shuffle, pad):
    _, paths = dataset
    for n, s, b in itertools.product((1, 4, 7, 23), (1, 2, 3, 4), (1, 3, 5)):
        if policy is LastBatchPolicy.DROP and (n // s) // b == 0:
            continue
        files = paths[:n]
        its = [
            Iterator(
                reader_pipe(files, b, i, s, shuffle, pad),
                ["data", "label"],
                reader_name="Reader",
                last_batch_policy=policy,
            )
            for i in range(s)
        ]
        lengths = {len(it) for it in its}
        assert len(lengths) == 1
        real_ids = []
        for epoch in range(2):
            per_shard = [epoch_of(it) for it in its]
            assert all(len(e) == len(its[0]) for e in per_shard)  # invariant 1, every epoch
            epoch_ids = []
            for batches in per_shard:
                for ids, real in batches:
                    if policy is LastBatchPolicy.FILL:
                        assert len(ids) == b
                    if policy is LastBatchPolicy.PARTIAL:
                        assert len(ids) == real
                    if policy is LastBatchPolicy.DROP:
                        assert real == len(ids) == b
                    epoch_ids += ids[:real]
            if policy is LastBatchPolicy.DROP:
                assert len(epoch_ids) == len(set(epoch_ids))
            else:
                assert sorted(epoch_ids) == list(range(n)), (n, s, b)
            real_ids.append(epoch_ids)
            for it in its:
                it.reset()
        if shuffle and n >= 7 and policy is not LastBatchPolicy.DROP:
            assert real_ids[0] != real_ids[1]  # a new permutation each epoch
        for it in its:
            for p in it.pipelines:
                p.close()


def test_file_root_labels_and_reader_meta(dataset):
    root, paths = dataset

    @pipeline_def(batch_size=4, num_threads=2, seed=0)
    def pipe():
        data, label = fn.readers.file(file_root=str(root), name="r", num_shards=2, shard_id=1)
        return data, label, fn.get_property(data, key="source_info")

    p = pipe()
    meta = p.reader_meta("r")
    assert meta["epoch_size"] == 23 and meta["number_of_shards"] == 2 and meta["shard_id"] == 1
    assert p.epoch_size("r") == 23
    data, label, info = p.run()
    # shard 1 starts at position floor(23/2) = 11 of the sorted listing (class folders)
    listing = sorted(paths, key=lambda q: (os.path.basename(os.path.dirname(q)), q))
    assert info.at(0).item() == listing[11]
    assert label.dtype == np.int32 and label.at(0).shape == (1,)
    assert int(label.at(0)[0]) == int(os.path.basename(os.path.dirname(listing[11]))[-1])
    assert data.dtype == np.uint8 and data.at(0).ndim == 1
    p.close()


def test_file_list_and_io_file_read(dataset, tmp_path):
    root, paths = dataset
    lst = tmp_path / "list.txt"
    lst.write_text(
        "".join(f"{os.path.relpath(q, root)} {i * 10}\n" for i, q in enumerate(paths[:5]))
    )

    @pipeline_def(batch_size=5, num_threads=2, seed=0)
    def pipe():
        data, label = fn.readers.file(file_root=str(root), file_list=str(lst))
        names = fn.external_source(source=lambda: [np.array(q) for q in paths[:5]])
        raw = fn.io.file.read(names)
        return data, label, raw, fn.get_property(raw, key="source_info")

    data, label, raw, info = pipe().run()
    assert [int(label.at(i)[0]) for i in range(5)] == [0, 10, 20, 30, 40]
    assert [int(raw.at(i)[0]) for i in range(5)] == [0, 1, 2, 3, 4]
    assert info.as_array().tolist() == paths[:5]  # strings as a pipeline output


@pytest.mark.parametrize("policy", POLICIES)
def test_state_dict_resumes_mid_epoch_and_at_epoch_end(dataset, policy):
    _, paths = dataset

    def make():
        @pipeline_def(batch_size=3, num_threads=2, seed=9)
        def pipe():
            data, _ = fn.readers.file(files=paths[:10], random_shuffle=True, name="Reader")
            return data, fn.random.uniform(range=(0, 1))

        return Iterator(
            pipe(), ["data", "u"], reader_name="Reader", last_batch_policy=policy, auto_reset=True
        )

    def flat(batches):
        return [
            (b[0]["data"].as_padded().tolist(), b[0]["u"].as_padded().tolist()) for b in batches
        ]

    reference = make()
    ref = []
    for _ in range(3):
        ref += [next(reference) for _ in range(len(reference))]
        with pytest.raises(StopIteration):
            next(reference)
    k = len(reference)
    for cut in (1, k, k + 2):  # mid-epoch, at the epoch boundary, in the second epoch
        it = make()
        taken = []
        while len(taken) < cut:
            try:
                taken.append(next(it))
            except StopIteration:
                pass
        state = it.state_dict()
        for p in it.pipelines:
            p.close()
        resumed = make()
        resumed.load_state_dict(state)
        rest = []
        while len(taken) + len(rest) < len(ref):
            try:
                rest.append(next(resumed))
            except StopIteration:
                pass
        assert flat(taken + rest) == flat(ref), cut


def test_reset_mid_epoch_starts_next_epoch(dataset):
    _, paths = dataset
    it = Iterator(reader_pipe(paths[:9], 2), ["data", "label"], reader_name="Reader")
    next(it)
    it.reset()
    ids = [i for ids, _ in epoch_of(it) for i in ids]
    assert len(ids) == 10 and sorted(set(ids)) == list(range(9))


def test_size_based_iteration_for_external_source():
    @pipeline_def(batch_size=4, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source=lambda info: np.int32(info.idx_in_epoch), batch=False)

    it = Iterator(pipe(), ["x"], size=10, last_batch_policy=LastBatchPolicy.PARTIAL)
    assert len(it) == 3
    sizes = [(len(b[0]["x"]), b[0].real) for b in it]
    assert sizes == [(4, 4), (4, 4), (2, 2)]


def test_stopiteration_based_epochs_with_fill():
    data = [[np.int32(i)] * 3 for i in range(2)] + [[np.int32(9)]]

    @pipeline_def(batch_size=3, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source=data)

    it = Iterator(pipe(), ["x"], auto_reset=True)
    epoch = list(it)
    assert [len(b[0]["x"]) for b in epoch] == [3, 3, 3]
    assert epoch[-1][0].real == 1
    assert len(list(it)) == 3  # auto_reset started the next epoch


def test_pipeline_reset_loses_no_prefetched_reader_batch(dataset):
    _, paths = dataset

    @pipeline_def(batch_size=2, num_threads=2, seed=0, prefetch_queue_depth=3)
    def pipe():
        data, _ = fn.readers.file(files=paths[:6], name="Reader")
        return data

    p = pipe()
    first = int(p.run()[0].at(0)[0])
    import time

    time.sleep(0.2)  # let the reader run ahead
    p.reset()
    nxt = [int(p.run()[0].at(i)[0]) for i in range(1)]
    assert (first, nxt[0]) == (0, 2)  # the batch after the delivered one, not one read ahead
    p.close()


def test_default_shuffle_is_the_same_wherever_the_dataset_lives(tmp_path):
    def order(root):
        for c in range(3):
            (root / f"class{c}").mkdir(parents=True)
            for i in range(5):
                (root / f"class{c}" / f"{i}.jpg").write_bytes(bytes([c, i]))

        @pipeline_def(batch_size=15, num_threads=1, device_id=None)
        def pipe():
            data, _ = fn.readers.file(file_root=str(root), random_shuffle=True)
            return data

        p = pipe()
        p.build()
        (batch,) = p.run()
        return [bytes(batch.at(i)) for i in range(len(batch))]

    first = order(tmp_path / "here")
    assert first == order(tmp_path / "somewhere" / "else")
    assert first != sorted(first)  # shuffled


def _write_blobs(tmp_path, sizes, seed):
    """Files f0.bin, f1.bin, ... of random bytes of the given sizes: (their bytes, paths)."""
    rng = np.random.default_rng(seed)
    blobs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in sizes]
    paths = []
    for i, blob in enumerate(blobs):
        paths.append(str(tmp_path / f"f{i}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(blob)
    return blobs, paths


@pytest.mark.parametrize("dont_use_mmap", [None, False, True])  # None: unset (read)
def test_mapped_and_read_files_give_the_same_bytes(tmp_path, dont_use_mmap):
    sizes = [0, 100, 16 * 1024 - 1, 16 * 1024, 70_001]  # read below 16 KiB, mapped above
    blobs, paths = _write_blobs(tmp_path, sizes, 3)

    @pipeline_def(batch_size=len(paths), num_threads=1, device_id=None)
    def pipe():
        kw = {} if dont_use_mmap is None else {"dont_use_mmap": dont_use_mmap}
        data, _ = fn.readers.file(files=paths, **kw)
        return data

    p = pipe()
    p.build()
    for _ in range(3):  # later epochs read into the memory of dropped batches
        (out,) = p.run()
        assert [np.asarray(out.at(i)).tobytes() for i in range(len(paths))] == blobs
        assert not any(np.asarray(out.at(i)).flags.writeable for i in range(len(paths)))
        del out


@pytest.mark.parametrize("use_mmap", [False, True])
def test_file_errors_name_the_file(tmp_path, use_mmap):
    from chute.ops.readers.local_files import read_file

    with pytest.raises(OSError, match="missing.jpg"):
        read_file(str(tmp_path / "missing.jpg"), use_mmap=use_mmap)
    with pytest.raises(OSError, match="Is a directory"):
        read_file(str(tmp_path), use_mmap=use_mmap)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no procfs")
def test_files_whose_size_says_zero_are_read_whole():
    from chute.ops.readers.local_files import read_file

    assert os.stat("/proc/self/status").st_size == 0
    text = read_file("/proc/self/status").tobytes()
    assert text.startswith(b"Name:") and text.endswith(b"\n") and len(text) > 200


@pytest.mark.parametrize("native", [True, False])
def test_read_files_reads_a_batch_as_read_file_does(tmp_path, monkeypatch, native):
    from chute.ops.readers import local_files as file_reader

    if not native:
        monkeypatch.setattr(file_reader, "_native_read", None)
    blobs, paths = _write_blobs(tmp_path, (1, 4096, 70_001), 5)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    asked = [*paths, str(tmp_path / "missing.jpg"), str(tmp_path), str(empty)]
    if os.path.exists("/proc/self/status"):  # says 0 bytes: read whole all the same
        asked.append("/proc/self/status")
    out = file_reader.read_files(asked)
    assert [o.tobytes() for o in out[:3]] == blobs
    assert all(isinstance(o, np.ndarray) and not o.flags.writeable for o in out[:3])
    assert "missing.jpg" in out[3] and "No such file" in out[3]
    assert str(tmp_path) in out[4] and "Is a directory" in out[4]
    assert out[5].size == 0
    if len(asked) > 6:
        assert out[6].tobytes().startswith(b"Name:")
    if native and file_reader._native_read is None:
        pytest.skip("chute.runtime._native is not built: only the Python path ran")


def _reader_node(plan):
    return next(n for n in plan.nodes if n.schema.name == "readers.file")


@pytest.mark.parametrize(
    "graph, in_processes",
    [
        (lambda jpegs: [fn.decoders.image(jpegs, device="mixed")], True),
        (lambda jpegs: [fn.decoders.image_random_crop(jpegs, device="mixed")], True),
        # another reader of the bytes, the bytes returned, or a CPU decoder: read here
        (
            lambda jpegs: [fn.decoders.image(jpegs, device="mixed"), fn.peek_image_shape(jpegs)],
            False,
        ),
        (lambda jpegs: [fn.decoders.image(jpegs, device="mixed"), jpegs], False),
        (lambda jpegs: [fn.decoders.image(jpegs, device="cpu")], False),
        (lambda jpegs: [fn.decoders.image_crop(jpegs, crop=(4, 4))], False),
    ],
)
def test_files_for_gpu_decoders_are_read_in_helper_processes(tmp_path, graph, in_processes):
    from chute.executor.plan import build_plan

    (tmp_path / "c").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "c" / "x.jpg")

    @pipeline_def(batch_size=1, num_threads=1, device_id=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(tmp_path), name="Reader")
        return (*graph(jpegs), labels)

    from chute.graph.passes import ReadInProcesses

    plan = build_plan(pipe()._outputs)
    hint = plan.hints.get(_reader_node(plan).id, ReadInProcesses)
    assert (hint is not None) is in_processes


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create (Linux)")
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_reader_with_helper_processes_gives_the_same_batches(tmp_path, on_error):
    from chute.executor.plan import build_plan

    for i, name in enumerate(["a", "b", "c"]):
        (tmp_path / name).mkdir()
        Image.new("RGB", (8 + i, 8), (i * 100, 0, 0)).save(tmp_path / name / f"{name}.jpg")

    @pipeline_def(batch_size=3, num_threads=1, device_id=0, on_error=on_error)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(tmp_path), name="Reader")
        return fn.decoders.image(jpegs, device="mixed"), labels

    p = pipe()
    plan = build_plan(p._outputs)
    node = _reader_node(plan)
    source = node.op.open(node, p, plan.hints.of(node.id))
    assert source.processes is not None
    (data, labels), meta = source.next_batch(3, 0, 0)
    files = [m["source_info"] for m in meta]
    assert [np.asarray(d).tobytes() for d in data] == [Path(f).read_bytes() for f in files]
    assert [int(x[0]) for x in labels] == [0, 1, 2]
    assert not data[0].flags.writeable
    os.remove(tmp_path / "b" / "b.jpg")  # gone since the listing
    if on_error == "raise":
        with pytest.raises(OSError, match="b.jpg"):
            source.next_batch(3, 0, 1)
    else:
        (data, _), meta = source.next_batch(3, 0, 1)
        assert data[1].size == 0 and "b.jpg" in str(meta[1]["error"][1])
        assert data[2].tobytes() == (tmp_path / "c" / "c.jpg").read_bytes()
    source.close()


def test_a_batch_of_files_shares_one_recycled_block_until_every_file_is_dropped(tmp_path):
    import threading

    from chute.ops.readers import local_files as file_reader

    blobs, paths = _write_blobs(tmp_path, (70_001, 1, 130_000, 64), 9)
    buffers = file_reader._buffers([70_001, 0, 5])
    assert buffers[1] is None and [len(b) for b in (buffers[0], buffers[2])] == [70_001, 5]
    assert buffers[2].ctypes.data - buffers[0].ctypes.data == 70_016  # 64-byte steps
    assert buffers[0].base is buffers[2].base
    assert file_reader._buffers([]) == []

    def run():  # in a thread of its own: its pool starts empty
        first = file_reader.read_files(paths)
        block = id(first[0].base)  # the pool keeps the block: its id stays
        shared = all(id(a.base) == block for a in first)
        kept = first[2]
        del first
        second = file_reader.read_files(paths)  # one file of the first batch still held
        while_held = id(second[0].base)
        del second
        third = file_reader.read_files(paths)
        return shared, kept, while_held, third, block

    out = []
    thread = threading.Thread(target=lambda: out.append(run()))
    thread.start()
    thread.join()
    shared, kept, while_held, third, block = out[0]
    assert [a.tobytes() for a in third] == blobs and kept.tobytes() == blobs[2]
    if file_reader._native_read is not None:
        assert shared and while_held != block  # not reused while a file of it is held
        assert id(third[0].base) == while_held  # reused once all its files were dropped
