"""Scaling models (perflake.analytics.pmnf / models): a generated scaling study whose call paths follow known laws
is modelled by perflake and by the real Extra-P (``extrap`` 4.2.5 in .extrap-venv, tests/extrap_models.py), and
the two must agree on every call path: the same hypothesis, coefficients, SMAPE, adjusted R^2 and RSS.

Deviation from Extra-P, documented in pmnf.fit: the constant model's ``re`` is the mean relative error over the
points; Extra-P's ConstantHypothesis keeps the relative error of the last point with a non-zero value only (it
overwrites ``_RE`` in its loop), so ``re`` of constant models is not compared.
"""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import extrap_models
from perflake import Lake
from perflake.analytics import pmnf
from perflake.analytics.models import ranked, scaling_models
from perflake.cli import main
from perflake.errors import UsageError
from perflake.generators import write_caliper_json_runs

POINTS = [2, 4, 8, 16, 32, 64, 128]
REPS = 3
NOISE = 0.002
# (c0, c1, poly, log): the law of node k is LAWS[k % len(LAWS)], c0 and c1 scaled by (1 + k // len(LAWS))
LAWS = [(3.0, 0.5, 1, 1), (2.0, 0.01, 2, 0), (5.0, 1.5, Fraction(1, 2), 0), (4.0, 0.0, 0, 0), (1.0, 2.0, 0, 1),
        (0.5, 0.2, 1, 0), (6.0, 0.05, Fraction(3, 2), 0)]


def law_of(k: int) -> tuple[float, float, Fraction, int]:
    c0, c1, poly, log = LAWS[k % len(LAWS)]
    s = 1 + k // len(LAWS)
    return c0 * s, c1 * s, Fraction(poly), log


def need_extrap():
    if not extrap_models.EXTRAP_PYTHON.exists():
        msg = f"{extrap_models.EXTRAP_PYTHON} not found (bench/setup_extrap_venv.sh creates it): no real Extra-P"
        if os.environ.get("PERFLAKE_REQUIRE_SHARED") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


def write_study(out, *, nodes: int = 14, ranks: int = 2, seed: int = 3) -> list:
    """Caliper json-split runs (the generator's files, one call tree) at each p of POINTS (``jobsize`` = p, so the
    catalog's nprocs is p) x REPS repetitions, the exclusive time of node k on every rank following law_of(k)
    with relative noise NOISE; inclusive times recomputed from the tree.  The time outside every region is 1 s."""
    rng = np.random.default_rng(seed)
    paths = []
    for p in POINTS:
        for rep in range(REPS):
            (path,) = write_caliper_json_runs(out / f"p{p}-r{rep}", nodes=nodes, ranks=ranks, runs=1, seed=seed)
            doc = json.loads(path.read_text())
            parent = [n.get("parent", -1) for n in doc["nodes"]]
            exc = np.empty((len(parent), ranks))
            for k in range(len(parent)):
                c0, c1, poly, log = law_of(k)
                exc[k] = (c0 + c1 * p ** float(poly) * math.log2(p) ** log) * (1 + NOISE * rng.standard_normal(ranks))
            exc = np.round(exc, 6)
            inc = exc.copy()
            for k in range(len(parent) - 1, 0, -1):  # the nodes are in pre-order: children after parents
                inc[parent[k]] += inc[k]
            data = []
            for row in doc["data"]:
                node, rank = row[3], int(row[1])
                data.append([1.0, rank, 1.0, None] if node is None else [inc[node, rank], rank, exc[node, rank], node])
            doc["data"] = data
            doc["jobsize"] = doc["mpi.world.size"] = str(p)
            doc["problem_size"] = str(p * p)  # a metadata key: the laws in q = p^2 are the laws in p with i / 2
            path.write_text(json.dumps(doc))
            paths.append(path)
    return paths


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaling")
    lake = Lake(root / "lake")
    report = lake.ingest(write_study(root / "gen"))
    assert len(report.ingested) == len(POINTS) * REPS
    return lake


def per_run_values(lake, metric="time") -> pd.DataFrame:
    """node_id, name, nprocs, run_id, value: the per-run value (mean over ranks), from the metrics table."""
    return lake.sql(f"""select m.node_id, n.name, r.nprocs, m.run_id, avg(m."{metric}") as value
                        from metrics m join runs r using (run_id) join nodes n using (run_id, node_id)
                        where m.rank >= 0 and m."{metric}" is not null
                        group by all order by m.node_id, r.nprocs, m.run_id""")


