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

import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX, check_frames, finite
from perflake.readers.tau_files import HEADER_RE, parse_folder
from perflake.readers.tau_frames import parse_frame
from perflake.vocabulary import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows

_PROFILE_RE = re.compile(r"^profile\.(\d+)\.(\d+)\.(\d+)$")
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
                        return bool(HEADER_RE.match(fh.readline(4096)))
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
            metric, meta, table, counts = parse_folder(paths)
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
        values = {"local_id": pa.array(first_ids), "rank": pa.array(columns["rank"]),
                  "thread": pa.array(columns["thread"])}
        for m in metrics:
            values[m.name] = pa.array(finite(columns[m.name].astype(np.float64, copy=False)))
        if any(c for _, c, _ in keys):
            metadata["tau.locations"] = [
                {"node": n, "context": c, "thread": t, "rank": locations[(n, c, t)][0],
                 "perflake_thread": locations[(n, c, t)][1]}
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
    ids = np.fromiter((builder.for_name(uniq[p // 2], root, bool(p % 2)) for p in upairs.tolist()), np.int32,
                      len(upairs))
    return keep, ids[inverse]
