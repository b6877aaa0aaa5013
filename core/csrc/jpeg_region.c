/* chute.runtime._native's JPEG functions: a region (or all) of a JPEG decoded in one call
 * without the GIL, through libjpeg-turbo's TurboJPEG 3 API.
 *
 * The library is not linked: jpeg_bind(path) opens the libturbojpeg that
 * chute.ops.decoders.turbo found (the same file its ctypes binding uses) and looks up
 * the few tj3 functions. Each thread keeps its own decompressor and scratch buffer.
 *
 * jpeg_decode(buf, out, pixel_format, numerator, y0, x0) fills `out` (an exact region of
 * the image scaled by numerator/8) in one GIL-free call: header, scaling, cropping region
 * with the margins libjpeg-turbo needs to produce the same pixels as a full decode, the
 * decode into the scratch buffer and the copy of the region into `out`. A whole image is
 * decoded straight into `out`. The margins are those of turbo.TurboJPEG.decode, which
 * stays the path where this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

#ifdef _WIN32

PyObject *jpeg_bind(PyObject *self, PyObject *args) {
    PyErr_SetString(PyExc_OSError, "chute.runtime._native does not load libturbojpeg on Windows");
    return NULL;
}
PyObject *jpeg_header(PyObject *self, PyObject *args) { return jpeg_bind(self, args); }
PyObject *jpeg_decode(PyObject *self, PyObject *args) { return jpeg_bind(self, args); }
PyObject *jpeg_decode_batch(PyObject *self, PyObject *args) { return jpeg_bind(self, args); }
PyObject *jpeg_entropy_batch(PyObject *self, PyObject *args) { return jpeg_bind(self, args); }

#else

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* turbojpeg.h, version 3 */
typedef struct { int num, denom; } tj_scaling;
typedef struct { int x, y, w, h; } tj_region;
enum { TJINIT_DECOMPRESS = 1, TJINIT_TRANSFORM = 2 };
enum { TJXOPT_NOOUTPUT = 16 };
typedef struct {
    tj_region r;
    int op, options;
    void *data;
    void *custom_filter;
} tj_transform;
enum { TJPARAM_STOPONWARNING = 0, TJPARAM_SUBSAMP = 4, TJPARAM_JPEGWIDTH = 5,
       TJPARAM_JPEGHEIGHT = 6, TJPARAM_COLORSPACE = 8 };
enum { TJPF_RGB = 0, TJPF_BGR = 1, TJPF_GRAY = 6 };

static struct {
    void *(*init)(int);
    void (*destroy)(void *);
    int (*set)(void *, int, int);
    int (*get)(void *, int);
    int (*header)(void *, const unsigned char *, size_t);
    int (*scaling)(void *, tj_scaling);
    int (*cropping)(void *, tj_region);
    int (*decompress8)(void *, const unsigned char *, size_t, unsigned char *, int, int);
    char *(*error)(void *);
    int (*transform)(void *, const unsigned char *, size_t, int, unsigned char **, size_t *,
                     const tj_transform *);
} tj;
static int bound = 0;

/* a thread's decompressor and scratch buffer, freed when the thread ends */
typedef struct {
    void *handle;
    void *transformer; /* jpeg_entropy_batch's */
    unsigned char *scratch;
    size_t capacity;
} Local;

static pthread_key_t local_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void local_free(void *p) {
    Local *local = p;
    if (local->handle) tj.destroy(local->handle);
    if (local->transformer) tj.destroy(local->transformer);
    free(local->scratch);
    free(local);
}

static void make_key(void) { pthread_key_create(&local_key, local_free); }

static Local *thread_local_state(void) {
    pthread_once(&key_once, make_key);
    Local *local = pthread_getspecific(local_key);
    if (!local) {
        local = calloc(1, sizeof(Local));
        if (!local) return NULL;
        pthread_setspecific(local_key, local);
    }
    if (!local->handle) {
        local->handle = tj.init(TJINIT_DECOMPRESS);
        /* corrupt or truncated data is an error, not a warning with grey rows */
        if (local->handle) tj.set(local->handle, TJPARAM_STOPONWARNING, 1);
    }
    return local->handle ? local : NULL;
}

