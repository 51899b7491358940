"""Run one scenario with the real llnl-hatchet (in .bench-venv) and with perflake, and get both answers.

A scenario is Python source that defines ``answers()`` returning a dict of JSON-able values.  It uses the names
``GraphFrame``, ``Graph``, ``Node``, ``Frame``, ``MultiplePathError``, ``pd``, ``np`` and ``json``, bound to
Hatchet's objects in .bench-venv and to perflake's here, plus the constants passed as keywords (paths of
shared data, literals).  Both answers go through ``json`` so that tuples and lists compare alike.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import hatchet_load

_HATCHET_NAMES = ("import json\nimport warnings\nwarnings.filterwarnings('ignore')\n"
                  "from hatchet import GraphFrame\nfrom hatchet.graph import Graph\n"
                  "from hatchet.node import Node, MultiplePathError\nfrom hatchet.frame import Frame\n")


def _constants(consts: dict) -> str:
    return "".join(f"{name} = {value!r}\n" for name, value in consts.items())


def hatchet(code: str, **consts) -> dict:
    """``answers()`` of ``code`` run by llnl-hatchet 2026.2.0 (the caller checks .bench-venv first)."""
    script = (_HATCHET_NAMES + _constants(consts) + code
              + "\nresult = pd.DataFrame({'answer': [json.dumps(answers(), default=str)]})\n")
    report = hatchet_load.recipe(script)
    return json.loads(report["frame"]["values"][0][0])


def perflake(code: str, **consts) -> dict:
    """``answers()`` of ``code`` run on perflake's objects."""
    from perflake import GraphFrame
    from perflake.errors import MultiplePathError
    from perflake.frame.graph import Frame, Graph, Node

    scope = {"GraphFrame": GraphFrame, "Graph": Graph, "Node": Node, "Frame": Frame,
             "MultiplePathError": MultiplePathError, "pd": pd, "np": np, "json": json, **consts}
    exec(compile(code, "<scenario>", "exec"), scope)
    return json.loads(json.dumps(scope["answers"](), default=str))


def differences(theirs: dict, ours: dict) -> dict:
    """key -> (Hatchet's, perflake's) for every answer that differs."""
    return {k: (theirs.get(k), ours.get(k)) for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k)}
