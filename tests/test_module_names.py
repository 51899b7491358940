"""No two modules of the installed package share a base name (issue 14 item 6): ``hatchet_json`` once named both
the Hatchet JSON reader and the writer, ``engine`` both the compute room and the query matcher.

Counted: every module and package under the package dirs of pyproject.toml (perflake, perflake.readers,
perflake.catalogs, perflake.sql), by base name; ``__init__``/``__main__`` aside.  Two kinds of shared names are
accepted, each listed below with its reason; a new shared name fails this test (rename the module, or add it
here with the reason it helps the reader rather than confuses):

* ``perflake.cli.commands.<name>`` is the sub-command ``perflake <name>``: its name is the command's, given by
  the command line (tests/test_cli_docs.py checks that the modules and ``perflake --help`` agree), so those
  modules are not counted;
* a generator and a reader of one format: ``perflake.generators.<fmt>`` writes, byte by byte, the format that
  ``perflake.readers.<fmt>`` reads; the package names the direction, the module the format.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = "perflake.cli.commands"

_FORMAT_PAIR = "a generator writes the format its namesake reader reads"
ACCEPTED = {
    fmt: ({f"perflake.generators.{fmt}", f"perflake.readers.{fmt}"}, _FORMAT_PAIR)
    for fmt in ("caliper", "hpctoolkit", "hpctoolkit_sparse", "hpctoolkit_summary", "hpctoolkit_v4", "perfflowaspect",
                "tau")
}


def _package_dirs() -> dict[str, Path]:
    """Dotted package -> folder, from pyproject's package-dir table."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^package-dir\s*=\s*\{(.*?)\}", text, re.M | re.S)
    assert table, "pyproject.toml has no package-dir"
    return {pkg: ROOT / folder for pkg, folder in re.findall(r'"([\w.]+)"\s*=\s*"([\w./-]+)"', table.group(1))}


def modules() -> list[str]:
    """Dotted name of every module and package of the installed package (sub-packages included)."""
    out = []
    for pkg, folder in _package_dirs().items():
        out.append(pkg)
        for path in folder.rglob("*"):
            if "__pycache__" in path.parts or any(p.startswith(".") for p in path.relative_to(folder).parts):
                continue
            rel = path.relative_to(folder)
            if path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
                out.append(".".join([pkg, *rel.parent.parts, path.stem]) if rel.parent.parts else f"{pkg}.{path.stem}")
            elif path.is_dir() and (path / "__init__.py").exists():
                out.append(".".join([pkg, *rel.parts]))
    # a package dir nested in another (catalogs is not under pipeline/) is listed once
    return sorted(set(out))


def shared_names() -> dict[str, set[str]]:
    by_name = collections.defaultdict(set)
    for dotted in modules():
        if dotted.startswith(COMMANDS + "."):
            continue
        by_name[dotted.rsplit(".", 1)[-1]].add(dotted)
    return {name: found for name, found in by_name.items() if len(found) > 1}


def test_the_walk_sees_the_whole_package():
    found = set(modules())
    for dotted in ("perflake.lake", "perflake.readers.tau", "perflake.catalogs.schema", "perflake.engine",
                   "perflake.cli.commands", "perflake.generators.tau", "perflake.query.model", "perflake.sql"):
        assert dotted in found, dotted


def test_no_two_modules_share_a_name_beyond_the_accepted_ones():
    shared = shared_names()
    new = {name: sorted(found) for name, found in shared.items()
           if name not in ACCEPTED or found != ACCEPTED[name][0]}
    assert not new, f"modules sharing a base name (rename one, or accept it in ACCEPTED with a reason): {new}"
    stale = sorted(set(ACCEPTED) - set(shared))
    assert not stale, f"no longer shared, drop from ACCEPTED: {stale}"


def test_renamed_modules_keep_their_old_import_paths():
    """Renamed for this rule; the old paths are public (perflake.query.*, perflake.plots.*) and still import."""
    import importlib

    for old, new in (("perflake.query.engine", "perflake.query.matching"),  # relayout: keep
                     ("perflake.plots.imbalance", "perflake.plots.imbalance_bars"),  # relayout: keep
                     ("perflake.plots.scaling", "perflake.plots.scaling_lines")):  # relayout: keep
        assert importlib.import_module(old) is importlib.import_module(new)
