"""Lakes for the rank-summary tests and the answers of every per-rank question on them.

``build_mixed`` ingests, in four batches, the shapes a per-rank question meets: TAU runs of 3 ranks x 2 threads
(two metrics), sparse Caliper json-split runs (call paths absent on some ranks, values tied between ranks),
HPCToolkit v4 runs with their summary profile at rank -1 and two threads per rank (and metric columns that are
NULL at every location), and TAU runs of one location (1 rank x 1 thread).  ``add_nan`` rewrites a lake's metrics
files with NaN and NULL values drawn in.  ``answers`` asks imbalance (several settings), ensemble, compare,
regress and changes, with the public functions only, so that the same code runs on any perflake since schema 3:
tests/data/lake-schema3/ holds a lake written by perflake of schema 3 and the answers it gave
(``python tests/rank_lakes.py OUT`` with that perflake on the path writes them; see its README).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from perflake import Lake
from perflake.analytics.changes import changes
from perflake.analytics.compare import compare
from perflake.analytics.ensemble import ensemble
from perflake.analytics.imbalance import imbalance
from perflake.analytics.regress import regress
from perflake.generators import write_caliper_json_runs, write_hpctoolkit_v4_runs, write_tau_runs

IMBALANCE = {  # name -> settings of imbalance()
    "default": dict(metric=["time", "time (inc)"]),
    "zero-ddof0-k8": dict(metric="time", absent="zero", ddof=0, k=8),
    "max-share": dict(metric=["time", "time (inc)"], by="max", min_share=0.01, k=1),
    "time-top": dict(metric="time (inc)", by="time", top=7, k=5, ddof=2),
    "std-zero": dict(metric="time", by="std", absent="zero", k=2),
}
STATS = ("count", "mean", "median", "std", "var", "min", "max", "p10", "p90")


def sparse_caliper(root, *, nodes: int, ranks: int, runs: int, seed: int, drop: float, levels: bool) -> list[Path]:
    """Caliper json-split runs with rows dropped (call paths absent on some ranks, never on rank 0) and, with
    ``levels``, the exclusive values drawn from three levels (ties between ranks)."""
    rng = np.random.default_rng(seed)
    paths = write_caliper_json_runs(root, nodes=nodes, ranks=ranks, runs=runs, seed=seed)
    for path in paths:
        doc = json.loads(path.read_text())
        col = {c: i for i, c in enumerate(doc["columns"])}
        kept = [row for row in doc["data"] if row[col["mpi.rank"]] == 0 or rng.random() >= drop]
        if levels:
            for row in kept:
                row[col["sum#time.duration"]] = float(rng.choice([0.25, 0.5, 1.0]))
        doc["data"] = kept
        path.write_text(json.dumps(doc))
    return paths


def build_mixed(root) -> Lake:
    """The four batches of the module docstring in ``root/lake`` (inputs under ``root/in``)."""
    root = Path(root)
    lake = Lake(root / "lake")
    batches = [
        write_tau_runs(root / "in" / "tau", nodes=12, ranks=3, threads=2, runs=4, seed=21, metrics=("TIME", "PAPI_L1")),
        sparse_caliper(root / "in" / "cali", nodes=12, ranks=5, runs=3, seed=22, drop=0.3, levels=True),
        write_hpctoolkit_v4_runs(root / "in" / "hpc", nodes=10, ranks=2, threads=2, runs=2, seed=23),
        write_tau_runs(root / "in" / "one", nodes=8, ranks=1, threads=1, runs=3, seed=24),
    ]
    for paths in batches:
        assert len(lake.ingest(paths).ingested) == len(paths)
    return lake


def add_nan(lake: Lake, *, seed: int = 5, nan: float = 0.1, null: float = 0.1) -> None:
    """Rewrite every batch's metrics rows of ``lake`` with a fraction of its ``time`` values NaN and another NULL,
    and every value of one call path of each batch NaN (a replace commit of the batch's rows, as compaction
    writes them), then its rank_summary rows again from those rows, as ingest computes them."""
    from deltalake import write_deltalake

    from perflake.catalogs.delta import to_schema, writer_properties
    from perflake.ingest.summarize import summarize

    cat = lake.catalog()
    rng = np.random.default_rng(seed)
    for batch in cat.batches():
        table = cat.batch_rows("metrics", batch)
        values = table.column("time").to_numpy(zero_copy_only=False).copy()
        values[rng.random(len(values)) < nan] = np.nan
        node = table.column("node_id").to_numpy()
        values[node == node[len(node) // 2]] = np.nan
        column = pa.array(values, pa.float64(), mask=rng.random(len(values)) < null)
        table = table.set_column(table.column_names.index("time"), "time", column)
        table = to_schema(table, cat.tables.schema("metrics"))
        write_deltalake(cat.tables.table("metrics"), table, mode="overwrite", predicate=f"batch = '{batch}'",
                        writer_properties=writer_properties(table.schema))
        cat.tables.delete_batch("rank_summary", batch)
        rows = table.drop_columns(["batch", *[c for c in table.column_names if table.column(c).null_count == len(table)
                                               and c not in ("run_id", "node_id", "rank", "thread")]])
        rows = rows.set_column(rows.column_names.index("node_id"), "node_id", rows.column("node_id").cast(pa.uint64()))
        cat.write_table("rank_summary", batch, summarize(rows))


def drop_summaries(root) -> None:
    """Delete every rank_summary row of the lake at ``root`` (a lake whose batches have none: every question
    then reads the metrics rows)."""
    import deltalake

    deltalake.DeltaTable(str(Path(root) / "rank_summary")).delete()


def _runs(lake: Lake, where: str) -> list[str]:
    return sorted(lake.sql(f"select run_id from runs where {where}")["run_id"])


def answers(lake: Lake, pool: str = "format = 'tau' and ranks > 1") -> dict[str, pd.DataFrame]:
    """Every per-rank question on a lake of :func:`build_mixed` (name -> table); compare and regress take the
    runs ``pool`` (SQL on the catalog) selects, the first half by run id against the others."""
    out = {f"imbalance-{name}": imbalance(lake, **options) for name, options in IMBALANCE.items()}
    out["ensemble"] = ensemble(lake, group_by="format", metric="time", stats=STATS)
    out["ensemble-inc-ddof0"] = ensemble(lake, metric="time (inc)", stats=STATS, ddof=0)
    if _runs(lake, "ranks = 1 and threads = 1"):
        out["ensemble-one-location"] = ensemble(lake, "ranks = 1 and threads = 1", metric="time", stats=STATS)
    pool_runs = _runs(lake, pool)
    half = len(pool_runs) // 2
    out["compare"] = compare(lake, pool_runs[:half], pool_runs[half:], metric="time")
    listed = ", ".join(f"'{r}'" for r in pool_runs[:half])
    out["regress"] = regress(lake, f"run_id in ({listed})", f"({pool}) and run_id not in ({listed})", metric="time",
                             min_share=0.0).table
    found = changes(lake, "input_bytes", metric="time", min_size=2)
    out["changes"] = found.changes
    out["changes-runs"] = found.runs
    out["changes-values"] = pd.DataFrame(found.values, columns=[str(i) for i in range(found.values.shape[1])])
    out["changes-paths"] = found.paths
    return out


# Which columns of an answer are the same bits whichever source the per-rank numbers come from.  The per-run
# values (a run's mean over its locations) are: the summary's total / count is avg() over the metrics rows.  What
# DuckDB sums again across runs (an ensemble's mean, std, var; compare's a and b; regress' moments) is not: its
# hash aggregation adds the runs in an order that differs between two executions over the same rows already.
EXACT = {"imbalance": {"locations", "present", "mean", "min", "max", "std", "imbalance", "total"},
         "ensemble": {"count", "median", "min", "max", "p10", "p90"},
         "compare": {"runs_a", "runs_b"},
         "regress": {"n_base", "n_cand", "prob_slower", "p_mwu", "q_mwu", "flagged"},
         "changes": {"position", "before", "after", "change", "step", "share", "noise"}}


def same(got: pd.DataFrame, want: pd.DataFrame, name: str) -> None:
    """``got`` equals ``want`` (both :func:`normalized`): same rows, same order, same values, bit for bit in every
    column but the floating-point ones outside EXACT[kind], which agree to 1e-9 of their column's scale."""
    exact = EXACT[name.split("-")[0]]
    assert list(got.columns) == list(want.columns) and len(got) == len(want), name
    if name == "regress":  # ranked by |effect|: equal ones, and the rows without one, follow in DuckDB's hash order
        a, b = got["effect"].to_numpy(), want["effect"].to_numpy()
        assert np.allclose(a, b, rtol=1e-9, atol=0, equal_nan=True) and got["flagged"].equals(want["flagged"]), name
        got, want = (df.sort_values("node_id", kind="stable").reset_index(drop=True) for df in (got, want))
    for col in want.columns:
        a, b = got[col].to_numpy(), want[col].to_numpy()
        if a.dtype.kind == "f" and col not in exact:
            assert np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b)), (name, col)
            finite = np.isfinite(b)
            scale = np.abs(b[finite]).max() if finite.any() else 0.0
            assert np.allclose(a[finite], b[finite], rtol=1e-9, atol=1e-12 * scale), (name, col)
        elif a.dtype.kind == "f":
            assert np.array_equal(a, b, equal_nan=True), (name, col)
        else:
            assert [list(x) if isinstance(x, np.ndarray) else x for x in a] == [
                list(x) if isinstance(x, np.ndarray) else x for x in b], (name, col)


