"""Thicket's own statistics over .cali files, for tests/test_ensemble_stats.py to compare perflake's Ensemble with.

Run with the Python of ``.bench-venv`` (llnl-thicket 2026.1.1, pandas 2, SciPy)::

    .bench-venv/bin/python tests/thicket_stats.py SPEC.json
    .bench-venv/bin/python tests/thicket_stats.py --json THICKET.json   # Thicket.from_json: what it sees

SPEC: ``{"files": [...], "columns": [...], "percentiles": [...], "corr": [[c1, c2, method], ...],
"complete_only": bool, "columnar": {"groups": [[files], [files]], "column": "..."}}``.  It builds
``Thicket.from_caliperreader(files)``, runs ``th.stats.mean/median/minimum/maximum/std/variance/percentiles``
on ``columns`` and ``calc_boxplot_statistics``, ``check_normality``, ``correlation_nodewise`` on the Thicket, or
on ``tk.intersection()`` with ``complete_only`` (Thicket feeds NaN to numpy/SciPy there); with ``columnar``,
two Thickets side by side (``concat_thickets(axis="columns", headers=["A", "B"])``) and
``bhattacharyya_distance``/``hellinger_distance`` of ``[("A", column), ("B", column)]``.

It prints one JSON object: per statsframe ``{call path of names (JSON text): {column: value}}`` (tuples as
"A|column"; profile lists as the profiles' files), the dataframe as ``[path, file, {column: value}]`` rows, and
the error of any statistic that raised.  :func:`run` is the side perflake's tests call (stdlib only).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_PYTHON = Path(__file__).resolve().parents[1] / ".bench-venv" / "bin" / "python"


def _call(*args, timeout: float) -> dict:
    args = [str(BENCH_PYTHON), "-W", "ignore", __file__, *args]
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def run(spec: dict, timeout: float = 600) -> dict:
    """Run this script in .bench-venv on ``spec``; the parsed report."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        return _call(f.name, timeout=timeout)
    finally:
        os.unlink(f.name)


def load_json(path, timeout: float = 300) -> dict:
    """``Thicket.from_json`` of a file, in .bench-venv: index names, profiles, metadata columns, the dataframe
    and statsframe as ``{path: {column: value}}`` (dataframe keyed ``path|profile[|rank]``)."""
    return _call("--json", os.fspath(path), timeout=timeout)


def _value(v, files):
    if isinstance(v, (list, tuple)):
        return [files.get(x, str(x)) for x in v]
    if hasattr(v, "item"):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v if isinstance(v, (int, float, str, bool)) else str(v)


def _key(node) -> str:
    return json.dumps([str(n.frame["name"]) for n in node.path()])


def _frame(sf, files) -> dict:
    out = {}
    for node, row in sf.iterrows():
        out[_key(node)] = {("|".join(map(str, c)) if isinstance(c, tuple) else c): _value(v, files)
                           for c, v in row.items() if c not in ("name", ("name", ""))}
    return out


def main(path: str) -> None:
    import thicket as th

    spec = json.loads(Path(path).read_text())
    tk = th.Thicket.from_caliperreader(spec["files"], disable_tqdm=True)
    files = {p: os.path.realpath(f) for p, f in tk.profile_mapping.items()}
    cols = spec["columns"]
    errors = {}
    for fn in (th.stats.mean, th.stats.median, th.stats.minimum, th.stats.maximum, th.stats.std,
               th.stats.variance):
        fn(tk, columns=cols)
    th.stats.percentiles(tk, columns=cols, percentiles=spec.get("percentiles") or [0.25, 0.5, 0.75])
    other = tk.intersection() if spec.get("complete_only") else tk
    for name, call in (("boxplot", lambda: th.stats.calc_boxplot_statistics(other, columns=cols)),
                       ("normality", lambda: th.stats.check_normality(other, columns=cols))):
        try:
            call()
        except Exception as exc:  # noqa: BLE001 -- reported: the test names what Thicket could not do
            errors[name] = f"{type(exc).__name__}: {exc}"
    for c1, c2, method in spec.get("corr", []):
        th.stats.correlation_nodewise(other, column1=c1, column2=c2, correlation=method)
    report = {"stats": _frame(tk.statsframe.dataframe, files), "other": _frame(other.statsframe.dataframe, files),
              "errors": errors, "index_names": list(tk.dataframe.index.names)}
    rows = []
    for (node, profile), row in tk.dataframe[cols].iterrows():
        rows.append([_key(node), files[profile], {c: _value(row[c], files) for c in cols}])
    report["dataframe"] = rows
    if spec.get("columnar"):
        a, b = (th.Thicket.from_caliperreader(g, disable_tqdm=True) for g in spec["columnar"]["groups"])
        both = th.Thicket.concat_thickets([a, b], axis="columns", headers=["A", "B"])
        column = spec["columnar"]["column"]
        pair = [("A", column), ("B", column)]
        th.stats.bhattacharyya_distance(both, columns=pair)
        th.stats.hellinger_distance(both, columns=pair)
        report["columnar"] = _frame(both.statsframe.dataframe, files)
    print(json.dumps(report))


def from_json(path: str) -> None:
    import thicket as th

    tk = th.Thicket.from_json(Path(path).read_text())
    rows = {}
    for (node, *rest), row in tk.dataframe.iterrows():
        rows["|".join([_key(node), *map(str, rest)])] = {c: _value(v, {}) for c, v in row.items()}
    print(json.dumps({"index_names": list(tk.dataframe.index.names), "profile": [str(p) for p in tk.profile],
                      "metadata_columns": [str(c) for c in tk.metadata.columns], "n_nodes": len(tk.graph),
                      "metadata": {str(p): {k: _value(v, {}) for k, v in r.items()} for p, r in
                                   tk.metadata.iterrows()},
                      "dataframe": rows, "stats": _frame(tk.statsframe.dataframe, {})}))


if __name__ == "__main__":
    if sys.argv[1] == "--json":
        from_json(sys.argv[2])
    else:
        main(sys.argv[1])
