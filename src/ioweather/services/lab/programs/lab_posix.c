/* One POSIX (or stdio) I/O pattern per run, for the ioweather lab (docs/lab.md).
 *
 * Built twice by `ioweather lab`: with -DLAB_MPI by mpicc (an MPI job: every rank runs the
 * pattern, Darshan writes one log) and without it by cc (a non-MPI process; the lab starts
 * several, one Darshan log each, as AI data loaders do). Every knob plants one cause; the
 * program does nothing else, so its run time is its I/O time.
 *
 *   -o PATH     file (a rank's own file is PATH.RANK unless -S)
 *   -k RANK            a non-MPI process's number (MPI runs ask MPI)
 *   -w N -s SIZE       write N requests of SIZE bytes
 *   -r N -z SIZE       then read N requests of SIZE bytes (the file is made by -w first)
 *   -R PASSES          read the same range PASSES times (data read again)
 *   -W PASSES          write the same range PASSES times (data written again)
 *   -d                 O_DIRECT (page cache bypassed: each small request costs a device trip)
 *   -e                 evict the file from the page cache between the writes and the reads (fsync, then
 *                      posix_fadvise DONTNEED): buffered reads come from the device, in order with the
 *                      kernel's readahead, in random order a device trip each
 *   -y 1|2             fsync (1) or fdatasync (2) after each write
 *   -x, -X             random order of the writes (-x) or the reads (-X): a permutation of the blocks,
 *                      seeded by rank
 *   -a BYTES           shift every file offset by BYTES (misaligned in the file)
 *   -m BYTES           shift the memory buffer by BYTES (misaligned in memory)
 *   -S                 one shared file, each rank its own contiguous region
 *   -P                 preallocate (posix_fallocate) the rank's region before writing, as a code that knows its
 *                      output's size does: a file system may then let several writers in at once (ext4 takes a
 *                      file's lock exclusively for an O_DIRECT write that allocates blocks, shared for one that
 *                      does not); every rank must be active (not with -O)
 *   -O                 only rank 0 does I/O; the others wait in a barrier
 *   -I K               rank 0 does K times the requests of the others (imbalance)
 *   -t                 stdio: each write is an fprintf of a SIZE-byte line and an fflush
 *   -f FILES           spread each rank's writes over FILES files (one request each: file-per-task storm)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef LAB_MPI
#include <mpi.h>
#endif

static void die(const char *what, const char *path)
{
    fprintf(stderr, "lab_posix: %s %s: %s\n", what, path, strerror(errno));
#ifdef LAB_MPI
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    exit(1);
}

static void barrier(void)
{
#ifdef LAB_MPI
    MPI_Barrier(MPI_COMM_WORLD);
#endif
}

/* a permutation of 0..n-1 (Fisher-Yates on a per-rank seed: reproducible) */
static long *order(long n, int random, unsigned seed)
{
    long *o = malloc(sizeof(long) * (n ? n : 1));
    for (long i = 0; i < n; i++) o[i] = i;
    if (random) {
        srand(seed);
        for (long i = n - 1; i > 0; i--) {
            long j = rand() % (i + 1), t = o[i];
            o[i] = o[j];
            o[j] = t;
        }
    }
    return o;
}

