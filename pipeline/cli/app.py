"""The ``perflake`` command line.

Exit codes: 0 all good; 1 some inputs failed (the rest was done); 2 could not run (bad arguments, no lake,
SQL error...).  A user error prints one line ``perflake: <message>``; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import TYPE_CHECKING

from perflake.frame.defaults import per_rank_metric
from perflake.errors import MetadataKeyWarning, PerflakeError, UsageError

if TYPE_CHECKING:  # pandas loads when a table is printed: `perflake ingest` starts faster without it
    import pandas as pd

EXIT_OK, EXIT_PARTIAL, EXIT_ERROR = 0, 1, 2


def _print_frame(df: pd.DataFrame, fmt: str, *, max_rows: int | None = None) -> None:
    import pandas as pd

    if fmt == "csv":
        sys.stdout.write(df.to_csv(index=False))
    elif fmt == "json":
        sys.stdout.write(df.to_json(orient="records", date_format="iso", default_handler=str) + "\n")
    else:
        with pd.option_context("display.max_colwidth", 80, "display.width", 200):
            shown = df if max_rows is None else df.head(max_rows)
            sys.stdout.write((shown.to_string(index=False) if len(shown) else "(no rows)") + "\n")
            if max_rows is not None and len(df) > max_rows:
                sys.stdout.write(f"... {len(df) - max_rows} more rows (use --format csv for all)\n")


def _paths_column(df: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """Call paths as text; in tables only the last three frames (csv/json keep the whole path)."""
    if "path" in df.columns:
        df = df.copy()
        keep = 3 if fmt == "table" else None
        df["path"] = [
            ("... > " if keep and len(p) > keep else "") + " > ".join(p[-keep:] if keep else p) if p is not None else ""
            for p in df["path"]
        ]
    return df


def _lake(args):
    from perflake.lake import Lake

    return Lake(args.lake)


def cmd_ingest(args) -> int:
    from perflake.ingest.report import IngestReport

    lake = _lake(args)
    try:
        report = lake.ingest(args.paths, progress=not args.quiet and not args.json, retry_failed=args.retry_failed,
                             follow_symlinks=args.follow_symlinks, scheduler=args.scheduler,
                             lock_timeout=args.lock_timeout, min_age=args.min_age)
    except (PerflakeError, OSError) as exc:  # could not run: no lake, lock timeout, the lake not writable...
        if args.debug:
            raise
        message = str(exc) if isinstance(exc, PerflakeError) else f"{args.lake}: {type(exc).__name__}: {exc}"
        print(f"perflake: {message}", file=sys.stderr)
        if args.json:
            print(json.dumps({**IngestReport().as_dict(lake=args.lake, exit_code=EXIT_ERROR), "error": message}))
        return EXIT_ERROR
    for _source, reason in report.failed:
        print(f"perflake: {reason}", file=sys.stderr)
    for _path, reason in report.unrecognised:
        print(f"perflake: warning: {reason}", file=sys.stderr)
    code = EXIT_OK if report.ok else EXIT_PARTIAL
    if args.json:
        print(json.dumps(report.as_dict(lake=args.lake, exit_code=code)))
    else:
        print(report.summary())
    return code


def _ingest_scheduler(text: str) -> str:
    from perflake.engine.parallel import LOCAL_SCHEDULERS

    if text.lower() not in LOCAL_SCHEDULERS and "://" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected threads, processes, synchronous or tcp://host:port")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds >= 0")
    return value


INGEST_EPILOG = """\
Runs are found recursively and sniffed.  Safe to run from cron every few minutes, also several at once:
  - a run whose bytes are already in the lake is skipped (also when it moved or was renamed);
  - an input whose files (names, sizes, mtimes) are unchanged since its last logged attempt is not read again;
  - an input that failed is retried only when it changed, after a perflake upgrade or a transient
    (memory, I/O) failure, or with --retry-failed;
  - every attempt is recorded in the lake's ingest_log table (perflake sql "select * from ingest_log");
  - symlinked directories, and symlinks to outside a scanned directory, are not followed (--follow-symlinks);
  - with --min-age SECONDS, a run with a file (or its directory) modified less than SECONDS ago is left for
    a later run: a profile still being written is not ingested half-written.

exit codes:
  0  all good: no input failed in this run (also when nothing was new; inputs skipped because they
     failed before and did not change are listed in the summary, not counted again)
  1  some inputs failed (reasons on stderr and in --json); the others were ingested
  2  could not run: bad arguments, the lake cannot be created or is not a lake, commit lock timeout,
     the lake cannot be written
