"""Caliper json-split files (``cali-query ... FORMAT json-split``): one JSON object per run.

Format reference: ``shared/docs/formats.md`` section 3.  What this reader does:

* frames: the ``nodes`` of the call-path column (``source.function#callpath.address`` when present, else
  ``path``, as Hatchet: 3.4) and their ancestors; name = label; type ``function``, or the column's name when
  it is a nested attribute (``loop``, ``annotation``...).  ``path`` has lost the attribute of origin (6.1) and
  gives ``function`` as Hatchet's native reader does (4.7; its json reader says ``region``).  An empty label
  is ``UNKNOWN <n>``, numbered per file (B.15: Hatchet's counter is process-global);
* sampled locations (``sourceloc#...``, or ``source.file#...`` + ``source.line#...``): a node whose rows
  carry more than one gets a ``statement`` child per location, named ``<basename>:<line>``, with file, line
  and module, and those rows move to it (3.4; cpi: 85 + 42 = 127 nodes).  A node with one location keeps its
  rows and no file/line/module (Hatchet keeps those as dataframe columns), so a function's id never depends
  on the lines that happened to be sampled.  ``UNKNOWN:0`` means no debug info: file and line stay null;
* rows: rank = ``mpi.rank`` (0 without it or when null), thread 0.  Records with a null call path (outside every
  region) are dropped as by Hatchet and counted in ``caliper.rows_without_path``; no record: NaN (Hatchet: 0);
* metrics: Hatchet's names (``sum#time.duration`` -> ``time``, ``inclusive#sum#time.duration`` ->
  ``time (inc)``: 3.4).  ``time`` and ``sum#...`` are exclusive, ``(inc)``/``inclusive`` inclusive,
  ``count`` and statistics (``min#``, ``max#``, ``avg#``, ``any#``) other (Hatchet calls every non-``(inc)``
  column exclusive, cf. B.19).  ``Node order`` (B.14) is not a column: when present, siblings are laid out
  in it, as Hatchet orders children by it (readers/node_order.py), and the run's metadata says so
  (``caliper.node_order``: its GraphFrames are node-ordered); string value columns are attributes and are
  skipped;
* units: the column's ``attribute.unit``, else ``nsec`` for ``*.ns``, else time is ``usec`` before Caliper 2
  (no ``cali.caliper.version`` global) and ``sec`` after (B.21);
* extra top-level keys are run metadata, typed: integers, floats, ``[a,b]`` lists (B.16; 4.5); JSON's NaN and
  Infinity stay text.  A string holding an unpaired surrogate (``"\\ud800"``) is refused: it is not text.

Speed and memory: the rows are parsed block by block into float64 columns (readers/caliper_json_rows.py).
"""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import check_frames, check_text, finite, line_number, shown
from perflake.readers.caliper_json_rows import HEAD as _HEAD
from perflake.readers.caliper_json_rows import KEYS, load
from perflake.readers.limits import MAX_ATTRIBUTE_TEXT, MAX_CALL_DEPTH, MAX_FRAME_TEXT, MAX_NODES
from perflake.readers.node_order import NODE_ORDER_COLUMNS, NODE_ORDER_KEY, reorder
from perflake.readers.single_file import SingleFileReader
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

# run metadata of a json-split file with an ``mpi.rank`` column: Hatchet's json reader indexes its dataframe by
# (node, rank) then, even with one rank (perflake.frame.defaults.index_levels)
RANK_COLUMN_KEY = "caliper.rank_column"

_KEY_RES = {k: re.compile(rb'"' + k.encode() + rb'"\s*:') for k in KEYS}
_HIERARCHY = ("source.function#callpath.address", "path")
_NESTED = ("function", "loop", "region", "annotation", "mpi.function", "cupti.runtimeAPI")
_RENAME = {"sum#time.duration": "time", "sum#avg#sum#time.duration": "time",
           "inclusive#sum#time.duration": "time (inc)", "sum#avg#inclusive#sum#time.duration": "time (inc)"}
