"""HPCToolkit 2021-2022 "sparse" databases: ``experiment.xml`` (version 4.0) + ``profile.db`` [+ ``cct.db``,
``trace.db``], as written by hpcprof2 / hpcprof from the "Prof2" release candidate (2021-01) until meta.db
replaced experiment.xml (2022-04).  There is no meta.db; profile.db starts with ``HPCPROF-profdb__``.

llnl-hatchet cannot read this format: ``from_hpctoolkit`` wants ``*.metric-db`` files, ``from_hpctoolkit_latest``
a meta.db.  Pipit read it until late 2023 (traces only).  The binary decoding is in
:mod:`perflake.readers.hpctoolkit_sparse_sections` (whose docstring lists the layout and its doubts).

* **Tree.** experiment.xml's calling-context tree, parsed and named as for the old format
  (:mod:`perflake.readers.hpctoolkit_xml`: ``PF``/``Pr`` functions with the call line as prefix, ``L`` loops,
  ``S`` statements, call sites ``C`` transparent).  The implicit global context (id 0) is no node: its summary
  values are kept in the metadata (``hpctoolkit.totals``).  A line whose only cost is the calls made on it
  (hpcprof2 writes an ``<S>`` for it, the old hpcprof did not) would be an empty leaf beside those calls: it
  makes no node (``hpctoolkit.call_only_lines`` counts them; hpcviewer shows them).
* **Context ids.** The context id of an element is ``|i|``: hpcprof2 writes one context as two elements, one of
  them with ``-id`` (2021: ``<PF i="-7"><S i="7"/>`` for an instruction without source context, ``<C i="-9"><PF
  i="9">`` for an inlined call; 2022: ``<C i="-9"><PF i="9">``, ``<PF i="7"><S i="-7"/>``).  Every node takes
  the values of its context; the values of a ``C`` (a call instruction) belong to no node (its callee's
  procedure frame and its line hold them).
* **Folded contexts.** hpcprof2 writes no element for an instruction under a source line that has no children
  (its cost is in the line's values), yet stores its values.  Such ids (values, no element) make no node; their
  number is ``hpctoolkit.folded_contexts`` in the metadata.
* **Metrics.** Per-thread profiles key values by the ``MetricDB`` ids of experiment.xml; ``<m> (I)`` is the
  execution scope, ``<m> (E)`` the function scope.  Names as the v4 reader (Hatchet's
  ``from_hpctoolkit_latest``) spells them: lower case, ``(unit)`` dropped, ``cputime``/``realtime``/``cycles``
  -> ``time``; ``time`` exclusive, ``time (inc)`` inclusive.  The summary profile (profile 0) keys values by the
  ``PARTIAL`` ids of the MetricTable (``(MetricDB id << 8) + k``); each partial is a column at rank -1, thread
  -1 named after what it accumulates, found from the statistics' formulas: ``sum(time (inc))``,
  ``count(time (inc))``, ``sum((time (inc))^2)``, ``min(time (inc))``, ``max(time (inc))`` (role other).
* **Values are made additive down this tree.**  The function scope of a PF or loop includes every statement
  nested in it (like the old format's ``(E)``): each statement's exclusive value is subtracted from every
  enclosing PF/Pr/L up to its procedure frame (per-thread exclusive columns and the summary ``sum`` of the
  exclusive; min/max/count of a PF or loop stay HPCToolkit's).  A result within 1e-9 of the original's
  magnitude is rounding: 0.  A statement is a leaf here (calls made on its line hang beside it, under the
  enclosing PF or loop, as in the old format), while HPCToolkit's execution scope of a line also counts those
  calls: a statement's inclusive values are its own line cost (its function-scope values), so that inclusive =
  exclusive + the children's inclusive holds on every node.  Hatchet reads no such database: nothing to
  compare with.
* **Locations.** rank = the RANK id of the id tuple (0 without one), thread = the THREAD id (logical ids;
  0 without one); a profile with other kinds (GPU streams) gets thread 10000 + k as in the v4 reader.
  ``cct.db`` (the same values by context) is not read; its presence and magic are in the metadata.

Doubts (no sample of this era was at hand; facts from hpcprof2's ``experimentxml4.cpp``/``sparsedb.cpp`` of 2021
and 2022, ``metric.cpp``, FORMATS.md and Pipit's reader): which of a context's two elements is negative changed
between versions, so both are read as ``|i|``; the roles of the partials come from ``Metric::freeze`` (count,
sum, sum of squares, min, max, in that order when present) through the statistics' formulas, a partial no
formula explains is named ``<combine>(<column>) partial k``; a profile.db without its footer is reported as
truncated, as FORMATS.md and the writer both end the file with it.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers import hpctoolkit_sparse_sections as sec
from perflake.readers.base import check_frames, check_text
from perflake.readers.hpctoolkit_profiles import GPU_THREAD_BASE, SUMMARY_RANK, checked_rank, place_others
from perflake.readers.hpctoolkit_xml import STATEMENT, TYPES, ParsedExperiment, parse_experiment
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

XML_NAME, PROFILE_DB, CCT_DB, TRACE_DB = "experiment.xml", "profile.db", "cct.db", "trace.db"
ROUNDING = 1e-9
_KINDS = {0: "SUMMARY", 1: "NODE", 2: "RANK", 3: "THREAD", 4: "GPUDEVICE", 5: "GPUCONTEXT", 6: "GPUSTREAM", 7: "CORE"}
_TIME_NAMES = {"cputime": "time", "realtime": "time", "cycles": "time"}
_UNITS = {"sec": "seconds", "B": "bytes"}
# statistic -> role of each partial its formula refers to, in order (hpcprof2's Metric::freeze)
_STATS = {"Sum": ["sum"], "Mean": ["sum", "count"], "StdDev": ["sumsq", "count", "sum", "count"],
          "CfVar": ["sumsq", "count", "sum", "count", "sum", "count"], "Min": ["min"], "Max": ["max"]}


class Reader:
    kind = "hpctoolkit_sparse"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        path = os.fspath(path)
        if not os.path.isdir(path) or not os.path.isfile(os.path.join(path, XML_NAME)):
            return False
        try:
            with open(os.path.join(path, PROFILE_DB), "rb") as fh:
                return fh.read(len(sec.PROFDB_MAGIC)) == sec.PROFDB_MAGIC
        except OSError:
            return False

    @staticmethod
    def files(path: str) -> list[str]:
        """experiment.xml and profile.db: what the values come from (and the run id hashes)."""
        return [os.path.join(os.fspath(path), XML_NAME), os.path.join(os.fspath(path), PROFILE_DB)]

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        xml, pdb = self.files(path)
        for f in (xml, pdb):
            if not os.path.isfile(f):
                raise ReaderError(f, "missing: an HPCToolkit sparse database holds experiment.xml and profile.db")
        head = sec.read_header(xml)
        exp = parse_experiment(xml)
        prof = sec.read_profiles(pdb)
        metrics, lut, fix = _metrics(head)
        rank, thread, records = _locations(prof, head.id_names, pdb)
        col = _columns(prof, lut, pdb)
        key_prof, key_ctx, wide, row, local = _rows(prof, col, len(metrics), exp)
        order = np.lexsort((local, key_prof[row]))  # by profile, then node
        row, local = row[order], local[order]
        vals = wide[:, row]
        _fix_statements(vals, exp, local, fix["pairs"])
        _subtract_statements(vals, exp, local, key_prof[row], len(exp.parent), fix["additive"])
        measured = ~np.isnan(vals).all(axis=0)  # a line's row whose only value was the calls' execution: none left
        if not measured.all():
            row, local, vals = row[measured], local[measured], vals[:, measured]
        frames, local, call_only = _prune(exp, local)
        in_xml = np.fromiter(head.element_ids, np.int64, len(head.element_ids))
        folded = np.setdiff1d(key_ctx[key_ctx != 0], in_xml)  # values, and no element of any kind
        table = {"local_id": pa.array(local.astype(np.int32)), "rank": pa.array(rank[key_prof[row]]),
                 "thread": pa.array(thread[key_prof[row]])}
        present = [j for j in range(len(metrics)) if not np.isnan(vals[j]).all()]
        keep = [j for j, m in enumerate(metrics) if j in present or any(
            metrics[k].name == m.pair for k in present)]
        table.update({metrics[j].name: pa.array(vals[j], mask=np.isnan(vals[j])) for j in keep})
        totals = {metrics[j].name: float(wide[j, i]) for i in np.flatnonzero(key_ctx == 0)
                  for j in range(len(metrics)) if prof.infos[int(key_prof[i])]["summary"]
                  and not np.isnan(wide[j, i])}
        metadata = _metadata(head, prof, records, totals, int(folded.size), call_only, path)
        check_text(xml, metadata)
        return ProfileRows(format=self.kind, source=path, frames=check_frames(xml, frames),
                           values=pa.table(table), metrics=[metrics[j] for j in keep], metadata=metadata,
                           reader_version=self.version)


def _columns(prof: sec.Profiles, lut: tuple[dict, dict], pdb: str) -> np.ndarray:
    """The metric column of every stored value: MetricDB ids for per-thread profiles, PARTIAL ids for summaries."""
    table = np.full((2, 1 << 16), -1, np.int64)  # [is summary, metric id (u16)] -> column
    for is_summary, known in enumerate(lut):
        table[is_summary, list(known)] = list(known.values())
    summary = np.array([i["summary"] for i in prof.infos])[prof.profile]
    col = table[summary.astype(np.int64), prof.metric]
    if (col < 0).any():
        bad = int(prof.metric[col < 0][0])
        raise ReaderError(pdb, f"damaged: values for metric id {bad}, which experiment.xml does not describe")
    return col


def _rows(prof: sec.Profiles, col: np.ndarray, n_metrics: int, exp: ParsedExperiment) -> tuple:
    """One row per (profile, context) with values (profile, context, [metric, row] values), then the rows of
    the (profile, node) pairs: (row of each, node of each).  A context of several nodes gives each its values."""
    keys, inv = np.unique((prof.profile << 32) | prof.ctx, return_inverse=True)
    wide = np.full((n_metrics, keys.size), np.nan)
    wide[col, inv] = np.where(np.isinf(prof.value), np.nan, prof.value)  # an infinity is no measurement
    key_prof, key_ctx = keys >> 32, keys & 0xFFFFFFFF
    node_ctx = np.abs(np.frombuffer(exp.xml_id, np.int64)) if len(exp.xml_id) else np.zeros(0, np.int64)
    node_ctx[node_ctx == 0] = -1  # no i
    order = np.argsort(node_ctx, kind="stable")
    lo = np.searchsorted(node_ctx[order], key_ctx, "left")
    count = np.searchsorted(node_ctx[order], key_ctx, "right") - lo
    row = np.repeat(np.arange(keys.size), count)
    local = order[np.repeat(lo, count) + np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)]
    return key_prof, key_ctx, wide, row, local


def _prune(exp: ParsedExperiment, local: np.ndarray) -> tuple[pa.Table, np.ndarray, int]:
    """Frames without the statements that have no value anywhere (a line whose only cost is the calls made on
    it: hpcprof2 writes an ``<S>`` for it, the old hpcprof did not); (frames, renumbered nodes, how many)."""
    frames = _frames(exp)
    n = frames.num_rows
    parent = frames.column("parent_local").to_numpy()
    has_row, has_kids = np.zeros(n, bool), np.zeros(n, bool)
    has_row[local], has_kids[parent[parent >= 0]] = True, True
    drop = (np.frombuffer(exp.type, np.int8) == STATEMENT) & ~has_row & ~has_kids if n else has_row
    if not drop.any():
        return frames, local, 0
    keep = ~drop
    new = np.cumsum(keep) - 1
    kept = frames.filter(pa.array(keep))
    kept = kept.set_column(0, "local_id", pa.array(np.arange(kept.num_rows, dtype=np.int32)))
    kept = kept.set_column(1, "parent_local", pa.array(np.where(parent[keep] >= 0, new[parent[keep]], -1)
                                                       .astype(np.int32)))
    return kept, new[local], int(drop.sum())


def _split_unit(raw: str) -> tuple[str, str | None]:
    """``"CPUTIME (sec)"`` -> ``("CPUTIME", "sec")``; ``(raw, None)`` without a final ``(...)``."""
    i = raw.rfind("(")
    if raw.endswith(")") and i >= 0 and ")" not in raw[i + 1 : -1]:
        return raw[:i].rstrip(), raw[i + 1 : -1]
    return raw, None


def _metrics(head: sec.Header) -> tuple[list[Metric], tuple[dict, dict], dict]:
    """Metric columns; (MetricDB id -> column, PARTIAL id -> column); the column pairs to fix."""
    scope_of = {}
    for m_id, m in head.metrics.items():  # a MetricDB without (I)/(E): the scope from its partials' t=
        scope_of.setdefault(m_id >> 8, {"inclusive": "execution", "exclusive": "function"}.get(m.get("t")))
    groups: dict[str, dict[str, int]] = {}
    for d in sorted(head.metric_dbs, key=lambda d: d["i"]):
        raw = d.get("n", "") or f"metric {d['i']}"
        base, scope = (raw[:-4], {" (I)": "execution", " (E)": "function"}[raw[-4:]]) if raw[-4:] in (
            " (I)", " (E)") else (raw, scope_of.get(d["i"]) or "other")
        groups.setdefault(base, {}).setdefault(scope, d["i"])
    out, thread_lut, col_of, unit_of, used = [], {}, {}, {}, set()
    pairs, additive = [], []
    for raw, scopes in groups.items():
        stem, unit = _split_unit(raw)
        unit = _UNITS.get(unit, unit)
        name = _TIME_NAMES.get(stem.lower(), stem.lower())
        while name in used:  # two metrics with the same name: the later one keeps its raw spelling
            name = raw.lower() if raw.lower() not in used else name + "'"
        used.add(name)
        paired = {"function", "execution"} <= scopes.keys()
        for scope, db in scopes.items():
            if scope == "function":
                col, role, pair = name, EXCLUSIVE if paired else OTHER, f"{name} (inc)" if paired else None
            elif scope == "execution":
                col, role, pair = f"{name} (inc)", INCLUSIVE if paired else OTHER, name if paired else None
            else:
                col, role, pair = f"{name} ({scope} {db})", OTHER, None
            col_of[db], unit_of[db] = col, unit
            out.append(Metric(col, role, unit, pair))
        if paired:
            pairs.append((scopes["function"], scopes["execution"]))
    index = {m.name: j for j, m in enumerate(out)}
    thread_lut = {db: index[c] for db, c in col_of.items()}
    pairs_cols = [(index[col_of[f]], index[col_of[e]]) for f, e in pairs]
    additive = [index[col_of[f]] for f, _ in pairs]
    roles = _partial_roles(head)
    summary_lut, summ, partial_col = {}, [], {}
    for p_id, m in sorted(head.metrics.items()):
        combine = m["formulas"].get("combine")
        if (":PARTIAL:" not in m.get("n", "") and combine is None) or " INTERNAL" in m.get("n", ""):
            continue
        db, k = p_id >> 8, p_id & 0xFF
        if db not in col_of:
            continue
        base, comb = col_of[db], (combine or "sum").split("(")[0].strip() or "sum"
        role = roles.get(p_id)
        spelled = {"sum": f"sum({base})", "count": f"count({base})", "sumsq": f"sum(({base})^2)",
                   "min": f"min({base})", "max": f"max({base})"}.get(role, f"{comb}({base}) partial {k}")
        while spelled in index or spelled in {s.name for s in summ}:
            spelled += "'"
        summary_lut[p_id] = len(out) + len(summ)
        partial_col[db, k] = summary_lut[p_id]
        summ.append(Metric(spelled, OTHER, unit_of[db] if role in ("sum", "min", "max") else None))
        if role == "sum" and any(f == db for f, _ in pairs):
            additive.append(summary_lut[p_id])
    for f, e in pairs:
        pairs_cols += [(partial_col[f, k], partial_col[e, k]) for (d, k) in partial_col if d == f
                       and (e, k) in partial_col]
    first = lambda m: not (m.name == "time" or m.name.startswith("time (") or "(time" in m.name)  # noqa: E731
    metrics = out + summ
    order = sorted(range(len(out)), key=lambda j: first(out[j])) + sorted(
        range(len(out), len(metrics)), key=lambda j: first(metrics[j]))
    new = {old: i for i, old in enumerate(order)}
    remap = lambda d: {k: new[v] for k, v in d.items()}  # noqa: E731
    fix = {"pairs": [(new[a], new[b]) for a, b in pairs_cols], "additive": [new[a] for a in additive]}
    return [metrics[j] for j in order], (remap(thread_lut), remap(summary_lut)), fix


def _partial_roles(head: sec.Header) -> dict[int, str]:
    """PARTIAL id -> what it accumulates (sum, count, sumsq, min, max), from the statistics' view formulas."""
    roles: dict[int, str] = {}
    for m in head.metrics.values():
        view = m["formulas"].get("view")
        if view is None:
            continue
        name = m.get("n", "")
        for suffix in (" (I)", " (E)"):
            name = name[: -len(suffix)] if name.endswith(suffix) else name
        stat = name.rsplit(":", 1)[-1]
        ids = sec.formula_ids(view)
        if stat in _STATS and len(ids) == len(_STATS[stat]):
            for pid, role in zip(ids, _STATS[stat]):
                roles.setdefault(pid, role)
    return roles


