"""``perflake changes --order-by launch_time``: per call path, the runs where its level shifted (PELT, see
perflake.analytics.changes), each named with its metadata; and ``perflake plot timeline`` (registered by the
plot command through :func:`register_plot`)."""

from __future__ import annotations

import sys
import warnings


def _csv(text: str | None):
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def _result(args):
    from perflake.analytics.changes import changes
    from perflake.lake import Lake

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = changes(Lake(args.lake), args.order_by, where=args.where, metric=args.metric, show=_csv(args.show),
                         min_size=args.min_size, penalty=args.penalty, min_share=args.min_share)
    for w in caught:
        print(f"perflake: warning: {w.message}", file=sys.stderr)
    return result


def cmd_changes(args) -> int:
    from perflake.cli.app import _paths_column, _print_frame

    result = _result(args)
    df = result.changes
    if args.format == "table":
        df = df.drop(columns=["node_id", "run_id"])
        if "meta:commit" in df.columns:
            df["meta:commit"] = df["meta:commit"].map(lambda v: str(v)[:12] if v is not None else v)
    _print_frame(_paths_column(df, args.format), args.format, max_rows=args.top or None)
    if args.format == "table":
        analysed = int(result.paths["analysed"].sum())
        print(f"{len(result.changes)} change(s) in {result.changes['node_id'].nunique()} of {analysed} call paths "
              f"over {len(result.runs)} runs ordered by {result.order_by} ({result.metric}; penalty "
              f"{result.penalty:.3g}, at least {result.min_size} runs between changes)")
    return 0


def _common(sp, lake_arg) -> None:
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


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("changes", help="change points per call path over runs in order (e.g. a nightly series)")
    _common(sp, lake_arg)
    sp.add_argument("--top", type=int, default=50, help="rows in the table (default 50; 0: all)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_changes)


def cmd_timeline(args) -> int:
    from perflake.plots.figure import output_format

    output_format(args.output)
    from perflake.plots.timeline import plot_timeline

    nodes = [int(p) if p.isdigit() else p for p in args.path] if args.path else None
    plot = plot_timeline(_result(args), top=args.top, nodes=nodes, title=args.title)
    path = plot.save(args.output, dpi=args.dpi)
    print(f"wrote {path}")
    return 0


def register_plot(kinds, *, lake_arg) -> None:
    """``perflake plot timeline``: added to the plot command's sub-parsers."""
    sp = kinds.add_parser("timeline", help="a metric per call path against run order, change points marked")
    _common(sp, lake_arg)
    sp.add_argument("--path", action="append", metavar="NAME",
                    help="a call path's name or node id, repeatable (default: those that changed, then the largest)")
    sp.add_argument("-o", "--output", required=True, help="output file: .png or .svg")
    sp.add_argument("--top", type=int, default=6, help="how many call paths (default 6)")
    sp.add_argument("--title", help="replace the default title")
    sp.add_argument("--dpi", type=int, help="PNG resolution (default 100)")
    sp.set_defaults(func=cmd_timeline)
