"""``perflake tree RUN``: a run's call tree as text (a run id with ``--lake``, or a profile path)."""

from __future__ import annotations

import sys

from perflake.cli.commands._common import EXIT_OK, load_graphframe


def cmd_tree(args) -> int:
    gf = load_graphframe(args)
    metric = args.metric.split(",") if args.metric and "," in args.metric else args.metric
    if metric is None:  # an inclusive metric whatever the input (perflake.frame.defaults.shown_metric)
        from perflake.frame.defaults import shown_metric

        metric = shown_metric(gf)
        if args.no_header:  # the header names it otherwise
            print(f"perflake: showing metric {metric!r} (choose with --metric)", file=sys.stderr)
    colour = True if args.color else (False if args.no_color else None)
    sys.stdout.write(gf.tree(metric_column=metric, precision=args.precision, rank=args.rank, thread=args.thread,
                             depth=args.depth, expand_name=args.expand_name, render_header=not args.no_header,
                             colour=colour))
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("tree", help="print a run's call tree (a run id with --lake, or a profile path)")
    sp.add_argument("run")
    lake_arg(sp, required=False)
    sp.add_argument("--metric", help="metric column(s), comma-separated (default: an inclusive metric of the "
                                     "run, named in the header)")
    sp.add_argument("--precision", type=int, default=3)
    sp.add_argument("--rank", type=int, default=0)
    sp.add_argument("--thread", type=int, default=0)
    sp.add_argument("--depth", type=int, default=10000)
    sp.add_argument("--expand-name", action="store_true")
    sp.add_argument("--no-header", action="store_true")
    sp.add_argument("--color", action="store_true")
    sp.add_argument("--no-color", action="store_true")
    sp.set_defaults(func=cmd_tree)
