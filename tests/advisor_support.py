"""Built Darshan logs for the advisor's tests: counter sets written by hand, in the reader's own types
(`DarshanLog`, `ModuleRecords`), so each finding and cost rule is tested on exactly the counters it reads."""

from __future__ import annotations

import numpy as np

from ioweather.sources.darshan_log import DarshanLog, ModuleRecords

GiB = 1 << 30
MiB = 1 << 20


def records(module: str, rows: list[dict], file_rec_ids: list[int] | None = None) -> ModuleRecords:
    """One module's records from dicts of id, rank, name and counters; `_F_` names are float counters,
    and every counter missing from a row is 0."""
    cnames = sorted({k for r in rows for k in r if k not in ("id", "rank", "name") and "_F_" not in k})
    fnames = sorted({k for r in rows for k in r if "_F_" in k})
    return ModuleRecords(
        module=module, version=1, partial=False,
        ids=np.array([r["id"] for r in rows], np.uint64), ranks=np.array([r["rank"] for r in rows], np.int64),
        counter_names=cnames, fcounter_names=fnames,
        counter_values=np.array([[int(r.get(k, 0)) for k in cnames] for r in rows], np.int64).reshape(len(rows), len(cnames)),
        fcounter_values=np.array([[float(r.get(k, 0.0)) for k in fnames] for r in rows],
                                 np.float64).reshape(len(rows), len(fnames)),
        names=np.array([r.get("name") for r in rows], dtype=object),
        file_rec_ids=None if file_rec_ids is None else np.array(file_rec_ids, np.uint64))


def make_log(mods: dict[str, ModuleRecords], *, nprocs: int, runtime_s: float = 1000.0,
             mounts: list[tuple[str, str]] | None = None, partial: tuple[str, ...] = ()) -> DarshanLog:
    return DarshanLog(path="built.darshan", log_version="3.41", jobid=1, uid=1000, nprocs=nprocs,
                      start_time_s=1.7e9, end_time_s=1.7e9 + runtime_s, runtime_s=runtime_s, exe="/home/u/app",
                      metadata={}, mounts=mounts or [("/lus/scratch", "lustre")],
                      modules={m: {"version": 1, "partial": m in partial, "bytes": 0} for m in mods},
                      records=mods)


def posix(id_, rank, *, name, bytes_read=0, bytes_written=0, reads=0, writes=0, read_time=0.0, write_time=0.0,
          meta_time=0.0, slowest=None, **extra) -> dict:
    """A POSIX record; requests of the mean size in the matching size bin unless given."""
    r = {"id": id_, "rank": rank, "name": name, "POSIX_BYTES_READ": bytes_read, "POSIX_BYTES_WRITTEN": bytes_written,
         "POSIX_READS": reads, "POSIX_WRITES": writes, "POSIX_SEQ_READS": reads, "POSIX_SEQ_WRITES": writes,
         "POSIX_OPENS": 1, "POSIX_F_READ_TIME": read_time, "POSIX_F_WRITE_TIME": write_time,
         "POSIX_F_META_TIME": meta_time, "POSIX_MAX_BYTE_READ": max(bytes_read - 1, 0),
         "POSIX_MAX_BYTE_WRITTEN": max(bytes_written - 1, 0), "POSIX_FILE_ALIGNMENT": 4096}
    for kind, n, b in (("READ", reads, bytes_read), ("WRITE", writes, bytes_written)):
        if n:
            r[f"POSIX_SIZE_{kind}_{_bin(b / n)}"] = n
    # real logs carry the slowest-rank timer on every record (0 on a rank's own)
    r["POSIX_F_SLOWEST_RANK_TIME"] = slowest or 0.0
    r.update(extra)
    return r


def mpiio(id_, rank, *, name, bytes_read=0, bytes_written=0, coll_reads=0, coll_writes=0, indep_reads=0,
          indep_writes=0, read_time=0.0, write_time=0.0, meta_time=0.0, slowest=None) -> dict:
    r = {"id": id_, "rank": rank, "name": name, "MPIIO_BYTES_READ": bytes_read, "MPIIO_BYTES_WRITTEN": bytes_written,
         "MPIIO_COLL_READS": coll_reads, "MPIIO_COLL_WRITES": coll_writes, "MPIIO_INDEP_READS": indep_reads,
         "MPIIO_INDEP_WRITES": indep_writes, "MPIIO_NB_READS": 0, "MPIIO_NB_WRITES": 0, "MPIIO_COLL_OPENS": 1,
         "MPIIO_F_READ_TIME": read_time, "MPIIO_F_WRITE_TIME": write_time, "MPIIO_F_META_TIME": meta_time}
    r["MPIIO_F_SLOWEST_RANK_TIME"] = slowest or 0.0
    return r


def _bin(size: float) -> str:
    for name, upper in (("0_100", 100), ("100_1K", 1024), ("1K_10K", 10240), ("10K_100K", 102400),
                        ("100K_1M", MiB), ("1M_4M", 4 * MiB), ("4M_10M", 10 * MiB), ("10M_100M", 100 * MiB),
                        ("100M_1G", GiB)):
        if size < upper:
            return name
    return "1G_PLUS"
