"""Issue 41, the rest: items 14, 15, 19 and 20.

14. a Darshan log whose region inflates far beyond its size (1.6 MB to 1.5 GiB of zeros) cost `job`
    5 GB and ingest accepted it;
15. a gzip capture, a `--thresholds` file and an `import slurm` input were read whole, uncapped;
19. `why --html` and `/job?id=` failed (jinja2 UndefinedError 'failed_over') on a store with OST
    fullness (`lfs df`) and no `lctl dl -t` listing;
20. `slowdown --check`'s usage errors exited 2 (Nagios: CRITICAL) instead of 3 (UNKNOWN), import time
    options read a bare `90` as 1970, a capture with no parameters asked for --at, a non-UTF-8
    executable name made a Darshan log unreadable, a malformed mount table made libdarshan-util read
    uninitialised memory.
"""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from click.testing import CliRunner
from darshan_support import _swap_region

from ioweather.config import Settings

JOB_LOG = "imbalanced-io.darshan"       # /lus/theta-fs0, jobid 1452113755, started 1618435795
JOBID = "1452113755"


def _invoke(home, *args):
    from ioweather.cli import cli as main

    return CliRunner().invoke(main, ["--home", str(home), *args])


def _one_line(text: str, limit: int = 400) -> None:
    assert text.count("\n") == 1 and len(text) < limit and "Traceback" not in text, text[-800:]


# ----------------------------------------------------------------- 19. fullness without a failover listing

#: `lfs df` a minute and a half before the job: OST0001 93.5 % used, the fullest.
LFS_DF = """BEGIN 1618435700
UUID                   1K-blocks        Used   Available Use% Mounted on
theta-MDT0000_UUID  2255453580   115229304  2106024648   5% /lus/theta-fs0[MDT:0]
theta-OST0000_UUID 90767651352 65371112780 24440205704  73% /lus/theta-fs0[OST:0]
theta-OST0001_UUID 90767651352 84844166288  4966115416  94% /lus/theta-fs0[OST:1]
"""


@pytest.fixture(scope="module")
def fullness_only(tmp_path_factory, testdata):
    """A store holding one ingested log and an `lfs df` of its file system, and no `lctl dl -t`."""
    root = tmp_path_factory.mktemp("fullness")
    home = root / "home"
    r = _invoke(home, "jobs", "ingest", str(testdata / "darshan" / JOB_LOG), "--workers", "1")
    assert r.exit_code == 0, r.output
    (home / "fs-map").write_text("/lus/theta-fs0 theta\n")
    (root / "lfsdf.txt").write_text(LFS_DF)
    r = _invoke(home, "import", "lfsdf", str(root / "lfsdf.txt"), "--fs", "theta", "-q")
    assert r.exit_code == 0, r.output
    return home


@pytest.mark.slow
def test_why_html_with_fullness_and_no_failover_listing(fullness_only, tmp_path):
    out = tmp_path / "why.html"
    r = _invoke(fullness_only, "why", JOBID, "--html", str(out))
    assert r.exit_code == 0, (r.output, r.exception)
    html = out.read_text()
    used = 84844166288 / 90767651352 * 100
    assert f"fullest OST theta-OST0001 {used:.0f}%" in html and "failed over:" not in html
    r = _invoke(fullness_only, "why", JOBID, "--json")
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)["targets"]
    # docs/why.md: every key there, the listing's None
    assert t == {"fullest_ost": "theta-OST0001", "fullest_ost_pct": pytest.approx(used, rel=1e-12),
                 "failed_over": None, "lctl_at": None}


@pytest.mark.slow
def test_job_page_with_fullness_and_no_failover_listing(fullness_only):
    from starlette.testclient import TestClient

    from ioweather.web.app import create_app

    c = TestClient(create_app(Settings.resolve(fullness_only), warm=False), base_url="http://127.0.0.1")
    h = c.get("/api/jobs").json()["list"]["rows"][0]["id"]
    resp = c.get(f"/job?id={h}")
    assert resp.status_code == 200, resp.text[-2000:]
    assert "theta-OST0001" in resp.text and 'id="why-verdict"' in resp.text
    assert c.get(f"/api/job?id={h}").json()["why"]["targets"]["failed_over"] is None


