"""``perflake vacuum --lake L``: remove the rows of crashed ingests (batches no runs row names) and the files no
version of a table committed within ``--older-than`` seconds uses (replaced by compaction or deletes, or written
by a commit that failed), each reported once.  Always on the latest version: ``--as-of`` is refused."""

from __future__ import annotations

import argparse

from perflake.cli.commands._common import print_paths


def cmd_vacuum(args) -> int:
    from perflake.lake import Lake

    as_of = getattr(args, "as_of", None)  # (a global --as-of, if the CLI gains one, is refused the same way)
    if isinstance(as_of, str) and as_of.strip().lstrip("-").isdigit():
        as_of = int(as_of)
    removed = Lake(args.lake, as_of=as_of).vacuum(older_than=args.older_than)
    return print_paths("removed", removed, f"removed {len(removed)} leftovers (uncommitted batches, unused files)")


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("vacuum", help="remove leftovers of crashed ingests and files no recent version uses")
    lake_arg(sp)
    sp.add_argument("--older-than", type=float, default=3600.0,
                    help="seconds (default 3600), honoured to the second: younger uncommitted batches, files "
                         "replaced less long ago and untracked files modified less long ago are kept; "
                         "Lake(as_of=...) reaches back that far afterwards. Keep it above the longest running "
                         "write (an ingest's file is untracked until its commit)")
    sp.add_argument("--as-of", default=argparse.SUPPRESS,
                    help="refused: a vacuum judges what is committed on the latest version only")
    sp.set_defaults(func=cmd_vacuum)
