/*
 * walk_core: the parallel tree walk behind `ioweather fsstats` (METHODS.md section 5).
 *
 * Why C: a content snapshot of a production file system is 10^8 entries or more.
 * A Python walker pays interpreter work and the GIL on every entry; measured in
 * benchmarks/bench_fsstats.py, a threaded Python walker stays well below `find`,
 * while this walker with the GIL released runs several threads of plain system
 * calls (getdents64 + fstatat) and beats it.  See docs/benchmarks/fsstats.md.
 *
 * Why it aggregates here: memory must not grow with the number of files.  Each
 * worker thread folds every entry into fixed-size log2 histograms (count, bytes,
 * value sums), per-owner and per-first-level-directory totals; nothing per file
 * is kept except a small record of each multiply-linked non-directory (st_nlink
 * > 1), which is how hard links are counted once (as du does) and how such a file
 * is given to exactly one project after the walk.  The bucket *index* rule lives
 * here; bucket bounds, summaries and CDFs are computed in ioweather.stats.fsstats.
 *
 * Safety: the walk never follows a symbolic link.  Directories are opened
 * relative to their parent's descriptor with O_NOFOLLOW|O_DIRECTORY, and the
 * opened directory must have the (st_dev, st_ino) seen when its parent was
 * listed, so a directory replaced by a symlink or by another directory between
 * listing and opening is reported, never entered.  When a parent's descriptor
 * was given back (descriptor budget), the child is opened from the nearest
 * ancestor that still holds one with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
 * (or component by component with O_NOFOLLOW where openat2 is missing).
 * Nothing recurses: deep trees cost heap, not stack.
 *
 * Memory: one node per directory in flight (queued, being listed, or an ancestor
 * of one of those), a getdents buffer per thread, the hard-link set.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define HAVE_OPENAT2_H 1
#endif
#endif

#define NB 65              /* log2 buckets: index = bit length of the value, 0..64 */
#define NS_PER_DAY 86400000000000LL
#define MAX_ERRORS_LISTED 100
#define TOP_HIST_MAX 1024  /* per-project size histograms only up to this many projects */
#define GETDENTS_BUF (256 * 1024)

/* H_OVH_POS / H_OVH_NEG: fsstats' "positive" and "negative overhead" (capacity minus size when
 * capacity >= size, else size minus capacity), bucketed by the item's *size* as fsstats does, so a
 * bucket says how much space the files of that size waste (block rounding) or save (holes). */
enum { H_SIZE, H_CAP, H_LINKS, H_ATIME, H_MTIME, H_CTIME, H_DIRENTS, H_NAMELEN, H_DIRSIZE, H_SLINK, H_OVH_POS,
       H_OVH_NEG, NH };
static const char *HIST_NAMES[NH] = {"file_size", "capacity", "link_count", "atime_age", "mtime_age",
                                     "ctime_age", "dir_entries", "name_length", "dir_size", "symlink_target_length",
                                     "overhead_positive", "overhead_negative"};
static const int HIST_IS_AGE[NH] = {0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0};

typedef struct {
    uint64_t count[NB];
    uint64_t bytes[NB];   /* sum of st_size of the items in the bucket */
    uint64_t isum[NB];    /* integer metrics: sum of the values */
    double fsum[NB];      /* ages: sum of the ages in ns */
    double wsum[NB];      /* ages: sum of age_ns * st_size */
    uint64_t n;
    int64_t min, max;     /* raw units: bytes, entries, links, name bytes, ns */
} hist_t;

typedef struct {
    uint64_t files, bytes, capacity, dirs;
    int64_t newest_mtime_ns;
    int has_mtime;
} top_t;

typedef struct {
    uint32_t uid;
    int used;
    uint64_t files, bytes, capacity;
} owner_t;

typedef struct node {
    struct node *parent;
    int fd;            /* kept descriptor while queued children still need it, else -1 */
    int pending;       /* queued children not yet opened */
    int fd_users;      /* threads opening a descendant through fd right now */
    int refs;          /* 1 while unprocessed + one per live child node */
    int listed;        /* children were pushed: pending is final */
    uint64_t dev, ino; /* as seen in the parent's listing */
    int32_t top;       /* index into the per-project totals */
    uint32_t depth;
    uint32_t namelen;
    char name[];
} node_t;

typedef struct {
    char *path;        /* relative to the root */
    size_t len;
    const char *op;
    int err;
} errrec_t;

struct walk;

typedef struct {
    uint64_t dev, ino;
    uint64_t size, capacity;  /* as first seen: what its project is credited with after the walk */
    int32_t top;              /* of its names' projects, the one whose name sorts first */
    int32_t is_file;
} hlent_t;

typedef struct {
    struct walk *W;
    pthread_t thread;
    hist_t h[NH];
    uint64_t files, dirs, symlinks, other, bytes, capacity, dedup, errors, excluded, skipped_mounts;
    uint64_t entries;           /* published with relaxed atomics for the progress line */
    top_t *top;
    int ntop;
    uint64_t *top_size_count;   /* TOP_HIST_MAX x NB */
    uint64_t *top_size_bytes;
    owner_t *owners;
    size_t owners_cap, owners_used;
    char *buf;                  /* getdents64 buffer */
    char *path;                 /* relative path of the directory being listed (lazy) */
    size_t path_cap, path_len;
    int path_valid;
    char *epath;                /* scratch for entry paths */
    size_t epath_cap;
    node_t **kids;
    size_t nkids, kids_cap;
    int oom;
} worker_t;

typedef struct walk {
    pthread_mutex_t lock;       /* queue, node bookkeeping, descriptor counts */
    pthread_cond_t cond;
    node_t **q;
    size_t qlen, qcap;
    int active, done, stop, failed_oom;
    node_t *root;
    int root_fd;
    uint64_t root_dev;
    int cross_mounts;
    int64_t snap_ns;
    char **name_pats;
    int n_name_pats;
    char **path_pats;
    int n_path_pats;
    int open_fds, fd_budget;
    int use_openat2;
    /* hard links: multiply-linked non-directories already counted (see hl_note) */
    pthread_mutex_t hl_lock;
    hlent_t *hl;                /* open addressing; dev == UINT64_MAX marks an empty slot */
    size_t hl_cap, hl_used;
    int32_t *top_rank;          /* bytewise order of the project names, set once the root is listed */
    /* errors */
    pthread_mutex_t err_lock;
    errrec_t errs[MAX_ERRORS_LISTED];
    int nerr;
    /* first-level directories ("projects"): index 0 is "." = entries directly in the root */
    char **top_names;
    int ntop;
    size_t top_cap;
    worker_t *workers;
    int nthreads;
    PyObject *hook;             /* test seam: hook(event, relpath) */
} walk_t;

