/* chute.runtime._native.codec_*: nvImageCodec's per-sample calls for a whole batch, in one call
 * without the GIL.
 *
 * A mixed decoder makes seven short nvImageCodec calls per sample (parse the code stream, read
 * its header, cut the ROI's sub-stream, describe the output image, and free all three). Made
 * through ctypes one at a time, they held the GIL for a fifth of a 32-core host's training
 * step (py-spy, session 13), the GIL being what bound the pipeline. Here each is one loop over
 * the batch with the GIL released. The library is not linked: chute.gpu.codec_api passes the
 * addresses of the functions ctypes loaded (all return nvimgcodecStatus_t, 0 for success).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>

#include "native.h"

typedef int (*create_stream_fn)(void *instance, void **stream, const void *data, size_t length,
                                const void *view);
typedef int (*stream_info_fn)(void *stream, void *info);
typedef int (*sub_stream_fn)(void *stream, void **sub, const void *view);
typedef int (*create_image_fn)(void *instance, void **image, const void *info);
typedef int (*destroy_fn)(void *handle);
typedef int (*decode_fn)(void *decoder, const void *streams, const void *images, int batch_size,
                         const void *params, void **future);
typedef int (*statuses_fn)(void *future, void *statuses, size_t *size);

/* a C-contiguous buffer of 8-byte items (uint64 NumPy arrays), writable where asked */
static int u64_buffer(PyObject *obj, Py_buffer *view, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != 8 || view->len % 8) {
        PyErr_Format(PyExc_ValueError, "%s must be a contiguous array of 8-byte items", name);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static void *as_fn(unsigned long long address) { return (void *)(uintptr_t)address; }

PyObject *codec_parse(PyObject *self, PyObject *args) {
    unsigned long long create_a, info_a, destroy_a, instance;
    PyObject *buffers_obj, *infos_obj, *handles_obj;
    Py_ssize_t info_size;
    if (!PyArg_ParseTuple(args, "KKKKOOnO", &create_a, &info_a, &destroy_a, &instance,
                          &buffers_obj, &infos_obj, &info_size, &handles_obj))
        return NULL;
    PyObject *seq = PySequence_Fast(buffers_obj, "codec_parse takes a list of buffers");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), got = 0;
    Py_buffer inf = {0}, h = {0};
    Py_buffer *views = PyMem_Calloc(n ? n : 1, sizeof(Py_buffer));
    PyObject *result = NULL;
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    if (u64_buffer(handles_obj, &h, 1, "handles") < 0 ||
        PyObject_GetBuffer(infos_obj, &inf, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (h.len / 8 != n || info_size <= 0 || inf.len < n * info_size) {
        PyErr_SetString(PyExc_ValueError, "codec_parse: buffers, handles and infos disagree");
        goto done;
    }
    for (; got < n; got++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_SIMPLE) < 0)
            goto done;
    create_stream_fn create = (create_stream_fn)as_fn(create_a);
    stream_info_fn info = (stream_info_fn)as_fn(info_a);
    destroy_fn destroy = (destroy_fn)as_fn(destroy_a);
    unsigned long long *handle = h.buf;
    char *infos = inf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        handle[i] = 0;
        if (views[i].len <= 0) continue;
        void *stream = NULL; /* a non-null handle would be re-initialised, not a new one */
        if (create((void *)(uintptr_t)instance, &stream, views[i].buf, (size_t)views[i].len,
                   NULL) != 0 || !stream)
            continue;
        if (info(stream, infos + i * info_size) != 0) {
            destroy(stream);
            continue;
        }
        handle[i] = (unsigned long long)(uintptr_t)stream;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    if (inf.obj) PyBuffer_Release(&inf);
    if (h.obj) PyBuffer_Release(&h);
    Py_DECREF(seq);
    return result;
}

PyObject *codec_sub_streams(PyObject *self, PyObject *args) {
    unsigned long long get_a;
    PyObject *handles_obj, *views_obj, *out_obj;
    Py_ssize_t view_size;
    if (!PyArg_ParseTuple(args, "KOOnO", &get_a, &handles_obj, &views_obj, &view_size, &out_obj))
        return NULL;
    Py_buffer h = {0}, v = {0}, o = {0};
    PyObject *result = NULL;
    if (u64_buffer(handles_obj, &h, 0, "handles") < 0 || u64_buffer(out_obj, &o, 1, "out") < 0 ||
        PyObject_GetBuffer(views_obj, &v, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    Py_ssize_t n = h.len / 8;
    if (o.len / 8 != n || view_size <= 0 || v.len < n * view_size) {
        PyErr_SetString(PyExc_ValueError, "codec_sub_streams: handles, views and out disagree");
        goto done;
    }
    sub_stream_fn get = (sub_stream_fn)as_fn(get_a);
    const unsigned long long *handle = h.buf;
    unsigned long long *out = o.buf;
    const char *views = v.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        void *sub = NULL;
        if (out[i] || !handle[i]) continue; /* out[i] set: no region, the stream itself */
        if (get((void *)(uintptr_t)handle[i], &sub, views + i * view_size) == 0 && sub)
            out[i] = (unsigned long long)(uintptr_t)sub;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (h.obj) PyBuffer_Release(&h);
    if (v.obj) PyBuffer_Release(&v);
    if (o.obj) PyBuffer_Release(&o);
    return result;
}

PyObject *codec_images(PyObject *self, PyObject *args) {
    unsigned long long create_a, instance;
    PyObject *infos_obj, *images_obj;
    Py_ssize_t info_size;
    if (!PyArg_ParseTuple(args, "KKOnO", &create_a, &instance, &infos_obj, &info_size, &images_obj))
        return NULL;
    Py_buffer inf = {0}, im = {0};
    PyObject *result = NULL;
    if (u64_buffer(images_obj, &im, 1, "images") < 0 ||
        PyObject_GetBuffer(infos_obj, &inf, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    Py_ssize_t n = im.len / 8, made = 0;
    if (info_size <= 0 || inf.len < n * info_size) {
        PyErr_SetString(PyExc_ValueError, "codec_images: infos and images disagree");
        goto done;
    }
    create_image_fn create = (create_image_fn)as_fn(create_a);
    unsigned long long *images = im.buf;
    const char *infos = inf.buf;
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; made < n; made++) {
        void *image = NULL;
        status = create((void *)(uintptr_t)instance, &image, infos + made * info_size);
        if (status != 0) break;
        images[made] = (unsigned long long)(uintptr_t)image;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("ni", made, status);
done:
    if (inf.obj) PyBuffer_Release(&inf);
    if (im.obj) PyBuffer_Release(&im);
    return result;
}

PyObject *codec_destroy(PyObject *self, PyObject *args) {
    unsigned long long destroy_a;
    PyObject *handles_obj;
    if (!PyArg_ParseTuple(args, "KO", &destroy_a, &handles_obj)) return NULL;
    Py_buffer h = {0};
    if (u64_buffer(handles_obj, &h, 0, "handles") < 0) return NULL;
    destroy_fn destroy = (destroy_fn)as_fn(destroy_a);
    const unsigned long long *handle = h.buf;
    Py_ssize_t n = h.len / 8;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (handle[i]) destroy((void *)(uintptr_t)handle[i]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&h);
    Py_RETURN_NONE;
}

/* A batch's decode, its wait and its per-image statuses in one call without the GIL.
 *
 * Through ctypes these were four calls, each taking the GIL back on return; the thread that
 * runs a hardware decoder's calls spent 1.5% of its time waiting for the GIL that way with
 * chute's two lanes and 2.5% with three lanes beside a CPU share (py-spy --native, 32-core host,
 * session 15), time in which the decoder had nothing queued. Returns (stage, status): the
 * stage that failed (0 decode, 1 wait, 2 statuses) and its status, (2, 0) when all went well.
 * The future is always destroyed. */
PyObject *codec_decode(PyObject *self, PyObject *args) {
    unsigned long long decode_a, wait_a, statuses_a, destroy_a, decoder, params;
    PyObject *sources_obj, *images_obj, *statuses_obj;
    if (!PyArg_ParseTuple(args, "KKKKKOOKO", &decode_a, &wait_a, &statuses_a, &destroy_a,
                          &decoder, &sources_obj, &images_obj, &params, &statuses_obj))
        return NULL;
    Py_buffer s = {0}, im = {0}, st = {0};
    PyObject *result = NULL;
    if (u64_buffer(sources_obj, &s, 0, "sources") < 0 ||
        u64_buffer(images_obj, &im, 0, "images") < 0 ||
        PyObject_GetBuffer(statuses_obj, &st, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    Py_ssize_t n = s.len / 8;
    if (im.len / 8 != n || st.len != n * 4 || n > INT_MAX || !decoder || !params) {
        PyErr_SetString(PyExc_ValueError,
                        "codec_decode: sources, images and statuses (4 bytes each) disagree");
        goto done;
    }
    decode_fn decode = (decode_fn)as_fn(decode_a);
    destroy_fn wait = (destroy_fn)as_fn(wait_a), destroy = (destroy_fn)as_fn(destroy_a);
    statuses_fn statuses = (statuses_fn)as_fn(statuses_a);
    int stage = 0, status = 0;
    size_t size = (size_t)n;
    Py_BEGIN_ALLOW_THREADS
    void *future = NULL;
    status = decode((void *)(uintptr_t)decoder, s.buf, im.buf, (int)n,
                    (const void *)(uintptr_t)params, &future);
    if (status == 0 && (stage = 1, status = wait(future)) == 0) {
        stage = 2;
        status = statuses(future, st.buf, &size);
    }
    if (future) destroy(future);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("ii", stage, status);
done:
    if (s.obj) PyBuffer_Release(&s);
    if (im.obj) PyBuffer_Release(&im);
    if (st.obj) PyBuffer_Release(&st);
    return result;
}

/* nvImageCodec's device and pinned allocators (nvimgcodecDeviceAllocator_t,
 * nvimgcodecPinnedAllocator_t) over the CUDA driver: device memory from the device's
 * stream-ordered pool (cuMemAllocAsync / cuMemFreeAsync, no device-wide synchronisation when
 * nvJPEG grows or drops a buffer, unlike its default cudaMalloc / cudaFree) and page-locked
 * host memory (cuMemHostAlloc / cuMemFreeHost, what nvJPEG's default does). Given both,
 * nvImageCodec's nvJPEG decoders create their handles with them; the paddings go with the
 * structures (chute.gpu.codec_api). The driver's entry points are the addresses ctypes found
 * in libcuda, set once per process. */
typedef int (*cu_alloc_async_fn)(unsigned long long *dptr, size_t size, void *stream);
typedef int (*cu_free_async_fn)(unsigned long long dptr, void *stream);
typedef int (*cu_host_alloc_fn)(void **ptr, size_t size, unsigned int flags);
typedef int (*cu_host_free_fn)(void *ptr);

static cu_alloc_async_fn cu_alloc_async;
static cu_free_async_fn cu_free_async;
static cu_host_alloc_fn cu_host_alloc;
static cu_host_free_fn cu_host_free;

static int device_malloc(void *ctx, void **ptr, size_t size, void *stream) {
    (void)ctx;
    unsigned long long address = 0;
    int status = cu_alloc_async(&address, size ? size : 1, stream);
    *ptr = status == 0 ? (void *)(uintptr_t)address : NULL;
    return status;
}

static int device_free(void *ctx, void *ptr, size_t size, void *stream) {
    (void)ctx;
    (void)size;
    return ptr ? cu_free_async((unsigned long long)(uintptr_t)ptr, stream) : 0;
}

static int pinned_malloc(void *ctx, void **ptr, size_t size, void *stream) {
    (void)ctx;
    (void)stream;
    int status = cu_host_alloc(ptr, size ? size : 1, 0);
    if (status != 0) *ptr = NULL;
    return status;
}

static int pinned_free(void *ctx, void *ptr, size_t size, void *stream) {
    (void)ctx;
    (void)size;
    (void)stream;
    return ptr ? cu_host_free(ptr) : 0;
}

PyObject *codec_allocators(PyObject *self, PyObject *args) {
    unsigned long long alloc_a, free_a, host_alloc_a, host_free_a;
    if (!PyArg_ParseTuple(args, "KKKK", &alloc_a, &free_a, &host_alloc_a, &host_free_a))
        return NULL;
    if (!alloc_a || !free_a || !host_alloc_a || !host_free_a) {
        PyErr_SetString(PyExc_ValueError, "codec_allocators: a driver entry point is null");
        return NULL;
    }
    cu_alloc_async = (cu_alloc_async_fn)as_fn(alloc_a);
    cu_free_async = (cu_free_async_fn)as_fn(free_a);
    cu_host_alloc = (cu_host_alloc_fn)as_fn(host_alloc_a);
    cu_host_free = (cu_host_free_fn)as_fn(host_free_a);
    return Py_BuildValue("KKKK", (unsigned long long)(uintptr_t)device_malloc,
                         (unsigned long long)(uintptr_t)device_free,
                         (unsigned long long)(uintptr_t)pinned_malloc,
                         (unsigned long long)(uintptr_t)pinned_free);
}
