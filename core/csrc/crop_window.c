/* chute.runtime._native.random_crop_window: the random-resized-crop window of one sample, drawn
 * from the sample's Philox stream in C.
 *
 * The same numbers as chute.ops.decoders.crop_window.random_crop_window drawing from
 * chute.executor.philox.SampleStream (which give NumPy's Generator(Philox(key, counter))
 * draws): Philox4x64-10 blocks, the counter moved on before each block of four words,
 * uniform doubles from a word's top 53 bits, bounded integers by Lemire's multiply-shift
 * with NumPy's rejection rule on 32-bit halves (low half first), Python's round (half to
 * even). In Python the draws cost ~13 us a sample, holding the GIL; here ~1 us.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>

#include "native.h"

#ifdef __SIZEOF_INT128__ /* GCC and Clang; elsewhere the module goes without it */

typedef unsigned __int128 u128;

typedef struct {
    uint64_t key[2];
    uint64_t counter[4];
    uint64_t words[4];
    int pos;        /* next word in `words`; 4: a new block is due */
    int has_half;   /* a 32-bit half is left over for the next 32-bit draw */
    uint32_t half;
} Stream;

static void philox_block(const uint64_t counter[4], const uint64_t key[2], uint64_t out[4]) {
    uint64_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint64_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round) {
            k0 += 0x9E3779B97F4A7C15ULL;
            k1 += 0xBB67AE8584CAA73BULL;
        }
        u128 p0 = (u128)0xD2E7470EE14C6C93ULL * c0;
        u128 p1 = (u128)0xCA5A826395121157ULL * c2;
        uint64_t n0 = (uint64_t)(p1 >> 64) ^ c1 ^ k0, n2 = (uint64_t)(p0 >> 64) ^ c3 ^ k1;
        c1 = (uint64_t)p1;
        c3 = (uint64_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static uint64_t next64(Stream *s) {
    if (s->pos == 4) {
        for (int i = 0; i < 4; i++)  /* the counter moves on (with carry) first */
            if (++s->counter[i] != 0) break;
        philox_block(s->counter, s->key, s->words);
        s->pos = 0;
    }
    return s->words[s->pos++];
}

static uint32_t next32(Stream *s) {
    if (s->has_half) {
        s->has_half = 0;
        return s->half;
    }
    uint64_t word = next64(s);
    s->half = (uint32_t)(word >> 32);
    s->has_half = 1;
    return (uint32_t)word;
}

static double uniform(Stream *s, double low, double high) {
    return low + (high - low) * ((double)(next64(s) >> 11) * (1.0 / 9007199254740992.0));
}

/* Generator.integers(0, span + 1) for span < 2**32 */
static int64_t bounded(Stream *s, uint64_t span) {
    if (span == 0) return 0;
    if (span == 0xFFFFFFFFULL) return next32(s);
    uint64_t excl = span + 1;
    uint64_t m = (uint64_t)next32(s) * excl;
    if ((m & 0xFFFFFFFFULL) < excl) {
        uint64_t threshold = (0xFFFFFFFFULL - span) % excl;
        while ((m & 0xFFFFFFFFULL) < threshold) m = (uint64_t)next32(s) * excl;
    }
    return (int64_t)(m >> 32);
}

/* Python's round() of a double to an integer: half to even (the default rounding mode) */
static long long round_even(double v) { return (long long)nearbyint(v); }

/* philox_blocks(key, counter, blocks, out): the first 4 * blocks words of each row's
 * stream, as NumPy's Philox gives them (the counter moves on, with carry, before each
 * block). key (n, 2), counter (n, 4) and out (n, 4 * blocks): C-contiguous uint64. */
PyObject *philox_blocks(PyObject *self, PyObject *args) {
    Py_buffer key, counter, out;
    int blocks;
    if (!PyArg_ParseTuple(args, "y*y*iw*", &key, &counter, &blocks, &out)) return NULL;
    Py_ssize_t n = key.len / 16;
    PyObject *result = NULL;
    if (blocks < 0 || key.len != n * 16 || counter.len != n * 32 ||
        out.len != n * 32 * (Py_ssize_t)blocks) {
        PyErr_SetString(PyExc_ValueError, "philox_blocks: key (n, 2), counter (n, 4) and out "
                                          "(n, 4 * blocks) uint64 buffers");
        goto done;
    }
    const uint64_t *k = key.buf, *c = counter.buf;
    uint64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t ctr[4] = {c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]};
        for (int b = 0; b < blocks; b++) {
            for (int w = 0; w < 4; w++)
                if (++ctr[w] != 0) break;
            philox_block(ctr, &k[2 * i], &o[(size_t)i * 4 * blocks + 4 * (size_t)b]);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&key);
    PyBuffer_Release(&counter);
    PyBuffer_Release(&out);
    return result;
}

/* the attempts of random_crop_window from the stream of (key, counter): 1 and the window in
 * out[0..3] (y0, x0, crop_h, crop_w) when one fits, else 0 */
