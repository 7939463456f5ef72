/*
 * density_core: the three passes over every observation that the performance-factor
 * analysis makes (METHODS.md 2.2-2.3), for 10^7 durations in well under a second.
 *
 * Why C: numpy needs 6-8 temporaries of N doubles for R's linear binning (floor,
 * fraction, casts, two weighted bincounts) and three passes for a variance; at 10 M
 * durations that alone took over 1 s on the CI machine, and classifying 10 M
 * observations against 4 models took ~40 array passes.  Each function here is one
 * or two sequential loops, releases the GIL, and bin_dist accumulates in the same
 * order and with the same expressions as R's BinDist (src/library/stats/src/massdist.c),
 * so the bins are R's to the last bit.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static int get_doubles(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || strcmp(view->format, "d") != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous float64 buffer", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* bin_dist(x, weight, lo, up, out): R's BinDist into out (2n doubles, zeroed here). */
static PyObject *bin_dist(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo;
    double w, xlo, xhi;
    if (!PyArg_ParseTuple(args, "OdddO", &xo, &w, &xlo, &xhi, &oo))
        return NULL;
    Py_buffer xb, ob;
    if (get_doubles(xo, &xb, 0, "x") < 0)
        return NULL;
    if (get_doubles(oo, &ob, 1, "out") < 0) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    Py_ssize_t nx = xb.len / 8, n2 = ob.len / 8;
    if (n2 < 4 || n2 % 2) {
        PyBuffer_Release(&xb);
        PyBuffer_Release(&ob);
        PyErr_SetString(PyExc_ValueError, "out must hold 2n doubles, n >= 2");
        return NULL;
    }
    const double *x = xb.buf;
    double *y = ob.buf;
    Py_ssize_t n = n2 / 2;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t ixmin = 0, ixmax = n - 2;
    double xdelta = (xhi - xlo) / (double)(n - 1);
    memset(y, 0, (size_t)n2 * sizeof(double));
    for (Py_ssize_t i = 0; i < nx; i++) {
        if (isfinite(x[i])) {
            double xpos = (x[i] - xlo) / xdelta;
            if (xpos < -2.0 || xpos > (double)n + 1.0)
                continue; /* outside the grid: R drops it (and would overflow the int cast) */
            /* floor() for |xpos| < 2^53 without a libm call (the check above bounds it) */
            Py_ssize_t ix = (Py_ssize_t)xpos;
            ix -= xpos < (double)ix;
            double fx = xpos - (double)ix;
            if (ixmin <= ix && ix <= ixmax) {
                y[ix] += w * (1 - fx);
                y[ix + 1] += w * fx;
            } else if (ix == -1) {
                y[0] += w * fx;
            } else if (ix == ixmax + 1) {
                y[ix] += w * (1 - fx);
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    Py_RETURN_NONE;
}

/*
 * moments(x) -> (min, max, mean, var with N-1), in long double.  Two passes: sum, min and
 * max; then the residuals r = x - mean, whose sum corrects the mean (R's MEAN does the
 * same) and whose squares, less (sum r)^2 / n, give the variance (the corrected two-pass
 * algorithm; Chan, Golub & LeVeque 1983), equal to R's var() to rounding.
 */
/* The first pass of a two-pass variance: the long double sum, the minimum and the maximum (n > 0). */
static inline long double sum_min_max(const double *x, Py_ssize_t n, double *mn, double *mx)
{
    long double s = 0;
    double lo = x[0], hi = x[0];
    for (Py_ssize_t i = 0; i < n; i++) {
        s += x[i];
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *mn = lo;
    *mx = hi;
    return s;
}

static PyObject *moments(PyObject *self, PyObject *args)
{
    PyObject *xo;
    if (!PyArg_ParseTuple(args, "O", &xo))
        return NULL;
    Py_buffer xb;
    if (get_doubles(xo, &xb, 0, "x") < 0)
        return NULL;
    const double *x = xb.buf;
    Py_ssize_t n = xb.len / 8;
    double mn = NAN, mx = NAN, mean = NAN, var = NAN;
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) {
        long double s = sum_min_max(x, n, &mn, &mx);
        long double m = s / n;
        if (isfinite((double)m)) {
            long double r = 0, ss = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                long double dx = x[i] - m;
                r += dx;
                ss += dx * dx;
            }
            m += r / n;
            if (n > 1)
                var = (double)((ss - r * r / n) / (n - 1));
        }
        mean = (double)m;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    return Py_BuildValue("(dddd)", mn, mx, mean, var);
}

/*
 * assign_classes(logd, d, sizes_or_None, bounds, labels_out) -> (counts, sum_d, sum_sizes)
 * labels_out[i] = number of bounds < logd[i] (a value on a bound belongs to the class
 * below it), as int16; per class: count, sum of d, sum of sizes (0 without sizes).
 */
static PyObject *assign_classes(PyObject *self, PyObject *args)
{
    PyObject *lo_, *do_, *so_, *bo_, *out_;
    if (!PyArg_ParseTuple(args, "OOOOO", &lo_, &do_, &so_, &bo_, &out_))
        return NULL;
    Py_buffer lb, db, sb, bb, ob;
    int have_sizes = so_ != Py_None;
    if (get_doubles(lo_, &lb, 0, "logd") < 0)
        return NULL;
    if (get_doubles(do_, &db, 0, "d") < 0)
        goto e1;
    if (have_sizes && get_doubles(so_, &sb, 0, "sizes") < 0)
        goto e2;
    if (get_doubles(bo_, &bb, 0, "bounds") < 0)
        goto e3;
    if (PyObject_GetBuffer(out_, &ob, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto e4;
    Py_ssize_t n = lb.len / 8, nb = bb.len / 8;
    if (db.len != lb.len || (have_sizes && sb.len != lb.len) || ob.len != n * 2 || nb > 32000) {
        PyErr_SetString(PyExc_ValueError, "logd, d, sizes and labels must have one entry per observation");
        goto e5;
    }
    Py_ssize_t k = nb + 1;
    double *cnt = PyMem_Calloc((size_t)k * 3, sizeof(double));
    if (!cnt) {
        PyErr_NoMemory();
        goto e5;
    }
    double *sd = cnt + k, *ss = cnt + 2 * k;
    const double *logd = lb.buf, *d = db.buf, *bounds = bb.buf;
    const double *sz = have_sizes ? sb.buf : NULL;
    int16_t *lab = ob.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = logd[i];
        /* count, not search: the class of a log duration is unpredictable, so a search
         * mispredicts about every other observation; bounds are ascending, so the count of
         * bounds below v is the same index */
        Py_ssize_t c = 0;
        for (Py_ssize_t j = 0; j < nb; j++)
            c += bounds[j] < v;
        lab[i] = (int16_t)c;
        cnt[c] += 1;
        sd[c] += d[i];
        if (sz)
            ss[c] += sz[i];
    }
    Py_END_ALLOW_THREADS
    PyObject *res = PyTuple_New(3);
    for (int j = 0; j < 3 && res; j++) {
        PyObject *lst = PyList_New(k);
        for (Py_ssize_t c = 0; c < k; c++)
            PyList_SET_ITEM(lst, c, PyFloat_FromDouble(cnt[j * k + c]));
        PyTuple_SET_ITEM(res, j, lst);
    }
    PyMem_Free(cnt);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&bb);
    if (have_sizes)
        PyBuffer_Release(&sb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&lb);
    return res;
e5:
    PyBuffer_Release(&ob);
e4:
    PyBuffer_Release(&bb);
e3:
    if (have_sizes)
        PyBuffer_Release(&sb);
e2:
    PyBuffer_Release(&db);
e1:
    PyBuffer_Release(&lb);
    return NULL;
}

/*
 * classify_lines(d, s, small_max, i_small, c_small, i_large, c_large, labels_out)
 * Model k predicts i_small[k] + c_small[k] s for s <= small_max[k], else i_large[k] + c_large[k] s.
 * labels_out[i] (int16) = the model with the smallest prediction >= d[i] (earlier model on ties), -1 if none:
 * "sorted by prediction, the first whose prediction is >= the duration" (METHODS.md 2.5).
 */
static PyObject *classify_lines(PyObject *self, PyObject *args)
{
    PyObject *o[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    static const char *names[] = {"d", "s", "small_max", "i_small", "c_small", "i_large", "c_large"};
    Py_buffer b[8];
    int got = 0;
    for (; got < 7; got++)
        if (get_doubles(o[got], &b[got], 0, names[got]) < 0)
            goto done;
    if (PyObject_GetBuffer(o[7], &b[7], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    got = 8;
    Py_ssize_t n = b[0].len / 8, k = b[2].len / 8;
    if (b[1].len != b[0].len || b[7].len != n * 2 || k > 32000) {
        PyErr_SetString(PyExc_ValueError, "d, s and labels need one entry per observation");
        goto done;
    }
    for (int j = 3; j < 7; j++)
        if (b[j].len / 8 != k) {
            PyErr_SetString(PyExc_ValueError, "every model needs small_max, both intercepts and both slopes");
            goto done;
        }
    {
        const double *d = b[0].buf, *s = b[1].buf, *smax = b[2].buf;
        const double *is = b[3].buf, *cs = b[4].buf, *il = b[5].buf, *cl = b[6].buf;
        int16_t *lab = b[7].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            double best = INFINITY;
            int16_t l = -1;
            for (Py_ssize_t j = 0; j < k; j++) {
                double p = s[i] <= smax[j] ? is[j] + cs[j] * s[i] : il[j] + cl[j] * s[i];
                if (p >= d[i] && p < best) {
                    best = p;
                    l = (int16_t)j;
                }
            }
            lab[i] = l;
        }
        Py_END_ALLOW_THREADS
    }
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&b[j]);
    Py_RETURN_NONE;
done:
    for (int j = 0; j < got; j++)
        PyBuffer_Release(&b[j]);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define SELECT_BINS 65536
#define SELECT_MAX_RANKS 8

/* Bin of v among SELECT_BINS equal bins from lo, `scale` bins per unit; the ends clamp. */
static inline Py_ssize_t sel_bin(double v, double lo, double scale)
{
    Py_ssize_t b = (Py_ssize_t)((v - lo) * scale);
    return b < 0 ? 0 : (b >= SELECT_BINS ? SELECT_BINS - 1 : b);
}

/*
 * The kr[j]-th smallest values of x (0-based ranks) from `count`, the number of x per bin:
 * gather only the bins holding the wanted ranks and sort those (one more pass over x).
 * Returns 0 when a wanted bin holds too many values to sort cheaply (heavily clumped data,
 * where numpy's partition is the better tool) or memory is short. Runs without the GIL.
 */
static int select_ranks(const double *x, Py_ssize_t n, double lo, double scale, const uint32_t *count,
                        const double *kr, Py_ssize_t nk, double *value)
{
    Py_ssize_t bin[SELECT_MAX_RANKS], rank[SELECT_MAX_RANKS], fill[SELECT_MAX_RANKS], owner[SELECT_MAX_RANKS];
    double *buf[SELECT_MAX_RANKS] = {0};
    int ok = 1;
    for (Py_ssize_t j = 0; j < nk; j++) {
        Py_ssize_t k = (Py_ssize_t)kr[j], acc = 0, b = 0;
        while (acc + (Py_ssize_t)count[b] <= k)
            acc += count[b++];
        bin[j] = b;
        rank[j] = k - acc;
        fill[j] = 0;
        owner[j] = j; /* a bin shared with an earlier rank uses that rank's buffer */
        for (Py_ssize_t q = 0; q < j; q++)
            if (bin[q] == b) {
                owner[j] = q;
                break;
            }
        if (owner[j] != j)
            continue;
        if ((Py_ssize_t)count[b] > n / 4 + 1000000)
            ok = 0;
        if (ok && !(buf[j] = malloc((size_t)count[b] * sizeof(double))))
            ok = 0;
    }
    if (ok) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t b = sel_bin(x[i], lo, scale);
            for (Py_ssize_t j = 0; j < nk; j++)
                if (bin[j] == b) {
                    Py_ssize_t o = owner[j];
                    buf[o][fill[o]++] = x[i];
                    break;
                }
        }
        for (Py_ssize_t j = 0; j < nk; j++)
            if (owner[j] == j)
                qsort(buf[j], (size_t)fill[j], sizeof(double), cmp_double);
        for (Py_ssize_t j = 0; j < nk; j++)
            value[j] = buf[owner[j]][rank[j]];
    }
    for (Py_ssize_t j = 0; j < nk; j++)
        if (owner[j] == j)
            free(buf[j]);
    return ok;
}

/* Ranks as doubles in [0, n), 1 to SELECT_MAX_RANKS of them; else a ValueError. */
static int check_ranks(const double *kr, Py_ssize_t nk, Py_ssize_t n)
{
    if (nk < 1 || nk > SELECT_MAX_RANKS || n < 1 || n >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "order_stats wants 1-8 ranks of a non-empty array (< 2^32 values)");
        return -1;
    }
    for (Py_ssize_t j = 0; j < nk; j++)
        if (!(kr[j] >= 0 && kr[j] < (double)n)) {
            PyErr_SetString(PyExc_ValueError, "rank out of range");
            return -1;
        }
    return 0;
}

static PyObject *values_tuple(const double *value, Py_ssize_t nk)
{
    PyObject *res = PyTuple_New(nk);
    for (Py_ssize_t j = 0; res && j < nk; j++)
        PyTuple_SET_ITEM(res, j, PyFloat_FromDouble(value[j]));
    return res;
}

/*
 * order_stats(x, lo, hi, ranks) -> tuple of the ranks[j]-th smallest values (0-based), or None.
 * Two passes instead of a partition of a copy: count x into 65536 bins over [lo, hi] (lo, hi =
 * min, max of x), then gather only the bins holding the wanted ranks and sort those.  Returns
 * None when a wanted bin holds too many distinct values to sort cheaply (heavily clumped data):
 * the caller then partitions in numpy.  Exact: the same order statistics as a full sort.
 */
static PyObject *order_stats(PyObject *self, PyObject *args)
{
    PyObject *xo, *ko;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "OddO", &xo, &lo, &hi, &ko))
        return NULL;
    Py_buffer xb, kb;
    if (get_doubles(xo, &xb, 0, "x") < 0)
        return NULL;
    if (get_doubles(ko, &kb, 0, "ranks") < 0) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    const double *x = xb.buf, *kr = kb.buf;
    Py_ssize_t n = xb.len / 8, nk = kb.len / 8;
    PyObject *res = NULL;
    double value[SELECT_MAX_RANKS];
    if (check_ranks(kr, nk, n) < 0)
        goto out;
    if (!(hi > lo)) { /* all equal */
        for (Py_ssize_t j = 0; j < nk; j++)
            value[j] = lo;
        res = values_tuple(value, nk);
        goto out;
    }
    uint32_t *count = PyMem_Calloc(SELECT_BINS, sizeof(uint32_t));
    if (!count) {
        PyErr_NoMemory();
        goto out;
    }
    double scale = (double)SELECT_BINS / (hi - lo);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        count[sel_bin(x[i], lo, scale)]++;
    ok = select_ranks(x, n, lo, scale, count, kr, nk, value);
    Py_END_ALLOW_THREADS
    PyMem_Free(count);
    if (ok)
        res = values_tuple(value, nk);
    else {
        res = Py_None;
        Py_INCREF(res);
    }
out:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&kb);
    return res;
}