int main(int argc, char **argv)
{
    int rank = 0, opt;
    const char *path = NULL;
    long nw = 0, nr = 0, size = 1 << 20, rsize = 0, shift = 0, mshift = 0, imbalance = 1, files = 0;
    int direct = 0, evict = 0, sync_mode = 0, wrandom = 0, rrandom = 0, shared = 0, only0 = 0, stdio_mode = 0, rpasses = 1,
        wpasses = 1, prealloc = 0;
#ifdef LAB_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
    while ((opt = getopt(argc, argv, "o:k:w:s:r:z:R:W:dey:xXa:m:SPOI:tf:")) != -1) {
        switch (opt) {
        case 'o': path = optarg; break;
        case 'k': rank = atoi(optarg); break;
        case 'w': nw = atol(optarg); break;
        case 's': size = atol(optarg); break;
        case 'r': nr = atol(optarg); break;
        case 'z': rsize = atol(optarg); break;
        case 'R': rpasses = atoi(optarg); break;
        case 'W': wpasses = atoi(optarg); break;
        case 'd': direct = 1; break;
        case 'e': evict = 1; break;
        case 'y': sync_mode = atoi(optarg); break;
        case 'x': wrandom = 1; break;
        case 'X': rrandom = 1; break;
        case 'a': shift = atol(optarg); break;
        case 'm': mshift = atol(optarg); break;
        case 'S': shared = 1; break;
        case 'P': prealloc = 1; break;
        case 'O': only0 = 1; break;
        case 'I': imbalance = atol(optarg); break;
        case 't': stdio_mode = 1; break;
        case 'f': files = atol(optarg); break;
        default: fprintf(stderr, "lab_posix: unknown option\n"); return 2;
        }
    }
    if (!path) { fprintf(stderr, "lab_posix: -o PATH is required\n"); return 2; }
    /* -P's barrier is every rank's: with -O the idle ranks would pair it with their last one and leave rank 0
       waiting; the stdio and file-per-write paths allocate nothing to preallocate */
    if (prealloc && (only0 || stdio_mode || files > 0)) {
        fprintf(stderr, "lab_posix: -P cannot go with -O, -t or -f\n");
        return 2;
    }
    if (!rsize) rsize = size;
    /* the most requests any rank makes, the same on every rank: a shared file's regions do not overlap */
    long maxn = (nw > nr ? nw : nr) * (imbalance > 1 ? imbalance : 1);
    if (rank == 0 && imbalance > 1) { nw *= imbalance; nr *= imbalance; }
    int active = !only0 || rank == 0;
    long bufsize = (size > rsize ? size : rsize) + mshift + 4096;
    char *raw, *buf;
    if (posix_memalign((void **)&raw, 4096, bufsize)) die("memory for", path);
    memset(raw, 'x', bufsize);
    buf = raw + mshift;

    char name[4096];
    if (shared) snprintf(name, sizeof name, "%s", path);
    else snprintf(name, sizeof name, "%s.%d", path, rank);
    /* a shared file's regions: rank r starts after the largest region times r */
    long base = shared ? (long)rank * (maxn * (size > rsize ? size : rsize) + shift) : 0;
    int flags = O_RDWR | O_CREAT | (direct ? O_DIRECT : 0);

    if (active && files > 0) {
        /* a file per request: create, write, close; the metadata is the cost */
        for (long i = 0; i < files; i++) {
            char fname[4200];
            snprintf(fname, sizeof fname, "%s.%d.%ld", path, rank, i);
            int fd = open(fname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) die("open", fname);
            if (write(fd, buf, size) != size) die("write", fname);
            if (sync_mode == 1 && fsync(fd)) die("fsync", fname);
            close(fd);
        }
    } else if (active && stdio_mode) {
        FILE *f = fopen(name, shared ? "r+" : "w");
        if (!f && shared) f = fopen(name, "w");
        if (!f) die("fopen", name);
        char *line = malloc(size + 1);
        memset(line, 'a' + rank % 26, size - 1);
        line[size - 1] = '\n';
        line[size] = 0;
        for (long i = 0; i < nw; i++) {
            fprintf(f, "%s", line);
            fflush(f);
            if (sync_mode == 1 && fsync(fileno(f))) die("fsync", name);
            if (sync_mode == 2 && fdatasync(fileno(f))) die("fdatasync", name);
        }
        fclose(f);
    } else if (active) {
        int fd = open(name, flags, 0644);
        if (fd < 0) die("open", name);
        if (prealloc && nw) {
            int err = posix_fallocate(fd, base + shift, nw * size);
            if (err) { errno = err; die("posix_fallocate", name); }
            /* every region allocated before any rank writes (-P: every rank active, not with -O) */
            barrier();
        }
        if (nw) {
            long *o = order(nw, wrandom, 1000 + rank);
            for (int p = 0; p < wpasses; p++)
                for (long i = 0; i < nw; i++) {
                    off_t off = base + o[i] * size + shift;
                    if (pwrite(fd, buf, size, off) != size) die("pwrite", name);
                    if (sync_mode == 1 && fsync(fd)) die("fsync", name);
                    if (sync_mode == 2 && fdatasync(fd)) die("fdatasync", name);
                }
            free(o);
        }
        if (nr && evict) {
            /* dirty pages are not dropped: write them back first, then drop the clean pages of this rank's
             * region (a shared file's other regions are the other ranks') */
            if (fsync(fd)) die("fsync", name);
            off_t len = maxn * (size > rsize ? size : rsize) + shift;
            if ((errno = posix_fadvise(fd, base, len, POSIX_FADV_DONTNEED))) die("posix_fadvise", name);
        }
        if (nr) {
            long *o = order(nr, rrandom, 2000 + rank);
            for (int p = 0; p < rpasses; p++)
                for (long i = 0; i < nr; i++) {
                    off_t off = base + o[i] * rsize + shift;
                    if (pread(fd, buf, rsize, off) != rsize) die("pread", name);
                }
            free(o);
        }
        close(fd);
    }
    barrier();
    free(raw);
#ifdef LAB_MPI
    MPI_Finalize();
#endif
    return 0;
}
