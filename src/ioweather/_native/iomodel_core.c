/*
 * iomodel_core: the timed loop of the io-model micro-benchmark (METHODS.md section 2.1).
 *
 * Why C: the benchmark classifies single read()/write() calls of a few hundred
 * nanoseconds; any interpreter work between the two clock reads would be measured
 * with them.  Here one loop, with the GIL released, does for every operation:
 *
 *     next memory offset, next file offset   (layout generators below)
 *     lseek() if the file position must move (files only; never for /dev/zero,/dev/null)
 *     t0 = CLOCK_MONOTONIC
 *     read() or write()                      <- the only call in the timed region
 *     t1 = CLOCK_MONOTONIC
 *     store start, duration, offsets into caller-owned int64 arrays
 *
 * clock_gettime is served by the vDSO on Linux with a TSC/kvm clock source, so the
 * timed region holds exactly one system call; the result arrays are preallocated
 * (and pre-touched by the caller), so recording makes no call and allocates nothing.
 *
 * With time_seek=1 the region is the original io-model's: offset computation +
 * lseek(SEEK_SET) (always, as io-model did, also on the devices) + the call.
 *
 * Layouts (region of `len` bytes, access size s, last = len - s, gap S):
 *   off0        0 always
 *   seq/stride  0, s+S, 2(s+S), ... back to 0 when the next access would not fit
 *   reverse     the same slots from the highest one down, back to the top after 0
 *   rnd         uniform over the slots k*s, k in [0, len/s)
 *   rnd8        pos += s + S + U[-S, S]; wrapped modulo (last + 1)
 * Random numbers: splitmix64 seeded by the caller (one seed per run and process),
 * scaled with Lemire's multiply-shift: fast, reproducible across platforms.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { L_OFF0 = 0, L_STRIDE = 1, L_REVERSE = 2, L_RND = 3, L_RND8 = 4 };

typedef struct {
    int kind;
    uint64_t size, gap, last, step, nslots, pos;
} layout_t;

static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t uniform(uint64_t *s, uint64_t n)
{
    return (uint64_t)(((__uint128_t)splitmix64(s) * n) >> 64);
}

static int layout_init(layout_t *l, int kind, uint64_t len, uint64_t size, uint64_t gap)
{
    if (size == 0 || len < size || kind < L_OFF0 || kind > L_RND8)
        return -1;
    l->kind = kind;
    l->size = size;
    l->gap = gap;
    l->last = len - size;
    l->step = size + gap;
    l->pos = 0;
    l->nslots = kind == L_RND ? len / size : l->last / l->step + 1;
    if (kind == L_REVERSE)
        l->pos = (l->nslots - 1) * l->step;
    return 0;
}

static inline uint64_t layout_next(layout_t *l, uint64_t *rng)
{
    uint64_t r = l->pos;
    switch (l->kind) {
    case L_OFF0:
        return 0;
    case L_STRIDE:
        l->pos += l->step;
        if (l->pos > l->last)
            l->pos = 0;
        return r;
    case L_REVERSE:
        l->pos = l->pos < l->step ? (l->nslots - 1) * l->step : l->pos - l->step;
        return r;
    case L_RND:
        return uniform(rng, l->nslots) * l->size;
    default: /* L_RND8 */
        l->pos = l->pos + l->size + uniform(rng, 2 * l->gap + 1); /* + S + U[-S,S] = + U[0,2S] */
        if (l->pos > l->last)
            l->pos %= l->last + 1;
        return r;
    }
}

static inline int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int need_int64(Py_buffer *b, Py_ssize_t count, const char *name)
{
    if (b->itemsize != 8 || b->len < count * 8 || !PyBuffer_IsContiguous(b, 'C')) {
        PyErr_Format(PyExc_ValueError, "%s must be a contiguous int64 array of at least count items", name);
        return -1;
    }
    return 0;
}

/*
 * run(fd, is_read, buffer, size, mem_kind, mem_gap, file_kind, file_gap, file_len, count, seed,
 *     do_seek, time_seek, starts, durations, mem_offsets, file_offsets) -> (done, errno, returned)
 *
 * Runs `count` operations; stops at the first failed or short transfer and reports it:
 * done = operations recorded, errno/returned describe the failing call (0, size when all went well).
 */
