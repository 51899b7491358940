"""Lake: the user's handle on a lake root (any fsspec URL).  Thin: storage is in ``catalogs``, ingest in
``perflake.ingest.driver``, every query in ``sql/``."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from perflake.catalogs import metric_columns
from perflake.catalogs.catalog import Catalog
from perflake.catalogs.schema import DATA_SCHEMAS, DATA_TABLES, INGEST_LOG, INGEST_LOG_SCHEMA
from perflake.engine import duck, sqlfiles
from perflake.errors import LakeError, UsageError
from perflake.ingest.driver import LOCK_TIMEOUT, IngestReport, ingest
from perflake.readers.base import Metric

if TYPE_CHECKING:  # pandas and the GraphFrame load on first use: ingest needs neither
    import pandas as pd

    from perflake.frame.graphframe import GraphFrame

_EXPLAIN = re.compile(r"^\s*explain\s+(?:analy[sz]e\s+)?", re.IGNORECASE)


def check_read_only(query: str) -> None:
    """LakeError unless ``query`` is one SELECT, or EXPLAIN [ANALYZE] of one SELECT (EXPLAIN ANALYZE runs its
    statement: ``explain analyze copy ... to 'file'`` would write)."""
    try:
        statements = duckdb.extract_statements(query)
        kinds = [s.type for s in statements]
        if len(statements) == 1 and kinds[0] == duckdb.StatementType.EXPLAIN:
            inner = duckdb.extract_statements(_EXPLAIN.sub("", statements[0].query, count=1))
            kinds = [duckdb.StatementType.EXPLAIN] if [s.type for s in inner] == [duckdb.StatementType.SELECT] else [
                s.type for s in inner]
    except duckdb.Error as exc:
        raise LakeError(f"SQL error: {str(exc).splitlines()[0]}") from None
    allowed = (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN)
    if len(kinds) != 1 or kinds[0] not in allowed:
        found = ", ".join(k.name for k in kinds) or "nothing"
        raise LakeError(f"only one read-only query (SELECT, or EXPLAIN of one) is allowed, got: {found} "
                        "(unsafe=True / --allow-write runs anything)")


def pd_empty():
    import pandas as pd

    return pd.DataFrame()


class Lake:
    """A perflake lake at ``root`` (created on first ingest).

    >>> lake = Lake("./lake"); lake.ingest(["profiles/"]); lake.sql("select run_id, ranks from runs")
    """

    def __init__(self, root: str | os.PathLike, *, storage_options: dict | None = None, as_of=None):
        self.root = os.fspath(root)
        self._storage_options = storage_options
        self.as_of = as_of  # a version of the runs table (int) or a time (datetime): read the lake as it was then
        self._catalog: Catalog | None = None

    def catalog(self, *, create: bool = False) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog(self.root, create=create, storage_options=self._storage_options,
                                    as_of=self.as_of)
        return self._catalog

    # -- writing -------------------------------------------------------------------------------------------
    def ingest(self, paths, *, progress: bool = False, retry_failed: bool = False, follow_symlinks: bool = False,
               scheduler=None, lock_timeout: float | None = LOCK_TIMEOUT, min_age: float = 0.0) -> IngestReport:
        """Ingest every profile found under ``paths``; already-present runs (same bytes) are skipped, inputs
        that failed before are retried only when they changed (see :func:`perflake.ingest.driver.ingest`)."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if self.as_of is not None:
            raise UsageError(f"{self.root}: a lake opened as_of={self.as_of!r} is read-only")
        return ingest(self.catalog(create=True), list(paths), progress=progress, retry_failed=retry_failed,
                      follow_symlinks=follow_symlinks, scheduler=scheduler, lock_timeout=lock_timeout,
                      min_age=min_age)

    # -- reading -------------------------------------------------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """The runs catalog as a DataFrame (one row per run)."""
        return self.catalog().runs().to_pandas()

    def versions(self) -> dict[str, int]:
        """The Delta version of each table the last question read: every call reads the latest committed version
        of each table it needs, or, with ``as_of``, the versions current when that runs version was committed."""
        return self.catalog().versions()

    def connect(self, *, confined: bool = False, own: bool = False) -> duckdb.DuckDBPyConnection:
        """A fresh DuckDB connection with the views ``runs``, ``nodes``, ``edges``, ``metrics``, ``rank_summary``
        (per run, call path and metric: statistics over the run's locations, catalogs/schema.py) and
        ``ingest_log``.  The catalog is read once: the connection sees the runs committed at that moment, each
        with all of its rows, whatever ingests commit meanwhile.  ``confined``: a database of its own that
        reads only the lake's files and whose settings no statement can change (perflake.engine.duck.confine);
        ``own``: a database of its own, not confined (its settings are its own to change)."""
        cat = self.catalog()
        con = duck.for_catalog(cat, own=confined or own)
        runs = cat.runs()
        con.register("runs", runs)
        batches = runs.column("batch").to_pylist()
        files = {table: cat.files(table, batches, placeholder=False) for table in DATA_TABLES}
        for table in DATA_TABLES:
            if files[table]:
                con.execute(f"set variable perflake_{table}_files = $files", {"files": files[table]}).fetchall()
                con.execute(sqlfiles.load(f"views/{table}")).fetchall()
            else:
                con.register(table, DATA_SCHEMAS[table].empty_table())
        log_files = cat.log_files()
        if log_files:
            con.execute("set variable perflake_ingest_log_files = $files", {"files": log_files}).fetchall()
            con.execute(sqlfiles.load(f"views/{INGEST_LOG}")).fetchall()
        else:
            con.register(INGEST_LOG, pa.Table.from_batches([], schema=INGEST_LOG_SCHEMA))
        if confined:
            duck.confine(con, [cat.duck_path(cat.root)])
        return con

    def sql(self, query: str, params: dict | list | None = None, *, unsafe: bool = False) -> pd.DataFrame:
        """Run one read-only DuckDB query (SELECT, or EXPLAIN [ANALYZE] of a SELECT) over the lake's views and
        return a DataFrame (values bound through ``params``).  Anything else -- COPY, ATTACH, CREATE, SET,
        PRAGMA, several statements -- is refused, and the query runs on a confined database: it reads no file
        outside the lake, writes none, loads no extension and changes no setting.  ``unsafe=True`` runs any
        statements with DuckDB's full power (files anywhere, writes), on a database of its own."""
        if not unsafe:
            check_read_only(query)
        con = self.connect(own=True) if unsafe else self.connect(confined=True)
        try:
            result = con.sql(query, params=params)
            return result.df() if result is not None else pd_empty()
        except duckdb.Error as exc:
            raise LakeError(f"SQL error: {str(exc).splitlines()[0]}") from None
        finally:
            con.close()

    def resolve(self, run: str) -> dict:
        """The catalog row of ``run`` (a run id or a unique prefix of one)."""
        if not isinstance(run, str):
            raise UsageError(f"one run id (a string) is needed, not {type(run).__name__} {str(run)[:60]}: for several "
                             "runs use ensemble(), ensemble_graphframe() or compare()")
        from perflake.analytics.selection import resolve_runs

        return resolve_runs(self.catalog().runs(), run).to_pylist()[0]

    def graphframe(self, run: str) -> GraphFrame:
        """The run as a Hatchet-style GraphFrame."""
        from perflake.analytics.selection import session

        row = self.resolve(run)
        cat = self.catalog()
        metrics = [Metric(m["name"], m["role"], m["unit"], m.get("pair")) for m in row["metrics"]]
        with session(self) as con:
            params = {"files": cat.files("nodes", [row["batch"]]), "run_id": row["run_id"], "batch": row["batch"]}
            nodes = sqlfiles.relation(con, "run_nodes", **params).to_arrow_table()
            if not nodes.num_rows:  # every ingested run has nodes: its rows were removed or rewritten since
                raise LakeError(f"{self.root}: run {row['run_id']} has no rows in the nodes table under its batch "
                                f"{row['batch']} (deleted or rewritten by another tool?)")
            params = {"files": cat.files("metrics", [row["batch"]]), "run_id": row["run_id"], "batch": row["batch"],
                      "metrics": [m.name for m in metrics]}
            values = metric_columns.to_names(sqlfiles.relation(con, "run_metrics", **params).to_arrow_table(),
                                             ("node_id", "rank", "thread"))
        return self.frame_class.from_tables(nodes, values, metrics, json.loads(row["metadata"] or "{}"),
                                            fmt=row["format"])

    @property
    def frame_class(self) -> type[GraphFrame]:
        """The class of the frames this lake builds (analytics that build a frame from tables take it from here,
        as operations take ``type(gf)``: no capability module imports GraphFrame)."""
        from perflake.frame.graphframe import GraphFrame

        return GraphFrame

    def imbalance(self, runs=None, *, metric: str = "time", top: int | None = None, absent: str = "exclude",
                  k: int = 3, ddof: int = 1, where: str | None = None, scheduler=None, by: str = "imbalance",
                  min_share: float = 0.0, source: str = "auto") -> pd.DataFrame:
        """Per-rank load imbalance per call path, ranked by ``by`` without the call paths below ``min_share`` of
        their run's time, from the lake's rank summary or its metrics rows (``source``; see
        :func:`perflake.analytics.imbalance.imbalance`)."""
        from perflake.analytics.imbalance import imbalance

        return imbalance(self, runs, metric=metric, top=top, absent=absent, k=k, ddof=ddof, where=where,
                         scheduler=scheduler, by=by, min_share=min_share, source=source)

    def compare(self, a, b, *, metric: str = "time", scheduler=None) -> pd.DataFrame:
        """Two runs (or two lists of runs) per call path, biggest regressions first
        (:func:`perflake.analytics.compare.compare`)."""
        from perflake.analytics.compare import compare

        return compare(self, a, b, metric=metric, scheduler=scheduler)

    def ensemble(self, where: str | None = None, group_by=None, **options) -> pd.DataFrame:
        """Per call path statistics across runs (see :func:`perflake.analytics.ensemble.ensemble`)."""
        from perflake.analytics.ensemble import ensemble

        return ensemble(self, where, group_by, **options)

    def ensemble_of(self, where: str | None = None, *, metric=None, runs=None, per_rank: bool = False):
        """Thicket's ensemble object over the selected runs: ``.dataframe``, ``.metadata``, ``.statsframe``,
        read lazily (see :class:`perflake.analytics.ensemble_frame.Ensemble`)."""
        from perflake.analytics.ensemble_frame import Ensemble

        return Ensemble.from_lake(self, where, metric=metric, runs=runs, per_rank=per_rank)

    def scaling_table(self, metric: str | None = None, by: str = "nprocs", **options) -> pd.DataFrame:
        """A metric per call path pivoted by a metadata key (see :func:`perflake.analytics.ensemble.scaling_table`)."""
        from perflake.analytics.ensemble import scaling_table

        return scaling_table(self, metric, by, **options)

    def model(self, by: str = "nprocs", metric: str | None = None, **options):
        """Extra-P scaling models per call path over ``by`` (see :func:`perflake.analytics.models.scaling_models`)."""
        from perflake.analytics.models import scaling_models

        return scaling_models(self, by, metric, **options)

    def ensemble_graphframe(self, where: str | None = None, **options):
        """Ensemble statistics as a GraphFrame over the union of the runs' call paths."""
        from perflake.analytics.ensemble import ensemble_graphframe

        return ensemble_graphframe(self, where, **options)

    def regress(self, baseline, candidate, **options):
        """Call paths slower in ``candidate`` than in ``baseline`` (see :func:`perflake.analytics.regress.regress`)."""
        from perflake.analytics.regress import regress

        return regress(self, baseline, candidate, **options)

    def changes(self, order_by: str = "launch_time", **options):
        """Change points per call path over ordered runs (see :func:`perflake.analytics.changes.changes`)."""
        from perflake.analytics.changes import changes

        return changes(self, order_by, **options)

    def query(self, query, *, runs=None, where: str | None = None, multi_index_mode: str = "mean",
              graphframes: bool = False, per_run: bool = False):
        """Nodes matching a call-path query in each run (see :func:`perflake.analytics.lake_query.query`)."""
        from perflake.analytics.lake_query import query as run_query

        return run_query(self, query, runs=runs, where=where, multi_index_mode=multi_index_mode,
                         graphframes=graphframes, per_run=per_run)

    def vacuum(self, older_than: float = 3600.0) -> list[str]:
        """Remove the rows of batches that never committed (a crashed ingest) older than ``older_than`` seconds,
        then the files no version committed within that many seconds uses (``as_of`` reaches back that far
        afterwards); judged on the latest version, so a lake opened ``as_of`` is refused (UsageError).  Returns
        what was removed, each item once (catalogs/vacuum.py)."""
        if self.as_of is not None:
            raise UsageError(f"{self.root}: a lake opened as_of={self.as_of!r} cannot be vacuumed (vacuum works on "
                             "the latest version: open the lake without as_of)")
        from perflake.catalogs.vacuum import vacuum

        return vacuum(self.catalog(), older_than)

    def compact(self, *, target_bytes: int | None = None) -> list:
        """Merge each table's small files (catalogs/compaction.py); every query gives the same answer after."""
        from perflake.catalogs.compaction import TARGET_BYTES, compact

        return compact(self.catalog(), target=target_bytes or TARGET_BYTES)
