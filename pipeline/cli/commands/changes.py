"""``perflake changes --order-by launch_time``: per call path, the runs where its level shifted (PELT, see
perflake.analytics.changes), each named with its metadata (``perflake plot timeline`` draws the same result).

Runs without a value of the order key are left out with one warning saying how many; none left, a misspelt
``meta:KEY`` (in --order-by or --show: the close keys are named) or an option out of range is one line, exit 2.
"""

from __future__ import annotations

from perflake.cli.commands._changes import changes_of
from perflake.cli.commands._checks import whole
from perflake.cli.commands._common import changes_arguments, paths_column, print_frame


def cmd_changes(args) -> int:
    whole("--top", args.top, low=0)
    result = changes_of(args)
    df = result.changes
    if args.format == "table":
        df = df.drop(columns=["node_id", "run_id"])
        if "meta:commit" in df.columns:
            df["meta:commit"] = df["meta:commit"].map(lambda v: str(v)[:12] if v is not None else v)
    print_frame(paths_column(df, args.format), args.format, max_rows=args.top or None)
    if args.format == "table":
        analysed = int(result.paths["analysed"].sum())
        print(f"{len(result.changes)} change(s) in {result.changes['node_id'].nunique()} of {analysed} call paths "
              f"over {len(result.runs)} runs ordered by {result.order_by} ({result.metric}; penalty "
              f"{result.penalty:.3g}, at least {result.min_size} runs between changes)")
    return 0


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("changes", help="change points per call path over runs in order (e.g. a nightly series)")
    changes_arguments(sp, lake_arg)
    sp.add_argument("--top", type=int, default=50, help="rows in the table (default 50; 0: all)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_changes)
