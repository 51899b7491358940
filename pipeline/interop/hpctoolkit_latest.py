"""Hatchet's view of an HPCToolkit v4 database: ``GraphFrame.from_hpctoolkit_latest`` (and its keywords).

perflake reads a v4 database in two shapes, from the same reader (:mod:`perflake.readers.hpctoolkit_v4`):

* **The full view** (``perflake.read_hpctoolkit``, ``perflake.read``, ``perflake tree``, and what ``ingest``
  stores in a lake): the root ``<program root>`` (ctx 0, the whole run) with *every* entry point under it
  (``main thread``, ``unknown entry``, ``application thread``), every propagation scope as its own column
  (``time``, ``time (inc)``, ``time (point)``, ``time (lex_aware)``, other metrics alike), every thread and GPU
  stream as (rank, thread), and the summary profile at rank -1 in ``sum(...)`` columns.
* **Hatchet's view** (this module): what llnl-hatchet's ``from_hpctoolkit_latest`` gives, for scripts written
  for Hatchet.  Only the first ``main thread`` entry point, as the single root ``entry`` (type ``entry``);
  node names as Hatchet spells them (``function: <short name>``, ``loop <file>:<line>``, ``line <file>:<line>``,
  ``<module>:<offset>``), frame type the lexical type (an inlined function is a ``function``).  By default one
  row per node (index ``node``) with ``time (inc)`` (execution scope) and ``time`` (function scope) from the
  summary profile (``sum`` over threads), NaN where the summary stores nothing, ``default_metric`` ``time (inc)``.
  ``parallel_profiles_mode=True``: the per-thread values of every profile instead.  Every keyword of Hatchet's
  signature is accepted and applied as Hatchet applies it (the walk below follows
  ``hpctoolkit_reader_latest.py`` of llnl-hatchet 2026.2.0); ``summary_metrics`` names ``min``/``max`` columns
  ``time:min``/``time:min (inc)`` as Hatchet does.  Node numbers are Hatchet's: a node's ``_hatchet_nid``
  is its HPCToolkit context id (the root ``entry`` of hpctoolkit-gamess is 1195), the rows are sorted by it,
  and ``gf.dataframe.loc[Node(None, hnid=ctx)]`` finds a node's row; operations that rebuild the graph number
  it in pre-order again, as Hatchet's do.

Where this view differs from Hatchet, on purpose (tests/test_hpctoolkit_latest.py compares with Hatchet in
``.bench-venv`` and asserts each difference):

* Identity: sibling contexts with the same frame are one node (their values summed; its number the smallest of
  their context ids), as everywhere in perflake
  (call-path ids, :mod:`perflake.identity`); Hatchet keeps one node per context (hpctoolkit-gamess: 11 292
  Hatchet rows, 8 399 nodes here, 8 396 call paths of names on both sides, with equal values per path).
  ``file``, ``line`` and ``module`` are kept as columns and are part of the identity (formats.md B.10); ``name``
  is not a metric (B.8).
* Parallel mode: the index is (``node``, ``rank``, ``thread``) as for every perflake frame, not Hatchet's
  (``node``, ``profile``); ``metadata["hpctoolkit.profiles"]`` maps each profile (Hatchet's ``profile``
  number) to its id tuple and (rank, thread) (GPU streams at thread 10000+k).  Hatchet's ``metadata`` is that
  table as a DataFrame; here metadata stays a dict.  Rows exist for every (node, location) of a location that
  has a value (NaN where none); Hatchet has rows only for measured pairs and no row at all for a node without
  values (B.7).  Hatchet crashes on hpctoolkit-gamess in this mode (B.7); the comparison patches its bounds.
* Copied sources are named by their original path, whatever the hpcprof release (Hatchet only removes a
  leading ``src``, and would also cut ``srcdir/x.c``); the ``point`` and ``lex_aware`` scopes, when asked
  for, are ``time (point)``/``time (lex_aware)`` (Hatchet names them ``time`` too, and the last one read wins:
  B.9); a summary statistic other than ``$$`` (e.g. a sum of squares) is left out (Hatchet names it ``time``
  too).  Strings are UTF-8 (Hatchet: ASCII only).  Values come from profile.db; cct.db is not needed.
* Metadata: the reader's (title, entry points, profiles, metrics, ...) plus ``file_path``; no ``date`` (Hatchet
  gives the directory's mtime) and no ``nodes`` (Hatchet parses it from the directory name): B.12.

Exclusive here means the function scope, as in Hatchet: a function's cost is also on each of its lines and
loops, so ``time`` does not add up over a subtree (use ``time (inc)``, execution scope, for totals).  For the
same reason ``filter``/``squash`` with ``update_inc_cols=True`` (Hatchet's default) re-derive ``time (inc)``
from ``time`` and overcount (hpctoolkit-gamess: 3 268.66 s at the root instead of 1 608.49 s); Hatchet's
squash does the same sum.  Pass ``update_inc_cols=False`` to keep the database's inclusive values.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from perflake import readers
from perflake.errors import UsageError
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

SCOPE_LETTERS = {"execution": "i", "function": "e", "point": "p", "lex_aware": "c"}
COMBINE = {0: "sum", 1: "min", 2: "max"}
MAIN_THREAD = 1  # entryPoint enum of meta.db
CUDA_FILES = ("libcuda.so", "libcudart.so", "libcusparse.so", "libcublas.so", "libcurand.so", "libcusolver.so",
              "libcufft.so", "/cuda/")
SYSTEM_SOURCES = ("/usr/src/debug", "/usr/tce")


def _map_directory(path: str | None, mapping: dict) -> str | None:
    """Hatchet's ``directory_mapping``: the first prefix ``/<key>/`` of ``path`` replaced by ``<value>/``."""
    if path is None:
        return None
    for key, value in mapping.items():
        prefix = key if key.startswith("/") else f"/{key}"
        prefix = prefix if prefix.endswith("/") else f"{prefix}/"
        if path.startswith(prefix):
            return f"{value}/{path[len(prefix):]}"
    return path


