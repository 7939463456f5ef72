"""tools/rewrite_imports.py: every form of an old flat services import becomes the domain path, once.

Other branches run it after merging the move (issue 37), on their own files, possibly twice: it must
rewrite what still names an old module and leave the new layout alone.
"""
# rewrite_imports: leave this file (its samples name the old modules on purpose)
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("rewrite_imports", ROOT / "tools" / "rewrite_imports.py")
rw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rw)

OLD = '''from ioweather.services import probe_cache, slowdown, why
from ioweather.services import (
    probe,
    bench as b,
)
    from ioweather.services import job_weather, umami
from ioweather.services.probe import ProbeDaemon, run_probes
from ioweather.services.bench import run, summary
from ioweather.services.telemetry import import_one
import ioweather.services.probe
import ioweather.services.probe_cache as pc
mock.patch("ioweather.services.probe.time.sleep")
monkeypatch.setattr("ioweather.services.job_weather.compute", f)
"ioweather.services.probe_status" in sys.modules
contract = ["ioweather.services.probe", "ioweather.services.jobs"]
see services/probe.py and services/probe_cache.py:75 and services/probe/
    # lazy: numpy via services.probe: kept off
'''

NEW = '''from ioweather.services.probe import cache as probe_cache, slowdown
from ioweather.services.answers import why
from ioweather.services.probe import run as probe
from ioweather.services.bench import runs as b
    from ioweather.services.jobs import weather as job_weather
    from ioweather.services.answers import umami
from ioweather.services.probe.run import ProbeDaemon, run_probes
from ioweather.services.bench.runs import run, summary
from ioweather.services.telemetry.imports import import_one
import ioweather.services.probe.run
import ioweather.services.probe.cache as pc
mock.patch("ioweather.services.probe.run.time.sleep")
monkeypatch.setattr("ioweather.services.jobs.weather.compute", f)
"ioweather.services.probe.status" in sys.modules
contract = ["ioweather.services.probe", "ioweather.services.jobs"]
see services/probe/run.py and services/probe/cache.py:75 and services/probe/
    # lazy: numpy via services.probe.run: kept off
'''


def test_every_form_is_rewritten():
    assert rw.rewrite(OLD) == NEW


def test_running_it_twice_changes_nothing():
    assert rw.rewrite(NEW) == NEW


def test_relative_imports_inside_the_old_services():
    assert rw.rewrite("from .probe_cache import X\nfrom . import slowdown, why\n", in_services=True) == \
        "from ioweather.services.probe.cache import X\nfrom ioweather.services.probe import slowdown\n" \
        "from ioweather.services.answers import why\n"


def test_every_new_module_exists():
    services = ROOT / "src" / "ioweather" / "services"
    for old, new in rw.MOVED.items():
        assert (services / (new.replace(".", "/") + ".py")).is_file(), new
        assert not (services / f"{old}.py").exists(), old


def test_the_tree_names_no_old_module(tmp_path):
    """--check over the whole tree: nothing left to rewrite; on a file with an old import, exit 1."""
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "rewrite_imports.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout
    stale = tmp_path / "stale.py"
    stale.write_text("from ioweather.services.darshan import job_report\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "rewrite_imports.py"), "--check", str(stale)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "stale.py" in r.stdout