"""


def cmd_runs(args) -> int:
    lake = _lake(args)
    df = lake.sql(
        "select run_id, format, app, ranks, threads, n_nodes, exc_metrics, launch_time, source from runs order by ingested_at, run_id"
    )
    if args.where:
        from perflake.analytics.lake_query import select_runs

        df = df[df["run_id"].isin(set(select_runs(lake, where=args.where)))]
    _print_frame(df, args.format)
    return EXIT_OK


def cmd_sql(args) -> int:
    _print_frame(_lake(args).sql(args.query, unsafe=args.allow_write), args.format, max_rows=args.max_rows)
    return EXIT_OK


def cmd_tree(args) -> int:
    if args.lake:
        gf = _lake(args).graphframe(args.run)
    else:
        from perflake.read import read

        gf = read(args.run)
    metric = args.metric.split(",") if args.metric and "," in args.metric else args.metric
    if metric is None:  # an inclusive metric whatever the input (perflake.frame.defaults.shown_metric)
        from perflake.frame.defaults import shown_metric

        metric = shown_metric(gf)
        if args.no_header:  # the header names it otherwise
            print(f"perflake: showing metric {metric!r} (choose with --metric)", file=sys.stderr)
    colour = True if args.color else (False if args.no_color else None)
    sys.stdout.write(gf.tree(metric_column=metric, precision=args.precision, rank=args.rank, thread=args.thread,
                             depth=args.depth, expand_name=args.expand_name, render_header=not args.no_header,
                             colour=colour))
    return EXIT_OK


def _lists_column(df: pd.DataFrame) -> pd.DataFrame:
    """List-valued columns other than path (top_ranks) as 'a b c' text, for tables and csv."""
    if "top_ranks" in df.columns:
        df = df.copy()
        df["top_ranks"] = [" ".join(str(int(r)) for r in v) if v is not None else "" for v in df["top_ranks"]]
    return df


def _side(text: str):
    return text.split(",") if "," in text else text


def cmd_imbalance(args) -> int:
    lake = _lake(args)
    metric = per_rank_metric(lake, args.metric, runs=args.runs or None, where=args.where)
    df = lake.imbalance(args.runs or None, metric=metric, top=args.top, absent=args.absent, k=args.k,
                        where=args.where, scheduler=args.scheduler)
    df = df.drop(columns=["node_id"])
    if args.format != "json":
        df = _lists_column(df)
    _print_frame(_paths_column(df, args.format), args.format)
    return EXIT_OK


def cmd_compare(args) -> int:
    lake = _lake(args)
    a, b = _side(args.run_a), _side(args.run_b)
    metric = per_rank_metric(lake, args.metric, runs=[*([a] if isinstance(a, str) else a),
                                                     *([b] if isinstance(b, str) else b)])
    df = lake.compare(a, b, metric=metric, scheduler=args.scheduler)
    _print_frame(_paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.top)
    return EXIT_OK


def _default_metric(lake, args, *, several: bool = True):
    """--metric (a list when ``several`` and comma-separated), else the default of the selected runs
    (perflake.frame.defaults), said on stderr."""
    if args.metric:
        return args.metric.split(",") if several and "," in args.metric else args.metric
    from perflake.analytics.ensemble import default_metric

    metric, have, total = default_metric(lake, where=args.where)
    print(f"perflake: metric {metric!r} ({have} of {total} selected runs have it; choose with --metric)",
          file=sys.stderr)
    return metric


def cmd_ensemble(args) -> int:
    group_by = args.group_by.split(",") if args.group_by else None
    stats = tuple(args.stats.split(","))
    lake = _lake(args)
    df = lake.ensemble(args.where, group_by, metric=_default_metric(lake, args), stats=stats, ddof=args.ddof,
                       scheduler=args.scheduler)
    _print_frame(_paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.max_rows)
    return EXIT_OK


def cmd_scaling(args) -> int:
    lake = _lake(args)
    df = lake.scaling_table(_default_metric(lake, args, several=False), args.by, where=args.where, stat=args.stat)
    df = df.reset_index(drop=True)
    df.columns = [str(c) for c in df.columns]
    _print_frame(_paths_column(df, args.format), args.format, max_rows=args.max_rows)
    return EXIT_OK


def _query_text(text: str):
    """The string dialect as is; a JSON list is Hatchet's object dialect (``["*", {...}]`` pairs as tuples)."""
    if not text.lstrip().startswith("["):
        return text
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"the query looks like the object dialect (JSON) but is not JSON: {exc}") from None
    return [tuple(item) if isinstance(item, list) else item for item in items]


def cmd_query(args) -> int:
    from perflake.analytics.lake_query import select_runs, unknown_attributes

    lake, q = _lake(args), _query_text(args.query)
    df = lake.query(q, runs=args.runs or None, where=args.where, multi_index_mode=args.multi_index_mode)
    for attr in unknown_attributes(lake, q, select_runs(lake, args.runs or None, args.where)):
        print(f"perflake: warning: no selected run has an attribute or metric {attr!r}: it matches nothing",
              file=sys.stderr)
    _print_frame(_paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.max_rows)
    return EXIT_OK


