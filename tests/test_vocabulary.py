"""The shared vocabulary (issue 14 item 6): the words readers and frames share live in perflake.vocabulary; the
reader contract (readers/base.py) re-exports them; the lake's Arrow schemas live in catalogs/schema.py only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("EXCLUSIVE", "FRAME_ATTRS", "FRAME_SCHEMA", "INCLUSIVE", "LOCATION_COLUMNS", "OTHER", "Metric", "ProfileRows")

# Modules of pipeline/ that still take the vocabulary from perflake.readers.base (which re-exports it): each was
# being edited by another change when the vocabulary moved; switch its import to perflake.vocabulary and drop it here.
STILL_VIA_READERS_BASE = {
    "pipeline/analytics/ensemble.py",  # run selection moves out of it (issue 14 item 3)
    "pipeline/frame/graphframe.py",  # the GraphFrame circle (issue 14 item 2)
    "pipeline/ingest/normalize.py",  # the SQL clean-up (issue 14 item 5)
    "pipeline/interop/hatchet.py",  # interop work in progress
    "pipeline/interop/literal.py",  # interop work in progress
    "pipeline/lake.py",  # run resolution (issue 14 item 3)
}


def test_readers_base_re_exports_the_same_objects():
    import perflake.vocabulary as vocabulary
    from perflake.readers import base

    for name in SHARED:
        assert getattr(base, name) is getattr(vocabulary, name), name
    assert base.Metric("time", base.EXCLUSIVE) == vocabulary.Metric("time", "exclusive")


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    return set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout))


def test_the_vocabulary_loads_pyarrow_and_nothing_else():
    """Beyond what ``import perflake`` loads (light), only the module itself and pyarrow (which loads numpy)."""
    extra = _loaded_after("import perflake.vocabulary") - _loaded_after("import perflake")
    assert {m for m in extra if m.startswith("perflake")} == {"perflake.vocabulary"}
    assert not [m for m in extra if m.split(".")[0] in ("duckdb", "pandas", "dask", "matplotlib")]


def _vocabulary_imports_from_readers_base(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "perflake.readers.base":
            names += [a.name for a in node.names if a.name in SHARED]
    return names


def test_the_frame_side_takes_the_vocabulary_from_its_module():
    """Readers may import it through their contract module; pipeline/ imports it from perflake.vocabulary."""
    offenders = {str(p.relative_to(ROOT)) for p in sorted((ROOT / "pipeline").rglob("*.py"))
                 if _vocabulary_imports_from_readers_base(p)}
    assert offenders <= STILL_VIA_READERS_BASE, \
        f"import these from perflake.vocabulary: {offenders - STILL_VIA_READERS_BASE}"
    gone = STILL_VIA_READERS_BASE - offenders
    assert not gone, f"{gone} no longer import the vocabulary from readers.base: drop them from STILL_VIA_READERS_BASE"


def _arrow_schemas_built(path: Path) -> int:
    """``pa.schema(...)`` calls in a module."""
    return sum(1 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "schema"
               and isinstance(node.func.value, ast.Name) and node.func.value.id == "pa" and node.args)


def test_lake_py_states_no_table_schema():
    assert _arrow_schemas_built(ROOT / "pipeline" / "lake.py") == 0


@pytest.fixture(scope="module")
def lakes(tmp_path_factory):
    """A lake with one run, and a lake with none (created, nothing committed)."""
    from perflake import Lake
    from perflake.generators import write_tau_runs

    tmp = tmp_path_factory.mktemp("schema")
    full = Lake(tmp / "full")
    report = full.ingest(write_tau_runs(tmp / "gen", nodes=40, ranks=2, runs=1, seed=3))
    assert len(report.ingested) == 1
    empty = Lake(tmp / "empty")
    empty.catalog(create=True)
    return full, empty


def _columns(lake, table: str) -> list[tuple[str, str]]:
    return [(name, kind) for name, kind, *_ in lake.connect().execute(f"describe {table}").fetchall()]


@pytest.mark.parametrize("table", ["nodes", "edges", "metrics", "rank_summary"])
def test_the_data_table_schemas_are_what_ingest_writes(lakes, table):
    """catalogs/schema.py's DATA_SCHEMAS (what an empty lake shows) = the columns an ingested lake's views have
    (for metrics: its key columns, then one DOUBLE per metric)."""
    from perflake.catalogs.schema import DATA_SCHEMAS

    full, empty = _columns(lakes[0], table), _columns(lakes[1], table)
    assert [name for name, _ in empty] == DATA_SCHEMAS[table].names
    keys = full[: len(empty)]
    assert keys == empty
    if table == "metrics":
        assert [kind for _, kind in full[len(empty):]] == ["DOUBLE"] * 4  # TAU: time, time (inc), Calls, Subrs
    else:
        assert full == empty
    assert pa.types.is_uint64(DATA_SCHEMAS[table].field(1).type)  # call-path ids are uint64 in every table