static PyObject *run(PyObject *self, PyObject *args)
{
    int fd, is_read, mem_kind, file_kind, do_seek, time_seek;
    Py_buffer buf, b_starts, b_durs, b_mem, b_file;
    unsigned long long size, mem_gap, file_gap, file_len, seed;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "ipw*KiKiKKnKppw*w*w*w*", &fd, &is_read, &buf, &size, &mem_kind, &mem_gap,
                          &file_kind, &file_gap, &file_len, &count, &seed, &do_seek, &time_seek,
                          &b_starts, &b_durs, &b_mem, &b_file))
        return NULL;
    PyObject *result = NULL;
    layout_t lm, lf;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "count must be >= 0");
        goto out;
    }
    if (layout_init(&lm, mem_kind, (uint64_t)buf.len, size, mem_gap) != 0 ||
        layout_init(&lf, file_kind, file_len, size, file_gap) != 0) {
        PyErr_SetString(PyExc_ValueError, "bad layout: unknown kind, zero size, or region smaller than the access size");
        goto out;
    }
    if (need_int64(&b_starts, count, "starts") || need_int64(&b_durs, count, "durations") ||
        need_int64(&b_mem, count, "mem_offsets") || need_int64(&b_file, count, "file_offsets"))
        goto out;

    int64_t *starts = b_starts.buf, *durs = b_durs.buf, *mos = b_mem.buf, *fos = b_file.buf;
    char *base = buf.buf;
    uint64_t rng = seed;
    Py_ssize_t i = 0;
    int err = 0;
    ssize_t n = (ssize_t)size;

    Py_BEGIN_ALLOW_THREADS
    /* start_ns is Unix time: CLOCK_REALTIME at the start plus CLOCK_MONOTONIC elapsed, so a
     * clock step during the run cannot reorder operations. */
    int64_t epoch = real_ns() - mono_ns();
    off_t cur = -1; /* unknown: the first access always positions the file */
    for (; i < count; i++) {
        uint64_t mo, fo;
        int64_t t0, t1;
        if (!time_seek) {
            mo = layout_next(&lm, &rng);
            fo = layout_next(&lf, &rng);
            if (do_seek && (off_t)fo != cur && lseek(fd, (off_t)fo, SEEK_SET) < 0) {
                err = errno;
                n = -1;
                break;
            }
            t0 = mono_ns();
            n = is_read ? read(fd, base + mo, size) : write(fd, base + mo, size);
            t1 = mono_ns();
        } else {
            t0 = mono_ns();
            mo = layout_next(&lm, &rng);
            fo = layout_next(&lf, &rng);
            if (lseek(fd, (off_t)fo, SEEK_SET) < 0) {
                err = errno;
                n = -1;
                break;
            }
            n = is_read ? read(fd, base + mo, size) : write(fd, base + mo, size);
            t1 = mono_ns();
        }
        if (n != (ssize_t)size) {
            err = n < 0 ? errno : 0;
            mos[i] = (int64_t)mo;
            fos[i] = (int64_t)fo;
            break;
        }
        cur = (off_t)(fo + size);
        starts[i] = t0 + epoch;
        durs[i] = t1 - t0;
        mos[i] = (int64_t)mo;
        fos[i] = (int64_t)fo;
    }
    Py_END_ALLOW_THREADS

    result = Py_BuildValue("(nin)", i, err, (Py_ssize_t)n);
out:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&b_starts);
    PyBuffer_Release(&b_durs);
    PyBuffer_Release(&b_mem);
    PyBuffer_Release(&b_file);
    return result;
}

/*
 * resident_pages(fd, length) -> (resident, total): page-cache residency of the first
 * `length` bytes of the file, by mmap(PROT_READ) + mincore().  mapping does not fault
 * pages in, so the check itself does not change what it measures.
 */
static PyObject *resident_pages(PyObject *self, PyObject *args)
{
    int fd;
    long long length;
    if (!PyArg_ParseTuple(args, "iL", &fd, &length))
        return NULL;
    if (length <= 0)
        return Py_BuildValue("(LL)", 0LL, 0LL);
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (size_t)((length + page - 1) / page);
    unsigned char *vec = PyMem_RawMalloc(pages ? pages : 1);
    if (!vec)
        return PyErr_NoMemory();
    int err = 0;
    long long resident = 0;
    Py_BEGIN_ALLOW_THREADS
    void *addr = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        err = errno;
    } else {
        if (mincore(addr, (size_t)length, vec) != 0)
            err = errno;
        else
            for (size_t i = 0; i < pages; i++)
                resident += vec[i] & 1;
        munmap(addr, (size_t)length);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(vec);
    if (err) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return Py_BuildValue("(LL)", resident, (long long)pages);
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(fd, is_read, buffer, size, mem_kind, mem_gap, file_kind, file_gap, file_len, count, seed, do_seek, "
     "time_seek, starts, durations, mem_offsets, file_offsets) -> (done, errno, returned)"},
    {"resident_pages", resident_pages, METH_VARARGS, "resident_pages(fd, length) -> (resident, total)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "iomodel_core", "The timed loop of the io-model micro-benchmark.", -1, methods,
};

PyMODINIT_FUNC PyInit_iomodel_core(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "OFF0", L_OFF0) || PyModule_AddIntConstant(m, "STRIDE", L_STRIDE) ||
        PyModule_AddIntConstant(m, "REVERSE", L_REVERSE) || PyModule_AddIntConstant(m, "RND", L_RND) ||
        PyModule_AddIntConstant(m, "RND8", L_RND8)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