/* Copy the handle's error message and drop the handle: one that failed mid-header can
 * fail the next, valid header too, so the thread starts afresh. */
static void fail(Local *local, char *message, size_t size) {
    snprintf(message, size, "%s", tj.error(local->handle));
    tj.destroy(local->handle);
    local->handle = NULL;
}

PyObject *jpeg_bind(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    if (bound) Py_RETURN_NONE;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        PyErr_Format(PyExc_OSError, "cannot load %s: %s", path, dlerror());
        return NULL;
    }
    const char *names[] = {"tj3Init", "tj3Destroy", "tj3Set", "tj3Get", "tj3DecompressHeader",
                           "tj3SetScalingFactor", "tj3SetCroppingRegion", "tj3Decompress8",
                           "tj3GetErrorStr", "tj3Transform"};
    void **slots[] = {(void **)&tj.init, (void **)&tj.destroy, (void **)&tj.set,
                      (void **)&tj.get, (void **)&tj.header, (void **)&tj.scaling,
                      (void **)&tj.cropping, (void **)&tj.decompress8, (void **)&tj.error,
                      (void **)&tj.transform};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        *slots[i] = dlsym(lib, names[i]);
        if (!*slots[i]) {
            PyErr_Format(PyExc_OSError, "%s has no %s (not libjpeg-turbo 3)", path, names[i]);
            dlclose(lib);
            return NULL;
        }
    }
    bound = 1;  /* the library stays loaded for the life of the process */
    Py_RETURN_NONE;
}

static int check_bound(void) {
    if (!bound) PyErr_SetString(PyExc_RuntimeError, "jpeg_bind() was not called");
    return bound;
}

PyObject *jpeg_header(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!check_bound() || !PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    PyObject *result = NULL;
    char message[256];
    Local *local = thread_local_state();
    if (!local) {
        PyErr_NoMemory();
    } else if (tj.header(local->handle, buf.buf, (size_t)buf.len) != 0) {
        fail(local, message, sizeof(message));
        PyErr_SetString(PyExc_ValueError, message);
    } else {
        void *h = local->handle;
        result = Py_BuildValue("iiii", tj.get(h, TJPARAM_JPEGHEIGHT), tj.get(h, TJPARAM_JPEGWIDTH),
                               tj.get(h, TJPARAM_SUBSAMP), tj.get(h, TJPARAM_COLORSPACE));
    }
    PyBuffer_Release(&buf);
    return result;
}

/* Width in pixels of one MCU per chroma subsampling (TJSAMP_444, 422, 420, GRAY, 440,
 * 411, 441); a cropping region starts on an MCU boundary. */
