"""`parse_capture` keeps what it reads when its code changes (issue 37 item 5: it became a table of line
kinds): every capture of ../shared/testdata/lustrefs-exporter, and a few hand-written ones for the kinds
those lack, parsed whole, cut short at each 17th line and inside a line, read in 13-byte chunks, with a
line printed twice and with a line missing. Each family's Capture, written out field by field, is
hashed; tests/data/lctl_capture_golden.json holds the hashes the parser gave before the rewrite (made
with the if/continue parser of commit a8356a3). A change of what is read is a change of this file:
`python tests/test_lctl_capture_golden.py --write`, and say why in the commit."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from ioweather.sources.telemetry.lctl_params import Job, parse_capture, parse_chunks

HERE = Path(__file__).parent
GOLDEN = HERE / "data" / "lctl_capture_golden.json"
CAPTURES = HERE.parent.parent / "shared" / "testdata" / "lustrefs-exporter"

#: Kinds the real captures lack: job_stats (an OST's, an MGS's), lnetctl's YAML, lnet's one line of
#: numbers, an unhealthy host, osc and LDLM service stats, a `version=` head, a stray line, unknown kinds.
HANDWRITTEN = {
    "kinds": """a line before any parameter
version=2.16.0_ddn56b
health_check=NOT HEALTHY
health_check=
device lustre-OST0012 reported unhealthy
obdfilter.fs-OST0000.job_stats=
job_stats:
- job_id:          'dd.0'
  snapshot_time:   1716295737
  read_bytes:      { samples:           3, unit: bytes, min: 4096, max: 1048576, sum: 1056768, sumsq: 1 }
  write_bytes:     { samples:           0, unit: bytes, min: 0, max: 0, sum: 0 }
  punch:           { samples:           1, unit: reqs }
  sync:            { samples:         nan, unit: reqs }
- job_id:          "cp.1"
  getattr:         { samples: 7, unit: usecs, min: 1, max: 9, sum: 20 }
mgs.MGS.job_stats=
job_stats:
- job_id:          'mount.0'
  open:            { samples: 2, unit: usecs, min: 1, max: 3, sum: 4 }
obdfilter.fs-OST0001.job_stats=job_stats:
lnet.stats=0 12 0 1300 1198 0 2 123456 654321 0 7
stats=0 12 0 x
osc.fs-OST0000-osc-ffff8800.stats=
snapshot_time             1716295740.000000001 secs.nsecs
ost_read                  5 samples [usecs] 10 20 75
ldlm.services.ldlm_cbd.stats=
snapshot_time             1716295741.5 secs.nsecs
ldlm_bl_callback          9 samples [reqs]
mgs.MGS.mgs.stats=
snapshot_time             1716295742 secs.nsecs
req_waittime              4 samples [usecs] 1 2 6
mgs.MGS.mgs.threads_max=64
obdfilter.fs-OST0000.threads_max=512
ldlm.namespaces.fs-OST0000-osc-ffff8800.lock_count=3
ldlm.namespaces.filter-fs-OST0000_UUID.lock_count=x
obdfilter.fs-OST0000.tot_dirty=-1
mdd.fs-MDT0000.changelog_users=
current_index: 12
ID    index (idle seconds)
cl1   10 (327)
mdd.fs-MDT0001.changelog_users=nothing
osd-zfs.fs-OST0001.fstype=zfs
osd-zfs.fs-OST0001.kbytesfree=4106144
memused=lots
nosuch.fs-OST0000.thing=1
nosuch.fs-OST0001.thing=2
""",
    "lnetctl": """memused=5969573401
net:
    - net type: o2ib
      local NI(s):
        - nid: 10.0.0.5@o2ib
          status: up
          statistics:
              send_count: 1000
              recv_count: 900
              drop_count: 0
statistics:
    msgs_alloc: 0
    send_count: 1300
    drop_length: 7
lnet.stats=
statistics:
    errors: 3
""",
}


def _plain(x):
    """A Capture as JSON, field by field (Job's records through their rows, a Counter as sorted pairs)."""
    if isinstance(x, Job):
        return {"component": x.component, "target": x.target, "job": x.job, "unreadable": x.unreadable,
                "rows": _plain(x.rows)}
    if dataclasses.is_dataclass(x):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, Counter):
        return sorted(x.items())
    if isinstance(x, dict):
        return sorted([_plain(k), _plain(v)] for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _hash(caps) -> str:
    return hashlib.sha256(json.dumps([_plain(c) for c in caps], sort_keys=True).encode()).hexdigest()[:16]


def _families(text: str) -> dict[str, str]:
    lines = text.splitlines(keepends=True)
    cuts = range(0, len(lines), 17)
    return {
        "whole": _hash([parse_capture(text)]),
        "cut": _hash([parse_capture("".join(lines[:i])) for i in cuts]
                     + [parse_capture("".join(lines[:i]) + lines[i][: len(lines[i]) // 2]) for i in cuts]),
        "chunks": _hash([parse_chunks(text[i:i + 13] for i in range(0, len(text), 13))]),
        "twice": _hash([parse_capture("".join(lines[:i + 1] + lines[i:])) for i in range(0, len(lines), 11)]),
        "missing": _hash([parse_capture("".join(lines[:i] + lines[i + 1:])) for i in range(0, len(lines), 11)]),
    }


def _corpus() -> dict[str, str]:
    texts = {p.name: p.read_text() for p in sorted(CAPTURES.glob("*.txt"))}
    texts.update(HANDWRITTEN)
    texts["all six, one after the other"] = "".join(texts[p.name] for p in sorted(CAPTURES.glob("*.txt")))
    return texts


def _hashes() -> dict[str, dict[str, str]]:
    return {name: _families(text) for name, text in _corpus().items()}


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="../shared/testdata/lustrefs-exporter not present")
def test_every_capture_reads_as_before():
    want = json.loads(GOLDEN.read_text())
    got = _hashes()
    assert len(got) == 9 and set(got) == set(want)
    changed = {f"{name} {family}" for name in want for family in want[name] if got[name][family] != want[name][family]}
    assert not changed, f"parse_capture reads these differently than before: {sorted(changed)}"


def test_the_hash_sees_a_change():
    """A one-number change of a capture changes its hash (the comparison above is not blind)."""
    text = HANDWRITTEN["kinds"]
    assert _families(text)["whole"] != _families(text.replace("punch:           { samples:           1",
                                                               "punch:           { samples:           2"))["whole"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(_hashes(), indent=1, sort_keys=True) + "\n")
