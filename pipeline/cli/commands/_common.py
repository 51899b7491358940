"""What the sub-commands share: exit codes, the ``--lake`` and ``--format`` options, printing a table, the
metric default, and loading the one run a per-run view (``tree``, ``flamegraph``, ``flat``, ``hotpath``) shows.

Nothing here imports pandas, DuckDB or the lake at module level: building the parser stays cheap.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads when a table is printed: `perflake ingest` starts faster without it
    import pandas as pd

EXIT_OK, EXIT_PARTIAL, EXIT_ERROR = 0, 1, 2
AGGREGATES = ("sum", "mean", "min", "max")


# -- options ---------------------------------------------------------------------------------------------------
def lake_arg(sp, required=True):
    """``--lake``, required unless $PERFLAKE_LAKE gives the default (read when the parser is built)."""
    env = os.environ.get("PERFLAKE_LAKE") or None
    sp.add_argument("--lake", required=required and env is None, default=env,
                    help="lake root (a directory or fsspec URL; default: $PERFLAKE_LAKE)")


def fmt_arg(sp):
    sp.add_argument("--format", choices=["table", "csv", "json"], default="table")


def run_args(sp, lake_arg, *, aggregate_default: str | None) -> None:
    """RUN, --lake, --metric and the location options of a per-run view."""
    sp.add_argument("run", help="a run id with --lake, or a profile path")
    lake_arg(sp, required=False)
    sp.add_argument("--metric", help="metric column (default: the run's default metric)")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--rank", type=int, help="values of one rank" + ("" if aggregate_default else " (default 0)"))
    default = f" (default {aggregate_default})" if aggregate_default else ""
    group.add_argument("--aggregate", choices=AGGREGATES, help=f"reduce over all ranks and threads{default}")
    sp.add_argument("--thread", type=int, default=0, help="thread of --rank (default 0)")


def location(args, *, aggregate_default: str | None) -> dict:
    """rank/thread/aggregate keywords from the parsed options of :func:`run_args`."""
    if args.rank is not None:
        return {"rank": args.rank, "thread": args.thread, "aggregate": None}
    return {"rank": 0, "thread": args.thread, "aggregate": args.aggregate or aggregate_default}


# -- inputs ----------------------------------------------------------------------------------------------------
def open_lake(args):
    from perflake.lake import Lake

    return Lake(args.lake)


def load_graphframe(args):
    """The GraphFrame of ``args.run``: a run of ``args.lake``, or a profile path when there is no lake."""
    if args.lake:
        return open_lake(args).graphframe(args.run)
    from perflake.read import read

    return read(args.run)


def default_metric(lake, args, *, several: bool = True):
    """--metric (a list when ``several`` and comma-separated), else the default of the selected runs
    (perflake.frame.defaults), said on stderr."""
    if args.metric:
        return args.metric.split(",") if several and "," in args.metric else args.metric
    from perflake.analytics.ensemble import default_metric

    metric, have, total = default_metric(lake, where=args.where)
    say(f"metric {metric!r} ({have} of {total} selected runs have it; choose with --metric)")
    return metric


# -- output ----------------------------------------------------------------------------------------------------
def print_frame(df: pd.DataFrame, fmt: str, *, max_rows: int | None = None) -> None:
    """``df`` on standard output as ``fmt``.

    * ``table``: perflake.render.table -- names escaped, one spelling (``-``) for a missing value, fitted to
      the terminal's width (perflake.render.safe_text.output_width: $COLUMNS, else the terminal's; piped
      output is not cut), at most ``max_rows`` rows;
    * ``csv`` and ``json``: every row and value exactly as stored, for programs.  JSON escapes control
      characters itself; CSV cannot, so when standard output is a terminal (a person reads it, no program) its
      cells are escaped as in tables, and written exactly to a pipe or a file.
    """
    from perflake.render.safe_text import escape, on_terminal

    if fmt == "csv":
        if on_terminal():
            df = df.map(lambda v: escape(v) if isinstance(v, str) else v)
            df.columns = [escape(c) for c in df.columns]
        sys.stdout.write(df.to_csv(index=False))
    elif fmt == "json":
        text = df.to_json(orient="records", date_format="iso", default_handler=str)
        sys.stdout.write(text.replace("\x7f", "\\u007f") + "\n")  # DEL too, as JSON escapes the others
    else:
        from perflake.render.safe_text import output_width
        from perflake.render.table import text_table

        shown = df if max_rows is None else df.head(max_rows)
        sys.stdout.write(text_table(shown, output_width()))
        if max_rows is not None and len(df) > max_rows:
            sys.stdout.write(f"... {len(df) - max_rows} more rows (use --format csv for all)\n")


def say(message: str) -> None:
    """``perflake: <message>`` on standard error, one line: control characters (line feeds too) escaped."""
    from perflake.render.safe_text import escape

    print(f"perflake: {escape(message)}", file=sys.stderr)


def error_text(exc: BaseException) -> str:
    """The message of ``exc`` for the terminal, one line with control characters (line feeds too) escaped; but a
    query error keeps its query and caret below, the caret under the offending character of the escaped query."""
    from perflake.render.safe_text import display_width, escape

    message = str(exc)
    query, position = getattr(exc, "query", None), getattr(exc, "position", None)
    tail = f"\n  {query}\n  {' ' * position}^" if isinstance(query, str) and isinstance(position, int) else None
    if tail and message.endswith(tail):
        head = message[: -len(tail)]
        return f"{escape(head)}\n  {escape(query)}\n  {' ' * display_width(escape(query[:position]))}^"
    return escape(message)


def print_paths(verb: str, paths, summary: str) -> int:
    """A line ``<verb> <path>`` per file written or removed, then ``summary``; the exit code of success.
    Control characters in the paths are escaped."""
    from perflake.render.safe_text import escape

    for path in paths:
        print(f"{verb} {escape(path)}")
    print(escape(summary))
    return EXIT_OK


def paths_column(df: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """Call paths as ``a > b > c`` text.  In a table a missing path stays missing (shown ``-``) and a long path is
    shortened from its start to the terminal's width, the leaf kept (perflake.render.table); csv/json give the
    whole path, "" when there is none."""
    if "path" in df.columns:
        df = df.copy()
        table = fmt == "table"
        df["path"] = [" > ".join(map(str, p)) if p is not None else (None if table else "") for p in df["path"]]
    return df


def lists_column(df: pd.DataFrame) -> pd.DataFrame:
    """List-valued columns other than path (top_ranks) as 'a b c' text, for tables and csv."""
    if "top_ranks" in df.columns:
        df = df.copy()
        df["top_ranks"] = [" ".join(str(int(r)) for r in v) if v is not None else "" for v in df["top_ranks"]]
    return df


# -- change points: `perflake changes` and `perflake plot timeline` ---------------------------------------------
def changes_arguments(sp, lake_arg) -> None:
    """The options of ``perflake changes`` and ``perflake plot timeline``."""
    lake_arg(sp)
    sp.add_argument("--order-by", default="launch_time", help="catalog column or meta:KEY (default launch_time)")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--metric", help="default: chosen from the runs' metrics, an inclusive time first "
                                     "(the exclusive 'time' pins a shift on the call path itself)")
    sp.add_argument("--show", help="columns naming each run (default: launch_time,meta:commit where present)")
    sp.add_argument("--min-size", type=int, default=5, help="fewest runs between two changes (default 5)")
    sp.add_argument("--penalty", type=float,
                    help="cost of a change in noise variances (default 3 ln(runs) + 2 ln(call paths))")
    sp.add_argument("--min-share", type=float, default=0.0,
                    help="skip call paths below this share of the run's time (default 0)")


def show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """perflake's own warnings (a metadata key some runs lack) as one ``perflake: warning:`` line."""
    from perflake.errors import MetadataKeyWarning

    if issubclass(category, MetadataKeyWarning):
        say(f"warning: {message}")
    else:
        _default(message, category, filename, lineno, file, line)