def cmd_vacuum(args) -> int:
    removed = _lake(args).vacuum(older_than=args.older_than)
    for path in removed:
        print(f"removed {path}")
    print(f"removed {len(removed)} leftover files")
    return EXIT_OK


def cmd_generate(args) -> int:
    from perflake.generators import WRITERS

    extra = {"threads": args.threads} if args.threads != 1 else {}
    writer, kind = WRITERS[args.format], args.format
    if getattr(args, "no_metric_db", False):
        if args.format != "hpctoolkit" or args.v4:
            raise UsageError("--no-metric-db is for the hpctoolkit format only (the old one, not --v4)")
        extra["metric_db"] = False
    if args.v4 or args.layout or args.copied_sources:  # HPCToolkit v4 (meta.db + profile.db + cct.db)
        if args.format != "hpctoolkit" or not args.v4:
            raise UsageError("--layout and --copied-sources need `generate hpctoolkit --v4`; --v4 is for hpctoolkit")
        from perflake.generators.hpctoolkit_v4 import write_hpctoolkit_v4_runs as writer

        extra.update(layout=args.layout or "4.0", copied_sources=args.copied_sources)
        kind = f"hpctoolkit v4 ({args.layout or '4.0'} layout)"
    paths = writer(args.out, nodes=args.nodes, ranks=args.ranks, runs=args.runs, seed=args.seed, **extra)
    print(f"wrote {len(paths)} {kind} runs ({args.nodes} nodes x {args.ranks} ranks) under {args.out}")
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    from perflake._version import __version__

    p = argparse.ArgumentParser(prog="perflake", description="A columnar data lake for HPC call-path profiles.")
    p.add_argument("--version", action="version", version=f"perflake {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True)

    def lake_arg(sp, required=True):
        env = os.environ.get("PERFLAKE_LAKE") or None
        sp.add_argument("--lake", required=required and env is None, default=env,
                        help="lake root (a directory or fsspec URL; default: $PERFLAKE_LAKE)")

    def fmt_arg(sp):
        sp.add_argument("--format", choices=["table", "csv", "json"], default="table")

    sp = sub.add_parser("ingest", help="ingest profiles (files or directories, walked) into a lake",
                        epilog=INGEST_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("paths", nargs="+")
    lake_arg(sp)
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout (counts, files, reasons)")
    sp.add_argument("--retry-failed", action="store_true", help="read again inputs that failed before, changed or not")
    sp.add_argument("--follow-symlinks", action="store_true",
                    help="follow symlinked directories and symlinks to outside the scanned directories")
    sp.add_argument("--scheduler", type=_ingest_scheduler,
                    help="threads (default), processes, synchronous, or a dask.distributed scheduler address "
                         "tcp://host:port; workers parse and normalise, this process commits")
    sp.add_argument("--lock-timeout", type=float, default=600.0,
                    help="seconds to wait for the lake's commit lock (default 600), then exit 2")
    sp.add_argument("--min-age", type=_seconds, default=0.0, metavar="SECONDS",
                    help="leave for a later run the inputs modified less than SECONDS ago (still being "
                         "written); default 0")
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("runs", help="list the runs catalog")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"format = 'tau' and ranks >= 64\"")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_runs)

    sp = sub.add_parser("sql", help="run DuckDB SQL over the views runs, nodes, edges, metrics")
    sp.add_argument("query")
    lake_arg(sp)
    fmt_arg(sp)
    sp.add_argument("--max-rows", type=int, default=100)
    sp.add_argument("--allow-write", action="store_true",
                    help="run any statements with DuckDB's full power (files anywhere, writes); by default one "
                         "read-only query that reads only the lake's files")
    sp.set_defaults(func=cmd_sql)

    sp = sub.add_parser("tree", help="print a run's call tree (a run id with --lake, or a profile path)")
    sp.add_argument("run")
    lake_arg(sp, required=False)
    sp.add_argument("--metric", help="metric column(s), comma-separated (default: an inclusive metric of the "
                                     "run, named in the header)")
    sp.add_argument("--precision", type=int, default=3)
    sp.add_argument("--rank", type=int, default=0)
    sp.add_argument("--thread", type=int, default=0)
    sp.add_argument("--depth", type=int, default=10000)
    sp.add_argument("--expand-name", action="store_true")
    sp.add_argument("--no-header", action="store_true")
    sp.add_argument("--color", action="store_true")
    sp.add_argument("--no-color", action="store_true")
    sp.set_defaults(func=cmd_tree)

    sp = sub.add_parser("imbalance", help="per-rank load imbalance per call path (max/mean over ranks)")
    sp.add_argument("runs", nargs="*", help="run ids (default: all runs, or --where)")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: time when the selected runs have it, else chosen from their metrics")
    sp.add_argument("--top", type=int, default=10)
    sp.add_argument("--absent", choices=["exclude", "zero"], default="exclude",
                    help="ranks without the call path: excluded (default) or counted as zero")
    sp.add_argument("--k", type=int, default=3, help="how many top ranks to list")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_imbalance)

    sp = sub.add_parser("compare", help="compare two runs or two groups (comma-separated) per call path")
    sp.add_argument("run_a")
    sp.add_argument("run_b")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: time when both sides have it, else chosen from their metrics")
    sp.add_argument("--top", type=int, default=15)
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("ensemble", help="per call path statistics across runs, grouped by metadata")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"nprocs >= 64\"")
    sp.add_argument("--group-by", help="catalog columns or meta:KEY, comma-separated")
    sp.add_argument("--metric", help="metric(s), comma-separated (default: chosen from the selected runs' "
                                     "metrics, an inclusive time first; printed on stderr)")
    sp.add_argument("--stats", default="count,mean,median,std,min,max")
    sp.add_argument("--ddof", type=int, default=1)
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    sp.add_argument("--max-rows", type=int, default=50)
    fmt_arg(sp)
    sp.set_defaults(func=cmd_ensemble)

    sp = sub.add_parser("scaling", help="a metric per call path pivoted by a metadata key (scaling study)")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: chosen from the selected runs' metrics, an inclusive time first "
                                     "(printed on stderr)")
    sp.add_argument("--by", default="nprocs", help="catalog column or meta:KEY")
    sp.add_argument("--where")
    sp.add_argument("--stat", default="mean")
    sp.add_argument("--max-rows", type=int, default=50)
    fmt_arg(sp)
    sp.set_defaults(func=cmd_scaling)

    sp = sub.add_parser("query", help="call-path query (Hatchet's string or object dialect) over runs of the lake")
    sp.add_argument("query", help='string dialect, e.g. MATCH (".", p)->("*", q) WHERE p."name" =~ "MPI_.*", '
                                  'or object dialect as JSON, e.g. \'[{"name": "MPI_.*"}]\' or \'["*", {"time (inc)": "> 10"}]\'')
    sp.add_argument("runs", nargs="*", help="run ids (default: all runs, or --where)")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"format = 'tau' and ranks >= 64\"")
    sp.add_argument("--multi-index-mode", choices=["off", "any", "all"], default="off",
                    help="metric conditions on multi-rank runs: off = on each node's mean over ranks/threads "
                         "(default), any/all = on any/every rank and thread")
    sp.add_argument("--max-rows", type=int, default=100)
    fmt_arg(sp)
    sp.set_defaults(func=cmd_query)

    sp = sub.add_parser("vacuum", help="remove leftovers of crashed ingests (files no committed batch owns)")
    lake_arg(sp)
    sp.add_argument("--older-than", type=float, default=3600.0, help="seconds (default 3600): younger files are kept")
    sp.set_defaults(func=cmd_vacuum)

    sp = sub.add_parser("generate", help="write synthetic profiles in a real format (deterministic by seed)")
    sp.add_argument("format", choices=["caliper", "hpctoolkit", "tau"])
    sp.add_argument("out")
    sp.add_argument("--nodes", type=int, default=200)
    sp.add_argument("--ranks", type=int, default=16)
    sp.add_argument("--threads", type=int, default=1)
    sp.add_argument("--runs", type=int, default=1)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--no-metric-db", action="store_true",
                    help="hpctoolkit: no *.metric-db files, summary values inline in experiment.xml 2.2 and "
                         ".hpctrace files (hpcprof of 2020 with metric-db output off)")
    sp.add_argument("--v4", action="store_true", help="hpctoolkit: a v4 database (meta.db, profile.db, cct.db)")
    sp.add_argument("--layout", choices=["4.0", "2022-pre"], help="with --v4: the 2022 pre-release layout")
    sp.add_argument("--copied-sources", choices=["src", "outdir"], help="with --v4: sources copied into the database")
    sp.set_defaults(func=cmd_generate)

    from perflake.cli.commands import register_all

    register_all(sub, lake_arg=lake_arg, fmt_arg=fmt_arg)
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """perflake's own warnings (a metadata key some runs lack) as one ``perflake: warning:`` line."""
    if issubclass(category, MetadataKeyWarning):
        print(f"perflake: warning: {message}", file=sys.stderr)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return args.func(args)
    except PerflakeError as exc:
        if args.debug:
            raise
        print(f"perflake: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("perflake: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
