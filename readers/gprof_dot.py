"""gprof2dot's DOT output (the call graph of a gprof, callgrind, perf, pstats, ... profile), as Hatchet's
``GraphFrame.from_gprof_dot`` reads it.

What gprof2dot writes (its ``DotWriter``; the DOT language is Graphviz's): ``digraph { ... }`` with one node
statement per function -- ``ID [label="<process>\\n<module>\\n<name>\\n<total%>\\n(<self%>)\\n<calls>×", tooltip=
"<file>", ...]``, the process, module, calls and tooltip only when the profiler knows them, the time lines chosen
by ``--node-label`` (``12.5%`` total-time-percentage, ``(3.1%)`` self-time-percentage, ``0.25`` total-time,
``(0.05)`` self-time), a samples line ``N×`` before the calls line with ``--show-samples`` -- and one edge
statement per caller -> callee pair, ``A -> B [label="<total%>\\n<calls>×"]``.  The node ID is the function's
name for callgrind and gprof, ``module:name`` for some formats, a number for pstats, ``_<sha1>`` for a name
longer than 1024 characters.

What this reader does (Hatchet's result for the same file, node by node; deviations marked *):

* one node per DOT node, type ``function``; ``time`` = the self-time percentage, ``time (inc)`` = the total-time
  percentage, as Hatchet (unit ``%``); *absolute times (``--node-label total-time/self-time``, which Hatchet
  cannot parse) are ``time``/``time (inc)`` when there are no percentages, else ``time (abs)``/``time (abs)
  (inc)``; *a ``N×`` line is the metric ``calls`` (when the edges carry call counts, else it is the sample count:
  ``samples``; with both lines, both), which Hatchet drops;
* the name is the node ID when the label shows it (Hatchet always uses the ID); *otherwise (a number, a hash,
  ``module:name``) the label's name line, so a pstats-made DOT shows function names, not ``0``, ``1``, ...;
  *for pstats-made labels ``module:line:name`` with a ``tooltip`` file, name, line and file are split out;
* ``module`` is the label line before the name (Hatchet: the first line, which is the process when there is
  one); ``file`` is the ``tooltip`` when there is one (Hatchet drops it);
* a node without a label (or one only named by edges) has no values, as in Hatchet;
* the call graph becomes a tree as :mod:`perflake.readers.call_graph` describes (*Hatchet keeps several
  parents per node); an edge's weight is its total-time percentage, then its call count;
* *Hatchet parses with pydot and keeps DOT escapes raw (``\\"`` stays in a name); here ``\\\\``, ``\\"`` and
  ``\\n`` are decoded.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers import call_graph
from perflake.readers.base import check_frames, finite, line_number, shown
from perflake.readers.dot_syntax import read_dot
from perflake.readers.single_file import SingleFileReader, file_head
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

_HEAD = 1 << 16
_START = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:strict\s+)?digraph\b[^{]*\{", re.I)
# a label with a gprof2dot value line: "\n12.34%", "\n(0.55%)", "\n0.25", "\n(0.05)" or "\n300021×"
_VALUE_LABEL = re.compile(rb'label="[^"\n]*\\n(?:\(?[0-9.eE+-]+%?\)?|[0-9]+\xc3\x97)(?:\\n|")')
_NUM = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_VALUE = re.compile(rf"^(?:(?P<incp>{_NUM})%|\((?P<excp>{_NUM})%\)|\((?P<exc>{_NUM})\)|"
                    rf"(?P<inc>{_NUM})|(?P<n>[0-9]+)\u00d7)$")
_PSTATS_NAME = re.compile(r"^([^:\n]*):([0-9]+):(.+)$", re.S)
_HASHED_ID = re.compile(r"^_[0-9a-f]{40}$")
_SPACE = re.compile(r"\s+")


def _split_label(label: str, head: int = 1) -> tuple[list[str], dict[str, float], list[int]]:
    """(head lines: process/module/name, time values by kind, ``N×`` counts) of a label; a node's label has
    ``head`` = 1 line of text at least (its name), an edge's none."""
    lines = label.split("\n")
    k = len(lines)
    while k > head and _VALUE.match(lines[k - 1].strip()):
        k -= 1
    times: dict[str, float] = {}
    counts: list[int] = []
    for text in lines[k:]:
        m = _VALUE.match(text.strip())
        kind = m.lastgroup
        if kind == "n":
            counts.append(int(m.group("n")))
        elif kind in times:
            raise ValueError(f"two {kind} values in the label {shown(label)}")
        else:
            times[kind] = float(m.group(kind))
    return lines[:k], times, counts


def _name(node_id: str, head: list[str], tooltip: str | None) -> tuple[str, str | None, str | None, int | None]:
    """(name, module, file, line) of a node from its ID, its label's head lines and its tooltip."""
    flat = [h.strip() for h in head]
    name, before = None, flat
    bare = _SPACE.sub("", node_id)
    for k in range(1, len(flat) + 1):  # the ID shown as the last k lines (--wrap splits a name at spaces and
        if _SPACE.sub("", "".join(flat[-k:])) == bare:  # writes ", " as ",": compared without white space)
            name, before = node_id, flat[:-k]
            break
    if name is None:
        if head and (node_id.isdigit() or _HASHED_ID.match(node_id) or node_id.endswith(":" + flat[-1])
                     or (len(flat) > 1 and node_id == f"{flat[-2]}:{flat[-1]}")):
            name, before = flat[-1], flat[:-1]
        else:
            name, before = node_id, flat[:-1] if len(flat) > 1 else []
    module = before[-1] if before else None
    file = tooltip if tooltip and tooltip != "~" else None
    line = None
    m = _PSTATS_NAME.match(name) if tooltip else None
    if m and module is None:  # gprof2dot's pstats label: module:line:name, the file in the tooltip
        name, line = m.group(3), line_number(m.group(2))
    return name, module or None, file, line


