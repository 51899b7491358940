"""pipeline/ is laid out in rooms by job (issue 14): a short top level, a docstring'd __init__ per room, README's
"Code layout" that matches the tree, a package list in pyproject that matches it, and the old public import paths
still working.

The rule README's block follows (relayout.py regenerates it; this test checks it): the line ``pipeline/ ...``,
then the top-level modules (``__init__`` included) on one line, then per room ``  <room>/  <first line of its
__init__ docstring>`` followed by a line of its modules (sorted; sub-packages as ``name/``).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pipeline"
MAX_TOP_MODULES = 10


def _rooms() -> list[Path]:
    """Every folder below pipeline/ that holds Python (a room, or a package inside one)."""
    return sorted(p for p in PKG.rglob("*") if p.is_dir() and "__pycache__" not in p.parts and any(p.glob("*.py")))


def _docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""


def _modules(folder: Path) -> list[str]:
    mods = sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__"))
    return mods + sorted(p.name + "/" for p in folder.iterdir() if (p / "__init__.py").exists())


def test_the_top_of_pipeline_holds_at_most_ten_modules():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of pipeline/: {top}; put them in a room"


def test_every_room_has_an_init_saying_what_it_is_for():
    assert _rooms(), "no room below pipeline/"
    for room in _rooms():
        init = room / "__init__.py"
        assert init.exists(), f"{room.relative_to(ROOT)} has no __init__.py"
        doc = _docstring(init)
        assert len(doc.split()) >= 5, f"{init.relative_to(ROOT)}: the docstring must say what the room is for"


def _layout_block() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Code layout\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert section, "README.md has no '## Code layout' section"
    block = re.search(r"```\n(.*?)```", section.group(1), re.S)
    assert block, "README's Code layout has no code block"
    return block.group(1).splitlines()


def test_readme_code_layout_matches_the_tree():
    lines = _layout_block()
    start = next(i for i, line in enumerate(lines) if line.startswith("pipeline/"))
    assert lines[start + 1].split() == sorted(p.stem for p in PKG.glob("*.py")), "top-level modules"
    listed = {}
    i = start + 2
    while i < len(lines) and lines[i].startswith("  "):
        m = re.match(r"  (\S+)/ +(.*)$", lines[i])
        assert m and i + 1 < len(lines) and lines[i + 1].startswith("      "), f"README line: {lines[i]!r}"
        listed[m.group(1)] = (m.group(2), lines[i + 1].split())
        i += 2
    on_disk = {str(room.relative_to(PKG)): room for room in _rooms()}
    assert sorted(listed) == sorted(on_disk), "rooms in README vs folders of pipeline/"
    for name, (purpose, modules) in listed.items():
        room = on_disk[name]
        assert purpose == _docstring(room / "__init__.py").splitlines()[0], f"{name}/: first line of its docstring"
        assert modules == _modules(room), f"{name}/: modules"


def test_pyproject_lists_every_package_of_the_tree():
    """Without this a room would be missing from a (non-editable) install."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = set(re.findall(r'"([\w.]+)"', re.search(r"^packages\s*=\s*\[(.*?)\]", text, re.M | re.S).group(1)))
    on_disk = {"perflake"} | {".".join(["perflake", *room.relative_to(PKG).parts]) for room in _rooms()}
    assert {p for p in listed if p == "perflake" or (PKG / Path(*p.split(".")[1:])).is_dir()} == on_disk


def test_old_public_import_paths_still_work():
    """README "Code layout", Compatibility: old paths users import resolve to the moved modules themselves."""
    import perflake
    import perflake.hatchet_json as old  # relayout: keep
    import perflake.interop  # relayout: keep
    from perflake.cli.app import main  # relayout: keep
    from perflake.hatchet_json import write_hatchet_json  # relayout: keep
    from perflake.interop import from_hatchet, hatchet, json_files, to_hatchet  # relayout: keep  # relayout: keep

    assert old is json_files and perflake.hatchet_json is json_files  # relayout: keep
    assert json_files.__spec__.name == "perflake.interop.json_files"  # relayout: keep (the hook restores the spec)
    assert write_hatchet_json is json_files.write_hatchet_json
    assert (to_hatchet, from_hatchet) == (hatchet.to_hatchet, hatchet.from_hatchet)
    assert perflake.interop.to_graphframe is hatchet.to_graphframe  # relayout: keep
    import perflake.cli  # relayout: keep

    assert perflake.cli.main is main  # relayout: keep (the entry point of installs made before the move)
    command = [sys.executable, "-m", "perflake.cli", "--version"]  # relayout: keep
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"perflake {perflake.__version__}"
    for name in ("Lake", "GraphFrame", "read", "read_tau", "read_caliper", "read_hpctoolkit"):
        assert callable(getattr(perflake, name))
    from perflake.plots import plot_imbalance  # noqa: F401
    from perflake.query import QueryMatcher  # noqa: F401
