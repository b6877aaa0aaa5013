/* chute.runtime._native.lut_u8: table lookup of a uint8 HWC image into planes, in one call without
 * the GIL.
 *
 * crop_mirror_normalize on uint8 images is a table per channel (256 output values: the
 * arithmetic and the dtype conversion done once). OpenCV applies it as flip + split + one
 * LUT per plane, five GIL releases per image; with many worker threads each take of the
 * GIL back waits its turn. Here dst[c, y, x] = table[c][src[y, x', c]] (x' = w - 1 - x when
 * mirrored) is one pass, dst any strided (C, H, W) view: CHW, or HWC transposed, or a
 * window of a batch slot.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

#define LUT_LOOP(T)                                                                          \
    for (Py_ssize_t y = 0; y < h; y++) {                                                     \
        const unsigned char *row = src + y * src_row;                                        \
        for (Py_ssize_t c = 0; c < channels; c++) {                                          \
            const T *table = (const T *)tables + c * 256;                                    \
            char *out = dst + c * dst_c + y * dst_y;                                         \
            const unsigned char *px = row + c + (mirror ? (w - 1) * channels : 0);           \
            Py_ssize_t step = mirror ? -channels : channels;                                 \
            for (Py_ssize_t x = 0; x < w; x++, px += step, out += dst_x)                     \
                *(T *)out = table[*px];                                                      \
        }                                                                                    \
    }

PyObject *lut_u8(PyObject *self, PyObject *args) {
    PyObject *src_obj, *tables_obj, *dst_obj;
    int mirror;
    if (!PyArg_ParseTuple(args, "OOOp", &src_obj, &tables_obj, &dst_obj, &mirror)) return NULL;
    Py_buffer s = {0}, t = {0}, d = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(src_obj, &s, PyBUF_STRIDES | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(tables_obj, &t, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(dst_obj, &d, PyBUF_WRITABLE | PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        goto done;
    if (s.ndim != 3 || s.itemsize != 1 || s.strides[2] != 1 || s.strides[1] != s.shape[2]) {
        PyErr_SetString(PyExc_ValueError, "src must be uint8 (h, w, c) with contiguous pixels");
        goto done;
    }
    Py_ssize_t h = s.shape[0], w = s.shape[1], channels = s.shape[2];
    Py_ssize_t size = d.itemsize;
    if (d.ndim != 3 || d.shape[0] != channels || d.shape[1] != h || d.shape[2] != w ||
        (size != 1 && size != 2 && size != 4 && size != 8)) {
        PyErr_SetString(PyExc_ValueError, "dst must be a (c, h, w) view of 1, 2, 4 or 8-byte items");
        goto done;
    }
    if (t.itemsize != size || t.len != channels * 256 * size) {
        PyErr_SetString(PyExc_ValueError, "tables must be (c, 256) of dst's item size");
        goto done;
    }
    const unsigned char *src = s.buf;
    const void *tables = t.buf;
    char *dst = d.buf;
    Py_ssize_t src_row = s.strides[0], dst_c = d.strides[0], dst_y = d.strides[1];
    Py_ssize_t dst_x = d.strides[2];
    Py_BEGIN_ALLOW_THREADS
    switch (size) {
    case 1: LUT_LOOP(unsigned char) break;
    case 2: LUT_LOOP(unsigned short) break;
    case 4: LUT_LOOP(unsigned int) break;
    default: LUT_LOOP(unsigned long long) break;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (s.obj) PyBuffer_Release(&s);
    if (t.obj) PyBuffer_Release(&t);
    if (d.obj) PyBuffer_Release(&d);
    return result;
}
