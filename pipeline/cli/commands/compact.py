"""``perflake compact --lake L``: merge each table's small files (catalogs/compaction.py); no answer changes."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK, open_lake


def cmd_compact(args) -> int:
    done = open_lake(args).compact(target_bytes=int(args.target_mb * (1 << 20)))
    for c in done:
        print(f"{c.table}: {c.files_before} -> {c.files_after} files ({c.rewritten} rewritten)")
    print("compacted: the replaced files stay on disk for running readers until `perflake vacuum`")
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("compact", help="merge each table's small files into files of a target size")
    lake_arg(sp)
    sp.add_argument("--target-mb", type=float, default=128.0,
                    help="files smaller than this (MiB) are merged, into files of about this size (default 128)")
    sp.set_defaults(func=cmd_compact)