/* ------------------------------------------------------------------ helpers */

static inline int log2_bucket(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

static inline int age_bucket(int64_t age_ns)
{
    /* whole days of age, log2: [0,1) day, [1,2), [2,4), ...; a timestamp in the future counts as age 0 */
    if (age_ns < NS_PER_DAY)
        return 0;
    return log2_bucket((uint64_t)(age_ns / NS_PER_DAY));
}

/* name length: linear buckets 8 bytes wide (as fsstats); NAME_MAX is 255 on Linux, the clamp only guards memory */
static inline int name_bucket(size_t len) { return len / 8 < NB - 1 ? (int)(len / 8) : NB - 1; }

static inline int64_t ts_ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

static void hist_init(hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = INT64_MAX;
    h->max = INT64_MIN;
}

static inline void hist_add_int(hist_t *h, int k, uint64_t v, uint64_t size)
{
    h->count[k]++;
    h->bytes[k] += size;
    h->isum[k] += v;
    h->n++;
    if ((int64_t)v < h->min) h->min = (int64_t)v;
    if ((int64_t)v > h->max) h->max = (int64_t)v;
}

static inline void hist_add_age(hist_t *h, int64_t age_ns, uint64_t size)
{
    int k = age_bucket(age_ns);
    h->count[k]++;
    h->bytes[k] += size;
    h->fsum[k] += (double)age_ns;
    h->wsum[k] += (double)age_ns * (double)size;
    h->n++;
    if (age_ns < h->min) h->min = age_ns;
    if (age_ns > h->max) h->max = age_ns;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Relative path of directory node d (no leading slash; "" for the root), built bottom-up
 * without recursion.  Returns 0 or -1 on allocation failure. */
static int node_path(node_t *d, char **buf, size_t *cap, size_t *len)
{
    size_t total = 0;
    for (node_t *n = d; n->parent; n = n->parent)
        total += n->namelen + 1;
    if (grow((void **)buf, cap, total + 1, 1))
        return -1;
    size_t pos = total;
    (*buf)[pos] = 0;
    for (node_t *n = d; n->parent; n = n->parent) {
        pos -= n->namelen;
        memcpy(*buf + pos, n->name, n->namelen);
        if (pos) (*buf)[--pos] = '/';
    }
    *len = total ? total - 1 : 0;
    if (total) {
        /* the loop left one separator slot at the very front: shift down */
        memmove(*buf, *buf + 1, total - 1);
        (*buf)[total - 1] = 0;
    }
    return 0;
}

static const char *worker_dir_path(worker_t *w, node_t *d)
{
    if (!w->path_valid) {
        if (node_path(d, &w->path, &w->path_cap, &w->path_len))
            return NULL;
        w->path_valid = 1;
    }
    return w->path;
}

/* dir path + "/" + name into w->epath */
static const char *worker_entry_path(worker_t *w, node_t *d, const char *name, size_t nl, size_t *outlen)
{
    const char *dp = worker_dir_path(w, d);
    if (!dp)
        return NULL;
    size_t need = w->path_len + 1 + nl + 1;
    if (grow((void **)&w->epath, &w->epath_cap, need, 1))
        return NULL;
    size_t pos = 0;
    if (w->path_len) {
        memcpy(w->epath, dp, w->path_len);
        pos = w->path_len;
        w->epath[pos++] = '/';
    }
    memcpy(w->epath + pos, name, nl);
    pos += nl;
    w->epath[pos] = 0;
    *outlen = pos;
    return w->epath;
}

static void record_error(worker_t *w, node_t *d, const char *name, size_t nl, const char *op, int err)
{
    walk_t *W = w->W;
    __atomic_fetch_add(&w->errors, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&W->nerr, __ATOMIC_RELAXED) >= MAX_ERRORS_LISTED)
        return;
    size_t len = 0;
    const char *p;
    if (name) {
        p = worker_entry_path(w, d, name, nl, &len);
    } else {
        p = worker_dir_path(w, d);
        len = w->path_len;
    }
    if (!p)
        return;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, p, len + 1);
    pthread_mutex_lock(&W->err_lock);
    if (W->nerr < MAX_ERRORS_LISTED) {
        W->errs[W->nerr] = (errrec_t){copy, len, op, err};
        __atomic_store_n(&W->nerr, W->nerr + 1, __ATOMIC_RELAXED);
        copy = NULL;
    }
    pthread_mutex_unlock(&W->err_lock);
    free(copy);
}

static void call_hook(walk_t *W, worker_t *w, const char *event, node_t *d)
{
    /* Test seam only (hook is NULL in production): lets a test change the tree at a
     * precise point of the walk, e.g. replace a directory by a symlink before it is opened. */
    const char *p = worker_dir_path(w, d);
    if (!p)
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(W->hook, "sy#", event, p, (Py_ssize_t)w->path_len);
    if (!r)
        PyErr_Print();
    Py_XDECREF(r);
    PyGILState_Release(g);
}

/* ---------------------------------------------------------------- hard links */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline size_t hl_slot(uint64_t dev, uint64_t ino, size_t cap)
{
    return mix64(dev * 0x9e3779b97f4a7c15ULL ^ ino) & (cap - 1);
}

enum { HL_NEW = 1, HL_SEEN = 0, HL_OOM = -1 };

/* Which project carries a file hard-linked from several first-level directories must not depend
 * on which thread met which name first, or two walks of an unchanged tree would differ: it is the
 * project whose name sorts first (bytewise).  Every name only lowers the inode's project in this
 * table, under hl_lock; the project totals are credited from the table once, after the walk
 * (build_result), so no per-thread sum is ever moved while other threads are still adding.
 * Only files with st_nlink > 1 enter, so memory follows the hard-linked files, not all files. */
static inline int top_before(const walk_t *W, int32_t a, int32_t b)
{
    /* ranks exist from the end of the root's listing on; before that, every name met is directly
     * in the root, i.e. in project 0 */
    return W->top_rank ? W->top_rank[a] < W->top_rank[b] : a < b;
}

/* Record a multiply-linked inode met under project `top`.  HL_NEW: its first name (count the
 * inode now, its project later); HL_SEEN: already counted.  HL_OOM: no memory for the table. */
