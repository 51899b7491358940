"""Every sql/ file: one statement, a header naming itself, its parameters and output; params bound."""

from __future__ import annotations

import re
from importlib import resources

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
    assert {"inclusive", "closure", "views/metrics", "imbalance_scan"} <= set(_names())


@pytest.mark.parametrize("name", _names())
def test_header_and_params(name):
    text = sqlfiles.load(name)
    header = [ln for ln in text.splitlines() if ln.startswith("--")]
    assert header[0] == f"-- name: {name}"
    for key in ("purpose", "params", "output"):
        assert any(ln.startswith(f"-- {key}:") for ln in header), f"{name}: header lacks '{key}:'"
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("--"))
    used = set(re.findall(r"\$(\w+)", body))
    assert used == set(sqlfiles.declared_params(name)), f"{name}: uses {used}, declares {sqlfiles.declared_params(name)}"
    assert body.strip().count(";") <= 1 and not body.strip().rstrip(";").count(";"), "one statement per file"


def test_run_rejects_wrong_params():
    import duckdb

    with pytest.raises(TypeError, match="takes"):
        sqlfiles.run(duckdb.connect(), "closure", depth=3)