static int mcu_width(int subsampling) {
    static const int widths[] = {8, 16, 16, 8, 8, 32, 8};
    return subsampling >= 0 && subsampling < 7 ? widths[subsampling] : 0;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* Decode rows y0..y0+out_h, columns x0..x0+out_w of the image scaled by numerator/8 into
 * `out` (rows of out_w * channels bytes). Returns 0, or -1 with `message` set. */
static int decode_region(const unsigned char *jpeg, size_t size, unsigned char *out, int out_h,
                         int out_w, int channels, int format, int numerator, int y0, int x0,
                         char *message, size_t message_size) {
    Local *local = thread_local_state();
    if (!local) {
        snprintf(message, message_size, "out of memory");
        return -1;
    }
    void *h = local->handle;
    if (tj.header(h, jpeg, size) != 0) goto failed;
    int height = tj.get(h, TJPARAM_JPEGHEIGHT), width = tj.get(h, TJPARAM_JPEGWIDTH);
    int scaled_h = (int)(((long long)height * numerator + 7) / 8);
    int scaled_w = (int)(((long long)width * numerator + 7) / 8);
    int y1 = y0 + out_h, x1 = x0 + out_w;
    if (y0 < 0 || x0 < 0 || y1 > scaled_h || x1 > scaled_w) {
        snprintf(message, message_size, "region (%d, %d, %d, %d) outside the %dx%d scaled image",
                 y0, x0, y1, x1, scaled_h, scaled_w);
        return -1;
    }
    int common = gcd(numerator, 8);
    if (tj.scaling(h, (tj_scaling){numerator / common, 8 / common}) != 0) goto failed;
    /* One row above and below, one column left and one MCU right: chroma upsampling at a
     * region's edges reads pixels beyond them, and libjpeg-turbo treats the region's right
     * edge as the image's (see turbo.TurboJPEG.decode). */
    int mcu = mcu_width(tj.get(h, TJPARAM_SUBSAMP)) * numerator / 8;
    int ry0 = y0 > 0 ? y0 - 1 : 0, rx0 = x0 > 0 ? x0 - 1 : 0;
    int ry1 = y1 + 1 < scaled_h ? y1 + 1 : scaled_h;
    int rx1 = x1 + mcu < scaled_w ? x1 + mcu : scaled_w;
    tj_region region = {0, 0, 0, 0};
    if ((ry0 == 0 && rx0 == 0 && ry1 == scaled_h && rx1 == scaled_w) || mcu == 0) {
        ry0 = rx0 = 0;
        ry1 = scaled_h;
        rx1 = scaled_w;
    } else {
        rx0 -= rx0 % mcu;
        region = (tj_region){rx0, ry0, rx1 - rx0, ry1 - ry0};
    }
    if (tj.cropping(h, region) != 0) goto failed;
    size_t row = (size_t)out_w * channels;
    if (out_h == scaled_h && out_w == scaled_w) {  /* the whole image: straight into out */
        if (tj.decompress8(h, jpeg, size, out, (int)row, format) != 0) goto failed;
        return 0;
    }
    size_t pitch = (size_t)(rx1 - rx0) * channels;
    size_t needed = pitch * (size_t)(ry1 - ry0);
    if (needed > local->capacity) {
        unsigned char *grown = realloc(local->scratch, needed);
        if (!grown) {
            snprintf(message, message_size, "out of memory for a %dx%d region", ry1 - ry0,
                     rx1 - rx0);
            return -1;
        }
        local->scratch = grown;
        local->capacity = needed;
    }
    if (tj.decompress8(h, jpeg, size, local->scratch, (int)pitch, format) != 0) goto failed;
    const unsigned char *src = local->scratch + (size_t)(y0 - ry0) * pitch + (size_t)(x0 - rx0) * channels;
    for (int r = 0; r < out_h; r++) memcpy(out + r * row, src + r * pitch, row);
    return 0;
failed:
    fail(local, message, message_size);
    return -1;
}

/* per item None (status 0) or its message: the batch calls' result */
static PyObject *message_list(const int *status, char (*messages)[256], Py_ssize_t n) {
    PyObject *result = PyList_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        PyObject *entry = status[i] == 0 ? Py_NewRef(Py_None) : PyUnicode_DecodeUTF8(
            messages[i], (Py_ssize_t)strlen(messages[i]), "replace");
        if (!entry) Py_CLEAR(result);
        else PyList_SET_ITEM(result, i, entry);
    }
    return result;
}

/* One region to decode: its buffers are held (with the GIL) until the decode is done. */
typedef struct {
    Py_buffer buf, out;
    int format, numerator, y0, x0, channels;
} Task;

/* Parse (buf, out, pixel_format, numerator, y0, x0) into `task`; 0, or -1 with an error set
 * (and nothing held). */
