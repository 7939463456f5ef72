/* Planted-cause I/O patterns for the advisor's tests; run under LD_PRELOAD=libdarshan.so.
 * usage: planted CASE DIR [N]  (CASE: stdio-sync, one-rank, one-rank-shared, fsync-4k, coll-sync, clean-fpp, bad-small,
 *        fixed-large) */
#define _GNU_SOURCE
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *c = argv[1], *dir = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 2000;
    char path[4096];
    void *buf;
    if (posix_memalign(&buf, 4096, 4 << 20)) return 1;
    memset(buf, 'x', 4 << 20);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(c, "stdio-sync")) {          /* text lines, each flushed and synced */
        snprintf(path, sizeof path, "%s/log.%d.txt", dir, rank);
        FILE *f = fopen(path, "w");
        for (long i = 0; i < n; i++) {
            fprintf(f, "step %ld rank %d value %.6f some text to make a line\n", i, rank, i * 0.5);
            fflush(f);
            fsync(fileno(f));
        }
        fclose(f);
    } else if (!strcmp(c, "one-rank")) {     /* rank 0 writes all with O_DIRECT; the others wait */
        if (rank == 0) {
            snprintf(path, sizeof path, "%s/one.dat", dir);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
            for (long i = 0; i < n; i++) pwrite(fd, buf, 4 << 20, (off_t)i * (4 << 20));
            close(fd);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(c, "one-rank-shared")) {  /* every rank opens one file, rank 0 alone writes to it */
        snprintf(path, sizeof path, "%s/shared.dat", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0644);
        if (rank == 0)
            for (long i = 0; i < n; i++) pwrite(fd, buf, 4 << 20, (off_t)i * (4 << 20));
        close(fd);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(c, "fsync-4k") || !strcmp(c, "bad-small")) {  /* 4 KiB writes, fsync after each */
        snprintf(path, sizeof path, "%s/small.%d.dat", dir, rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (long i = 0; i < n; i++) { pwrite(fd, buf, 4096, (off_t)i * 4096); fsync(fd); }
        close(fd);
    } else if (!strcmp(c, "fixed-large")) {  /* the same bytes as bad-small in one write and one fsync */
        snprintf(path, sizeof path, "%s/small.%d.dat", dir, rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        long left = n * 4096, off = 0;
        while (left > 0) { long k = left > (4 << 20) ? (4 << 20) : left; pwrite(fd, buf, k, off); off += k; left -= k; }
        fsync(fd);
        close(fd);
    } else if (!strcmp(c, "coll-sync")) {    /* 4 KiB collective MPI-IO writes, a sync after each */
        snprintf(path, sizeof path, "%s/coll.dat", dir);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        for (long i = 0; i < n; i++) {
            MPI_File_write_at_all(fh, ((MPI_Offset)i * size + rank) * 4096, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
            MPI_File_sync(fh);
        }
        MPI_File_close(&fh);
    } else if (!strcmp(c, "clean-fpp")) {    /* file per process, 4 MiB O_DIRECT writes */
        snprintf(path, sizeof path, "%s/fpp.%d.dat", dir, rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
        for (long i = 0; i < n; i++) pwrite(fd, buf, 4 << 20, (off_t)i * (4 << 20));
        close(fd);
    } else { fprintf(stderr, "unknown case %s\n", c); MPI_Abort(MPI_COMM_WORLD, 2); }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
