"""(g) Which engine reads each format here, offline, and how: a small lake of each kind, then every recipe.

    .venv/bin/python bench/table_format/engines.py

DuckDB's ``delta`` and ``iceberg`` extensions are downloads (not shipped in the duckdb wheel): whether they
are installed is read from ``duckdb_extensions()``; nothing is downloaded (autoinstall off, as in perflake).
The other recipes need only packages from the package index.
"""

from __future__ import annotations

import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import protocol  # noqa: E402

import bench  # noqa: E402
import data  # noqa: E402


def attempt(fn):
    t0 = time.perf_counter()
    try:
        rows = fn()
        return {"ok": True, "rows": rows, "s": round(time.perf_counter() - t0, 3)}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:240]}"}


def main() -> None:
    import duckdb
    import polars as pl

    runs = data.Runs(data.prepare_small(10_000))
    out = {}
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    ext = con.sql("select extension_name, installed, loaded from duckdb_extensions() "
                  "where extension_name in ('delta', 'iceberg', 'httpfs', 'parquet')").fetchall()
    out["duckdb_extensions"] = {name: {"installed": inst, "loaded": loaded} for name, inst, loaded in ext}
    out["duckdb_delta_scan_offline"] = attempt(lambda: con.sql("select count(*) from delta_scan('x')").fetchall())
    for kind in ("delta", "iceberg"):
        root = bench.fresh_lake(f"engines-{kind}")
        store = bench.make(kind, root)
        for i in range(12):
            protocol.commit(store, [runs.run(i)])
        r = {}
        if kind == "delta":
            from deltalake import DeltaTable

            uri = f"{root}/metrics"
            r["polars.scan_delta"] = attempt(lambda: pl.scan_delta(uri).select(pl.len()).collect().item())
            r["deltalake.to_pyarrow_dataset + duckdb"] = attempt(
                lambda: duckdb.connect().register("m", DeltaTable(uri).to_pyarrow_dataset())
                .sql("select count(*) from m").fetchall()[0][0])
            r["duckdb read_parquet(DeltaTable.file_uris())"] = attempt(
                lambda: con.sql("select count(*) from read_parquet($f, union_by_name = true)",
                                params={"f": DeltaTable(uri).file_uris()}).fetchall()[0][0])
            r["pyarrow.dataset(file_uris)"] = attempt(lambda: __import__("pyarrow.dataset").dataset.dataset(
                [u.removeprefix("file://") for u in DeltaTable(uri).file_uris()],
                schema=store.arrow_schema("metrics")).count_rows())
        else:
            from pyiceberg.catalog.sql import SqlCatalog

            cat = SqlCatalog("perflake", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
            t = cat.load_table("perflake.metrics")
            r["polars.scan_iceberg"] = attempt(lambda: pl.scan_iceberg(t).select(pl.len()).collect().item())
            r["pyiceberg scan.to_arrow + duckdb"] = attempt(
                lambda: duckdb.connect().register("m", t.scan().to_arrow()).sql("select count(*) from m")
                .fetchall()[0][0])
            r["pyiceberg scan.to_duckdb"] = attempt(
                lambda: t.scan().to_duckdb("m").sql("select count(*) from m").fetchall()[0][0])
            files = [task.file.file_path.removeprefix("file://") for task in t.scan().plan_files()]
            r["duckdb read_parquet(plan_files) column names"] = attempt(
                lambda: con.sql("select * from read_parquet($f, union_by_name = true) limit 0",
                                params={"f": files}).columns)
        out[kind] = r
    bench.record("engines", out)


if __name__ == "__main__":
    main()
