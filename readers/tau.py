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

import hashlib
import os
import re
from array import array

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from perflake.errors import ReaderError
from perflake.readers.base import INT32_MAX, check_frames, finite
from perflake.readers.tau_files import HEADER_RE, NeedSlow, fast_batches, is_utf8, metadata, open_profile, slow_batches
from perflake.readers.tau_frames import TIMER_TEXT, CallTree, parse_frame  # noqa: F401  (parse_frame re-exported)
from perflake.vocabulary import EXCLUSIVE, INCLUSIVE, OTHER, Metric, ProfileRows

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


class _Entries:
    """The function entries of one metric folder, fed a batch at a time, kept as node ids and values only.

    A callpath entry's node is found as soon as its batch arrives (a name seen before, in any file, through
    ``cache``: the name itself, or its 16-byte digest when long, so memory follows the distinct names, not their
    text).  Whether a flat entry is a node depends on its whole file (it is one only in a file without callpath
    entries): flat names wait in ``flat_*`` until the file ends."""

    def __init__(self, tree: CallTree, cache: dict, flat: dict):
        self.tree, self.cache, self.flat = tree, cache, flat
        self.root = self.root_id = self.previous = None
        self.row = 0  # entries of the folder so far (the "first appearance" order of CallTree)
        self.ids: list[np.ndarray] = []  # node id of every kept entry, per file
        self.values: list[list[np.ndarray]] = []  # calls, subrs, excl, incl of the kept entries, per file
        self.counts: list[int] = []  # entries per file
        self.kept: list[int] = []  # kept entries per file

    def begin(self, path: str) -> None:
        self.path, self.codes, self.nums = path, [], []
        self.tree.path = path  # the file its refusals name
        self.mark = (self.tree.mark(), len(self.flat["names"]), self.row, [])

    def rollback(self) -> None:
        tree_mark, n_flat, self.row, added = self.mark
        self.tree.rollback(tree_mark)
        for key in added:
            del self.cache[key]
        for name in self.flat["names"][n_flat:]:
            del self.flat["index"][name]
        for key in ("names", "row", "node"):
            del self.flat[key][n_flat:]
        if tree_mark == 0:
            self.root = self.root_id = None
        self.previous = None
        self.begin(self.path)

    def add(self, names: pa.Array, nums: list[np.ndarray]) -> None:
        if not len(names):
            return
        if not self.codes:  # a file's first entry: the root
            first = names[0].as_py().strip()
            if self.root is None:
                self.root, self.root_id = first, self.tree.node((first,), 0, 0)
            elif first != self.root:
                raise ReaderError(self.path, "its first entry differs from the other profiles' first entry (the root)")
        encoded = names.dictionary_encode()
        idx = encoded.indices.to_numpy()
        uniq = encoded.dictionary
        codes = np.full(len(uniq), -1, np.int64)
        if self.previous is not None:  # the names of the previous batch (ranks write the same names): in C
            at = pc.index_in(uniq, value_set=self.previous[0])
            found = at.is_valid().to_numpy(zero_copy_only=False)
            codes[found] = self.previous[1][at.drop_null().to_numpy()]
        missing = np.flatnonzero(codes == -1)
        if len(missing):
            self._codes(uniq, idx, codes, missing)
        self.previous = (uniq, codes)
        self.codes.append(codes[idx])
        self.nums.append(nums)
        self.row += len(idx)

    def _codes(self, uniq: pa.Array, idx: np.ndarray, codes: np.ndarray, missing: np.ndarray) -> None:
        """Node ids (callpath names) and flat-name codes (-2 - index) of the names ``uniq[missing]``."""
        order = np.argsort(idx, kind="stable")  # the first row of each name: where its run of indices starts
        first_row = np.empty(len(uniq), np.int64)
        starts = np.flatnonzero(np.r_[True, idx[order][1:] != idx[order][:-1]])
        first_row[idx[order][starts]] = order[starts] + self.row
        names = uniq.take(pa.array(missing))
        is_cp = pc.match_substring(names, "=>").to_numpy(zero_copy_only=False)
        names = names.to_pylist()
        cache, node, root, added = self.cache, self.tree.node, self.root, self.mark[3]
        for k in np.flatnonzero(is_cp).tolist():
            name = names[k]
            key = name if len(name) <= 512 else hashlib.blake2b(name.encode("utf-8", "surrogatepass"),
                                                                digest_size=16).digest()
            nid = cache.get(key)
            if nid is None:
                path = [f.strip() for f in name.split(_SEP)]
                if path[0] != root:
                    path.insert(0, root)
                nid = cache[key] = node(path, int(first_row[missing[k]]), 1)
                added.append(key)
            codes[missing[k]] = nid
        flat_index, flat_names, flat_row, flat_node = (self.flat[k] for k in ("index", "names", "row", "node"))
        for k in np.flatnonzero(~is_cp).tolist():
            name = names[k]
            f = flat_index.get(name)
            if f is None:
                if len(name) > TIMER_TEXT // 4 and len(name.encode("utf-8", "surrogatepass")) > TIMER_TEXT:
                    self.tree.refuse(f"a timer name of more than {TIMER_TEXT} bytes "
                                     "(readers/limits.py: MAX_FRAME_TEXT)")
                f = flat_index[name] = len(flat_names)
                flat_names.append(name)
                flat_row.append(int(first_row[missing[k]]))
                flat_node.append(-1)
            codes[missing[k]] = -2 - f

    def end(self) -> None:
        """The file's entries are all in: keep its tree entries (callpath entries and the root; every entry of a
        file without callpath entries)."""
        codes = np.concatenate(self.codes) if self.codes else np.zeros(0, np.int64)
        is_cp = codes >= 0
        keep = is_cp.copy() if is_cp.any() else np.ones(len(codes), bool)
        keep[:1] = True
        ids = codes[keep]
        if len(ids) and ids[0] < 0:
            ids[0] = self.root_id
        flat = ids < 0
        if flat.any():
            names, rows, nodes = self.flat["names"], self.flat["row"], self.flat["node"]
            fs = -2 - ids[flat]
            todo = _distinct(fs[np.frombuffer(nodes, np.int64)[fs] < 0]).tolist()
            stripped = [names[f].strip() for f in todo]
            under = [k for k, name in enumerate(stripped) if name != self.root]
            made = self.tree.children(self.root_id, [stripped[k] for k in under], [rows[todo[k]] for k in under], 0)
            for f in todo:
                nodes[f] = self.root_id
            for k, nid in zip(under, made):
                nodes[todo[k]] = nid
            ids[flat] = np.frombuffer(nodes, np.int64)[fs]
        self.ids.append(ids)
        self.values.append([np.concatenate([n[k] for n in self.nums])[keep] for k in range(4)])
        self.counts.append(len(codes))
        self.kept.append(len(ids))


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (np.unique's hash table is slower on a million ints)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _read_folder(path: str, paths: list[str], entries: _Entries) -> tuple[str | None, dict]:
    """Feed every file of a metric folder to ``entries``; (metric, metadata of the first file)."""
    slow_any, first, utf8_first = False, None, None
    for i, file in enumerate(paths):
        profile = open_profile(file, want_metadata=(i == 0))
        try:
            if not profile.count:
                raise ReaderError(file, "no function entries")
            if i == 0:
                first = profile
            entries.begin(file)
            try:
                for names, nums in fast_batches(profile):
                    entries.add(names, nums)
            except NeedSlow:
                entries.rollback()
                slow_any = True
                utf8 = is_utf8(file)
                utf8_first = utf8 if i == 0 else utf8_first
                for names, nums in slow_batches(profile, utf8):
                    entries.add(names, nums)
            entries.end()
        finally:
            profile.fh.close()
    if slow_any and utf8_first is None:
        utf8_first = is_utf8(paths[0])
    meta = metadata(first.legend, "replace" if not slow_any else "utf-8" if utf8_first else "latin-1")
    metric = meta["Metric Name"] if isinstance(meta.get("Metric Name"), str) else first.metric
    return metric, meta


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
        tree = CallTree(path)
        cache: dict = {}
        flat: dict = {"index": {}, "names": [], "row": array("q"), "node": array("q")}
        metrics: list[Metric] = []
        columns: dict[str, np.ndarray] = {}
        metadata: dict = {}
        first = None
        for fi, (metric_dir, _folder, fset) in enumerate(file_sets):
            paths = [fset[k] for k in keys]
            entries = _Entries(tree, cache, flat)
            metric, meta = _read_folder(path, paths, entries)
            metric = metric or metric_dir or "TIME"
            exc_name = _TIME_METRICS.get(metric, metric)
            inc_name = f"{exc_name} (inc)"
            unit = "usec" if metric in _TIME_METRICS else None
            metrics += [Metric(exc_name, EXCLUSIVE, unit, inc_name), Metric(inc_name, INCLUSIVE, unit, exc_name)]
            ids = np.concatenate(entries.ids)
            if fi == 0:
                metadata, first = meta, (entries.counts, ids)
                loc = np.asarray([locations[k] for k in keys], dtype=np.int32).reshape(-1, 2)
                columns["rank"] = np.repeat(loc[:, 0], entries.kept)
                columns["thread"] = np.repeat(loc[:, 1], entries.kept)
                columns["Calls"] = np.concatenate([v[0] for v in entries.values])
                columns["Subrs"] = np.concatenate([v[1] for v in entries.values])
            elif not (entries.counts == first[0] and np.array_equal(ids, first[1])):
                raise ReaderError(_folder, "function entries differ from the first metric folder's")
            columns[exc_name] = np.concatenate([v[2] for v in entries.values])
            columns[inc_name] = np.concatenate([v[3] for v in entries.values])
            del entries
        del cache, flat  # the names' lookups: not needed for the frames (a million-node tree: 200 MB)
        tree.ids.clear()
        new = tree.order()
        metrics += [Metric("Calls", OTHER, "count"), Metric("Subrs", OTHER, "count")]
        values = {"local_id": pa.array(new[first[1]].astype(np.int32)), "rank": pa.array(columns["rank"]),
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
            frames=check_frames(path, tree.frames(new)),
            values=pa.table(values),
            metrics=metrics,
            metadata=metadata,
            reader_version=self.version,
        )
