"""Our libdarshan-util binding (sources/darshan_cffi.py) against PyDarshan's own `cffi_backend`: the same job,
modules and counter names on every public log, the same answer (or the same error, or the same death) on
damaged ones, and none of the `darshan` package's imports (its pandas)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from darshan_support import LOG_IDS, LOGS, TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse)

from ioweather.isolation import ChildDied, call_isolated
from ioweather.sources import darshan_cffi as ours

SEED = int(os.environ.get("IOWEATHER_FUZZ_SEED", "20261129"))


def _pydarshan():
    from darshan.backend import cffi_backend

    return cffi_backend


def _answers(which: str, path: str) -> dict:
    """What the reader asks a backend for one log: the handle's opening, the job, the modules (each a value
    or its exception's type and text)."""
    b = ours if which == "ours" else _pydarshan()
    log = b.log_open(path)
    if not log["handle"]:
        return {"handle": None}
    out = {}
    try:
        for name, f in (("job", b.log_get_job), ("modules", b.log_get_modules)):
            try:
                out[name] = f(log)
            except Exception as e:  # noqa: BLE001  (the same failure is what is compared)
                out[name] = f"{type(e).__name__}: {e}"
    finally:
        b.log_close(log)
    return out


def _isolated(which: str, path: str):
    try:
        return call_isolated(_answers, which, path)
    except ChildDied as e:
        return f"died: {e}"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("path", LOGS, ids=LOG_IDS)
def test_job_and_modules_equal_pydarshans_on_every_public_log(path):
    got, want = _answers("ours", str(path)), _answers("pydarshan", str(path))
    assert got == want
    assert got["job"]["nprocs"] > 0 and isinstance(got["modules"], dict)  # a log read, not two equal failures


def test_counter_names_and_record_types_equal_pydarshans():
    b = _pydarshan()
    modules = [*b._mod_names, "LUSTRE_COMP", "NOSUCH"]
    for mod in modules:
        assert ours.counter_names(mod) == b.counter_names(mod), mod
        assert ours.fcounter_names(mod) == b.fcounter_names(mod), mod
    assert ours.counter_names("POSIX") and ours.fcounter_names("MPI-IO")  # tables, not two Nones
    assert ours.counter_names("NOSUCH") is None
    for mod, ctype in ours._structdefs.items():
        assert b._structdefs[mod] == ctype
        t = ctype.replace(" **", "")
        assert ours.ffi.sizeof(t) == b.ffi.sizeof(t), mod
    # the same declarations: every struct PyDarshan's FFI knows, of the same size
    for name in ("struct darshan_job", "struct darshan_mod_info", "struct darshan_name_record",
                 "struct darshan_lustre_component", "struct darshan_apxc_perf_record",
                 "struct darshan_apmpi_header_record"):
        assert ours.ffi.sizeof(name) == b.ffi.sizeof(name), name


def _damaged(src, rng: random.Random) -> bytes:
    data = bytearray(src.read_bytes())
    kind = rng.choice(["cut", "bytes", "block"])
    if kind == "cut":
        return bytes(data[:rng.randrange(8, len(data))])
    if kind == "bytes":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    at = rng.randrange(len(data))
    data[at:at + 256] = bytes(min(256, len(data) - at))
    return bytes(data)


def test_damaged_logs_give_the_same_answer_error_or_death_as_pydarshan(tmp_path):
    print(f"\ndamaged logs: seed {SEED} (IOWEATHER_FUZZ_SEED)")
    rng = random.Random(SEED)
    small = sorted(p for p in TESTDATA_LOGS.glob("*.darshan") if p.stat().st_size < 100_000)
    cases = {"half": (TESTDATA_LOGS / "imbalanced-io.darshan").read_bytes()[:20_000]}
    cases.update({f"m{i}": _damaged(rng.choice(small), rng) for i in range(40)})
    outcomes = set()
    for name, data in cases.items():
        p = tmp_path / f"{name}.darshan"
        p.write_bytes(data)
        got, want = _isolated("ours", str(p)), _isolated("pydarshan", str(p))
        assert got == want, name
        outcomes.add("died" if isinstance(got, str) else "no handle" if got == {"handle": None}
                     else "error" if any(isinstance(v, str) for v in got.values()) else "read")
    print(f"outcomes: {sorted(outcomes)}")
    assert len(outcomes) >= 2  # damage that reads and damage that fails, not one kind only


def test_the_binding_imports_no_pandas_and_no_darshan_package():
    probe = ("import sys\nimport ioweather.sources.darshan_cffi as b\n"
             "assert b.counter_names('POSIX')\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'darshan'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]"
