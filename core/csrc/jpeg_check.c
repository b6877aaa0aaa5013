/* chute.runtime._native.jpeg_check_batch: the structure of JPEG files, checked without the GIL.
 *
 * Walks the markers and the entropy-coded data of each file (memchr over the scans, no
 * Huffman decoding): a file that ends inside a segment or a scan, lacks its EOI marker,
 * has bytes between segments, restart markers out of order, a scan before its frame
 * header or segment lengths that disagree with their contents is refused with the reason.
 * These are the faults libjpeg reports as errors or warnings (chute's CPU decoder stops on
 * warnings) and that a GPU decoder passes silently, so CPU and GPU keep the same files;
 * and a region decoder, which stops at its window's last row, refuses them as well.
 * chute.ops.decoders.jpeg_structure holds the same rules in Python for builds without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "native.h"

static unsigned be16(const unsigned char *p) { return ((unsigned)p[0] << 8) | p[1]; }

static int is_sof(unsigned m) {
    return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

/* The end of the entropy-coded data that starts at `pos` (the offset of the marker that
 * ends it), or -1 with *why set. */
static Py_ssize_t scan_end(const unsigned char *p, Py_ssize_t n, Py_ssize_t pos,
                           unsigned restart, const char **why) {
    unsigned expected = 0;
    for (;;) {
        const unsigned char *ff = memchr(p + pos, 0xFF, (size_t)(n - pos));
        if (ff == NULL) {
            *why = "the data ends inside a scan (truncated file, no EOI marker)";
            return -1;
        }
        Py_ssize_t i = ff - p;
        while (i + 1 < n && p[i + 1] == 0xFF) i++; /* fill bytes */
        if (i + 1 >= n) {
            *why = "the data ends inside a scan (truncated file, no EOI marker)";
            return -1;
        }
        unsigned b = p[i + 1];
        if (b == 0x00) {
            pos = i + 2;
            continue;
        }
        if (b >= 0xD0 && b <= 0xD7) {
            if (restart == 0) {
                *why = "a restart marker inside a scan without a restart interval (corrupt data)";
                return -1;
            }
            if (b - 0xD0 != expected) {
                *why = "restart markers out of order (corrupt data)";
                return -1;
            }
            expected = (expected + 1) & 7;
            pos = i + 2;
            continue;
        }
        return i;
    }
}

/* NULL for a well-formed JPEG, else why not. */
static const char *check_jpeg(const unsigned char *p, Py_ssize_t n) {
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return "no SOI marker: not a JPEG file";
    Py_ssize_t pos = 2;
    int seen_frame = 0, seen_scan = 0;
    unsigned restart = 0;
    while (pos < n) {
        if (p[pos] != 0xFF) return "bytes between segments where a marker should be (corrupt data)";
        while (pos + 1 < n && p[pos + 1] == 0xFF) pos++; /* fill bytes */
        if (pos + 1 >= n) break;
        unsigned m = p[pos + 1];
        if (m == 0xD9) {
            if (!seen_scan) return "an EOI marker before any scan: the file holds no image";
            return NULL;
        }
        if (m == 0xD8) return "a second SOI marker (corrupt data)";
        if (m == 0x00 || (m >= 0xD0 && m <= 0xD7))
            return "a marker that belongs inside a scan outside of one (corrupt data)";
        if (m == 0x01) { /* TEM: no length */
            pos += 2;
            continue;
        }
        if (pos + 4 > n) return "the data ends inside a segment header (truncated file)";
        unsigned len = be16(p + pos + 2);
        if (len < 2) return "a segment length below 2 (corrupt data)";
        if (pos + 2 + (Py_ssize_t)len > n) return "a segment runs past the end of the file (truncated)";
        const unsigned char *body = p + pos + 4;
        if (is_sof(m)) {
            if (len < 8 || len != 8 + 3u * body[5]) return "a frame header whose length disagrees with its components";
            if (body[5] == 0) return "a frame header with no components";
            seen_frame = 1;
        } else if (m == 0xDD) {
            if (len != 4) return "a restart-interval segment of the wrong length";
            restart = be16(body);
        } else if (m == 0xDA) {
            if (!seen_frame) return "a scan before the frame header (corrupt data)";
            if (len < 6 || len != 6 + 2u * body[0] || body[0] == 0)
                return "a scan header whose length disagrees with its components";
            const char *why = NULL;
            Py_ssize_t end = scan_end(p, n, pos + 2 + len, restart, &why);
            if (end < 0) return why;
            seen_scan = 1;
            pos = end;
            continue;
        }
        pos += 2 + len;
    }
    return "no EOI marker: the file is truncated";
}

/* With only_jpeg, what a decoder's batch needs: an empty buffer is refused, one that does not
 * start as a JPEG does (FF D8 FF) passes (another decoder's business). */
static const char *check_any(const unsigned char *p, Py_ssize_t n, int only_jpeg) {
    if (!only_jpeg) return check_jpeg(p, n);
    if (n == 0) return "empty input: 0 bytes";
    if (n < 3 || p[0] != 0xFF || p[1] != 0xD8 || p[2] != 0xFF) return NULL;
    return check_jpeg(p, n);
}

typedef struct {
    Py_buffer *views;
    const char **why;
    int only_jpeg;
} check_job;

static void check_range(void *arg, Py_ssize_t start, Py_ssize_t stop) {
    check_job *job = arg;
    for (Py_ssize_t k = start; k < stop; k++)
        job->why[k] = check_any(job->views[k].buf, job->views[k].len, job->only_jpeg);
}

PyObject *jpeg_check_batch(PyObject *self, PyObject *args) {
    PyObject *items;
    int only_jpeg = 0, threads = 1;
    if (!PyArg_ParseTuple(args, "O|pi", &items, &only_jpeg, &threads)) return NULL;
    PyObject *seq = PySequence_Fast(items, "jpeg_check_batch takes a list of buffers");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    Py_buffer *views = PyMem_Calloc((size_t)(count ? count : 1), sizeof(Py_buffer));
    const char **why = PyMem_Calloc((size_t)(count ? count : 1), sizeof(char *));
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    if (views == NULL || why == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < count; got++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    Py_BEGIN_ALLOW_THREADS
    check_job job = {views, why, only_jpeg};
    parallel_for(count, threads, 2, check_range, &job);
    Py_END_ALLOW_THREADS
    result = PyList_New(count);
    if (result == NULL) goto done;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *entry = why[k] ? PyUnicode_FromString(why[k]) : Py_NewRef(Py_None);
        if (entry == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, k, entry);
    }
done:
    for (Py_ssize_t k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    PyMem_Free(views);
    PyMem_Free(why);
    Py_DECREF(seq);
    return result;
}
