"""``perflake plot imbalance|scaling|heatmap ... -o FILE.png|FILE.svg``: the plots of :mod:`perflake.plots`.

matplotlib is imported only when a plot is made, so registering these sub-commands costs nothing.  The output
extension is checked before any work is done; every user error is a PerflakeError (one line, exit 2).
"""

from __future__ import annotations

from perflake.cli.commands._checks import output_file, scheduler, whole
from perflake.cli.commands._common import EXIT_OK, changes_arguments, open_lake
from perflake.render.safe_text import escape


def _write(plot, args) -> int:
    path = plot.save(args.output, dpi=args.dpi)
    print(escape(f"wrote {path}"))
    return EXIT_OK


def _check_output(args) -> None:
    """Before any work: the extension (.png or .svg), a path that can be written, --top and --dpi in range."""
    from perflake.plots.figure import MAX_DPI, output_format

    output_format(args.output)
    output_file(args.output)
    whole("--top", args.top, low=1)
    whole("--dpi", args.dpi, low=1, high=MAX_DPI)


def cmd_imbalance(args) -> int:
    _check_output(args)
    scheduler(args.scheduler)
    from perflake.frame.defaults import per_rank_metric
    from perflake.plots import plot_imbalance

    lake = open_lake(args)
    metric = per_rank_metric(lake, args.metric, runs=args.runs or None, where=args.where)
    df = lake.imbalance(args.runs or None, metric=metric, absent=args.absent, where=args.where,
                        scheduler=args.scheduler)
    return _write(plot_imbalance(df, column=args.by, top=args.top, title=args.title), args)


def cmd_scaling(args) -> int:
    _check_output(args)
    from perflake.plots import plot_scaling

    table = open_lake(args).scaling_table(args.metric, args.by, where=args.where, stat=args.stat,
                                          unknown_keys="error")  # a misspelt meta:KEY is exit 2, as in the API
    metric = args.metric or table.attrs.get("metric")  # the default: perflake.analytics.ensemble.selection_metric
    return _write(plot_scaling(table, top=args.top, metric=metric, logx=args.logx, logy=args.logy,
                               ideal=args.ideal, title=args.title), args)


def cmd_heatmap(args) -> int:
    _check_output(args)
    from perflake.plots import plot_heatmap

    plot = plot_heatmap(open_lake(args), args.run, metric=args.metric, top=args.top, threads=args.threads,
                        log=args.log, title=args.title)
    return _write(plot, args)


def _common(sp, *, lake_arg, top: int) -> None:
    lake_arg(sp)
    sp.add_argument("-o", "--output", required=True, help="output file: .png or .svg")
    sp.add_argument("--top", type=int, default=top, help=f"how many call paths (default {top})")
    sp.add_argument("--title", help="replace the default title")
    sp.add_argument("--dpi", type=int, help="PNG resolution (default 100)")


def register(sub, *, lake_arg, fmt_arg) -> None:
    p = sub.add_parser("plot", help="write a plot (PNG or SVG): imbalance bars, scaling lines, rank heatmap",
                       description="Plots written as PNG or SVG, chosen by the extension of -o.")
    kinds = p.add_subparsers(dest="plot", required=True, metavar="{imbalance,scaling,heatmap,timeline}")

    sp = kinds.add_parser("imbalance", help="bars: the most imbalanced call paths (max/mean over ranks)")
    sp.add_argument("runs", nargs="*", help="run ids (default: all runs, or --where)")
    sp.add_argument("--metric", help="default: time when the selected runs have it, else chosen from their metrics")
    sp.add_argument("--by", default="imbalance", help="column to rank and draw: imbalance, max, mean, std, min")
    sp.add_argument("--absent", choices=["exclude", "zero"], default="exclude",
                    help="ranks without the call path: excluded (default) or counted as zero")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    _common(sp, lake_arg=lake_arg, top=20)
    sp.set_defaults(func=cmd_imbalance)

    sp = kinds.add_parser("scaling", help="lines: a metric per call path across a scaling study")
    sp.add_argument("--metric", help="default: chosen from the selected runs' metrics, an inclusive time first")
    sp.add_argument("--by", default="nprocs", help="catalog column or meta:KEY (default nprocs)")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--stat", default="mean", help="statistic across the runs of one scale (default mean)")
    sp.add_argument("--logx", action="store_true", help="logarithmic x axis")
    sp.add_argument("--logy", action="store_true", help="logarithmic y axis")
    sp.add_argument("--ideal", action="store_true", help="add ideal strong scaling (y0 * x0 / x) per line")
    _common(sp, lake_arg=lake_arg, top=8)
    sp.set_defaults(func=cmd_scaling)

    sp = kinds.add_parser("heatmap", help="call paths x ranks of one run, coloured by a metric")
    sp.add_argument("run", help="run id or unique prefix")
    sp.add_argument("--metric", help="default: the run's first exclusive metric")
    sp.add_argument("--threads", choices=["mean", "sum", "max", "min"], default="mean",
                    help="how the threads of a rank combine (default mean)")
    sp.add_argument("--log", action="store_true", help="logarithmic colour scale")
    _common(sp, lake_arg=lake_arg, top=20)
    sp.set_defaults(func=cmd_heatmap)

    register_timeline(kinds, lake_arg=lake_arg)


def cmd_timeline(args) -> int:
    _check_output(args)
    from perflake.cli.commands._changes import changes_of
    from perflake.plots.timeline import plot_timeline

    nodes = [int(p) if p.isdigit() else p for p in args.path] if args.path else None
    return _write(plot_timeline(changes_of(args), top=args.top, nodes=nodes, title=args.title), args)


def register_timeline(kinds, *, lake_arg) -> None:
    """``perflake plot timeline``: added to the plot command's sub-parsers."""
    sp = kinds.add_parser("timeline", help="a metric per call path against run order, change points marked")
    changes_arguments(sp, lake_arg)
    sp.add_argument("--path", action="append", metavar="NAME",
                    help="a call path's name or node id, repeatable (default: those that changed, then the largest)")
    sp.add_argument("-o", "--output", required=True, help="output file: .png or .svg")
    sp.add_argument("--top", type=int, default=6, help="how many call paths (default 6)")
    sp.add_argument("--title", help="replace the default title")
    sp.add_argument("--dpi", type=int, help="PNG resolution (default 100)")
    sp.set_defaults(func=cmd_timeline)