static int hl_note(walk_t *W, const struct stat *st, int32_t top)
{
    uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
    int rc = HL_NEW;
    pthread_mutex_lock(&W->hl_lock);
    if ((W->hl_used + 1) * 2 > W->hl_cap) {
        size_t ncap = W->hl_cap ? W->hl_cap * 2 : 1024;
        hlent_t *n = malloc(ncap * sizeof(hlent_t));
        if (!n) {
            pthread_mutex_unlock(&W->hl_lock);
            return HL_OOM;
        }
        for (size_t i = 0; i < ncap; i++)
            n[i].dev = UINT64_MAX;
        for (size_t i = 0; i < W->hl_cap; i++) {
            if (W->hl[i].dev == UINT64_MAX)
                continue;
            size_t j = hl_slot(W->hl[i].dev, W->hl[i].ino, ncap);
            while (n[j].dev != UINT64_MAX)
                j = (j + 1) & (ncap - 1);
            n[j] = W->hl[i];
        }
        free(W->hl);
        W->hl = n;
        W->hl_cap = ncap;
    }
    size_t j = hl_slot(dev, ino, W->hl_cap);
    for (;;) {
        hlent_t *e = &W->hl[j];
        if (e->dev == UINT64_MAX) {
            *e = (hlent_t){dev, ino, (uint64_t)(st->st_size < 0 ? 0 : st->st_size), (uint64_t)st->st_blocks * 512u,
                           top, S_ISREG(st->st_mode)};
            W->hl_used++;
            break;
        }
        if (e->dev == dev && e->ino == ino) {
            rc = HL_SEEN;
            if (e->top != top && top_before(W, top, e->top))
                e->top = top;
            break;
        }
        j = (j + 1) & (W->hl_cap - 1);
    }
    pthread_mutex_unlock(&W->hl_lock);
    return rc;
}

/* Bytewise rank of every project name, so that hl_note compares two integers instead of taking
 * W->lock for a strcmp.  Called once, when the root has been listed: no project appears later. */
static int cmp_top(const void *a, const void *b, void *names)
{
    char **n = names;
    return strcmp(n[*(const int32_t *)a], n[*(const int32_t *)b]);
}

static int set_top_ranks(walk_t *W)
{
    int32_t *order = malloc((size_t)W->ntop * sizeof(int32_t));
    int32_t *rank = malloc((size_t)W->ntop * sizeof(int32_t));
    if (!order || !rank) {
        free(order), free(rank);
        return -1;
    }
    for (int32_t i = 0; i < W->ntop; i++)
        order[i] = i;
    qsort_r(order, (size_t)W->ntop, sizeof(int32_t), cmp_top, W->top_names);
    for (int32_t i = 0; i < W->ntop; i++)
        rank[order[i]] = i;
    free(order);
    W->top_rank = rank;
    return 0;
}

/* ------------------------------------------------------------ per-worker sums */

static top_t *worker_top(worker_t *w, int idx)
{
    if (idx >= w->ntop) {
        int n = w->ntop ? w->ntop : 16;
        while (n <= idx)
            n *= 2;
        top_t *t = realloc(w->top, (size_t)n * sizeof(top_t));
        if (!t) {
            w->oom = 1;
            return NULL;
        }
        memset(t + w->ntop, 0, (size_t)(n - w->ntop) * sizeof(top_t));
        w->top = t;
        w->ntop = n;
    }
    return &w->top[idx];
}

static owner_t *worker_owner(worker_t *w, uint32_t uid)
{
    if ((w->owners_used + 1) * 2 > w->owners_cap) {
        size_t ncap = w->owners_cap ? w->owners_cap * 2 : 64;
        owner_t *n = calloc(ncap, sizeof(owner_t));
        if (!n) {
            w->oom = 1;
            return NULL;
        }
        for (size_t i = 0; i < w->owners_cap; i++) {
            if (!w->owners[i].used)
                continue;
            size_t j = mix64(w->owners[i].uid) & (ncap - 1);
            while (n[j].used)
                j = (j + 1) & (ncap - 1);
            n[j] = w->owners[i];
        }
        free(w->owners);
        w->owners = n;
        w->owners_cap = ncap;
    }
    size_t j = mix64(uid) & (w->owners_cap - 1);
    while (w->owners[j].used && w->owners[j].uid != uid)
        j = (j + 1) & (w->owners_cap - 1);
    if (!w->owners[j].used) {
        w->owners[j].used = 1;
        w->owners[j].uid = uid;
        w->owners_used++;
    }
    return &w->owners[j];
}

static int ensure_top_hist(worker_t *w)
{
    if (!w->top_size_count) {
        w->top_size_count = calloc((size_t)TOP_HIST_MAX * NB, sizeof(uint64_t));
        w->top_size_bytes = calloc((size_t)TOP_HIST_MAX * NB, sizeof(uint64_t));
        if (!w->top_size_count || !w->top_size_bytes)
            w->oom = 1;
    }
    return w->top_size_count && w->top_size_bytes;
}

/* One inode counted once: its capacity everywhere; its overhead (regular files, directories and
 * symlinks, as fsstats); a directory's size; for a regular file its size, link count, ages and
 * owner.  `top` is the project of the name it was met under.  `credit_top` is 0 for a hard-linked
 * inode: which project carries it is only settled after the walk (hl_note, build_result). */
static void account_inode(worker_t *w, int top, const struct stat *st, int credit_top)
{
    walk_t *W = w->W;
    uint64_t cap = (uint64_t)st->st_blocks * 512u;
    uint64_t size = (uint64_t)(st->st_size < 0 ? 0 : st->st_size);
    int is_file = S_ISREG(st->st_mode);
    top_t *t = worker_top(w, top);
    owner_t *o = worker_owner(w, st->st_uid);
    w->capacity += cap;
    if (t && credit_top) t->capacity += cap;
    if (o) o->capacity += cap;
    if (is_file || S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode)) {
        if (cap >= size)
            hist_add_int(&w->h[H_OVH_POS], log2_bucket(size), cap - size, size);
        else
            hist_add_int(&w->h[H_OVH_NEG], log2_bucket(size), size - cap, size);
    }
    if (S_ISDIR(st->st_mode))
        hist_add_int(&w->h[H_DIRSIZE], log2_bucket(size), size, size);
    if (!is_file)
        return;
    int64_t mt = ts_ns(st->st_mtim);
    w->files++;
    w->bytes += size;
    hist_add_int(&w->h[H_SIZE], log2_bucket(size), size, size);
    hist_add_int(&w->h[H_CAP], log2_bucket(cap), cap, size);
    hist_add_int(&w->h[H_LINKS], log2_bucket((uint64_t)st->st_nlink), (uint64_t)st->st_nlink, size);
    hist_add_age(&w->h[H_ATIME], W->snap_ns - ts_ns(st->st_atim), size);
    hist_add_age(&w->h[H_MTIME], W->snap_ns - mt, size);
    hist_add_age(&w->h[H_CTIME], W->snap_ns - ts_ns(st->st_ctim), size);
    if (o) {
        o->files++;
        o->bytes += size;
    }
    if (!t)
        return;
    if (!t->has_mtime || mt > t->newest_mtime_ns) {
        t->newest_mtime_ns = mt;
        t->has_mtime = 1;
    }
    if (!credit_top)
        return;
    t->files++;
    t->bytes += size;
    if (top < TOP_HIST_MAX && ensure_top_hist(w)) {
        int k = log2_bucket(size);
        w->top_size_count[(size_t)top * NB + k]++;
        w->top_size_bytes[(size_t)top * NB + k] += size;
    }
}

