"""TAU profile directories (``profile.N.C.T`` files, optionally one ``MULTI__<metric>`` folder per metric).

Format reference: ``shared/docs/formats.md`` section 5.  What this reader does:

* rank = N, thread = T of ``profile.N.C.T``; the context C is kept in the run metadata
  (``tau.locations``) and, when a rank has several contexts, folded into the thread number
  (``thread = index of (C, T) within the rank``), so no measurement is dropped;
* callpath entries (``a => b => c``) form the tree; flat entries are per-function aggregates and are not
  nodes, *except* in a profile without any callpath entry, where each flat function becomes a child of the
  root (Hatchet returns a lone root there: formats.md B.23);
* a callpath truncated by ``TAU_CALLPATH_DEPTH`` (its first frame is not the root) hangs under the root;
* every ``MULTI__X`` folder adds the metric ``X`` (exclusive) and ``X (inc)``; ``TIME``/``CPU_TIME`` are
  named ``time``; ``Calls`` and ``Subrs`` come from the first metric folder;
* values are floats everywhere (the root too: B.22); an infinite value (``inf``, or a number beyond the
  float range) is no measurement and becomes NaN, as in the Caliper readers;
* the metadata XML of line 2 (of rank 0's first file) becomes run metadata, values typed.
"""

from __future__ import annotations

import io
import math
import os
import re
from html import unescape

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from perflake.errors import ReaderError
from perflake.readers.base import (EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, INT32_MAX, OTHER, Metric, ProfileRows,
                                   check_frames, shown)
from perflake.readers.tau_frames import parse_frame

_PROFILE_RE = re.compile(r"^profile\.(\d+)\.(\d+)\.(\d+)$")
_HEADER_RE = re.compile(rb"^\s*(\d+)\s+templated_functions(?:_MULTI_(\S+))?")
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_TIME_METRICS = {"TIME": "time", "CPU_TIME": "time"}
_SEP = " => "


def _profile_files(folder: str) -> dict[tuple[int, int, int], str]:
    found = {}
    for entry in os.listdir(folder):
        m = _PROFILE_RE.match(entry)
        if m and os.path.isfile(os.path.join(folder, entry)):
            found[tuple(int(g) for g in m.groups())] = os.path.join(folder, entry)
    return found


def _metric_folders(path: str) -> list[tuple[str | None, str]]:
    """(metric name from the folder or None, folder) in a stable order: TIME first, then by name."""
    multi = sorted(
        (e[len("MULTI__"):], os.path.join(path, e))
        for e in os.listdir(path)
        if e.startswith("MULTI__") and os.path.isdir(os.path.join(path, e))
    )
    multi.sort(key=lambda mf: (mf[0] not in _TIME_METRICS, mf[0]))
    if multi:
        return multi
    return [(None, path)]


def _typed(value: str):
    v = value.strip()
    if _INT_RE.match(v):
        try:
            return int(v)
        except ValueError:  # pragma: no cover - regex guarantees digits
            return v
    if _FLOAT_RE.match(v) and math.isfinite(f := float(v)):  # 1e999 stays text: JSON has no infinity
        return f
    return value


def _metadata(text: str) -> dict:
    """The ``<attribute><name>..</name><value>..</value></attribute>`` pairs of the metadata line, typed.

    Found with ``str.find``, piece by piece (the text between two ``<attribute>``), as the lazy regex
    ``<name>(.*?)</name><value>(.*?)</value></attribute>`` would match them, in linear time: that regex rescans
    the rest of the line from every unclosed tag, quadratic time on a damaged line."""
    out = {}
    for piece in text.split("<attribute>")[1:]:
        if not piece.startswith("<name>"):
            continue
        name_end = piece.find("</name><value>", 6)
        value_end = piece.find("</value></attribute>", name_end + 14) if name_end >= 0 else -1
        if value_end >= 0:
            out[unescape(piece[6:name_end])] = _typed(unescape(piece[name_end + 14 : value_end]))
    return out


class _Entries:
    """Function entry lines of one profile file, as parallel lists."""

    __slots__ = ("names", "calls", "subrs", "excl", "incl", "metadata", "metric")

    def __init__(self):
        self.names: list[str] = []
        self.calls: list[str] = []
        self.subrs: list[str] = []
        self.excl: list[str] = []
        self.incl: list[str] = []


