"""Load perflake's Hatchet/Thicket JSON exports with the real llnl-hatchet / llnl-thicket and report what they see.

Run with the Python of ``.bench-venv`` (llnl-hatchet 2026.2.0, llnl-thicket 2026.1.1, pandas 2; made by
``bench/setup_venv.sh``), which cannot hold perflake itself (pandas 3)::

    .bench-venv/bin/python tests/hatchet_load.py hatchet FILE.json [METRIC]    # GraphFrame.from_json
    .bench-venv/bin/python tests/hatchet_load.py thicket FILE.json             # Thicket.from_json, validated
    .bench-venv/bin/python tests/hatchet_load.py recipe CODE.py NAME=FILE.json ...   # Hatchet runs a recipe

It prints one JSON object: the index names, metric lists, node count, every dataframe row as
``[call path of names, rank, thread, profile, {column: value}]`` (NaN as null) and, for ``hatchet``, the text
of ``tree(metric_column=METRIC)`` without colours.  tests/test_interop.py and tests/test_parity_guide.py call
:func:`load` (stdlib only at import time, so those tests import this module under perflake's own venv).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from venv_report import BENCH_PYTHON, run_json
from venv_report import value as _value

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def available() -> str | None:
    """None when .bench-venv can run this script, else why not (a skip reason)."""
    if not BENCH_PYTHON.exists():
        return f"{BENCH_PYTHON} not found (bench/setup_venv.sh creates it): real llnl-hatchet is not available"
    return None


def load(kind: str, path, metric: str | None = None, timeout: float = 300) -> dict:
    """Run this script in .bench-venv on ``path``; the parsed report."""
    args = [str(BENCH_PYTHON), "-W", "ignore", __file__, kind, os.fspath(path), *([metric] if metric else [])]
    return run_json(args, timeout)


def recipe(code: str, timeout: float = 300, **files) -> dict:
    """Run ``code`` with the real Hatchet in .bench-venv: each ``NAME=path`` of ``files`` (a Hatchet JSON, e.g.
    perflake's export) is loaded as ``hatchet.GraphFrame.from_json`` into a variable NAME; ``hatchet``, ``np`` and
    ``pd`` are imported.  The code leaves its answer in ``result``: a GraphFrame (reported as its ``rows``, index
    names and node count) or a pandas object (reported as ``frame``: index names, index tuples, columns, values)."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        args = [str(BENCH_PYTHON), "-W", "ignore", __file__, "recipe", f.name,
                *(f"{k}={os.fspath(v)}" for k, v in files.items())]
        return run_json(args, timeout, f"hatchet recipe failed:\n{code}")
    finally:
        os.unlink(f.name)


def _rows(df) -> list:
    flat = df.reset_index()
    levels = list(df.index.names)
    out = []
    for rec in flat.to_dict("records"):
        node = rec.pop("node")
        path = [str(n.frame.get("name")) for n in node.path()]
        loc = [_value(rec.pop(k)) if k in levels else None for k in ("rank", "thread", "profile")]
        out.append([path, *loc, {str(k): _value(v) for k, v in rec.items()}])
    return out


def _run_recipe(code_path: str, files: list[str]) -> dict:
    import hatchet
    import numpy as np
    import pandas as pd

    scope = {"hatchet": hatchet, "np": np, "pd": pd}
    for spec in files:
        name, path = spec.split("=", 1)
        scope[name] = hatchet.GraphFrame.from_json(Path(path).read_text())
    exec(compile(Path(code_path).read_text(), code_path, "exec"), scope)
    result = scope["result"]
    if isinstance(result, hatchet.GraphFrame):
        return {"index": list(result.dataframe.index.names), "nodes": sum(1 for _ in result.graph.traverse()),
                "rows": _rows(result.dataframe)}
    frame = result.to_frame() if isinstance(result, pd.Series) else result
    return {"frame": {"index_names": [str(n) for n in frame.index.names],
                      "index": [[_value(x) for x in (k if isinstance(k, tuple) else (k,))] for k in frame.index],
                      "columns": [str(c) for c in frame.columns],
                      "values": [[_value(v) for v in row] for row in frame.itertuples(index=False)]}}


def main(argv: list[str]) -> None:
    kind, path = argv[0], argv[1]
    if kind == "recipe":
        sys.stdout.write(json.dumps(_run_recipe(path, argv[2:])) + "\n")
        return
    text = Path(path).read_text()
    if kind == "hatchet":
        import hatchet

        gf = hatchet.GraphFrame.from_json(text)
        metric = argv[2] if len(argv) > 2 else gf.default_metric
        report = {"tree": ANSI.sub("", gf.tree(metric_column=metric, render_header=False))}
    else:
        import thicket
        from thicket import utils

        gf = thicket.Thicket.from_json(text)
        # the properties of docs/thicket_properties.rst that Thicket's own to_json -> from_json round trip keeps
        utils.validate_dataframe(gf.dataframe)
        utils.verify_sorted_profile(gf.dataframe)
        report = {"profile": [_value(p) for p in gf.profile], "metadata_rows": len(gf.metadata),
                  "metadata_columns": [str(c) for c in gf.metadata.columns]}
    report.update({"index": list(gf.dataframe.index.names), "exc": list(gf.exc_metrics), "inc": list(gf.inc_metrics),
                   "nodes": sum(1 for _ in gf.graph.traverse()), "roots": len(gf.graph.roots),
                   "rows": _rows(gf.dataframe)})
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
