"""The CPU share of a mixed decoder's batch, balanced from measured rates (no GPU needed)."""

from __future__ import annotations

import pytest

from chute.gpu.share_balance import ShareBalancer


def _run(balancer: ShareBalancer, cpu_rate: float, gpu_rate: float, batches: int = 40) -> None:
    """Simulate ``batches`` of 256: each group takes its share at its own rate."""
    for _ in range(batches):
        n_cpu = round(balancer.share() * 256)
        balancer.record("cpu", n_cpu, n_cpu / cpu_rate if n_cpu else 0.0)
        balancer.record("hw", 256 - n_cpu, (256 - n_cpu) / gpu_rate)


def test_the_share_settles_where_both_groups_finish_together():
    balancer = ShareBalancer()
    _run(balancer, cpu_rate=6_000, gpu_rate=18_000)
    assert balancer.share() == pytest.approx(0.25, abs=0.01)  # 6k of 24k img/s
    n_cpu = round(balancer.share() * 256)
    assert n_cpu / 6_000 == pytest.approx((256 - n_cpu) / 18_000, rel=0.05)


def test_the_share_follows_a_change_of_speed_and_stays_in_bounds():
    balancer = ShareBalancer(low=0.02, high=0.6)
    _run(balancer, cpu_rate=6_000, gpu_rate=18_000)
    _run(balancer, cpu_rate=1_000, gpu_rate=20_000)  # the CPU got busy
    assert balancer.share() == pytest.approx(1 / 21, abs=0.01)
    _run(balancer, cpu_rate=100, gpu_rate=20_000)
    assert balancer.share() == 0.02  # never below `low`: the CPU keeps being measured
    _run(balancer, cpu_rate=90_000, gpu_rate=10_000)
    assert balancer.share() == 0.6  # the GPU keeps most of the batch


def test_several_gpu_groups_add_up():
    balancer = ShareBalancer()
    for _ in range(40):
        n_cpu = round(balancer.share() * 256)
        balancer.record("cpu", n_cpu, n_cpu / 5_000)
        balancer.record("hw", 200, 200 / 12_000)
        balancer.record("cuda", 56, 56 / 3_000)
    assert balancer.share() == pytest.approx(5 / 20, abs=0.01)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="low <= initial"):
        ShareBalancer(initial=0.9, high=0.5)
    with pytest.raises(ValueError, match="smoothing"):
        ShareBalancer(smoothing=0)


def test_pinned_staging_sizes_are_few_and_large_enough():
    from chute.gpu.cpu_decode import pinned_size

    assert pinned_size(0) == pinned_size(1) == pinned_size(65536) == 65536
    assert pinned_size(65537) == 131072
    sizes = {pinned_size(n) for n in range(9_000_000, 16_777_217, 997)}
    assert sizes == {16 * 2**20}
    for n in (70_000, 3_000_001, 2**30 + 1):
        assert n <= pinned_size(n) < 2 * n


def test_the_cpu_takes_the_regions_cheapest_there():
    """A region decode on the CPU costs the rows down to its bottom plus its area, the GPU a
    whole image: small windows near the top go to the CPU, whole images last."""
    import numpy as np

    from chute.gpu.cpu_decode import cheapest_on_cpu

    shapes = np.array([[400, 500]] * 6, np.int64)
    regions = [
        (300, 0, 400, 500),  # the bottom quarter: every row decoded -> ratio 0.625
        (0, 0, 100, 100),  # a small window at the top -> 0.15
        None,  # the whole image -> 1
        (0, 0, 400, 500),  # all of it as a region -> 1
        (10, 10, 110, 60),  # -> 0.1475
        (200, 200, 300, 300),  # the middle -> 0.425
    ]
    idx = [0, 1, 2, 3, 4, 5]
    assert cheapest_on_cpu(shapes, regions, idx, 2) == [1, 4]  # batch order kept
    assert cheapest_on_cpu(shapes, regions, idx, 3) == [1, 4, 5]
    assert cheapest_on_cpu(shapes, regions, idx, 4) == [0, 1, 4, 5]
    assert cheapest_on_cpu(shapes, regions, [5, 2, 0], 1) == [5]
    assert cheapest_on_cpu(shapes, regions, idx, 0) == []
    assert cheapest_on_cpu(shapes, regions, idx, 9) == idx
    # without regions (no ROIs) the batch's first samples, as before
    assert cheapest_on_cpu(shapes, [None] * 6, idx, 2) == [0, 1]


def test_device_buffer_sizes_lie_on_a_grid_of_eight_steps_a_doubling():
    from chute.gpu.runtime import device_size

    mib = 1 << 20
    assert device_size(0) == 0 and device_size(mib) == mib and device_size(5000) == 5000
    assert device_size(mib + 1) == 2 * mib  # 1 MiB steps at least
    assert device_size(64 * mib) == 64 * mib and device_size(64 * mib + 1) == 72 * mib
    assert device_size(70 * mib, steps=0) == 70 * mib  # exact sizes
    sizes = {device_size(n) for n in range(40 * mib, 160 * mib, 99_991)}
    assert len(sizes) < 20  # a few blocks serve every batch between 40 and 160 MiB
    for n in range(2 * mib, 300 * mib, 1_234_567):
        assert n <= device_size(n) < n + max(n // 8, mib)


def test_a_bad_size_grid_setting_is_refused_by_name():
    import os
    import subprocess
    import sys

    env = {**os.environ, "CHUTE_GPU_SIZE_STEPS": "eight"}
    done = subprocess.run(
        [sys.executable, "-c", "import chute.gpu.runtime"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "CHUTE_GPU_SIZE_STEPS must be an int >= 0" in done.stderr and "'eight'" in done.stderr
