"""Which metric a view shows when the user names none: one rule, from the metrics the run (or runs) has.

The rule (:func:`preferred`), over a run's metrics in their order:

1. an inclusive, time-like metric -- time-like by its unit (seconds and their multiples) or by a word of its
   name (``time``, ``duration``, ``*time`` such as ``CPUTIME``/``REALTIME``, ``sec``); among several, the
   plain or average one first (``time (inc)``, Caliper/Spot's ``Avg time/rank`` =
   ``avg#inclusive#sum#time.duration``, as Thicket users pick it), then a sum/total (``Total time``), then a
   maximum, a minimum, other statistics; ties keep the run's order;
2. else the first inclusive metric;
3. else an exclusive time-like metric (same order), the first exclusive metric, the first metric.

Users of each entry point:

* ``GraphFrame.default_metric`` (:func:`frame_default`) keeps Hatchet's choice where Hatchet's reader makes a
  sensible one -- the exclusive ``time`` of its Caliper, old-HPCToolkit and JSON readers, so that code ported
  from Hatchet sees the same column -- and uses the rule everywhere else (TAU, HPCToolkit v4, a Spot ``.cali``
  without ``time``: Hatchet 2026.2.0 takes the first column there, ``Min time/rank``, which it also files as
  exclusive);
* ``perflake tree`` (:func:`shown_metric`) shows an inclusive metric whatever the input: the frame's
  ``default_metric`` when it is inclusive, else its inclusive partner, else the rule; the same run read from a
  lake, from its files or from its Hatchet JSON export therefore shows the same metric;
* ``perflake ensemble`` / ``scaling`` (and the Python functions with ``metric=None``) use
  :func:`selection_default`: the rule over the metrics held by the most selected runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from perflake.readers.caliper_json import RANK_COLUMN_KEY
from perflake.readers.node_order import NODE_ORDER_KEY
from perflake.vocabulary import EXCLUSIVE, INCLUSIVE, Metric

# Hatchet's Caliper (native and json-split), old-HPCToolkit and JSON readers default to the exclusive ``time``
HATCHET_EXCLUSIVE_TIME = ("caliper", "caliper_json", "hatchet_json", "hpctoolkit")
TIME_UNITS = frozenset({"s", "sec", "secs", "second", "seconds", "ms", "msec", "millisecond", "milliseconds",
                        "us", "usec", "microsecond", "microseconds", "ns", "nsec", "nanosecond", "nanoseconds"})
TIME_WORDS = frozenset({"time", "duration", "sec", "secs", "seconds", "usec", "msec", "nsec", "elapsed"})
_STAT_ORDER = {"avg": 0, "average": 0, "mean": 0, "sum": 1, "total": 1, "tot": 1, "max": 2, "maximum": 2,
               "min": 3, "minimum": 3, "std": 4, "stddev": 4, "var": 4, "variance": 4, "dev": 4}
_WORD = re.compile(r"[a-z]+")


def index_levels(fmt: str | None, metadata: dict | None):
    """The index levels besides ``node`` a run's dataframe has as Hatchet's reader makes it, when the format
    fixes them: ``("rank",)`` for a json-split file with an ``mpi.rank`` column (Hatchet's json reader indexes
    (node, rank) even with one rank, and has no thread level); None otherwise: the levels that vary."""
    if fmt == "caliper_json" and (metadata or {}).get(RANK_COLUMN_KEY):
        return ("rank",)
    return None


def node_ordered(fmt: str | None, metadata: dict | None) -> bool:
    """Whether a run's graph is node-ordered as Hatchet's readers make it (``Graph.node_ordering``: walked in
    the children's stored order): a ``.cali`` file's (Caliper's ``Node order``, else the file's order, as
    Hatchet's from_caliperreader), and a run whose metadata says ``caliper.node_order`` (a json-split file that
    carries Node order, perflake's Hatchet JSON export of a node-ordered graph).  Hatchet's json reader needs
    ``node_ordering=False`` on a json-split file without Node order: frame order."""
    return fmt == "caliper" or bool((metadata or {}).get(NODE_ORDER_KEY))


def _words(name: str) -> list[str]:
    return _WORD.findall(name.lower())


def is_time_like(metric: Metric) -> bool:
    """A metric measuring time: by its unit, or by a word of its name (``time``, ``CPUTIME``, ``duration``...)."""
    if metric.unit and metric.unit.strip().lower() in TIME_UNITS:
        return True
    return any(w in TIME_WORDS or (w.endswith("time") and w != "time" and len(w) <= 12) for w in _words(metric.name))


def statistic_rank(name: str) -> int:
    """0 for a plain or average value, 1 sum/total, 2 max, 3 min, 4 other spread statistics: the first
    statistic word of the name decides (``avg#inclusive#sum#time.duration`` is an average over ranks)."""
    for w in _words(name):
        if w in _STAT_ORDER:
            return _STAT_ORDER[w]
    return 0


def _best_time(metrics: Sequence[Metric]) -> str | None:
    timed = [(statistic_rank(m.name), i) for i, m in enumerate(metrics) if is_time_like(m)]
    return metrics[min(timed)[1]].name if timed else None


def preferred(metrics: Iterable[Metric]) -> str | None:
    """The rule of the module docstring over ``metrics`` (in the run's order); None when there are none."""
    metrics = list(metrics)
    for role in (INCLUSIVE, EXCLUSIVE):
        of_role = [m for m in metrics if m.role == role]
        if of_role:
            return _best_time(of_role) or of_role[0].name
    return metrics[0].name if metrics else None


def frame_default(metrics: Sequence[Metric], fmt: str | None = None) -> str | None:
    """``GraphFrame.default_metric`` of a run read with reader ``fmt``: Hatchet's ``time`` where its reader of
    that format picks it, else :func:`preferred` (module docstring)."""
    if fmt in HATCHET_EXCLUSIVE_TIME and any(m.name == "time" for m in metrics):
        return "time"
    return preferred(metrics)


def shown_metric(gf) -> str | None:
    """The inclusive metric a tree of ``gf`` shows when none is named (module docstring)."""
    from perflake.frame.tables import inclusive_partner, metric_roles

    default = gf.default_metric
    if default in gf.inc_metrics:
        return default
    if default in gf.exc_metrics:
        partner = inclusive_partner(gf, default)
        if partner is not None:
            return partner
    metrics = metric_roles(gf)
    if not any(m.role == INCLUSIVE for m in metrics) and default in gf.dataframe.columns:
        return default
    return preferred(metrics) or default


def selection_default(catalog_metrics: Sequence[Sequence[dict] | None]) -> tuple[str | None, int]:
    """(metric, how many runs have it) for runs whose catalog ``metrics`` lists are given: the rule over the
    metrics that the most runs have (first-seen order; role and unit from the first run that has it)."""
    seen: dict[str, Metric] = {}
    count: dict[str, int] = {}
    for run in catalog_metrics:
        for m in {m["name"]: m for m in run or []}.values():
            if m["name"] not in seen:
                seen[m["name"]] = Metric(m["name"], m["role"], m.get("unit"), m.get("pair"))
            count[m["name"]] = count.get(m["name"], 0) + 1
    if not count:
        return None, 0
    most = max(count.values())
    name = preferred([m for m in seen.values() if count[m.name] == most])
    return name, count.get(name, 0)


def per_rank_metric(lake, metric: str | None, *, runs=None, where: str | None = None) -> str:
    """``metric``, else ``time`` (Hatchet's exclusive time, what imbalance and comparisons have always read) when
    every selected run has it, else the default of the selected runs (:func:`selection_default`), said on stderr."""
    if metric:
        return metric
    import sys

    from perflake.analytics.ensemble import default_metric
    from perflake.analytics.selection import select

    sel = select(lake, runs=runs, where=where)
    catalog = sel.catalog.column("metrics").to_pylist()
    if catalog and all("time" in {m["name"] for m in run or []} for run in catalog):
        return "time"
    metric, have, total = default_metric(lake, where=where, runs=runs)
    print(f"perflake: metric {metric!r} ({have} of {total} selected runs have it; choose with --metric)",
          file=sys.stderr)
    return metric
