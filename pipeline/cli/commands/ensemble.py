"""``perflake ensemble --lake L``: per call path statistics across runs, grouped by metadata."""

from __future__ import annotations

from perflake.cli.commands._checks import scheduler, whole
from perflake.cli.commands._common import EXIT_OK, default_metric, open_lake, paths_column, print_frame


def cmd_ensemble(args) -> int:
    group_by = args.group_by.split(",") if args.group_by else None
    stats = tuple(args.stats.split(","))
    whole("--ddof", args.ddof, low=0)
    whole("--max-rows", args.max_rows, low=0)
    scheduler(args.scheduler)
    lake = open_lake(args)
    # a meta:KEY no selected run has (a typo) is exit 2 with the close keys, as the Ensemble object raises
    df = lake.ensemble(args.where, group_by, metric=default_metric(lake, args), stats=stats, ddof=args.ddof,
                       scheduler=args.scheduler, unknown_keys="error")
    print_frame(paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.max_rows or None)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("ensemble", help="per call path statistics across runs, grouped by metadata")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"nprocs >= 64\"")
    sp.add_argument("--group-by", help="catalog columns or meta:KEY, comma-separated")
    sp.add_argument("--metric", help="metric(s), comma-separated (default: chosen from the selected runs' "
                                     "metrics, an inclusive time first; printed on stderr)")
    sp.add_argument("--stats", default="count,mean,median,std,min,max")
    sp.add_argument("--ddof", type=int, default=1, help="std/var divisor: count - ddof (default 1)")
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    sp.add_argument("--max-rows", type=int, default=50, help="rows in the table (default 50; 0: all)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_ensemble)
