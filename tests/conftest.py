"""Shared fixtures: real databases, real data, a real browser, each skipped with a reason when absent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from browser import CHROMIUM_ARGS, launch  # noqa: F401  (CHROMIUM_ARGS: test_fsstats_cli imports it from here)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TESTDATA = SHARED / "testdata"
DATA = SHARED / "data"

PG_ADMIN_URL = os.environ.get("IOWEATHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
MARIADB_ADMIN_URL = os.environ.get("IOWEATHER_TEST_MARIADB", "mysql://root@127.0.0.1:3306/test")


#: The tiers (docs/architecture.md, "Test tiers"). A test that asks for one of these fixtures needs that
#: real component, wherever it sits.
FIXTURE_MARKERS = {
    "browser": ("browser",),
    "chromium_path": ("browser",),
    "pg_url": ("postgres",),
    "mariadb_url": ("mariadb",),
    "slurm_cluster": ("slurm",),
}

#: Modules whose tests are slow as a whole, measured with `pytest --durations=0 -p no:randomly` on this
#: 2-core machine: they start servers, daemons, browsers or many `python -m ioweather` processes.
#: The marks live here so the test files need not change; a module's own `pytestmark` still counts.
MODULE_MARKERS: dict[str, tuple[str, ...]] = {
    "test_soak.py": ("soak", "slow"),
    "test_fuzz_darshan_scan.py": ("fuzz",),
    "test_fuzz_importers.py": ("fuzz",),
    "test_fuzz_snapshots.py": ("fuzz",),
    "test_fuzz_web.py": ("fuzz", "slow"),
    "test_slurm_import.py": ("slurm",),
    "test_bench_slurm.py": ("slurm", "slow"),
}

#: The markers that keep a test out of `make test-fast`.
SLOW_MARKERS = ("slow", "browser", "postgres", "mariadb", "slurm", "soak", "fuzz")


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(MODULE_MARKERS.get(item.path.name, ()))
        for fixture in item.fixturenames:
            names.update(FIXTURE_MARKERS.get(fixture, ()))
        for name in sorted(names):
            item.add_marker(name)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="tests/test_json_contract.py: rewrite tests/golden/*.json from this run")


@pytest.fixture(scope="session")
def testdata() -> Path:
    """../shared/testdata (read-only); skips when a fresh clone has no ../shared."""
    if not TESTDATA.is_dir():
        pytest.skip(f"shared test data not found at {TESTDATA}")
    return TESTDATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (read-only real data); skips when absent."""
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA


@pytest.fixture
def home(tmp_path) -> Path:
    """An empty IOWEATHER_HOME."""
    h = tmp_path / "home"
    return h


def run_cli(*args: str, home: Path | None = None, env: dict | None = None, timeout: float = 120,
            input: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m ioweather ARGS` in a subprocess, as a user would."""
    full_env = dict(os.environ)
    if home is not None:
        full_env["IOWEATHER_HOME"] = str(home)
    full_env.pop("IOWEATHER_DB", None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "ioweather", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"ioweather {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture
def cli():
    return run_cli


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL.replace("postgresql://", "postgresql://", 1), connect_timeout=3):
            return None
    except Exception as e:  # any failure means: no server to test against
        return f"PostgreSQL not reachable at {PG_ADMIN_URL}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database on this machine's server, dropped afterwards."""
    reason = _pg_available()
    if reason:
        pytest.skip(reason)
    import psycopg

    name = f"ioweather_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def mariadb_url():
    """A fresh MariaDB database on this machine's server, dropped afterwards."""
    try:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", connect_timeout=3, autocommit=True)
    except Exception as e:
        pytest.skip(f"MariaDB not reachable at 127.0.0.1:3306: {e}")
    name = f"ioweather_test_{uuid.uuid4().hex[:12]}"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    yield f"mysql://root@127.0.0.1:3306/{name}"
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's chromium, for Playwright's executable_path."""
    for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", shutil.which("chromium") or ""):
        if p and os.path.exists(p):
            return p
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One headless Chromium context per test module (tests/browser.py: `visit` opens pages in it)."""
    with launch(chromium_path) as context:
        yield context


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    d = ROOT / "test-artifacts"
    d.mkdir(exist_ok=True)
    return d


def _mount_tmpfs(path: Path, opts: str) -> None:
    path.mkdir(exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here ({r.stderr.strip()})")


@pytest.fixture
def tmpfs(tmp_path):
    """`tmpfs(name, opts)` mounts a real tmpfs (e.g. "size=4m" to fill it, "ro") under tmp_path; needs root."""
    mounted = []

    def make(name: str, opts: str = "size=64m") -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        p = tmp_path / name
        _mount_tmpfs(p, opts)
        mounted.append(p)
        return p

    yield make
    for p in reversed(mounted):
        subprocess.run(["umount", "-l", str(p)], capture_output=True)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node Slurm cluster (tests/slurm_cluster.py), stopped at the end; skips with the reason."""
    from slurm_cluster import SlurmCluster, SlurmUnavailable

    try:
        cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"))
    except SlurmUnavailable as e:
        pytest.skip(str(e))
    with cluster:
        yield cluster