def _columns(metrics_md: list[dict], names, scopes, summaries, parallel: bool):
    """[(column of the full view, column of this view, metric id, scope, combine, unit)] for the chosen
    metrics, scopes and (summary mode) statistics."""
    want_scope = lambda s: s in scopes or SCOPE_LETTERS.get(s) in scopes  # noqa: E731
    out = []
    for md in metrics_md:
        base = md.get("base")
        if base not in names:
            continue
        if parallel:
            for s in md["scopes"]:
                if want_scope(s["scope"]):
                    out.append((s["column"], s["column"], s["prop_id"], s["scope"], "sum", md["unit"]))
            continue
        for s in md["summaries"]:
            combine = COMBINE.get(s["combine"])
            if combine not in summaries or (s["formula"] or "$$") != "$$" or not want_scope(s["scope"]):
                continue
            name = base if combine == "sum" else f"{base}:{combine}"
            scope = s["scope"]
            name = f"{name} (inc)" if scope == "execution" else name if scope == "function" else f"{name} ({scope})"
            out.append((s["column"], name, s["stat_id"], scope, combine, md["unit"]))
    return out


def _metric_info(cols) -> list[Metric]:
    """Exclusive/inclusive where both halves (function, execution scope) are present, else other."""
    by = {(c[1].replace(" (inc)", ""), c[3]): c for c in cols}
    out = []
    for src, name, _id, scope, _comb, unit in cols:
        key = name.replace(" (inc)", "")
        if scope == "function" and (key, "execution") in by:
            out.append(Metric(name, EXCLUSIVE, unit, by[(key, "execution")][1]))
        elif scope == "execution" and (key, "function") in by:
            out.append(Metric(name, INCLUSIVE, unit, by[(key, "function")][1]))
        else:
            out.append(Metric(name, OTHER, unit))
    return out


