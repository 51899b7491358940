"""``perflake vacuum --lake L``: remove the leftovers of crashed ingests (files no committed batch owns)."""

from __future__ import annotations

from perflake.cli.commands._common import open_lake, print_paths


def cmd_vacuum(args) -> int:
    removed = open_lake(args).vacuum(older_than=args.older_than)
    return print_paths("removed", removed, f"removed {len(removed)} leftover files")


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("vacuum", help="remove leftovers of crashed ingests (files no committed batch owns)")
    lake_arg(sp)
    sp.add_argument("--older-than", type=float, default=3600.0, help="seconds (default 3600): younger files are kept")
    sp.set_defaults(func=cmd_vacuum)
