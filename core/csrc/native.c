/* chute.runtime._native: CPU kernels that run without the GIL (JPEG regions: jpeg_region.c).
 *
 * resample_u8: separable resampling of a uint8 HWC image (1-4 channels) with the
 * filters of chute/ops/geometry/_resample.py (same weights: Pillow's window and edge
 * rule, support stretched by the scale when antialiasing). It is the engine's float
 * arithmetic, computed in float32 without rounding between the passes, so it differs
 * from Pillow (which rounds its first pass to 8 bits) by at most 1.
 *
 * Layout of the work: output rows are taken in blocks of ROWS. For a block, the
 * vertical pass fills ROWS float rows of the band of columns the horizontal pass reads;
 * the block is transposed so that each input column holds its ROWS x channels values
 * side by side; the horizontal pass then sums whole columns (ROWS x channels floats at
 * a time, contiguous: the compiler vectorises it) into each output column.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 8
#define MAX_CHANNELS 4

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* an AVX2 copy of the hot loops beside the baseline one, picked at load time (glibc's
 * ifunc); elsewhere the baseline alone */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

enum { FILTER_LINEAR = 0, FILTER_CUBIC = 1, FILTER_LANCZOS3 = 2, FILTER_GAUSSIAN = 3 };

static double filter_support(int filter) {
    switch (filter) {
    case FILTER_CUBIC: return 2.0;
    case FILTER_LANCZOS3: return 3.0;
    default: return 1.0;
    }
}

static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double filter_value(int filter, double x) {
    double a = fabs(x);
    switch (filter) {
    case FILTER_LINEAR: return a < 1.0 ? 1.0 - a : 0.0;
    case FILTER_CUBIC: {
        /* Keys' cubic convolution, a = -0.5 */
        const double k = -0.5;
        if (a < 1.0) return ((k + 2.0) * a - (k + 3.0)) * a * a + 1.0;
        if (a < 2.0) return (((a - 5.0) * a + 8.0) * a - 4.0) * k;
        return 0.0;
    }
    case FILTER_LANCZOS3: return a < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
    case FILTER_GAUSSIAN: {
        /* sigma = 0.5 / sqrt(2) in units of the (stretched) radius, as DALI */
        const double sigma = 0.5 / sqrt(2.0);
        return a < 1.0 ? exp(-0.5 * (x / sigma) * (x / sigma)) : 0.0;
    }
    }
    return 0.0;
}

/* One axis: for output i, `count[i]` taps from input index `first[i]` with weights
 * `weights[i * taps ...]`; every tap read lies inside [0, in_size). */
typedef struct {
    int out_size;
    int taps;
    int lo;  /* first input index any output reads */
    int hi;  /* one past the last */
    int *first;
    int *count;
    float *weights;
} Axis;

static void axis_free(Axis *axis) {
    free(axis->first);
    free(axis->count);
    free(axis->weights);
}

