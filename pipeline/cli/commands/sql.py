"""``perflake sql "select ..." --lake L [--allow-write]``: read-only DuckDB SQL over the views runs, nodes, edges,
metrics, confined to the lake's files (Lake.sql)."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, open_lake, print_frame


def cmd_sql(args) -> int:
    print_frame(open_lake(args).sql(args.query, unsafe=args.allow_write), args.format, max_rows=args.max_rows)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("sql", help="run DuckDB SQL over the views runs, nodes, edges, metrics, rank_summary, "
                                    "ingest_log")
    sp.add_argument("query")
    lake_arg(sp)
    fmt_arg(sp)
    sp.add_argument("--max-rows", type=int, default=100)
    sp.add_argument("--allow-write", action="store_true",
                    help="run any statements with DuckDB's full power (files anywhere, writes); by default one "
                         "read-only query that reads only the lake's files")
    sp.set_defaults(func=cmd_sql)
