"""GPU backends of fn.random.uniform / normal / coin_flip and fn.noise.* against the CPU.

Uniform draws (range or values), coin flips and salt-and-pepper masks must equal the CPU
backend's bit for bit (same Philox streams, same arithmetic); normal, Gaussian and shot
noise must follow the same distributions (Kolmogorov-Smirnov / mean tests at ALPHA =
0.001 with fixed seeds). The CPU pipelines mirror the GPU ones node for node (a copy
where the GPU one has its transfer), so every operator has the same stream keys.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu

ALPHA = 1e-3
RANGES = [np.array([0.0, 1.0], np.float32), np.array([-300.0, 300.0], np.float32)] * 2
PROBS = [np.array(p, np.float32) for p in (0.1, 0.5, 0.9, 1.0)]


def _run(device: str, expr, *batches, layout=None):
    """Outputs of ``expr(device, *sources)`` on the host; GPU pipelines on device 0."""

    @pipeline_def(batch_size=4, num_threads=2, seed=12, device_id=0 if device == "gpu" else None)
    def pipe():
        nodes = [
            fn.external_source(source=lambda b=b: b, **({"layout": layout} if i == 0 else {}))
            for i, b in enumerate(batches)
        ]
        out = expr(device, *nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    outs = p.run()
    p.close()
    return [o.as_cpu() for o in outs]


def _both(expr, *batches, layout=None):
    return _run("cpu", expr, *batches, layout=layout), _run("gpu", expr, *batches, layout=layout)


def _assert_equal(cpu, gpu):
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype
        for i in range(len(c)):
            np.testing.assert_array_equal(g.at(i), c.at(i))


def test_uniform_range_and_coin_flip_equal_the_cpu_bit_for_bit():
    def expr(device, r, p):
        return (
            fn.random.uniform(range=r, shape=[7, 33], device=device),
            fn.random.uniform(range=r, shape=[50], dtype=np.uint8, device=device),
            fn.random.coin_flip(probability=p, shape=[101], device=device),
            fn.random.coin_flip(shape=[3], dtype=np.float32, device=device),
        )

    cpu, gpu = _both(expr, RANGES, PROBS)
    _assert_equal(cpu, gpu)
    assert gpu[1].at(1).max() == 255 and gpu[1].at(1).min() == 0  # saturated, not wrapped


def test_uniform_values_equal_the_cpu_bit_for_bit():
    values = [np.array(v, np.float32) for v in ([1.0], [2.0, -3.5], [0.0, 1.0, 2.0], [9.0] * 5)]

    def expr(device, v):
        return (
            fn.random.uniform(values=v, shape=[64], device=device),
            fn.random.uniform(values=[10, 20, 30], shape=[5, 5], dtype=np.int16, device=device),
        )

    cpu, gpu = _both(expr, values)
    _assert_equal(cpu, gpu)


def test_shape_like_input_on_the_gpu():
    like = [np.zeros(s, np.uint8) for s in ((2, 3), (4, 1), (1, 1), (0, 5))]

    def expr(device, x):
        x = x.gpu() if device == "gpu" else fn.copy(x)
        return fn.random.uniform(x, range=[0, 4], device=device)

    cpu, gpu = _both(expr, like)
    _assert_equal(cpu, gpu)
    assert gpu[0].at(3).shape == (0, 5)


def test_normal_follows_the_distribution():
    means = [np.array(m, np.float32) for m in (0.0, 5.0, -2.0, 100.0)]
    stds = [np.array(s, np.float32) for s in (1.0, 0.5, 3.0, 0.0)]
    (out,) = _run(
        "gpu",
        lambda d, m, s: fn.random.normal(mean=m, stddev=s, shape=[4000], device=d),
        means,
        stds,
    )
    assert out.dtype == np.float32
    for i in range(3):
        dist = stats.norm(float(means[i]), float(stds[i]))
        assert stats.kstest(out.at(i), dist.cdf).pvalue > ALPHA
    np.testing.assert_array_equal(out.at(3), 100.0)  # stddev 0


def test_salt_and_pepper_equals_the_cpu_bit_for_bit():
    imgs = [np.full(s, 128, np.uint8) for s in ((40, 30, 3), (17, 5, 3), (1, 1, 3), (8, 8, 3))]
    floats = [np.zeros((20, 4), np.float32) + i for i in range(4)]

    def expr(device, x, f):
        if device == "gpu":
            x, f = x.gpu(), f.gpu()
        else:
            x, f = fn.copy(x), fn.copy(f)
        return (
            fn.noise.salt_and_pepper(x, prob=0.3, salt_vs_pepper=0.25, device=device),
            fn.noise.salt_and_pepper(f, prob=0.5, per_channel=True, salt_val=7.0, device=device),
        )

    cpu, gpu = _both(expr, imgs, floats, layout="HWC")
    _assert_equal(cpu, gpu)
    assert set(np.unique(gpu[0].at(0))) == {0, 128, 255}


def test_gaussian_noise_distribution_and_saturation():
    flat = [np.full((100, 100), 100.0, np.float32)] * 2 + [np.full((64, 64), 250, np.uint8)] * 2

    def expr(device, x):
        return fn.noise.gaussian(x.gpu(), mean=1.0, stddev=5.0, device=device)

    out = _run("gpu", expr, flat[:2])[0]
    noise = (out.at(0) - 100.0).ravel()
    assert stats.kstest(noise, stats.norm(1.0, 5.0).cdf).pvalue > ALPHA
    assert not np.array_equal(out.at(0), out.at(1))  # samples draw from their own streams
    bright = _run("gpu", lambda d, x: fn.noise.gaussian(x.gpu(), stddev=20.0), flat[2:])[0]
    assert bright.dtype == np.uint8 and bright.at(0).max() == 255 and bright.at(0).min() > 150


def test_shot_noise_mean_quantization_and_identity():
    img = [np.full((100, 100), v, np.float32) for v in (60.0, 6.0, 60.0, 3.0)]
    factors = [np.array(f, np.float32) for f in (2.0, 1.0, 0.0, 0.5)]
    (out,) = _run("gpu", lambda d, x, f: fn.noise.shot(x.gpu(), factor=f), img, factors)
    for i, lam in ((0, 30.0), (1, 6.0), (3, 6.0)):  # PTRS for 30, inversion for 6
        events = (out.at(i) / float(factors[i])).ravel()
        assert np.all(events == np.round(events))
        assert abs(events.mean() - lam) < 4 * np.sqrt(lam / events.size)
        assert abs(events.var() - lam) < 0.1 * lam  # Poisson: variance = mean
    np.testing.assert_array_equal(out.at(2), img[2])  # factor 0 is the identity
