"""Metric names are data (issue 22, item 4): metrics whose names differ only in case (gprof2dot's ``calls``, TAU's
``Calls``) or collide under NFKC casefolding all ingest, into one lake, in one ingest or several, in any order,
and stay distinct everywhere they are read.  The rule: catalogs/metric_columns.py."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from conftest import DATA, _missing
from perflake import Lake
from perflake.catalogs import metric_columns as mc
from perflake.cli.app import main
from perflake.ingest.driver import find_runs

ROOT = Path(__file__).resolve().parents[1]
GPROF, TAU = "gprof2dot-cpi", "tau-cpi-mpi"


def _sha8(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:8]


# -- the rule itself ----------------------------------------------------------------------------------------------

_LOOKS = f"calls~{_sha8('calls')}"  # exactly the encoded column of `calls`
AWKWARD = ["calls", "Calls", "CALLS", "ﬁle", "FILE", "Straße", "STRASSE", "time (inc)", "x~1234abcd", "x~", "~", "",
           "a~b~c", _LOOKS, f"Calls~{_sha8('calls')}", f"calls~{_sha8('calls').upper()}",
           f"calls~{hashlib.sha256(b'calls').hexdigest()}", f"{_LOOKS}~{_sha8(_LOOKS)}", "rank", "RANK", "Thread",
           "node_id", "run_id", "batch", "ünïcødé~", "日本語"]


def test_decode_inverts_every_column_assign_gives():
    existing = ["run_id", "batch", "node_id", "rank", "thread"]
    for name in AWKWARD:
        cols = mc.assign([name], existing)
        assert mc.decode(cols[name]) == name, name
        existing.append(cols[name])
    keys = [mc.key(c) for c in existing]
    assert len(keys) == len(set(keys))  # no two columns collide under the normalisation
    assert mc.assign(AWKWARD, existing) == {n: c for n, c in zip(AWKWARD, existing[5:])}  # names keep their columns


def test_assign_in_one_batch_is_deterministic_and_collision_free():
    a = mc.assign(AWKWARD, ["run_id", "batch", "node_id", "rank", "thread"])
    b = mc.assign(list(reversed(AWKWARD)), ["run_id", "batch", "node_id", "rank", "thread"])
    assert a == b
    assert len({mc.key(c) for c in a.values()} | {"run_id", "batch", "node_id", "rank", "thread"}) == len(a) + 5
    assert all(mc.decode(c) == n for n, c in a.items())
    assert a["x~1234abcd"] == "x~1234abcd"  # not its hash: a plain name, read as itself
    looks = f"calls~{_sha8('calls')}"
    assert a[looks] == f"{looks}~{_sha8(looks)}" and mc.decode(looks) == "calls"


def test_the_sql_files_apply_the_rule_verbatim_and_agree_with_python():
    flat = " ".join(mc.SQL_DECODE.split())
    assert flat in " ".join((ROOT / "sql" / "macros" / "lake_metric_name.sql").read_text().split())
    for name in ("run_metrics", "ensemble_frame_values", "ensemble_values", "imbalance_scan", "lake_query_means",
                 "lake_query_rows"):
        assert "lake_metric_name(c)" in (ROOT / "sql" / f"{name}.sql").read_text(), name
    columns = [c for n in AWKWARD for c in (n, *mc.candidates(n, ())) if c]
    con = duckdb.connect()
    got = con.execute(f"select c, {mc.SQL_DECODE} from unnest($cols) as t(c)", {"cols": columns}).fetchall()
    assert [(c, mc.decode(c)) for c in columns] == got


# -- generated profiles (Hatchet JSON: any metric names) ------------------------------------------------------------

NODES = ["main", "solve", "MPI_Allreduce", "io"]
PARENTS = [None, 0, 1, 0]


def value(metric: str, node: int, rank: int, seed: int) -> float:
    """A value distinct for every metric name, node, rank and profile."""
    return float(int(hashlib.sha256(f"{metric}|{seed}".encode()).hexdigest()[:6], 16) + 100 * node + rank)


def write_profile(path: Path, metrics: list[str], *, ranks: int = 2, seed: int = 0) -> Path:
    graph = [{str(i): {"data": {"name": n, "type": "function"},
                       "children": [j for j, p in enumerate(PARENTS) if p == i]} for i, n in enumerate(NODES)}]
    rows = [{"node": i, "rank": r, "name": n, **{m: value(m, i, r, seed) for m in metrics}}
            for i, n in enumerate(NODES) for r in range(ranks)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"graph": graph, "dataframe_indices": ["node", "rank"], "dataframe": rows,
                                "exclusive_metrics": metrics, "inclusive_metrics": []}))
    return path


def check_run(lake: Lake, source: Path, metrics: list[str], seed: int, ranks: int = 2) -> None:
    """Every way a run's metric is read gives the values written (exclusive) and their sums (inclusive)."""
    runs = lake.runs()
    row = runs[runs["source"] == str(source)].iloc[0]
    rid = row["run_id"]
    assert set(metrics) <= set(row["exc_metrics"])  # the catalog's metric list: the real names
    assert {f"{m} (inc)" for m in metrics} <= set(row["inc_metrics"])
    df = lake.graphframe(rid).dataframe
    for m in metrics:
        for i, n in enumerate(NODES):
            got = df[df["name"] == n]
            want = [value(m, i, r, seed) for r in range(ranks)]
            assert got[m].tolist() == want, (m, n)
            below = [j for j in range(len(NODES)) if _under(j, i)]
            assert got[f"{m} (inc)"].tolist() == [sum(value(m, j, r, seed) for j in below) for r in range(ranks)]
    ens = lake.ensemble(runs=[rid], metric=metrics, stats=("mean",))
    for m in metrics:
        means = ens[ens["metric"] == m].set_index("name")["mean"]
        for i, n in enumerate(NODES):
            assert means[n] == pytest.approx(np.mean([value(m, i, r, seed) for r in range(ranks)])), (m, n)
    frame = lake.ensemble_of(runs=[rid], metric=metrics).dataframe
    for m in metrics:
        assert sorted(frame[m].dropna()) == pytest.approx(
            sorted(np.mean([value(m, i, r, seed) for r in range(ranks)]) for i in range(len(NODES))))
    imb = lake.imbalance([rid], metric=metrics, source="rows")
    for m in metrics:
        top = imb[(imb["metric"] == m) & (imb["name"] == "MPI_Allreduce")].iloc[0]
        assert top["max"] == value(m, 2, ranks - 1, seed)
    for m in metrics:  # a lake-wide query's condition on the metric, on per-node means and row by row
        cut = value(m, 3, 0, seed)  # only io (node 3) reaches it
        for mode in ("mean", "any"):
            found = lake.query(f'MATCH (".", p) WHERE p."{m}" >= {cut}', runs=[rid], multi_index_mode=mode)
            assert found["name"].tolist() == ["io"], (m, mode)
    gf = lake.graphframe(rid)  # inclusive columns recomputed from the exclusive ones (ops/inclusive.py)
    for m in metrics:
        gf.dataframe[f"{m} (inc)"] = np.nan
    gf.update_inclusive_columns()
    for m in metrics:
        for i, n in enumerate(NODES):
            below = [j for j in range(len(NODES)) if _under(j, i)]
            got = gf.dataframe[gf.dataframe["name"] == n][f"{m} (inc)"].tolist()
            assert got == [sum(value(m, j, r, seed) for j in below) for r in range(ranks)], (m, n)
    summary = lake.sql(f"select metric, sum(total) as t from rank_summary where run_id = '{rid}' group by metric")
    totals = dict(zip(summary["metric"], summary["t"]))
    for m in metrics:
        assert totals[m] == sum(value(m, i, r, seed) for i in range(len(NODES)) for r in range(ranks))


