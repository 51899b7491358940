"""No capability module imports GraphFrame (issue 14, item 2): ops/, analytics/, render/, interop/ and plots/
(rendering of lake-wide results) build results with ``type(gf).from_tables(...)`` or return tables, so that
``frame/graphframe.py`` -> capability -> GraphFrame is no import circle.

Counted: ``from perflake.frame.graphframe import ...``, ``from perflake.frame import
graphframe``, ``import perflake.frame.graphframe``, ``from perflake import GraphFrame`` and ``perflake.GraphFrame``,
anywhere in the module (inside functions too: a deferred import is still the circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "pipeline"
CAPABILITY_ROOMS = ("ops", "analytics", "render", "interop", "plots")
GRAPHFRAME_MODULE = "perflake.frame.graphframe"

def _imports_graphframe(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {a.name for a in node.names}
            if (node.module == GRAPHFRAME_MODULE or (node.module == "perflake.frame" and "graphframe" in names)
                    or (node.module == "perflake" and "GraphFrame" in names)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Import) and any(a.name == GRAPHFRAME_MODULE for a in node.names):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr == "GraphFrame" and isinstance(node.value, ast.Name)
              and node.value.id == "perflake"):
            lines.append(node.lineno)
    return lines


def test_the_rule_sees_every_form_of_import():
    forms = ["from perflake.frame.graphframe import GraphFrame", "from perflake.frame import graphframe",
             "import perflake.frame.graphframe", "from perflake import GraphFrame, Lake",
             "def f():\n    import perflake\n    return perflake.GraphFrame"]
    assert [bool(_imports_graphframe(ast.parse(code))) for code in forms] == [True] * len(forms)
    assert _imports_graphframe(ast.parse("from perflake.frame.tables import node_ids\nfrom perflake import Lake")) == []


def test_no_capability_module_imports_graphframe():
    found = {}
    for room in CAPABILITY_ROOMS:
        for path in sorted((PKG / room).rglob("*.py")):
            if lines := _imports_graphframe(ast.parse(path.read_text(encoding="utf-8"))):
                found[str(path.relative_to(PKG))] = lines
    assert not found, (f"capability modules importing GraphFrame (module: lines): {found}; build with "
                       "type(gf).from_tables, or take the class as a parameter (frame_class=cls)")


def test_results_keep_the_class_of_the_frame_they_come_from():
    """What the rule asks for, seen from the outside: a GraphFrame subclass stays itself through every capability
    that builds a frame (type(gf) in ops and analytics, ``frame_class=cls`` from GraphFrame's constructors)."""
    import literal
    from perflake.frame.graphframe import GraphFrame

    class Mine(GraphFrame):
        pass

    gf = Mine.from_literal(literal.MOCK_GRAPH)
    other = Mine.from_literal(literal.SOLVERS_GRAPH)
    made = {
        "from_literal": gf,
        "from_lists": Mine.from_lists(("a", "b", "c")),
        "from_json": Mine.from_json(gf.to_json()),
        "from_hatchet": Mine.from_hatchet(gf),
        "filter": gf.filter(lambda row: row["time"] > 0, squash=False),
        "squash": gf.filter(lambda row: row["time"] > 0),
        "groupby_aggregate": gf.groupby_aggregate("name", "sum"),
        "deepcopy": gf.deepcopy(),
        "sub": gf - other,
    }
    assert {k: type(v).__name__ for k, v in made.items()} == dict.fromkeys(made, "Mine")
    assert len(made["squash"].graph) > 0 and len(made["sub"].graph) >= len(gf.graph)