static int draw_window(long long height, long long width, double area_lo, double area_hi,
                       double ratio_lo, double ratio_hi, int attempts, const uint64_t key[2],
                       const uint64_t counter[4], long long out[4]) {
    Stream s = {{key[0], key[1]}, {counter[0], counter[1], counter[2], counter[3]},
                {0, 0, 0, 0}, 4, 0, 0};
    double image_area = (double)(height * width);
    double log_lo = log(ratio_lo), log_hi = log(ratio_hi);
    for (int k = 0; k < attempts; k++) {
        double target = image_area * uniform(&s, area_lo, area_hi);
        double aspect = exp(uniform(&s, log_lo, log_hi));
        long long crop_w = round_even(sqrt(target * aspect));
        long long crop_h = round_even(sqrt(target / aspect));
        if (0 < crop_w && crop_w <= width && 0 < crop_h && crop_h <= height) {
            out[0] = bounded(&s, (uint64_t)(height - crop_h));
            out[1] = bounded(&s, (uint64_t)(width - crop_w));
            out[2] = crop_h;
            out[3] = crop_w;
            return 1;
        }
    }
    return 0;
}

static int check_ranges(double area_lo, double area_hi, double ratio_lo, double ratio_hi) {
    if (!(0 < area_lo && area_lo <= area_hi) || !(0 < ratio_lo && ratio_lo <= ratio_hi)) {
        PyErr_SetString(PyExc_ValueError, "area and aspect_ratio must be 0 < min <= max");
        return -1;
    }
    return 0;
}

PyObject *random_crop_window(PyObject *self, PyObject *args) {
    long long height, width;
    double area_lo, area_hi, ratio_lo, ratio_hi;
    int attempts;
    unsigned long long k0, k1, c0, c1, c2, c3;
    if (!PyArg_ParseTuple(args, "LLddddiKKKKKK", &height, &width, &area_lo, &area_hi, &ratio_lo,
                          &ratio_hi, &attempts, &k0, &k1, &c0, &c1, &c2, &c3))
        return NULL;
    if (height <= 0 || width <= 0 || height > 0xFFFFFFFFLL || width > 0xFFFFFFFFLL) {
        PyErr_Format(PyExc_ValueError, "image size must be positive, got %lldx%lld (HxW)",
                     height, width);
        return NULL;
    }
    if (check_ranges(area_lo, area_hi, ratio_lo, ratio_hi) < 0) return NULL;
    const uint64_t key[2] = {k0, k1}, counter[4] = {c0, c1, c2, c3};
    long long w[4];
    if (draw_window(height, width, area_lo, area_hi, ratio_lo, ratio_hi, attempts, key, counter, w))
        return Py_BuildValue("LLLL", w[0], w[1], w[2], w[3]);
    Py_RETURN_NONE; /* no attempt fit: the caller takes the centre crop */
}

PyObject *random_crop_windows(PyObject *self, PyObject *args) {
    PyObject *shapes_obj, *keys_obj, *counters_obj, *out_obj;
    double area_lo, area_hi, ratio_lo, ratio_hi;
    int attempts;
    if (!PyArg_ParseTuple(args, "OddddiOOO", &shapes_obj, &area_lo, &area_hi, &ratio_lo,
                          &ratio_hi, &attempts, &keys_obj, &counters_obj, &out_obj))
        return NULL;
    if (check_ranges(area_lo, area_hi, ratio_lo, ratio_hi) < 0) return NULL;
    Py_buffer sh = {0}, k = {0}, c = {0}, o = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(shapes_obj, &sh, PyBUF_C_CONTIGUOUS) < 0 ||
        PyObject_GetBuffer(keys_obj, &k, PyBUF_C_CONTIGUOUS) < 0 ||
        PyObject_GetBuffer(counters_obj, &c, PyBUF_C_CONTIGUOUS) < 0 ||
        PyObject_GetBuffer(out_obj, &o, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    Py_ssize_t n = sh.len / 16;
    if (sh.itemsize != 8 || k.itemsize != 8 || c.itemsize != 8 || o.itemsize != 8 ||
        sh.len != n * 16 || k.len != n * 16 || c.len != n * 32 || o.len != n * 32) {
        PyErr_SetString(PyExc_ValueError,
                        "random_crop_windows: shapes (n, 2) and out (n, 4) int64, keys (n, 2) and "
                        "counters (n, 4) uint64");
        goto done;
    }
    const long long *shape = sh.buf;
    const uint64_t *key = k.buf, *counter = c.buf;
    long long *out = o.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        long long h = shape[2 * i], w = shape[2 * i + 1], *win = out + 4 * i;
        win[0] = win[1] = win[2] = win[3] = 0;
        if (h <= 0 || w <= 0 || h > 0xFFFFFFFFLL || w > 0xFFFFFFFFLL ||
            !draw_window(h, w, area_lo, area_hi, ratio_lo, ratio_hi, attempts, key + 2 * i,
                         counter + 4 * i, win))
            win[0] = win[1] = win[2] = win[3] = -1; /* the caller's fallback */
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (sh.obj) PyBuffer_Release(&sh);
    if (k.obj) PyBuffer_Release(&k);
    if (c.obj) PyBuffer_Release(&c);
    if (o.obj) PyBuffer_Release(&o);
    return result;
}

#endif
