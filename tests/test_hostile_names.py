"""Names users choose (probe targets, snapshot labels, directories) print as written, never as rich markup.

Before: a target named `[/oops]` made every human table of `probe stats` and `slowdown` crash with
rich.errors.MarkupError, for all targets; `[bold]b` was silently applied as a style.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from web_synthetic import add_target  # noqa: E402
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

NAMES = ["[/oops]", "[bold]b", "[link=http://x.invalid]y[/link]", "a[red]"]
H = 3600 * 10**9


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("hostile") / "home"
    t0 = time.time_ns()
    store = open_store(Settings.resolve(home))
    for i, name in enumerate(NAMES + ["plain"]):
        add_target(store, name, t0 - 2 * H, t0, period_s=60, seed=i)
    store.dispose()
    return home


@pytest.mark.parametrize("args", [("probe", "stats", "--since", "2h"), ("slowdown", "--since", "2h", "--baseline", "2h")])
def test_probe_tables_print_markup_like_names_verbatim(hostile_home, cli, args):
    r = cli(*args, home=hostile_home, env={"COLUMNS": "400"})
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    for name in NAMES + ["plain"]:
        assert name in r.stdout, (name, r.stdout[:2000])


def test_unknown_markup_target_in_an_error_is_printed_verbatim(hostile_home, cli):
    r = cli("probe", "stats", "--target", "[/nope]", home=hostile_home)
    assert r.returncode == 2 and "[/nope]" in r.stderr and "Traceback" not in r.stderr


def test_fsstats_labels_and_directories(tmp_path, cli):
    home = tmp_path / "home"
    tree = tmp_path / "[bold]b"
    (tree / "[/x]").mkdir(parents=True)
    (tree / "[/x]" / "f").write_bytes(b"12345")
    r = cli("fsstats", str(tree), "--label", "[/oops]", home=home)
    assert r.returncode == 0, r.stderr
    r = cli("fsstats", "list", home=home, env={"COLUMNS": "400"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "[/oops]" in r.stdout and "[bold]b" in r.stdout, r.stdout


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_target_longer_than_255_characters_is_refused_at_the_door(tmp_path, cli, backend, request):
    home = tmp_path / "home"
    env = {}
    if backend == "postgresql":
        env["IOWEATHER_DB"] = request.getfixturevalue("pg_url")
    cli("probe", "init", str(tmp_path / "p"), "--file-size", "4MiB", "--pool", "10", home=home, check=True)
    r = cli("probe", "run", str(tmp_path / "p"), "--duration", "1s", "--target", "x" * 256, home=home, env=env)
    assert r.returncode == 2 and "at most 255" in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    r = cli("probe", "run", str(tmp_path / "p"), "--duration", "1s", "--interval", "0.2s", "--target", "y" * 255,
            "--quiet", home=home, env=env)
    assert r.returncode == 0, r.stderr