/* The weights of chute.ops.geometry._resample.axis_weights, per output pixel. */
static int axis_build(Axis *axis, int in_size, int out_size, double lo, double hi, int filter,
                      int antialias) {
    double scale = (hi - lo) / out_size;
    double stretch = antialias && fabs(scale) > 1.0 ? fabs(scale) : 1.0;
    double reach = filter_support(filter) * stretch;
    int taps = (int)ceil(2.0 * reach) + 2;
    axis->out_size = out_size;
    axis->taps = taps;
    axis->first = malloc(sizeof(int) * out_size);
    axis->count = malloc(sizeof(int) * out_size);
    axis->weights = malloc(sizeof(float) * (size_t)out_size * taps);
    double *row = malloc(sizeof(double) * taps);
    if (!axis->first || !axis->count || !axis->weights || !row) {
        free(row);
        axis_free(axis);
        return -1;
    }
    axis->lo = in_size;
    axis->hi = 0;
    for (int i = 0; i < out_size; i++) {
        double center = lo + (i + 0.5) * scale;
        /* Pillow's window: indices in [trunc(c - r + .5), trunc(c + r + .5)) */
        double a = trunc(center - reach + 0.5), b = trunc(center + reach + 0.5);
        int first = (int)(a < 0 ? 0 : a > in_size ? in_size : a);
        int last = (int)(b < 0 ? 0 : b > in_size ? in_size : b);
        int n = last - first;
        if (n > taps) n = taps;
        double total = 0.0;
        for (int k = 0; k < n; k++) {
            row[k] = filter_value(filter, (first + k + 0.5 - center) / stretch);
            total += row[k];
        }
        if (total == 0.0) {
            /* the support lies outside the image: take the nearest edge pixel */
            double f = floor(center);
            first = (int)(f < 0 ? 0 : f > in_size - 1 ? in_size - 1 : f);
            n = 1;
            row[0] = total = 1.0;
        }
        /* drop zero taps at both ends so the reads stay narrow */
        while (n > 1 && row[n - 1] == 0.0) n--;
        int lead = 0;
        while (lead < n - 1 && row[lead] == 0.0) lead++;
        float *w = axis->weights + (size_t)i * taps;
        for (int k = lead; k < n; k++) w[k - lead] = (float)(row[k] / total);
        axis->first[i] = first + lead;
        axis->count[i] = n - lead;
        if (first + lead < axis->lo) axis->lo = first + lead;
        if (first + n > axis->hi) axis->hi = first + n;
    }
    free(row);
    return 0;
}

/* acc[0..n) += w * src[0..n) */
static inline void axpy_u8(float *restrict acc, const unsigned char *restrict src, float w,
                           Py_ssize_t n) {
    for (Py_ssize_t j = 0; j < n; j++) acc[j] += w * (float)src[j];
}

/* round half up and saturate; integer selects so that loops of it vectorise
 * (values stay far inside int's range: the weights sum to 1) */
static inline unsigned char saturate_u8(float v) {
    int i = (int)(v + 0.5f);
    i = i > 0 ? i : 0;
    return (unsigned char)(i < 255 ? i : 255);
}

/* src: rows of `row_stride` bytes, pixels of `channels` bytes; dst: contiguous HWC.
 * Inlined once per channel count so that the horizontal sums live in registers. */
static inline __attribute__((always_inline)) void
resample_blocks(const unsigned char *src, Py_ssize_t row_stride, const int channels,
                const Axis *ay, const Axis *ax, unsigned char *dst, float *rows, float *block) {
    const int width = (ax->hi - ax->lo) * channels; /* floats per vertical-pass row */
    const int lane = ROWS * channels;               /* floats per transposed column */
    const Py_ssize_t x_offset = (Py_ssize_t)ax->lo * channels;
    const int out_w = ax->out_size;
    for (int y0 = 0; y0 < ay->out_size; y0 += ROWS) {
        int n_rows = ay->out_size - y0 < ROWS ? ay->out_size - y0 : ROWS;
        if (n_rows < ROWS) memset(rows, 0, sizeof(float) * (size_t)width * ROWS);
        for (int r = 0; r < n_rows; r++) {
            const int y = y0 + r;
            const float *w = ay->weights + (size_t)y * ay->taps;
            float *out_row = rows + (size_t)r * width;
            const unsigned char *in_row = src + (Py_ssize_t)ay->first[y] * row_stride + x_offset;
            const float w0 = w[0];
            for (int j = 0; j < width; j++) out_row[j] = w0 * (float)in_row[j];
            for (int k = 1; k < ay->count[y]; k++)
                axpy_u8(out_row, in_row + (Py_ssize_t)k * row_stride, w[k], width);
        }
        /* block[(pixel * channels + c) * ROWS + r] = rows[r][pixel * channels + c] */
        for (int j = 0; j < width; j++)
            for (int r = 0; r < ROWS; r++) block[(size_t)j * ROWS + r] = rows[(size_t)r * width + j];
        /* the block now holds, per input column, its channels x ROWS values */
        for (int x = 0; x < out_w; x++) {
            float acc[ROWS * MAX_CHANNELS];
            const float *w = ax->weights + (size_t)x * ax->taps;
            const float *column = block + (size_t)(ax->first[x] - ax->lo) * lane;
            for (int i = 0; i < lane; i++) acc[i] = w[0] * column[i];
            for (int k = 1; k < ax->count[x]; k++)
                for (int i = 0; i < lane; i++) acc[i] += w[k] * column[(size_t)k * lane + i];
            for (int r = 0; r < ROWS; r++)
                for (int c = 0; c < channels; c++)
                    rows[(size_t)r * out_w * channels + x * channels + c] = acc[c * ROWS + r];
        }
        /* rows[r] now holds output row y0 + r in float: round and saturate */
        for (int r = 0; r < n_rows; r++) {
            const float *in = rows + (size_t)r * out_w * channels;
            unsigned char *out = dst + (size_t)(y0 + r) * out_w * channels;
            for (int j = 0; j < out_w * channels; j++) out[j] = saturate_u8(in[j]);
        }
    }
}