def _parse_file(path: str, want_metadata: bool) -> _Entries:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
    first_nl = data.find(b"\n")
    m = _HEADER_RE.match(data[: first_nl if first_nl >= 0 else len(data)])
    if not m:
        raise ReaderError(path, "not a TAU profile: line 1 should be '<count> templated_functions...'")
    count = int(m.group(1))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    lines = text.split("\n")
    out = _Entries()
    out.metric = m.group(2).decode("latin-1") if m.group(2) else None
    out.metadata = {}
    if len(lines) < 2 or not lines[1].startswith("#"):
        raise ReaderError(path, "line 2 should be the '# Name Calls Subrs Excl Incl ProfileCalls' legend")
    if want_metadata:
        out.metadata = _metadata(lines[1])
        metric_name = out.metadata.get("Metric Name")
        if isinstance(metric_name, str):
            out.metric = metric_name
    body = lines[2 : 2 + count]
    if len(body) < count or (count and not body[-1].startswith('"')):
        n_ok = sum(1 for ln in body if ln.startswith('"'))
        raise ReaderError(path, f"truncated: line 1 announces {count} function entries, found {n_ok}")
    names, calls, subrs, excl, incl = out.names, out.calls, out.subrs, out.excl, out.incl
    for i, ln in enumerate(body):
        head = ln.rpartition(' GROUP="')[0] or ln
        parts = head.rstrip().rsplit(" ", 5)
        if len(parts) != 6 or len(parts[0]) < 2 or parts[0][0] != '"' or parts[0][-1] != '"':
            raise ReaderError(path, f"line {i + 3}: not a function entry: {ln[:80]!r}")
        names.append(parts[0][1:-1])
        calls.append(parts[1])
        subrs.append(parts[2])
        excl.append(parts[3])
        incl.append(parts[4])
    return out


def _floats(path: str, strings: list[str], what: str) -> np.ndarray:
    try:
        return np.array(strings, dtype=np.float64)
    except ValueError:
        bad = next(s for s in strings if not _FLOAT_RE.match(s.strip()) and s.strip().lower() not in ("nan", "inf", "-inf"))
        raise ReaderError(path, f"{what} value {shown(bad)} is not a number") from None


def _finite(values: np.ndarray) -> np.ndarray:
    """An infinity (``inf`` written by a broken timer, or an overflowing number) is no measurement: NaN."""
    inf = np.isinf(values)
    return np.where(inf, np.nan, values) if inf.any() else values


class _TreeBuilder:
    """Assigns local ids to call paths (tuples of frame strings), creating missing ancestors.

    Nodes are keyed by (parent id, frame): time and memory stay linear in the path length, however deep a
    callpath entry is (keys of whole paths, or a recursion per frame, would not)."""

    def __init__(self):
        self.ids: dict[tuple[int, str], int] = {}
        self.parent: list[int] = []
        self.leaf: list[str] = []
        self._raw: dict[tuple[str, bool], int] = {}

    def node(self, path: tuple[str, ...]) -> int:
        nid = -1
        for frame in path:
            parent, nid = nid, self.ids.get((nid, frame))
            if nid is None:
                nid = self.ids[parent, frame] = len(self.parent)
                self.parent.append(parent)
                self.leaf.append(frame)
        return nid

    def for_name(self, raw: str, root: str, callpath_mode: bool) -> int:
        nid = self._raw.get((raw, callpath_mode))
        if nid is None:
            if not callpath_mode:
                path = (root,) if raw.strip() == root else (root, raw.strip())
            else:
                path = tuple(f.strip() for f in raw.split(_SEP))
                if path[0] != root:
                    path = (root,) + path
            nid = self._raw[(raw, callpath_mode)] = self.node(path)
        return nid

    def frames(self) -> pa.Table:
        parsed = [parse_frame(text) for text in self.leaf]
        n = len(parsed)
        return pa.table(
            {
                "local_id": pa.array(np.arange(n, dtype=np.int32)),
                "parent_local": pa.array(np.asarray(self.parent, dtype=np.int32)),
                "name": [p[0] for p in parsed],
                "type": ["function"] * n,
                "file": [p[1] for p in parsed],
                "line": [p[2] for p in parsed],
                "end_line": [p[3] for p in parsed],
                "module": [p[4] for p in parsed],
            },
            schema=FRAME_SCHEMA,
        )


def _locations(files: dict[tuple[int, int, int], str]) -> dict[tuple[int, int, int], tuple[int, int]]:
    """(N, C, T) -> (rank, thread): thread = T when every context is 0, else the index of (C, T) in the rank."""
    if all(c == 0 for _, c, _ in files):
        return {(n, c, t): (n, t) for n, c, t in files}
    out = {}
    for n in sorted({k[0] for k in files}):
        for i, (c, t) in enumerate(sorted((c, t) for nn, c, t in files if nn == n)):
            out[(n, c, t)] = (n, i)
    return out


