"""Every sql/ file: one statement, a header naming itself, its parameters and output; params bound."""

from __future__ import annotations

import ast
import fnmatch
import re
from importlib import resources
from pathlib import Path

import pytest

from perflake.engine import sqlfiles


def _names():
    root = resources.files("perflake.sql")
    out = []
    for entry in root.iterdir():
        if entry.name.endswith(".sql"):
            out.append(entry.name[:-4])
        elif entry.is_dir() and not entry.name.startswith("__"):
            out += [f"{entry.name}/{e.name[:-4]}" for e in entry.iterdir() if e.name.endswith(".sql")]
    return sorted(out)


def test_sql_files_are_installed():
    assert {"inclusive_wide", "closure", "views/metrics", "imbalance_scan"} <= set(_names())


@pytest.mark.parametrize("name", _names())
def test_header_and_params(name):
    text = sqlfiles.load(name)
    header = [ln for ln in text.splitlines() if ln.startswith("--")]
    assert header[0] == f"-- name: {name}"
    for key in ("purpose", "params", "output"):
        assert any(ln.startswith(f"-- {key}:") for ln in header), f"{name}: header lacks '{key}:'"
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("--"))
    used = set(re.findall(r"\$(\w+)", body))
    declared = set(sqlfiles.declared_params(name))
    assert used == declared, f"{name}: uses {used}, declares {declared}"
    assert body.strip().count(";") <= 1 and not body.strip().rstrip(";").count(";"), "one statement per file"


def test_run_rejects_wrong_params():
    import duckdb

    with pytest.raises(TypeError, match="takes"):
        sqlfiles.run(duckdb.connect(), "closure", depth=3)


ROOT = Path(__file__).resolve().parents[1]
# how code names a sql/ file: the argument of these calls (position), a ``views={name: (file, params)}`` entry,
# or ``dict(name=file, params=...)`` (a task of perflake.engine.parallel.sql_task)
SQL_ARG = {"load": 0, "declared_params": 0, "run": 1, "relation": 1, "materialize": 2, "sql_task": 0}


def _strings(node: ast.AST) -> list[str]:
    """The sql/ names an expression can take: a constant, both arms of ``a if c else b``, an f-string as a
    glob pattern (``f"views/{table}"`` -> ``views/*``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)]
    return []


def _sql_references() -> dict[str, set[str]]:
    """sql/ names (or glob patterns) -> the modules that load them, found in the AST of every package module."""
    refs: dict[str, set[str]] = {}
    for folder in ("pipeline", "readers", "catalogs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "sqlfiles.py":
                continue
            module = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                attribute = isinstance(func, ast.Attribute)
                owner = func.value.id if attribute and isinstance(func.value, ast.Name) else None
                fname = func.attr if attribute else func.id if isinstance(func, ast.Name) else None
                found = []
                position = SQL_ARG.get(fname, len(node.args))
                if (owner == "sqlfiles" or fname == "sql_task") and len(node.args) > position:
                    found += _strings(node.args[position])
                keywords = {k.arg: k.value for k in node.keywords}
                if fname == "dict" and "name" in keywords and "params" in keywords:
                    found += _strings(keywords["name"])
                if isinstance(keywords.get("views"), ast.Dict):
                    found += [s for v in keywords["views"].values if isinstance(v, ast.Tuple)
                              for s in _strings(v.elts[0])]
                for name in found:
                    refs.setdefault(name, set()).add(module)
    return refs


def test_every_sql_file_is_loaded_by_some_module():
    refs = _sql_references()
    unused = [n for n in _names() if not any(n == r or fnmatch.fnmatchcase(n, r) for r in refs)]
    assert unused == [], f"sql/ files no module loads: {unused}"


def test_every_sql_name_in_the_code_is_a_file():
    names = _names()
    missing = {r: sorted(m) for r, m in _sql_references().items() if not fnmatch.filter(names, r)}
    assert missing == {}, f"names the code loads that sql/ lacks: {missing}"


def test_the_reference_finder_sees_every_form():
    """The finder itself: each way the package names a file is found (else the two tests above prove nothing)."""
    refs = _sql_references()
    for name, module in (("closure", "pipeline/ingest/normalize.py"), ("rekey_metrics", "pipeline/ingest/normalize.py"),
                         ("imbalance_scan", "pipeline/analytics/imbalance.py"),
                         ("imbalance_partial", "pipeline/analytics/imbalance.py"),
                         ("ensemble_values", "pipeline/analytics/rank_summary.py"), ("views/*", "pipeline/lake.py")):
        assert module in refs.get(name, set()), (name, module)