def _under(j: int, i: int) -> bool:
    while j is not None:
        if j == i:
            return True
        j = PARENTS[j]
    return False


def metric_columns_of(lake: Lake) -> list[str]:
    return [c for c in lake.catalog().tables.schema("metrics").names if c not in mc.KEY_COLUMNS]


def test_case_variants_in_one_batch(tmp_path):
    lake = Lake(tmp_path / "lake")
    a = write_profile(tmp_path / "in" / "a.json", ["calls", "Calls", "CALLS", "time"], seed=1)
    b = write_profile(tmp_path / "in" / "b.json", ["Calls", "time"], seed=2)
    c = write_profile(tmp_path / "in" / "c.json", ["CALLS", "ﬁle", "FILE"], seed=3)
    report = lake.ingest([tmp_path / "in"])
    assert len(report.ingested) == 3 and report.failed == []
    check_run(lake, a, ["calls", "Calls", "CALLS", "time"], 1)
    check_run(lake, b, ["Calls", "time"], 2)
    check_run(lake, c, ["CALLS", "ﬁle", "FILE"], 3)
    gf = lake.graphframe(lake.runs().set_index("source").loc[str(a), "run_id"])
    twice, diff = gf + gf, gf - gf  # GraphFrame arithmetic (DuckDB inside) keeps the three apart
    for m in ("calls", "Calls", "CALLS"):
        assert (twice.dataframe[m] == 2 * gf.dataframe[m]).all() and (diff.dataframe[m] == 0).all()
    cols = metric_columns_of(lake)
    assert len({mc.key(x) for x in cols}) == len(cols)
    assert {mc.decode(x) for x in cols} >= {"calls", "Calls", "CALLS", "ﬁle", "FILE", "calls (inc)"}