def _arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)


def normalized(df: pd.DataFrame) -> pd.DataFrame:
    """A table as it comes back from :func:`load` (lists as arrays, no pandas metadata): answers compare so."""
    return _arrow(df).to_pandas()


def save(tables: dict[str, pd.DataFrame], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        pq.write_table(_arrow(df), folder / f"{name}.parquet", compression="zstd", compression_level=19)


def load(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pq.read_table(p).to_pandas() for p in sorted(folder.glob("*.parquet"))}


if __name__ == "__main__":  # python tests/rank_lakes.py OUT: a lake of this perflake and its answers
    out = Path(sys.argv[1])
    lake = build_mixed(out)
    save(answers(lake), out / "answers")


ID_MASK = np.uint64(2**63 - 1)


def masked_ids(df: pd.DataFrame) -> pd.DataFrame:
    """An answer of a perflake before schema 5 with its call-path ids as they are now (63 bits: old & 2**63-1)."""
    df = df.copy()
    for col in ("node_id", "parent_id", "child_id"):
        if col in df.columns:
            df[col] = (df[col].astype("uint64") & ID_MASK).astype(df[col].dtype)
    return df


def same_rows(got: pd.DataFrame, want: pd.DataFrame, name: str) -> None:
    """:func:`same` with rows in a canonical order: answers ordered by call-path id (or tied on a value and then
    by id) change order when the ids change (schema 5)."""
    def canonical(df: pd.DataFrame) -> pd.DataFrame:
        keys = [c for c in df.columns if df[c].dtype.kind not in "fO"]
        floats = [c for c in df.columns if df[c].dtype.kind == "f"]
        tmp = df.assign(**{f"_r_{c}": df[c].round(6) for c in floats})
        return df.loc[tmp.sort_values(keys + [f"_r_{c}" for c in floats], kind="stable").index].reset_index(drop=True)

    same(canonical(got), canonical(want), name)
