"""``perflake vacuum --lake L``: remove the leftovers of crashed ingests (files no committed batch owns)."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, open_lake


def cmd_vacuum(args) -> int:
    removed = open_lake(args).vacuum(older_than=args.older_than)
    for path in removed:
        print(f"removed {path}")
    print(f"removed {len(removed)} leftover files")
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("vacuum", help="remove leftovers of crashed ingests (files no committed batch owns)")
    lake_arg(sp)
    sp.add_argument("--older-than", type=float, default=3600.0, help="seconds (default 3600): younger files are kept")
    sp.set_defaults(func=cmd_vacuum)
