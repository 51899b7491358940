"""``perflake runs --lake L [--where SQL]``: the runs catalog."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, open_lake, print_frame


def cmd_runs(args) -> int:
    lake = open_lake(args)
    df = lake.sql(
        "select run_id, format, app, ranks, threads, n_nodes, exc_metrics, launch_time, source from runs "
        "order by ingested_at, run_id"
    )
    if args.where:
        from perflake.analytics.lake_query import select_runs

        df = df[df["run_id"].isin(set(select_runs(lake, where=args.where)))]
    print_frame(df, args.format)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("runs", help="list the runs catalog")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"format = 'tau' and ranks >= 64\"")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_runs)
