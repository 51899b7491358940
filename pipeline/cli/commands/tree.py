"""``perflake tree RUN``: a run's call tree as text (a run id with ``--lake``, or a profile path).

Names are escaped and each line fits the terminal (perflake.render.tree); colour on a terminal unless
$NO_COLOR is set (https://no-color.org) or ``--no-color``; ``--color`` forces it."""

from __future__ import annotations

import sys

from perflake.cli.commands._common import EXIT_OK, load_graphframe, say


def cmd_tree(args) -> int:
    gf = load_graphframe(args)
    metric = args.metric.split(",") if args.metric and "," in args.metric else args.metric
    if metric is None:  # an inclusive metric whatever the input (perflake.frame.defaults.shown_metric)
        from perflake.frame.defaults import shown_metric

        metric = shown_metric(gf)
        if args.no_header:  # the header names it otherwise
            say(f"showing metric {metric!r} (choose with --metric)")
    from perflake.render.safe_text import output_width
    from perflake.render.tree import render

    colour = True if args.color else (False if args.no_color else None)  # None: a terminal and no $NO_COLOR
    sys.stdout.write(render(gf, metric_column=metric, precision=args.precision, rank=args.rank, thread=args.thread,
                            depth=args.depth, expand_name=args.expand_name, render_header=not args.no_header,
                            colour=colour, width=output_width()))
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
    sp.add_argument("--expand-name", action="store_true",
                    help="whole names: neither Hatchet's 39-character rule nor the terminal's width cuts them")
    sp.add_argument("--no-header", action="store_true")
    sp.add_argument("--color", action="store_true", help="colour even when piped or with $NO_COLOR set")
    sp.add_argument("--no-color", action="store_true",
                    help="no colour (default: colour on a terminal unless $NO_COLOR is set)")
    sp.set_defaults(func=cmd_tree)
