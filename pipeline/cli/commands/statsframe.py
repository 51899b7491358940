"""``perflake statsframe``: Thicket's statistics of the selected runs per call path, as the Ensemble's statsframe
(perflake.analytics.ensemble_frame / ensemble_stats): ``--stats`` in one DuckDB pass, ``--boxplot`` and
``--normality`` as Thicket's, ``--thicket-json OUT`` writes the ensemble and its statsframe for Thicket;
``-o FILE.png|svg [--plot box|violin]`` also draws the top call paths' distributions
(perflake.plots.distributions)."""

from __future__ import annotations

from perflake.cli.commands._common import say

PLOT_KINDS = ("box", "violin")


def _check_plot(args) -> None:
    """Plot options checked before any work: one line and exit 2 for a bad kind, extension or count."""
    from perflake.errors import UsageError

    if args.output is None:
        if args.plot is not None or args.group_by is not None:
            raise UsageError(f"{'--plot' if args.plot is not None else '--group-by'} draws a plot: "
                             "give -o FILE.png or -o FILE.svg")
        return
    if args.plot is not None and args.plot not in PLOT_KINDS:
        raise UsageError(f"--plot {args.plot!r}: use box or violin")
    if args.plot_top < 1:
        raise UsageError(f"--plot-top must be >= 1, not {args.plot_top}")
    from perflake.plots.figure import output_format

    output_format(args.output)


def _plot(ens, metric, args) -> None:
    from perflake.plots.distributions import plot_distributions

    keys = [k.strip() for k in args.group_by.split(",") if k.strip()] if args.group_by else None
    plot = plot_distributions(ens, metric, top=args.plot_top, group_by=keys, kind=args.plot or "box", log=args.log)
    say(f"wrote {plot.save(args.output, dpi=args.dpi)}")


def cmd_statsframe(args) -> int:
    from perflake.cli.commands._common import open_lake as _lake
    from perflake.cli.commands._common import paths_column as _paths_column
    from perflake.cli.commands._common import print_frame as _print_frame

    _check_plot(args)
    from perflake.cli.commands._checks import output_file

    for path in (args.output, args.thicket_json):  # one line before any work, not after it
        if path is not None:
            output_file(path)
    lake = _lake(args)
    metrics = args.metric.split(",") if args.metric else None
    ens = lake.ensemble_of(args.where, metric=metrics)
    if metrics is None:
        metrics = [ens.default_metric]
        say(f"metric {metrics[0]!r} (choose with --metric)")
        ens = ens.__class__.from_lake(lake, args.where, metric=metrics)
    ens.stats.describe(metrics, args.stats.split(","), ddof=args.ddof)
    if args.boxplot:
        ens.stats.calc_boxplot_statistics(metrics)
    if args.normality:
        ens.stats.check_normality(metrics)
    if args.thicket_json:
        ens.to_thicket_json(args.thicket_json)
        say(f"wrote {args.thicket_json}")
    if args.output:
        _plot(ens, metrics[0], args)
    sf = ens.statsframe
    out = sf.reset_index(drop=True)
    out.insert(0, "path", [[str(n.frame.get("name")) for n in node.path()] for node in sf.index])
    for c in out.columns:
        if out[c].dtype == object and c not in ("path", "name"):
            out[c] = [", ".join(map(str, v)) if isinstance(v, list) else v for v in out[c]]
    _print_frame(_paths_column(out, args.format), args.format, max_rows=args.max_rows)
    return 0


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("statsframe", help="Thicket's statistics per call path across the selected runs")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"nprocs >= 64\"")
    sp.add_argument("--metric", help="metric(s), comma-separated (default: the selected runs' default metric)")
    sp.add_argument("--stats", default="count,mean,median,std,min,max",
                    help="count, sum, mean, median, std, var, min, max, pNN (comma-separated; one DuckDB pass)")
    sp.add_argument("--ddof", type=int, default=1, help="std/var divide by count - ddof (default 1, as pandas)")
    sp.add_argument("--boxplot", action="store_true", help="Thicket's boxplot statistics (quartiles, fences, outliers)")
    sp.add_argument("--normality", action="store_true", help="Shapiro-Wilk normality test (Thicket's check_normality)")
    sp.add_argument("--thicket-json", metavar="OUT", help="also write the ensemble and statsframe as Thicket JSON")
    sp.add_argument("-o", "--output", metavar="FILE",
                    help="also draw the distributions of the first metric at the top call paths: .png or .svg")
    sp.add_argument("--plot", metavar="box|violin", help="with -o: box plots (default) or violins")
    sp.add_argument("--plot-top", type=int, default=10,
                    help="with -o: call paths drawn, the largest mean over the runs first (default 10)")
    sp.add_argument("--group-by", metavar="KEYS",
                    help="with -o: metadata key(s), comma-separated: one box per group side by side")
    sp.add_argument("--log", action="store_true", help="with -o: logarithmic value axis")
    sp.add_argument("--dpi", type=int, help="with -o: PNG resolution (default 100)")
    sp.add_argument("--max-rows", type=int, default=50)
    fmt_arg(sp)
    sp.set_defaults(func=cmd_statsframe)