# ----------------------------------------------------------------- 20. usage errors, times, captures

@pytest.mark.parametrize("args", [("--interval", "abc"), ("--warn", "x"), ("--stat", "bogus"), ("--bogus",),
                                  ("extra",)])
def test_slowdown_check_usage_errors_are_unknown(tmp_path, args):
    r = _invoke(tmp_path / "home", "slowdown", "--check", *args)
    # Nagios reads 2 as CRITICAL: the plugin's own misuse is UNKNOWN, one line on stdout
    assert r.exit_code == 3, (r.exit_code, r.output)
    assert r.stdout.startswith("IOWEATHER UNKNOWN - ") and r.stdout.count("\n") == 1, r.stdout
    assert not (tmp_path / "home").exists()
    r = _invoke(tmp_path / "home", "slowdown", "--check", "--json", *args)
    assert r.exit_code == 3 and json.loads(r.stdout)["status"] == "UNKNOWN"
    r = _invoke(tmp_path / "home", "slowdown", *args)  # without --check: a usage error as everywhere
    assert r.exit_code == 2 and r.stderr.startswith("ioweather: error: "), r.output


@pytest.mark.parametrize("option", ["--since", "--until", "--at"])
def test_import_time_options_refuse_a_bare_90(tmp_path, option):
    src = tmp_path / "lfsdf.txt"
    src.write_text(LFS_DF)
    r = _invoke(tmp_path / "home", "import", "lfsdf", str(src), "--fs", "theta", option, "90")
    assert r.exit_code == 2 and "ambiguous time '90'" in r.stderr, r.output
    _one_line(r.stderr)
    # what other commands' --since say too
    assert "ambiguous time '90'" in _invoke(tmp_path / "home", "workload", "--since", "90").stderr
    r = _invoke(tmp_path / "home", "import", "lfsdf", str(src), "--fs", "theta", option, "1618435700")
    assert r.exit_code in (0, 2) and "ambiguous" not in r.stderr


@pytest.mark.parametrize("text", ["", "hello world\nno parameters here\n"])
def test_a_capture_without_parameters_says_so(tmp_path, text):
    src = tmp_path / "capture.txt"
    src.write_text(text)
    r = _invoke(tmp_path / "home", "import", "lctl-params", str(src), "--fs", "lus")
    assert r.exit_code == 2 and "holds no `lctl get_param` parameter" in r.stderr and "--at" not in r.stderr, r.stderr
    _one_line(r.stderr)


# ----------------------------------------------------------------- 20. the Darshan job region; 14. bombs

MAGIC = 6567223


def _regions(data: bytes) -> tuple[int, int, int, int]:
    """(name map at, module maps at, modules, header bytes) of a little-endian log."""
    v41 = data[:8].split(b"\0")[0].decode() >= "3.41"
    name_at, mods_at, nmods = (32, 48, 64) if v41 else (24, 40, 16)
    return name_at, mods_at, nmods, mods_at + 20 * nmods


def _with_job_text(src, dst, text: bytes):
    """`src` (zlib, little-endian) with the executable and mount table after its job struct replaced."""
    data = bytearray(src.read_bytes())
    name_at, mods_at, nmods, header = _regions(data)
    struct_bytes = 1080 if name_at == 32 else 1064
    name_off = struct.unpack_from("<Q", data, name_at)[0]
    raw = zlib.decompress(bytes(data[header:name_off]))
    job = zlib.compress(raw[:struct_bytes] + text)
    delta = len(job) - (name_off - header)
    for at in [name_at] + [mods_at + 16 * i for i in range(nmods)]:
        off, ln = struct.unpack_from("<QQ", data, at)
        if ln or at == name_at:
            struct.pack_into("<Q", data, at, off + delta)
    dst.write_bytes(bytes(data[:header]) + job + bytes(data[name_off:]))
    return dst


def _with_module_region(src, dst, index: int, region: bytes):
    data = bytearray(src.read_bytes())
    _name_at, mods_at, nmods, _ = _regions(data)
    dst.write_bytes(bytes(_swap_region(data, mods_at, nmods, index, region)))
    return dst