static int task_open(Task *task, PyObject *args) {
    PyObject *out_obj;
    if (!PyArg_ParseTuple(args, "y*Oiiii", &task->buf, &out_obj, &task->format,
                          &task->numerator, &task->y0, &task->x0))
        return -1;
    if (PyObject_GetBuffer(out_obj, &task->out,
                           PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&task->buf);
        return -1;
    }
    int format = task->format;
    task->channels = format == TJPF_GRAY ? 1 : 3;
    Py_buffer *out = &task->out;
    if ((format != TJPF_RGB && format != TJPF_BGR && format != TJPF_GRAY) ||
        task->numerator < 1 || task->numerator > 8) {
        PyErr_SetString(PyExc_ValueError, "pixel_format must be RGB, BGR or GRAY (0, 1, 6) and "
                                          "numerator 1..8");
    } else if (out->ndim != 3 || out->itemsize != 1 || out->shape[2] != task->channels ||
               out->shape[0] < 1 || out->shape[1] < 1) {
        PyErr_Format(PyExc_ValueError, "out must be a C-contiguous uint8 array (h, w, %d)",
                     task->channels);
    } else {
        return 0;
    }
    PyBuffer_Release(&task->buf);
    PyBuffer_Release(&task->out);
    return -1;
}

static void task_close(Task *task) {
    PyBuffer_Release(&task->buf);
    PyBuffer_Release(&task->out);
}

/* without the GIL */
static int task_run(Task *task, char *message, size_t message_size) {
    return decode_region(task->buf.buf, (size_t)task->buf.len, task->out.buf,
                         (int)task->out.shape[0], (int)task->out.shape[1], task->channels,
                         task->format, task->numerator, task->y0, task->x0, message,
                         message_size);
}

PyObject *jpeg_decode(PyObject *self, PyObject *args) {
    Task task;
    if (!check_bound() || task_open(&task, args) < 0) return NULL;
    char message[256];
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = task_run(&task, message, sizeof(message));
    Py_END_ALLOW_THREADS
    task_close(&task);
    if (status == 0) Py_RETURN_NONE;
    PyErr_SetString(PyExc_ValueError, message);
    return NULL;
}

/* jpeg_decode_batch's workers: each takes the next task until none is left (images differ
 * in cost, so fixed ranges would leave threads idle) */
typedef struct {
    Task *tasks;
    char (*messages)[256];
    int *status;
    Py_ssize_t n;
    atomic_long next;
} decode_job;

static void decode_worker(void *arg, Py_ssize_t start, Py_ssize_t stop) {
    decode_job *job = arg;
    (void)start;
    (void)stop;
    for (;;) {
        long i = atomic_fetch_add(&job->next, 1);
        if (i >= job->n) return;
        job->status[i] = task_run(&job->tasks[i], job->messages[i], 256);
    }
}

