"""``perflake compare A B --lake L``: two runs, or two groups of runs (comma-separated), per call path."""

from __future__ import annotations

from perflake.cli.commands._checks import scheduler, whole
from perflake.cli.commands._common import EXIT_OK, open_lake, paths_column, print_frame
from perflake.frame.defaults import per_rank_metric


def _side(text: str):
    return text.split(",") if "," in text else text


def cmd_compare(args) -> int:
    whole("--top", args.top, low=0)
    scheduler(args.scheduler)
    lake = open_lake(args)
    a, b = _side(args.run_a), _side(args.run_b)
    metric = per_rank_metric(lake, args.metric, runs=[*([a] if isinstance(a, str) else a),
                                                     *([b] if isinstance(b, str) else b)])
    df = lake.compare(a, b, metric=metric, scheduler=args.scheduler)
    print_frame(paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.top or None)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("compare", help="compare two runs or two groups (comma-separated) per call path")
    sp.add_argument("run_a")
    sp.add_argument("run_b")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: time when both sides have it, else chosen from their metrics")
    sp.add_argument("--top", type=int, default=15, help="rows in the table (default 15; 0: all)")
    sp.add_argument("--scheduler", help="dask.distributed scheduler address (default: local)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_compare)
