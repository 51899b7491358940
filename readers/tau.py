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
* values are floats everywhere (the root too: B.22);
* the metadata XML of line 2 (of rank 0's first file) becomes run metadata, values typed.
"""

from __future__ import annotations

import os
import re
from html import unescape

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

_PROFILE_RE = re.compile(r"^profile\.(\d+)\.(\d+)\.(\d+)$")
_HEADER_RE = re.compile(rb"^\s*(\d+)\s+templated_functions(?:_MULTI_(\S+))?")
_ATTR_RE = re.compile(r"<attribute><name>(.*?)</name><value>(.*?)</value></attribute>", re.S)
_LOC_RE = re.compile(r"\s\[\{([^}]*)\}\s*\{(\d+)(?:,(\d+))?\}(?:-\{(\d+)(?:,(\d+))?\})?\]\s*$")
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
    if _FLOAT_RE.match(v):
        return float(v)
    return value


def parse_frame(text: str) -> tuple[str, str | None, int | None, int | None, str | None]:
    """Split one TAU timer name into (name, file, line, end_line, module) per formats.md 5.3/5.5.

    ``int main(int, char **) C [{cpi.c} {19,1}-{60,1}]`` -> ("int main(int, char **)", "cpi.c", 19, 60, None).
    ``{line,col}`` gives the line only (Hatchet stores the column as end_line: formats.md B.24).
    """
    name = text.strip()
    file = module = None
    line = end_line = None
    m = _LOC_RE.search(name)
    if m:
        file = m.group(1) or None
        line = int(m.group(2))
        if m.group(4) is not None:
            end_line = int(m.group(4))
        name = name[: m.start()].rstrip()
        if name.endswith(" C"):
            name = name[:-2].rstrip()
    if name.startswith("[UNWIND] ") and " [@] " in name:
        where, _, func = name[len("[UNWIND] "):].partition(" [@] ")
        name = "[UNWIND] " + func.strip()
        module = where.strip() or None
    else:
        tokens = name.split()
        if len(tokens) == 3 and "/" in tokens[2] and not name.startswith("["):
            name, module = " ".join(tokens[:2]), tokens[2]
    return name, file, line, end_line, module


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
        out.metadata = {unescape(k): _typed(unescape(v)) for k, v in _ATTR_RE.findall(lines[1])}
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
        raise ReaderError(path, f"{what} value {bad!r} is not a number") from None


class _TreeBuilder:
    """Assigns local ids to call paths (tuples of frame strings), creating missing ancestors."""

    def __init__(self):
        self.ids: dict[tuple[str, ...], int] = {}
        self.parent: list[int] = []
        self.leaf: list[str] = []
        self._raw: dict[str, int] = {}

    def node(self, path: tuple[str, ...]) -> int:
        nid = self.ids.get(path)
        if nid is None:
            parent = self.node(path[:-1]) if len(path) > 1 else -1
            nid = len(self.parent)
            self.ids[path] = nid
            self.parent.append(parent)
            self.leaf.append(path[-1])
        return nid

    def for_name(self, raw: str, root: str, callpath_mode: bool) -> int:
        nid = self._raw.get(raw)
        if nid is None:
            if not callpath_mode:
                path = (root,) if raw.strip() == root else (root, raw.strip())
            else:
                path = tuple(f.strip() for f in raw.split(_SEP))
                if path[0] != root:
                    path = (root,) + path
            nid = self._raw[raw] = self.node(path)
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
        folders = _metric_folders(path)
        file_sets = [(metric, folder, _profile_files(folder)) for metric, folder in folders]
        first_metric, first_folder, files = file_sets[0]
        if not files:
            raise ReaderError(path, "no profile.N.C.T files found")
        for metric, folder, other in file_sets[1:]:
            if other.keys() != files.keys():
                missing = sorted(set(files) ^ set(other))[0]
                raise ReaderError(folder, "profile.%d.%d.%d is in one MULTI__ folder but not in another" % missing)
        locations = _locations(files)
        keys = sorted(files)
        builder = _TreeBuilder()
        columns: dict[str, list[np.ndarray]] = {}
        metrics: list[Metric] = []
        metadata: dict = {}
        local_ids: list[np.ndarray] = []
        ranks: list[np.ndarray] = []
        threads: list[np.ndarray] = []
        root: str | None = None
        for fi, (metric_dir, folder, fset) in enumerate(file_sets):
            exc_name = inc_name = None
            for key in keys:
                fpath = fset[key]
                entries = _parse_file(fpath, want_metadata=(fi == 0 and key == keys[0]))
                if not entries.names:
                    raise ReaderError(fpath, "no function entries")
                if exc_name is None:
                    metric = entries.metric or metric_dir or "TIME"
                    exc_name = _TIME_METRICS.get(metric, metric)
                    inc_name = f"{exc_name} (inc)"
                    if fi == 0:
                        metadata = entries.metadata
                    unit = "usec" if metric in _TIME_METRICS else None
                    metrics += [Metric(exc_name, EXCLUSIVE, unit, inc_name), Metric(inc_name, INCLUSIVE, unit, exc_name)]
                this_root = entries.names[0].strip()
                if root is None:
                    root = this_root
                elif this_root != root:
                    raise ReaderError(fpath, f"first entry is {this_root!r}, other profiles start with {root!r}")
                callpath_mode = any("=>" in n for n in entries.names)
                names = entries.names
                keep = [i for i, n in enumerate(names) if i == 0 or not callpath_mode or "=>" in n]
                sel = np.asarray(keep, dtype=np.int64)
                ids_arr = np.fromiter((builder.for_name(names[i], root, callpath_mode) for i in keep), np.int32, len(keep))
                if fi == 0:
                    rank, thread = locations[key]
                    local_ids.append(ids_arr)
                    ranks.append(np.full(len(sel), rank, dtype=np.int32))
                    threads.append(np.full(len(sel), thread, dtype=np.int32))
                    columns.setdefault("Calls", []).append(_floats(fpath, entries.calls, "Calls")[sel])
                    columns.setdefault("Subrs", []).append(_floats(fpath, entries.subrs, "Subrs")[sel])
                elif not np.array_equal(ids_arr, local_ids[keys.index(key)]):
                    raise ReaderError(fpath, "function entries differ from the first metric folder's")
                columns.setdefault(exc_name, []).append(_floats(fpath, entries.excl, "Excl")[sel])
                columns.setdefault(inc_name, []).append(_floats(fpath, entries.incl, "Incl")[sel])
        metrics += [Metric("Calls", OTHER, "count"), Metric("Subrs", OTHER, "count")]
        values = {
            "local_id": pa.array(np.concatenate(local_ids)),
            "rank": pa.array(np.concatenate(ranks)),
            "thread": pa.array(np.concatenate(threads)),
        }
        for m in metrics:
            values[m.name] = pa.array(np.concatenate(columns[m.name]))
        metadata = dict(metadata)
        metadata["tau.locations"] = [
            {"node": n, "context": c, "thread": t, "rank": locations[(n, c, t)][0], "perflake_thread": locations[(n, c, t)][1]}
            for n, c, t in keys
        ] if any(c for _, c, _ in keys) else None
        if metadata["tau.locations"] is None:
            del metadata["tau.locations"]
        return ProfileRows(
            format=self.kind,
            source=path,
            frames=builder.frames(),
            values=pa.table(values),
            metrics=metrics,
            metadata=metadata,
            reader_version=self.version,
        )