def test_known_laws_are_recovered(study):
    m = study.model(by="nprocs", metric="time", predict=4096)
    t = m.table
    assert m.key == "nprocs" and m.metric == "time" and list(m.values().columns) == POINTS
    source = study.sql("select source from runs limit 1")["source"][0]
    nodes = json.loads(open(source).read())["nodes"]
    paths = []  # call path of node k of the generator
    for n in nodes:
        paths.append((*paths[n["parent"]], n["label"]) if "parent" in n else (n["label"],))
    laws = {}
    for node_id, row in t.iterrows():
        if tuple(row["path"]) not in paths:  # the time outside every region (a constant 1 s)
            continue
        c0, c1, poly, log = laws[node_id] = law_of(paths.index(tuple(row["path"])))
        if c1 == 0:
            assert row["c1"] == 0 and row["poly"] == 0 and row["log"] == 0, row["model"]
            assert row["c0"] == pytest.approx(c0, rel=0.01)
            continue
        assert (Fraction(row["poly"]), row["log"]) == (poly, log), (row["name"], row["model"])
        assert row["c1"] == pytest.approx(c1, rel=0.02) and row["c0"] == pytest.approx(c0, rel=0.1, abs=0.05)
        truth = c0 + c1 * 4096 ** float(poly) * 12.0 ** log
        assert row["predicted"] == pytest.approx(truth, rel=0.02)
        assert row["smape"] < 1.0 and row["ar2"] > 0.999 and row["points"] == len(POINTS)
    assert len(laws) == len(paths)
    assert (m.predict(4096) == t["predicted"]).all()
    assert t.loc[[i for i, law in laws.items() if law == law_of(0)][0], "model"].endswith(
        "* p^(1) * log2(p)^(1)".replace("p", "nprocs"))
    # ranked: most expensive at the prediction first
    r = ranked(m, top=3)
    assert list(r["predicted"]) == sorted(t["predicted"].dropna(), reverse=True)[:3]


def test_models_equal_extrap_on_the_study(study):
    """The same per-run values go to Extra-P (its repetitions; it takes their mean) and to perflake (the mean
    over the runs of each point, from DuckDB): every model, coefficient and quality measure agrees."""
    need_extrap()
    values = per_run_values(study)
    rows = {str(node): [list(g.loc[g["nprocs"] == p, "value"]) for p in POINTS]
            for node, g in values.groupby("node_id")}
    ref = extrap_models.run(POINTS, rows)
    t = study.model(by="nprocs", metric="time").table
    assert set(ref) == {str(i) for i in t.index}
    for node_id, got in t.iterrows():
        want = ref[str(node_id)]
        assert (got["poly"], got["log"]) == (want["poly"], want["log"]), (got["model"], want["model"])
        for col in ("c0", "c1", "smape", "ar2", "rss"):
            assert got[col] == pytest.approx(want[col], rel=1e-9, abs=1e-12), (col, got["model"], want)
        if not want["constant"]:
            assert got["re"] == pytest.approx(want["re"], rel=1e-9, abs=1e-12)


def _varied_rows(rng, n_rows=60, negative=False):
    x = np.array([4, 8, 16, 32, 64, 128, 256.0])
    laws = [lambda p: 3 + 0.5 * p * np.log2(p), lambda p: 2 + 0.01 * p**2, lambda p: 5 + 1.5 * p**0.5,
            lambda p: 4 + 0 * p, lambda p: 1 + 2 * np.log2(p), lambda p: 0 * p, lambda p: 7 - 0.001 * p,
            lambda p: 50 / p + 1, lambda p: 20 / np.log2(p) + 0.5 * p**0.25]
    rows, means = {}, []
    for k in range(n_rows):
        noise = [0.0, 0.001, 0.03, 0.2][k % 4]
        reps = [list(laws[k % len(laws)](p) * (1 + noise * rng.standard_normal(3))) for p in x]
        if k % 7 == 3:
            reps[k % len(x)] = []  # a point where the call path was not measured
        rows[f"r{k}"] = reps
        means.append([float(np.mean(r)) if r else np.nan for r in reps])
    return x, rows, pd.DataFrame(means, index=list(rows))


@pytest.mark.parametrize("negative", [False, True])
def test_fitter_equals_extrap_on_varied_rows(negative):
    """Exact laws, noise up to 20%, zeros, constants, falling curves, a missing point: Extra-P's Basic modeler
    (default exponents, and with its 'negative exponents' option) and pmnf.fit choose the same models."""
    need_extrap()
    x, rows, means = _varied_rows(np.random.default_rng(11), negative=negative)
    ref = extrap_models.run(x, rows, negative=negative)
    got = pmnf.fit(x, means, negative=negative)
    chosen = set()
    for name, want in ref.items():
        g = got.loc[name]
        assert (g["poly"], g["log"]) == (want["poly"], want["log"]), (name, g["model"], want["model"])
        for col in ("c0", "c1", "smape", "ar2", "rss"):
            assert g[col] == pytest.approx(want[col], rel=1e-9, abs=1e-12), (name, col, g["model"], want)
        chosen.add((g["poly"], g["log"]))
    assert len(chosen) >= 6  # the rows exercise many hypotheses, not one
    assert negative == any(p < 0 or j < 0 for p, j in chosen)


