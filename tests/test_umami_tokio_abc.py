"""`ioweather import job-features --preset tokio-abc` and `correlations` on the real tokio-abc year (seed 003's
checks): on Edison, coverage factor correlates positively and significantly with fraction of peak, OST
fullness negatively and significantly, concurrent jobs negligibly. Reference numbers come from pandas +
scipy on the CSV here, derived independently of ioweather's code."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)


@pytest.fixture(scope="module")
def abc(testdata, tmp_path_factory):
    d = testdata / "tokio-abc"
    if not (d / "abcconfig.json").is_file():
        pytest.skip(f"tokio-abc summaries not found in {d}")
    home = tmp_path_factory.mktemp("abc") / "home"
    csv = d / "edison-summaries_2017-02-14-2018-02-15.csv.gz"
    r = run_cli("import", "job-features", str(csv), "--preset", "tokio-abc", "--json", home=home, timeout=300)
    assert r.returncode == 0, r.stderr
    return home, csv, json.loads(r.stdout)


def _reference(csv) -> pd.DataFrame:
    df = pd.read_csv(csv)
    df = df[df["darshan_agg_perf_by_slowest_posix"].notna()].copy()
    write = df["darshan_biggest_write_api_bytes"] > df["darshan_biggest_read_api_bytes"]
    files = np.where(write, df["darshan_biggest_write_api_files"], df["darshan_biggest_read_api_files"])
    fpp = np.abs((files % df["darshan_nprocs"]) / files) < 0.05
    app = df["darshan_app"].map(os.path.basename)
    motif = app + np.where(fpp, "fpp", "shared") + np.where(write, "w", "r") + df["_file_system"]
    df["fop"] = df["darshan_agg_perf_by_slowest_posix"] / df.groupby(motif)["darshan_agg_perf_by_slowest_posix"].transform("max")
    cf = (df["darshan_tot_bytes_read_posix"] + df["darshan_tot_bytes_written_posix"]) / (df["fs_tot_bytes_read"] + df["fs_tot_bytes_written"])
    df["cf"] = cf.replace([np.inf, -np.inf], np.nan).where(lambda x: x <= 1.2)
    start = df["_datetime_start"]
    keep = ((start >= pd.Timestamp("2017-02-14").timestamp()) & (start < pd.Timestamp("2018-02-15").timestamp())
            & (df["darshan_total_gibs_posix"] > 1) & ~((app == "hacc_io_write") & ~fpp & write))
    return df[keep]


def test_import_counts(abc):
    home, csv, res = abc
    raw = pd.read_csv(csv)
    assert res["rows_in_file"] == len(raw)
    assert res["rows"] == int(raw["darshan_agg_perf_by_slowest_posix"].notna().sum())
    assert res["rows_kept_by_paper_filters"] == len(_reference(csv))


def test_edison_correlations_match_the_paper_and_scipy(abc):
    home, csv, _ = abc
    r = run_cli("correlations", "--system", "edison", "--json", "--metric", "coverage_factor_bw", "--metric",
                "fshealth_ost_most_full_pct", "--metric", "jobsdb_concurrent_jobs", home=home, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = {x["metric"]: x for x in json.loads(r.stdout)}
    ref = _reference(csv)
    for metric, col in (("coverage_factor_bw", "cf"), ("fshealth_ost_most_full_pct", metric := "fshealth_ost_most_full_pct"),
                        ("jobsdb_concurrent_jobs", "jobsdb_concurrent_jobs")):
        d = ref[["fop", col]].dropna()
        rr, pp = stats.pearsonr(d["fop"], d[col])
        assert rows[metric]["n"] == len(d)
        assert rows[metric]["r"] == pytest.approx(rr, rel=1e-9) and rows[metric]["p"] == pytest.approx(pp, rel=1e-6, abs=1e-300)
    assert rows["coverage_factor_bw"]["r"] > 0.3 and rows["coverage_factor_bw"]["strength"] == "strong"
    assert rows["fshealth_ost_most_full_pct"]["r"] < 0 and rows["fshealth_ost_most_full_pct"]["strength"] == "strong"
    # the paper: "no meaningful correlation" with concurrent jobs; with 7,408 jobs p is small, |r| is not
    assert abs(rows["jobsdb_concurrent_jobs"]["r"]) < 0.1 and rows["jobsdb_concurrent_jobs"]["magnitude"] == "negligible"


def test_umami_of_a_feature_job(abc):
    home, _, _ = abc
    r = run_cli("umami", "7214591", "--motif", "ior_fpp_write", "--json", home=home, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["motif"] == "ior_fpp_write on scratch3@edison" and doc["history_jobs"] >= 10
    assert doc["metrics"][0]["metric"] == "darshan_normalized_perf_by_max"
    r = run_cli("umami", "7214591", home=home, timeout=300)  # several benchmarks in one job: ask which
    assert r.returncode == 2 and "give --motif" in r.stderr and r.stderr.count("\n") == 1


def test_bad_files(tmp_path, home):
    bad = tmp_path / "edison-summaries_x.csv"
    bad.write_text("a,b\n1,2\n")
    r = run_cli("import", "job-features", str(bad), "--preset", "tokio-abc", home=home)
    assert r.returncode != 0 and "not a tokio-abc summary" in r.stderr and r.stderr.count("\n") == 1
    r = run_cli("import", "job-features", str(tmp_path / "none.csv"), "--preset", "tokio-abc", home=home)
    assert r.returncode != 0 and "no such file" in r.stderr and r.stderr.count("\n") == 1
    r = run_cli("correlations", home=home)
    assert r.returncode != 0 and "no jobs" in r.stderr and r.stderr.count("\n") == 1
