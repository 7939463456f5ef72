"""The lab's cases, each with its planted cause and labels, and the label vocabulary (docs/lab.md).

A case is a command line: its first word names a tool (`ior`, `mdtest`) or one of the lab's programs
(programs/*.c), `{dir}` is the case's working directory on the file system under test. An MPI case runs
under `mpiexec -n PROCS`; a non-MPI case (`mpi=False`) starts PROCS processes, each with `-k K`, and
Darshan writes one log per process. A control plants nothing: it must be told "nothing worth changing".

Each label maps to the finding codes that name it, in ioweather and in Drishti (drishti-io 0.8,
drishti/includes/config.py); a code at WARN or HIGH that maps to no label is a false alarm.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class Label:
    name: str
    meaning: str
    ioweather: tuple[str, ...]
    drishti: tuple[str, ...]


# ioweather's codes: stats/findings.py; Drishti's: INSIGHTS_* in drishti/includes/config.py. Drishti's M08-M10
# are about aggregator counts, not ioweather's M08-M10. A label with no code yet is one neither tool names.
LABELS: tuple[Label, ...] = (
    Label("small-reads", "many reads below 1 MiB, each costing a device trip (O_DIRECT) or a call",
          ("P05", "P15"), ("P05", "P15")),
    Label("small-writes", "many writes below 1 MiB, each costing a device trip (O_DIRECT, fsync) or a call",
          ("P06", "P16"), ("P06", "P16")),
    Label("random-reads", "reads in random order (not sequential)", ("P11",), ("P11",)),
    Label("random-writes", "writes in random order (not sequential)", ("P13",), ("P13",)),
    Label("misaligned-file", "file offsets not aligned to the file system's block", ("P08",), ("P08",)),
    Label("misaligned-memory", "buffers not aligned in memory", ("P07",), ("P07",)),
    Label("reread", "the same data read again", ("P09",), ("P09",)),
    Label("rewrite", "the same data written again", ("P10",), ("P10",)),
    # Y01: the advisor's code for it (issue 39 item 3), raised once that work is merged
    Label("sync-per-write", "an fsync, fdatasync or MPI_File_sync after each write", ("Y01",), ()),
    Label("metadata-storm", "many files created, stat'ed and removed (file per task, mdtest)",
          ("P17", "F01"), ("P17",)),
    Label("independent-shared", "independent MPI-IO (or HDF5) calls on a shared file where collective ones would merge them",
          ("M02", "M03"), ("M02", "M03")),
    Label("small-collective", "collective MPI-IO calls too small to gain from collective buffering", ("M11",), ()),
    Label("rmw", "ROMIO reads back what it writes (data sieving or collective buffering over holes)",
          ("M09",), ()),
    Label("one-rank-io", "one rank does all the I/O while the others wait", ("R01",), ()),
    Label("rank-imbalance", "one rank moves far more bytes than the others", ("P18", "P19", "P21", "P22", "B02"),
          ("P18", "P19", "P21", "P22")),
    Label("stdio-heavy", "text output through stdio, flushed line by line", ("S01",), ("S01",)),
)
LABEL_NAMES = tuple(label.name for label in LABELS)


def code_labels(tool: str) -> dict[str, str]:
    """code -> label for `tool` ("ioweather" or "drishti")."""
    return {code: label.name for label in LABELS for code in getattr(label, tool)}


@dataclass(frozen=True)
class Case:
    name: str
    cause: str
    labels: tuple[str, ...]
    argv: tuple[str, ...]
    procs: int = 2
    mpi: bool = True
    #: a tool or program the case needs beyond the core ones (lab_hdf5)
    needs: str | None = None
    #: labels a finding may name without being wrong or required: a consequence of the planted cause
    #: (data sieving writes back the holes it read: "written again" is the same cause seen from POSIX)
    tolerated: tuple[str, ...] = ()
    #: planted labels whose cause was measured to cost less than the advisor's bar on one machine's local disk
    #: (the page cache absorbs it, flash hides it, or a single device's bandwidth does not add up over ranks):
    #: on a node-local file system they are scored as patterns, neither found nor missed (docs/validation.md)
    costless_local: tuple[str, ...] = ()

    @property
    def control(self) -> bool:
        return not self.labels


def _ior(*args: str) -> tuple[str, ...]:
    # -k: keep the file (IOR's removal is Darshan-visible metadata that no case plants); {dir} is removed after
    return ("ior", *args, "-k", "-o", "{dir}/ior.dat")


def _posix(*args: str) -> tuple[str, ...]:
    return ("lab_posix", "-o", "{dir}/data", *args)


def _loader(*args: str) -> tuple[str, ...]:
    return ("lab_posix_nompi", "-o", "{dir}/shard", *args)


M4, M2, K64 = str(4 * MiB), str(2 * MiB), str(64 * 1024)

CASES: tuple[Case, ...] = (
    # Collective cases run 2 ranks: on 2 shared cores, 4 busy-polling MPICH ranks make each collective call wait
    # for the scheduler (a 4 KiB collective write took 100 ms), which is not the cause planted.

    # A planted cause costs seconds (the advisor's bar is 1 s of saving): a pattern that costs less is not
    # one an advisor should act on. Misalignment stays cheap on a local disk (the page cache absorbs it):
    # those two cases plant the pattern, with 1200 requests (the advisor's minimum count is 1000). Requests
    # that are not small are 2 MiB, not 1: Darshan's size bins put exactly 1 MiB in 100K_1M, which Drishti
    # counts as small.

    # controls: large, aligned, sequential; nothing to change
    Case("ctl-fpp-large", "file per process, 4 MiB sequential writes then reads", (),
         _ior("-a", "POSIX", "-F", "-t", "4m", "-b", "256m", "-w", "-r", "-e")),
    Case("ctl-fpp-odirect-4m", "file per process, 4 MiB O_DIRECT writes", (),
         _ior("-a", "POSIX", "-F", "--posix.odirect", "-t", "4m", "-b", "256m", "-w", "-e")),
    Case("ctl-mpiio-collective-large", "shared file, 4 MiB collective MPI-IO writes and reads", (),
         _ior("-a", "MPIIO", "-c", "-t", "4m", "-b", "128m", "-w", "-r", "-e")),
    Case("ctl-mpiio-independent-large", "shared file, each rank one contiguous block in 8 MiB independent calls", (),
         _ior("-a", "MPIIO", "-t", "8m", "-b", "128m", "-w", "-r", "-e"), procs=4),
    Case("ctl-serial-seq-large", "one process writes and reads 8 MiB O_DIRECT requests", (),
         _loader("-w", "64", "-s", str(8 * MiB), "-r", "64", "-d"), procs=1, mpi=False),
    Case("ctl-loader-seq-large", "4 processes each read their own shard in 4 MiB O_DIRECT requests", (),
         _loader("-w", "32", "-s", M4, "-r", "32", "-d"), procs=4, mpi=False),
    Case("ctl-hdf5-collective-large", "HDF5, 4 MiB per rank per step, collective transfers", (),
         ("lab_hdf5", "-o", "{dir}/data.h5", "-c", "-n", "8", "-r", "256", "-w", "16384"), needs="lab_hdf5"),

    # small requests, their cost made real with O_DIRECT
    Case("small-writes-odirect", "file per process, 4 KiB O_DIRECT writes", ("small-writes",),
         _ior("-a", "POSIX", "-F", "--posix.odirect", "-t", "4k", "-b", "64m", "-w")),
    Case("small-reads-odirect", "4 MiB writes, then 4 KiB O_DIRECT reads", ("small-reads",),
         _posix("-w", "96", "-s", M4, "-r", "98304", "-z", "4096", "-d")),
    Case("small-writes-shared", "shared file, 8 KiB O_DIRECT writes", ("small-writes",),
         _ior("-a", "POSIX", "--posix.odirect", "-t", "8k", "-b", "32m", "-w"), procs=4),
    # 128 MiB a rank: the 16 KiB writes cost 0.4 s on the idle machine (under the bar's WARN band): 384 MiB
    Case("small-rw-fpp", "file per process, 16 KiB O_DIRECT writes and reads", ("small-writes", "small-reads"),
         _ior("-a", "POSIX", "-F", "--posix.odirect", "-t", "16k", "-b", "384m", "-w", "-r")),

    # order and alignment
    Case("random-reads", "4 MiB writes, then 2 MiB O_DIRECT reads in random order", ("random-reads",),
         _posix("-w", "128", "-s", M4, "-r", "256", "-z", M2, "-X", "-d"), costless_local=("random-reads",)),
    Case("random-writes", "2 MiB O_DIRECT writes in random order", ("random-writes",),
         _posix("-w", "512", "-s", M2, "-x", "-d"), costless_local=("random-writes",)),
    # With O_DIRECT every 4 KiB read is a device trip in either order (random 5.43 s, in order 5.47 s: the order
    # cost nothing). Buffered reads of a file evicted from the page cache (-e) are what the order changes: in
    # order the kernel's readahead reads ahead in large requests, in random order each read is a device trip
    # (98304 a rank: 5.9-18.5 s against 1.6-4.4 s in order at a load of 4-10, docs/validation.md)
    Case("random-small-reads", "4 MiB writes evicted from the page cache, then 4 KiB buffered reads in random order",
         ("small-reads", "random-reads"), _posix("-w", "96", "-s", M4, "-r", "98304", "-z", "4096", "-X", "-e")),
    # 32 MiB a rank: the random half of the requests cost 0.3-0.6 s here; 96 MiB
    Case("ior-random-small", "IOR random offsets, 4 KiB O_DIRECT writes and reads",
         ("small-writes", "small-reads", "random-writes", "random-reads"),
         _ior("-a", "POSIX", "-F", "-z", "--posix.odirect", "-t", "4k", "-b", "96m", "-w", "-r")),
    Case("misaligned-file", "2 MiB writes at offsets 1000 bytes off the block", ("misaligned-file",),
         _posix("-w", "300", "-s", M2, "-a", "1000"), procs=4, costless_local=("misaligned-file",)),
    Case("misaligned-small-shared", "shared file, 47008-byte writes (not a block multiple)",
         ("misaligned-file", "small-writes"),
         _ior("-a", "POSIX", "-t", "47008", "-b", str(47008 * 1024), "-w", "-e"), procs=4,
         costless_local=("misaligned-file", "small-writes")),
    Case("misaligned-memory", "2 MiB writes from a buffer 3 bytes off alignment", ("misaligned-memory",),
         _posix("-w", "300", "-s", M2, "-m", "3"), procs=4),

    # syncs
    # an fsync costs ~0.35 ms on the idle machine (3000 a rank: 1.06 s) and ~4 ms at a load of 15: 6000 a rank
    Case("fsync-per-write", "4 KiB writes, an fsync after each", ("sync-per-write", "small-writes"),
         _posix("-w", "6000", "-s", "4096", "-y", "1")),
    # 256 fdatasyncs of 2 MiB writes cost 0.27 s of 1.6 s on the idle machine: the device's bandwidth, not the
    # syncs, is the cost of large writes. 64 KiB writes make each sync a device round trip (as a checkpoint
    # or log written in pieces with a sync each); the write size is that cause's, so small-writes is tolerated
    Case("fdatasync-per-write", "64 KiB writes, an fdatasync after each", ("sync-per-write",),
         _posix("-w", "5000", "-s", str(64 * 1024), "-y", "2"), tolerated=("small-writes",)),

    # metadata
    # 2000 empty files for each of 2 tasks cost 0.2-0.3 s of Darshan-visible metadata here (8-13 % of the run),
    # and Darshan keeps 1024 records a process: beyond that the storm is invisible. 1000 files of 4 KiB a task
    # (one write and one read each: the file count's cost, tolerated as small requests), 4 tasks: 3.2 s
    # 1000 a task cost 0.2 s of Darshan-visible metadata at a load of 15 (3.2 s in another run); more files are
    # not seen: Darshan keeps 1024 records a process (DARSHAN_DEF_MOD_REC_COUNT; 3000 files gave a partial log
    # of 1024 a process), and with its MAX_RECORDS raised to 8192 the 12,000-record log killed `job`'s reader
    Case("mdtest-fpp-dirs", "mdtest: 1000 files of 4 KiB per task in its own directory, created, written, stat'ed, "
         "read, removed", ("metadata-storm",),
         ("mdtest", "-F", "-n", "1000", "-u", "-w", "4096", "-e", "4096", "-d", "{dir}/md"), procs=4,
         tolerated=("small-writes", "small-reads")),
    Case("mdtest-shared-dir", "mdtest: 1000 files per task in one shared directory", ("metadata-storm",),
         ("mdtest", "-F", "-n", "1000", "-d", "{dir}/md"), procs=4),
    # one 4 KiB write per file: the files are the cost (the writes took 0.04 s of 5.2 s here), and fewer
    # files is the fix that makes the writes large: "small writes" is a consequence, not a second cause
    # 2000 files a task cost 0.86 s on the idle machine: 5000
    Case("many-small-files", "file per task: 5000 files of 4 KiB each", ("metadata-storm",),
         _posix("-f", "5000", "-s", "4096"), tolerated=("small-writes",)),

    # MPI-IO on a shared file
    # The page cache absorbs small buffered writes: with IOR (buffered: its MPIIO backend has no O_DIRECT), 8 KiB
    # calls cost no more than 8 MiB ones idle (the fix saved -0.2 to +3.5 s in five runs), so the data file is
    # opened O_DIRECT (lab_mpiio -d): 16384 writes of 8 KiB on one shared file, 22.5 s for twice as many at a
    # load of 14
    Case("mpiio-independent-small", "shared file, 8 KiB independent MPI-IO writes (O_DIRECT), each rank its own block",
         ("independent-shared", "small-writes"),
         ("lab_mpiio", "-o", "{dir}/data", "-C", "-d", "-b", "8192", "-n", "4096"), procs=4),
    # reads of a file just written come from the page cache: the small reads cost nothing here (costless_local)
    Case("mpiio-independent-small-rw", "shared file, 4 KiB independent MPI-IO writes and reads",
         ("independent-shared", "small-writes", "small-reads"),
         _ior("-a", "MPIIO", "-t", "4k", "-b", "96m", "-w", "-r"), procs=4, costless_local=("small-reads",)),
    # The calls' own cost made to dominate: 131,072 collective calls of 32 B a rank (64 B a call across the two
    # ranks, 4 MiB a rank in all), each paying two-phase's offset exchange (~20-45 us a call here), against the
    # twin's one call of the same pieces: 3.5-5.8 s of MPI-IO against 0.03-0.05 s, M11 97-98 % of the change in six
    # rounds at load 2-5 (docs/validation.md, "Small collective calls made to cost"). 4 KiB calls over 16-512 MiB a
    # rank were costless here: page-cache and writeback noise outweighed the calls (validation.md, "... small
    # collective calls at scale").
    Case("mpiio-collective-small", "shared file, 131,072 collective MPI-IO writes of 32 B a rank (64 B a call)",
         ("small-collective",),
         ("lab_mpiio", "-o", "{dir}/data", "-c", "-n", "131072", "-b", "32", "-g", "0", "-k", "1")),
    Case("mpiio-collective-small-sync", "shared file, 4 KiB collective MPI-IO writes, a sync after each",
         ("small-collective", "sync-per-write"),
         _ior("-a", "MPIIO", "-c", "-Y", "-t", "4k", "-b", "1m", "-w"), costless_local=("small-collective",)),
    # 128 calls per rank cost 0.4 s here (and stayed under the 1,000 independent calls of M02/M03)
    Case("data-sieving-rmw", "strided independent MPI-IO writes with holes: data sieving reads before it writes",
         ("rmw", "independent-shared"),
         ("lab_mpiio", "-o", "{dir}/data", "-n", "1024", "-b", "4096", "-g", "4096", "-k", "64"), procs=4,
         tolerated=("rewrite", "reread")),
    # 1024 pieces per call (4 MiB per rank): calls of 64 pieces moved 512 KiB across both ranks, which
    # plants "collective calls too small to gain" beside the holes
    # 16 calls cost 0.5 s on the idle machine: 64
    Case("collective-rmw", "strided collective MPI-IO writes with holes: two-phase reads before it writes", ("rmw",),
         ("lab_mpiio", "-o", "{dir}/data", "-c", "-n", "64", "-b", "4096", "-g", "4096", "-k", "1024"),
         tolerated=("rewrite", "reread")),

    # ranks
    # Spreading one rank's I/O over several saves time only where one stream cannot fill the device. Requests of
    # 4 MiB O_DIRECT reach most of this disk's bandwidth from one rank (3 GiB: 2.11 -> 1.74 s idle, -0.55 to
    # +0.39 s at load 2-20; seconds saved only while other jobs crowded the disk, docs/validation.md); a stream
    # of 64 KiB requests is latency-bound (fio: 412 MiB/s for one, 988 for four; lab_posix, 1 GiB: 1.65-3.35 s by
    # rank 0 alone, 0.78-1.14 s spread, load 4-10). 64 KiB writes are small writes too (P06: aggregated into
    # 1 MiB or more they would save more, 3.1 GiB/s from one stream): both causes are planted, and the twin keeps
    # its small writes. 1.5 GiB
    Case("one-rank-io", "rank 0 writes 1.5 GiB with 64 KiB O_DIRECT writes, the others wait in a barrier",
         ("one-rank-io", "small-writes"), _posix("-O", "-w", "24576", "-s", K64, "-d"), procs=4),
    # The imbalances, in 4 MiB O_DIRECT writes, cost nothing here (the same bytes spread evenly: 3.15 -> 3.19 s
    # idle): 64 KiB, as one-rank-io. On the shared file each rank first preallocates its region (-P): into a new
    # file's holes the ranks' O_DIRECT writes ran one at a time (ext4 allocates under the file's lock), and
    # balanced took as long (4.2-8.3 s against 5.2-5.4 imbalanced); preallocated, 1.7-1.9 s against 3.0-3.8 s
    Case("rank-imbalance-shared", "shared file, preallocated: rank 0 writes 8 times what the others do "
         "(64 KiB O_DIRECT)", ("rank-imbalance", "small-writes"),
         _posix("-S", "-P", "-I", "8", "-w", "3072", "-s", K64, "-d"), procs=4),
    # file per process: rank 0's 24576 writes against the others' 3072 cost 0.8-6.3 s over the twin's 8448 a
    # rank (load 5-7)
    Case("rank-imbalance-fpp", "file per process: rank 0 writes 8 times what the others do (64 KiB O_DIRECT)",
         ("rank-imbalance", "small-writes"), _posix("-I", "8", "-w", "3072", "-s", K64, "-d"), procs=4),

    # stdio
    # One cause each, seen from several layers. A flushed line is a small write to the kernel: "small writes"
    # is the same cause as the flushes. With an fsync per line the syncs are the cost (4.2 s of the 4.25 s
    # run here; the flush calls 0.01 s a rank): the flushes and the line size are tolerated, not required.
    # 1000 lines cost 0.21 s on the idle machine (an fsync each): 6000
    Case("stdio-flush-sync", "100-byte text lines through stdio, an fflush and an fsync each",
         ("sync-per-write",), _posix("-t", "-w", "6000", "-s", "100", "-y", "1"),
         tolerated=("stdio-heavy", "small-writes")),
    Case("stdio-flush", "200-byte text lines through stdio, an fflush each", ("stdio-heavy",),
         _posix("-t", "-w", "1600000", "-s", "200"), tolerated=("small-writes",)),

    # data moved again
    Case("reread", "a 256 MiB file read 4 times (4 MiB O_DIRECT)", ("reread",),
         _posix("-w", "64", "-s", M4, "-r", "64", "-R", "4", "-d")),
    # 256 MiB written again 3 times cost 0.56-0.83 s here: 512 MiB
    Case("rewrite", "a 512 MiB file written 4 times (4 MiB O_DIRECT)", ("rewrite",),
         _posix("-w", "128", "-s", M4, "-W", "4", "-d")),

    # HDF5
    # 8192 steps: 0.6-0.7 s of small writes here, on the edge of the bar: 16384
    Case("hdf5-independent-small", "HDF5, 4 KiB independent row pieces per rank", ("independent-shared", "small-writes"),
         ("lab_hdf5", "-o", "{dir}/data.h5", "-n", "65536", "-r", "1", "-w", "4096"), procs=4, needs="lab_hdf5"),

    # non-MPI processes, one log each (AI data loaders)
    # 8192 samples a process: their random order cost 0.35 s at a load of 5-11 (P11 under the bar): 3x
    Case("loader-small-random", "4 processes read 4 KiB samples of their shard in random order (O_DIRECT)",
         ("small-reads", "random-reads"), _loader("-w", "24", "-s", M4, "-r", "24576", "-z", "4096", "-X", "-d"),
         procs=4, mpi=False),
)


# Fixed twins: a planted case's program run again with its cause removed and nothing else changed (the same
# bytes, ranks and file layout), for `job diff` on bad -> fixed pairs (PAIRS below). A few seconds each. They
# are clean (the rank pairs' keep their small writes), and they stay out of the label scores (`TWIN_NAMES`):
# seventeen more controls, each the near copy of a case already scored, would weigh the controls' alarms
# (Drishti's M01 on every POSIX job) seventeen times more; `lab score` shows each twin's verdict beside its pair.
TWINS: tuple[Case, ...] = (
    Case("fixed-small-writes-odirect", "file per process, the same 64 MiB a rank in 4 MiB O_DIRECT writes", (),
         _ior("-a", "POSIX", "-F", "--posix.odirect", "-t", "4m", "-b", "64m", "-w")),
    Case("fixed-small-writes-shared", "shared file, the same 32 MiB a rank in 4 MiB O_DIRECT writes", (),
         _ior("-a", "POSIX", "--posix.odirect", "-t", "4m", "-b", "32m", "-w"), procs=4),
    Case("fixed-small-rw-fpp", "file per process, the same 384 MiB a rank in 4 MiB O_DIRECT writes and reads", (),
         _ior("-a", "POSIX", "-F", "--posix.odirect", "-t", "4m", "-b", "384m", "-w", "-r")),
    Case("fixed-small-reads-odirect", "4 MiB writes, then the same 384 MiB read in 4 MiB O_DIRECT reads", (),
         _posix("-w", "96", "-s", M4, "-r", "96", "-z", M4, "-d")),
    # 6000 x 4 KiB = 6 writes of 4,096,000 bytes (a block multiple), no sync
    Case("fixed-fsync-per-write", "the same 24 MB in 6 writes, no fsync", (), _posix("-w", "6", "-s", "4096000")),
    Case("fixed-fdatasync-per-write", "the same 64 KiB writes, no fdatasync", (), _posix("-w", "5000", "-s", str(64 * 1024))),
    Case("fixed-stdio-flush-sync", "the same 100-byte lines through stdio, flushed, no fsync", (),
         _posix("-t", "-w", "6000", "-s", "100")),
    Case("fixed-many-small-files", "the same 5000 writes of 4 KiB a task into one file", (),
         _posix("-w", "5000", "-s", "4096")),
    Case("fixed-mpiio-independent-small", "shared file, the same 32 MiB a rank in 8 MiB independent MPI-IO writes "
         "(O_DIRECT)", (), ("lab_mpiio", "-o", "{dir}/data", "-C", "-d", "-b", str(8 * MiB), "-n", "4"), procs=4),
    # the same small reads in order: the kernel's readahead makes the device reads large (the calls stay: their
    # page-cache copies cost 0.3 s, under the bar)
    Case("fixed-random-small-reads", "the same 4 MiB writes evicted, then the same 4 KiB buffered reads in order", (),
         _posix("-w", "96", "-s", M4, "-r", "98304", "-z", "4096", "-e")),
    Case("fixed-mpiio-collective-small", "shared file, the same 32 B pieces in one collective MPI-IO write of 4 MiB a "
         "rank", (), ("lab_mpiio", "-o", "{dir}/data", "-c", "-n", "1", "-b", "32", "-g", "0", "-k", "131072")),
    Case("fixed-collective-rmw", "the same collective writes of 4 KiB pieces, with no holes between them", (),
         ("lab_mpiio", "-o", "{dir}/data", "-c", "-n", "64", "-b", "4096", "-g", "0", "-k", "1024")),
    # the ranks' twins keep their 64 KiB writes, planted: not controls, not fixed-
    Case("spread-one-rank-io", "every rank writes a quarter of the same 1.5 GiB (64 KiB O_DIRECT)", ("small-writes",),
         _posix("-w", "6144", "-s", K64, "-d"), procs=4),
    # rank 0's 8 x 3072 and the others' 3 x 3072 requests: 33792, 8448 a rank
    Case("balanced-rank-imbalance-shared", "shared file, preallocated: the same bytes, 8448 x 64 KiB O_DIRECT "
         "writes a rank", ("small-writes",), _posix("-S", "-P", "-w", "8448", "-s", K64, "-d"), procs=4),
    Case("balanced-rank-imbalance-fpp", "file per process: the same bytes, 8448 x 64 KiB O_DIRECT writes a rank",
         ("small-writes",), _posix("-w", "8448", "-s", K64, "-d"), procs=4),
    Case("fixed-reread", "the same 256 MiB file read once (4 MiB O_DIRECT)", (),
         _posix("-w", "64", "-s", M4, "-r", "64", "-d")),
    Case("fixed-rewrite", "the same 512 MiB file written once (4 MiB O_DIRECT)", (), _posix("-w", "128", "-s", M4, "-d")),
)
CASES = CASES + TWINS
TWIN_NAMES = frozenset(c.name for c in TWINS)


@dataclass(frozen=True)
class Pair:
    """A planted case and its fixed twin (the same program with the planted cause removed, nothing else):
    `job diff BAD FIXED` must explain >= 90 % of the I/O-time change."""

    bad: str
    fixed: str
    #: what the two runs share (program, ranks, bytes)
    same: str
    #: what the fixed run does instead of the planted cause
    fix: str


# Only causes that cost time here are paired: a fix that saves nothing (random order of 2 MiB requests on
# flash, misaligned offsets the page cache absorbs) leaves "no material change" for job diff to explain.
# mdtest, HDF5 (a collective twin at 4 ranks waits on the scheduler, not the disk), data-sieving-rmw (its fix,
# collective writes at 4 ranks, is the same trap; without the holes independent writes still sieve) and the
# non-MPI loader (one log a process; job diff compares one log with one) have no twin.
PAIRS: tuple[Pair, ...] = (
    Pair("small-writes-odirect", "fixed-small-writes-odirect", "IOR, 2 ranks, file per process, 64 MiB a rank, O_DIRECT",
         "4 MiB writes instead of 4 KiB"),
    Pair("small-writes-shared", "fixed-small-writes-shared", "IOR, 4 ranks, shared file, 32 MiB a rank, O_DIRECT",
         "4 MiB writes instead of 8 KiB"),
    Pair("small-rw-fpp", "fixed-small-rw-fpp", "IOR, 2 ranks, file per process, 384 MiB written and read a rank",
         "4 MiB requests instead of 16 KiB"),
    # the same program and file: only the read size changes (4 KiB -> 4 MiB); the 4 MiB writes are the same
    Pair("small-reads-odirect", "fixed-small-reads-odirect", "lab_posix, 2 ranks, 384 MiB written then read a rank",
         "4 MiB reads instead of 4 KiB"),
    # the same program, bytes and read size: only the order changes (the kernel's readahead then merges them)
    Pair("random-small-reads", "fixed-random-small-reads", "lab_posix, 2 ranks, 384 MiB written, evicted from the "
         "page cache, then read in 4 KiB buffered reads a rank", "the reads in order (the kernel reads ahead) instead "
         "of a random permutation"),
    Pair("fsync-per-write", "fixed-fsync-per-write", "lab_posix, 2 ranks, 24 MB a rank",
         "6 large writes and no fsync instead of 6000 x 4 KiB each fsynced"),
    Pair("fdatasync-per-write", "fixed-fdatasync-per-write", "lab_posix, 2 ranks, 5000 x 64 KiB writes a rank",
         "no fdatasync after each write"),
    Pair("stdio-flush-sync", "fixed-stdio-flush-sync", "lab_posix, 2 ranks, 6000 flushed 100-byte stdio lines a rank",
         "no fsync after each line"),
    Pair("many-small-files", "fixed-many-small-files", "lab_posix, 2 ranks, 5000 writes of 4 KiB a rank",
         "one file a rank instead of one file per write"),
    Pair("mpiio-independent-small", "fixed-mpiio-independent-small",
         "lab_mpiio, 4 ranks, shared file, 32 MiB a rank in its own block, independent, O_DIRECT",
         "8 MiB calls instead of 8 KiB"),
    Pair("mpiio-collective-small", "fixed-mpiio-collective-small",
         "lab_mpiio, 2 ranks, shared file, 4 MiB a rank in 32 B pieces interleaved by rank, collective",
         "one call of 4 MiB a rank instead of 131,072 of 32 B"),
    Pair("collective-rmw", "fixed-collective-rmw", "lab_mpiio, 2 ranks, 64 collective calls of 1024 x 4 KiB pieces",
         "pieces adjacent (no 4 KiB holes for two-phase to read back)"),
    Pair("one-rank-io", "spread-one-rank-io", "lab_posix, 4 ranks, 1.5 GiB in 64 KiB O_DIRECT writes",
         "every rank writes its quarter instead of rank 0 alone"),
    Pair("rank-imbalance-shared", "balanced-rank-imbalance-shared",
         "lab_posix, 4 ranks, shared file preallocated, 33792 x 64 KiB O_DIRECT",
         "8448 requests a rank instead of 24576 for rank 0 and 3072 for the others"),
    Pair("rank-imbalance-fpp", "balanced-rank-imbalance-fpp",
         "lab_posix, 4 ranks, file per process, 33792 x 64 KiB O_DIRECT",
         "8448 requests a rank instead of 24576 for rank 0 and 3072 for the others"),
    # the fix of data moved again is to move it once: the same file, fewer bytes
    Pair("reread", "fixed-reread", "lab_posix, 2 ranks, a 256 MiB file, 4 MiB O_DIRECT", "read once instead of 4 times"),
    Pair("rewrite", "fixed-rewrite", "lab_posix, 2 ranks, a 512 MiB file, 4 MiB O_DIRECT", "written once instead of 4 times"),
)


def select(names: list[str] | None) -> list[Case]:
    """The cases named (all when None); an unknown name is a ValueError naming it."""
    if not names:
        return list(CASES)
    by_name = {c.name: c for c in CASES}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown case(s): {', '.join(unknown)} (see `ioweather lab list`)")
    return [by_name[n] for n in names]