class _Walk:
    """Hatchet's recursive walk of the main thread's contexts, with its filters, over the full view's frames."""

    def __init__(self, frames: dict, opts: dict, share: np.ndarray | None):
        self.f, self.o, self.share = frames, opts, share
        n = len(frames["name"])
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(frames["parent_local"]):
            if p >= 0:
                self.children[p].append(i)
        self.out = {k: [] for k in ("src", "parent_local", "name", "type", "file", "line", "module")}

    def add(self, src: int, parent: int, name: str, kind: str, file) -> int:
        for k, v in zip(self.out, (src, parent, name, kind, file, self.f["line"][src], self.f["module"][src])):
            self.out[k].append(v)
        return len(self.out["src"]) - 1

    def run(self, entry: int) -> dict:
        root = self.add(entry, -1, "entry", "entry", None)
        stack = [(c, root, 0) for c in reversed(self.children[entry])]
        while stack:
            ctx, parent, parent_depth = stack.pop()
            node, depth, subtree = self.visit(ctx, parent, parent_depth)
            if node is None:
                continue
            if subtree and (self.o["max_depth"] is None or depth < self.o["max_depth"]):
                stack.extend((c, node, depth) for c in reversed(self.children[ctx]))
        return self.out

    def visit(self, ctx: int, parent: int, parent_depth: int):
        """(node the children hang under or None to skip the subtree, its depth, walk the children?)."""
        o, f = self.o, self.f
        if self.share is not None and not self.share[ctx] >= o["min_percentage_of_application_time"]:
            return None, 0, False
        kind = f["type"][ctx].removeprefix("inlined ")
        file = _map_directory(f["file"][ctx], o["directory_mapping"])
        include, subtree, name = not (o["exclude_non_function_nodes"] and kind != "function"), True, f["name"][ctx]
        if include and kind == "function":
            name = name.removeprefix("function: ")
            if o["exclude_mpi_function_details"] and name.startswith(("MPI_", "PMPI_")):
                subtree = False
            if o["exclude_openmp_function_details"] and file and "/openmp/" in file:
                subtree, name = False, f"<omp> {name}"
            if o["exclude_cuda_function_details"] and file and any(s in file for s in CUDA_FILES):
                subtree = False
            if o["label_function_nodes"]:
                name = f"function: {name}"
        elif include and kind == "instruction":
            include = not o["exclude_instructions"]
        elif include and kind in ("loop", "line"):
            line = f["line"][ctx] or 0
            name = f"{kind} {file if file is not None else '<unknown file>'}:{line}"
            if (o["exclude_system_libraries_source_code"] and file and file.startswith(SYSTEM_SOURCES)
                    or o["exclude_no_source_code_instructions"] and line == 0
                    or o["exclude_function_call_lines"] and kind == "line" and self.children[ctx]):
                include = False
        if not include:
            return parent, parent_depth, subtree
        return self.add(ctx, parent, name, kind, file), parent_depth + 1, subtree


def _entry(frames: dict, entries: list[dict]) -> int:
    """Local id of the first ``main thread`` entry point (Hatchet reads only that one); else the first entry
    point, else the program root."""
    local = [i for i, t in enumerate(frames["type"]) if t == "entry"]
    kinds = [e.get("entry_point") for e in entries] if len(entries) == len(local) else [None] * len(local)
    main = [i for i, k in zip(local, kinds) if k == MAIN_THREAD]
    return (main or local or [0])[0]