class Reader(SingleFileReader):
    kind = "gprof_dot"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A file that starts as a DOT ``digraph`` and whose first 64 KiB hold a label with a gprof2dot value line."""
        data = file_head(path, _HEAD)
        return data is not None and bool(_START.match(data)) and bool(_VALUE_LABEL.search(data))

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        edges = _Edges(path)
        graph = read_dot(path, on_edge=edges.add, keep=("label", "tooltip"))
        if not graph.nodes:
            raise ReaderError(path, "the DOT graph has no nodes")
        return _rows(graph, edges, path, self)


class _Edges:
    """The call edges as the parser meets them, one per (caller, callee) pair: the first one's place in the file and
    the greatest weight (what call_graph.spanning_tree keeps of a repeated pair), so a file repeating an edge costs
    no memory; at most call_graph.MAX_EDGES pairs."""

    def __init__(self, path: str):
        self.path, self.best, self.counts = path, {}, False

    def add(self, a: int, b: int, attrs: dict) -> None:
        try:
            _, times, counts = _split_label(attrs.get("label", ""), head=0)
        except ValueError:
            times, counts = {}, []
        self.counts = self.counts or bool(counts)
        weight = (times.get("incp", times.get("inc", 0.0)), counts[0] if counts else 0.0)
        old = self.best.get((a, b))
        if old is None:
            if len(self.best) >= call_graph.MAX_EDGES:
                raise ReaderError(self.path, f"more than {call_graph.MAX_EDGES} call edges "
                                             "(readers/limits.py: 4 x MAX_NODES)")
            self.best[(a, b)] = weight
        elif call_graph.heavier(weight, old):
            self.best[(a, b)] = weight


def _rows(graph, found: _Edges, path: str, reader: Reader) -> ProfileRows:
    ids = list(graph.nodes)
    edge_counts = found.counts
    edges = [(a, b, w) for (a, b), w in found.best.items()]
    names, modules, files, lines, values = [], [], [], [], []
    for nid in ids:
        attrs = graph.nodes[nid]
        label = attrs.get("label")
        try:
            head, times, counts = _split_label(label) if label is not None else ([], {}, [])
        except ValueError as exc:
            raise ReaderError(path, f"node {shown(nid)}: {exc}") from None
        if len(counts) > 2:
            raise ReaderError(path, f"node {shown(nid)}: {len(counts)} 'N×' lines in its label "
                                    "(gprof2dot writes at most 2)")
        if len(counts) == 2:
            times["samples"], times["calls"] = counts
        elif counts:
            times["calls" if edge_counts else "samples"] = counts[0]
        name, module, file, line = _name(nid, head, attrs.get("tooltip"))
        names.append(name)
        modules.append(module)
        files.append(file)
        lines.append(line)
        values.append(times or None)  # a label without values (or none): no row, as in Hatchet
    metrics, columns = _metrics(values)
    tree = call_graph.spanning_tree(len(ids), edges, columns.get("time (inc)", [np.nan] * len(ids)))
    call_graph.check_depth(tree, path)
    order = tree.order
    frames = pa.table({
        "local_id": pa.array(np.arange(len(order), dtype=np.int32)),
        "parent_local": pa.array(np.asarray(tree.parent_local, dtype=np.int32)),
        "name": [names[i] for i in order],
        "type": ["function"] * len(order),
        "file": [files[i] for i in order],
        "line": pa.array([lines[i] for i in order], pa.int64()),
        "end_line": pa.array([None] * len(order), pa.int64()),
        "module": [modules[i] for i in order],
    }, schema=FRAME_SCHEMA)
    local = call_graph.local_ids(tree)
    measured = [i for i in range(len(ids)) if values[i] is not None]
    table = {"local_id": pa.array(local[measured] if measured else np.zeros(0, np.int32)),
             "rank": pa.array(np.zeros(len(measured), np.int32)), "thread": pa.array(np.zeros(len(measured), np.int32))}
    for m in metrics:
        col = np.asarray(columns[m.name], dtype=np.float64)
        table[m.name] = pa.array(finite(col[measured]) if measured else np.zeros(0), pa.float64())
    labels = [f"{names[i]} ({ids[i]})" if names[i] != ids[i] else names[i] for i in range(len(ids))]
    return ProfileRows(format=reader.kind, source=path, frames=check_frames(path, frames), values=pa.table(table),
                       metrics=metrics, metadata=call_graph.metadata(tree, labels), reader_version=reader.version)


def _metrics(values: list[dict | None]) -> tuple[list[Metric], dict[str, list[float]]]:
    """The metrics present in any label, as columns (NaN where a node lacks the value).  Both halves of a pair are
    kept whenever one is present: deriving one from the other over the tree of a call graph would be wrong."""
    kinds = {k for v in values if v for k in v}
    percent = bool(kinds & {"incp", "excp"})
    absolute = bool(kinds & {"inc", "exc"})
    plan: list[tuple[Metric, str]] = []
    if percent:
        plan += [(Metric("time", EXCLUSIVE, "%", "time (inc)"), "excp"),
                 (Metric("time (inc)", INCLUSIVE, "%", "time"), "incp")]
    if absolute:
        base = "time (abs)" if percent else "time"
        plan += [(Metric(base, EXCLUSIVE, None, f"{base} (inc)"), "exc"),
                 (Metric(f"{base} (inc)", INCLUSIVE, None, base), "inc")]
    for k in ("calls", "samples"):
        if k in kinds:
            plan.append((Metric(k, OTHER, "count"), k))
    columns = {m.name: [v.get(k, np.nan) if v else np.nan for v in values] for m, k in plan}
    return [m for m, _ in plan], columns
