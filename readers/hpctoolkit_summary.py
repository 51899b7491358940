"""HPCToolkit old-format databases written with metric-db output off, and additive exclusive values.

**What such a database is.** ``hpcprof`` (the pre-2021 one, ``experiment.xml`` version 2.x) can be told not to
write ``*.metric-db`` files (one per rank and thread).  The directory then holds ``experiment.xml`` with an
empty ``<MetricDBTable>`` and, when tracing was on, ``*.hpctrace`` files.  The only values are the summary
ones inline in the XML: ``<M n=<MetricTable id> v=<value>/>`` children of CCT elements, for metrics such as
``CPUTIME (sec):Sum (I)`` / ``(E)`` (sums over all ranks and threads), written with ``%g`` (six significant
digits), zeros not written (``hasMetric``).  The reader keeps them as *one summary profile* at location
rank -1, thread -1 (perflake's convention for a summary profile, as HPCToolkit v4's profile 0); the ranks and
threads that were measured are listed from the ``.hpctrace`` file names in ``hpctoolkit.locations``.

**Metrics.** ``n`` is looked up in the MetricTable; the role comes from ``t=`` (``inclusive``/``exclusive``,
else the ``(I)``/``(E)`` suffix) for a sum over ranks and threads (``:Sum``, or no statistic).  Any other
statistic (``:Mean``, ``:Min``, ``:Max``, ``:StdDev``, ``:CfVar`` of ``-M stats``, derived metrics) keeps its
name and HPCToolkit's values as written, role other: the maximum over threads of a procedure's body is not the
sum of its statements' maxima, so no exclusive value of those adds up.  Names as the metric-db columns Hatchet
reads: ``CPUTIME (usec|sec):Sum (E)``/``(I)`` -> ``time``/``time (inc)``, another ``X:Sum (I)`` -> ``X (I)``,
so a database read with and without its metric-db files has the same column names.

**Which exclusive value each level holds** (hpcprof's ``Prof::CCT::ANode::aggregateMetricsIncl`` and
``aggregateMetricsExcl`` in ``src/lib/prof/CCT-Tree.cpp``; checked on public 2020-2021 databases):

* every sample's cost sits on exactly one CCT node: almost always a statement ``S`` (a call site's own samples
  become an ``S`` sibling with the call site's static id), sometimes a loop or procedure scope itself (in real
  databases loops with no statement child carry cost: their (E) is their (I) minus their callees');
* (I) of a node = its own cost + the (I) of its children (post-order sum); a call site ``C`` has no own cost,
  its (I) is its callee's;
* (E) is then *propagated, not own*: a statement's cost is added to its parent scope and to its enclosing
  procedure frame (``PF``, or an inlined ``Pr`` treated as one).  So (E) of a ``PF`` is everything in its
  body at any loop depth, (E) of an ``L`` is its own cost plus its *direct* statements only (an outer loop of
  a nest shows no (E) at all: ``formats.md`` 1.6 says nested loops are included, the tool's sources and data
  say they are not, and they win), (E) of an ``S`` is its cost.  Summing (E) over ``S``, ``L``, ``Pr`` and
  ``PF`` counts most costs two or three times, and undoing the propagation needs the exact rule of the
  hpcprof version (which ``Pr`` count as frames changed between releases).

perflake keeps PF, named Pr, L and S nodes (``C`` and nameless ``Pr`` are not nodes, as in Hatchet), and gives
each the cost that sits on it and on no other kept node: **exclusive = (I) of the node minus the (I) of its
kept children** (a call site's callee is a kept child; a nameless ``Pr``'s children are).  This needs no
knowledge of the propagation rule, and by construction the exclusive values of all kept nodes add up to the
inclusive values of the roots (the ``<program root>`` inclusive equals the sum of the exclusive values of its
subtree).  For a statement it is its (E); for a scope whose cost is all in its children it is 0.

**Rounding.** ``%g`` keeps six significant digits, so a printed value is off by up to 5e-6 of itself and the
difference above is not exactly 0 for a scope without own cost (2.27704e+09 - 2.26414e+09 - 1.28935e+07 =
6,500 for a true 0).  A difference within the printing error of the values it comes from (5e-6 x the sum of
their magnitudes) is reported as 0; the sums then agree to within that error.  For the binary metric-db
values the same rule runs with a tolerance of 1e-12 (float addition only).

**Hatchet** (``from_hpctoolkit``) globs ``*.metric-db`` and divides by their number: it fails with
``ZeroDivisionError`` on such a database (tests/test_hpctoolkit_summary_only.py runs it).
"""

from __future__ import annotations

import re

import numpy as np

from perflake.readers.base import EXCLUSIVE, INCLUSIVE, OTHER, Metric
from perflake.readers.hpctoolkit_xml import STATEMENT

SUMMARY_RANK, SUMMARY_THREAD = -1, -1
PRINTED_REL = 5e-6  # %g: half a unit in the sixth significant digit, relative
BINARY_REL = 1e-12  # float64 sums
SUM_STATS = (None, "Sum")  # statistics whose exclusive values add up
# hpcprof's summary statistics (``-M sum``, ``-M stats``); any other ``:word`` is part of a metric's name
_NAME_RE = re.compile(r"^(?P<base>.*?)(?::(?P<stat>Sum|Mean|StdDev|CfVar|Min|Max))? \((?P<ie>[IE])\)$")
_TIME_RE = re.compile(r"^CPUTIME \((?:usec|sec)\)$")
_UNIT_RE = re.compile(r"\(([mun]?sec)\)")


