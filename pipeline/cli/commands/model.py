"""``perflake model --by nprocs --metric time [--predict 4096] [-o models.png]``: Extra-P scaling models per call
path (perflake.analytics.models), as a table, CSV or JSON, and optionally a plot of the models over the points."""

from __future__ import annotations

from perflake.cli.commands._checks import output_file, whole
from perflake.cli.commands._common import EXIT_OK, open_lake, paths_column, print_frame, say

SHOWN = ["name", "path", "model", "smape", "ar2", "points"]


def cmd_model(args) -> int:
    from perflake.analytics.models import ranked, scaling_models

    whole("--min-points", args.min_points, low=3)
    whole("--top", args.top, low=0)
    whole("--plot-top", args.plot_top, low=1)
    if args.output:
        from perflake.plots.figure import output_format

        output_format(args.output)  # a bad extension or a path that cannot be written fails before any work
        output_file(args.output)
    lake = open_lake(args)
    models = scaling_models(lake, args.by, args.metric, where=args.where, stat=args.stat, predict=args.predict,
                            negative=args.negative, min_points=args.min_points, unknown_keys="error")
    if not args.metric:
        say(f"metric {models.metric} (the selected runs' default; --metric to choose)")
    table = ranked(models, args.top or None)
    columns = SHOWN + (["predicted"] if models.at is not None else [])
    if args.format != "table":
        columns += ["c0", "c1", "poly", "log", "rss", "re"]
    print_frame(paths_column(table[columns], args.format), args.format)
    if args.output:
        from perflake.plots import plot_models

        path = plot_models(models, top=args.plot_top, logx=not args.linear, logy=args.logy).save(args.output)
        say(f"wrote {path}")
    return EXIT_OK


def _number(text: str) -> float:
    import argparse

    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("model", help="scaling models per call path (Extra-P's c0 + c1 * p^i * log2(p)^j)",
                        description="Fit Extra-P's performance-model normal form per call path over a catalog "
                                    "column or metadata key; the model is chosen by cross-validated SMAPE.")
    lake_arg(sp)
    sp.add_argument("--by", default="nprocs", help="catalog column or meta:KEY with numeric values (default nprocs)")
    sp.add_argument("--metric", help="default: chosen from the selected runs' metrics, an inclusive time first")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--stat", default="mean", help="how the runs of one point combine: mean (Extra-P's "
                                                   "default), median, min, max, pNN")
    sp.add_argument("--predict", type=_number, help="evaluate every model at this value of the key")
    sp.add_argument("--negative", action="store_true",
                    help="also try negative exponents (strong scaling: the metric falls as the key grows)")
    sp.add_argument("--min-points", type=int, default=3, help="fewer points give no model (default 3; "
                                                              "Extra-P asks for 5)")
    sp.add_argument("--top", type=int, default=20, help="rows to show, most expensive first (0 for all)")
    sp.add_argument("-o", "--output", help="also plot the models over the points: .png or .svg")
    sp.add_argument("--plot-top", type=int, default=6, help="call paths in the plot (default 6)")
    sp.add_argument("--linear", action="store_true", help="plot: linear x axis (default logarithmic)")
    sp.add_argument("--logy", action="store_true", help="plot: logarithmic y axis")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_model)