/*
 * moments_order_stats(x, ranks[, min, max, sum_hi, sum_lo]) -> (min, max, mean, var, values or None):
 * what `moments` and
 * `order_stats` return, in three passes instead of four (the residual pass of the variance
 * also counts x into the selection bins). values is None when the data are too clumped (see
 * order_stats) or not all finite (the mean is then not finite and the caller filters x).
 * The bandwidth rule needs all of it, and at 10^7 values each pass saved is ~10 ms. With the
 * min, max and long double sum of x already known (check_logs'), the first pass is skipped.
 */
static PyObject *moments_order_stats(PyObject *self, PyObject *args)
{
    PyObject *xo, *ko;
    double k_mn = NAN, k_mx = NAN, k_hi = NAN, k_lo = NAN;
    if (!PyArg_ParseTuple(args, "OO|dddd", &xo, &ko, &k_mn, &k_mx, &k_hi, &k_lo))
        return NULL;
    int known = !isnan(k_hi);
    Py_buffer xb, kb;
    if (get_doubles(xo, &xb, 0, "x") < 0)
        return NULL;
    if (get_doubles(ko, &kb, 0, "ranks") < 0) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    const double *x = xb.buf, *kr = kb.buf;
    Py_ssize_t n = xb.len / 8, nk = kb.len / 8;
    PyObject *res = NULL, *vals = NULL;
    double value[SELECT_MAX_RANKS];
    uint32_t *count = NULL;
    if (check_ranks(kr, nk, n) < 0)
        goto out;
    if (!(count = PyMem_Calloc(SELECT_BINS, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto out;
    }
    double mn = NAN, mx = NAN, mean = NAN, var = NAN;
    int ok = 0;
    Py_BEGIN_ALLOW_THREADS
    long double s = 0;
    if (known) { /* the first pass was done by check_logs: its long double sum comes as hi + lo */
        mn = k_mn;
        mx = k_mx;
        s = (long double)k_hi + (long double)k_lo;
    } else {
        s = sum_min_max(x, n, &mn, &mx);
    }
    long double m = s / n;
    if (isfinite((double)m)) {
        /* same corrected two-pass variance as `moments`, with the bin count riding along */
        long double r = 0, ss = 0;
        double scale = mx > mn ? (double)SELECT_BINS / (mx - mn) : 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            long double dx = x[i] - m;
            r += dx;
            ss += dx * dx;
            count[sel_bin(x[i], mn, scale)]++;
        }
        m += r / n;
        if (n > 1)
            var = (double)((ss - r * r / n) / (n - 1));
        if (mx > mn)
            ok = select_ranks(x, n, mn, scale, count, kr, nk, value);
        else {
            for (Py_ssize_t j = 0; j < nk; j++)
                value[j] = mn;
            ok = 1;
        }
    }
    mean = (double)m;
    Py_END_ALLOW_THREADS
    if (ok)
        vals = values_tuple(value, nk);
    else {
        vals = Py_None;
        Py_INCREF(vals);
    }
    if (vals)
        res = Py_BuildValue("(ddddN)", mn, mx, mean, var, vals);
out:
    PyMem_Free(count);
    PyBuffer_Release(&xb);
    PyBuffer_Release(&kb);
    return res;
}

/*
 * check_logs(d, logd) -> (min d, max d, count of d without a logarithm, min logd, max logd,
 * sum_hi, sum_lo): given logd = log(d) (numpy's SIMD log is 3x glibc's), the checks a
 * log-density needs and the first pass of the logs' moments, in one pass (they were four:
 * validity, min, max, the moments' sum). The long double sum of the logs is returned exactly
 * as sum_hi + sum_lo (two doubles). A value is bad when it is not > 0 or not finite (NaN too).
 */
static PyObject *check_logs(PyObject *self, PyObject *args)
{
    PyObject *xo, *lo_;
    if (!PyArg_ParseTuple(args, "OO", &xo, &lo_))
        return NULL;
    Py_buffer xb, lb;
    if (get_doubles(xo, &xb, 0, "d") < 0)
        return NULL;
    if (get_doubles(lo_, &lb, 0, "logd") < 0) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    if (lb.len != xb.len) {
        PyBuffer_Release(&xb);
        PyBuffer_Release(&lb);
        PyErr_SetString(PyExc_ValueError, "logd must be as long as d");
        return NULL;
    }
    const double *x = xb.buf, *lg = lb.buf;
    Py_ssize_t n = xb.len / 8, bad = 0;
    double mn = NAN, mx = NAN, lmn = NAN, lmx = NAN, hi = 0, lo = 0;
    Py_BEGIN_ALLOW_THREADS
    long double s = 0;
    if (n > 0) {
        mn = mx = x[0];
        lmn = lmx = lg[0];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = x[i], l = lg[i];
        bad += !(v > 0 && v <= DBL_MAX);
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        if (l < lmn) lmn = l;
        if (l > lmx) lmx = l;
        s += l;
    }
    hi = (double)s;
    lo = isfinite(hi) ? (double)(s - hi) : 0.0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    PyBuffer_Release(&lb);
    return Py_BuildValue("(ddndddd)", mn, mx, bad, lmn, lmx, hi, lo);
}

static PyMethodDef methods[] = {
    {"bin_dist", bin_dist, METH_VARARGS, "R's BinDist: linear binning of x onto out (2n doubles)."},
    {"moments", moments, METH_VARARGS, "(min, max, mean, var with N-1) of a float64 buffer."},
    {"assign_classes", assign_classes, METH_VARARGS,
     "Class index per observation (int16) and per-class count, sum of d, sum of sizes."},
    {"moments_order_stats", moments_order_stats, METH_VARARGS,
     "(min, max, mean, var, the ranks[j]-th smallest values or None) in three passes."},
    {"check_logs", check_logs, METH_VARARGS,
     "(min d, max d, count without a log, min, max, sum_hi, sum_lo of logd) in one pass."},
    {"order_stats", order_stats, METH_VARARGS,
     "The ranks[j]-th smallest values of x (two passes over 65536 bins), or None when too clumped."},
    {"classify_lines", classify_lines, METH_VARARGS,
     "Per observation the model with the smallest prediction >= its duration (int16, -1 for none)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "density_core", "Linear binning, moments and class assignment for factors.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_density_core(void)
{
    return PyModule_Create(&moduledef);
}