/* A project's newest file: the newest regular file with a name below it (hard links included). */
static void note_mtime(worker_t *w, int top, const struct stat *st)
{
    top_t *t = worker_top(w, top);
    int64_t mt = ts_ns(st->st_mtim);
    if (t && (!t->has_mtime || mt > t->newest_mtime_ns)) {
        t->newest_mtime_ns = mt;
        t->has_mtime = 1;
    }
}

/* fsstats' "symlink target length".  readlinkat costs one more system call per symlink (about
 * 1 us of CPU warm, a round trip on a network file system) and, like any readlink, lets the kernel
 * update the link's atime under relatime (docs/fsstats.md).  st_size would be free, but it is the
 * target length only where the file system keeps it so (procfs links report 0, for one). */
static void note_symlink(worker_t *w, node_t *d, int fd, const char *name, size_t nl, const struct stat *st)
{
    char target[PATH_MAX];
    if (w->W->hook)
        call_hook(w->W, w, "readlink", d);
    ssize_t n = readlinkat(fd, name, target, sizeof target);
    if (n < 0) {
        record_error(w, d, name, nl, "readlink", errno);
        return;
    }
    uint64_t len = (uint64_t)n;
    if (n == (ssize_t)sizeof target && st->st_size > n)
        len = (uint64_t)st->st_size;  /* cut at PATH_MAX: the inode knows the whole length */
    hist_add_int(&w->h[H_SLINK], name_bucket(len), len, (uint64_t)(st->st_size < 0 ? 0 : st->st_size));
}

/* ------------------------------------------------------------------- queue */

static void node_free_chain(walk_t *W, node_t *n)
{
    /* caller holds W->lock; drops one reference of n and frees every node that reaches zero */
    while (n) {
        if (--n->refs > 0)
            return;
        node_t *p = n->parent;
        if (n->fd >= 0 && n != W->root) {
            close(n->fd);
            W->open_fds--;
        }
        if (n == W->root)
            W->root = NULL;
        free(n);
        n = p;
    }
}

static void maybe_close(walk_t *W, node_t *n)
{
    /* caller holds W->lock */
    if (n == W->root || n->fd < 0 || !n->listed || n->pending > 0 || n->fd_users > 0)
        return;
    close(n->fd);
    n->fd = -1;
    W->open_fds--;
}

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int open_dir_at(int dfd, const char *name)
{
    /* O_NOATIME keeps the walk from touching directory access times; only the owner
     * (or CAP_FOWNER) may ask for it, so fall back without it. */
    int fd = openat(dfd, name, DIR_FLAGS | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(dfd, name, DIR_FLAGS);
    return fd;
}

#ifdef HAVE_OPENAT2_H
static int openat2_beneath(walk_t *W, int dfd, const char *path)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = DIR_FLAGS | O_NOATIME;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (W->cross_mounts ? 0 : RESOLVE_NO_XDEV);
    long fd = syscall(SYS_openat2, dfd, path, &how, sizeof how);
    if (fd < 0 && errno == EPERM) {
        how.flags = DIR_FLAGS;
        fd = syscall(SYS_openat2, dfd, path, &how, sizeof how);
    }
    return (int)fd;
}
#endif

/* Open directory c from ancestor a (whose fd is pinned by the caller) without following
 * any symlink and without leaving a's subtree.  Used only when c's parent gave back its fd. */
static int open_beneath(walk_t *W, worker_t *w, node_t *a, node_t *c)
{
    size_t len = 0;
    for (node_t *n = c; n != a; n = n->parent)
        len += n->namelen + 1;
    char *path = malloc(len + 1);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    size_t pos = len;
    path[pos] = 0;
    for (node_t *n = c; n != a; n = n->parent) {
        pos -= n->namelen;
        memcpy(path + pos, n->name, n->namelen);
        if (pos) path[--pos] = '/';
    }
    /* path now starts at offset pos (0 or 1) */
    char *p = path + (path[0] == '/' ? 1 : 0);
    int dfd = a->fd, cur = -1, err = 0;
    while (*p) {
        /* take as many whole components as fit in PATH_MAX (openat2), or one (openat) */
        char *end = p;
        if (W->use_openat2) {
            char *last = NULL;
            for (char *q = p; (size_t)(q - p) < PATH_MAX - 1; q++) {
                if (*q == '/' || *q == 0) {
                    last = q;
                    if (*q == 0) break;
                }
            }
            end = last ? last : p + strcspn(p, "/");
        } else {
            end = p + strcspn(p, "/");
        }
        char saved = *end;
        *end = 0;
        int fd;
#ifdef HAVE_OPENAT2_H
        if (W->use_openat2) {
            fd = openat2_beneath(W, dfd, p);
            if (fd < 0 && errno == ENOSYS) {
                W->use_openat2 = 0;   /* a benign race: every thread reaches the same answer */
                *end = saved;
                continue;
            }
        } else
#endif
            fd = open_dir_at(dfd, p);
        *end = saved;
        if (cur >= 0)
            close(cur);
        if (fd < 0) {
            err = errno;
            cur = -1;
            break;
        }
        if (!W->cross_mounts && !W->use_openat2) {
            struct stat st;
            if (fstat(fd, &st) == 0 && (uint64_t)st.st_dev != W->root_dev) {
                close(fd);
                err = EXDEV;
                cur = -1;
                break;
            }
        }
        cur = dfd = fd;
        p = saved ? end + 1 : end;
    }
    free(path);
    if (cur < 0)
        errno = err ? err : ENOENT;
    return cur;
}

static int open_child(walk_t *W, worker_t *w, node_t *c)
{
    node_t *p = c->parent, *a;
    pthread_mutex_lock(&W->lock);
    for (a = p; a->fd < 0; a = a->parent)
        ;  /* the root always holds its descriptor */
    a->fd_users++;
    pthread_mutex_unlock(&W->lock);
    int fd = (a == p) ? open_dir_at(p->fd, c->name) : open_beneath(W, w, a, c);
    int err = errno;
    pthread_mutex_lock(&W->lock);
    a->fd_users--;
    p->pending--;
    if (fd >= 0)
        W->open_fds++;
    maybe_close(W, a);
    if (p != a)
        maybe_close(W, p);
    pthread_mutex_unlock(&W->lock);
    errno = err;
    return fd;
}

/* ------------------------------------------------------------ one directory */

