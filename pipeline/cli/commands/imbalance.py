"""``perflake imbalance [RUN...] --lake L``: per-rank load imbalance per call path (max/mean over ranks)."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, lists_column, open_lake, paths_column, print_frame
from perflake.frame.defaults import per_rank_metric


def cmd_imbalance(args) -> int:
    lake = open_lake(args)
    metric = per_rank_metric(lake, args.metric, runs=args.runs or None, where=args.where)
    df = lake.imbalance(args.runs or None, metric=metric, top=args.top, absent=args.absent, k=args.k,
                        where=args.where, scheduler=args.scheduler, by=args.by, min_share=args.min_share)
    df = df.drop(columns=["node_id"])
    if args.format != "json":
        df = lists_column(df)
    print_frame(paths_column(df, args.format), args.format)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("imbalance", help="per-rank load imbalance per call path (max/mean over ranks)")
    sp.add_argument("runs", nargs="*", help="run ids (default: all runs, or --where)")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: time when the selected runs have it, else chosen from their metrics")
    sp.add_argument("--top", type=int, default=10)
    sp.add_argument("--absent", choices=["exclude", "zero"], default="exclude",
                    help="ranks without the call path: excluded (default) or counted as zero")
    sp.add_argument("--k", type=int, default=3, help="how many top ranks to list")
    sp.add_argument("--by", choices=["imbalance", "max", "std", "mean", "time"], default="imbalance",
                    help="rank by max/mean (default), the slowest location, std, mean, or the total time")
    sp.add_argument("--min-share", type=float, default=0.01, help="leave out call paths below this fraction of "
                                                                  "their run's total time (default 0.01; 0 keeps all)")
    sp.add_argument("--where", help="SQL condition on the runs catalog")
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_imbalance)
