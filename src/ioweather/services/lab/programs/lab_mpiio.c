/* MPI-IO patterns IOR does not express, for the ioweather lab (docs/lab.md).
 *
 *   -o PATH -n STEPS -b BLOCK -g GAP   each step, every rank writes one BLOCK-byte piece of a
 *        row whose pieces are interleaved by rank (a strided file view), each piece followed by
 *        GAP bytes nobody writes: a non-contiguous access whose holes make ROMIO read the
 *        region before writing it (read-modify-write)
 *   -c   collective writes (two-phase collective buffering); default independent (data sieving)
 *   -C   contiguous: no file view, rank r writes its own block of STEPS x BLOCK bytes from
 *        r x STEPS x BLOCK, one BLOCK-byte MPI_File_write_at per step (-b, -n; -g and -k unused)
 *   -d   the data file opened with O_DIRECT: ROMIO's requests reach the device as they are, as on a
 *        client without a page cache (ROMIO has no direct-I/O hint for this file system; IOR's MPIIO
 *        backend none either), so small calls cost their device trips here
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -d: ROMIO opens the file with open(); this program's own open comes first in the lookup order and adds
 * O_DIRECT for the data file, then calls the next one (Darshan's wrapper, which records it, then libc's) */
static const char *direct_path = NULL;

static int next_open(const char *name, const char *path, int flags, mode_t mode)
{
    int (*next)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);
    if (direct_path && strcmp(path, direct_path) == 0)
        flags |= O_DIRECT;
    return next(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return next_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & O_CREAT) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return next_open("open64", path, flags, mode);
}

int main(int argc, char **argv)
{
    int rank, procs, opt, collective = 0, contiguous = 0, direct = 0;
    long steps = 16, block = 4096, gap = 4096, count = 64;
    const char *path = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    while ((opt = getopt(argc, argv, "o:n:b:g:k:cCd")) != -1) {
        switch (opt) {
        case 'o': path = optarg; break;
        case 'n': steps = atol(optarg); break;
        case 'b': block = atol(optarg); break;
        case 'g': gap = atol(optarg); break;
        case 'k': count = atol(optarg); break;
        case 'c': collective = 1; break;
        case 'C': contiguous = 1; break;
        case 'd': direct = 1; break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (!path) MPI_Abort(MPI_COMM_WORLD, 2);
    if (direct) direct_path = path;
    if (contiguous) {
        MPI_File fh;
        if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
            fprintf(stderr, "lab_mpiio: cannot open %s\n", path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        char *buf = NULL;
        if (posix_memalign((void **)&buf, 4096, block)) MPI_Abort(MPI_COMM_WORLD, 1);   /* O_DIRECT's alignment */
        memset(buf, 'a' + rank % 26, block);
        MPI_Offset base = (MPI_Offset)rank * steps * block;
        for (long s = 0; s < steps; s++) {
            MPI_Status st;
            if (collective)
                MPI_File_write_at_all(fh, base + s * block, buf, (int)block, MPI_BYTE, &st);
            else
                MPI_File_write_at(fh, base + s * block, buf, (int)block, MPI_BYTE, &st);
        }
        MPI_File_close(&fh);
        free(buf);
        MPI_Finalize();
        return 0;
    }
    /* a step: COUNT pieces per rank; piece i of rank r at ((i * procs + r) * (block + gap)) */
    MPI_Datatype piece, strided;
    MPI_Type_vector((int)count, (int)block, (int)((block + gap) * procs), MPI_BYTE, &piece);
    MPI_Type_create_resized(piece, 0, (block + gap) * procs * count, &strided);
    MPI_Type_commit(&strided);
    MPI_Info info;
    MPI_Info_create(&info);
    /* say what each run plants rather than rely on ROMIO's defaults for the file system */
    MPI_Info_set(info, "romio_ds_write", "enable");
    MPI_Info_set(info, "romio_cb_write", collective ? "enable" : "disable");
    /* sieving buffers of 4 MiB: the POSIX requests are large, so the cause is the read-back, not their size */
    MPI_Info_set(info, "ind_wr_buffer_size", "4194304");
    MPI_Info_set(info, "ind_rd_buffer_size", "4194304");
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "lab_mpiio: cannot open %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, (MPI_Offset)rank * (block + gap), MPI_BYTE, strided, "native", info);
    char *buf = malloc(block * count);
    memset(buf, 'a' + rank % 26, block * count);
    for (long s = 0; s < steps; s++) {
        MPI_Status st;
        if (collective)
            MPI_File_write_all(fh, buf, (int)(block * count), MPI_BYTE, &st);
        else
            MPI_File_write(fh, buf, (int)(block * count), MPI_BYTE, &st);
    }
    MPI_File_close(&fh);
    MPI_Info_free(&info);
    MPI_Type_free(&strided);
    free(buf);
    MPI_Finalize();
    return 0;
}
