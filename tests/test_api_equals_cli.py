"""Issue 28 item 3, checked equal: for each page whose question has a command, `/api/<page>` carries the
numbers of the command's `--json` for the same window and options, on real data (the LMT database of
docs/workload.md's example, two Darshan logs and tokio-abc's benchmark rows of the shared test data). The CLI runs as a user runs it,
in its own process. (The Capacity page against `report --json`: tests/test_capacity_forecast.py.)"""

from __future__ import annotations

import json
import shutil
from urllib.parse import quote

import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.web.app import create_app
from web_server import Server, api

pytestmark = pytest.mark.slow  # a CLI process per case

LMT = "lmt/snx11025_2018-01-28.sqlite3"
SINCE, UNTIL = "2018-01-28T08:00:00Z", "2018-01-28T08:05:00Z"
OPTIONS = {"resample": "5s", "smooth": "30s", "min-amplitude": "100MiB/s"}


def _cli_options() -> list[str]:
    return [a for k, v in OPTIONS.items() for a in (f"--{k}", v)]


def _query(**extra) -> str:
    q = {"fs": "snx11025", "since": SINCE, "until": UNTIL, **{k.replace("-", "_"): v for k, v in OPTIONS.items()},
         **extra}
    return "&".join(f"{k}={quote(v, safe='')}" for k, v in q.items())


# page, its API path, the command's arguments, the part of the API's document that is the command's --json
CASES = [
    ("workload", f"/api/workload?{_query()}",
     ["workload", "--fs", "snx11025", "--since", SINCE, "--until", UNTIL, *_cli_options(), "--json"],
     lambda d: d["result"]),
    ("report", f"/api/report?{_query()}",
     ["report", "--fs", "snx11025", "--since", SINCE, "--until", UNTIL, *_cli_options(), "--json"],
     lambda d: d["report"]),
    ("jobs", "/api/jobs", ["jobs", "summary", "--json"], lambda d: d["summary"]),
    # the page also carries each group's last fractions of peak (`last_k`), which the --json leaves out
    ("bench", "/api/bench", ["bench", "summary", "--json"],
     lambda d: [{k: v for k, v in r.items() if k != "last_k"} for r in d["rows"]]),
]


@pytest.fixture(scope="module")
def home(testdata, tmp_path_factory):
    from conftest import run_cli

    home = tmp_path_factory.mktemp("eq") / "home"
    run_cli("import", "lmt", str(testdata / LMT), "--fs", "snx11025", "--timezone", "America/Los_Angeles", "-q",
            home=home, check=True)
    logs = tmp_path_factory.mktemp("logs")
    for name in ("imbalanced-io.darshan", "darshan-apmpi-2nodes-64mpi.darshan"):
        shutil.copy(testdata / "darshan" / name, logs / name)
    run_cli("jobs", "ingest", str(logs), "-q", home=home, check=True)
    # the first 400 benchmark rows of tokio-abc's Edison year (its file's name says the preset)
    abc = pd.read_csv(testdata / "tokio-abc" / "edison-summaries_2017-02-14-2018-02-15.csv.gz", low_memory=False)
    abc.head(400).to_csv(logs / "edison-summaries_head.csv", index=False)
    run_cli("bench", "import", str(logs / "edison-summaries_head.csv"), home=home, check=True)
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(create_app(Settings.resolve(home))) as s:
        yield s


@pytest.mark.parametrize("page, path, args, part", CASES, ids=[c[0] for c in CASES])
def test_api_equals_the_cli_json(server, home, cli, page, path, args, part):
    code, doc = api(server, path)
    assert code == 200, doc
    want = json.loads(cli(*args, home=home, check=True).stdout)
    assert part(doc) == want
