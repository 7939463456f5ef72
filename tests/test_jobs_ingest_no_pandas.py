"""`jobs ingest` imports no pandas, in the parent or a worker (issue 40: ~0.55 s of its serial start, and as much
of the parent's CPU beside the workers where pyarrow's first call imported it), and pyarrow takes pandas back
once anything imports it (services/jobs/ingest.py `_arrow_without_pandas`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from darshan_support import LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)

# every process started with this on its path writes one file per pandas import, named by its pid
SITECUSTOMIZE = """\
import os, sys, traceback

class _SeePandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            with open(os.path.join(os.environ["PANDAS_SEEN_DIR"], str(os.getpid())), "w") as f:
                f.write("".join(traceback.format_stack()))
        return None

sys.meta_path.insert(0, _SeePandas())
"""


def _watched(tmp_path) -> tuple[dict, os.PathLike]:
    site, seen = tmp_path / "site", tmp_path / "seen"
    site.mkdir()
    seen.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {"PYTHONPATH": os.pathsep.join([str(site), *sys.path]), "PANDAS_SEEN_DIR": str(seen)}
    return env, seen


def test_an_ingest_and_its_summary_import_no_pandas_in_the_parent_or_a_worker(tmp_path, cli):
    # processes of their own (conftest's run_cli): this one has pandas
    env, seen = _watched(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    picked = [p for p in LOGS if p.stat().st_size < 2_000_000][:12]
    for p in picked:
        shutil.copy(p, logs / p.name)
    (logs / "half.darshan").write_bytes(picked[0].read_bytes()[:600])  # a failure on the way too
    out = cli("jobs", "ingest", str(logs), "--workers", "2", "--json", home=tmp_path / "home", env=env,
                  check=True)
    counts = json.loads(out.stdout)
    assert counts["ingested"] + counts["duplicates"] == len(picked) and counts["failed"] == 1
    cli("jobs", "summary", "--json", home=tmp_path / "home", env=env, check=True)
    found = {p.name: p.read_text() for p in seen.iterdir()}
    assert not found, "\n\n".join(f"pid {pid}:\n{stack}" for pid, stack in found.items())
    # the watch sees an import of pandas where there is one (not a test that cannot fail)
    subprocess.run([sys.executable, "-c", "import pandas"], env={**os.environ, **env}, check=True)
    assert len(list(seen.iterdir())) == 1


def test_pyarrow_takes_pandas_back_once_it_is_imported():
    probe = """\
import math, sys
from ioweather.services.jobs.ingest import _arrow_without_pandas
_arrow_without_pandas()
import pyarrow as pa
pa.table({"x": pa.array([1.0, math.nan])})
assert "pandas" not in sys.modules
import pandas as pd
# a Series is pandas' to pyarrow again: NaN a null (from_pandas), a frame a table
print(pa.array(pd.Series([1.0, math.nan])).null_count, pa.table(pd.DataFrame({"x": [1, 2]})).num_rows)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.split() == ["1", "2"]


def _probe(code: str, *path: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([*path, *sys.path])})
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_pyarrow_takes_pandas_back_after_a_find_spec_that_imported_nothing():
    # `importlib.util.find_spec("pandas")` (is it installed?) finds the spec without running pandas: pyarrow must
    # still take pandas back at the import that follows, or a Series' NaN is no null and a categorical no dictionary
    probe = """\
import importlib.util, math
from ioweather.services.jobs.ingest import _arrow_without_pandas
_arrow_without_pandas()
import pyarrow as pa
assert importlib.util.find_spec("pandas") is not None
import pandas as pd
print(pa.array(pd.Series([1.0, math.nan])).null_count,
      pa.types.is_dictionary(pa.array(pd.Series(["a", "b"], dtype="category")).type))
"""
    assert _probe(probe) == ["1", "True"]


def test_a_pandas_pyarrow_refuses_still_imports(tmp_path):
    # pyarrow refuses a pandas older than it supports (an ImportError from its check): without the hook pandas
    # imports and pyarrow only leaves it out; the hook must not turn that into a failed `import pandas`
    fake = tmp_path / "old" / "pandas"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '1.0.0'\n")
    probe = """\
from ioweather.services.jobs.ingest import _arrow_without_pandas
_arrow_without_pandas()
import pandas
import pyarrow as pa
print(pandas.__version__, pa.lib._pandas_api.have_pandas)
"""
    assert _probe(probe, str(tmp_path / "old")) == ["1.0.0", "False"]


def test_a_pyarrow_without_the_pandas_shim_gets_no_hooks():
    # the hooks reach pyarrow's private `lib._pandas_api`: a pyarrow that moved it gets none (they could not give
    # pandas back to it, and every later `import pandas` would fail), and its first table imports pandas as usual
    probe = """\
import sys
import pyarrow
shim = pyarrow.lib._pandas_api
del pyarrow.lib._pandas_api
from ioweather.services.jobs.ingest import _arrow_without_pandas, _ArrowTakesPandasBack
_arrow_without_pandas()
print(sum(isinstance(f, _ArrowTakesPandasBack) for f in sys.meta_path))
import pandas
print(pandas.Series([1]).sum())
"""
    assert _probe(probe) == ["0", "1"]
