"""HPCToolkit databases in the old layout: ``experiment.xml`` + one ``*.metric-db`` per rank and thread, or
``experiment.xml`` alone (metric-db output off: the summary profile, :mod:`perflake.readers.hpctoolkit_summary`).

Format reference: ``shared/docs/formats.md`` section 1.  What this reader does:

* the tree comes from experiment.xml, parsed safely and streaming (:mod:`perflake.readers.hpctoolkit_xml`
  describes the safety rules and how nodes are named: Hatchet's ``27:MPI_Init``, ``Loop@file:line``,
  ``file:line``);
* rank, thread, host id, pid and generation come from each metric-db file name, parsed from the right
  (``<group>.<exe>-<rank>-<thread>-<hostid>-<pid>-<generation>.metric-db``); every file is read, whatever the
  number of threads per rank;
* metric-db values start at the XML's ``db-header-sz`` plus the two u32 counts (Hatchet hard-codes byte 32:
  formats.md B.4); the file size is checked against the counts; ``b`` (big-endian) and ``l`` flags are honoured;
  each file is mapped (not read whole) and its values taken with one ``numpy.frombuffer``, one file at a time;
  an infinite value (a damaged file) becomes NaN;
* one metric per MetricDB column, in ascending ``i``: ``CPUTIME (usec|sec) (E)``/``(I)`` are named ``time`` and
  ``time (inc)`` as Hatchet does, others keep their name; role from ``t`` (or the ``(I)``/``(E)`` suffix), pair
  from ``partner``, unit from the name (``usec``) or else the MetricTable's ``units`` Info;
* exclusive values are made additive: HPCToolkit's (E) is propagated up to the enclosing scope and procedure
  frame (:mod:`perflake.readers.hpctoolkit_summary` says how, from hpcprof's sources), so the exclusive value of
  a node is its (I) minus the (I) of its kept children, per rank and thread (an (E) column without an (I)
  partner: each statement's (E) is subtracted from every enclosing PF/Pr/L up to its procedure frame).  Hatchet
  subtracts statements from their direct parent only, double counting statements in loops (formats.md B.2).
  Statement file attribution follows nesting (Hatchet: document order, B.1);
* the implicit experiment root (node id 1) and call sites (``C``) are not nodes (as in Hatchet); the root's
  inline summary values are kept in the metadata (``hpctoolkit.totals``; Hatchet drops them, B.5);
* run metadata (formats.md 6.3): ``program``/``executable`` (the Header name), the XML version, Info pairs,
  ``hostids`` and one ``hpctoolkit.locations`` entry (rank, thread, hostid, pid, generation, file) per file
  (metric-db files, or for a summary-only database its ``.hpctrace`` files).

A directory is this format when its experiment.xml starts like one and it has metric-db files (the first one
with the metric-db magic), or none and the root element has version 2.x (or older) and is followed by its
``<Header>`` (version 4.0 is the 2021-22 "sparse" layout with profile.db, another reader's).
"""

from __future__ import annotations

import math
import mmap
import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX, check_frames, shown
from perflake.readers.hpctoolkit_summary import BINARY_REL, SUMMARY_RANK, SUMMARY_THREAD, own_cost, summary_columns
from perflake.readers.hpctoolkit_xml import TYPES, ParsedExperiment, parse_experiment
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

MAGIC = b"HPCPROF-metricdb__"
XML_NAME = "experiment.xml"
_FILE_RE = re.compile(r"-(\d+)-(\d+)-([0-9A-Fa-f]+)-(\d+)-(\d+)\.metric-db$")
_TRACE_RE = re.compile(r"-(\d+)-(\d+)-([0-9A-Fa-f]+)-(\d+)-(\d+)\.hpctrace$")
_ROOT_RE = re.compile(rb"<HPCToolkitExperiment\s+version\s*=\s*[\"'](\d{1,9})[.\d]*[\"']\s*>")
_SECTION_RE = re.compile(rb"<(?:Header|SecCallPathProfile)[\s>]")
_TIME_RE = re.compile(r"^CPUTIME \((?:usec|sec)\) \(([IE])\)$")
_UNIT_RE = re.compile(r"\(([mun]?sec)\)")
_SUMMARY_RE = re.compile(r":[A-Za-z]+(?= \([IE]\)$)")  # "CPUTIME (usec):Sum (I)" -> "CPUTIME (usec) (I)"
_NUM_RE = re.compile(r"^[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?$")  # unambiguous: linear on long digit runs