static int excluded(walk_t *W, worker_t *w, node_t *d, const char *name, size_t nl)
{
    for (int i = 0; i < W->n_name_pats; i++)
        if (fnmatch(W->name_pats[i], name, 0) == 0)
            return 1;
    if (W->n_path_pats) {
        size_t len;
        const char *p = worker_entry_path(w, d, name, nl, &len);
        if (p)
            for (int i = 0; i < W->n_path_pats; i++)
                if (fnmatch(W->path_pats[i], p, FNM_PATHNAME) == 0)
                    return 1;
    }
    return 0;
}

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void list_dir(walk_t *W, worker_t *w, node_t *d, int fd, const struct stat *dst)
{
    uint64_t nent = 0;
    int readdir_ok = 1;
    w->nkids = 0;
    for (;;) {
        if (__atomic_load_n(&W->stop, __ATOMIC_RELAXED))
            break;
        long n = syscall(SYS_getdents64, fd, w->buf, GETDENTS_BUF);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            record_error(w, d, NULL, 0, "readdir", errno);
            readdir_ok = 0;
            break;
        }
        if (W->hook)
            call_hook(W, w, "listed", d);
        uint64_t batch = 0;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *de = (struct linux_dirent64 *)(w->buf + off);
            off += de->d_reclen;
            const char *name = de->d_name;
            if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
                continue;
            batch++;
            size_t nl = strlen(name);
            if ((W->n_name_pats || W->n_path_pats) && excluded(W, w, d, name, nl)) {
                w->excluded++;
                continue;
            }
            nent++;
            struct stat st;
            if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                record_error(w, d, name, nl, "stat", errno);
                continue;
            }
            int top = d->top;
            if (S_ISDIR(st.st_mode)) {
                if (!W->cross_mounts && (uint64_t)st.st_dev != W->root_dev) {
                    w->skipped_mounts++;
                    continue;
                }
                if (!d->parent) {
                    /* a first-level directory: a new "project" */
                    pthread_mutex_lock(&W->lock);
                    if (grow((void **)&W->top_names, (size_t *)&W->top_cap, (size_t)W->ntop + 1, sizeof(char *)) == 0) {
                        top = W->ntop;
                        W->top_names[top] = strndup(name, nl);
                        W->ntop++;
                    }
                    pthread_mutex_unlock(&W->lock);
                }
                w->dirs++;
                top_t *t = worker_top(w, top);
                if (t) t->dirs++;
                account_inode(w, top, &st, 1);
                hist_add_int(&w->h[H_NAMELEN], name_bucket(nl), nl, (uint64_t)st.st_size);
                node_t *c = malloc(sizeof(node_t) + nl + 1);
                if (!c || grow((void **)&w->kids, &w->kids_cap, w->nkids + 1, sizeof(node_t *))) {
                    free(c);
                    w->oom = 1;
                    continue;
                }
                c->parent = d;
                c->fd = -1;
                c->pending = 0;
                c->fd_users = 0;
                c->refs = 1;
                c->listed = 0;
                c->dev = (uint64_t)st.st_dev;
                c->ino = (uint64_t)st.st_ino;
                c->top = top;
                c->depth = d->depth + 1;
                c->namelen = (uint32_t)nl;
                memcpy(c->name, name, nl + 1);
                w->kids[w->nkids++] = c;
                continue;
            }
            /* every name, hard links included: name length describes directory entries, and
             * counting only the first-met link would depend on thread timing */
            hist_add_int(&w->h[H_NAMELEN], name_bucket(nl), nl, (uint64_t)(st.st_size < 0 ? 0 : st.st_size));
            int credit_top = 1;
            if (st.st_nlink > 1) {
                int seen = hl_note(W, &st, top);
                if (seen == HL_OOM) {
                    w->oom = 1;
                    continue;
                }
                if (seen == HL_SEEN) {
                    w->dedup++;
                    if (S_ISREG(st.st_mode))
                        note_mtime(w, top, &st);
                    continue;
                }
                credit_top = 0;  /* its project is settled after the walk */
            }
            account_inode(w, top, &st, credit_top);
            if (S_ISLNK(st.st_mode)) {
                w->symlinks++;
                note_symlink(w, d, fd, name, nl, &st);
            } else if (!S_ISREG(st.st_mode)) {
                w->other++;
            }
        }
        __atomic_store_n(&w->entries, w->entries + batch, __ATOMIC_RELAXED);
    }
    if (readdir_ok)
        hist_add_int(&w->h[H_DIRENTS], log2_bucket(nent), nent, (uint64_t)dst->st_size);
}

static void process_node(walk_t *W, worker_t *w, node_t *d)
{
    int fd;
    w->path_valid = 0;
    if (!d->parent) {
        fd = W->root_fd;
    } else {
        if (W->hook)
            call_hook(W, w, "open", d);
        fd = open_child(W, w, d);
        if (fd < 0) {
            record_error(w, d, NULL, 0, "open", errno);
            goto done;
        }
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        record_error(w, d, NULL, 0, "stat", errno);
        goto close_done;
    }
    if (d->parent && ((uint64_t)st.st_dev != d->dev || (uint64_t)st.st_ino != d->ino)) {
        /* replaced between listing and opening: never enter what we did not list */
        record_error(w, d, NULL, 0, "changed", ESTALE);
        goto close_done;
    }
    list_dir(W, w, d, fd, &st);
    pthread_mutex_lock(&W->lock);
    if (!d->parent && set_top_ranks(W))  /* every project is known now, before any is entered */
        W->failed_oom = 1;
    if (w->nkids && d->parent && W->open_fds <= W->fd_budget) {
        d->fd = fd;  /* kept for the children; counted in open_fds already */
    } else if (d->parent) {
        close(fd);
        W->open_fds--;
    }
    d->pending = (int)w->nkids;
    d->refs += (int)w->nkids;
    d->listed = 1;
    if (grow((void **)&W->q, &W->qcap, W->qlen + w->nkids, sizeof(node_t *)) == 0) {
        /* push in reverse so the stack pops them in listing order */
        for (size_t i = w->nkids; i-- > 0;)
            W->q[W->qlen++] = w->kids[i];
    } else {
        W->failed_oom = 1;
        for (size_t i = 0; i < w->nkids; i++) {
            d->pending--;
            d->refs--;
            free(w->kids[i]);
        }
    }
    w->nkids = 0;
    maybe_close(W, d);
    node_free_chain(W, d);
    pthread_cond_broadcast(&W->cond);
    pthread_mutex_unlock(&W->lock);
    return;
close_done:
    if (d->parent) {
        close(fd);
        pthread_mutex_lock(&W->lock);
        W->open_fds--;
        pthread_mutex_unlock(&W->lock);
    }
done:
    pthread_mutex_lock(&W->lock);
    d->listed = 1;
    node_free_chain(W, d);
    pthread_mutex_unlock(&W->lock);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    walk_t *W = w->W;
    for (;;) {
        pthread_mutex_lock(&W->lock);
        while (W->qlen == 0 && W->active > 0 && !W->stop)
            pthread_cond_wait(&W->cond, &W->lock);
        if (W->stop || (W->qlen == 0 && W->active == 0)) {
            W->done = 1;
            pthread_cond_broadcast(&W->cond);
            pthread_mutex_unlock(&W->lock);
            return NULL;
        }
        node_t *d = W->q[--W->qlen];
        W->active++;
        pthread_mutex_unlock(&W->lock);
        process_node(W, w, d);
        pthread_mutex_lock(&W->lock);
        W->active--;
        if (W->active == 0 && W->qlen == 0)
            pthread_cond_broadcast(&W->cond);
        pthread_mutex_unlock(&W->lock);
    }
}

