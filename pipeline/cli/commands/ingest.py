"""``perflake ingest PATH... --lake L``: profiles (files or directories, walked) into a lake; safe from cron."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading

from perflake.cli.commands._common import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, open_lake, say
from perflake.errors import PerflakeError

INGEST_EPILOG = """\
Runs are found recursively and sniffed.  Safe to run from cron every few minutes, also several at once:
  - a run whose bytes are already in the lake is skipped (also when it moved or was renamed);
  - an input whose files (names, sizes, mtimes) are unchanged since its last logged attempt is not read again;
  - an input that failed is retried only when it changed, after a perflake upgrade, or with --retry-failed;
    so is one that failed for the machine's sake in a way the next run would repeat: out of memory
    reading it, the lake's disk full, permission denied, a symbolic link loop (logged once, with the
    reason).  After freeing memory or disk space, run once with --retry-failed.  A passing I/O error
    (EIO) is tried again on the next run;
  - every attempt is recorded in the lake's ingest_log table (perflake sql "select * from ingest_log");
  - symlinked directories, and symlinks to outside a scanned directory, are not followed (--follow-symlinks);
  - with --min-age SECONDS, a run with a file (or its directory) modified less than SECONDS ago is left for
    a later run: a profile still being written is not ingested half-written;
  - problems are printed one per line for the first 10, then counted by kind (--json lists them all);
    what cannot be read is named: "permission denied" (files, and directories that cannot be listed),
    "symbolic link loop", "dangling symbolic link", "empty file".

exit codes:
  0  all good: no input failed in this run (also when nothing was new; inputs skipped because they
     failed before and did not change are listed in the summary, not counted again)
  1  some inputs failed (reasons on stderr and in --json); the others were ingested
  2  could not run, or stopped: bad arguments, the lake cannot be created or is not a lake, commit lock
     timeout, the lake cannot be written (disk full, out of memory, permission denied): one line on
     stderr, then the summary of what was done; what was committed stays, nothing half-written is visible
"""


def cmd_ingest(args) -> int:
    from perflake.ingest.report import IngestReport

    lake = open_lake(args)
    progress = not args.quiet and not args.json
    quiet_native = _NativeNoise(enabled=not (progress and sys.stderr.isatty())
                                and args.scheduler in (None, "threads", "synchronous", "sync"))
    try:
        with quiet_native:
            report = lake.ingest(args.paths, progress=progress, retry_failed=args.retry_failed,
                                 follow_symlinks=args.follow_symlinks, scheduler=args.scheduler,
                                 lock_timeout=args.lock_timeout, min_age=args.min_age)
    except BaseException as exc:  # could not run: no lake, lock timeout, the lake not writable or full...
        if args.debug or not (isinstance(exc, (PerflakeError, OSError)) or type(exc).__name__ == "PanicException"):
            raise
        message = str(exc) if isinstance(exc, PerflakeError) else f"{args.lake}: {type(exc).__name__}: {exc}"
        message = " ".join(message.split()) if "\n" in message else message  # one line (a panic's text)
        report = getattr(exc, "report", None)
        if report is not None:  # it stopped part-way: what it did, then why it stopped
            _print_problems(report, leave_out={o.source for o in report.outcomes if o.writing})
        say(message)
        if args.json:
            print(json.dumps({**(report or IngestReport()).as_dict(lake=args.lake, exit_code=EXIT_ERROR),
                              "error": message}))
        elif report is not None:
            print(report.summary())
        return EXIT_ERROR
    _print_problems(report)
    for note in report.notes:
        say(f"note: {note}")
    code = EXIT_OK if report.ok else EXIT_PARTIAL
    if args.json:
        print(json.dumps(report.as_dict(lake=args.lake, exit_code=code)))
    else:
        print(report.summary())
    return code


def _print_problems(report, *, leave_out=()) -> None:
    """The first problems one per line, the rest counted by kind (report.problem_lines)."""
    for line in report.problem_lines(leave_out=leave_out):
        say(line)


_PANIC = re.compile(r"^thread '.*' (?:\(\d+\) )?panicked at ")


class _NativeNoise:
    """While the lake is written, what native code prints on file descriptor 2 is held back: delta-rs's worker
    threads print each Rust panic there (a full disk makes several: "Already shut down"), which would drown
    the one line the command prints.  Afterwards the text is passed on, less those panic messages when the
    ingest stopped (the error line says why).  Only when no progress bar is drawn on a terminal, and with the
    in-process schedulers (a process pool's workers would keep the pipe open)."""

    def __init__(self, *, enabled: bool):
        self.enabled, self.chunks, self.saved, self.thread = enabled, [], None, None

    def __enter__(self):
        if not self.enabled:
            return self
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
            read, write = os.pipe()
        except (OSError, ValueError):
            self.enabled = False
            return self
        os.dup2(write, 2)
        os.close(write)
        self.thread = threading.Thread(target=self._drain, args=(read,), daemon=True)
        self.thread.start()
        return self

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as fh:
            while chunk := fh.read1(1 << 16):
                if sum(map(len, self.chunks)) < 1 << 20:  # a megabyte at most
                    self.chunks.append(chunk)

    def __exit__(self, kind, exc, tb):
        if not self.enabled:
            return False
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.thread.join(timeout=2.0)
        text = b"".join(self.chunks).decode("utf-8", "replace")
        if exc is not None and isinstance(exc, PerflakeError):
            text = _without_panics(text)
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()
        return False


def _without_panics(text: str) -> str:
    """``text`` less Rust's panic messages (from "thread 'x' panicked at" to its "note:" line)."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if _PANIC.match(line):
            skipping = True
        elif skipping and line.startswith("note: "):
            skipping = False
        elif not skipping and line.strip():
            out.append(line)
    return "".join(out)


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
    sp.add_argument("--retry-failed", action="store_true",
                    help="read again inputs that failed before, changed or not (also those that failed for want of "
                         "memory or disk space, or for a permission: after fixing that)")
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
