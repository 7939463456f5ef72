"""Issue 32 items 5, 7 and 11: outputs through planted links, inputs that block, deep nesting, as real
processes on real files.

Before: `umami --html OUT` wrote OUT.tmp with a plain open() (a link planted there was written
through: 4.8 MB into its target), `factors fit --out`, `factors classify --out` and `--plot` wrote
through a link at the destination, a FIFO given as `factors classify --model`, `job --thresholds`
or a factors input blocked forever, /proc/kmsg (a "regular" file whose read blocks) hung every
importer, and deeply nested JSON was a RecursionError traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TESTDATA, run_cli
from factors_synthetic import TABLE3, iomodel_frame

from ioweather.config import Settings
from ioweather.errors import UserError

VICTIM_TEXT = "precious, not to be overwritten\n"
MODELS = ("discard-R-off0", "cached-R-off0", "discard-W-rnd", "cached-W-off0")
TOY = TESTDATA / "r-density" / "toy_obs.csv"


def _one_line(p, *fragments) -> str:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len([ln for ln in lines if ln.startswith("ioweather:")]) == 1 and "Traceback" not in p.stderr, p.stderr
    for f in fragments:
        assert f in p.stderr, (f, p.stderr)
    return lines[-1]


@pytest.fixture
def victim(tmp_path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text(VICTIM_TEXT)
    return v


@pytest.fixture(scope="module")
def factors_inputs(tmp_path_factory) -> tuple[Path, Path]:
    """(an io-model-shaped Parquet, the model file `factors fit` made of it)."""
    d = tmp_path_factory.mktemp("factors")
    train = d / "train.parquet"
    iomodel_frame({k: TABLE3[k] for k in MODELS}, sizes=[1, 1024, 65536], repeats=200).to_parquet(train, index=False)
    model = d / "model.json"
    run_cli("factors", "fit", str(train), "--out", str(model), check=True)
    return train, model


# -- item 5: every command that writes a file -------------------------------------------------------

def _factors_writers(train: Path, model: Path, out: Path) -> dict[str, list[str]]:
    return {
        "fit --out": ["factors", "fit", str(train), "--out", str(out)],
        "classify --out": ["factors", "classify", str(train), "--model", str(model), "--out", str(out)],
        "classify --plot": ["factors", "classify", str(train), "--model", str(model), "--plot", str(out)],
        "density --plot": ["factors", "density", str(TOY), "--plot", str(out)],
    }


@pytest.mark.parametrize("which", ["fit --out", "classify --out", "classify --plot", "density --plot"])
def test_factors_outputs_refuse_a_planted_link(tmp_path, victim, factors_inputs, which):
    if not TOY.exists():
        pytest.skip(f"{TOY} absent")
    out = tmp_path / "out.file"
    os.symlink(victim, out)
    p = run_cli(*_factors_writers(*factors_inputs, out)[which], home=tmp_path / "h")
    _one_line(p, "symlink")
    assert victim.read_text() == VICTIM_TEXT and out.is_symlink()
    assert {x.name for x in tmp_path.iterdir()} - {"h"} == {"out.file", "victim.txt"}  # no temporary left behind


@pytest.mark.parametrize("which", ["fit --out", "classify --out", "classify --plot", "density --plot"])
def test_factors_outputs_replace_a_file_whole(tmp_path, factors_inputs, which):
    if not TOY.exists():
        pytest.skip(f"{TOY} absent")
    suffix = ".png" if "plot" in which else (".json" if "fit" in which else ".csv")
    out = tmp_path / f"out{suffix}"
    out.write_text("old")
    p = run_cli(*_factors_writers(*factors_inputs, out)[which], home=tmp_path / "h")
    assert p.returncode == 0, p.stderr
    data = out.read_bytes()
    assert data != b"old" and len(data) > 100
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    assert [x.name for x in tmp_path.iterdir() if x.name.endswith(".tmp")] == []


@pytest.mark.parametrize("which", ["--out", "--csv", "sidecar"])
def test_iomodel_outputs_refuse_a_planted_link(tmp_path, victim, which):
    out, csv = tmp_path / "o.parquet", tmp_path / "o.csv"
    link = {"--out": out, "--csv": csv, "sidecar": tmp_path / "o.runs.json"}[which]
    os.symlink(victim, link)
    p = run_cli("iomodel", "run", "--sizes", "1", "--repeats", "10", "--mem-size", "1MiB", "--out", str(out),
                "--csv", str(csv), home=tmp_path / "h")
    _one_line(p, "symlink")
    assert victim.read_text() == VICTIM_TEXT
    assert {x.name for x in tmp_path.iterdir()} - {"h"} == {link.name, "victim.txt"}  # nothing half-written


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory) -> tuple[Path, str]:
    """(a home, a run id) from the real fio's JSON imported with `bench import`."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    d = tmp_path_factory.mktemp("umami")
    out = d / "fio.json"
    subprocess.run(["fio", "--name=job", f"--directory={d}", "--rw=write", "--bs=64k", "--size=256k",
                    "--output-format=json", f"--output={out}"], check=True, timeout=120, capture_output=True)
    home = d / "home"
    run_cli("bench", "import", str(out), "--fs", "scratch", home=home, check=True)
    return home, _run_id(home)