def _metric_db_files(path: str) -> list[str]:
    try:
        return sorted(os.path.join(path, e) for e in os.listdir(path) if e.endswith(".metric-db"))
    except OSError:
        return []


def _typed(value):
    if isinstance(value, str) and _NUM_RE.match(value.strip()):
        v = float(value)
        if not math.isfinite(v):  # beyond the float range: kept as written (JSON has no infinity)
            return value
        integral = v.is_integer() and "." not in value and "e" not in value.lower() and len(value) < 4300
        return int(value) if integral else v
    return value


class Reader:
    kind = "hpctoolkit"
    version = "2"  # 2: summary-only databases; exclusive = (I) minus the children's (I)

    @staticmethod
    def sniff(path: str) -> bool:
        path = os.fspath(path)
        xml = os.path.join(path, XML_NAME)
        if not os.path.isdir(path) or not os.path.isfile(xml):
            return False
        try:
            with open(xml, "rb") as fh:
                head = fh.read(1 << 16)
            if not re.search(rb"<(?:!DOCTYPE\s+)?HPCToolkitExperiment[\s/>]", head):
                return False
            if os.path.isfile(sparse := os.path.join(path, "profile.db")):  # 2021-2022: hpctoolkit_sparse
                with open(sparse, "rb") as fh:
                    if fh.read(16) == b"HPCPROF-profdb__":
                        return False
            for f in _metric_db_files(path):
                with open(f, "rb") as fh:
                    return fh.read(len(MAGIC)) == MAGIC
        except OSError:
            return False
        root = _ROOT_RE.search(head)  # no metric-db: a summary-only database (version 2.x, not 4.0's sparse one)
        return bool(root and int(root.group(1)) < 4 and _SECTION_RE.search(head, root.end()))

    @staticmethod
    def files(path: str) -> list[str]:
        """experiment.xml and every metric-db file (what the run id hashes)."""
        path = os.fspath(path)
        return [os.path.join(path, XML_NAME), *_metric_db_files(path)]

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        xml = os.path.join(path, XML_NAME)
        if not os.path.isdir(path) or not os.path.isfile(xml):
            raise ReaderError(path, "an HPCToolkit database is a directory with experiment.xml and *.metric-db files")
        if not _metric_db_files(path):
            return self._read_summary(path, xml)
        exp = parse_experiment(xml)
        dbs = sorted(exp.metric_dbs, key=lambda d: _int(xml, d, "i"))
        metrics = _metrics(exp, dbs)
        columns = [_int(xml, d, "db-id") if "db-id" in d else k for k, d in enumerate(dbs)]
        if columns and min(columns) < 0:
            raise ReaderError(xml, f"<MetricDB> db-id {min(columns)} is negative")
        header_sz = {d.get("db-header-sz", "24") for d in dbs}
        if len(header_sz) != 1:
            raise ReaderError(xml, f"MetricDB entries disagree on db-header-sz: {shown(sorted(header_sz))}")
        header_sz = _int(xml, dbs[0], "db-header-sz", default=24)
        locations = _locations(path)
        xml_id = _ints(exp.xml_id)
        n, nf = len(xml_id), len(locations)
        rows, no_id = np.maximum(xml_id - 1, 0)[:, None], xml_id < 1  # node id k is row k - 1
        values = np.empty((nf, n, len(dbs)), dtype=np.float64)
        for k, loc in enumerate(locations):
            table = _read_metric_db(loc["path"], header_sz, xml_id.max(initial=0), max(columns) + 1)
            values[k] = table[rows, columns]
            values[k, no_id] = np.nan
        with np.errstate(over="ignore", invalid="ignore"):  # damaged values: inf - inf, 1e308 + 1e308
            values[np.isinf(values)] = np.nan  # an infinity is no measurement
            _make_additive(values, exp, dbs, metrics)
        values[np.isinf(values)] = np.nan
        table = {
            "local_id": pa.array(np.tile(np.arange(n, dtype=np.int32), nf)),
            "rank": pa.array(np.repeat(np.asarray([loc["rank"] for loc in locations], np.int32), n)),
            "thread": pa.array(np.repeat(np.asarray([loc["thread"] for loc in locations], np.int32), n)),
        }
        for j, m in enumerate(metrics):
            table[m.name] = pa.array(values[:, :, j].reshape(-1))
        return ProfileRows(
            format=self.kind,
            source=path,
            frames=check_frames(path, _frames(exp)),
            values=pa.table(table),
            metrics=metrics,
            metadata=_metadata(exp, locations),
            reader_version=self.version,
        )


    def _read_summary(self, path: str, xml: str) -> ProfileRows:
        """A database without metric-db files: the summary profile inline in experiment.xml, at rank -1."""
        exp = parse_experiment(xml, values=True, require_metric_dbs=False)
        n = len(exp.parent)
        metrics, columns = summary_columns(exp, n)
        if not metrics:
            raise ReaderError(xml, "no metric-db files and no summary values (<M>) in experiment.xml: no data")
        table = {
            "local_id": pa.array(np.arange(n, dtype=np.int32)),
            "rank": pa.array(np.full(n, SUMMARY_RANK, np.int32)),
            "thread": pa.array(np.full(n, SUMMARY_THREAD, np.int32)),
            **{m.name: pa.array(columns[m.name]) for m in metrics},
        }
        meta = _metadata(exp, _trace_locations(path))
        meta["hpctoolkit.summary_only"] = True
        meta["hpctoolkit.summary_location"] = {"rank": SUMMARY_RANK, "thread": SUMMARY_THREAD}
        if exp.metric_dbs:  # listed in experiment.xml, but the files are not there
            meta["hpctoolkit.metric_db_missing"] = [d.get("n") for d in exp.metric_dbs]
        if exp.values_unknown_metric:
            meta["hpctoolkit.values_of_unknown_metrics"] = exp.values_unknown_metric
        if exp.trace_dbs:
            meta["hpctoolkit.trace_db"] = {k: _typed(v) for k, v in exp.trace_dbs[0].items()}
        return ProfileRows(format=self.kind, source=path, frames=check_frames(path, _frames(exp)),
                           values=pa.table(table), metrics=metrics, metadata=meta, reader_version=self.version)


