"""``perflake migrate --lake L``: bring a lake written by an older perflake to this schema version."""

from __future__ import annotations

from perflake.cli.commands._common import EXIT_OK


def cmd_migrate(args) -> int:
    from perflake.catalogs.catalog import Catalog
    from perflake.catalogs.migrations import read_marker
    from perflake.catalogs.schema import SCHEMA_VERSION
    from perflake.render.safe_text import escape

    cat = Catalog(args.lake)  # opening migrates (under the commit lock) or says why it cannot
    for name in cat.migrated:
        print(f"applied {name}")
    history = read_marker(cat).get("migrations", [])
    print(f"{escape(args.lake)}: schema version {SCHEMA_VERSION}, up to date"
          + (f" ({len(history)} migration(s) recorded in perflake.json)" if history else ""))
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("migrate", help="migrate a lake written by an older perflake to this schema version")
    lake_arg(sp)
    sp.set_defaults(func=cmd_migrate)
