"""The package root is lazy (PEP 562) and no module imports it: importing a reader loads no lake, DuckDB or pandas."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path

import perflake

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = {"pipeline": "perflake", "readers": "perflake.readers", "catalogs": "perflake.catalogs"}
HEAVY = ("duckdb", "pandas", "dask", "matplotlib", "perflake.lake", "perflake.frame.graphframe")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_importing_a_reader_loads_no_lake_duckdb_or_pandas():
    loaded = _loaded_after("import perflake.readers.tau")
    assert "perflake.readers.tau" in loaded
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []


def test_import_perflake_alone_is_light():
    loaded = _loaded_after("import perflake")
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)] == []


def test_the_public_names_are_still_there():
    from perflake.errors import LakeError, PerflakeError, ReaderError
    from perflake.frame.graphframe import GraphFrame
    from perflake.lake import Lake
    from perflake.read import read, read_caliper, read_hpctoolkit, read_tau

    assert perflake.__version__ == "0.1.0"
    assert (perflake.Lake, perflake.GraphFrame) == (Lake, GraphFrame)
    assert (perflake.LakeError, perflake.PerflakeError, perflake.ReaderError) == (LakeError, PerflakeError, ReaderError)
    assert (perflake.read, perflake.read_tau, perflake.read_caliper, perflake.read_hpctoolkit) == \
        (read, read_tau, read_caliper, read_hpctoolkit)
    assert set(perflake.__all__) <= set(dir(perflake))
    assert perflake.query.QueryMatcher is not None  # a subpackage is reached as an attribute, imported on first use


def test_read_stays_the_function_whatever_is_imported_first():
    """`perflake.read` is both a function and a submodule: importing the submodule must not replace the function."""
    code = ("import perflake.read, perflake.frame.graphframe, perflake; from perflake.read import read_tau; "
            "print(callable(perflake.read), perflake.read.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "perflake.read"]


def test_an_unknown_attribute_is_an_attribute_error():
    try:
        perflake.no_such_thing
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("perflake.no_such_thing did not raise")


def _submodules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}


def test_no_module_imports_the_package_root():
    """`from perflake import X` is allowed only for a submodule X (perflake.readers, ...); `__version__` comes from
    perflake._version, so no module depends on the root having run its imports first."""
    submodules = _submodules(ROOT / "pipeline") | {"readers", "catalogs", "sql"}
    bad = []
    for folder in SOURCE_ROOTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "pipeline" / "__init__.py":
                continue
            with warnings.catch_warnings():  # an invalid escape in some docstring is not this test's business
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import) and any(a.name == "perflake" for a in node.names):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} import perflake")
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "perflake":
                    bad += [f"{path.relative_to(ROOT)}:{node.lineno} from perflake import {a.name}"
                            for a in node.names if a.name not in submodules]
    assert bad == []