def test_exact_law_gives_exact_coefficients():
    x = np.array([2, 4, 8, 16, 32.0])
    y = 3 + 0.5 * x * np.log2(x)
    got = pmnf.fit(x, [y, np.full(5, 2.5)], key="n")
    assert (got.loc[0, "poly"], got.loc[0, "log"]) == (1.0, 1.0)
    assert got.loc[0, "c0"] == pytest.approx(3, rel=1e-12) and got.loc[0, "c1"] == pytest.approx(0.5, rel=1e-12)
    assert got.loc[0, "smape"] < 1e-10 and got.loc[0, "model"] == "3 + 0.5 * n^(1) * log2(n)^(1)"
    assert got.loc[1, "model"] == "2.5" and got.loc[1, "c1"] == 0 and got.loc[1, "ar2"] == 1
    assert pmnf.evaluate(got["c0"], got["c1"], got["poly"], got["log"], 1024) == pytest.approx(
        [3 + 0.5 * 1024 * 10, 2.5])


def test_points_below_one_drop_log_terms_and_few_points_give_no_model():
    x = np.array([0.5, 1, 2, 4, 8])
    got = pmnf.fit(x, [1 + 2 * x, [1, 2, np.nan, np.nan, np.nan]])
    assert got.loc[0, "log"] == 0 and got.loc[0, "poly"] == 1
    assert got.loc[1, "points"] == 2 and pd.isna(got.loc[1, "model"]) and np.isnan(got.loc[1, "c0"])
    with pytest.raises(ValueError, match="positive"):
        pmnf.fit([0, 1, 2], [[1, 2, 3]])
    with pytest.raises(ValueError, match="distinct"):
        pmnf.fit([1, 1, 2], [[1, 2, 3]])


def test_lake_errors(study):
    with pytest.raises(UsageError, match="positive number"):
        study.model(by="nprocs", metric="time", predict=-1)
    with pytest.raises(UsageError, match="at least 3"):
        scaling_models(study, "nprocs", "time", where="nprocs <= 4")
    with pytest.raises(UsageError, match="numeric"):
        scaling_models(study, "meta:cluster", "time")


def test_cli_model_table_json_and_plot(study, tmp_path, capsys):
    root = str(study.root)
    assert main(["model", "--lake", root, "--by", "nprocs", "--metric", "time", "--predict", "4096",
                 "--format", "json", "--top", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    t = study.model(by="nprocs", metric="time", predict=4096).table
    assert [r["predicted"] for r in rows] == pytest.approx(sorted(t["predicted"].dropna(), reverse=True)[:3], rel=1e-12)
    assert {"name", "path", "model", "smape", "ar2", "points", "predicted"} <= set(rows[0])
    assert main(["model", "--lake", root, "--metric", "time", "-o", str(tmp_path / "m.svg"), "--top", "4"]) == 0
    svg = (tmp_path / "m.svg").read_text()
    assert "nprocs" in svg and "log2" in svg
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["model", "--lake", root, "--metric", "time", "--predict", "zero"])
    assert exc.value.code == 2 and "'zero': expected a number" in capsys.readouterr().err
    assert main(["model", "--lake", root, "--metric", "time", "--predict", "0"]) == 2
    assert "positive number" in capsys.readouterr().err


def test_plot_models_draws_points_and_models(study):
    from perflake.errors import PlotError
    from perflake.plots import plot_models

    m = study.model(by="nprocs", metric="time", predict=1024)
    plot = plot_models(m, top=3)
    assert list(plot.data.index) == list(ranked(m, top=3).index)
    lines = {line.get_gid(): line for line in plot.axes.get_lines()}
    for node_id, row in plot.data.iterrows():
        xs, ys = lines[f"points {node_id}"].get_data()
        assert list(xs) == POINTS and np.allclose(ys, m.points.loc[node_id, POINTS].to_numpy(float), equal_nan=True)
        gx, gy = lines[f"model {node_id}"].get_data()
        assert gx.max() == max(POINTS)
        assert np.allclose(gy, [pmnf.evaluate(row["c0"], row["c1"], row["poly"], row["log"], g) for g in gx])
        assert lines[f"extrapolation {node_id}"].get_data()[0].max() == 1024
        assert lines[f"prediction {node_id}"].get_data()[1][0] == pytest.approx(row["predicted"])
    with pytest.raises(PlotError, match="ScalingModels"):
        plot_models(m.table)


def test_a_metadata_key(study):
    """By meta:problem_size (q = p^2, text in the metadata): the same points, so the same coefficients, with the
    polynomial exponents halved where the model has no log term (log2(q) = 2 log2(p) rescales c1)."""
    by_p = study.model(by="nprocs", metric="time").table
    by_q = study.model(by="meta:problem_size", metric="time", predict=4096**2)
    assert by_q.key == "meta:problem_size" and list(by_q.values().columns) == [p * p for p in POINTS]
    t = by_q.table
    pure = (by_p["log"] == 0) & (by_p["poly"] > 0)
    assert pure.sum() >= 5
    assert (t.loc[pure, "poly"] * 2 == by_p.loc[pure, "poly"]).all()
    assert np.allclose(t.loc[pure, "c1"], by_p.loc[pure, "c1"], rtol=1e-6)
    assert t.loc[pure, "model"].str.contains(r"problem_size\^").all()
