"""output_pool: decoded images reuse memory only once nothing refers to it any more."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _decoder_samples import encode, photo

from chute.ops.decoders.image_codec import decode
from chute.runtime import output_pool

BIG = (300, 400, 3)  # 360 KB: pooled


def _block(array):
    return array.base if array.base is not None else array


def _in_new_thread(function):
    """Run `function` where the thread's pool starts empty; return its result."""
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def test_a_dropped_array_gives_its_block_to_the_next_one():
    def run():
        first = output_pool.empty(BIG, np.uint8)
        block_id = id(_block(first))
        del first
        second = output_pool.empty((290, 410, 3), np.uint8)  # same size class
        kept = output_pool.empty((290, 410, 3), np.uint8)  # the first is in use: a new block
        return block_id, id(_block(second)), id(_block(kept)), second

    block_id, second_id, kept_id, second = _in_new_thread(run)
    assert second_id == block_id and kept_id != block_id
    assert second.shape == (290, 410, 3) and second.flags.c_contiguous


@pytest.mark.parametrize("keep", ["array", "view", "memoryview"])
def test_a_block_in_use_is_never_handed_out_again(keep):
    first = output_pool.empty(BIG, np.uint8)
    first[...] = 7
    holder = {"array": first, "view": first[10:20, ::2], "memoryview": memoryview(first)}[keep]
    del first
    others = [output_pool.empty(BIG, np.uint8) for _ in range(5)]
    for other in others:
        other[...] = 1
    assert np.all(np.asarray(holder) == 7)
    del holder


def test_dtypes_shapes_and_small_arrays():
    image = output_pool.empty((200, 300, 3), np.float32)
    assert image.dtype == np.float32 and image.shape == (200, 300, 3)
    assert image.ctypes.data % 16 == 0
    small = output_pool.empty((10, 10, 3), np.uint8)
    assert small.base is None  # below MIN_POOLED_BYTES: plain allocation


def test_the_pool_keeps_a_bounded_number_of_blocks():
    def run():
        held = [
            output_pool.empty(BIG, np.uint8) for _ in range(output_pool.MAX_BLOCKS_PER_CLASS + 9)
        ]
        assert len({id(_block(a)) for a in held}) == len(held)  # all in use: all distinct
        return [len(q) for q in output_pool._local.classes.values()]

    assert _in_new_thread(run) == [output_pool.MAX_BLOCKS_PER_CLASS]


def test_the_pool_keeps_a_bounded_number_of_bytes(monkeypatch):
    monkeypatch.setattr(output_pool, "MAX_BYTES_PER_THREAD", 3 * 2**20)

    def run():
        held = [output_pool.empty(BIG, np.uint8) for _ in range(12)]  # ~4.3 MB
        held += [output_pool.empty((1000, 1000, 3), np.uint8) for _ in range(3)]  # 3 MB each
        kept = sum(q[0].size * len(q) for q in output_pool._local.classes.values() if q)
        return kept, output_pool._local.held, held

    kept, held_bytes, arrays = _in_new_thread(run)
    assert kept == held_bytes <= 3 * 2**20
    assert all(a.flags.c_contiguous for a in arrays)


def test_decoded_crops_stay_intact_while_later_images_decode():
    data = [encode(photo(240, 320, seed=s), "JPEG", quality=90) for s in range(3)]
    kept = [decode(d, roi=(5, 7, 230, 300)) for d in data]
    reference = [k.copy() for k in kept]
    for _ in range(4):
        for d in data:
            decode(d, roi=(0, 0, 220, 310))
            decode(d)
    for k, r in zip(kept, reference):
        np.testing.assert_array_equal(k, r)


def test_a_free_block_is_reused_while_the_oldest_is_busy():
    # Before, only the class's oldest block was tried: while something held it, every
    # request added a block although others were free, and the pool crept up each epoch.
    def run():
        held = output_pool.empty(BIG, np.uint8)  # the oldest block, kept busy
        second = output_pool.empty(BIG, np.uint8)
        second_id = id(_block(second))
        del second
        reused = [id(_block(output_pool.empty(BIG, np.uint8))) for _ in range(10)]
        (blocks,) = output_pool._local.classes.values()
        return second_id, reused, len(blocks), held

    second_id, reused, count, _ = _in_new_thread(run)
    assert reused == [second_id] * 10
    assert count == 2


def test_blocks_idle_for_a_while_are_let_go(monkeypatch):
    monkeypatch.setattr(output_pool, "IDLE_REQUESTS", 8)

    def run():
        peak = [output_pool.empty(BIG, np.uint8) for _ in range(5)]  # a peak of 5 at once
        (blocks,) = output_pool._local.classes.values()
        at_peak = len(blocks)
        del peak
        sizes = []
        for _ in range(40):  # then one at a time: the 4 spare blocks go, one by one
            output_pool.empty(BIG, np.uint8)
            sizes.append(len(blocks))
        return at_peak, sizes, output_pool._local.held, blocks[0].size

    at_peak, sizes, held, capacity = _in_new_thread(run)
    assert at_peak == 5
    assert sizes[0] == 5 and sizes[-1] == 1 and sizes == sorted(sizes, reverse=True)
    assert held == capacity  # the bytes kept count only the block left
