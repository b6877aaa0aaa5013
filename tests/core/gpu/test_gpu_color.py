"""GPU backends of the color, normalize, cast and arithmetic operators against their CPU backends.

Each GPU test runs one pipeline on the GPU (``device_id=0``, ``fn.op(images.gpu(), ...)``)
and the same pipeline on the CPU (``device_id=None``), with per-sample random arguments
drawn by CPU operators traced before the transfer (same node ids, so the same draws), on
ragged batches of odd sizes and on dense batches. Tolerances: integer outputs within 1
level (rounding of float32 arithmetic and OpenCV's fixed-point paths), float outputs
within 1e-4 relative plus 1e-4 of the value range, HSV hue within 1e-3 degrees
(circular). The first tests check the NumPy side (parameter tables, dtype rules) on the
CPU and need no GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.gpu import color_kernels as ck
from chute.ops.color import color_gpu
from chute.ops.color import color_kernels as cpu_color
from chute.ops.color.color_space_gpu import color_space_params
from chute.ops.color.color_space_kernels import color_space_conversion

try:
    import cupy

    _N_DEVICES = cupy.cuda.runtime.getDeviceCount()
except Exception:
    cupy, _N_DEVICES = None, 0

gpu = pytest.mark.skipif(_N_DEVICES == 0, reason="no CUDA device with CuPy")

RAGGED = [(17, 23), (31, 9), (8, 40), (25, 25), (5, 3)]
DENSE = [(19, 27)] * 5


def make_images(sizes, dtype=np.uint8, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for h, w in sizes:
        shape = (h, w, channels) if channels else (h, w)
        img = rng.integers(0, 256, shape).astype(np.uint8)
        out.append(img if dtype == np.uint8 else (img / 255.0).astype(dtype))
    return out


# ---- NumPy side (no GPU) -------------------------------------------------------------


def test_color_twist_params_match_the_cpu_matrices():
    rng = np.random.default_rng(1)
    n = 6
    b, c, h, s = (
        rng.uniform(0.5, 1.5, n),
        rng.uniform(0.5, 1.5, n),
        rng.uniform(-90, 90, n),
        (rng.uniform(0, 2, n)),
    )
    for bgr in (False, True):
        params = color_gpu.color_twist_params(n, b, c, h, s, center=128.0, bgr=bgr)
        for i in range(n):
            m, o = cpu_color.color_twist_matrix(b[i], c[i], h[i], s[i], 128.0)
            if bgr:
                m, o = m[::-1, ::-1], o[::-1]
            np.testing.assert_allclose(params[i, :9].reshape(3, 3), m, atol=1e-12)
            np.testing.assert_allclose(params[i, 9:], o, atol=1e-12)
    hsv = color_gpu.hsv_params(n, h, s, b)
    for i in range(n):
        np.testing.assert_allclose(hsv[i, :9].reshape(3, 3), cpu_color.hsv_matrix(h[i], s[i], b[i]))
        assert not hsv[i, 9:].any()


@pytest.mark.parametrize(("in_dtype", "out_dtype"), [(np.uint8, np.uint8), (np.uint8, np.float32)])
def test_brightness_contrast_params_reproduce_the_cpu_kernel(in_dtype, out_dtype):
    rng = np.random.default_rng(2)
    n = 5
    args = {
        "brightness": rng.uniform(0.5, 1.5, n),
        "brightness_shift": rng.uniform(-0.1, 0.1, n),
        "contrast": rng.uniform(0.5, 1.5, n),
        "contrast_center": np.array([None, 100.0, None, 30.0, 200.0], object),
    }
    gain, offset = color_gpu.brightness_contrast_params(n, in_dtype, out_dtype, **args)
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for i in range(n):
        ref = cpu_color.brightness_contrast(ramp, *(args[k][i] for k in args), dtype=out_dtype)
        got = ramp.astype(np.float64) * gain[i] + offset[i]
        if np.dtype(out_dtype).kind == "u":
            got = np.clip(np.floor(got + 0.5), 0, 255)
        np.testing.assert_array_equal(got.astype(out_dtype), ref)


def test_luma_params_match_the_cpu_gray_path():
    params = color_gpu.color_twist_params(
        3, [1.2, 0.8, 1.0], [0.7, 1.3, 1.0], [30, -60, 0], 0.5, center=128.0
    )
    gray = make_images([(9, 7)], channels=0)[0]
    gain, offset = color_gpu.luma_params(params)
    for i, (b, c, h, s) in enumerate([(1.2, 0.7, 30, 0.5), (0.8, 1.3, -60, 0.5), (1, 1, 0, 0.5)]):
        ref = cpu_color.color_twist(gray, b, c, h, s, dtype=np.float32)
        np.testing.assert_allclose(gray * gain[i] + offset[i], ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize(
    ("src", "dst"),
    [("RGB", "YCbCr"), ("YCbCr", "BGR"), ("BGR", "GRAY"), ("GRAY", "YCbCr"), ("RGB", "RGB")],
)
def test_linear_color_space_params_match_the_cpu_conversion(src, dst, dtype):
    in_c, out_c, src_hsv, dst_hsv, params = color_space_params(src, dst, np.dtype(dtype))
    assert (src_hsv, dst_hsv) == (0, 0)
    img = make_images([(6, 11)], dtype, channels=in_c)[0]
    a, b = params[:12], params[12:]
    x = img.reshape(-1, in_c).astype(np.float64)
    x3 = np.repeat(x, 3, axis=1) if in_c == 1 else x
    rgb = x3 @ a[:9].reshape(3, 3).T + a[9:]
    y = (rgb @ b[:9].reshape(3, 3).T + b[9:])[:, :out_c]
    ref = color_space_conversion(img, src, dst).reshape(-1, out_c).astype(np.float64)
    if dtype == np.uint8:  # OpenCV's fixed-point transform is within 1 of the exact value
        np.testing.assert_allclose(np.clip(y, 0, 255), ref, atol=1.0)
    else:
        np.testing.assert_allclose(y, ref, atol=1e-6)


def test_flat_table_and_launch_blocks():
    table = ck.flat_table([10, 20], [30, 40], [5, 1 << 40])
    assert table.dtype.itemsize == 24 and table["count"][1] == 1 << 40
    assert ck.launch_blocks(np.array([1])) == 1
    assert ck.launch_blocks(np.array([256 * 4 * 10 + 1])) == 11
    assert ck.launch_blocks(np.array([1 << 40])) == 1 << 16


ARITH_CASES = [
    ("add", [np.uint8, 2]),
    ("add", [np.uint8, 2.5]),
    ("mul", [np.int32, np.float32]),
    ("truediv", [np.uint8, 3]),
    ("floordiv", [np.int16, -3]),
    ("mod", [np.float32, 0.7]),
    ("pow", [np.float32, 2]),
    ("lt", [np.uint8, 300]),
    ("ge", [np.uint8, 2.5]),
    ("max", [np.uint8, np.int16]),
    ("bitand", [np.uint8, 0x0F]),
    ("sqrt", [np.uint8]),
    ("rsqrt", [np.int32]),
    ("atan2", [np.float16, 1]),
    ("clamp", [np.uint8, 10, 200]),
    ("sub", [np.uint8, np.array([1, 2, 3])]),
    ("fpow", [np.uint8, np.array([0.5, 1.0, 2.0], np.float32)]),
]


@pytest.mark.parametrize(("op", "operands"), ARITH_CASES)
def test_arithmetic_dtypes_reproduce_the_cpu_backend(op, operands):
    """The GPU path's ufunc call, run with NumPy arrays, gives the CPU backend's values."""
    from chute.ops.arithmetic import Arithmetic
    from chute.ops.arithmetic_gpu import _compute, operand_dtypes

    rng = np.random.default_rng(3)
    shape = (4, 5, 3)
    data = [(rng.uniform(1, 200, (2, *shape))).astype(d) for d in operands if isinstance(d, type)]
    template, k = [], 0
    for d in operands:
        if isinstance(d, type):
            template.append(k)
            k += 1
        else:
            template.append(("const", d))
    described = [np.dtype(d) if isinstance(d, type) else d for d in operands]
    result, given = operand_dtypes(op, described)
    consts = iter(given)
    host = [t if isinstance(t, int) else np.asarray(t[1], next(consts)) for t in template]
    got = _compute(np, op, host, data, result, op in ("truediv", "sqrt", "rsqrt", "atan2", "fpow"))

    class Args(dict):
        def __getitem__(self, key):
            return {"op": op, "template": tuple(template)}[key]

    for i in range(2):
        ref = Arithmetic().run_sample(tuple(x[i] for x in data), Args(), None)
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got[i], ref)


# ---- GPU against CPU -------------------------------------------------------------------


def run_both(images, build, layout="HWC", batch_size=None):
    """Outputs (lists of NumPy samples) of ``build(x, args)`` on the CPU and on the GPU.

    ``build(x, to_device)`` traces its random arguments, then calls ``to_device(x)``.
    """
    results = []
    for device_id in (None, 0):

        @pipeline_def(
            batch_size=batch_size or len(images), num_threads=2, device_id=device_id, seed=7
        )
        def pipe():
            x = fn.external_source(source=lambda: images, layout=layout)
            return build(x, (lambda y: y.gpu()) if device_id is not None else (lambda y: y))

        p = pipe()
        p.build()
        outs = p.run()
        got = []
        for out in outs:
            if device_id is not None:
                assert type(out).__name__ == "TensorListGPU"
                out = out.as_cpu()
            got.append([np.asarray(out.at(i)) for i in range(len(out))])
        p.close()
        results.append(got)
    return results


def assert_close(cpu, gpu_out, levels=1, rtol=1e-4, atol=1e-4, frac=0.05):
    """Integer outputs: within ``levels``, and at most ``frac`` of the values differ."""
    for c_batch, g_batch in zip(cpu, gpu_out):
        assert len(c_batch) == len(g_batch)
        off = []  # integer outputs: how many values differ at all, over the batch
        for c, g in zip(c_batch, g_batch):
            assert c.dtype == g.dtype and c.shape == g.shape, (c.dtype, g.dtype, c.shape, g.shape)
            if c.dtype.kind in "iu":
                diff = np.abs(c.astype(np.int64) - g.astype(np.int64))
                assert diff.max(initial=0) <= levels, diff.max()
                off.append(diff.ravel() > 0)
            elif c.dtype.kind == "b":
                assert (c != g).mean() < 0.01
            else:
                finite = np.abs(c[np.isfinite(c)].astype(np.float64))
                scale = max(1.0, float(finite.max(initial=0)))
                np.testing.assert_allclose(
                    g.astype(np.float64), c.astype(np.float64), rtol=rtol, atol=atol * scale
                )
        if off:
            assert np.concatenate(off).mean() <= frac, np.concatenate(off).mean()


COLOR_OPS = {
    "color_twist": lambda: {
        "brightness": fn.random.uniform(range=(0.6, 1.4)),
        "contrast": fn.random.uniform(range=(0.6, 1.4)),
        "hue": fn.random.uniform(range=(-60, 60)),
        "saturation": fn.random.uniform(range=(0.3, 1.7)),
    },
    "hsv": lambda: {
        "hue": fn.random.uniform(range=(-60, 60)),
        "saturation": fn.random.uniform(range=(0.3, 1.7)),
        "value": fn.random.uniform(range=(0.6, 1.4)),
    },
    "hue": lambda: {"hue": fn.random.uniform(range=(-180, 180))},
    "saturation": lambda: {"saturation": fn.random.uniform(range=(0, 2))},
    "brightness": lambda: {
        "brightness": fn.random.uniform(range=(0.5, 1.5)),
        "brightness_shift": fn.random.uniform(range=(-0.1, 0.1)),
    },
    "contrast": lambda: {"contrast": fn.random.uniform(range=(0.3, 1.7)), "contrast_center": 90},
    "brightness_contrast": lambda: {
        "brightness": fn.random.uniform(range=(0.5, 1.5)),
        "contrast": fn.random.uniform(range=(0.5, 1.5)),
        "contrast_center": fn.random.uniform(range=(0.2, 0.8)),
    },
}


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("op", sorted(COLOR_OPS))
@pytest.mark.parametrize(
    ("sizes", "in_dtype", "out_dtype", "channels"),
    [
        (RAGGED, np.uint8, None, 3),
        (DENSE, np.uint8, np.float32, 3),
        (RAGGED, np.float32, None, 3),
        (DENSE, np.float32, np.uint8, 4),
        (RAGGED, np.uint8, np.float16, 1),
    ],
)
def test_color_ops_match_cpu(op, sizes, in_dtype, out_dtype, channels):
    images = make_images(sizes, in_dtype, channels=channels, seed=len(op))
    func = getattr(fn, op)

    def build(x, to_device):
        args = COLOR_OPS[op]()
        mask = fn.random.coin_flip(probability=0.7)
        return func(to_device(x), **args, mask=mask, dtype=out_dtype)

    cpu, gpu_out = run_both(images, build)
    assert_close(cpu, gpu_out)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("bgr", [False, True])
def test_color_twist_bgr_and_constant_arguments_keep_dense_batches(bgr):
    images = make_images(DENSE, np.uint8)
    image_type = "BGR" if bgr else "RGB"

    def build(x, to_device):
        return fn.color_twist(to_device(x), hue=35.0, saturation=0.6, image_type=image_type)

    cpu, gpu_out = run_both(images, build)
    assert_close(cpu, gpu_out)

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        return fn.color_twist(x.gpu(), hue=35.0, image_type=image_type)

    p = pipe()
    (out,) = p.run()
    assert out.is_dense_tensor() and out.as_array().shape == (5, 19, 27, 3)
    p.close()


SPACES = ["RGB", "BGR", "GRAY", "YCbCr", "HSV"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("src", SPACES)
def test_color_space_conversion_matches_cpu(src, dtype):
    channels = 1 if src == "GRAY" else 3
    images = make_images(RAGGED, dtype, channels=channels, seed=5)

    def build(x, to_device):
        y = to_device(x)
        return tuple(
            fn.color_space_conversion(y, image_type=src, output_type=dst) for dst in SPACES
        )

    cpu, gpu_out = run_both(images, build)
    for dst, c_batch, g_batch in zip(SPACES, cpu, gpu_out):
        if dst == "HSV" and src == "YCbCr" and dtype == np.uint8:
            # the CPU goes through OpenCV's fixed-point YCbCr -> RGB (within 1 of exact), and
            # hue and saturation amplify 1 level of RGB where the chroma is small
            for c, g in zip(c_batch, g_batch):
                assert c.shape == g.shape and c.dtype == g.dtype
                assert np.mean(np.abs(c.astype(int) - g.astype(int)) > 1) < 0.05
            continue
        if dst == "HSV" and src != "HSV":
            for c, g in zip(c_batch, g_batch):  # hue is circular
                period = 180 if dtype == np.uint8 else 360
                d = np.abs(c[..., 0].astype(np.float64) - g[..., 0].astype(np.float64))
                d = np.minimum(d, period - d)
                assert d.max() <= (1 if dtype == np.uint8 else 0.05), (src, d.max())
            c_batch = [c[..., 1:] for c in c_batch]
            g_batch = [g[..., 1:] for g in g_batch]
        # OpenCV's fixed-point uint8 transforms are within 1 of exact for a few % of values
        assert_close([c_batch], [g_batch], frac=0.1)


NORMALIZE_CASES = {
    "all_axes": lambda: {},
    "per_channel": lambda: {"axes": (0, 1), "scale": 2.0, "shift": 0.5, "ddof": 1},
    "batch": lambda: {"batch": True, "axes": (0, 1)},
    "batch_all": lambda: {"batch": True, "epsilon": 1.0},
    "given_mean": lambda: {"mean": [100.0, 120.0, 140.0], "axes": (0, 1)},
    "given_std": lambda: {"stddev": 50.0},
    "given_both": lambda: {"mean": 127.0, "stddev": fn.random.uniform(range=(40, 80))},
    "rows": lambda: {"axes": (1,)},
    "per_sample_scale": lambda: {
        "scale": fn.random.uniform(range=(0.5, 2)),
        "shift": fn.random.uniform(range=(-1, 1)),
        "epsilon": fn.random.uniform(range=(0, 10)),
    },
    "uint8_out": lambda: {"scale": 40.0, "shift": 128.0, "dtype": np.uint8},
    "float16_out": lambda: {"axes": (0, 1), "dtype": np.float16},
}


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(NORMALIZE_CASES))
@pytest.mark.parametrize("sizes", [RAGGED, DENSE], ids=["ragged", "dense"])
@pytest.mark.parametrize("in_dtype", [np.uint8, np.float32])
def test_normalize_matches_cpu(case, sizes, in_dtype):
    if case in ("batch",) and sizes is RAGGED:
        sizes = [(h, 13) for h, _ in RAGGED]  # kept extents must agree across samples
    if case == "rows" and sizes is RAGGED:
        sizes = [(11, w) for _, w in RAGGED]
    images = make_images(sizes, in_dtype, seed=9)
    if in_dtype == np.float32:
        images = [x * 255 for x in images]

    def build(x, to_device):
        args = NORMALIZE_CASES[case]()  # random arguments first: the same node ids on both
        return fn.normalize(to_device(x), **args)

    cpu, gpu_out = run_both(images, build)
    assert_close(cpu, gpu_out, rtol=1e-4, atol=1e-4 if case != "float16_out" else 2e-3)


CAST_CASES = [
    (np.uint8, np.float32),
    (np.uint8, np.int16),
    (np.float32, np.uint8),
    (np.float32, np.int32),
    (np.float32, np.float16),
    (np.int32, np.uint8),
    (np.uint8, np.bool_),
    (np.float32, np.int64),
]


@gpu
@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # to inf
@pytest.mark.parametrize(("src", "dst"), CAST_CASES)
@pytest.mark.parametrize("sizes", [RAGGED, DENSE], ids=["ragged", "dense"])
def test_cast_matches_cpu(src, dst, sizes):
    rng = np.random.default_rng(4)
    images = [
        # halves and values out of every integer range: rounding and saturation
        (np.round(rng.uniform(-400, 70000, (h, w, 3)) * 2) / 2).astype(src)
        if np.dtype(src).kind == "f"
        else rng.integers(-1000 if src == np.int32 else 0, 256, (h, w, 3)).astype(src)
        for h, w in sizes
    ]

    def build(x, to_device):
        return fn.cast(to_device(x), dtype=dst)

    cpu, gpu_out = run_both(images, build)
    assert_close(cpu, gpu_out, levels=0, rtol=0, atol=0)


ARITH_EXPRS = {
    "affine": lambda x, r: x * r + 3,
    "div": lambda x, r: x / 255,
    "floordiv_mod": lambda x, r: (x // 3) + (x % 7),
    "compare": lambda x, r: x > r * 200,
    "minmax": lambda x, r: fn.math.min(fn.math.max(x, 40), r * 255),
    "math": lambda x, r: fn.math.sqrt(x) + fn.math.exp(x / 255) - fn.math.log(x + 1),
    "pow_clamp": lambda x, r: fn.math.clamp(x, 30, 220) ** 2,
    "rsqrt_atan2": lambda x, r: fn.math.rsqrt(x + 1) + fn.math.atan2(x, r),
    "const_array": lambda x, r: x - np.array([10, 20, 30], np.float32),
    "neg_abs": lambda x, r: fn.math.abs(-x) + fn.math.floor(x / 7),
}


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("expr", sorted(ARITH_EXPRS))
@pytest.mark.parametrize("sizes", [RAGGED, DENSE], ids=["ragged", "dense"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_arithmetic_matches_cpu(expr, sizes, dtype):
    images = make_images(sizes, dtype, seed=11)

    def build(x, to_device):
        r = fn.random.uniform(range=(0.5, 1.5))
        return ARITH_EXPRS[expr](to_device(x), r)

    cpu, gpu_out = run_both(images, build)
    assert_close(cpu, gpu_out, levels=0, rtol=1e-5, atol=1e-6)


@gpu
@pytest.mark.gpu
def test_gpu_color_ops_reject_cpu_device_for_gpu_input():
    images = make_images(DENSE, np.uint8)

    @pipeline_def(batch_size=len(images), num_threads=2, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        return fn.hue(x.gpu(), hue=10.0, device="cpu")

    with pytest.raises(ValueError, match="on the GPU"):
        pipe().build()
