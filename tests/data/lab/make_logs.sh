#!/bin/bash
# Remake the planted-cause logs of tests/data/lab with a real Darshan runtime (docs/darshan.md, "Planted logs").
# usage: make_logs.sh PREFIX   (PREFIX: where Darshan 3.5.0 is installed, lib/libdarshan.so; see ../shared/third_party)
# Needs mpicc/mpiexec (Debian's MPICH) and fio. Runs in a scratch directory on the local disk; ~2 min.
set -euo pipefail
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mpicc -O2 -o "$scratch/planted" "$here/planted.c"
run() {  # NAME NPROCS CASE N
    mkdir -p "$scratch/work" "$scratch/logs"
    mpiexec -n "$2" env LD_PRELOAD="$prefix/lib/libdarshan.so" DARSHAN_LOGPATH="$scratch/logs" \
        "$scratch/planted" "$3" "$scratch/work" "$4"
    mv -f "$scratch"/logs/*.darshan "$here/$1.darshan"
    chmod 644 "$here/$1.darshan"
    rm -rf "$scratch/work"
}
run stdio-sync 2 stdio-sync 10000     # text lines, each flushed and fsynced
run one-rank 4 one-rank 1000          # rank 0 writes 3.9 GiB with O_DIRECT, the others wait in a barrier
run one-rank-shared 4 one-rank-shared 256   # every rank opens one file, rank 0 alone writes 1 GiB to it (O_DIRECT)
run fsync-4k 2 fsync-4k 8000          # 4 KiB writes, an fsync after each (the bad run of a pair)
run fixed-large 2 fixed-large 8000    # the same bytes in 4 MiB writes and one fsync (its fixed run)
run coll-sync 2 coll-sync 2500        # 4 KiB collective MPI-IO writes, MPI_File_sync after each
run clean-fpp 2 clean-fpp 500         # the control: file per process, 4 MiB O_DIRECT writes
# two MPI-IO controls of the lab's catalogue (issue 39 item 1), with IOR from the same prefix
ior() {  # NAME IOR-ARGS...
    name=$1; shift
    mkdir -p "$scratch/work"
    mpiexec -n 4 env LD_PRELOAD="$prefix/lib/libdarshan.so" DARSHAN_LOGFILE="$here/$name.darshan" \
        "$prefix/bin/ior" "$@" -o "$scratch/work/ior.dat"
    chmod 644 "$here/$name.darshan"
    rm -rf "$scratch/work"
}
ior ior-mpiio-collective-4m -a MPIIO -c -t 4m -b 128m -w -r -e -k      # shared file, collective 4 MiB
ior ior-mpiio-independent-8m -a MPIIO -t 8m -b 128m -w -r -e -k        # shared file, independent 8 MiB
# the same clean job alone, then during a fio storm on the same disk (the storm pair)
run clean-quiet 2 clean-fpp 500
mkdir -p "$scratch/storm"
fio --name=storm --directory="$scratch/storm" --rw=write --bs=4m --direct=1 --size=2g --numjobs=2 \
    --time_based --runtime=40 > /dev/null &
sleep 2
run clean-storm 2 clean-fpp 500
wait
# copied from a run of the lab's catalogue (`ioweather lab run`, docs/lab.md), not remade here:
#   stdio-flush.darshan   case stdio-flush: 2 ranks, 400,000 lines of 200 B each through stdio, an fflush each
#   misaligned-memory.darshan   case misaligned-memory: 4 ranks, 1,200 writes from buffers 3 bytes off alignment
#   ctl-hdf5-collective-large.darshan   control: HDF5, 2 ranks, 4 MiB per rank per step in collective transfers
#   ctl-mpiio-collective-large-loaded.darshan   control ctl-mpiio-collective-large (IOR, 2 ranks, 4 MiB collective
#       writes and reads) run at a load of 10 on the 2 cores (2026-11-28 23:24, branch labmpi): M08 claimed 0.74 s
#   mpiio-interleaved-small.darshan   lab_mpiio (`ioweather lab build`) -b 8192 -n 1500 -g 0, 4 ranks: independent
#       8 KiB writes through a strided view (rank r's piece k at (4k + r) x 8 KiB), data-sieved (2026-11-28 23:59)
#   ctl-fpp-odirect-4m-stdout.darshan   control ctl-fpp-odirect-4m (IOR, 2 ranks, a file each, 4 MiB O_DIRECT writes;
#       its <STDOUT> record has no mount) while another store build wrote to the disk (2026-11-29 00:07)
#   collective-rmw-loaded.darshan, fixed-collective-rmw-idle.darshan   the collective-rmw pair as first stored in
#       pairs/ (lab_mpiio -c -n 16 -b 4096 -g 4096 / -g 0 -k 1024, 2 ranks; 16:41:58 at load 14-16, the twin at
#       18:05:20 idle), kept as the drift's test
#   collective-rmw-nice19.darshan, fixed-collective-rmw-nice19.darshan   the pair as stored in pairs/ from 2026-11-29
#       02:39 (load 12, one minute, the ranks waiting for cores: 75 %); pairs/ now holds series R round 1 of
#       2026-11-29 08:59 (lab run with the ranks at autogroup nice -10 and a 5 s pause before each case)
#   fdatasync-2m.darshan, fixed-fdatasync-2m.darshan   the fdatasync-per-write pair as first stored in pairs/ (lab_posix
#       -w 256 -s 2097152 -y 2 / without -y, 2 ranks; 16:40:47 at load 14-16, the twin at 18:05:16 on cold pages), when
#       the case wrote 2 MiB; pairs/ now holds the catalogue's 64 KiB case (lab run, 2026-11-29 10:04, load 2-3)
#   random-small-reads-odirect.darshan   the random-small-reads case as stored in pairs/ until 2026-11-29 (lab_posix
#       -w 32 -s 4194304 -r 32768 -z 4096 -X -d: 4 KiB O_DIRECT reads in random order, 2 ranks; 2026-11-28 16:40),
#       against pairs/small-reads-odirect.darshan of the same minute and size (the same reads in order): with O_DIRECT
#       every small read is a device trip in either order (3.81 s against 3.08 s); pairs/ now holds the case with the
#       file evicted and read buffered (-e, no -d) and its twin fixed-random-small-reads (lab run, 2026-11-29 18:28,
#       load 4.7-4.9)
#   rank-imbalance-shared-4m.darshan, fixed-rank-imbalance-shared-4m.darshan   the rank-imbalance-shared pair as stored
#       in pairs/ until 2026-11-29 18:45 (lab_posix -S -I 8 -w 128 -s 4 MiB -d / -S -w 352, 4 ranks): its fix saved
#       nothing; pairs/ now holds the 64 KiB preallocated case (lab run series 4, 18:37, load 3.9; docs/validation.md,
#       "The rank pairs made to cost"), and with it one-rank-io, rank-imbalance-fpp and their spread/balanced twins