PyObject *jpeg_decode_batch(PyObject *self, PyObject *args) {
    PyObject *items;
    int threads = 1;
    if (!check_bound() || !PyArg_ParseTuple(args, "O!|i", &PyList_Type, &items, &threads))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    Task *tasks = PyMem_Calloc(n ? n : 1, sizeof(Task));
    char (*messages)[256] = PyMem_Calloc(n ? n : 1, 256);
    int *status = PyMem_Calloc(n ? n : 1, sizeof(int));
    PyObject *result = NULL;
    Py_ssize_t opened = 0;
    if (!tasks || !messages || !status) {
        PyErr_NoMemory();
        goto done;
    }
    for (; opened < n; opened++) {
        PyObject *item = PyList_GET_ITEM(items, opened);
        if (!PyTuple_Check(item)) {
            PyErr_Format(PyExc_TypeError, "item %zd is not a tuple", opened);
            goto done;
        }
        if (task_open(&tasks[opened], item) < 0) goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    if (threads <= 1 || n <= 1) {
        for (Py_ssize_t i = 0; i < n; i++) status[i] = task_run(&tasks[i], messages[i], 256);
    } else {
        decode_job job = {tasks, messages, status, n, 0};
        int workers = threads < n ? threads : (int)n;
        parallel_for(workers, workers, 1, decode_worker, &job);
    }
    Py_END_ALLOW_THREADS
    result = message_list(status, messages, n);
done:
    for (Py_ssize_t i = 0; i < opened; i++) task_close(&tasks[i]);
    PyMem_Free(tasks);
    PyMem_Free(messages);
    PyMem_Free(status);
    return result;
}

/* ---- jpeg_entropy_batch: the entropy-coded data of whole JPEGs, decoded and dropped ----
 *
 * A lossless transform that writes nothing (TJXOPT_NOOUTPUT) makes libjpeg-turbo read every
 * scan into DCT coefficients: the Huffman decoding of a full decode, without the inverse
 * DCT, upsampling and colour conversion. With TJPARAM_STOPONWARNING its warnings (corrupt
 * data, premature end of a scan, extraneous bytes) are errors, as in chute's CPU decode. */

typedef struct {
    Py_buffer *views;
    char (*messages)[256];
    int *status; /* 0 good, 1 refused (message set) */
    long long max_pixels;
} entropy_job;

static void *thread_transformer(void) {
    Local *local = thread_local_state();
    if (!local) return NULL;
    if (!local->transformer) {
        local->transformer = tj.init(TJINIT_TRANSFORM);
        if (local->transformer) tj.set(local->transformer, TJPARAM_STOPONWARNING, 1);
    }
    return local->transformer;
}

static int entropy_one(const unsigned char *p, size_t n, long long max_pixels, char *message,
                       size_t size) {
    if (n < 3 || p[0] != 0xFF || p[1] != 0xD8 || p[2] != 0xFF) return 0; /* not a JPEG */
    void *h = thread_transformer();
    if (!h) {
        snprintf(message, size, "out of memory");
        return 1;
    }
    int failed = tj.header(h, p, n) != 0;
    if (!failed) {
        long long pixels = (long long)tj.get(h, TJPARAM_JPEGHEIGHT) * tj.get(h, TJPARAM_JPEGWIDTH);
        if (max_pixels > 0 && pixels > max_pixels) {
            /* the coefficients of a bigger image are not allocated here */
            snprintf(message, size, "the image has %lld pixels, over the limit of %lld", pixels,
                     max_pixels);
            return 1;
        }
        tj_transform nothing = {{0, 0, 0, 0}, 0, TJXOPT_NOOUTPUT, NULL, NULL};
        unsigned char *dst = NULL;
        size_t dst_size = 0;
        failed = tj.transform(h, p, n, 1, &dst, &dst_size, &nothing) != 0;
    }
    if (!failed) return 0;
    snprintf(message, size, "%s", tj.error(h));
    /* a handle that failed mid-stream starts afresh */
    Local *local = thread_local_state();
    tj.destroy(local->transformer);
    local->transformer = NULL;
    return 1;
}

static void entropy_range(void *arg, Py_ssize_t start, Py_ssize_t stop) {
    entropy_job *job = arg;
    for (Py_ssize_t k = start; k < stop; k++)
        job->status[k] = entropy_one(job->views[k].buf, (size_t)job->views[k].len,
                                     job->max_pixels, job->messages[k], 256);
}

PyObject *jpeg_entropy_batch(PyObject *self, PyObject *args) {
    PyObject *items;
    long long max_pixels = 0;
    int threads = 1;
    if (!check_bound() || !PyArg_ParseTuple(args, "O|Li", &items, &max_pixels, &threads))
        return NULL;
    PyObject *seq = PySequence_Fast(items, "jpeg_entropy_batch takes a list of buffers");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), got = 0;
    Py_buffer *views = PyMem_Calloc(n ? n : 1, sizeof(Py_buffer));
    char (*messages)[256] = PyMem_Calloc(n ? n : 1, 256);
    int *status = PyMem_Calloc(n ? n : 1, sizeof(int));
    PyObject *result = NULL;
    if (!views || !messages || !status) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got],
                               PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    entropy_job job = {views, messages, status, max_pixels};
    Py_BEGIN_ALLOW_THREADS
    parallel_for(n, threads, 1, entropy_range, &job);
    Py_END_ALLOW_THREADS
    result = message_list(status, messages, n);
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(messages);
    PyMem_Free(status);
    Py_DECREF(seq);
    return result;
}

#endif
