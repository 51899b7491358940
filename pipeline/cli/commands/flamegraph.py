"""``perflake flamegraph RUN -o out.svg|out.png|out.folded``: a flame graph of one run, drawn by perflake.

RUN is a run id (or unique prefix) with ``--lake``, or a profile path read directly, as for ``perflake tree``;
one location (``--rank R [--thread T]``) or an aggregate over all of them (``--aggregate sum|mean|min|max``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from perflake.cli.commands._checks import number, output_file, written
from perflake.cli.commands._common import EXIT_OK, load_graphframe, location, run_args
from perflake.errors import RenderError
from perflake.render.safe_text import escape

MIN_WIDTH, MAX_WIDTH = 100, 100_000  # pixels: narrower draws nothing legible, wider no viewer opens


def cmd_flamegraph(args) -> int:
    from perflake.render.flamegraph import OUTPUTS, save

    out = Path(args.output)
    if out.suffix.lower() not in OUTPUTS:
        raise RenderError(f"{out}: cannot write {out.suffix or 'a file without suffix'!r} (use {', '.join(OUTPUTS)})")
    folded = out.suffix.lower() == ".folded"
    if args.scale != 1.0 and not folded:
        raise RenderError("--scale applies to .folded output only (SVG and PNG draw the values as they are)")
    if not (math.isfinite(args.scale) and args.scale > 0):
        raise RenderError(f"--scale must be a finite number above 0, not {args.scale:g}")
    number("--width", args.width, low=MIN_WIDTH, high=MAX_WIDTH)
    output_file(out)  # before the run is read: a path that cannot be written is one line, at once
    gf = load_graphframe(args)
    style = {"width": args.width} if not folded else {"scale": args.scale}
    try:
        n = save(gf, out, args.metric, icicle=args.icicle, color_by=args.color_by, title=args.title,
                 **location(args, aggregate_default=None), **style)
    except OSError as exc:
        raise written(out, exc) from None
    kind = "lines" if folded else "frames"
    print(escape(f"wrote {out} ({n} {kind})"))
    if folded:
        from perflake.render.folded import lost_to_rounding

        lost = lost_to_rounding(gf, args.metric, scale=args.scale,
                                **location(args, aggregate_default=None))
        if lost > 0.5:
            print(f"perflake: warning: {lost:.0%} of the measured values are below 0.5 and were written as 0 "
                  f"(folded stacks hold integers): try --scale 1e6 (seconds as microseconds)", file=sys.stderr)
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("flamegraph", help="draw a run's flame graph: SVG, PNG or folded stacks (by -o suffix)")
    run_args(sp, lake_arg, aggregate_default=None)
    sp.add_argument("-o", "--output", required=True, help="out.svg, out.png or out.folded")
    sp.add_argument("--icicle", action="store_true", help="root on top (icicle chart) instead of at the bottom")
    sp.add_argument("--color-by", help="colour by this metric (default: by frame name)")
    sp.add_argument("--title", help="title of the picture")
    sp.add_argument("--width", type=float, default=1200,
                    help=f"picture width in pixels (default 1200; {MIN_WIDTH} to {MAX_WIDTH:,})")
    sp.add_argument("--scale", type=float, default=1.0,
                    help=".folded only: multiply the values before rounding to integers (1e6: seconds as microseconds)")
    sp.set_defaults(func=cmd_flamegraph)