VECTOR_CLONES
static void resample_image(const unsigned char *src, Py_ssize_t row_stride, int channels,
                           const Axis *ay, const Axis *ax, unsigned char *dst, float *rows,
                           float *block) {
    switch (channels) {
    case 1: resample_blocks(src, row_stride, 1, ay, ax, dst, rows, block); break;
    case 2: resample_blocks(src, row_stride, 2, ay, ax, dst, rows, block); break;
    case 3: resample_blocks(src, row_stride, 3, ay, ax, dst, rows, block); break;
    default: resample_blocks(src, row_stride, 4, ay, ax, dst, rows, block); break;
    }
}

static int parse_filter(const char *name) {
    if (strcmp(name, "linear") == 0) return FILTER_LINEAR;
    if (strcmp(name, "cubic") == 0) return FILTER_CUBIC;
    if (strcmp(name, "lanczos3") == 0) return FILTER_LANCZOS3;
    if (strcmp(name, "gaussian") == 0) return FILTER_GAUSSIAN;
    return -1;
}

PyDoc_STRVAR(resample_u8_doc,
"resample_u8(src, dst, roi_y, roi_x, filter_y, filter_x, antialias)\n\n"
"Resample the region roi_y x roi_x (lo, hi pairs in continuous pixel coordinates; lo > hi\n"
"flips) of the uint8 HWC image `src` (rows may be strided) into the C-contiguous uint8\n"
"array `dst` of shape (out_h, out_w, channels). Filters: 'linear', 'cubic', 'lanczos3',\n"
"'gaussian'. Runs without the GIL.");