def _trace_locations(path: str) -> list[dict]:
    """The measured ranks and threads of a summary-only database, from its ``.hpctrace`` file names."""
    try:
        names = sorted(e for e in os.listdir(path) if e.endswith(".hpctrace"))
    except OSError:
        return []
    out = []
    for name in names:
        m = _TRACE_RE.search(name)
        if m and max(int(m.group(1)), int(m.group(2))) <= INT32_MAX:
            out.append({"rank": int(m.group(1)), "thread": int(m.group(2)), "hostid": m.group(3),
                        "pid": int(m.group(4)), "generation": int(m.group(5)), "path": os.path.join(path, name)})
    return sorted(out, key=lambda loc: (loc["rank"], loc["thread"]))


def _int(xml: str, attrs: dict, key: str, default: int | None = None) -> int:
    value = attrs.get(key)
    if value is None and default is not None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        problem = f"<MetricDB n={shown(attrs.get('n'))}>: {key}={shown(value)} is not an integer"
        raise ReaderError(xml, problem) from None


def _metrics(exp: ParsedExperiment, dbs: list[dict]) -> list[Metric]:
    units = {_SUMMARY_RE.sub("", name): unit for name, unit in exp.metric_units.items()}
    names: dict[str, str] = {}
    for d in dbs:
        raw = d.get("n", "")
        m = _TIME_RE.match(raw)
        name = ("time" if m.group(1) == "E" else "time (inc)") if m else raw
        names[d.get("i")] = name if name not in names.values() else raw
    out = []
    for d in dbs:
        raw, name, t = d.get("n", ""), names[d.get("i")], d.get("t", "nil")
        if t not in ("inclusive", "exclusive"):
            t = "inclusive" if raw.endswith("(I)") else "exclusive" if raw.endswith("(E)") else "nil"
        role = {"inclusive": INCLUSIVE, "exclusive": EXCLUSIVE}.get(t, OTHER)
        u = _UNIT_RE.search(raw)
        pair = names.get(d.get("partner")) if role != OTHER else None
        out.append(Metric(name, role, u.group(1) if u else units.get(raw), pair))
    return out


