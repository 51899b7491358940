"""``perflake export RUN [RUN...] --to hatchet-json|thicket-json -o OUT``: runs in Hatchet's or Thicket's JSON, so
that Hatchet, Thicket and the tools built on them open them (the formats: perflake.interop.json_files).

RUN is a run id (or unique prefix) with ``--lake``, or a profile path read directly.  ``hatchet-json``: one run
goes to the file OUT (or ``OUT/<run id>.json`` when OUT is a directory), several to the directory OUT, one
``<run id>.json`` each.  ``thicket-json``: any number of runs in the one file OUT, profiles labelled by run id.
A profile read without a lake is labelled with the run id a lake would give it (the hash of its files' content).
"""

from __future__ import annotations

import os

from perflake.cli.commands._checks import output_dir, output_file
from perflake.cli.commands._common import print_paths

FORMATS = ("hatchet-json", "thicket-json")


def _from_lake(lake_root: str, runs: list[str]) -> tuple[dict, dict]:
    from perflake.lake import Lake

    lake = Lake(lake_root)
    gfs, sources = {}, {}
    for run in runs:
        row = lake.resolve(run)
        gfs[row["run_id"]] = lake.graphframe(row["run_id"])
        sources[row["run_id"]] = row["source"]
    return gfs, sources


def _from_paths(paths: list[str]) -> tuple[dict, dict]:
    from perflake import readers
    from perflake.errors import FormatNotRecognized
    from perflake.ingest.driver import content_hash
    from perflake.read import read

    gfs, sources = {}, {}
    for path in paths:
        if not os.path.exists(path):
            raise FormatNotRecognized(path, "no such file or directory")
        kind = readers.detect(path)
        if kind is None:
            known = ", ".join(readers.REGISTRY)
            raise FormatNotRecognized(path, f"not a profile perflake can read (formats: {known})")
        run_id = content_hash(readers.get_reader(kind).files(path), path)[0][:16]
        gfs[run_id] = read(path, kind)
        sources[run_id] = path
    return gfs, sources


def cmd_export(args) -> int:
    from perflake.interop import json_files as hatchet_json

    # before any run is read: a path that cannot be written is one line naming it
    if args.to == "thicket-json":
        output_file(args.output)
    elif len(args.runs) == 1:
        output_file(args.output, directory_ok=True)
    else:
        output_dir(args.output)
    gfs, sources = _from_lake(args.lake, args.runs) if args.lake else _from_paths(args.runs)
    out = args.output
    if args.to == "thicket-json":
        hatchet_json.write_thicket_json(gfs, out, sources=sources)
        written = [out]
    elif len(gfs) == 1 and not os.path.isdir(out):
        hatchet_json.write_hatchet_json(next(iter(gfs.values())), out)
        written = [out]
    else:
        written = hatchet_json.write_hatchet_json_dir(gfs, out)
    return print_paths("wrote", written, f"exported {len(gfs)} run{'s' if len(gfs) != 1 else ''} as {args.to}")


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("export", help="write runs as Hatchet JSON (a file per run) or Thicket JSON (one file)")
    sp.add_argument("runs", nargs="+", metavar="RUN", help="run ids with --lake, or profile paths")
    lake_arg(sp, required=False)
    sp.add_argument("--to", choices=FORMATS, default="hatchet-json",
                    help="hatchet-json (default; hatchet.GraphFrame.from_json reads it) or thicket-json "
                         "(thicket.Thicket.from_json)")
    sp.add_argument("-o", "--output", required=True,
                    help="the file to write; a directory for several runs as hatchet-json")
    sp.set_defaults(func=cmd_export)
