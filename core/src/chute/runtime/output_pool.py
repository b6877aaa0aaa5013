"""Host memory for decoded images and output batches, used again once nothing refers to it.

A decoded crop of a few hundred kilobytes in fresh memory costs a page fault per 4 KiB
page as it is first written (measured: most of a random-crop pipeline's system time,
~30 faults and ~60 us per image on a 2-core VM), because the C allocator hands large
freed blocks back to the kernel. Here each worker thread keeps the blocks it handed
out, by size class, and takes one back when the pipeline and the user have dropped
every array made from it; a block that stays unused a while is let go. Arrays stay
fresh for their user: a block is reused only when no array, view or exported tensor
refers to it any more.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import deque

import numpy as np

__all__ = ["empty"]

# Smaller arrays come from the allocator's own free lists without faults.
MIN_POOLED_BYTES = 64 * 1024
# Four size classes per doubling: a block is at most ~19% larger than asked.
_CLASSES_PER_DOUBLING = 4
# Blocks kept per size class and thread: more than a few batches of prefetched and
# user-held images ever ask for (the oldest block is let go beyond it).
MAX_BLOCKS_PER_CLASS = 64
# Bytes a thread keeps in all: past it, the class's oldest block is let go, or the new
# one is not kept (huge images then cost their page faults, a small part of their decode).
MAX_BYTES_PER_THREAD = 256 * 1024 * 1024
# A free block not handed out for this many of its thread's requests is let go (one per
# request at most): the pool follows what the pipeline holds now, not its all-time peak.
IDLE_REQUESTS = 512

_local = threading.local()


def _size_class(nbytes: int) -> int:
    return math.ceil(math.log2(nbytes) * _CLASSES_PER_DOUBLING)


def _capacity(size_class: int) -> int:
    # whole pages, at least as large as any request of the class
    size = math.ceil(2 ** (size_class / _CLASSES_PER_DOUBLING))
    return -(-size // 4096) * 4096


def _take_free(blocks: deque) -> np.ndarray | None:
    """The most recently handed out block of ``blocks`` that nothing refers to (moved to
    the end), or None."""
    k = len(blocks)
    for block in reversed(blocks):
        k -= 1
        # references: the deque, `block`, getrefcount's argument; any array made from
        # the block (its .base is the block) adds one
        if sys.getrefcount(block) == 3:
            del blocks[k]  # (the loop ends here: the deque is not iterated again)
            blocks.append(block)
            return block
    return None


def _release_idle(blocks: deque, last: dict[int, int], now: int, capacity: int) -> None:
    """Let go of the class's least recently handed out block when it is free and has not
    been handed out for ``IDLE_REQUESTS`` requests of this thread.

    Blocks are reused most recently used first, so the blocks only a rare peak needed
    sink to the front and go. Without this the pool kept every thread's all-time peak:
    which thread decodes an image or fills a batch changes from batch to batch, so each
    thread's pool crept up towards what the whole pipeline holds at once (bench/soak.py,
    40 epochs on the 2-core VM: RSS +8.5% after epoch 1 before, +4.5% after).
    """
    if len(blocks) < 2 or sys.getrefcount(blocks[0]) != 2:
        return
    if now - last.get(id(blocks[0]), now) > IDLE_REQUESTS:
        del last[id(blocks.popleft())]
        _local.held -= capacity


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array, in a recycled block where one is free."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_POOLED_BYTES:
        return np.empty(shape, dtype)
    classes = getattr(_local, "classes", None)
    if classes is None:
        classes = _local.classes = {}
        _local.held = 0
        _local.last = {}  # id(block) -> the request count when it was last handed out
        _local.requests = 0
    _local.requests += 1
    size_class = _size_class(nbytes)
    capacity = _capacity(size_class)
    blocks = classes.get(size_class)
    if blocks is None:
        blocks = classes[size_class] = deque()
    block = _take_free(blocks)
    if block is None:
        block = np.empty(capacity, np.uint8)
        if blocks and (
            len(blocks) >= MAX_BLOCKS_PER_CLASS or _local.held + capacity > MAX_BYTES_PER_THREAD
        ):
            _local.last.pop(id(blocks.popleft()), None)  # in use still: freed when dropped
            _local.held -= capacity
        if _local.held + capacity > MAX_BYTES_PER_THREAD:
            return block[:nbytes].view(dtype).reshape(shape)  # not kept
        blocks.append(block)
        _local.held += capacity
    _local.last[id(block)] = _local.requests
    _release_idle(blocks, _local.last, _local.requests, capacity)
    return block[:nbytes].view(dtype).reshape(shape)
