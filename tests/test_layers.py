"""The layer rules of docs/architecture.md, enforced: import-linter's contracts in pyproject.toml.

Data flows one way (commands → web → services → sources, store, views → stats → config, units, errors);
a change that imports against it fails here, naming the offending import and line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    # A skip here would let a broken layer pass CI unseen: the contracts are the design's only guard.
    assert exe is not None, "import-linter is not installed (pip install -e '.[test]'): the layer contracts cannot be checked"
    return exe


def _run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_lint_imports(), "--no-cache", str(ROOT / "pyproject.toml")], cwd=src,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept():
    r = _run(ROOT / "src")
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and "KEPT" in r.stdout


def test_a_missing_import_linter_fails_rather_than_skips(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    with pytest.raises(AssertionError, match="import-linter is not installed"):
        _lint_imports()


@pytest.mark.parametrize("module, line, contract", [
    ("web/pages/status.py", "from ioweather.store import jobs", "one door"),
    ("commands/probe.py", "from ioweather.stats import probe", "one door"),
    ("web/pages/jobs.py", "import ioweather.sources.mounts", "one door"),
    ("sources/mounts.py", "from ioweather.stats import counters", "sources hand over raw values"),
    ("services/probe/run.py", "from ioweather.web import params", "the whole order"),
    ("stats/probe.py", "from ioweather.store import db", "the whole order"),
    # services by domain: a domain importing another, an answer, or one through the plumbing
    ("services/bench/runs.py", "from ioweather.services.probe import slowdown", "services by domain"),
    ("services/telemetry/imports.py", "from ioweather.services.jobs.weather import after_import", "services by domain"),
    ("services/jobs/weather.py", "from ioweather.services.answers import umami", "services by domain"),
    ("services/runtime/daemon.py", "from ioweather.services.content import fsstats", "services by domain"),
    # inside answers/ and runtime/: the peers below never reach up
    ("services/answers/why.py", "from ioweather.services.answers import job_diff", "answers"),
    ("services/runtime/stores.py", "from ioweather.services.runtime import daemon", "runtime"),
])
def test_each_contract_catches_its_import(tmp_path, module, line, contract):
    """The contracts on a copy of the package with one forbidden import added: each is named BROKEN."""
    pkg = tmp_path / "ioweather"
    shutil.copytree(ROOT / "src" / "ioweather", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    target = pkg / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa: E402\n", encoding="utf-8")
    r = _run(tmp_path)
    assert r.returncode != 0
    assert contract in _broken(r.stdout), r.stdout[-3000:]


def _broken(out: str) -> list[str]:
    """The names of the broken contracts in lint-imports' summary (it wraps long names)."""
    summary = " ".join(out.split("dependencies.", 1)[1].split("Contracts:", 1)[0].split())
    summary = re.sub(r" \(\d+ ignored imports?\)", "", summary)  # after a verdict, not a name
    return [name.lstrip("- ").split(":")[0] for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN)\b", summary)
            if verdict == "BROKEN"]


def test_a_new_services_module_must_take_a_layer(tmp_path):
    """services/ at its top holds only what the domain contract places: a stray module breaks it."""
    pkg = tmp_path / "ioweather"
    shutil.copytree(ROOT / "src" / "ioweather", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    (pkg / "services" / "stray.py").write_text('"""A service placed in no layer."""\n', encoding="utf-8")
    r = _run(tmp_path)
    assert r.returncode != 0
    assert "services by domain" in _broken(r.stdout), r.stdout[-3000:]