def _run_id(home: Path) -> str:
    import sqlite3

    with sqlite3.connect(home / "ioweather.sqlite") as c:
        [(rid,)] = c.execute("select run_id from bench_runs").fetchall()
    return rid


def test_umami_html_never_writes_through_a_link(tmp_path, victim, bench_run):
    home, rid = bench_run
    out = tmp_path / "u.html"
    os.symlink(victim, tmp_path / "u.html.tmp")  # the fixed temporary name the old writer opened
    p = run_cli("umami", f"bench:{rid}", "--html", str(out), home=home)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert "<html" in out.read_text().lower() and not out.is_symlink()
    out.unlink()
    os.symlink(victim, out)
    _one_line(run_cli("umami", f"bench:{rid}", "--html", str(out), home=home), "symlink")
    assert victim.read_text() == VICTIM_TEXT


def test_write_atomic_never_follows_or_reuses_a_planted_name(tmp_path, victim, monkeypatch):
    """The temporary's name is random and opened O_EXCL|O_NOFOLLOW: even a link planted under the name
    it is about to use is refused (EEXIST), and another name is tried."""
    from ioweather import files

    out = tmp_path / "r.html"
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(names))
    os.symlink(victim, tmp_path / ".r.html.aaaa.tmp")
    files.write_atomic(out, "new")
    assert out.read_text() == "new" and victim.read_text() == VICTIM_TEXT
    assert sorted(x.name for x in tmp_path.iterdir()) == [".r.html.aaaa.tmp", "r.html", "victim.txt"]


# -- item 7: inputs that block --------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path) -> Path:
    f = tmp_path / "in.fifo"
    os.mkfifo(f)
    return f


@pytest.mark.timeout(120)  # before the fix each of these blocked in open() or read() forever
def test_factors_model_and_input_fifos_are_refused(tmp_path, fifo, factors_inputs):
    train, model = factors_inputs
    _one_line(run_cli("factors", "classify", str(train), "--model", str(fifo), home=tmp_path / "h", timeout=60),
              "FIFO")
    _one_line(run_cli("factors", "density", str(fifo), home=tmp_path / "h", timeout=60), "FIFO")
    _one_line(run_cli("factors", "classify", str(train), "--model", "/proc/kmsg", home=tmp_path / "h", timeout=60),
              "kernel interface on /proc")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("args", [["import", "job-features", "--preset", "tokio-abc"],
                                  ["bench", "import", "--format", "tokio-abc"], ["bench", "import"]])
def test_other_direct_inputs_refuse_a_fifo(tmp_path, fifo, args):
    p = run_cli(*args, str(fifo), home=tmp_path / "h", timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert [ln for ln in p.stderr.splitlines() if ln.startswith("ioweather:")] == [
        f"ioweather: error: cannot read {fifo}: it is a FIFO (named pipe), not a regular file"], p.stderr


@pytest.mark.timeout(120)
def test_job_thresholds_fifo_is_refused(tmp_path, fifo):
    log = TESTDATA / "darshan" / "mpi-io-test-x86_64-3.0.0.darshan"
    if not log.exists():
        pytest.skip(f"{log} absent")
    _one_line(run_cli("job", str(log), "--thresholds", str(fifo), home=tmp_path / "h", timeout=60), "FIFO")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _one_line(run_cli("job", str(log), "--thresholds", str(deep), home=tmp_path / "h", timeout=60),
              "nested too deeply")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["csv", "iostat", "tts", "lmt", "mmperfmon", "lfsdf", "lctl"])
