"""No module-level import cycle in perflake (issue 14, item 2), beyond the two the issue allows.

The graph is computed from the source (AST, no import): one node per module of pipeline/ (``perflake``),
readers/ and catalogs/, one edge per import that runs when the module is loaded -- statements of the module body,
of its ``if``/``try``/``with`` blocks and class bodies; not imports inside functions (they run when called) nor
under ``if TYPE_CHECKING:``.  ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, and to
``pkg`` (its ``__init__``) when some name is not one.  A cycle is a strongly connected component of more than one
module.  Allowed: one inside ``perflake.query`` (the package re-exports its dialects, which share the model) and
``perflake.frame.graph`` with ``perflake.frame.graph_ops``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"pipeline": "perflake", "readers": "perflake.readers", "catalogs": "perflake.catalogs"}
ALLOWED = ({"perflake.frame.graph", "perflake.frame.graph_ops"},)
ALLOWED_PACKAGES = ("perflake.query",)


def modules(folders: dict[str, str], root: Path = ROOT) -> dict[str, Path]:
    """module name -> file, for every .py file below each folder (``__init__`` names the package)."""
    found = {}
    for folder, package in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _load_time_imports(body: list[ast.stmt]):
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
        elif isinstance(stmt, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(stmt.test):
                yield from _load_time_imports(stmt.body)
            yield from _load_time_imports(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _load_time_imports(block)
        elif isinstance(stmt, (ast.With, ast.ClassDef)):
            yield from _load_time_imports(stmt.body)


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``mods`` it imports at load time (module docstring)."""
    graph = {}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = set()
        for node in _load_time_imports(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in mods}
                continue
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            submodules = {f"{base}.{a.name}" for a in node.names} & set(mods)
            edges |= submodules
            if base in mods and len(submodules) < len(node.names):
                edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _allowed(component: set[str]) -> bool:
    return (any(component <= allowed for allowed in ALLOWED)
            or any(all(m == p or m.startswith(p + ".") for m in component) for p in ALLOWED_PACKAGES))


def test_the_graph_sees_load_time_imports_and_cycles(tmp_path):
    pkg = tmp_path / "src"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg import a\n",
        "a.py": "from typing import TYPE_CHECKING\nfrom . import b\nif TYPE_CHECKING:\n    from pkg import c\n",
        "b.py": "try:\n    from .sub.d import x\nexcept ImportError:\n    x = None\n",
        "c.py": "def f():\n    import pkg.a\n",
        "sub/__init__.py": "",
        "sub/d.py": "from .. import a\nfrom ..c import g\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = import_graph(modules({"src": "pkg"}, tmp_path))
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.sub.d"}, "pkg.c": set(),
                     "pkg.sub": set(), "pkg.sub.d": {"pkg.a", "pkg.c"}}
    assert cycles(graph) == [{"pkg.a", "pkg.b", "pkg.sub.d"}]
    assert _allowed({"perflake.query", "perflake.query.model"}) and _allowed({"perflake.frame.graph_ops",
                                                                               "perflake.frame.graph"})
    assert not _allowed({"perflake.frame.graph", "perflake.frame.graphframe"})


def test_no_module_level_import_cycle_but_the_allowed_ones():
    graph = import_graph(modules(FOLDERS))
    assert len(graph) > 100 and graph["perflake.frame.graphframe"]  # the tree was read
    found = [sorted(c) for c in cycles(graph) if not _allowed(c)]
    assert not found, f"module-level import cycles: {found}"