def view_rows(rows: ProfileRows, *, parallel_profiles_mode: bool = False, directory_mapping=None, max_depth=None,
              min_percentage_of_application_time=None, metric_names=None, metric_scopes=None, summary_metrics=None,
              profile_ranks=None, **flags) -> tuple[ProfileRows, list[str]]:
    """The full view's ProfileRows cut down to Hatchet's view, the metric columns in Hatchet's order, and each
    view frame's local id in the full view."""
    names = list(metric_names or ["time"])
    scopes = list(metric_scopes or ["i", "e"])
    summaries = list(summary_metrics or ["sum", "min", "max"])
    md = rows.metadata
    frames = rows.frames.to_pydict()
    values = rows.values.to_pandas()
    summary = values[(values["rank"] == -1) & (values["thread"] == -1)].set_index("local_id")
    entry = _entry(frames, md.get("hpctoolkit.entry_points", []))

    share = None
    if min_percentage_of_application_time is not None:
        inc = next((c[0] for c in _columns(md["hpctoolkit.metrics"], ["time"], ["i"], ["sum"], False)), None)
        if inc is None or inc not in summary.columns:
            raise UsageError(f"{rows.source}: min_percentage_of_application_time needs a time metric's summary")
        total = summary[inc].reindex(range(len(frames["name"]))).to_numpy()
        share = total / total[entry] * 100  # NaN (no value) fails every comparison: skipped, as in Hatchet
    opts = {"directory_mapping": dict(directory_mapping or {}), "max_depth": max_depth,
            "min_percentage_of_application_time": min_percentage_of_application_time, **flags}
    tree = _Walk(frames, opts, share).run(entry)

    cols = _columns(md["hpctoolkit.metrics"], names, scopes, summaries, parallel_profiles_mode)
    cols = [c for c in cols if c[0] in values.columns]
    if not cols:
        known = sorted({m.get("base") for m in md["hpctoolkit.metrics"]} - {None})
        raise UsageError(f"{rows.source}: no values for metric_names={names}, metric_scopes={scopes} "
                         f"(metrics: {', '.join(known)})")
    if parallel_profiles_mode:
        located = values[values["rank"] >= 0]
        if profile_ranks:
            located = located[located["rank"].isin(list(profile_ranks))]
    else:
        located = values[(values["rank"] == -1) & (values["thread"] == -1)]
    src = np.asarray(tree["src"], np.int64)
    new_of = np.full(len(frames["name"]), -1, np.int64)
    new_of[src] = np.arange(len(src))
    located = located[new_of[located["local_id"].to_numpy()] >= 0]
    located = located[located[[c[0] for c in cols]].notna().any(axis=1)]
    local = new_of[located["local_id"].to_numpy()]
    table = {"local_id": pa.array(local.astype(np.int32)), "rank": pa.array(located["rank"].to_numpy(np.int32)),
             "thread": pa.array(located["thread"].to_numpy(np.int32))}
    for c in cols:
        table[c[1]] = pa.array(located[c[0]].to_numpy(np.float64), mask=located[c[0]].isna().to_numpy())
    order = _hatchet_order(cols, local, located, parallel_profiles_mode)
    n = len(src)
    frame_table = pa.table({"local_id": pa.array(np.arange(n, dtype=np.int32)),
                            "parent_local": pa.array(np.asarray(tree["parent_local"], np.int32)),
                            "name": tree["name"], "type": tree["type"], "file": tree["file"], "line": tree["line"],
                            "end_line": pa.nulls(n, pa.int64()), "module": tree["module"]}, schema=FRAME_SCHEMA)
    metadata = {**md, "file_path": os.fspath(rows.source), "hpctoolkit.view": "hatchet",
                "hpctoolkit.view_profiles": "parallel" if parallel_profiles_mode else "summary"}
    out = ProfileRows(format=rows.format, source=rows.source, frames=frame_table, values=pa.table(table),
                      metrics=_metric_info(cols), metadata=metadata, reader_version=rows.reader_version)
    return out, order, src


def _hatchet_order(cols, local: np.ndarray, located, parallel: bool) -> list[str]:
    """Columns in the order Hatchet's dataframe has them (the order in which its records first hold them):
    summary mode: the entry's metrics by metric id, ``name``, then the others as nodes are walked; parallel
    mode: ``name`` first, then metrics as walked, by decreasing metric id within a node."""
    rows = np.argsort(local, kind="stable")
    first = {}
    for c in cols:
        held = np.flatnonzero(located[c[0]].notna().to_numpy()[rows])
        if held.size:
            first[c[1]] = (int(local[rows][held[0]]), -c[2] if parallel else c[2])
    named = sorted(first, key=first.get)
    at_entry = sum(1 for c in named if first[c][0] == 0)
    return ["name", *named] if parallel else [*named[:at_entry], "name", *named[at_entry:]]