/* ------------------------------------------------------------- Python glue */

static PyObject *u64_bytes(const uint64_t *a, size_t n) { return PyBytes_FromStringAndSize((const char *)a, (Py_ssize_t)(n * sizeof(uint64_t))); }
static PyObject *f64_bytes(const double *a, size_t n) { return PyBytes_FromStringAndSize((const char *)a, (Py_ssize_t)(n * sizeof(double))); }

static int set_item(PyObject *d, const char *k, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *build_result(walk_t *W)
{
    hist_t H[NH];
    for (int i = 0; i < NH; i++)
        hist_init(&H[i]);
    uint64_t files = 0, dirs = 0, symlinks = 0, other = 0, bytes = 0, capacity = 0, dedup = 0, errors = 0,
             excl = 0, mounts = 0, entries = 0;
    int ntop = W->ntop;
    top_t *tops = calloc((size_t)(ntop ? ntop : 1), sizeof(top_t));
    int with_top_hist = ntop <= TOP_HIST_MAX;
    uint64_t *tsc = with_top_hist ? calloc((size_t)(ntop ? ntop : 1) * NB, sizeof(uint64_t)) : NULL;
    uint64_t *tsb = with_top_hist ? calloc((size_t)(ntop ? ntop : 1) * NB, sizeof(uint64_t)) : NULL;
    if (!tops || (with_top_hist && (!tsc || !tsb))) {
        free(tops), free(tsc), free(tsb);
        return PyErr_NoMemory();
    }
    PyObject *owners = PyDict_New();
    if (!owners) {
        free(tops), free(tsc), free(tsb);
        return NULL;
    }
    for (int t = 0; t < W->nthreads; t++) {
        worker_t *w = &W->workers[t];
        for (int i = 0; i < NH; i++) {
            hist_t *a = &H[i], *b = &w->h[i];
            for (int k = 0; k < NB; k++) {
                a->count[k] += b->count[k];
                a->bytes[k] += b->bytes[k];
                a->isum[k] += b->isum[k];
                a->fsum[k] += b->fsum[k];
                a->wsum[k] += b->wsum[k];
            }
            a->n += b->n;
            if (b->n) {
                if (b->min < a->min) a->min = b->min;
                if (b->max > a->max) a->max = b->max;
            }
        }
        files += w->files, dirs += w->dirs, symlinks += w->symlinks, other += w->other, bytes += w->bytes;
        capacity += w->capacity, dedup += w->dedup, errors += w->errors, excl += w->excluded;
        mounts += w->skipped_mounts, entries += w->entries;
        for (int i = 0; i < w->ntop && i < ntop; i++) {
            top_t *a = &tops[i], *b = &w->top[i];
            a->files += b->files, a->bytes += b->bytes, a->capacity += b->capacity, a->dirs += b->dirs;
            if (b->has_mtime && (!a->has_mtime || b->newest_mtime_ns > a->newest_mtime_ns)) {
                a->newest_mtime_ns = b->newest_mtime_ns;
                a->has_mtime = 1;
            }
        }
        if (with_top_hist && w->top_size_count)
            for (size_t i = 0; i < (size_t)ntop * NB; i++) {
                tsc[i] += w->top_size_count[i];
                tsb[i] += w->top_size_bytes[i];
            }
        for (size_t i = 0; i < w->owners_cap; i++) {
            owner_t *o = &w->owners[i];
            if (!o->used)
                continue;
            PyObject *key = PyLong_FromUnsignedLong(o->uid);
            PyObject *cur = key ? PyDict_GetItemWithError(owners, key) : NULL;
            unsigned long long f = o->files, by = o->bytes, ca = o->capacity;
            if (cur) {
                f += PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(cur, 0));
                by += PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(cur, 1));
                ca += PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(cur, 2));
            }
            PyObject *v = key ? Py_BuildValue("(KKK)", f, by, ca) : NULL;
            if (!v || PyDict_SetItem(owners, key, v)) {
                Py_XDECREF(key), Py_XDECREF(v);
                Py_DECREF(owners);
                free(tops), free(tsc), free(tsb);
                return NULL;
            }
            Py_DECREF(key), Py_DECREF(v);
        }
    }
    /* hard-linked files: credited once, to the project that carries them (hl_note) */
    for (size_t i = 0; i < W->hl_cap; i++) {
        hlent_t *e = &W->hl[i];
        if (e->dev == UINT64_MAX || e->top < 0 || e->top >= ntop)
            continue;
        top_t *t = &tops[e->top];
        t->capacity += e->capacity;
        if (!e->is_file)
            continue;
        t->files++;
        t->bytes += e->size;
        if (with_top_hist) {
            int k = log2_bucket(e->size);
            tsc[(size_t)e->top * NB + k]++;
            tsb[(size_t)e->top * NB + k] += e->size;
        }
    }
    PyObject *r = PyDict_New();
    PyObject *hists = PyDict_New();
    PyObject *toplist = PyList_New(0);
    PyObject *errlist = PyList_New(0);
    int bad = !r || !hists || !toplist || !errlist;
    for (int i = 0; !bad && i < NH; i++) {
        hist_t *h = &H[i];
        PyObject *hd = PyDict_New();
        bad = !hd || set_item(hd, "count", u64_bytes(h->count, NB)) || set_item(hd, "bytes", u64_bytes(h->bytes, NB)) ||
              set_item(hd, "n", PyLong_FromUnsignedLongLong(h->n)) ||
              set_item(hd, "min", h->n ? PyLong_FromLongLong(h->min) : Py_NewRef(Py_None)) ||
              set_item(hd, "max", h->n ? PyLong_FromLongLong(h->max) : Py_NewRef(Py_None));
        if (!bad && HIST_IS_AGE[i])
            bad = set_item(hd, "sum", f64_bytes(h->fsum, NB)) || set_item(hd, "wsum", f64_bytes(h->wsum, NB));
        else if (!bad)
            bad = set_item(hd, "sum", u64_bytes(h->isum, NB));
        if (!bad)
            bad = set_item(hists, HIST_NAMES[i], hd);
        else
            Py_XDECREF(hd);
    }
    for (int i = 0; !bad && i < ntop; i++) {
        top_t *t = &tops[i];
        const char *nm = W->top_names[i];
        PyObject *sc = with_top_hist ? u64_bytes(tsc + (size_t)i * NB, NB) : Py_NewRef(Py_None);
        PyObject *sb = with_top_hist ? u64_bytes(tsb + (size_t)i * NB, NB) : Py_NewRef(Py_None);
        PyObject *item = (sc && sb) ? Py_BuildValue("(y#KKKKNNN)", nm, (Py_ssize_t)strlen(nm), (unsigned long long)t->files,
                                                     (unsigned long long)t->bytes, (unsigned long long)t->capacity,
                                                     (unsigned long long)t->dirs,
                                                     t->has_mtime ? PyLong_FromLongLong(t->newest_mtime_ns) : Py_NewRef(Py_None),
                                                     sc, sb)
                                    : NULL;
        if (!item && !(sc && sb))
            Py_XDECREF(sc), Py_XDECREF(sb);
        bad = !item || PyList_Append(toplist, item);
        Py_XDECREF(item);
    }
    for (int i = 0; !bad && i < W->nerr; i++) {
        errrec_t *e = &W->errs[i];
        PyObject *item = Py_BuildValue("(y#si)", e->path, (Py_ssize_t)e->len, e->op, e->err);
        bad = !item || PyList_Append(errlist, item);
        Py_XDECREF(item);
    }
    free(tops), free(tsc), free(tsb);
    if (!bad)
        bad = set_item(r, "files", PyLong_FromUnsignedLongLong(files)) || set_item(r, "dirs", PyLong_FromUnsignedLongLong(dirs)) ||
              set_item(r, "symlinks", PyLong_FromUnsignedLongLong(symlinks)) ||
              set_item(r, "other", PyLong_FromUnsignedLongLong(other)) || set_item(r, "bytes", PyLong_FromUnsignedLongLong(bytes)) ||
              set_item(r, "capacity_bytes", PyLong_FromUnsignedLongLong(capacity)) ||
              set_item(r, "errors", PyLong_FromUnsignedLongLong(errors)) ||
              set_item(r, "hardlinks_deduplicated", PyLong_FromUnsignedLongLong(dedup)) ||
              set_item(r, "excluded", PyLong_FromUnsignedLongLong(excl)) ||
              set_item(r, "skipped_mounts", PyLong_FromUnsignedLongLong(mounts)) ||
              set_item(r, "entries", PyLong_FromUnsignedLongLong(entries)) ||
              set_item(r, "histograms", Py_NewRef(hists)) || set_item(r, "owners", Py_NewRef(owners)) ||
              set_item(r, "top", Py_NewRef(toplist)) || set_item(r, "error_list", Py_NewRef(errlist)) ||
              set_item(r, "buckets", PyLong_FromLong(NB)) || set_item(r, "top_hist_max", PyLong_FromLong(TOP_HIST_MAX));
    Py_XDECREF(hists), Py_XDECREF(toplist), Py_XDECREF(errlist), Py_XDECREF(owners);
    if (bad) {
        Py_XDECREF(r);
        return NULL;
    }
    return r;
}

