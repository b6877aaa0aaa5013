/* chute._native's functions, by source file (the module itself is in native.c) */
#ifndef CHUTE_NATIVE_H
#define CHUTE_NATIVE_H

#include <Python.h>

/* parallel.c: body(context, start, stop) over [0, count) on up to `threads` threads (this one
 * included), at least min_per_thread items each; called without the GIL */
#define MAX_PARALLEL_THREADS 16
typedef void (*parallel_body)(void *context, Py_ssize_t start, Py_ssize_t stop);
void parallel_for(Py_ssize_t count, int threads, Py_ssize_t min_per_thread, parallel_body body,
                  void *context);

/* jpeg_region.c */
PyObject *jpeg_bind(PyObject *self, PyObject *args);
PyObject *jpeg_header(PyObject *self, PyObject *args);
PyObject *jpeg_decode(PyObject *self, PyObject *args);
PyObject *jpeg_decode_batch(PyObject *self, PyObject *args);
PyObject *jpeg_entropy_batch(PyObject *self, PyObject *args);

/* crop_window.c */
PyObject *random_crop_window(PyObject *self, PyObject *args);
PyObject *random_crop_windows(PyObject *self, PyObject *args);
PyObject *philox_blocks(PyObject *self, PyObject *args);

/* lut_planes.c */
PyObject *lut_u8(PyObject *self, PyObject *args);

/* jpeg_check.c */
PyObject *jpeg_check_batch(PyObject *self, PyObject *args);

/* codec_calls.c */
PyObject *codec_parse(PyObject *self, PyObject *args);
PyObject *codec_sub_streams(PyObject *self, PyObject *args);
PyObject *codec_images(PyObject *self, PyObject *args);
PyObject *codec_destroy(PyObject *self, PyObject *args);
PyObject *codec_decode(PyObject *self, PyObject *args);
PyObject *codec_allocators(PyObject *self, PyObject *args);

/* read_files.c */
PyObject *read_files(PyObject *self, PyObject *args);

#endif