static PyObject *resample_u8(PyObject *self, PyObject *args) {
    PyObject *src_obj, *dst_obj;
    double y_lo, y_hi, x_lo, x_hi;
    const char *filter_y_name, *filter_x_name;
    int antialias;
    if (!PyArg_ParseTuple(args, "OO(dd)(dd)ssp", &src_obj, &dst_obj, &y_lo, &y_hi, &x_lo, &x_hi,
                          &filter_y_name, &filter_x_name, &antialias))
        return NULL;
    int filter_y = parse_filter(filter_y_name), filter_x = parse_filter(filter_x_name);
    if (filter_y < 0 || filter_x < 0) {
        PyErr_SetString(PyExc_ValueError, "filter must be 'linear', 'cubic', 'lanczos3' or 'gaussian'");
        return NULL;
    }
    Py_buffer src, dst;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_STRIDED_RO | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *result = NULL;
    Axis ay = {0}, ax = {0};
    float *rows = NULL, *block = NULL;
    int channels = src.ndim == 3 ? (int)src.shape[2] : 0;
    if (src.ndim != 3 || dst.ndim != 3 || src.itemsize != 1 || dst.itemsize != 1 ||
        channels < 1 || channels > MAX_CHANNELS || dst.shape[2] != channels ||
        src.strides[2] != 1 || src.strides[1] != channels || src.shape[0] < 1 || src.shape[1] < 1 ||
        dst.shape[0] < 1 || dst.shape[1] < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "resample_u8 takes uint8 HWC arrays of 1-4 channels with adjacent pixels");
        goto done;
    }
    int in_h = (int)src.shape[0], in_w = (int)src.shape[1];
    if (axis_build(&ay, in_h, (int)dst.shape[0], y_lo, y_hi, filter_y, antialias) < 0 ||
        axis_build(&ax, in_w, (int)dst.shape[1], x_lo, x_hi, filter_x, antialias) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    size_t width = (size_t)(ax.hi - ax.lo) * channels;
    size_t out_width = (size_t)dst.shape[1] * channels;
    rows = malloc(sizeof(float) * (width > out_width ? width : out_width) * ROWS);
    block = malloc(sizeof(float) * width * ROWS);
    if (!rows || !block) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    resample_image(src.buf, src.strides[0], channels, &ay, &ax, dst.buf, rows, block);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(rows);
    free(block);
    axis_free(&ay);
    axis_free(&ax);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

static PyMethodDef methods[] = {
    {"resample_u8", resample_u8, METH_VARARGS, resample_u8_doc},
    {"jpeg_bind", jpeg_bind, METH_VARARGS,
     "jpeg_bind(path)\n\nLoad the TurboJPEG 3 functions from the libturbojpeg at `path` (once)."},
    {"jpeg_header", jpeg_header, METH_VARARGS,
     "jpeg_header(buf) -> (height, width, subsampling, colorspace)\n\n"
     "TurboJPEG's header fields of the JPEG in `buf`; ValueError with its message."},
    {"jpeg_decode", jpeg_decode, METH_VARARGS,
     "jpeg_decode(buf, out, pixel_format, numerator, y0, x0)\n\n"
     "Decode the region of the JPEG in `buf`, scaled by numerator/8, whose top-left pixel is\n"
     "(y0, x0) and whose size is that of `out` (C-contiguous uint8 (h, w, channels)) into\n"
     "`out`, without the GIL. pixel_format: TurboJPEG's TJPF_RGB 0, TJPF_BGR 1, TJPF_GRAY 6.\n"
     "ValueError with the library's message for corrupt data."},
    {"jpeg_decode_batch", jpeg_decode_batch, METH_VARARGS,
     "jpeg_decode_batch(items, threads=1) -> list\n\n"
     "jpeg_decode(*item) for each tuple of the list `items`, all in one call without the GIL,\n"
     "on up to `threads` native threads (this one included; each takes the next item).\n"
     "Returns None per decoded item, or the library's message (str) for data it could not\n"
     "decode; bad arguments raise before anything is decoded."},
    {"jpeg_entropy_batch", jpeg_entropy_batch, METH_VARARGS,
     "jpeg_entropy_batch(buffers, max_pixels=0, threads=1) -> list\n\n"
     "Per JPEG: None where libjpeg-turbo reads all its entropy-coded data without an error or\n"
     "warning, else its message (needs jpeg_bind). One call without the GIL, on `threads`\n"
     "native threads; images over max_pixels (0: no limit) are refused unread."},
    {"jpeg_check_batch", jpeg_check_batch, METH_VARARGS,
     "jpeg_check_batch(buffers, only_jpeg=False, threads=1) -> list\n\n"
     "The structure of each JPEG in the list `buffers` (markers, segment lengths, scans up to\n"
     "their end, restart markers, EOI), checked in one call without the GIL: per buffer None\n"
     "where it is well-formed, else the reason (str). With only_jpeg, buffers that do not\n"
     "start as a JPEG pass and empty ones are refused. threads > 1 splits the list over\n"
     "that many native threads (POSIX; this one included)."},
#ifdef __SIZEOF_INT128__
    {"philox_blocks", philox_blocks, METH_VARARGS,
     "philox_blocks(key, counter, blocks, out)\n\n"
     "The first 4 * blocks words of each row's Philox4x64-10 stream into out, as NumPy's\n"
     "Philox draws them; key (n, 2), counter (n, 4), out (n, 4 * blocks), uint64."},
    {"random_crop_window", random_crop_window, METH_VARARGS,
     "random_crop_window(height, width, area_lo, area_hi, ratio_lo, ratio_hi, num_attempts,\n"
     "                   k0, k1, c0, c1, c2, c3) -> (y0, x0, crop_h, crop_w) or None\n\n"
     "crop_window.random_crop_window drawing from the Philox stream with key (k0, k1) and\n"
     "counter (c0..c3), as philox.SampleStream draws; None where no attempt fit."},
    {"random_crop_windows", random_crop_windows, METH_VARARGS,
     "random_crop_windows(shapes, area_lo, area_hi, ratio_lo, ratio_hi, num_attempts, keys,\n"
     "                    counters, out)\n\n"
     "random_crop_window for each row of shapes ((n, 2) int64 height, width) with the streams\n"
     "keys (n, 2) and counters (n, 4) (uint64), into out (n, 4) int64 without the GIL; a row\n"
     "of -1 where no attempt fit or the shape is empty (the caller's fallback)."},
#endif
    {"lut_u8", lut_u8, METH_VARARGS,
     "lut_u8(src, tables, dst, mirror)\n\n"
     "dst[c, y, x] = tables[c, src[y, x', c]] without the GIL: src a uint8 (h, w, c) view with\n"
     "contiguous pixels, tables (c, 256) of dst's item size, dst any (c, h, w) view;\n"
     "x' = w - 1 - x when mirror."},
    {"codec_parse", codec_parse, METH_VARARGS,
     "codec_parse(create, info, destroy, instance, buffers, infos, info_size, handles)\n\n"
     "nvImageCodec's CodeStreamCreateFromHostMem and CodeStreamGetImageInfo (function addresses\n"
     "create, info; destroy frees a stream whose header fails) for each contiguous buffer of\n"
     "the list (empty ones skipped), without the GIL. Record i of `infos` (info_size bytes,\n"
     "headers pre-filled) gets the image info; handles[i] (uint64) the stream, 0 where it\n"
     "failed. The streams point into the buffers: the caller keeps them alive."},
    {"codec_sub_streams", codec_sub_streams, METH_VARARGS,
     "codec_sub_streams(get_sub, handles, views, view_size, out)\n\n"
     "CodeStreamGetSubCodeStream of each non-zero handles[i] with view record i of `views`,\n"
     "into out[i] (uint64), without the GIL; entries of out already set are left as they are."},
    {"codec_images", codec_images, METH_VARARGS,
     "codec_images(create, instance, infos, info_size, images) -> (made, status)\n\n"
     "ImageCreate for each info record into images (uint64), without the GIL; stops at the\n"
     "first failure: `made` images exist, status is that failure's (0: all made)."},
    {"codec_destroy", codec_destroy, METH_VARARGS,
     "codec_destroy(destroy, handles)\n\n"
     "destroy(h) for each non-zero h of the uint64 array `handles`, without the GIL."},
    {"codec_decode", codec_decode, METH_VARARGS,
     "codec_decode(decode, wait, statuses, destroy, decoder, sources, images, params, out)\n\n"
     "DecoderDecode of the uint64 arrays `sources` and `images` with the DecodeParams at\n"
     "address `params`, FutureWaitForAll, FutureGetProcessingStatus into `out` (uint32, one\n"
     "per image) and FutureDestroy, all without the GIL. -> (stage, status): the failed\n"
     "stage (0 decode, 1 wait, 2 statuses) and its status; (2, 0) when all succeeded."},
    {"codec_allocators", codec_allocators, METH_VARARGS,
     "codec_allocators(alloc_async, free_async, host_alloc, host_free) -> 4 addresses\n\n"
     "Binds the CUDA driver's cuMemAllocAsync, cuMemFreeAsync, cuMemHostAlloc and\n"
     "cuMemFreeHost (addresses) and returns nvImageCodec allocator functions over them:\n"
     "(device_malloc, device_free, pinned_malloc, pinned_free)."},
#ifndef _WIN32
    {"read_files", read_files, METH_VARARGS,
     "read_files(paths, alloc) -> list\n\n"
     "Each file of the list `paths`, opened and read without the GIL (two releases for the\n"
     "whole list) into the writable buffers of alloc(sizes) (called once: sizes[i] is file\n"
     "i's size, 0 where it is not read; one buffer per file back). Per path: its buffer, the errno\n"
     "(int) of the failed call, or None where the file was not the size fstat said (read it\n"
     "again another way). POSIX only."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "chute.runtime._native", "CPU kernels that run without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
