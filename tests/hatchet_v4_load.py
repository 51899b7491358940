"""Run llnl-hatchet's ``GraphFrame.from_hpctoolkit_latest`` on a v4 database and report what it gives.

Run with the Python of ``.bench-venv`` (llnl-hatchet 2026.2.0; bench/setup_venv.sh)::

    .bench-venv/bin/python tests/hatchet_v4_load.py DATABASE '[{...keywords...}, ...]'

It prints one JSON line: a list with, for each keyword set, the index names, columns, metric lists, default
metric, node count, the profile table of parallel mode (``metadata``) and every row as
``[call path of names, profile or null, {column: value}]`` (NaN as null).  A keyword set may carry
``"_guard": true``: Hatchet's ``binary_search`` then clamps its upper bound to the buffer it searches (formats.md
B.7: its bound starts at ``n`` instead of ``n-1`` and parallel mode raises struct.error on hpctoolkit-gamess);
nothing else of Hatchet is changed.  ``"_filter_all": true`` reports ``gf.filter(lambda row: True)`` (a filter
that keeps every row, then Hatchet's squash with its default ``update_inc_cols=True``).
tests/test_hpctoolkit_latest.py calls :func:`load` (stdlib only at import).
"""

from __future__ import annotations

import json
import os
import struct
import sys

from venv_report import BENCH_PYTHON, run_json
from venv_report import value as _value


def load(path, cases: list[dict], timeout: float = 600) -> list[dict]:
    """Run this script in .bench-venv; one report per keyword set."""
    args = [str(BENCH_PYTHON), "-W", "ignore", __file__, os.fspath(path), json.dumps(cases)]
    return run_json(args, timeout, f"hatchet failed on {path}")


def _report(gf) -> dict:
    df = gf.dataframe
    levels = list(df.index.names)
    rows = []
    for rec in df.reset_index().to_dict("records"):
        node = rec.pop("node")
        profile = _value(rec.pop("profile")) if "profile" in levels else None
        rows.append([[str(n.frame.get("name")) for n in node.path()], profile,
                     {str(k): _value(v) for k, v in rec.items()}])
    meta = gf.metadata
    profiles = None
    if hasattr(meta, "reset_index"):  # parallel mode: a DataFrame indexed by profile
        profiles = [{str(k): _value(v) for k, v in r.items()} for r in meta.reset_index().to_dict("records")]
        meta = None
    return {"index": levels, "columns": [str(c) for c in df.columns], "exc": list(gf.exc_metrics),
            "inc": list(gf.inc_metrics), "default": gf.default_metric,
            "nodes": sum(1 for _ in gf.graph.traverse()), "profiles": profiles,
            "metadata_keys": sorted(meta) if isinstance(meta, dict) else None, "rows": rows}


def main(path: str, cases: list[dict]) -> None:
    import hatchet
    import hatchet.readers.hpctoolkit_reader_latest as latest

    original = latest.binary_search

    def guarded(fmt, data, low, high, target):
        return original(fmt, data, low, min(high, len(data) // struct.calcsize(fmt) - 1), target)

    out = []
    for kwargs in cases:
        kwargs = dict(kwargs)
        latest.binary_search = guarded if kwargs.pop("_guard", False) else original
        squash = kwargs.pop("_filter_all", False)
        gf = hatchet.GraphFrame.from_hpctoolkit_latest(path, **kwargs)
        out.append(_report(gf.filter(lambda row: True) if squash else gf))
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
