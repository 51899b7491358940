"""``perflake flat RUN``: a flat profile, metrics summed per function across calling contexts (Hatchet's recipe:
mean over ranks per node, then sum per name; see perflake.render.flat_profile)."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, load_graphframe, location, print_frame, run_args


def cmd_flat(args) -> int:
    from perflake.render.flat_profile import flat_profile

    gf = load_graphframe(args)
    metrics = args.metric.split(",") if args.metric else None
    df = flat_profile(gf, args.by, metrics, **location(args, aggregate_default="mean")).reset_index()
    import pandas as pd

    df[args.by] = [f"(no {args.by})" if pd.isna(v) else str(v) for v in df[args.by]]
    print_frame(df.head(args.top) if args.top else df, args.format)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("flat", help="flat profile of a run: metrics summed per function across call paths")
    run_args(sp, lake_arg, aggregate_default="mean")
    sp.add_argument("--by", default="name", help="group by name (default), file, module or type")
    sp.add_argument("--top", type=int, default=20, help="rows to show (default 20; 0 for all)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_flat)