def _locations(path: str) -> list[dict]:
    files = _metric_db_files(path)
    if not files:
        raise ReaderError(path, "no *.metric-db files next to experiment.xml")
    out, seen = [], {}
    for f in files:
        m = _FILE_RE.search(os.path.basename(f))
        if not m:
            raise ReaderError(f, "file name does not end in -<rank>-<thread>-<hostid>-<pid>-<generation>.metric-db")
        rank, thread = int(m.group(1)), int(m.group(2))
        if rank > INT32_MAX or thread > INT32_MAX:
            what = f"rank {rank}" if rank > INT32_MAX else f"thread {thread}"
            raise ReaderError(f, f"{what} (from the file name) is beyond {INT32_MAX}")
        if (rank, thread) in seen:
            raise ReaderError(f, f"rank {rank} thread {thread} is also in {os.path.basename(seen[rank, thread])}")
        seen[rank, thread] = f
        out.append({"rank": rank, "thread": thread, "hostid": m.group(3), "pid": int(m.group(4)),
                    "generation": int(m.group(5)), "path": f})
    return sorted(out, key=lambda loc: (loc["rank"], loc["thread"]))


def _read_metric_db(path: str, header_sz: int, max_id: int, n_columns: int) -> np.ndarray:
    """The (numNodes, numMetrics) table of one metric-db file, as float64 (formats.md 1.3): a read-only view of
    the file mapped into memory (nothing is read before the header and the size are checked, and only the pages
    the caller's rows touch are ever read)."""
    try:
        with open(path, "rb") as fh:
            head, size = fh.read(24), os.fstat(fh.fileno()).st_size
            if head[: len(MAGIC)] != MAGIC:
                problem = f"not an HPCToolkit metric-db: starts with {head[:len(MAGIC)]!r}, not {MAGIC!r}"
                raise ReaderError(path, problem)
            flag = head[23:24]
            if flag not in (b"b", b"l") or header_sz < 24:
                raise ReaderError(path, f"unsupported header: endianness flag {flag!r}, db-header-sz {header_sz}")
            if size < header_sz + 8:
                raise ReaderError(path, f"truncated: {size} bytes, the header alone needs {header_sz + 8}")
            order = ">" if flag == b"b" else "<"
            fh.seek(header_sz)
            n_nodes, n_metrics = (int(x) for x in np.frombuffer(fh.read(8), dtype=order + "u4", count=2))
            start = header_sz + 8
            want = start + 8 * n_nodes * n_metrics
            if size != want:
                what = "truncated" if size < want else "trailing bytes"
                raise ReaderError(path, f"{what}: {size} bytes, expected {want} for {n_nodes} nodes x "
                                        f"{n_metrics} metrics")
            if n_nodes < max_id or n_metrics < n_columns:
                raise ReaderError(path, f"holds {n_nodes} nodes x {n_metrics} metrics; experiment.xml needs node id "
                                        f"{max_id} and {n_columns} metric columns")
            if not n_nodes * n_metrics:
                return np.zeros((n_nodes, n_metrics), np.float64)
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    return np.frombuffer(data, dtype=order + "f8", count=n_nodes * n_metrics, offset=start).reshape(n_nodes, n_metrics)


def _ints(a) -> np.ndarray:
    """An ``array.array`` as a numpy view (no copy)."""
    return np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, dtype=a.typecode)


