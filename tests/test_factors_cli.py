"""`ioweather factors density|fit|classify` as a user runs them (real files, real store).

The end-to-end cases run `python -m ioweather` in a subprocess (the `cli` fixture); the
many bad-input cases go through click's CliRunner in this process (`run`), the same
command object and error handling without paying the interpreter start each time.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from factors_synthetic import TABLE3, iomodel_frame, mixture
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

DENSITY_KEYS = {"n", "bandwidth", "adjust", "grid_x", "grid_y", "maxima_s", "minima_s", "splits_s", "cutoff_s",
                "outlier_fraction", "classes"}
CLASS_KEYS = {"label", "lo_s", "hi_s", "count", "fraction", "mean_s", "mean_bps"}
# Two read and two write factors of Table 3, at least 3x apart at every size up to 64 KiB, so each
# experiment's own class is recoverable (cached-off0 and cached-rnd are not: the paper's Fig. 5).
MODELS = ("discard-R-off0", "cached-R-off0", "discard-W-rnd", "cached-W-off0")
SIZES = [1, 64, 1024, 4096, 16384, 65536]
WIDE = {"COLUMNS": "160"}  # rich wraps tables at 80 columns when stdout is not a terminal


@pytest.fixture
def run(home):
    from click.testing import CliRunner

    from ioweather.cli import cli as group

    def invoke(*args, home=home):
        r = CliRunner().invoke(group, list(args), env={"IOWEATHER_HOME": str(home), "IOWEATHER_DB": None},
                               catch_exceptions=False)
        return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)

    return invoke


def ok_json(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def fails(proc, *fragments):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("ioweather: error:"), proc.stderr
    for f in fragments:
        assert f in proc.stderr, (f, proc.stderr)


@pytest.fixture(scope="module")
def train_parquet(tmp_path_factory):
    """An io-model-shaped Parquet generated from four rows pairs of Table 3."""
    p = tmp_path_factory.mktemp("iomodel") / "train.parquet"
    iomodel_frame({k: TABLE3[k] for k in MODELS}, sizes=SIZES, repeats=600).to_parquet(p, index=False)
    return p


@pytest.fixture(scope="module")
def model_file(train_parquet, tmp_path_factory):
    from inprocess import run_cli

    out = tmp_path_factory.mktemp("model") / "model.json"
    proc = run_cli("factors", "fit", str(train_parquet), "--out", str(out), env=WIDE)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


# ---------------------------------------------------------------- density


def test_density_json_matches_r_and_has_the_contract_keys(cli, testdata):
    ref = pd.read_csv(testdata / "r-density" / "toy_density_log_adjust2.csv")
    res = ok_json(cli("factors", "density", str(testdata / "r-density" / "toy_obs.csv"), "--json"))
    assert set(res) == DENSITY_KEYS
    assert res["n"] == 1000 and res["adjust"] == 2
    assert res["bandwidth"] == pytest.approx(0.2371484, rel=5e-7)
    np.testing.assert_allclose(res["grid_x"], ref["x"], rtol=0, atol=1e-12)
    assert np.abs(np.array(res["grid_y"]) - ref["y"]).max() <= 1e-6 * ref["y"].max()
    assert [c["label"] for c in res["classes"]] == ["1", "2", "outliers"]
    assert all(set(c) == CLASS_KEYS for c in res["classes"])
    assert len(res["maxima_s"]) == 2 and len(res["splits_s"]) == 1 == len(res["minima_s"])
    assert sum(c["count"] for c in res["classes"]) == 1000


def test_density_human_table_and_plot(run, testdata, tmp_path):
    png = tmp_path / "fig2.png"
    proc = run("factors", "density", str(testdata / "r-density" / "toy_obs.csv"), "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert "outliers" in proc.stdout and "cutoff=" in proc.stdout and "bandwidth=0.2371" in proc.stdout
    import matplotlib.image

    img = matplotlib.image.imread(png)
    assert img.shape[0] > 500 and img.shape[1] > 700


def test_duration_ns_parquet_equals_seconds_csv(run, tmp_path):
    d, _ = mixture(np.random.default_rng(1), [(1, 1.15e-4, 30), (1, 4.65e-4, 20)], 3000, tail=0.02)
    ns = np.round(d * 1e9).astype(np.int64)
    pd.DataFrame({"duration_ns": ns}).to_parquet(tmp_path / "d.parquet")
    pd.DataFrame({"duration_s": ns / 1e9}).to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame({"lat": ns / 1e6}).to_csv(tmp_path / "ms.csv", index=False)
    a = ok_json(run("factors", "density", str(tmp_path / "d.parquet"), "--json"))
    b = ok_json(run("factors", "density", str(tmp_path / "d.csv"), "--json"))
    c = ok_json(run("factors", "density", str(tmp_path / "ms.csv"), "--column", "lat", "--unit", "ms", "--json"))
    for other in (b, c):
        assert other["cutoff_s"] == pytest.approx(a["cutoff_s"], rel=1e-9)
        assert [k["count"] for k in other["classes"]] == [k["count"] for k in a["classes"]]
    assert a["outlier_fraction"] == pytest.approx(0.02, abs=0.003)


def test_density_by_group_with_plots_and_throughput(run, train_parquet, tmp_path):
    res = ok_json(run("factors", "density", str(train_parquet), "--by", "cache,size", "--where", "mem_layout=off0",
                      "--where", "cache=cached", "--where", "op=R", "--json", "--plot", str(tmp_path / "d.png")))
    assert [r["group"] for r in res] == [{"cache": "cached", "size": s} for s in SIZES]
    for r in res:
        assert r["n"] == 600 and set(r) == DENSITY_KEYS | {"group"}
        top = r["classes"][0]
        assert top["mean_bps"] == pytest.approx(r["group"]["size"] / top["mean_s"], rel=1e-9)
    assert len(list(tmp_path.glob("d_cache-cached_size-*.png"))) == len(SIZES)


# ---------------------------------------------------------------- fit and classify


def test_fit_writes_models_and_prints_table3(model_file):
    out, stdout = model_file
    doc = json.loads(out.read_text())
    assert doc["format"] == "ioweather.factors.models" and doc["version"] == 1
    assert doc["grouping"] == ["cache", "op", "mem_layout"]
    labels = [m["label"] for m in doc["models"]]
    assert sorted(labels) == sorted(MODELS)
    by = {m["label"]: m for m in doc["models"]}
    (i_s, c_s), (i_l, c_l) = TABLE3["cached-R-off0"]
    m = by["cached-R-off0"]
    assert m["small"]["intercept_s"] == pytest.approx(i_s, rel=0.03)
    assert m["large"]["intercept_s"] == pytest.approx(m["small"]["intercept_s"] + 4096 * m["small"]["slope_s_per_byte"])
    assert m["large"]["slope_s_per_byte"] == pytest.approx(c_l, rel=0.03)
    assert "cached-R-off0 ≤4K" in stdout and "cached-R-off0 >4K" in stdout and "Table 3" in stdout


def test_fit_size_cap_and_json(run, train_parquet, tmp_path):
    doc = ok_json(run("factors", "fit", str(train_parquet), "--size-cap", "cached-R-off0=16KiB",
                      "--out", str(tmp_path / "m.json"), "--json"))
    by = {m["label"]: m for m in doc["models"]}
    assert max(by["cached-R-off0"]["large"]["sizes_bytes"]) == 16384
    assert max(by["cached-W-off0"]["large"]["sizes_bytes"]) == 65536
    fails(run("factors", "fit", str(train_parquet), "--size-cap", "nope=1MiB", "--out", str(tmp_path / "x.json")),
          "no setup nope")


def test_classify_recovers_each_experiment(cli, model_file, tmp_path):
    """A second run of the same four setups: each experiment lands in its own class (Table 4),
    reads judged by the read models and writes by the write models (--match op by default)."""
    out, _ = model_file
    test = iomodel_frame({k: TABLE3[k] for k in MODELS}, sizes=SIZES, repeats=200, seed=3)
    test.to_parquet(tmp_path / "test.parquet", index=False)
    res = ok_json(cli("factors", "classify", str(tmp_path / "test.parquet"), "--model", str(out), "--json",
                      "--out", str(tmp_path / "labelled.parquet"), "--plot", str(tmp_path / "fig56.png")))
    assert res["n"] == len(test)
    assert res["classes"][-1] == "uncached"
    assert set(res["classes"][:-1]) == {"discard-off0", "discard-rnd", "cached-off0"}
    assert len(res["experiments"]) == 4
    for e in res["experiments"]:
        truth = f"{e['experiment']['cache']}-{e['experiment']['mem_layout']}"
        assert e["fractions"][truth] > 0.97, e
    labelled = pd.read_parquet(tmp_path / "labelled.parquet")
    assert len(labelled) == len(test) and "factor" in labelled
    assert (tmp_path / "fig56.png").stat().st_size > 20_000
    human = cli("factors", "classify", str(tmp_path / "test.parquet"), "--model", str(out), env=WIDE)
    assert human.returncode == 0 and "Table 4" in human.stdout and "cached-off0" in human.stdout


def test_probe_samples_from_the_store(cli, run, home, model_file):
    """Which of the data_read probes hit a cache: density and classify over --from-store."""
    from ioweather.config import Settings
    from ioweather.store import open_store
    from ioweather.store.probe import RunInfo, insert_samples, start_run

    store = open_store(Settings.resolve(home))
    run_id = start_run(store, RunInfo(target="scratch", directory="/x", interval_s=1, block_bytes=65536,
                                   file_bytes=1 << 30, pool_files=10, small_bytes=4096, direct=False, fsync=False,
                                   seed=1, timeout_s=60, file_exceeds_memory=True))
    (i_s, c_s), (i_l, c_l) = TABLE3["cached-R-off0"]
    fast = (i_l + c_l * 65536) / 1.6
    rng = np.random.default_rng(0)
    d = np.r_[fast * np.exp(rng.normal(0, 0.05, 400)), 2e-3 * np.exp(rng.normal(0, 0.2, 200))]
    t0 = 1_700_000_000 * 10**9
    rows = [(run_id, "data_read", t0 + i * 10**9, int(x * 1e9), 65536, "ok", 0) for i, x in enumerate(d)]
    rows.append((run_id, "data_read", t0 + 10**12, 5, 65536, "timeout", 0))  # not a completed read
    insert_samples(store, rows)
    res = ok_json(cli("factors", "density", "--from-store", "--op", "data_read", "--json", home=home))
    assert res["n"] == 600 and len(res["maxima_s"]) == 2
    out, _ = model_file
    cls = ok_json(run("factors", "classify", "--from-store", "--op", "data_read", "--model", str(out), "--json",
                      home=home))
    (exp,) = cls["experiments"]
    assert exp["experiment"] == {"op": "R"}
    assert exp["fractions"]["uncached"] == pytest.approx(200 / 600, abs=0.01)
    fails(run("factors", "density", "--from-store", "--op", "md_stat", home=home), "no successful md_stat samples")
    fails(run("factors", "density", "--from-store", home=home), "--from-store needs --op")
    fails(run("factors", "density", "--from-store", "--op", "data_read", "--target", "nope", home=home),
          "no probe samples for target 'nope'")


def test_help(run):
    for sub in ("density", "fit", "classify"):
        proc = run("factors", sub, "--help")
        assert proc.returncode == 0 and "--json" in proc.stdout


# ---------------------------------------------------------------- bad input


def _csv(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("name, text, fragments", [
    ("empty.csv", "", ["is empty"]),
    ("header.csv", "duration_s\n", ["no rows"]),
    ("one.csv", "duration_s\n0.001\n", ["at least 2 durations"]),
    ("equal.csv", "duration_s\n" + "0.002\n" * 20, ["all 20 durations are equal"]),
    ("zeros.csv", "duration_s\n0.001\n0\n-0.002\n0.003\n", ["1 zero", "1 negative", "--drop-invalid"]),
    ("nan.csv", "duration_s\n0.001\nnan\ninf\n0.003\n", ["1 NaN", "1 infinite"]),
    ("nocol.csv", "latency\n0.001\n0.002\n", ["no duration column", "latency"]),
    ("text.csv", "duration_s\nfast\nslow\n", ["not numbers"]),
])
def test_bad_density_inputs(run, tmp_path, name, text, fragments):
    fails(run("factors", "density", _csv(tmp_path, name, text)), *fragments)


def test_unreadable_files(run, tmp_path):
    fails(run("factors", "density", str(tmp_path / "missing.csv")), "no such file")
    fails(run("factors", "density", str(tmp_path)), "directory")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1" + bytes(range(256)) * 4)
    fails(run("factors", "density", str(garbage)), "not a readable CSV or Parquet file")
    fails(run("factors", "density", _csv(tmp_path, "v.csv", "value\n1\n2\n"), "--column", "nope"),
          "column 'nope' not found")


def test_drop_invalid_keeps_going(run, tmp_path):
    d, _ = mixture(np.random.default_rng(2), [(1, 1e-4, 30)], 500)
    p = _csv(tmp_path, "d.csv", "duration_s\n" + "\n".join(str(float(x)) for x in d) + "\n0\n-1\nnan\n")
    proc = run("factors", "density", p, "--drop-invalid", "--json")
    assert ok_json(proc)["n"] == 500
    assert "dropped 1 NaN, 1 zero, 1 negative" in proc.stderr


def test_bad_group_does_not_stop_the_batch(run, tmp_path):
    d, _ = mixture(np.random.default_rng(3), [(1, 1e-4, 30)], 300)
    df = pd.DataFrame({"size": [4096] * 300 + [8192] + [65536] * 300,
                       "duration_s": np.r_[d, [1e-4], d * 4]})
    df.to_csv(tmp_path / "g.csv", index=False)
    proc = run("factors", "density", str(tmp_path / "g.csv"), "--by", "size", "--json")
    assert proc.returncode == 2
    res = json.loads(proc.stdout)
    assert [r["group"]["size"] for r in res] == [4096, 8192, 65536]
    assert res[0]["n"] == 300 and res[2]["n"] == 300 and "at least 2" in res[1]["error"]
    assert "size=8192" in proc.stderr


def test_bad_model_files(run, tmp_path, model_file, train_parquet):
    out, _ = model_file
    doc = json.loads(out.read_text())
    data = str(train_parquet)
    future = dict(doc, version=7)
    (tmp_path / "future.json").write_text(json.dumps(future))
    fails(run("factors", "classify", data, "--model", str(tmp_path / "future.json")), "version 7 is not supported")
    edited = json.loads(json.dumps(doc))
    edited["models"][1]["large"]["slope_s_per_byte"] = "fast"
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    fails(run("factors", "classify", data, "--model", str(tmp_path / "edited.json")),
          "models[1].large.slope_s_per_byte must be a finite number")
    (tmp_path / "broken.json").write_text(out.read_text()[:-40])
    fails(run("factors", "classify", data, "--model", str(tmp_path / "broken.json")), "not JSON")
    fails(run("factors", "classify", data, "--model", str(tmp_path / "none.json")), "none.json: no such file")
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    fails(run("factors", "classify", data, "--model", str(tmp_path / "other.json")), "not an ioweather factor model")