@pytest.mark.parametrize("order", [["calls", "Calls", "CALLS"], ["CALLS", "calls", "Calls"]])
def test_case_variants_across_batches_in_any_order(tmp_path, order):
    lake = Lake(tmp_path / "lake")
    paths = {}
    for seed, m in enumerate(order):
        paths[m] = write_profile(tmp_path / m / "p.json", [m, "time"], seed=seed)
        assert main(["ingest", str(paths[m]), "--lake", str(tmp_path / "lake"), "--quiet"]) == 0
    both = write_profile(tmp_path / "both" / "p.json", ["calls", "CALLS"], seed=9)  # names the lake has, again
    assert main(["ingest", str(both), "--lake", str(tmp_path / "lake"), "--quiet"]) == 0
    for seed, m in enumerate(order):
        check_run(lake, paths[m], [m, "time"], seed)
    check_run(lake, both, ["calls", "CALLS"], 9)
    plain = [c for c in metric_columns_of(lake) if c in ("calls", "Calls", "CALLS")]
    assert plain == [order[0]]  # the first to reach the lake keeps its name; the others are encoded
    assert len(lake.runs()) == 4


def test_a_concurrent_ingest_that_added_a_colliding_column_first(tmp_path, monkeypatch):
    """The mapping is made against a schema read before another ingest's ``Calls`` column was committed: delta-rs
    refuses ``calls`` beside it, and the append is re-mapped against the schema read again and retried."""
    lake = Lake(tmp_path / "lake")
    first = write_profile(tmp_path / "a" / "p.json", ["Calls"], seed=1)
    lake.ingest(first)
    tables = lake.catalog().tables
    stale = tables.schema("metrics")
    stale = stale.remove(stale.get_field_index("Calls"))
    real, calls = tables.schema, []

    def schema(name):
        calls.append(name)
        return stale if name == "metrics" and calls.count("metrics") == 1 else real(name)

    import perflake.catalogs.delta as delta

    monkeypatch.setattr(delta.DeltaTables, "schema", lambda self, name: schema(name))
    second = write_profile(tmp_path / "b" / "p.json", ["calls"], seed=2)
    report = lake.ingest(second, scheduler="synchronous")
    assert len(report.ingested) == 1 and calls.count("metrics") >= 3  # stale, re-read after the failure, used
    monkeypatch.undo()
    check_run(lake, first, ["Calls"], 1)
    check_run(lake, second, ["calls"], 2)
    assert f"calls~{_sha8('calls')}" in metric_columns_of(lake)