_NOT_METRICS = ("Node order", "min#min#aggregate.slot", "aggregate.slot")  # B.14
_STATS = ("min#", "max#", "avg#", "any#")
_INT_RE = re.compile(r"[+-]?(?:0|[1-9]\d*)\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?\Z|[+-]?\d+[eE][+-]?\d+\Z")
_TAIL = 1 << 18
_SCAN, _OVERLAP = 4 << 20, 4096


def _typed(value):
    """A global's value: int, float, list of strings (``[a,b]``, formats.md 4.5) or the string itself.

    JSON's NaN and Infinity (which Python's json accepts) are kept as text: the catalog stores strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, dict)) and not _strict_json(value):
        return json.loads(json.dumps(value), parse_constant=str)
    if not isinstance(value, str):
        return value
    s = value.strip()
    if _INT_RE.match(s) and len(s) < 4300:  # Python refuses longer decimal conversions
        return int(s)
    if _FLOAT_RE.match(s) and math.isfinite(f := float(s)):  # 1e999 stays text: JSON has no infinity
        return f
    if s[:1] == "[" and s[-1:] == "]":
        return [p.strip() for p in s[1:-1].split(",")] if s[1:-1].strip() else []
    return value


def _check_unicode(path: str, doc: dict) -> None:
    """Refuse unpaired surrogates outside the data rows (checked as they are read), and a metadata value longer
    than MAX_ATTRIBUTE_TEXT bytes (limits.py)."""
    check_text(path, {k: v for k, v in doc.items() if k != "data"})
    for key, value in doc.items():
        if key not in KEYS and len(text := json.dumps(value, ensure_ascii=False)) > MAX_ATTRIBUTE_TEXT // 4 \
                and len(text.encode("utf-8", "surrogatepass")) > MAX_ATTRIBUTE_TEXT:
            raise ReaderError(path, f"metadata {shown(key[:40])}: a value of more than {MAX_ATTRIBUTE_TEXT} bytes "
                                    "(limit)")


def _strict_json(value) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def _role(name: str) -> str:
    if name == "count" or name.endswith("#count") or name.startswith(_STATS):
        return OTHER
    if "(inc)" in name or "inclusive" in name.lower():
        return INCLUSIVE
    return EXCLUSIVE if name == "time" or name.startswith("sum#") else OTHER


def _unit(title: str, meta: dict, caliper2: bool) -> str | None:
    if isinstance(meta.get("attribute.unit"), str) and meta["attribute.unit"]:
        return meta["attribute.unit"]
    if title == "count" or title.endswith("#count"):
        return "count"
    if title.endswith(".ns"):
        return "nsec"
    if "time.duration" in title or title in ("time", "time (inc)"):
        return "sec" if caliper2 else "usec"  # B.21
    return None


def _floats(path: str, title: str, cells, strict: bool):
    """float64 numpy array of a column (NaN for null); None for a non-numeric column unless ``strict``."""
    if isinstance(cells, np.ndarray):
        return cells
    try:
        return pa.array(cells, type=pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        if strict:
            raise ReaderError(path, f"column {shown(title)}: cells must be numbers or null") from None
        return None


def _indices(path: str, title: str, cells, n_nodes: int) -> np.ndarray:
    """Node indices of a reference column as int32, -1 for null (no float temporaries: columns are long)."""
    f = _floats(path, title, cells, strict=True)
    with np.errstate(invalid="ignore"):
        i = f.astype(np.int32)  # NaN and out-of-range cells give garbage here, rejected or replaced below
    nan = np.isnan(f)
    i[nan] = -1
    bad = ~nan & ((f < -1) | (f >= min(n_nodes, 2**31 - 1)) | (i != f))
    if bad.any():
        raise ReaderError(path, f"column {shown(title)}: cell {f[bad][0]:g} is not a node index "
                                f"(the file has {n_nodes} nodes)")
    return i


def _nodes(path: str, nodes: list):
    """(labels, parent index per node or -1, column per node); parents precede their children (3.2).  A node
    beyond a limit (limits.py: more than MAX_NODES, deeper than MAX_CALL_DEPTH, a label of more than
    MAX_FRAME_TEXT bytes) is a ReaderError."""
    if len(nodes) > MAX_NODES:
        raise ReaderError(path, f"{len(nodes)} nodes: more than {MAX_NODES} (limit)")
    labels, parents, columns = [], np.full(len(nodes), -1, np.int64), []
    depth = [0] * len(nodes)
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict):
            raise ReaderError(path, f"node {i} is not an object")
        p = nd.get("parent")
        if p is not None:
            if not isinstance(p, int) or isinstance(p, bool) or not 0 <= p < i:
                raise ReaderError(path, f"node {i}: parent {shown(p)} is not the index of an earlier node")
            parents[i] = p
            depth[i] = depth[p] + 1
            if depth[i] >= MAX_CALL_DEPTH:
                raise ReaderError(path, f"node {i}: a call path deeper than {MAX_CALL_DEPTH} frames (limit)")
        label = nd.get("label")
        label = "" if label is None else str(label)
        if len(label) > MAX_FRAME_TEXT // 4 and len(label.encode("utf-8", "surrogatepass")) > MAX_FRAME_TEXT:
            raise ReaderError(path, f"node {i}: a label of more than {MAX_FRAME_TEXT} bytes (limit)")
        labels.append(label)
        columns.append(nd.get("column"))
    return labels, parents, columns


def _with_ancestors(parents: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indices of the ``wanted`` nodes and of all their ancestors, in node order (parents first)."""
    keep = wanted.copy()
    for i in np.flatnonzero(wanted)[::-1].tolist():
        p = int(parents[i])
        while p >= 0 and not keep[p]:
            keep[p] = True
            p = int(parents[p])
    return np.flatnonzero(keep)


