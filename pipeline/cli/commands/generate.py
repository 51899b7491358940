"""``perflake generate FORMAT OUT``: synthetic profiles in a real format (deterministic by seed), from
:mod:`perflake.generators`."""

from __future__ import annotations

from perflake.cli.commands._checks import output_dir, whole
from perflake.cli.commands._common import EXIT_OK
from perflake.errors import UsageError
from perflake.render.safe_text import escape


def _check_sizes(args) -> None:
    """Every size option in its range (perflake.generators.size_limits), one run not too big: a one-line UsageError
    naming the option otherwise, before anything is written."""
    from perflake.generators.size_limits import SIZES, size_problem, values_problem

    whole("--runs", args.runs, low=1, high=SIZES["runs"][1])  # the API takes 0 runs; here it is a mistake
    for name in ("nodes", "ranks", "threads", "seed"):
        problem = size_problem(name, getattr(args, name))
        if problem:
            raise UsageError(f"--{name} {problem}")
    if args.threads != 1 and args.format == "caliper":
        raise UsageError("--threads is for tau and hpctoolkit (Caliper's json-split rows carry mpi.rank only)")
    problem = values_problem(args.nodes, args.ranks, args.threads)
    if problem:
        raise UsageError(f"--nodes x --ranks x --threads: {problem}")


def cmd_generate(args) -> int:
    from perflake.generators import WRITERS

    _check_sizes(args)
    output_dir(args.out)
    extra = {"threads": args.threads} if args.threads != 1 else {}
    writer, kind = WRITERS[args.format], args.format
    if getattr(args, "no_metric_db", False):
        if args.format != "hpctoolkit" or args.v4:
            raise UsageError("--no-metric-db is for the hpctoolkit format only (the old one, not --v4)")
        extra["metric_db"] = False
    if args.v4 or args.layout or args.copied_sources:  # HPCToolkit v4 (meta.db + profile.db + cct.db)
        if args.format != "hpctoolkit" or not args.v4:
            raise UsageError("--layout and --copied-sources need `generate hpctoolkit --v4`; --v4 is for hpctoolkit")
        from perflake.generators.hpctoolkit_v4 import write_hpctoolkit_v4_runs as writer

        extra.update(layout=args.layout or "4.0", copied_sources=args.copied_sources)
        kind = f"hpctoolkit v4 ({args.layout or '4.0'} layout)"
    try:
        paths = writer(args.out, nodes=args.nodes, ranks=args.ranks, runs=args.runs, seed=args.seed, **extra)
    except OSError as exc:  # a full disk, a file where a run directory goes
        raise UsageError(f"{exc.filename or args.out}: cannot write: {exc.strerror or exc}") from None
    print(escape(f"wrote {len(paths)} {kind} runs ({args.nodes} nodes x {args.ranks} ranks) under {args.out}"))
    return EXIT_OK


def register(sub, *, lake_arg, fmt_arg) -> None:
    sp = sub.add_parser("generate", help="write synthetic profiles in a real format (deterministic by seed)")
    sp.add_argument("format", choices=["caliper", "hpctoolkit", "tau"])
    sp.add_argument("out")
    sp.add_argument("--nodes", type=int, default=200)
    sp.add_argument("--ranks", type=int, default=16)
    sp.add_argument("--threads", type=int, default=1)
    sp.add_argument("--runs", type=int, default=1)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--no-metric-db", action="store_true",
                    help="hpctoolkit: no *.metric-db files, summary values inline in experiment.xml 2.2 and "
                         ".hpctrace files (hpcprof of 2020 with metric-db output off)")
    sp.add_argument("--v4", action="store_true", help="hpctoolkit: a v4 database (meta.db, profile.db, cct.db)")
    sp.add_argument("--layout", choices=["4.0", "2022-pre"], help="with --v4: the 2022 pre-release layout")
    sp.add_argument("--copied-sources", choices=["src", "outdir"], help="with --v4: sources copied into the database")
    sp.set_defaults(func=cmd_generate)
