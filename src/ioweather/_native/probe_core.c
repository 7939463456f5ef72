/*
 * probe_core: the timed system calls of the probe (METHODS.md section 1).
 *
 * Why C: the probe must time the system call and nothing else.  A Python-level
 * timer around os.pread adds interpreter dispatch, argument conversion and
 * allocation to every sample (several microseconds, more than a cached metadata
 * operation takes).  Here the clock is read immediately before and after the
 * call(s) with CLOCK_MONOTONIC, and the GIL is released around the timed region
 * so a hung call (a stuck mount) never blocks the daemon's other thread.
 *
 * Every function returns (start_unix_ns, duration_ns, result, errno):
 * start is CLOCK_REALTIME read just before the timed region (for storage),
 * duration comes from CLOCK_MONOTONIC (immune to clock steps), result is the
 * byte count (or 0), errno is 0 on success.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline int64_t clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static PyObject *result_tuple(int64_t start, int64_t dur, Py_ssize_t result, int err)
{
    return Py_BuildValue("(LLni)", (long long)start, (long long)dur, result, err);
}

/* timed_pread(fd, buffer, offset) -> one pread(2) into the writable buffer. */
static PyObject *timed_pread(PyObject *self, PyObject *args)
{
    int fd;
    Py_buffer buf;
    long long offset;
    if (!PyArg_ParseTuple(args, "iw*L", &fd, &buf, &offset))
        return NULL;
    int64_t start, t0, t1;
    ssize_t n;
    int err;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    n = pread(fd, buf.buf, (size_t)buf.len, (off_t)offset);
    t1 = clock_ns(CLOCK_MONOTONIC);
    err = n < 0 ? errno : 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return result_tuple(start, t1 - t0, n < 0 ? 0 : n, err);
}

/* timed_pwrite(fd, buffer, offset, fsync) -> one pwrite(2), optionally followed by fsync(2)
 * inside the timed region (the --fsync option: the write is durable when it returns). */
static PyObject *timed_pwrite(PyObject *self, PyObject *args)
{
    int fd, do_fsync = 0;
    Py_buffer buf;
    long long offset;
    if (!PyArg_ParseTuple(args, "iy*L|p", &fd, &buf, &offset, &do_fsync))
        return NULL;
    int64_t start, t0, t1;
    ssize_t n;
    int err;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    n = pwrite(fd, buf.buf, (size_t)buf.len, (off_t)offset);
    if (n >= 0 && do_fsync && fsync(fd) != 0)
        n = -1;
    t1 = clock_ns(CLOCK_MONOTONIC);
    err = n < 0 ? errno : 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return result_tuple(start, t1 - t0, n < 0 ? 0 : n, err);
}

/* timed_create(dirfd, name, buffer, fsync) -> open(O_CREAT|O_EXCL|O_NOFOLLOW) + write + close.
 * O_EXCL|O_NOFOLLOW: a file or symlink planted under our name makes the call fail (EEXIST/ELOOP)
 * rather than writing through it. */
static PyObject *timed_create(PyObject *self, PyObject *args)
{
    int dirfd, do_fsync = 0;
    PyObject *name_obj;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "iO&y*|p", &dirfd, PyUnicode_FSConverter, &name_obj, &buf, &do_fsync))
        return NULL;
    const char *name = PyBytes_AS_STRING(name_obj);
    int64_t start, t0, t1;
    ssize_t n = -1;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        n = write(fd, buf.buf, (size_t)buf.len);
        if (n < 0)
            err = errno;
        if (n >= 0 && do_fsync && fsync(fd) != 0) {
            err = errno;
            n = -1;
        }
        if (close(fd) != 0 && err == 0) {
            err = errno;
            n = -1;
        }
    } else {
        err = errno;
    }
    t1 = clock_ns(CLOCK_MONOTONIC);
    Py_END_ALLOW_THREADS
    Py_DECREF(name_obj);
    PyBuffer_Release(&buf);
    return result_tuple(start, t1 - t0, n < 0 ? 0 : n, err);
}

/* timed_stat(dirfd, name) -> fstatat(AT_SYMLINK_NOFOLLOW); result is st_size. */
static PyObject *timed_stat(PyObject *self, PyObject *args)
{
    int dirfd;
    PyObject *name_obj;
    if (!PyArg_ParseTuple(args, "iO&", &dirfd, PyUnicode_FSConverter, &name_obj))
        return NULL;
    const char *name = PyBytes_AS_STRING(name_obj);
    struct stat st;
    int64_t start, t0, t1;
    int rc, err;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    rc = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
    t1 = clock_ns(CLOCK_MONOTONIC);
    err = rc != 0 ? errno : 0;
    Py_END_ALLOW_THREADS
    Py_DECREF(name_obj);
    return result_tuple(start, t1 - t0, rc == 0 ? (Py_ssize_t)st.st_size : 0, err);
}