static void walk_free(walk_t *W)
{
    for (int t = 0; t < W->nthreads; t++) {
        worker_t *w = &W->workers[t];
        free(w->top), free(w->top_size_count), free(w->top_size_bytes), free(w->owners);
        free(w->buf), free(w->path), free(w->epath), free(w->kids);
    }
    free(W->workers);
    for (int i = 0; i < W->n_name_pats; i++) free(W->name_pats[i]);
    for (int i = 0; i < W->n_path_pats; i++) free(W->path_pats[i]);
    free(W->name_pats), free(W->path_pats);
    for (int i = 0; i < W->ntop; i++) free(W->top_names[i]);
    free(W->top_names);
    for (int i = 0; i < W->nerr; i++) free(W->errs[i].path);
    free(W->hl);
    free(W->top_rank);
    free(W->q);
    pthread_mutex_destroy(&W->lock);
    pthread_mutex_destroy(&W->hl_lock);
    pthread_mutex_destroy(&W->err_lock);
    pthread_cond_destroy(&W->cond);
}

static int add_patterns(walk_t *W, PyObject *patterns)
{
    PyObject *seq = PySequence_Fast(patterns, "exclude must be a sequence of bytes");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    W->name_pats = calloc((size_t)n + 1, sizeof(char *));
    W->path_pats = calloc((size_t)n + 1, sizeof(char *));
    if (!W->name_pats || !W->path_pats) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(o)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "exclude patterns must be bytes");
            return -1;
        }
        const char *s = PyBytes_AS_STRING(o);
        /* a pattern with a slash matches the path below the root; without, any entry's name */
        if (strchr(s, '/')) {
            while (*s == '/') s++;
            W->path_pats[W->n_path_pats++] = strdup(s);
        } else {
            W->name_pats[W->n_name_pats++] = strdup(s);
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* Kept directory descriptors save a path walk per child; allow as many as the hard limit permits
 * (the soft limit is often 1024).  The process keeps the raised soft limit, as `find` and `du` do. */
static int raise_nofile_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY ? 65536 : rl.rlim_max;
        struct rlimit n = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &n) == 0)
            rl.rlim_cur = want;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX ? INT_MAX : (int)rl.rlim_cur;
}

PyDoc_STRVAR(walk_doc,
"walk(root: bytes, snapshot_ns: int, threads: int, cross_mounts: bool, exclude: list[bytes],\n"
"     progress=None, interval: float = 0.5, *, _hook=None, _fd_budget=-1, _no_openat2=False) -> dict\n\n"
"Walk the directory `root` (never following symlinks) with `threads` threads and return raw\n"
"aggregates: totals, per-metric bucket arrays (bytes objects of uint64/float64), owners,\n"
"first-level directory totals and the first errors.  `progress(entries, errors, queued)` is\n"
"called every `interval` seconds from the calling thread.  Raises OSError if the root cannot be opened.");

