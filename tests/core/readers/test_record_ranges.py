"""chute.ops.readers.ranges.FileRanges: mapped, read and O_DIRECT reads give the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.readers.ranges import FileRanges


@pytest.mark.parametrize("mode", ["read", "mmap", "o_direct"])
def test_ranges_are_the_file_bytes(tmp_path, mode):
    blob = np.random.default_rng(1).integers(0, 256, 3 * 4096 + 123, dtype=np.uint8).tobytes()
    (tmp_path / "f.bin").write_bytes(blob)
    ranges = FileRanges(
        [str(tmp_path / "f.bin")], use_mmap=mode == "mmap", o_direct=mode == "o_direct"
    )
    for offset, size in [(0, 10), (4095, 2), (5000, 4096), (len(blob) - 7, 7), (len(blob) - 3, 50)]:
        got = ranges.read(0, offset, size)
        assert got.tobytes() == blob[offset : offset + size], (offset, size)
        assert not got.flags.writeable
    if mode == "o_direct" and ranges.direct_reads == 0:
        assert not ranges.o_direct  # the file system refused O_DIRECT: read normally
    ranges.close()
