"""The command line and its documentation agree: every sub-command ``perflake --help`` lists is shown in README's
examples (``perflake <command> ...`` in a ```sh code block), and every command README shows exists; likewise the
kinds of ``perflake plot``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _help(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "400"}  # argparse wraps at the terminal width: the choices on one line
    env.pop("PERFLAKE_LAKE", None)
    return subprocess.run([sys.executable, "-m", "perflake.cli.app", *args, "--help"], capture_output=True,
                          text=True, check=True, env=env).stdout


def _choices(help_text: str) -> list[str]:
    """The sub-commands of a usage text: its first ``{a,b,c}``."""
    found = re.search(r"\{([\w,-]+)\}", help_text)
    assert found, help_text
    return found.group(1).split(",")


def _readme_commands() -> list[list[str]]:
    """The words after ``perflake`` in README's shell code blocks."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", readme, re.M | re.S):
        for m in re.finditer(r"(?:^|\s)perflake ((?:[a-z][\w|-]*)(?: [a-z][\w|-]*)?)", block, re.M):
            lines.append(m.group(1).split())
    return lines


def subcommands() -> list[str]:
    return _choices(_help())


def test_every_sub_command_is_in_the_readme_and_every_readme_command_exists():
    commands = subcommands()
    assert "ingest" in commands and "plot" in commands and len(commands) == len(set(commands))
    shown = {words[0] for words in _readme_commands()}
    assert sorted(set(commands) - shown) == [], "sub-commands README's examples do not show"
    assert sorted(shown - set(commands)) == [], "README shows commands `perflake --help` does not list"


def test_every_plot_kind_is_in_the_readme_and_back():
    kinds = _choices(_help("plot"))
    assert kinds == ["imbalance", "scaling", "heatmap", "timeline"]
    shown = {kind for words in _readme_commands() if words[0] == "plot" and len(words) > 1
             for kind in words[1].split("|")}
    assert shown == set(kinds)


def test_each_sub_command_is_the_module_of_its_name():
    """commands/<name>.py is `perflake <name>` (one command style: pipeline/cli/commands/__init__.py); what
    commands share is in commands/_common.py, and cli/app.py defines no command."""
    import ast

    from perflake.cli import commands

    folder = ROOT / "pipeline" / "cli" / "commands"
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(subcommands()) == modules
    assert subcommands() == commands.names()  # registered in this order
    for name in modules:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "register" in defined, f"commands/{name}.py has no register()"
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported
                    if m and m.startswith("perflake.cli.") and not m.startswith("perflake.cli.commands._")}, \
            f"commands/{name}.py imports another command or the app: share through _common (or another _module)"
    app = ast.parse((ROOT / "pipeline" / "cli" / "app.py").read_text(encoding="utf-8"))
    assert [n.name for n in app.body if isinstance(n, ast.FunctionDef)] == ["_parser", "main"]
