"""tree() with Hatchet's renamed arguments (issue 15, theme 1 of the issue: ValueError from ``tree(invert_colors=...)``
-style calls).  Hatchet 2026.2.0 renamed ``metric``, ``name``, ``expand_names``, ``context`` and ``invert_colors``:
the old name raises ValueError naming the new one, the old and the new name together TypeError, and an argument it
never had (``threshold``, ``color``) is Python's TypeError.  Each call is made with llnl-hatchet in .bench-venv and
with perflake; the exception classes must agree, and the arguments that still work must still work."""

from __future__ import annotations

import json

import pytest

import hatchet_load
import literal as L
from conftest import need_bench_python
from perflake import GraphFrame

CALLS = [
    {"invert_colors": True}, {"name": "name"}, {"metric": "time"}, {"expand_names": True}, {"context": "file"},
    {"metric": "time", "metric_column": "time"}, {"invert_colors": True, "invert_colormap": True},
    {"threshold": 0.5}, {"color": True},
    {"metric_column": "time", "name_column": "name", "expand_name": True, "context_column": "file",
     "invert_colormap": True, "render_header": False},
]

HATCHET_CODE = """
import json
gf = hatchet.GraphFrame.from_literal(json.loads({literal!r}))
rows = []
for kwargs in json.loads({calls!r}):
    try:
        gf.tree(**kwargs)
        rows.append([json.dumps(kwargs), "ok"])
    except (TypeError, ValueError) as exc:
        rows.append([json.dumps(kwargs), type(exc).__name__])
result = pd.DataFrame(rows, columns=["call", "answer"])
"""


@pytest.fixture(scope="module")
def hatchets():
    need_bench_python()
    code = HATCHET_CODE.format(literal=json.dumps(L.MOCK_GRAPH), calls=json.dumps(CALLS))
    return dict(hatchet_load.recipe(code)["frame"]["values"])


@pytest.mark.parametrize("kwargs", CALLS, ids=lambda k: ",".join(k))
def test_tree_arguments_fail_or_work_as_hatchet(hatchets, kwargs):
    gf = GraphFrame.from_literal(L.MOCK_GRAPH)
    try:
        text = gf.tree(**kwargs)
        got = "ok"
    except (TypeError, ValueError) as exc:
        got = type(exc).__name__
        text = str(exc)
    assert got == hatchets[json.dumps(kwargs)]
    if got == "ValueError":  # the message names the argument to use instead
        (old,) = kwargs
        assert f'"{old}="' in text and "_" in text.split("use", 1)[1]
    if got == "ok":
        assert "waldo" in text