def own_cost(inc: np.ndarray, parent: np.ndarray, rel: float) -> np.ndarray:
    """Per node, its inclusive value minus its children's: ``inc`` is [node, ...] (NaN = no value), ``parent``
    the parent node of each (-1 for a root).  A child without a value counts 0; a node without a value gets
    NaN; a difference within ``rel`` x (|own inclusive| + the children's |inclusive|) is 0 (rounding)."""
    inc = np.asarray(inc, dtype=np.float64)
    known = np.where(np.isfinite(inc), inc, 0.0)
    kids, kids_abs = np.zeros_like(known), np.zeros_like(known)
    child = np.flatnonzero(parent >= 0)
    with np.errstate(invalid="ignore", over="ignore"):
        if child.size:  # children grouped by parent, then one segmented sum (np.add.at is slower)
            child = child[np.argsort(parent[child], kind="stable")]
            owner = parent[child]
            start = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            kids[owner[start]] = np.add.reduceat(known[child], start, axis=0)
            kids_abs[owner[start]] = np.add.reduceat(np.abs(known[child]), start, axis=0)
        own = inc - kids
        own[np.abs(own) <= rel * (np.abs(known) + kids_abs)] = 0.0
    return own


def _split(name: str) -> tuple[str, str | None, str | None]:
    """``CPUTIME (sec):Sum (I)`` -> (``CPUTIME (sec)``, ``Sum``, ``I``); no suffix -> (name, None, None)."""
    m = _NAME_RE.match(name)
    return (m.group("base"), m.group("stat"), m.group("ie")) if m else (name, None, None)


def summary_metrics(metric_table: dict, metric_attrs: dict, units: dict, present: set) -> list[tuple[str, Metric]]:
    """(MetricTable id, Metric) for every metric with a value, or whose partner has one, in table order."""
    roles, names = {}, {}
    for i, raw in metric_table.items():
        attrs = metric_attrs.get(i, {})
        base, stat, ie = _split(raw or "")
        t = attrs.get("t")
        if t not in ("inclusive", "exclusive"):
            t = {"I": "inclusive", "E": "exclusive"}.get(ie)
        roles[i] = {"inclusive": INCLUSIVE, "exclusive": EXCLUSIVE}.get(t, OTHER) if stat in SUM_STATS else OTHER
        if roles[i] == OTHER or ie is None:
            names[i] = raw or f"metric {i}"
        elif _TIME_RE.match(base):
            names[i] = "time" if roles[i] == EXCLUSIVE else "time (inc)"
        else:
            names[i] = f"{base} ({ie})"
    taken: dict[str, int] = {}
    for i in metric_table:  # a name given twice: both keep HPCToolkit's own
        taken[names[i]] = taken.get(names[i], 0) + 1
    names = {i: (n if taken[n] == 1 else (metric_table[i] or f"metric {i}")) for i, n in names.items()}
    out = []
    for i, raw in metric_table.items():
        partner = metric_attrs.get(i, {}).get("partner")
        if i not in present and partner not in present:
            continue
        pair_ok = roles[i] != OTHER and partner in roles and {roles[i], roles[partner]} == {INCLUSIVE, EXCLUSIVE}
        u = _UNIT_RE.search(raw or "")
        out.append((i, Metric(names[i], roles[i], u.group(1) if u else units.get(raw),
                              names[partner] if pair_ok else None)))
    return out


def summary_columns(exp, n_nodes: int) -> tuple[list[Metric], dict[str, np.ndarray]]:
    """The summary profile of ``exp`` (parsed with values=True): its metrics and one float64 column of
    ``n_nodes`` values per metric (NaN where HPCToolkit wrote nothing).  Exclusive columns with an inclusive
    partner hold :func:`own_cost` of the partner; without one, the values written on statements only."""
    node = np.frombuffer(exp.value_node, dtype=np.int32) if len(exp.value_node) else np.zeros(0, np.int32)
    which = np.frombuffer(exp.value_metric, dtype=np.int32) if len(exp.value_metric) else np.zeros(0, np.int32)
    value = np.frombuffer(exp.value, dtype=np.float64) if len(exp.value) else np.zeros(0)
    raw: dict[str, np.ndarray] = {}
    for k, mid in enumerate(exp.value_ids):
        col = np.full(n_nodes, np.nan)
        at = which == k
        col[node[at]] = value[at]  # a second <M> of one metric on one node: the last one (as a dict would)
        col[np.isinf(col)] = np.nan  # an infinity is no measurement
        raw[mid] = col
    metrics = summary_metrics(exp.metric_table, exp.metric_attrs, exp.metric_units, set(raw))
    parent = np.frombuffer(exp.parent, dtype=np.int32).astype(np.int64) if n_nodes else np.zeros(0, np.int64)
    is_stmt = np.frombuffer(exp.type, dtype=np.int8) == STATEMENT if n_nodes else np.zeros(0, bool)
    empty = np.full(n_nodes, np.nan)
    columns: dict[str, np.ndarray] = {}
    for i, m in metrics:
        partner = exp.metric_attrs.get(i, {}).get("partner")
        if m.role == EXCLUSIVE and m.pair is not None and partner in raw:
            columns[m.name] = own_cost(raw[partner], parent, PRINTED_REL)
        elif m.role == EXCLUSIVE:
            columns[m.name] = np.where(is_stmt, raw.get(i, empty), np.nan)
        else:
            columns[m.name] = raw.get(i, empty)
    return [m for _, m in metrics], columns