def _fix_statements(vals: np.ndarray, exp: ParsedExperiment, local: np.ndarray, pairs: list) -> None:
    """A statement's inclusive value is its own line cost: its exclusive (function-scope) value."""
    stmt = np.frombuffer(exp.type, np.int8)[local] == STATEMENT if local.size else np.zeros(0, bool)
    for exc, inc in pairs:
        vals[inc, stmt] = vals[exc, stmt]


def _subtract_statements(vals: np.ndarray, exp: ParsedExperiment, local: np.ndarray, prof: np.ndarray, n: int,
                         columns: list) -> None:
    """Subtract each statement's exclusive value from every PF/Pr/L that encloses it up to its procedure frame
    (in place, per profile; rows sorted by profile, then node).  Sparse: a step of the chain whose scope has no
    row in that profile is skipped, the next one still gets the value."""
    if not columns or not len(exp.stmt_node) or not local.size:
        return
    owner = np.full(n, -1, np.int64)
    owner[np.frombuffer(exp.stmt_node, np.int32)] = np.frombuffer(exp.stmt_owner, np.int32)
    up = np.full(n, -1, np.int64)
    up[np.frombuffer(exp.scope_node, np.int32)] = np.frombuffer(exp.scope_parent, np.int32)
    key = prof * n + local  # sorted
    stmts = np.flatnonzero(owner[local] >= 0)
    amount = np.nan_to_num(vals[np.ix_(columns, stmts)])
    total = np.zeros((len(columns), local.size))
    cur = owner[local[stmts]]
    while (live := np.flatnonzero(cur >= 0)).size:
        want = prof[stmts[live]] * n + cur[live]
        pos = np.minimum(np.searchsorted(key, want), key.size - 1)
        hit = key[pos] == want
        for j in range(len(columns)):
            total[j] += np.bincount(pos[hit], weights=amount[j, live[hit]], minlength=local.size)
        cur[live] = up[cur[live]]
    sub = vals[columns]
    with np.errstate(invalid="ignore", over="ignore"):
        res = sub - total
        res[np.abs(res) <= ROUNDING * np.abs(sub)] = 0.0  # rounding left by the subtraction
    vals[columns] = np.where(total != 0, res, sub)