def test_every_importer_refuses_kernel_files(tmp_path, kind):
    """/proc/kmsg is a "regular" file whose read blocks until the kernel logs something; /sys files
    are interfaces too. Both are refused by the descriptor's file system, not by the name."""
    from ioweather.services.telemetry.imports import import_one

    for source in ("/proc/kmsg", "/sys/kernel/notes"):
        with pytest.raises(UserError, match="kernel interface"):
            import_one(Settings(home=tmp_path / "h"), kind, source, "t")
    link = tmp_path / "innocent.csv"
    os.symlink("/proc/self/status", link)  # a name elsewhere does not help
    with pytest.raises(UserError, match="kernel interface on /proc"):
        import_one(Settings(home=tmp_path / "h"), kind, str(link), "t")


def test_regular_files_beside_dev_are_still_read(tmp_path):
    """/dev/shm is its own tmpfs: only devtmpfs itself (the device nodes' file system) is refused."""
    from ioweather.files import open_regular, pseudo_file_system

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    p = Path("/dev/shm") / f"ioweather-test-{os.getpid()}"
    p.write_text("x")
    try:
        with open_regular(p) as f:
            assert f.read() == b"x" and pseudo_file_system(f.fileno()) is None
    finally:
        p.unlink()


# -- item 11: deep nesting ------------------------------------------------------------------------

def test_fsstats_diff_of_deeply_nested_json_is_one_line(tmp_path):
    deep = tmp_path / "a.json"
    deep.write_text('{"root": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _one_line(run_cli("fsstats", "diff", str(deep), str(deep), home=tmp_path / "h"), "nested too deeply")


def test_factors_density_adjust_beyond_any_kernel_is_one_line(tmp_path):
    if not TOY.exists():
        pytest.skip(f"{TOY} absent")
    for adjust in ("1e308", "inf", "nan", "1e6"):
        _one_line(run_cli("factors", "density", str(TOY), "--adjust", adjust, home=tmp_path / "h"), "--adjust must be")
    p = run_cli("factors", "density", str(TOY), "--adjust", "100", "--json", home=tmp_path / "h")
    assert p.returncode == 0 and json.loads(p.stdout)["adjust"] == 100, p.stderr


# -- item 12: names that reach the terminal, names too long to store --------------------------------

ESC_NAME = "evil\x1b[31mred\x1b]0;title\x07\nfake row"


def test_directory_names_reach_tables_escaped(tmp_path):
    root = tmp_path / "tree"
    (root / ESC_NAME).mkdir(parents=True)
    for i in range(3):
        (root / ESC_NAME / f"f{i}").write_text("x")
    p = run_cli("fsstats", str(root), home=tmp_path / "h", env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout, p.stdout
    assert "evil\\x1b[31mred" in p.stdout


def test_target_and_file_names_in_import_tables(tmp_path):
    src = tmp_path / f"{ESC_NAME}.csv"
    long = "t" * 300
    src.write_text("time,target,metric,value,interval_s\n"
                   f"2026-11-20T00:00:00Z,{long},read_bytes,5,60\n2026-11-20T00:00:00Z,ost0,read_bytes,5,60\n")
    p = run_cli("import", "csv", str(src), "--fs", "x", home=tmp_path / "h", env={"COLUMNS": "400"})
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout, p.stdout
    assert "1 rows left out: target or metric names longer than 255 characters" in p.stderr
    from ioweather.store import telemetry_layout as layout

    stored = layout.read_frame(Settings(home=tmp_path / "h"), "x")
    assert stored["target"].tolist() == ["ost0"]


def test_printable_escapes_what_a_terminal_acts_on():
    from ioweather.units import printable

    assert printable(ESC_NAME) == "evil\\x1b[31mred\\x1b]0;title\\x07\\nfake row"
    assert printable("a\u202eb\tc\x9bd") == "a\\u202eb\\tc\\x9bd"
    assert printable(os.fsdecode(b"name\xff")) == "name\\xff"  # a non-UTF-8 byte, as ls -b shows it
    assert printable("ordinary ünïcode — fine") == "ordinary ünïcode — fine"
