"""``perflake ingest PATH... --lake L``: profiles (files or directories, walked) into a lake; safe from cron."""

from __future__ import annotations

import argparse
import json
import sys

from perflake.cli.commands._common import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, open_lake
from perflake.errors import PerflakeError

INGEST_EPILOG = """\
Runs are found recursively and sniffed.  Safe to run from cron every few minutes, also several at once:
  - a run whose bytes are already in the lake is skipped (also when it moved or was renamed);
  - an input whose files (names, sizes, mtimes) are unchanged since its last logged attempt is not read again;
  - an input that failed is retried only when it changed, after a perflake upgrade or a transient
    (memory, I/O) failure, or with --retry-failed;
  - every attempt is recorded in the lake's ingest_log table (perflake sql "select * from ingest_log");
  - symlinked directories, and symlinks to outside a scanned directory, are not followed (--follow-symlinks);
  - with --min-age SECONDS, a run with a file (or its directory) modified less than SECONDS ago is left for
    a later run: a profile still being written is not ingested half-written.

exit codes:
  0  all good: no input failed in this run (also when nothing was new; inputs skipped because they
     failed before and did not change are listed in the summary, not counted again)
  1  some inputs failed (reasons on stderr and in --json); the others were ingested
  2  could not run: bad arguments, the lake cannot be created or is not a lake, commit lock timeout,
     the lake cannot be written
"""


def cmd_ingest(args) -> int:
    from perflake.ingest.report import IngestReport

    lake = open_lake(args)
    try:
        report = lake.ingest(args.paths, progress=not args.quiet and not args.json, retry_failed=args.retry_failed,
                             follow_symlinks=args.follow_symlinks, scheduler=args.scheduler,
                             lock_timeout=args.lock_timeout, min_age=args.min_age)
    except (PerflakeError, OSError) as exc:  # could not run: no lake, lock timeout, the lake not writable...
        if args.debug:
            raise
        message = str(exc) if isinstance(exc, PerflakeError) else f"{args.lake}: {type(exc).__name__}: {exc}"
        print(f"perflake: {message}", file=sys.stderr)
        if args.json:
            print(json.dumps({**IngestReport().as_dict(lake=args.lake, exit_code=EXIT_ERROR), "error": message}))
        return EXIT_ERROR
    for _source, reason in report.failed:
        print(f"perflake: {reason}", file=sys.stderr)
    for _path, reason in report.unrecognised:
        print(f"perflake: warning: {reason}", file=sys.stderr)
    code = EXIT_OK if report.ok else EXIT_PARTIAL
    if args.json:
        print(json.dumps(report.as_dict(lake=args.lake, exit_code=code)))
    else:
        print(report.summary())
    return code


def _ingest_scheduler(text: str) -> str:
    from perflake.engine.parallel import LOCAL_SCHEDULERS

    if text.lower() not in LOCAL_SCHEDULERS and "://" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected threads, processes, synchronous or tcp://host:port")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds >= 0")
    return value


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("ingest", help="ingest profiles (files or directories, walked) into a lake",
                        epilog=INGEST_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("paths", nargs="+")
    lake_arg(sp)
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.add_argument("--json", action="store_true", help="machine-readable summary on stdout (counts, files, reasons)")
    sp.add_argument("--retry-failed", action="store_true", help="read again inputs that failed before, changed or not")
    sp.add_argument("--follow-symlinks", action="store_true",
                    help="follow symlinked directories and symlinks to outside the scanned directories")
    sp.add_argument("--scheduler", type=_ingest_scheduler,
                    help="threads (default), processes, synchronous, or a dask.distributed scheduler address "
                         "tcp://host:port; workers parse and normalise, this process commits")
    sp.add_argument("--lock-timeout", type=float, default=600.0,
                    help="seconds to wait for the lake's commit lock (default 600), then exit 2")
    sp.add_argument("--min-age", type=_seconds, default=0.0, metavar="SECONDS",
                    help="leave for a later run the inputs modified less than SECONDS ago (still being "
                         "written); default 0")
    sp.set_defaults(func=cmd_ingest)