class Reader:
    kind = "tau"
    version = "1"

    @staticmethod
    def sniff(path: str) -> bool:
        if not os.path.isdir(path):
            return False
        try:
            folders = _metric_folders(path)
            for _, folder in folders:
                files = _profile_files(folder)
                if files:
                    with open(next(iter(files.values())), "rb") as fh:
                        return bool(_HEADER_RE.match(fh.readline(4096)))
        except OSError:
            return False
        return False

    @staticmethod
    def files(path: str) -> list[str]:
        """The input files this reader consumes for the run at ``path`` (what the run id hashes)."""
        return sorted(f for _, folder in _metric_folders(path) for f in _profile_files(folder).values())

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise ReaderError(path, "a TAU profile is a directory of profile.N.C.T files")
        try:
            file_sets = [(metric, folder, _profile_files(folder)) for metric, folder in _metric_folders(path)]
        except OSError as exc:  # an unreadable directory
            raise ReaderError(exc.filename or path, f"cannot list: {exc.strerror or exc}") from None
        files = file_sets[0][2]
        if not files:
            raise ReaderError(path, "no profile.N.C.T files found")
        for _metric, folder, other in file_sets[1:]:
            if other.keys() != files.keys():
                missing = sorted(set(files) ^ set(other))[0]
                raise ReaderError(folder, "profile.%d.%d.%d is in one MULTI__ folder but not in another" % missing)
        keys = sorted(files)
        big = next((k for k in keys if k[0] > INT32_MAX or k[2] > INT32_MAX), None)
        if big is not None:
            what = f"rank {big[0]}" if big[0] > INT32_MAX else f"thread {big[2]}"
            raise ReaderError(files[big], f"{what} (from the file name) is beyond {INT32_MAX}")
        locations = _locations(files)
        builder = _TreeBuilder()
        metrics: list[Metric] = []
        columns: dict[str, np.ndarray] = {}
        metadata: dict = {}
        first_ids = None
        for fi, (metric_dir, _folder, fset) in enumerate(file_sets):
            paths = [fset[k] for k in keys]
            metric, meta, table, counts = _parse_folder(paths)
            metric = metric or metric_dir or "TIME"
            exc_name = _TIME_METRICS.get(metric, metric)
            inc_name = f"{exc_name} (inc)"
            unit = "usec" if metric in _TIME_METRICS else None
            metrics += [Metric(exc_name, EXCLUSIVE, unit, inc_name), Metric(inc_name, INCLUSIVE, unit, exc_name)]
            keep, ids = _node_ids(builder, paths, table.column("name"), counts)
            if fi == 0:
                metadata, first_ids, first_counts = meta, ids, counts
                rows_per_file = np.add.reduceat(keep, np.r_[0, np.cumsum(counts)[:-1]]) if len(counts) else counts
                loc = np.asarray([locations[k] for k in keys], dtype=np.int32).reshape(-1, 2)
                columns["rank"] = np.repeat(loc[:, 0], rows_per_file)
                columns["thread"] = np.repeat(loc[:, 1], rows_per_file)
                columns["Calls"] = table.column("calls").to_numpy()[keep]
                columns["Subrs"] = table.column("subrs").to_numpy()[keep]
            elif not (np.array_equal(counts, first_counts) and np.array_equal(ids, first_ids)):
                raise ReaderError(_folder, "function entries differ from the first metric folder's")
            columns[exc_name] = table.column("excl").to_numpy()[keep]
            columns[inc_name] = table.column("incl").to_numpy()[keep]
        metrics += [Metric("Calls", OTHER, "count"), Metric("Subrs", OTHER, "count")]
        values = {"local_id": pa.array(first_ids), "rank": pa.array(columns["rank"]), "thread": pa.array(columns["thread"])}
        for m in metrics:
            values[m.name] = pa.array(_finite(columns[m.name].astype(np.float64, copy=False)))
        if any(c for _, c, _ in keys):
            metadata["tau.locations"] = [
                {"node": n, "context": c, "thread": t, "rank": locations[(n, c, t)][0], "perflake_thread": locations[(n, c, t)][1]}
                for n, c, t in keys
            ]
        return ProfileRows(
            format=self.kind,
            source=path,
            frames=check_frames(path, builder.frames()),
            values=pa.table(values),
            metrics=metrics,
            metadata=metadata,
            reader_version=self.version,
        )


_CSV_NAMES = ["name", "calls", "subrs", "excl", "incl", "profilecalls", "group", "trailing"]
_CSV_TYPES = {"name": pa.string(), "calls": pa.float64(), "subrs": pa.float64(), "excl": pa.float64(), "incl": pa.float64()}


def _body(path: str, data: bytes, want_metadata: bool):
    """(metric, metadata, count, entry lines as a memoryview) of one file, or None when it needs the careful parser."""
    end1 = data.find(b"\n")
    end2 = data.find(b"\n", end1 + 1)
    m = _HEADER_RE.match(data[: max(end1, 0)])
    if not m or end2 < 0 or data[end1 + 1 : end1 + 2] != b"#":
        return None
    count = int(m.group(1))
    stop = data.find(b"\n0 aggregates", end2)  # the trailing section TAU always writes
    if stop < 0 or count == 0:
        return None
    body = memoryview(data)[end2 + 1 : stop]
    if data.count(b"\n", end2 + 1, stop) + 1 != count:
        return None
    metric = m.group(2).decode("latin-1") if m.group(2) else None
    meta = {}
    if want_metadata:
        text = data[end1 + 1 : end2].decode("utf-8", errors="replace")
        meta = _metadata(text)
        if isinstance(meta.get("Metric Name"), str):
            metric = meta["Metric Name"]
    return metric, meta, count, body


