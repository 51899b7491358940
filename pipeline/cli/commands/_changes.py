"""What ``perflake changes`` and ``perflake plot timeline`` share beyond their options (``changes_arguments`` in
_common): the call of perflake.analytics.changes with the options checked and a misspelt ``meta:KEY`` an error.
(The leading underscore keeps this module from being registered as a sub-command.)"""

from __future__ import annotations

import warnings

from perflake.cli.commands._checks import number, whole
from perflake.cli.commands._common import say


def changes_of(args):
    """perflake.analytics.changes for the options of ``changes_arguments`` (warnings on stderr, one line each;
    a meta:KEY no selected run has is an error, as in the Python API's Ensemble)."""
    from perflake.analytics.changes import changes
    from perflake.lake import Lake

    whole("--min-size", args.min_size, low=1)
    number("--penalty", args.penalty, low=0)
    number("--min-share", args.min_share, low=0, high=1)
    show = [s.strip() for s in args.show.split(",") if s.strip()] if args.show else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = changes(Lake(args.lake), args.order_by, where=args.where, metric=args.metric, show=show,
                         min_size=args.min_size, penalty=args.penalty, min_share=args.min_share,
                         unknown_keys="error")
    for w in caught:
        say(f"warning: {w.message}")
    return result