TABLE = b"\nlustre\t/lus/theta-fs0\noverlay\t/"


@pytest.mark.slow
@pytest.mark.parametrize("label, text, exe, mounts", [
    ("exe not UTF-8", b"/bin/sim\xff\xfe -n 4" + TABLE, "/bin/sim\ufffd\ufffd -n 4",
     [("/lus/theta-fs0", "lustre"), ("/", "overlay")]),
    # a line of one field: libdarshan-util left the entries from it on uninitialised
    ("one-field line", b"/bin/sim" + TABLE + b"\nlonely", "/bin/sim", [("/lus/theta-fs0", "lustre"), ("/", "overlay")]),
    # no NUL before the 4,096-byte job buffer ends: libdarshan-util read past its copy
    ("no end", b"/bin/sim" + TABLE + b"\n" + b"x" * (4096 - 1064 - 9 - len(TABLE)), "/bin/sim",
     [("/lus/theta-fs0", "lustre"), ("/", "overlay")]),
])
def test_a_damaged_job_text_is_read_the_same_each_time(testdata, tmp_path, label, text, exe, mounts):
    from ioweather.isolation import call_isolated
    from ioweather.sources.darshan_log import read_log

    log = _with_job_text(testdata / "darshan" / JOB_LOG, tmp_path / "j.darshan", text)
    seen = {call_isolated(_exe_and_mounts, str(log)) for _ in range(3)}
    assert seen == {(exe, tuple(mounts))}, (label, seen)
    said = read_log(log).warnings
    assert label != "exe not UTF-8" or any("executable's name is not valid UTF-8" in w for w in said), said
    assert label != "one-field line" or any("malformed mount table" in w for w in said), said
    home = tmp_path / "home"
    r = _invoke(home, "jobs", "ingest", str(log), "--workers", "1", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["ingested"] == 1, (label, r.output)


def _exe_and_mounts(path):
    from ioweather.sources.darshan_log import read_log

    log = read_log(path)
    return log.exe, tuple(log.mounts)


@pytest.mark.slow
def test_a_region_that_inflates_a_thousandfold_is_refused_unread(testdata, tmp_path):
    from ioweather.sources.darshan_log import INFLATE_FLOOR, DarshanLogError, read_log

    zeros = zlib.compress(b"\0" * (4 * INFLATE_FLOOR), 9)   # 64 MiB of zeros in 64 KB: 1,000x
    bomb = _with_module_region(testdata / "darshan" / JOB_LOG, tmp_path / "bomb.darshan", 1, zeros)
    with pytest.raises(DarshanLogError, match="POSIX region of .* inflates beyond 16.0 MiB"):
        read_log(bomb)
    home = tmp_path / "home"
    r = _invoke(home, "job", str(bomb))
    assert r.exit_code == 1 and "inflates beyond" in r.stderr, r.output
    _one_line(r.stderr)
    r = _invoke(home, "jobs", "ingest", str(bomb), str(testdata / "darshan" / JOB_LOG), "--workers", "1", "--json")
    doc = json.loads(r.stdout)
    assert doc["ingested"] == 1 and doc["failed"] == 1, doc


@pytest.mark.slow
def test_a_bomb_in_a_region_not_read_is_left_uninflated(testdata, tmp_path):
    """Issue 40: only the regions libdarshan-util will read are counted. The DXT region of a log is one
    `job` reads (refused) and `jobs ingest` does not (the rest of the log read, the same as unbombed)."""
    from ioweather.sources.darshan_log import INFLATE_FLOOR, DarshanLogError, read_log

    src = testdata / "darshan" / "hdf5_diagonal_write_1_byte_dxt.darshan"
    zeros = zlib.compress(b"\0" * (4 * INFLATE_FLOOR), 9)
    bomb = _with_module_region(src, tmp_path / "bomb.darshan", 9, zeros)  # DXT_POSIX in this 3.21 log
    with pytest.raises(DarshanLogError, match="module 9 region of .* inflates beyond 16.0 MiB"):
        read_log(bomb)
    got, want = read_log(bomb, dxt=False, heatmaps=False), read_log(src, dxt=False, heatmaps=False)
    assert sorted(got.records) == sorted(want.records) and "POSIX" in got.records
    for mod, rec in want.records.items():
        assert (got.records[mod].counter_values == rec.counter_values).all()
    r = _invoke(tmp_path / "home", "jobs", "ingest", str(bomb), "--workers", "1", "--json")
    assert json.loads(r.stdout)["ingested"] == 1, r.output


@pytest.mark.slow
def test_a_lustre_region_that_inflates_a_thousandfold_is_refused_as_read(testdata, tmp_path):
    """Issue 40: the Lustre region is counted as its records are read (no inflating it beforehand): a bomb
    there is refused in one line, by `job` and by `jobs ingest` alike, the same region unbombed read."""
    from ioweather.sources.darshan_log import INFLATE_FLOOR, DarshanLogError, read_log

    src = testdata / "darshan" / JOB_LOG
    zeros = zlib.compress(b"\0" * (4 * INFLATE_FLOOR), 9)
    bomb = _with_module_region(src, tmp_path / "bomb.darshan", 7, zeros)  # LUSTRE in this 3.21 log
    with pytest.raises(DarshanLogError, match="LUSTRE region of .* inflates beyond 16.0 MiB"):
        read_log(bomb, dxt=False, heatmaps=False)
    assert read_log(bomb, lustre=False).records.keys() == read_log(src).records.keys()
    assert len(read_log(src).lustre) > 0
    r = _invoke(tmp_path / "home", "job", str(bomb))
    assert r.exit_code == 1 and "LUSTRE region" in r.stderr and "inflates beyond" in r.stderr, r.output
    _one_line(r.stderr)
    r = _invoke(tmp_path / "home", "jobs", "ingest", str(bomb), str(src), "--workers", "1", "--json")
    doc = json.loads(r.stdout)
    assert doc["ingested"] == 1 and doc["failed"] == 1, doc


def test_a_job_region_longer_than_its_buffer_is_refused_in_one_line(testdata, tmp_path):
    """libdarshan-util read the rest as the name records and aborted with a double free."""
    from ioweather.sources.darshan_log import DarshanLogError, read_log

    log = _with_job_text(testdata / "darshan" / JOB_LOG, tmp_path / "j.darshan", b"/bin/sim" + TABLE + b"\n" + b"x" * 4000)
    for _ in range(2):
        with pytest.raises(DarshanLogError, match="job region inflates beyond the 4,096 bytes"):
            read_log(log)
    r = _invoke(tmp_path / "home", "job", str(log))
    assert r.exit_code == 1 and "job region inflates beyond" in r.stderr, r.output
    _one_line(r.stderr)


# ----------------------------------------------------------------- 15. inputs read whole, with a cap

@pytest.mark.slow
def test_a_gzip_capture_that_inflates_past_the_cap_is_refused(tmp_path):
    import gzip

    from ioweather.services.telemetry.exporter_lctl import CAPTURE_MAX_BYTES

    bomb = tmp_path / "capture.gz"
    bomb.write_bytes(gzip.compress(b"obdfilter.lus-OST0000.stats=\n" + b"x" * (CAPTURE_MAX_BYTES + (1 << 20)), 6))
    assert bomb.stat().st_size < CAPTURE_MAX_BYTES // 100
    r = _invoke(tmp_path / "home", "export", "--capture", str(bomb), "--once")
    assert r.exit_code == 2 and "inflates beyond 64 MiB" in r.stderr, r.output[-500:]
    _one_line(r.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("args", [("import", "slurm", "{big}"), ("job", "{log}", "--thresholds", "{big}"),
                                  ("export", "--capture", "{big}", "--once")])
def test_a_huge_input_is_refused_before_it_is_read(testdata, tmp_path, args):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(2 << 30)   # sparse: 2 GiB of nothing on disk
    argv = [a.format(big=big, log=testdata / "darshan" / JOB_LOG) for a in args]
    r = _invoke(tmp_path / "home", *argv)
    assert r.exit_code == 2 and "larger than" in r.stderr and "MiB, the most ioweather reads" in r.stderr, r.output[-500:]
    _one_line(r.stderr)
