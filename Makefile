# One way in. `make watch` installs and starts the main job; `make test` installs and runs every test.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PROBE_DIR ?= $(HOME)/.cache/ioweather-probe
NATIVE  := $(wildcard src/ioweather/_native/*.c src/ioweather/_native/*.h)

.PHONY: install system-deps test watch bench clean lab lab-build

$(VENV)/.installed: pyproject.toml setup.py $(NATIVE)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# The main job needs only the package's own dependencies: no pytest, Playwright or dask on a production node.
$(VENV)/.installed-run: pyproject.toml setup.py $(NATIVE)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

install: $(VENV)/.installed

system-deps:
	sh scripts/install-system-deps.sh

# Both cores (pytest-xdist): tests/conftest.py groups the tests so a module's fixtures are built once and the
# tests of the one Slurm cluster, or of time, never run at once (docs/architecture.md, "Test tiers").
WORKERS ?= 2

# The lab's Darshan runtime and IOR (docs/lab.md) for the lab's tests: built once into the cache (about 6 min on a
# new machine, 1 s after), skipped with the reason when ../shared/third_party is absent (those tests then skip).
lab-build: install
	$(VENV)/bin/ioweather lab build >/dev/null || echo "note: the lab could not be built: its tests skip" >&2

test: system-deps install lab-build
	$(PY) -m pytest -n $(WORKERS) $(PYTEST_ARGS)

# Unit, in-process CLI and store tests: no browser, database server, Slurm, soak or fuzz run (docs/architecture.md).
.PHONY: test-fast
test-fast: install
	$(PY) -m pytest -n $(WORKERS) --fast $(PYTEST_ARGS)

# `make watch PORT=8080 PROBE_DIR=/lustre/scratch/$USER/probe`: the dashboard's port (0: a free one).
PORT    ?= 8050
watch: $(VENV)/.installed-run
	$(VENV)/bin/ioweather watch $(PROBE_DIR) --port $(PORT)

# The I/O lab (docs/lab.md): build Darshan and IOR once into ~/.cache/ioweather-lab, run every case on
# LAB_DIR (a scratch directory of the file system under test), then score ioweather and Drishti on the logs
# (the table of docs/validation.md). About 10 minutes here, plus 3 for the first build.
LAB_DIR  ?= /tmp
LAB_LOGS ?= $(HOME)/.cache/ioweather-lab/logs
lab: system-deps install
	$(VENV)/bin/ioweather lab build
	$(VENV)/bin/ioweather lab run --dir $(LAB_DIR) --logs $(LAB_LOGS)
	$(VENV)/bin/ioweather lab score $(LAB_LOGS)
	$(VENV)/bin/ioweather lab storm --dir $(LAB_DIR)

bench: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info src/ioweather/_native/*.so
