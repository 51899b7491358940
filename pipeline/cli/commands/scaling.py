"""``perflake scaling --lake L --by KEY``: a metric per call path pivoted by a metadata key (a scaling study)."""

from __future__ import annotations

from perflake.cli.commands._checks import whole
from perflake.cli.commands._common import EXIT_OK, default_metric, open_lake, paths_column, print_frame


def cmd_scaling(args) -> int:
    whole("--max-rows", args.max_rows, low=0)
    lake = open_lake(args)
    # a meta:KEY no selected run has (a typo) is exit 2 with the close keys, as the Ensemble object raises
    df = lake.scaling_table(default_metric(lake, args, several=False), args.by, where=args.where, stat=args.stat,
                            unknown_keys="error")
    df = df.reset_index(drop=True)
    df.columns = [str(c) for c in df.columns]
    print_frame(paths_column(df, args.format), args.format, max_rows=args.max_rows or None)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("scaling", help="a metric per call path pivoted by a metadata key (scaling study)")
    lake_arg(sp)
    sp.add_argument("--metric", help="default: chosen from the selected runs' metrics, an inclusive time first "
                                     "(printed on stderr)")
    sp.add_argument("--by", default="nprocs", help="catalog column or meta:KEY")
    sp.add_argument("--where")
    sp.add_argument("--stat", default="mean")
    sp.add_argument("--max-rows", type=int, default=50, help="rows in the table (default 50; 0: all)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_scaling)