static PyObject *py_walk(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"root", "snapshot_ns", "threads", "cross_mounts", "exclude", "progress", "interval",
                             "_hook", "_fd_budget", "_no_openat2", NULL};
    const char *root;
    Py_ssize_t rootlen;
    long long snap;
    int threads = 4, cross = 0, fd_budget = -1, no_openat2 = 0;
    PyObject *exclude = NULL, *progress = Py_None, *hook = Py_None;
    double interval = 0.5;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y#Lip|OOdOip", kwlist, &root, &rootlen, &snap, &threads, &cross, &exclude,
                                     &progress, &interval, &hook, &fd_budget, &no_openat2))
        return NULL;
    if (threads < 1 || threads > 1024) {
        PyErr_SetString(PyExc_ValueError, "threads must be between 1 and 1024");
        return NULL;
    }
    if ((size_t)rootlen != strlen(root)) {
        PyErr_SetString(PyExc_ValueError, "root contains a NUL byte");
        return NULL;
    }
    walk_t *W = calloc(1, sizeof(walk_t));
    if (!W)
        return PyErr_NoMemory();
    pthread_mutex_init(&W->lock, NULL);
    pthread_mutex_init(&W->hl_lock, NULL);
    pthread_mutex_init(&W->err_lock, NULL);
    pthread_cond_init(&W->cond, NULL);
    W->nthreads = threads;
    W->cross_mounts = cross;
    W->snap_ns = snap;
    W->hook = hook == Py_None ? NULL : hook;
#ifdef HAVE_OPENAT2_H
    W->use_openat2 = !no_openat2;
#endif
    W->workers = calloc((size_t)threads, sizeof(worker_t));
    PyObject *result = NULL;
    if (!W->workers) {
        PyErr_NoMemory();
        goto out;
    }
    if (exclude && exclude != Py_None && add_patterns(W, exclude))
        goto out;
    int limit = raise_nofile_limit();
    /* keep descriptors for at most half the allowance; the rest opens from an ancestor */
    W->fd_budget = fd_budget >= 0 ? fd_budget : (limit - 64 - 2 * threads) / 2;
    if (W->fd_budget < 0) W->fd_budget = 0;

    int rfd;
    Py_BEGIN_ALLOW_THREADS
    rfd = open(root, DIR_FLAGS | O_NOATIME);
    if (rfd < 0 && errno == EPERM)
        rfd = open(root, DIR_FLAGS);
    Py_END_ALLOW_THREADS
    if (rfd < 0) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, root);
        goto out;
    }
    struct stat rst;
    if (fstat(rfd, &rst) != 0) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, root);
        close(rfd);
        goto out;
    }
    W->root_fd = rfd;
    W->root_dev = (uint64_t)rst.st_dev;
    node_t *rn = calloc(1, sizeof(node_t) + 1);
    if (!rn) {
        close(rfd);
        PyErr_NoMemory();
        goto out;
    }
    rn->fd = rfd;
    rn->refs = 1;
    rn->dev = (uint64_t)rst.st_dev;
    rn->ino = (uint64_t)rst.st_ino;
    rn->top = 0;
    W->root = rn;
    W->top_names = calloc(16, sizeof(char *));
    W->top_cap = 16;
    W->top_names[0] = strdup(".");
    W->ntop = 1;
    W->q = malloc(64 * sizeof(node_t *));
    W->qcap = 64;
    W->q[W->qlen++] = rn;

    for (int t = 0; t < threads; t++) {
        worker_t *w = &W->workers[t];
        w->W = W;
        for (int i = 0; i < NH; i++)
            hist_init(&w->h[i]);
        w->buf = malloc(GETDENTS_BUF);
        if (!w->buf) {
            PyErr_NoMemory();
            W->nthreads = t;
            goto out_close;
        }
    }
    /* the root itself: one directory, counted in "." */
    {
        worker_t *w0 = &W->workers[0];
        w0->dirs++;
        top_t *t0 = worker_top(w0, 0);
        if (t0) t0->dirs++;
        account_inode(w0, 0, &rst, 1);
        w0->entries = 1;
    }
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&W->workers[started].thread, NULL, worker_main, &W->workers[started]) != 0)
            break;
    if (started == 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot start walker threads");
        goto out_close;
    }
    int interrupted = 0;
    PyThreadState *ts = PyEval_SaveThread();
    pthread_mutex_lock(&W->lock);
    while (!W->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long long ns = (long long)(interval * 1e9);
        until.tv_sec += ns / 1000000000LL;
        until.tv_nsec += ns % 1000000000LL;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&W->cond, &W->lock, &until);
        if (W->done)
            break;
        if (interrupted)
            continue;  /* an exception is pending: only wait for the workers to drain */
        size_t queued = W->qlen;
        pthread_mutex_unlock(&W->lock);
        uint64_t ent = 0, errs = 0;
        for (int t = 0; t < started; t++) {
            ent += __atomic_load_n(&W->workers[t].entries, __ATOMIC_RELAXED);
            errs += __atomic_load_n(&W->workers[t].errors, __ATOMIC_RELAXED);
        }
        PyEval_RestoreThread(ts);
        int stop = PyErr_CheckSignals() != 0;
        if (!stop && progress != Py_None) {
            PyObject *r = PyObject_CallFunction(progress, "KKn", (unsigned long long)ent, (unsigned long long)errs, (Py_ssize_t)queued);
            if (!r)
                stop = 1;
            Py_XDECREF(r);
        }
        ts = PyEval_SaveThread();
        pthread_mutex_lock(&W->lock);
        if (stop) {
            interrupted = 1;
            W->stop = 1;
            pthread_cond_broadcast(&W->cond);
        }
    }
    pthread_mutex_unlock(&W->lock);
    for (int t = 0; t < started; t++)
        pthread_join(W->workers[t].thread, NULL);
    PyEval_RestoreThread(ts);
    /* drop what an interrupted walk left queued (frees every remaining node) */
    pthread_mutex_lock(&W->lock);
    while (W->qlen) {
        node_t *n = W->q[--W->qlen];
        if (n->parent) n->parent->pending--;
        node_free_chain(W, n);
    }
    pthread_mutex_unlock(&W->lock);
    int oom = W->failed_oom;
    for (int t = 0; t < W->nthreads; t++)
        oom |= W->workers[t].oom;
    if (interrupted) {
        if (!PyErr_Occurred())
            PyErr_SetNone(PyExc_KeyboardInterrupt);
    } else if (oom) {
        PyErr_NoMemory();
    } else {
        result = build_result(W);
    }
out_close:
    if (W->root) {
        /* only reached when the walk never ran */
        free(W->root);
        W->root = NULL;
    }
    close(rfd);
out:
    walk_free(W);
    free(W);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))py_walk, METH_VARARGS | METH_KEYWORDS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "walk_core", "Parallel directory walk aggregating fsstats histograms.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_walk_core(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    PyModule_AddIntConstant(m, "LOG2_BUCKETS", NB);
    PyModule_AddIntConstant(m, "MAX_ERRORS_LISTED", MAX_ERRORS_LISTED);
    PyModule_AddIntConstant(m, "TOP_HIST_MAX", TOP_HIST_MAX);
    return m;
}
