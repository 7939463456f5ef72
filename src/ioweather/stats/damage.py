"""Records whose counters contradict each other: a damaged log (issue 39), left out of the findings.

The reader bounds each counter alone (sources/darshan_log.py: garbage sizes); these are the relations
Darshan's POSIX module keeps between counters of one record, which no real run breaks (every public log
and every lab log keeps them) and a damaged record does (an IO500 md-workbench log with 41 M opens and
"11,723 % sequential" reads):
- sequential requests are some of the requests: SEQ_READS <= READS, SEQ_WRITES <= WRITES;
- consecutive ones are some of the sequential: CONSEC_READS <= SEQ_READS (and writes);
- every request is in the size histogram once: sum(SIZE_READ_*) == READS (and writes);
- an open takes time: OPENS <= (F_META_TIME + 1 s) × OPENS_PER_S.
A finding computed from such a record would rest on impossible numbers, so the record is dropped
before the findings and the verdict says so.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ioweather.stats.job import cols, zero_missing, zero_missing_block

#: No file system opens a file in under 100 ns; the 1 s of slack covers timer rounding of tiny records.
OPENS_PER_S = 10_000_000


def impossible_posix(rec) -> tuple[np.ndarray, dict[str, int]]:
    """(mask of the POSIX records that break a relation, how many break each), from a ModuleRecords."""
    c = cols(rec)
    bad = np.zeros(c.n, bool)
    why: dict[str, int] = {}

    def flag(name: str, mask: np.ndarray) -> None:
        nonlocal bad
        if mask.any():
            why[name] = int(mask.sum())
            bad |= mask

    for k in ("READ", "WRITE"):
        n, seq, con = (zero_missing(c, f"POSIX_{p}{k}S") for p in ("", "SEQ_", "CONSEC_"))
        flag(f"sequential {k.lower()}s above the {k.lower()}s", seq > n)
        flag(f"consecutive {k.lower()}s above the sequential ones", con > seq)
        hist = [name for name in c if name.startswith(f"POSIX_SIZE_{k}_")]
        if hist:
            # the bins added one after another, as sum() of the columns did
            flag(f"{k.lower()}s not matching their size histogram", zero_missing_block(c, hist).sum(axis=0) != n)
    opens = zero_missing(c, "POSIX_OPENS")
    flag("more opens than their time allows", opens > (zero_missing(c, "POSIX_F_META_TIME") + 1.0) * OPENS_PER_S)
    return bad, why


def _worst_example(rec, bad: np.ndarray) -> str:
    """The most striking impossible number among the dropped records, for the verdict."""
    c = cols(rec)
    out = []
    for k in ("READ", "WRITE"):
        n, seq = zero_missing(c, f"POSIX_{k}S")[bad], zero_missing(c, f"POSIX_SEQ_{k}S")[bad]
        over = np.divide(seq, n, out=np.zeros_like(seq), where=n > 0)
        if len(over) and over.max() > 1:
            out.append(f"{100 * over.max():,.0f} % sequential {k.lower()}s")
    opens = zero_missing(c, "POSIX_OPENS")[bad]
    if len(opens) and opens.max() >= 1e6:
        out.append(f"{opens.max() / 1e6:,.0f} M opens in one record")
    return ", ".join(out)


def drop_impossible(log) -> tuple[object, dict | None]:
    """(the log without the POSIX records that break a relation, what was dropped or None)."""
    rec = log.records.get("POSIX")
    if rec is None or not len(rec):
        return log, None
    bad, why = impossible_posix(rec)
    if not bad.any():
        return log, None
    keep = ~bad
    per_record = rec.file_rec_ids is not None and len(rec.file_rec_ids) == len(rec)
    clean = replace(rec, ids=rec.ids[keep], ranks=rec.ranks[keep], counter_values=rec.counter_values[keep],
                    fcounter_values=rec.fcounter_values[keep], names=rec.names[keep],
                    file_rec_ids=rec.file_rec_ids[keep] if per_record else rec.file_rec_ids, _frames={}, _arrays=None)
    damage = {"module": "POSIX", "records": int(bad.sum()), "of": int(len(rec)), "relations": why,
              "example": _worst_example(rec, bad)}
    return replace(log, records={**log.records, "POSIX": clean}), damage