def _split(node: np.ndarray, loc: np.ndarray, module: np.ndarray):
    """Statement children of the nodes whose rows carry more than one source location (formats.md 3.4):
    (owner local id, location code) per child, child per row (or -1), module node per child (or -1)."""
    valid = loc >= 0
    stride = int(loc.max(initial=0)) + 1
    key = node * stride + loc
    ukeys = np.unique(key[valid])
    owners, counts = np.unique(ukeys // stride, return_counts=True)
    ukeys = ukeys[np.isin(ukeys // stride, owners[counts > 1])]
    pos = np.minimum(np.searchsorted(ukeys, key), max(len(ukeys) - 1, 0))
    hit = valid & (ukeys[pos] == key) if len(ukeys) else np.zeros(len(key), bool)
    row_child, modules = np.where(hit, pos, -1), np.full(len(ukeys), -1, np.int64)
    cm = np.unique(np.stack([row_child[hit & (module >= 0)], module[hit & (module >= 0)]], axis=1), axis=0)
    child, n_mod = np.unique(cm[:, 0], return_counts=True)
    modules[child[n_mod == 1]] = cm[np.isin(cm[:, 0], child[n_mod == 1]), 1]
    return np.stack([ukeys // stride, ukeys % stride], axis=1), row_child, modules


def _location(label: str) -> tuple[str, str | None, int | None]:
    """``file:line`` -> (name ``<basename>:<line>``, file, line); ``UNKNOWN:0`` has no file and no line."""
    file, _, line = label.rpartition(":") if ":" in label else (label, "", "")
    known = file not in ("", "UNKNOWN")
    return f"{os.path.basename(file)}:{line}", file if known else None, line_number(line) if known else None


def _frames(labels, parents, node_cols, order, nid, located, module):
    """(frames table, local id per row): the nodes in ``order``, then the statement children of split nodes."""
    local_of = np.full(len(labels), -1, np.int32)
    local_of[order] = np.arange(len(order), dtype=np.int32)
    local = local_of[nid]
    names, unknown = [], 0
    for i in order.tolist():
        names.append(labels[i] or f"UNKNOWN {unknown}")  # B.15: numbered per file, not per process
        unknown += not labels[i]
    types = [node_cols[i] if node_cols[i] in _NESTED else "function" for i in order.tolist()]
    parent_local = np.where(parents[order] >= 0, local_of[parents[order]], -1)
    files, lines, modules = [None] * len(order), [None] * len(order), [None] * len(order)
    if located is not None:
        pairs, row_child, mods = _split(local, located[0], np.full(len(nid), -1) if module is None else module)
        for (_owner, code), mod in zip(pairs.tolist(), mods.tolist()):
            name, file, line = _location(located[1][code])
            names.append(name)
            types.append("statement")
            files.append(file)
            lines.append(line)
            modules.append(labels[mod] if mod >= 0 else None)
        parent_local = np.concatenate([parent_local, pairs[:, 0]])
        local = np.where(row_child >= 0, len(order) + row_child, local)
    frames = pa.table({"local_id": np.arange(len(names), dtype=np.int32), "parent_local": parent_local.astype(np.int32),
                       "name": names, "type": types, "file": files, "line": lines, "end_line": [None] * len(names),
                       "module": modules}, schema=FRAME_SCHEMA)
    return frames, local


_HATCHET_START = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{\s*"graph"\s*:')


class Reader(SingleFileReader):
    kind = "caliper_json"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        """A file holding a JSON object with the keys data, columns, column_metadata and nodes (formats.md 0)."""
        if not os.path.isfile(path):
            return False
        try:
            with open(path, "rb") as fh:
                head, size = fh.read(_HEAD), os.fstat(fh.fileno()).st_size
                if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") or _HATCHET_START.match(head):
                    return False  # (Hatchet's JSON starts with its "graph"; its metadata may name our keys)
                missing = [k for k in KEYS if not _KEY_RES[k].search(head)]
                if missing and size > _HEAD:  # Caliper writes the rows first: the other keys are near the end
                    fh.seek(max(_HEAD, size - _TAIL))
                    tail = fh.read()
                    missing = [k for k in missing if not _KEY_RES[k].search(tail)]
                pos, later = max(_HEAD, size - _TAIL), b""
                while missing and pos > _HEAD:  # backwards in blocks: a mapping of the file would count as memory
                    start = max(_HEAD, pos - _SCAN)
                    fh.seek(start)
                    block = fh.read(pos - start)
                    window = block + later[:_OVERLAP]
                    missing = [k for k in missing if not _KEY_RES[k].search(window)]
                    pos, later = start, block
                return not missing
        except (OSError, ValueError):
            return False

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ReaderError(path, "a Caliper json-split profile is a file")
        doc, cells = load(path)
        _check_unicode(path, doc)
        titles, colmeta = doc["columns"], doc["column_metadata"]
        labels, parents, node_cols = _nodes(path, doc["nodes"])
        col = {t: i for i, t in reversed(list(enumerate(titles)))}
        refs = [t for t, m in zip(titles, colmeta) if not m.get("is_value")]
        hier = next((t for t in (*_HIERARCHY, *_NESTED) if t in refs), None)
        if hier is None:
            raise ReaderError(path, "no call-path column ('source.function#callpath.address' or 'path') in 'columns'")
        nid = _indices(path, hier, cells[col[hier]], len(labels))
        cells[col[hier]] = None  # free the float column: a 10-million-row file holds several
        keep = nid >= 0  # a null call path: a record outside every region, dropped (3.4)
        rows = slice(None) if keep.all() else np.flatnonzero(keep)  # a slice takes views, not copies
        n_rows = len(nid) if isinstance(rows, slice) else len(rows)
        metadata = {k: _typed(v) for k, v in doc.items() if k not in KEYS}
        if n_rows < len(nid):
            metadata["caliper.rows_without_path"] = len(nid) - n_rows

        def ref(prefix):  # node indices of the first reference column named prefix..., for the kept rows
            t = next((t for t in refs if t.startswith(prefix)), None)
            return None if t is None else _indices(path, t, cells[col[t]], len(labels))[rows]

        wanted = np.asarray([c == hier for c in node_cols], bool)
        wanted[nid[rows]] = True
        located = self._locations(path, titles, colmeta, cells, col, rows, labels, ref)
        kept = _with_ancestors(parents, wanted)
        frames, local = _frames(labels, parents, node_cols, kept, nid[rows], located,
                                ref("module#") if located else None)
        # Hatchet's nid: the node's index in 'nodes' (a statement child: its owner's)
        numbers = np.asarray(kept, np.float64)
        owner = frames.column("parent_local").to_numpy()[len(numbers):]
        numbers = np.concatenate([numbers, numbers[owner]]) if len(owner) else numbers
        order_t = next((t for t in NODE_ORDER_COLUMNS if t in col), None)
        if order_t is not None:  # Caliper's Node order: the frames are laid out in it (readers/node_order.py)
            frames, local, numbers = reorder(frames, local, _floats(path, order_t, cells[col[order_t]],
                                                                    strict=False)[rows], numbers)
            metadata[NODE_ORDER_KEY] = True  # its graph is walked in that order (perflake.frame.defaults)
        rank = np.zeros(n_rows, np.int32)
        if "mpi.rank" in col:
            metadata[RANK_COLUMN_KEY] = True  # Hatchet's json reader then indexes (node, rank), one rank or many
            r = _floats(path, "mpi.rank", cells[col["mpi.rank"]], strict=True)[rows]
            with np.errstate(invalid="ignore"):
                rank = r.astype(np.int32)
            nan = np.isnan(r)
            rank[nan] = 0  # a null rank counts as rank 0
            if (~nan & ((r < 0) | (r >= 2**31) | (rank != r))).any():
                raise ReaderError(path, "column 'mpi.rank': ranks must be integers from 0 to 2**31-1")
            cells[col["mpi.rank"]] = r = None  # free the float column
        metrics, values = self._metrics(path, titles, colmeta, cells, rows, metadata, hier)
        table = {"local_id": local.astype(np.int32), "rank": rank, "thread": np.zeros(n_rows, np.int32),
                 **{m.name: v for m, v in zip(metrics, values)}}
        return ProfileRows(format=self.kind, source=path, frames=check_frames(path, frames), values=pa.table(table),
                           metrics=metrics, metadata=metadata, reader_version=self.version,
                           frame_numbers=numbers.astype(np.int64))

    @staticmethod
    def _locations(path, titles, colmeta, cells, col, rows, labels, ref):
        """(location code per row or -1, ``file:line`` text per code), or None without sampled locations."""
        sourceloc = ref("sourceloc#")
        if sourceloc is not None:
            return sourceloc, labels
        files, line_t = ref("source.file#"), next((t for t in titles if t.startswith("source.line#")), None)
        if files is None or line_t is None:
            return None
        by_value = colmeta[col[line_t]].get("is_value")  # the line number itself, or a node labelled with it
        ln = np.nan_to_num(_floats(path, line_t, cells[col[line_t]], strict=True)[rows], nan=-1).astype(np.int64) \
            if by_value else ref("source.line#")
        pairs, code = np.unique(np.stack([files, ln], axis=1), axis=0, return_inverse=True)
        texts = [f"{labels[f] if f >= 0 else ''}:{'' if v < 0 else v if by_value else labels[v]}"
                 for f, v in pairs.tolist()]
        return np.where(files >= 0, code.reshape(-1), -1), texts

    @staticmethod
    def _metrics(path, titles, colmeta, cells, rows, metadata, hier):
        major = re.match(r"\s*(\d+)\.", str(metadata.get("cali.caliper.version", "")))
        caliper2 = bool(major) and int(major.group(1)) >= 2
        chosen, taken = [], set()
        for i, (title, meta) in enumerate(zip(titles, colmeta)):
            if (not meta.get("is_value") or title in ("mpi.rank", hier, *_NOT_METRICS)
                    or title.startswith("source.line#")):
                continue
            name = _RENAME.get(title, title)
            name = title if name in taken else name
            v = None if name in taken else _floats(path, title, cells[i], strict=False)
            if v is not None:  # None: a string attribute stored as a value, not a metric
                chosen.append((title, name, meta, v[rows]))
                taken.add(name)
        metrics = []
        for title, name, meta, _ in chosen:
            role, base = _role(name), title.removeprefix("inclusive#")
            pair = {"time": "time (inc)", "time (inc)": "time"}.get(name)
            if pair is None and role == INCLUSIVE and base != title and base in taken:
                pair = base
            elif pair is None and role == EXCLUSIVE and f"inclusive#{title}" in taken:
                pair = f"inclusive#{title}"
            metrics.append(Metric(name, role, _unit(title, meta, caliper2), pair))
        return metrics, [finite(c[3]) for c in chosen]
