"""Fit performance models with the real Extra-P (the ``extrap`` package) and report them as JSON.

``extrap`` 4.2.5 pins numpy < 2 and pulls in PySide6, so it can live neither in perflake's venv nor in
``.bench-venv`` (numpy 2 for Hatchet/Thicket): it has its own venv, ``.extrap-venv``, made by
``bench/setup_extrap_venv.sh`` from ``bench/requirements-extrap.txt``.  Run with its Python::

    .extrap-venv/bin/python tests/extrap_models.py INPUT.json

INPUT: ``{"points": [p, ...], "negative": false, "rows": {name: [[repetition values at p0], [at p1], ...], ...}}``
(an empty list where the row has no value at that point).  Prints one JSON object ``{name: {"model": text,
"constant": bool, "c0", "c1", "poly", "log", "smape", "ar2", "rss", "re", "rrss"}}``: the model of Extra-P's
ModelGenerator with its defaults (the Basic single-parameter modeler, mean of the repetitions, cross-validation
on), as Thicket's ``Modeling`` calls it.  tests/test_models.py calls :func:`run` (stdlib only at import time).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from venv_report import EXTRAP_PYTHON, run_json


def run(points, rows: dict, *, negative: bool = False, timeout: float = 600) -> dict:
    """Run this script in .extrap-venv on ``points`` and ``rows`` (see the module docstring); the parsed report.
    ``negative``: the modeler's option "Negative exponents" (allow_negative_exponents) on."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"points": [float(p) for p in points], "rows": rows, "negative": negative}, f)
    try:
        args = [str(EXTRAP_PYTHON), "-W", "ignore", __file__, f.name]
        return run_json(args, timeout)
    finally:
        os.unlink(f.name)


def _main(path: str) -> None:
    from extrap.entities.callpath import Callpath
    from extrap.entities.coordinate import Coordinate
    from extrap.entities.experiment import Experiment
    from extrap.entities.measurement import Measurement
    from extrap.entities.metric import Metric
    from extrap.entities.parameter import Parameter
    from extrap.modelers.model_generator import ModelGenerator

    doc = json.loads(Path(path).read_text())
    metric = Metric("value")
    exp = Experiment()
    exp.add_parameter(Parameter("p"))
    exp.add_metric(metric)
    coords = [Coordinate(p) for p in doc["points"]]
    for c in coords:
        exp.add_coordinate(c)
    for name, per_point in doc["rows"].items():
        cp = Callpath(name)
        exp.add_callpath(cp)
        for c, values in zip(coords, per_point):
            if values:
                exp.add_measurement(Measurement(c, cp, metric, values))
    modeler = "Default"
    if doc.get("negative"):
        from extrap.modelers.single_parameter.basic import SingleParameterModeler

        modeler = SingleParameterModeler()
        modeler.allow_negative_exponents = True
    gen = ModelGenerator(exp, modeler=modeler)
    gen.model_all()
    out = {}
    for (cp, _metric), model in gen.models.items():
        h = model.hypothesis
        terms = h.function.compound_terms
        poly = log = 0.0
        c1 = 0.0
        if terms:
            c1 = float(terms[0].coefficient)
            for t in terms[0].simple_terms:
                if t.term_type == "polynomial":
                    poly = float(t.exponent)
                else:
                    log = float(t.exponent)
        out[cp.name] = {"model": h.function.to_string(Parameter("p")), "constant": not terms,
                        "c0": float(h.function.constant_coefficient), "c1": c1, "poly": poly, "log": log,
                        "smape": float(h.SMAPE), "ar2": float(h.AR2), "rss": float(h.RSS), "re": float(h.RE),
                        "rrss": float(h.rRSS)}
    print(json.dumps(out))


if __name__ == "__main__":
    _main(sys.argv[1])
