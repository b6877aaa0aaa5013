/* chute.runtime._native.read_files: many files read with two GIL releases in all.
 *
 * Reading a file from Python (os.open, os.fstat, os.read, os.close) gives the GIL up and
 * takes it back four times; with many decoding threads each take waits its turn. Here a
 * batch of files is opened and measured without the GIL, their buffers are asked of
 * `alloc(sizes)` in one call with the GIL (recycled memory: fresh memory costs a page fault
 * per 4 KiB as the file is read into it; one call: a Python call per file cost the reader a
 * fifth of its time), and the files are read into them without it.
 *
 * Per path the result is alloc's object holding the file's bytes, the errno (int) of the
 * call that failed, minus the file type bits of st_mode (a negative int) where the path is
 * not a regular file (a FIFO, device or socket: reading one may block forever or never
 * end), or None where the file's size was not what fstat said (it grew or shrank, or is a
 * /proc file that says 0 bytes): the caller reads those again its own way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

#ifndef _WIN32 /* POSIX calls; on Windows the module goes without it */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    PyObject *path;  /* the path encoded for the file system (bytes) */
    PyObject *data;  /* alloc(size)'s object, filled without the GIL */
    Py_buffer view;  /* its memory, held while reading */
    Py_ssize_t size;
    int fd;
    int error;   /* errno, or 0 */
    int resized; /* the file did not have fstat's size */
} File;

/* without the GIL: open and measure. O_NONBLOCK: opening a FIFO waits for a writer
 * otherwise; O_NOCTTY: a terminal never becomes ours. Only regular files are read. */
static void file_open(File *f) {
    f->fd = open(PyBytes_AS_STRING(f->path), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f->fd < 0) {
        f->error = errno;
        return;
    }
    struct stat st;
    int flags;
    if (fstat(f->fd, &st) != 0) {
        f->error = errno;
    } else if (S_ISDIR(st.st_mode)) {
        f->error = EISDIR;
    } else if (!S_ISREG(st.st_mode)) {
        f->error = -(int)(st.st_mode & S_IFMT);
    } else if ((flags = fcntl(f->fd, F_GETFL)) == -1 ||
               fcntl(f->fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
        f->error = errno;
    } else if (st.st_size <= 0 || (unsigned long long)st.st_size > PY_SSIZE_T_MAX - 1) {
        f->resized = 1; /* empty, or says so (/proc): read again by the caller */
    } else {
        f->size = (Py_ssize_t)st.st_size;
        return;
    }
    close(f->fd);
    f->fd = -1;
}

/* without the GIL: read into f->data and close */
static void file_read(File *f) {
    char *out = f->view.buf;
    Py_ssize_t done = 0;
    while (done < f->size) {
        size_t want = (size_t)(f->size - done);
        if (want > (1u << 30)) want = 1u << 30;
        ssize_t got = read(f->fd, out + done, want);
        if (got < 0) {
            if (errno == EINTR) continue;
            f->error = errno;
            break;
        }
        if (got == 0) { /* shorter than fstat said */
            f->resized = 1;
            break;
        }
        done += got;
    }
    char probe;
    if (!f->error && !f->resized && read(f->fd, &probe, 1) > 0) f->resized = 1; /* it grew */
    close(f->fd);
    f->fd = -1;
}

PyObject *read_files(PyObject *self, PyObject *args) {
    PyObject *paths, *alloc;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &paths, &alloc)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(paths);
    File *files = PyMem_Calloc(n ? n : 1, sizeof(File));
    if (!files) return PyErr_NoMemory();
    PyObject *result = NULL, *sizes = NULL, *buffers = NULL, *buffers_seq = NULL;
    Py_ssize_t encoded = 0;
    for (Py_ssize_t i = 0; i < n; i++) files[i].fd = -1;
    for (; encoded < n; encoded++) {
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(paths, encoded), &files[encoded].path))
            goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) file_open(&files[i]);
    Py_END_ALLOW_THREADS
    /* one call of alloc for the whole list: sizes[i] is file i's size, 0 where it is not
     * read here; alloc returns a buffer per file (anything where the size is 0) */
    sizes = PyList_New(n);
    for (Py_ssize_t i = 0; sizes && i < n; i++) {
        PyObject *size = PyLong_FromSsize_t(files[i].fd >= 0 ? files[i].size : 0);
        if (!size) Py_CLEAR(sizes);
        else PyList_SET_ITEM(sizes, i, size);
    }
    if (!sizes) goto done; /* the open files are closed below */
    buffers = PyObject_CallOneArg(alloc, sizes);
    if (!buffers) goto done;
    buffers_seq = PySequence_Fast(buffers, "alloc(sizes) must return a sequence");
    if (!buffers_seq) goto done;
    if (PySequence_Fast_GET_SIZE(buffers_seq) != n) {
        PyErr_Format(PyExc_ValueError, "alloc(sizes) gave %zd buffers for %zd files",
                     PySequence_Fast_GET_SIZE(buffers_seq), n);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (files[i].fd < 0) continue;
        File *f = &files[i];
        f->data = Py_NewRef(PySequence_Fast_GET_ITEM(buffers_seq, i));
        if (PyObject_GetBuffer(f->data, &f->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        if (f->view.len < f->size) {
            PyBuffer_Release(&f->view);
            PyErr_Format(PyExc_ValueError, "alloc gave file %zd a buffer of %zd bytes for %zd", i,
                         f->view.len, f->size);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (files[i].fd >= 0) file_read(&files[i]);
    Py_END_ALLOW_THREADS
    result = PyList_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        File *f = &files[i];
        PyObject *entry;
        if (f->error) entry = PyLong_FromLong(f->error);
        else if (f->resized || !f->data) entry = Py_NewRef(Py_None);
        else entry = Py_NewRef(f->data);
        if (!entry) Py_CLEAR(result);
        else PyList_SET_ITEM(result, i, entry);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) {
        if (files[i].view.obj) PyBuffer_Release(&files[i].view);
        if (files[i].fd >= 0) close(files[i].fd);
        Py_XDECREF(files[i].data);
        if (i < encoded) Py_XDECREF(files[i].path);
    }
    PyMem_Free(files);
    Py_XDECREF(buffers_seq);
    Py_XDECREF(buffers);
    Py_XDECREF(sizes);
    return result;
}

#endif
