"""The per-file rows of a batch cross from the pool's workers as `FilePart`s and become one Arrow table in the
parent (issue 40): that table is the logs' own tables (`extract`, one per log, as the Dask path and the stores
before this built them) concatenated, schema and values; and a table holding several logs' rows loses only
the rows of the logs a concurrent ingest already stored (`write_batch`). Real public logs, no planted answer."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from darshan_support import all_real_logs, need_darshan_logs  # noqa: F401 (fixture: skips without ../shared)

from ioweather.config import Settings
from ioweather.services.jobs import ingest
from ioweather.sources.darshan_log import read_log
from ioweather.stats.job import FILE_TABLE_COLUMNS, file_columns
from ioweather.store import jobs as jstore
from ioweather.store import open_store


@pytest.fixture(scope="module")
def results():
    """(path, pool result) of every public log that reads: a job row and a FilePart."""
    got = [(p, ingest._extract_in_pool(str(p))) for p in all_real_logs()]
    return [(p, r) for p, r in got if r[0] == "ok"]


def _table_before_the_parts(log_hash: str, fc: dict) -> pa.Table:
    """A log's per-file table as `extract` built it in the worker before `FilePart` (the code at f330600)."""
    n, types = len(fc["id"]), ingest._part_types()
    return pa.table({"log_hash": pa.array([log_hash] * n, pa.string()),
                     "module": pa.array(fc["module"].tolist(), pa.string()),
                     "record_id": pa.array(fc["id"], pa.uint64()),
                     "name": pa.array(fc["name"].tolist(), pa.string()),
                     **{k: pa.array(fc[k].tolist() if fc[k].dtype == object else fc[k], types.get(k))
                        for k in FILE_TABLE_COLUMNS if k not in ("module", "id", "name")}})


def test_batch_table_is_the_logs_tables_concatenated(results):
    # every public log: with and without Lustre layouts, mounts, empty logs (0 rows), several modules
    assert len(results) > 20
    parts = [r[2] for _, r in results]
    assert any(p.rows == 0 for p in parts) and any(p.rows > 1000 for p in parts)
    # each log's own table, as `extract` gave it before the parts (each worker made its log's table, f330600), from
    # the log read again: the reference is not `file_table`
    own = [_table_before_the_parts(r[1]["log_hash"], file_columns(read_log(str(path), dxt=False, heatmaps=False)))
           for path, r in results]
    for mine, old in zip((ingest.file_table([p]) for p in parts), own):
        assert mine.schema == old.schema and repr(mine.to_pylist()) == repr(old.to_pylist())
    assert own[-1].equals(ingest.extract(str(results[-1][0]))[2])
    whole = pa.concat_tables([t for t in own if t.num_rows], promote_options="default")
    (batch,) = ingest._tables(parts)
    assert batch.schema == whole.schema
    # repr: NaN compared as text, floats exactly
    assert repr(batch.to_pylist()) == repr(whole.to_pylist())
    # a batch collected in runs of PARTS_PER_TABLE parts holds the same rows in the same order
    step = ingest._tables(parts[:7]) + [ingest.file_table([p for p in parts[7:] if p.rows])]
    assert repr(pa.concat_tables(step, promote_options="default").to_pylist()) == repr(whole.to_pylist())


def test_a_shared_table_loses_only_the_rows_of_logs_already_stored(home, results):
    results = [(p, r) for p, r in results if r[2].rows][:3]
    assert len(results) == 3
    settings = Settings.resolve(home, None)
    store = open_store(settings)
    first = results[0][1]
    # another ingest stored the first log meanwhile
    jstore.write_batch(store, settings.parquet_dir, [first[1]], [ingest.file_table([first[2]])], [])
    rows = [r[1] for _, r in results]
    present, _ = jstore.write_batch(store, settings.parquet_dir, rows, ingest._tables([r[2] for _, r in results]), [])
    assert present == {first[1]["log_hash"]}
    files = jstore.files_dir(settings.parquet_dir)
    stored = pa.concat_tables([pq.read_table(p) for p in sorted(files.glob("files-*.parquet"))],
                              promote_options="default")
    hashes = stored.column("log_hash").to_pylist()
    for _, r in results:
        assert hashes.count(r[1]["log_hash"]) == r[2].rows  # the first log's rows once, not twice


def test_a_log_whose_rows_arrow_refuses_fails_alone_and_the_batch_is_stored(home, results):
    """Made in the parent, a log's per-file rows that Arrow refuses (here a record id no uint64 holds, as a damaged
    reader's value would be) must not stop the batch: that log is a failed row with the reason, the others are
    stored, each log's rows once (review: before, the worker's table caught it as any reader error)."""
    import dataclasses

    import numpy as np
    import sqlalchemy as sa

    good = [(p, r) for p, r in results if r[2].rows][:3]
    (bad_path, bad), rest = good[0], good[1:]
    broken = dataclasses.replace(bad[2], columns={**bad[2].columns, "id": np.full(bad[2].rows, -1, np.int64)})
    settings = Settings.resolve(home, None)
    store = open_store(settings)
    ing = ingest.Ingest(store, settings.parquet_dir)
    for res in [("ok", dict(bad[1]), broken)] + [("ok", dict(r[1]), r[2]) for _, r in rest]:
        ing.add(res)
    ing.flush()
    assert (ing.counts["ingested"], ing.counts["failed"]) == (2, 1)
    with store.engine.connect() as c:
        stored = {h for (h,) in c.execute(sa.text("SELECT log_hash FROM darshan_jobs"))}
        failed = c.execute(sa.text("SELECT log_hash, reason FROM darshan_failed_logs")).all()
    assert stored == {r[1]["log_hash"] for _, r in rest}
    assert [h for h, _ in failed] == [bad[1]["log_hash"]]
    assert failed[0][1].startswith("unexpected error while storing its files' rows: ")
    files = jstore.files_dir(settings.parquet_dir)
    hashes = pa.concat_tables([pq.read_table(p) for p in files.glob("files-*.parquet")],
                              promote_options="default").column("log_hash").to_pylist()
    assert {h: hashes.count(h) for h in set(hashes)} == {r[1]["log_hash"]: r[2].rows for _, r in rest}
