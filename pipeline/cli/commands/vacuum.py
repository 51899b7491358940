"""``perflake vacuum --lake L``: remove the rows of crashed ingests (batches no runs row names) and the files no
recent version of a table uses (replaced by compaction or deletes), older than ``--older-than`` seconds."""

from __future__ import annotations

from perflake.cli.commands._common import open_lake, print_paths


def cmd_vacuum(args) -> int:
    removed = open_lake(args).vacuum(older_than=args.older_than)
    return print_paths("removed", removed, f"removed {len(removed)} leftovers (uncommitted batches, unused files)")


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("vacuum", help="remove leftovers of crashed ingests and files no recent version uses")
    lake_arg(sp)
    sp.add_argument("--older-than", type=float, default=3600.0,
                    help="seconds (default 3600): younger batches and files are kept; Lake(as_of=...) cannot "
                         "reach back past it afterwards")
    sp.set_defaults(func=cmd_vacuum)
