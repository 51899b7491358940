"""The ``perflake`` command line: the parser with the global options, one sub-parser per module of
:mod:`perflake.cli.commands`, and the error handling around the command that runs.

Exit codes: 0 all good; 1 some inputs failed (the rest was done); 2 could not run (bad arguments, no lake,
SQL error...).  A user error prints one line ``perflake: <message>``, control characters in it escaped
(perflake.render.safe_text); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from perflake.cli.commands import register_all
from perflake.cli.commands._common import EXIT_ERROR, EXIT_OK, error_text, show_warning
from perflake.engine import resources
from perflake.errors import PerflakeError


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose error line escapes control characters (an argument it quotes back may hold some);
    the sub-parsers are of this class too."""

    def error(self, message):
        from perflake.render.safe_text import escape

        super().error(escape(message))


def _parser() -> argparse.ArgumentParser:
    from perflake._version import __version__

    p = _Parser(prog="perflake", description="A columnar data lake for HPC call-path profiles.")
    p.add_argument("--version", action="version", version=f"perflake {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    register_all(p.add_subparsers(dest="command", required=True))
    return p


def main(argv=None) -> int:
    try:  # under `ulimit -v`: first, before any library starts (building the parser loads pyarrow)
        resources.configure()
    except PerflakeError as exc:  # a limit too small (the parser itself might not fit), a bad override: one line
        print(f"perflake: {error_text(exc)}", file=sys.stderr)
        return EXIT_ERROR
    args = _parser().parse_args(argv)
    warnings.showwarning = show_warning
    try:
        return args.func(args)
    except PerflakeError as exc:
        if args.debug:
            raise
        print(f"perflake: {error_text(exc)}", file=sys.stderr)  # names in it: control characters escaped
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("perflake: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