def from_hpctoolkit_latest(dirname, directory_mapping=None, parallel_profiles_mode: bool = False, max_depth=None,
                           min_percentage_of_application_time=None, exclude_mpi_function_details: bool = False,
                           exclude_openmp_function_details: bool = False, exclude_cuda_function_details: bool = False,
                           exclude_system_libraries_source_code: bool = False,
                           exclude_function_call_lines: bool = False, exclude_no_source_code_instructions: bool = False,
                           exclude_instructions: bool = False, exclude_non_function_nodes: bool = False,
                           label_function_nodes: bool = True, metric_names=None, metric_scopes=None,
                           summary_metrics=None, profile_ranks=None, *, frame_class):
    """An HPCToolkit v4 database as Hatchet's ``GraphFrame.from_hpctoolkit_latest`` shows it, same keywords:
    the main thread under the root ``entry``, summary ``time (inc)``/``time`` per node, or per (rank, thread)
    with ``parallel_profiles_mode``.  The differences from Hatchet are in :mod:`perflake.interop.hpctoolkit_latest`;
    perflake's full view (every entry point and scope, the summary at rank -1) is ``from_hpctoolkit``.
    ``frame_class``: the GraphFrame class to build (``GraphFrame.from_hpctoolkit_latest`` passes its own)."""
    from perflake.ingest.normalize import normalize
    from perflake.readers.hpctoolkit_v4 import context_ids

    path = os.fspath(dirname)
    rows = readers.read(path, readers.detect_among(path, ("hpctoolkit_v4",)))
    view, order, src = view_rows(
        rows, parallel_profiles_mode=parallel_profiles_mode, directory_mapping=directory_mapping,
        max_depth=max_depth, min_percentage_of_application_time=min_percentage_of_application_time,
        metric_names=metric_names, metric_scopes=metric_scopes, summary_metrics=summary_metrics,
        profile_ranks=profile_ranks, exclude_mpi_function_details=exclude_mpi_function_details,
        exclude_openmp_function_details=exclude_openmp_function_details,
        exclude_cuda_function_details=exclude_cuda_function_details,
        exclude_system_libraries_source_code=exclude_system_libraries_source_code,
        exclude_function_call_lines=exclude_function_call_lines,
        exclude_no_source_code_instructions=exclude_no_source_code_instructions,
        exclude_instructions=exclude_instructions, exclude_non_function_nodes=exclude_non_function_nodes,
        label_function_nodes=label_function_nodes)
    n = normalize(view)
    gf = frame_class.from_tables(n.nodes, n.metrics, n.metric_info, view.metadata)
    _number_by_context(gf, view.frames, context_ids(path)[src])
    df = gf.dataframe
    if parallel_profiles_mode:
        df = df[_measured(df, [c for c in order if c != "name"])]
    extra = [c for c in ("file", "line", "module") if c in df.columns]
    gf.dataframe = df[[*order, *extra]]
    gf.exc_metrics = [c for c in order if c != "name" and not c.endswith("(inc)")]
    gf.inc_metrics = [c for c in order if c.endswith("(inc)")]
    gf.default_metric = "time (inc)" if "time (inc)" in order else None
    return gf


def _number_by_context(gf, frames: pa.Table, ctx: np.ndarray) -> None:
    """Hatchet's node numbers (in place): each node's ``_hatchet_nid`` is its HPCToolkit context id (Hatchet's
    reader keeps them and never renumbers), the smallest where sibling contexts merged into one node; the rows
    are sorted by them, as Hatchet's dataframe is.  Operations that rebuild the graph (filter, squash, copy)
    number in pre-order again, as Hatchet's do."""
    from perflake.frame.tables import rehashed as _rehashed
    from perflake.ingest.normalize import local_nodes

    ids = local_nodes(frames.add_column(0, "run_id", pa.array(np.zeros(frames.num_rows, np.int32))))
    first: dict[int, int] = {}
    for lid, nid in zip(ids.column("local_id").to_pylist(), ids.column("node_id").to_pylist()):
        first[nid] = min(first.get(nid, int(ctx[lid])), int(ctx[lid]))
    for node in gf.graph:
        node._hatchet_nid = first[node.node_id]
    nodes = gf.dataframe.index.get_level_values("node")
    order = np.argsort(np.fromiter((n._hatchet_nid for n in nodes), np.int64, len(nodes)), kind="stable")
    gf.dataframe = gf.dataframe.iloc[order]
    gf.dataframe.index = _rehashed(gf.dataframe.index)  # the nodes' numbers (their hashes) changed


def _measured(df, metrics: list[str]) -> np.ndarray:
    """Rows that hold a value, plus the first row of each node that has none anywhere: Hatchet's parallel
    mode has rows only for measured (node, profile) pairs; a node without any value keeps one NaN row here
    (Hatchet drops it, B.7) so that it stays in the dataframe (squash keeps only nodes found there)."""
    valued = df[metrics].notna().any(axis=1).to_numpy()
    codes, uniques = df.index.get_level_values("node").factorize()
    node_valued = np.zeros(len(uniques), bool)
    np.logical_or.at(node_valued, codes, valued)
    first = np.zeros(len(codes), bool)
    first[np.unique(codes, return_index=True)[1]] = True
    return valued | (first & ~node_valued[codes])
