"""``perflake regress --baseline SQL --candidate SQL``: which call paths got slower, with corrected p-values;
a CI gate (see perflake.analytics.regress).

Exit codes: 0 no call path flagged; 1 a call path with at least --min-share of the run's time got slower by
more than --threshold with an adjusted p below --alpha; 2 could not run (bad arguments, no run selected...).
"""

from __future__ import annotations

import warnings

from perflake.cli.commands._common import say

EXIT_OK, EXIT_REGRESSION = 0, 1
EPILOG = """\
examples:
  perflake regress --lake L --baseline "metadata->>'$.branch' = 'main'" \\
      --candidate "metadata->>'$.commit' = 'abc123'" --json regress.json --markdown comment.md
  perflake regress --lake L --baseline "launch_time < '2026-03-01'" --candidate "launch_time >= '2026-03-01'"

exit codes:
  0  no regression: no call path with at least --min-share of the run time is slower by more than
     --threshold with a Benjamini-Hochberg adjusted p below --alpha
  1  a regression (the flagged call paths are marked in the table and listed in --json / --markdown)
  2  could not run: bad arguments, no lake, no run selected, an SQL error in a condition
"""


def _warnings(caught) -> None:
    for w in caught:
        say(f"warning: {w.message}")


def _table(result, top: int):
    import numpy as np

    from perflake.analytics.regress import _q

    df = result.table.head(top) if top else result.table
    q = _q(result.table, result.test)[: len(df)]
    return df.assign(q=q, flag=np.where(df["flagged"], "SLOWER", ""))[
        ["flag", "path", "share", "base_mean", "cand_mean", "change", "effect", "q", "n_base", "n_cand"]]


def cmd_regress(args) -> int:
    from perflake.analytics.regress import regress
    from perflake.cli.commands._checks import output_file, whole, written
    from perflake.cli.commands._common import paths_column as _paths_column
    from perflake.cli.commands._common import print_frame as _print_frame
    from perflake.lake import Lake

    whole("--top", args.top, low=0)
    for path in (args.json, args.markdown):
        if path:
            output_file(path)  # before the runs are read: one line naming the path
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = regress(Lake(args.lake), args.baseline, args.candidate, metric=args.metric, test=args.test,
                         alpha=args.alpha, threshold=args.threshold, min_share=args.min_share)
    _warnings(caught)
    for path, text in ((args.json, lambda: result.to_json()),
                       (args.markdown, lambda: result.to_markdown(args.top or 15))):
        if path:
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text())
            except OSError as exc:
                raise written(path, exc) from None
    if args.format == "table":
        _print_frame(_paths_column(_table(result, args.top), "table"), "table")
        print(result.summary())
    else:
        _print_frame(_paths_column(result.table, args.format), args.format)
    return EXIT_REGRESSION if result.exit_code else EXIT_OK


def _fraction(text: str) -> float:
    import argparse

    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number (0.05 or 5%)") from None
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number >= 0")
    return value


def register(sub, *, lake_arg, fmt_arg) -> None:
    import argparse

    sp = sub.add_parser("regress", help="call paths slower in a candidate group of runs than in a baseline (CI gate)",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    lake_arg(sp)
    sp.add_argument("--baseline", required=True, help="SQL condition on the runs catalog: the baseline runs")
    sp.add_argument("--candidate", required=True, help="SQL condition on the runs catalog: the candidate runs")
    sp.add_argument("--metric", help="default: chosen from the baseline's metrics, an inclusive time first")
    sp.add_argument("--test", choices=["welch", "mannwhitney", "both"], default="welch",
                    help="Welch's t (default), Mann-Whitney U, or both (both must be significant)")
    sp.add_argument("--alpha", type=_fraction, default=0.05, help="adjusted p-value (FDR) level (default 0.05)")
    sp.add_argument("--threshold", type=_fraction, default=0.05,
                    help="relative slowdown that fails the gate: 0.05 or 5%% (default 5%%)")
    sp.add_argument("--min-share", type=_fraction, default=0.01,
                    help="smallest share of the run's time a call path must have to fail the gate (default 1%%)")
    sp.add_argument("--top", type=int, default=10, help="rows in the table and the Markdown (default 10; 0: all)")
    sp.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    sp.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (a CI comment)")
    fmt_arg(sp)
    sp.set_defaults(func=cmd_regress)