def _locations(prof: sec.Profiles, names: dict, path: str) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """(rank of each profile, thread of each profile, metadata records)."""
    kind_name = lambda k: (names.get(k) or _KINDS.get(k) or f"KIND{k}").upper()  # noqa: E731
    n = len(prof.infos)
    rank, thread = np.zeros(n, np.int32), np.zeros(n, np.int32)
    records, others, taken, n_summary = [], [], set(), 0
    for info in prof.infos:
        i, ids = info["index"], [(kind_name(k), f, p, lg) for k, f, p, lg in info["id_tuple"]]
        value = {k: lg for k, _, _, lg in ids}
        if info["summary"]:
            rank[i], thread[i] = SUMMARY_RANK, -1 - n_summary
            n_summary += 1
        else:
            rank[i] = checked_rank(value, i, path)
            cpu = {k for k, *_ in ids} <= {"NODE", "RANK", "THREAD", "CORE"}
            if cpu and (rank[i], value.get("THREAD", 0)) not in taken:
                thread[i] = value.get("THREAD", 0)
                taken.add((int(rank[i]), int(thread[i])))
            else:
                others.append((int(rank[i]), [(k, lg) for k, _, _, lg in ids], i))
        records.append({"profile": i, "summary": info["summary"], "values": info["values"],
                        "id_tuple": [{"kind": k, "interpret": f, "physical_id": p, "logical_id": lg}
                                     for k, f, p, lg in ids]})
    return place_others(rank, thread, others, taken, records)