/* timed_read_small(dirfd, name, buffer) -> open(O_RDONLY|O_NOFOLLOW|O_NONBLOCK) + fstat + read + close.
 * O_NONBLOCK and the type check on the opened descriptor: a FIFO planted in the pool would block
 * open(2) until a writer comes, and a device would read without end; anything but a regular file
 * fails with EINVAL, untouched. */
static PyObject *timed_read_small(PyObject *self, PyObject *args)
{
    int dirfd;
    PyObject *name_obj;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "iO&w*", &dirfd, PyUnicode_FSConverter, &name_obj, &buf))
        return NULL;
    const char *name = PyBytes_AS_STRING(name_obj);
    int64_t start, t0, t1;
    ssize_t n = -1;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            err = errno;
        } else if (!S_ISREG(st.st_mode)) {
            err = EINVAL;
        } else {
            n = read(fd, buf.buf, (size_t)buf.len);
            if (n < 0)
                err = errno;
        }
        close(fd);
    } else {
        err = errno;
    }
    t1 = clock_ns(CLOCK_MONOTONIC);
    Py_END_ALLOW_THREADS
    Py_DECREF(name_obj);
    PyBuffer_Release(&buf);
    return result_tuple(start, t1 - t0, n < 0 ? 0 : n, err);
}

/* timed_unlink(dirfd, name) -> unlinkat(2). unlink never follows a symlink (it removes the link). */
static PyObject *timed_unlink(PyObject *self, PyObject *args)
{
    int dirfd;
    PyObject *name_obj;
    if (!PyArg_ParseTuple(args, "iO&", &dirfd, PyUnicode_FSConverter, &name_obj))
        return NULL;
    const char *name = PyBytes_AS_STRING(name_obj);
    int64_t start, t0, t1;
    int rc, err;
    Py_BEGIN_ALLOW_THREADS
    start = clock_ns(CLOCK_REALTIME);
    t0 = clock_ns(CLOCK_MONOTONIC);
    rc = unlinkat(dirfd, name, 0);
    t1 = clock_ns(CLOCK_MONOTONIC);
    err = rc != 0 ? errno : 0;
    Py_END_ALLOW_THREADS
    Py_DECREF(name_obj);
    return result_tuple(start, t1 - t0, 0, err);
}

/* read_latencies(fd, buffer, count) -> bytes of `count` int64 durations of read(fd, buffer).
 * For the timing-fidelity benchmark and self-test: the same timed region as timed_pread,
 * repeated in C so the benchmark compares like with like. */
static PyObject *read_latencies(PyObject *self, PyObject *args)
{
    int fd;
    Py_buffer buf;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "iw*n", &fd, &buf, &count))
        return NULL;
    if (count < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "count must be >= 0");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (!out) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    int64_t *d = (int64_t *)PyBytes_AS_STRING(out);
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t t0 = clock_ns(CLOCK_MONOTONIC);
        ssize_t n = read(fd, buf.buf, (size_t)buf.len);
        int64_t t1 = clock_ns(CLOCK_MONOTONIC);
        if (n < 0) {
            err = errno;
            break;
        }
        d[i] = t1 - t0;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (err) {
        Py_DECREF(out);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"timed_pread", timed_pread, METH_VARARGS, "timed_pread(fd, buffer, offset) -> (start_ns, duration_ns, nbytes, errno)"},
    {"timed_pwrite", timed_pwrite, METH_VARARGS, "timed_pwrite(fd, buffer, offset, fsync=False) -> (start_ns, duration_ns, nbytes, errno)"},
    {"timed_create", timed_create, METH_VARARGS, "timed_create(dirfd, name, buffer, fsync=False) -> (start_ns, duration_ns, nbytes, errno)"},
    {"timed_stat", timed_stat, METH_VARARGS, "timed_stat(dirfd, name) -> (start_ns, duration_ns, st_size, errno)"},
    {"timed_read_small", timed_read_small, METH_VARARGS, "timed_read_small(dirfd, name, buffer) -> (start_ns, duration_ns, nbytes, errno)"},
    {"timed_unlink", timed_unlink, METH_VARARGS, "timed_unlink(dirfd, name) -> (start_ns, duration_ns, 0, errno)"},
    {"read_latencies", read_latencies, METH_VARARGS, "read_latencies(fd, buffer, count) -> bytes of int64 ns durations"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "probe_core", "Timed system calls for the ioweather probe.", -1, methods,
};

PyMODINIT_FUNC PyInit_probe_core(void)
{
    return PyModule_Create(&moduledef);
}