def test_concurrent_ingests_of_colliding_names(tmp_path):
    """Two ingests at once into a new lake, one bringing ``calls``, the other ``Calls``: both succeed, whichever
    schema merge comes second (re-mapped and retried if it collided)."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path / "lake"
    paths = [write_profile(tmp_path / m / "p.json", [m], seed=s) for s, m in enumerate(("calls", "Calls"))]
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda p: Lake(root).ingest(p, scheduler="synchronous"), paths))
    assert [len(r.ingested) for r in reports] == [1, 1]
    lake = Lake(root)
    for seed, (path, m) in enumerate(zip(paths, ("calls", "Calls"))):
        check_run(lake, path, [m], seed)


def test_metrics_literally_named_like_encoded_columns(tmp_path):
    lake = Lake(tmp_path / "lake")
    looks = f"calls~{_sha8('calls')}"  # exactly the encoded column of `calls`
    upper = f"CALLS~{_sha8('calls')}"  # a plain name whose key is that column's
    names = [["Calls"], [upper, "x~1234abcd"], ["calls", looks], ["CALLS"]]
    paths = []
    for seed, ms in enumerate(names):
        paths.append(write_profile(tmp_path / f"p{seed}" / "p.json", ms, seed=seed))
        assert main(["ingest", str(paths[-1]), "--lake", str(tmp_path / "lake"), "--quiet"]) == 0
    for seed, ms in enumerate(names):
        check_run(lake, paths[seed], ms, seed)
    cols = metric_columns_of(lake)
    assert "x~1234abcd" in cols and upper in cols  # plain: their suffix is not their own hash
    assert f"calls~{hashlib.sha256(b'calls').hexdigest()}" in cols  # `calls`: short form taken, the full hash
    assert f"{looks}~{_sha8(looks)}" in cols
    assert len({mc.key(c) for c in cols}) == len(cols)


def test_a_name_that_got_two_columns_is_read_from_both(tmp_path):
    """Two concurrent ingests bringing names that collide only under NFKC casefolding (which delta-rs does not
    check) may each add a column for one name; readers coalesce them (each run's rows use one)."""
    lake = Lake(tmp_path / "lake")
    a = write_profile(tmp_path / "a" / "p.json", ["ss"], seed=1)
    lake.ingest(a)
    import perflake.ingest.task as task

    real = mc.assign

    def stale(names, existing=(), **kw):  # read before `ss` was committed, after a concurrent `ß`
        return real(names, [*(c for c in existing if not c.startswith("ss")), "ß"], **kw)

    task.metric_columns.assign = stale
    try:
        b = write_profile(tmp_path / "b" / "p.json", ["ss"], seed=2)
        lake.ingest(b)
    finally:
        task.metric_columns.assign = real
    assert {"ss", f"ss~{_sha8('ss')}"} <= set(metric_columns_of(lake))
    check_run(lake, a, ["ss"], 1)
    check_run(lake, b, ["ss"], 2)
    ens = lake.ensemble(metric="ss", stats=("count",))
    assert set(ens["count"]) == {2}


# -- every shipped dataset in one lake, in several orders ----------------------------------------------------------

def _datasets() -> list[Path]:
    if not DATA.exists():
        _missing(f"shared test data not found: {DATA} (set PERFLAKE_TEST_DATA)")
    found = sorted(p for p in DATA.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not {GPROF, TAU} <= {p.name for p in found}:
        _missing(f"{DATA} lacks {GPROF} or {TAU}")
    return found


def _values(lake: Lake, rid: str) -> pd.DataFrame:
    """A run's GraphFrame as plain values: call-path id and location in place of Node objects."""
    df = lake.graphframe(rid).dataframe.reset_index()
    df["node"] = [n.node_id for n in df["node"]]
    return df.sort_values([c for c in ("node", "rank", "thread") if c in df.columns]).reset_index(drop=True)


def _ingest_cli(lake: Path, path: Path, capsys) -> dict:
    code = main(["ingest", str(path), "--lake", str(lake), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """The gprof2dot and TAU datasets, each in a lake holding that dataset only: {name: (lake, run ids)}."""
    root = tmp_path_factory.mktemp("alone")
    out = {}
    for name in (GPROF, TAU):
        lake = Lake(root / name)
        lake.ingest(DATA / name)
        out[name] = (lake, list(lake.runs()["run_id"]))
    return out


def _orders(datasets: list[Path]) -> dict[str, list[Path]]:
    by = {p.name: p for p in datasets}
    rest = [n for n in by if n not in (GPROF, TAU)]
    random.Random(22).shuffle(rest)
    return {"forward": datasets, "reverse": datasets[::-1],
            "tau-then-gprof-first": [by[TAU], by[GPROF], *(by[n] for n in rest)]}


def _tree(lake: Path, rid: str, metric: str, capsys) -> str:
    assert main(["tree", rid, "--lake", str(lake), "--metric", metric, "--no-header", "--no-color"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("order", ["forward", "reverse", "tau-then-gprof-first"])
def test_every_dataset_into_one_lake(tmp_path, order, references, capsys):
    """One `perflake ingest` per shipped dataset into one lake: each exits 0, every run is there, and the runs of
    gprof2dot (metric calls) and TAU (metric Calls) read as they do from a lake holding only their dataset."""
    datasets = _orders(_datasets())[order]
    root = tmp_path / "lake"
    expected = 0
    for path in datasets:
        runs, problems = find_runs([path])
        assert problems == []
        summary = _ingest_cli(root, path, capsys)
        assert summary["failed"] == [] and len(summary["ingested"]) == len(runs), (path.name, summary)
        expected += len(runs)
    lake = Lake(root)
    runs = lake.runs()
    assert len(runs) == expected == runs["run_id"].nunique()
    metrics = {r["run_id"]: [m["name"] for m in r["metrics"]] for _, r in runs.iterrows()}
    for name, metric in ((GPROF, "calls"), (TAU, "Calls")):
        alone, rids = references[name]
        for rid in rids:
            assert metrics[rid] == [m["name"] for m in alone.runs().set_index("run_id").loc[rid, "metrics"]]
            assert metric in metrics[rid]
            want = _values(alone, rid)
            pd.testing.assert_frame_equal(_values(lake, rid)[want.columns], want, obj=f"{name} {rid}")
            assert _tree(root, rid, metric, capsys) == _tree(Path(alone.root), rid, metric, capsys)
            pd.testing.assert_frame_equal(lake.ensemble(runs=[rid], metric=metric, stats=("mean", "max")),
                                          alone.ensemble(runs=[rid], metric=metric, stats=("mean", "max")))
    gprof, tau = references[GPROF][1][0], references[TAU][1][0]
    both = lake.ensemble(runs=[gprof, tau], metric=["calls", "Calls"], stats=("count",))
    assert set(both["metric"]) == {"calls", "Calls"} and set(both["count"]) == {1}  # one run has each
    assert _ingest_cli(root, DATA, capsys)["failed"] == []  # and the lake takes later ingests: all present


def test_the_reported_commands(tmp_path):
    """The issue's reproduction, as a user types it: the second ingest exits 0 and a third finds both present."""
    if not (DATA / GPROF).exists() or not (DATA / TAU).exists():
        _missing(f"shared test data not found under {DATA}")
    lake = tmp_path / "L"
    for name in (GPROF, TAU, None):
        path = DATA / name if name else DATA / GPROF
        proc = subprocess.run([sys.executable, "-m", "perflake.cli.app", "ingest", str(path), "--lake", str(lake)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "ingested 0 runs, skipped 1 already present, 0 failed"
    log = Lake(lake).sql("select status, count(*) as n from ingest_log group by status")
    assert dict(zip(log["status"], log["n"])) == {"ingested": 2}  # both attempts logged (an unchanged input is not)