def _frames(exp: ParsedExperiment) -> pa.Table:
    n = len(exp.parent)
    ints = lambda a, t: np.frombuffer(a, t) if n else np.zeros(0, t)  # noqa: E731
    line, end_line = ints(exp.line, np.int64), ints(exp.end_line, np.int64)
    return pa.table({
        "local_id": pa.array(np.arange(n, dtype=np.int32)),
        "parent_local": pa.array(ints(exp.parent, np.int32)),
        "name": pa.array(exp.name, pa.string()),
        "type": pa.array(TYPES, pa.string()).take(pa.array(ints(exp.type, np.int8))),
        "file": pa.array(exp.file, pa.string()),
        "line": pa.array(line, pa.int64(), mask=line == 0),
        "end_line": pa.array(end_line, pa.int64(), mask=end_line == 0),
        "module": pa.array(exp.module, pa.string()),
    }, schema=FRAME_SCHEMA)


def _metadata(head: sec.Header, prof: sec.Profiles, records: list, totals: dict, folded: int, call_only: int,
              path: str) -> dict:
    meta = {}
    if head.program:
        meta["program"] = meta["executable"] = head.program
    hosts = sorted({t["physical_id"] for r in records for t in r["id_tuple"] if t["kind"] == "NODE"})
    trace = head.trace_dbs[0] if head.trace_dbs else {}
    meta.update({
        "hpctoolkit.xml_version": head.version,
        "hpctoolkit.profile_db_version": prof.version,
        "hpctoolkit.id_tuple_bytes": prof.tuple_width,
        "hpctoolkit.id_kinds": {str(k): v for k, v in sorted(head.id_names.items())},
        "hpctoolkit.host_ids": hosts,
        "hpctoolkit.profiles": records,
        "hpctoolkit.summary_location": {"rank": SUMMARY_RANK, "thread": -1},
        "hpctoolkit.gpu_thread_base": GPU_THREAD_BASE,
        "hpctoolkit.totals": totals,
        "hpctoolkit.folded_contexts": folded,
        "hpctoolkit.call_only_lines": call_only,
        "hpctoolkit.cct_db": sec.cct_db_status(os.path.join(path, CCT_DB)),
        "hpctoolkit.trace_db": os.path.isfile(os.path.join(path, TRACE_DB)),
    })
    if trace:
        meta["hpctoolkit.trace_times"] = {k: trace[k] for k in ("db-min-time", "db-max-time") if k in trace}
    return meta
