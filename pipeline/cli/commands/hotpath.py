"""``perflake hotpath RUN``: follow the child with the largest inclusive metric from the root (Hatchet's
hot_path: stop after the first child below --threshold of its parent; see perflake.render.hot_path)."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, load_graphframe, location, print_frame, run_args


def cmd_hotpath(args) -> int:
    from perflake.render.hot_path import hot_path, hot_path_table

    gf = load_graphframe(args)
    where = location(args, aggregate_default="mean")
    path = hot_path(gf, args.start, args.metric, args.threshold, **where)
    print_frame(hot_path_table(gf, path, args.metric, **where), args.format)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("hotpath", help="the hot path of a run: the largest child at each level")
    run_args(sp, lake_arg, aggregate_default="mean")
    sp.add_argument("--threshold", type=float, default=0.5,
                    help="stop after a child below this share of its parent (default 0.5)")
    sp.add_argument("--start", help="start at the first node of this name (default: the largest root)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_hotpath)
