"""``perflake query QUERY [RUN...] --lake L``: a call-path query (Hatchet's string or object dialect) over runs."""

from __future__ import annotations

import json

from perflake.cli.commands._common import EXIT_OK, open_lake, paths_column, print_frame, say
from perflake.errors import UsageError


def _query_text(text: str):
    """The string dialect as is; a JSON list is Hatchet's object dialect (``["*", {...}]`` pairs as tuples)."""
    if not text.lstrip().startswith("["):
        return text
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"the query looks like the object dialect (JSON) but is not JSON: {exc}") from None
    return [tuple(item) if isinstance(item, list) else item for item in items]


def cmd_query(args) -> int:
    from perflake.analytics.lake_query import select_runs, unknown_attributes

    lake, q = open_lake(args), _query_text(args.query)
    df = lake.query(q, runs=args.runs or None, where=args.where, multi_index_mode=args.multi_index_mode)
    for attr in unknown_attributes(lake, q, select_runs(lake, args.runs or None, args.where)):
        say(f"warning: no selected run has an attribute or metric {attr!r}: it matches nothing")
    print_frame(paths_column(df.drop(columns=["node_id"]), args.format), args.format, max_rows=args.max_rows)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("query", help="call-path query (Hatchet's string or object dialect) over runs of the lake")
    sp.add_argument("query", help='string dialect, e.g. MATCH (".", p)->("*", q) WHERE p."name" =~ "MPI_.*", '
                                  'or object dialect as JSON, e.g. \'[{"name": "MPI_.*"}]\' or '
                                  '\'["*", {"time (inc)": "> 10"}]\'')
    sp.add_argument("runs", nargs="*", help="run ids (default: all runs, or --where)")
    lake_arg(sp)
    sp.add_argument("--where", help="SQL condition on the runs catalog, e.g. \"format = 'tau' and ranks >= 64\"")
    sp.add_argument("--multi-index-mode", choices=["mean", "any", "all", "off"], default="mean",
                    help="metric conditions on multi-rank runs: mean = on each node's mean over ranks/threads "
                         "(default), any/all = on any/every rank and thread, off = refuse multi-rank runs (Hatchet's)")
    sp.add_argument("--max-rows", type=int, default=100)
    fmt_arg(sp)
    sp.set_defaults(func=cmd_query)