class _Chain(io.RawIOBase):
    """The entry lines of many files as one stream, newline-separated, without concatenating them."""

    def __init__(self, parts):
        self.parts, self.i, self.pos = list(parts), 0, 0

    def readable(self):
        return True

    def readinto(self, buf):
        while self.i < len(self.parts):
            part = self.parts[self.i]
            if self.pos < len(part):
                n = min(len(buf), len(part) - self.pos)
                buf[:n] = part[self.pos : self.pos + n]
                self.pos += n
                return n
            self.i, self.pos = self.i + 1, 0
            if self.i < len(self.parts):
                buf[:1] = b"\n"
                return 1
        return 0


def _parse_folder(paths: list[str]):
    """Parse every file of one metric folder: (metric, metadata of the first file, table, entries per file).

    Fast path: all entry lines go through pyarrow's CSV parser at once (quoted names, space-separated).
    Anything unusual falls back to the line-by-line parser, which names the file and line that is wrong.
    """
    bodies, counts, metric, meta = [], [], None, {}
    for i, path in enumerate(paths):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ReaderError(path, f"cannot read: {exc.strerror or exc}") from None
        parsed = _body(path, data, want_metadata=(i == 0))
        if parsed is None:
            return _parse_folder_slowly(paths)
        if i == 0:
            metric, meta = parsed[0], parsed[1]
        counts.append(parsed[2])
        bodies.append(parsed[3])
    try:
        table = pacsv.read_csv(
            io.BufferedReader(_Chain(bodies), buffer_size=1 << 22),
            read_options=pacsv.ReadOptions(column_names=_CSV_NAMES),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char='"', double_quote=False, escape_char=False),
            convert_options=pacsv.ConvertOptions(column_types=_CSV_TYPES, include_columns=list(_CSV_TYPES)),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _parse_folder_slowly(paths)
    counts = np.asarray(counts, dtype=np.int64)
    if table.num_rows != counts.sum() or (counts == 0).any():
        return _parse_folder_slowly(paths)
    return metric, meta, table, counts


def _parse_folder_slowly(paths: list[str]):
    names, nums, counts, metric, meta = [], {k: [] for k in ("calls", "subrs", "excl", "incl")}, [], None, {}
    for i, path in enumerate(paths):
        entries = _parse_file(path, want_metadata=(i == 0))
        if not entries.names:
            raise ReaderError(path, "no function entries")
        if i == 0:
            metric, meta = entries.metric, entries.metadata
        names += entries.names
        counts.append(len(entries.names))
        for key, what in (("calls", "Calls"), ("subrs", "Subrs"), ("excl", "Excl"), ("incl", "Incl")):
            nums[key].append(_floats(path, getattr(entries, key), what))
    table = pa.table({"name": names, **{k: np.concatenate(v) for k, v in nums.items()}})
    return metric, meta, table, np.asarray(counts, dtype=np.int64)


def _node_ids(builder: _TreeBuilder, paths: list[str], names: pa.ChunkedArray, counts: np.ndarray):
    """(mask of rows that are tree entries, local node id of each kept row) for the rows of all files."""
    encoded = names.combine_chunks().dictionary_encode()
    uniq = encoded.dictionary.to_pylist()
    idx = encoded.indices.to_numpy()
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    is_cp = np.fromiter(("=>" in u for u in uniq), bool, len(uniq))[idx]
    file_of_row = np.repeat(np.arange(len(counts)), counts)
    cp_mode = np.add.reduceat(is_cp.astype(np.int64), starts) > 0
    root_names = {uniq[idx[s]].strip() for s in starts}
    if len(root_names) != 1:
        raise ReaderError(paths[int(np.argmax([uniq[idx[s]].strip() != uniq[idx[0]].strip() for s in starts]))],
                          "its first entry differs from the other profiles' first entry (the root)")
    root = root_names.pop()
    first = np.zeros(len(idx), bool)
    first[starts] = True
    keep = first | ~cp_mode[file_of_row] | is_cp
    mode = cp_mode[file_of_row][keep]
    kept = idx[keep]
    pair = kept.astype(np.int64) * 2 + mode
    upairs, inverse = np.unique(pair, return_inverse=True)
    ids = np.fromiter((builder.for_name(uniq[p // 2], root, bool(p % 2)) for p in upairs.tolist()), np.int32, len(upairs))
    return keep, ids[inverse]