def _make_additive(values: np.ndarray, exp: ParsedExperiment, dbs: list[dict], metrics: list[Metric]) -> None:
    """Exclusive columns (in place): the partner's (I) minus the children's (I) per location (module docstring);
    an exclusive column without an inclusive partner column falls back to subtracting nested statements."""
    column = {d.get("i"): j for j, d in enumerate(dbs)}
    parent = _ints(exp.parent).astype(np.int64)
    fallback = []
    for j, (d, m) in enumerate(zip(dbs, metrics)):
        if m.role != EXCLUSIVE:
            continue
        k = column.get(d.get("partner"))
        if k is None or metrics[k].role != INCLUSIVE:
            fallback.append(j)
            continue
        inc = np.ascontiguousarray(values[:, :, k].T)  # [node, location]
        values[:, :, j] = own_cost(inc, parent, BINARY_REL).T
    _make_exclusive_additive(values, exp, fallback)


def _make_exclusive_additive(values: np.ndarray, exp: ParsedExperiment, columns: list[int]) -> None:
    """Subtract every statement's exclusive value from each PF/Pr/L scope that encloses it up to its procedure
    frame (in place).  The sums go up the chains of scopes one nesting level at a time, deepest first."""
    stmt, owner = _ints(exp.stmt_node), _ints(exp.stmt_owner)
    inside = owner >= 0
    if not inside.any() or not columns:
        return
    scope, up = _ints(exp.scope_node), _ints(exp.scope_parent)
    exc = np.moveaxis(values[:, :, columns], 1, 0)  # (node, location, column)
    total = np.zeros_like(exc)  # per node: the exclusive values of the statements its chains enclose
    np.add.at(total, owner[inside], exc[stmt[inside]])
    level = _chain_levels(scope, up, len(exc))
    for d in range(int(level.max(initial=0)), 0, -1):
        at = level == d
        np.add.at(total, up[at], total[scope[at]])
    values[:, :, columns] -= np.moveaxis(total, 0, 1)


def _chain_levels(scope: np.ndarray, up: np.ndarray, n: int) -> np.ndarray:
    """The nesting level of each scope in its chain (0 for a procedure frame), by pointer jumping: O(log depth)
    vectorised rounds instead of a walk per scope."""
    position = np.full(n, -1, np.int64)
    position[scope] = np.arange(len(scope))
    anc = np.where(up >= 0, position[np.maximum(up, 0)], -1)  # the next link of each scope's chain
    level = (anc >= 0).astype(np.int64)  # links from the scope to anc
    while (live := anc >= 0).any():
        idx = np.flatnonzero(live)
        nxt = anc[idx]
        level[idx] += level[nxt]
        anc[idx] = anc[nxt]
    return level


def _frames(exp: ParsedExperiment) -> pa.Table:
    n = len(exp.parent)
    line, end_line = _ints(exp.line), _ints(exp.end_line)
    return pa.table(
        {
            "local_id": pa.array(np.arange(n, dtype=np.int32)),
            "parent_local": pa.array(_ints(exp.parent).astype(np.int32, copy=False)),
            "name": pa.array(exp.name, pa.string()),
            "type": pa.array(TYPES, pa.string()).take(pa.array(_ints(exp.type))),
            "file": pa.array(exp.file, pa.string()),
            "line": pa.array(line, pa.int64(), mask=line == 0),
            "end_line": pa.array(end_line, pa.int64(), mask=end_line == 0),
            "module": pa.array(exp.module, pa.string()),
        },
        schema=FRAME_SCHEMA,
    )


def _metadata(exp: ParsedExperiment, locations: list[dict]) -> dict:
    meta = {k: _typed(v) for k, v in exp.info.items()}
    if exp.program:
        meta["program"] = meta["executable"] = exp.program
    if exp.profile_name and exp.profile_name != exp.program:
        meta["hpctoolkit.profile"] = exp.profile_name
    if exp.version:
        meta["hpctoolkit.xml_version"] = exp.version
    totals = {exp.metric_table.get(i, i): _typed(v) for i, v in exp.totals.items()}
    if totals:
        meta["hpctoolkit.totals"] = totals
    meta["hostids"] = sorted({loc["hostid"] for loc in locations})
    meta["hpctoolkit.locations"] = [
        {**{k: v for k, v in loc.items() if k != "path"}, "file": os.path.basename(loc["path"])} for loc in locations
    ]
    return meta
