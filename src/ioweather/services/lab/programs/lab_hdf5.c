/* An HDF5 (MPI-IO driver) job for the ioweather lab (docs/lab.md): every rank writes its own
 * columns of one 2-D dataset of bytes, ROWS rows per step.
 *
 *   -o PATH -n STEPS -r ROWS -w WIDTH   each step writes ROWS rows of WIDTH bytes per rank
 *   -c                                   collective transfers (H5FD_MPIO_COLLECTIVE); default independent
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, procs, opt, collective = 0;
    long steps = 8, rows = 1, width = 4096;
    const char *path = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    while ((opt = getopt(argc, argv, "o:n:r:w:c")) != -1) {
        switch (opt) {
        case 'o': path = optarg; break;
        case 'n': steps = atol(optarg); break;
        case 'r': rows = atol(optarg); break;
        case 'w': width = atol(optarg); break;
        case 'c': collective = 1; break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (!path) MPI_Abort(MPI_COMM_WORLD, 2);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    /* the dataset on a 1 MiB boundary: without it its data start after HDF5's header, and every piece is
     * misaligned in the file, a cause the cases do not plant */
    H5Pset_alignment(fapl, 0, 1 << 20);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    hsize_t dims[2] = {(hsize_t)(steps * rows), (hsize_t)(width * procs)};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, "data", H5T_NATIVE_UCHAR, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    hsize_t count[2] = {(hsize_t)rows, (hsize_t)width};
    hid_t mem = H5Screate_simple(2, count, NULL);
    unsigned char *buf = malloc(rows * width);
    memset(buf, 'a' + rank % 26, rows * width);
    for (long s = 0; s < steps; s++) {
        hsize_t start[2] = {(hsize_t)(s * rows), (hsize_t)(rank * width)};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        if (H5Dwrite(dset, H5T_NATIVE_UCHAR, mem, space, dxpl, buf) < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    free(buf);
    H5Sclose(mem);
    H5Pclose(dxpl);
    H5Dclose(dset);
    H5Sclose(space);
    H5Fclose(file);
    H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
