"""Host memory for decoded images and output batches, used again once nothing refers to it.

A decoded crop of a few hundred kilobytes in fresh memory costs a page fault per 4 KiB
page as it is first written (measured: most of a random-crop pipeline's system time,
~30 faults and ~60 us per image on a 2-core VM), because the C allocator hands large
freed blocks back to the kernel. Here each worker thread keeps the blocks it handed
out, by size class, and takes one back when the pipeline and the user have dropped
every array made from it. Arrays stay fresh for their user: a block is reused only
when no array, view or exported tensor refers to it any more.
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

_local = threading.local()


def _size_class(nbytes: int) -> int:
    return math.ceil(math.log2(nbytes) * _CLASSES_PER_DOUBLING)


def _capacity(size_class: int) -> int:
    # whole pages, at least as large as any request of the class
    size = math.ceil(2 ** (size_class / _CLASSES_PER_DOUBLING))
    return -(-size // 4096) * 4096


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
    size_class = _size_class(nbytes)
    blocks = classes.get(size_class)
    if blocks is None:
        blocks = classes[size_class] = deque()
    block = None
    if blocks:
        oldest = blocks[0]
        # references: the deque, `oldest`, getrefcount's argument; any array made from
        # the block (its .base is the block) adds one
        if sys.getrefcount(oldest) == 3:
            block = oldest
            blocks.rotate(-1)
        del oldest
    if block is None:
        capacity = _capacity(size_class)
        block = np.empty(capacity, np.uint8)
        if blocks and (
            len(blocks) >= MAX_BLOCKS_PER_CLASS or _local.held + capacity > MAX_BYTES_PER_THREAD
        ):
            blocks.popleft()  # in use still: it is freed when its user drops it
            _local.held -= capacity
        if _local.held + capacity <= MAX_BYTES_PER_THREAD:
            blocks.append(block)
            _local.held += capacity
    return block[:nbytes].view(dtype).reshape(shape)
