"""HPCToolkit v4 databases (a directory with ``meta.db`` + ``profile.db`` [+ ``cct.db``]).

Format reference: ``shared/docs/formats.md`` section 2; the binary decoding is in
:mod:`perflake.readers.hpctoolkit_v4_sections`.  What this reader does:

* **Tree.** One root ``<program root>`` (type ``root``) stands for the global context (ctxId 0, whose values
  are the totals of the whole run); *every* entry point (``main thread``, ``unknown entry``,
  ``application thread``: B.6) is a child of it, named by its pretty name, type ``entry``.  Contexts keep
  the file, line and module as frame attributes (B.10); the flex words are decoded from the context
  ``flags``, not guessed from the lexical type (B.10).  ``name`` is spelled as Hatchet spells it so that
  call paths compare with Hatchet's: ``function: <name>`` (name shortened as Hatchet does; the full names
  are kept in metadata ``hpctoolkit.function_names``), ``loop <file>:<line>``, ``line <file>:<line>``,
  ``<module>:<offset>`` for an instruction.  ``type`` is the lexical type (``function``, ``loop``, ``line``,
  ``instruction``), prefixed ``inlined `` when the context's relation to its parent is an inlined call.
* **Source files copied into the database** (the ``copied`` flag, bit 0 of a source file's flags in
  meta.db): hpcprof stores them as ``src/<original absolute path>`` (releases before mid-2023:
  ``<output directory given to hpcprof>/src/<original absolute path>``).  For such a file everything up to
  and including the first ``src`` path component is removed and the leading ``/`` restored, so names,
  ``file`` attributes and call-path ids use the original path whether and wherever the sources were copied;
  ``hpctoolkit.copied_sources`` maps each original path to its in-database path.  A file without the flag is
  left as it is (``.../spack-src/src/pthread.c``).  An output directory that itself has a ``src`` component
  would be cut too early (the format does not record that directory).
* **Values on contexts absent from meta.db** (formats.md 2.5; hpcprof since 2022 leaves instruction contexts
  with a lexical relation out of meta.db, ``MetaDB::elide()`` in HPCToolkit's ``src/hpcprof/sinks/metadb.hpp``,
  their children moved up to the parent, but still writes their values to profile.db and cct.db).  Such values
  make no node: their cost is already in the ancestors' ``execution`` and ``function`` values (hpctoolkit-gamess, every
  tree context, all 65 profiles: execution minus the children's execution equals function minus the lexical
  children's function; tests/test_hpctoolkit_v4.py).  hpcviewer and Hatchet also read only ids in meta.db.
  Metadata: ``hpctoolkit.missing_contexts`` (ids), ``hpctoolkit.missing_values`` (values skipped) and
  ``hpctoolkit.missing_point_cost`` (their summed summary ``point`` cost per column).
* **Locations.** Each non-summary profile is identified by its id tuple.  rank = the ``RANK`` id (0 when
  the tuple has none); thread = the ``THREAD`` id for a CPU thread (0 when nothing is below the rank).
  Any other profile (GPU streams: ``GPUCONTEXT``, ``GPUSTREAM``) gets thread = 10000 + k, k = its position
  among the rank's non-CPU profiles sorted by id tuple (collision-free even with several GPU contexts).  A
  CPU profile whose (rank, thread) is already taken is numbered the same way.  ``hpctoolkit.profiles`` in
  the metadata lists every profile with its full id tuple, its value count and its (rank, thread).
* **Metrics** (names as Hatchet builds them: lower case, ``(unit)`` dropped, ``realtime``/``cputime``/
  ``cycles`` -> ``time``): scope ``execution`` -> ``<m> (inc)`` (inclusive), ``function`` -> ``<m>``
  (exclusive, as Hatchet: the cost of the function itself, also on each of its loops and lines, so the
  values of a line and of its function overlap), any other scope -> ``<m> (<scope>)`` (role other), each
  scope its own column (B.9).  hpcviewer shows ``lex_aware`` as the exclusive value instead; ``point`` is
  the raw attribution of a context alone and never the exclusive metric.  A self value that adds up over
  the tree is ``execution`` minus the children's ``execution`` (equal to ``function`` minus the lexical
  children's ``function``).  Units
  from the ``(unit)`` suffix (``sec`` -> ``seconds``, ``B`` -> ``bytes``).  Metrics without any stored
  value get no column (all are listed in ``hpctoolkit.metrics`` with their columns).  Values not stored
  (HPCToolkit stores no zeros) are null, never NaN, so merged sibling nodes sum correctly; so is an infinite
  value (a damaged file).
* **The summary profile** (profile 0, values keyed by statMetricId) is kept at location rank = -1,
  thread = -1 in *separate* columns named ``<combine>(<column>)`` (``sum(time (inc))``; a formula other
  than ``$$`` is written out with ``$$`` replaced), role other.  Per-location columns are null at rank -1
  and summary columns are null elsewhere, so sums over locations never count a value twice.  A further
  summary profile (none in the samples) is at rank -1, thread -1 - k.  The summary is not always
  recomputable: in hpctoolkit-gamess the custom ``lex_aware`` scope's sums differ from the per-thread sums
  on 148 loop contexts.
* **Run metadata:** ``title``, ``description``, ``hpctoolkit.host_ids`` (NODE physical ids), id kinds,
  entry points, metric descriptions, database versions, counts of missing contexts.  No date (B.12).
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pyarrow as pa

from perflake.errors import ReaderError
from perflake.readers import hpctoolkit_v4_sections as sec
from perflake.readers.base import EXCLUSIVE, FRAME_SCHEMA, INCLUSIVE, OTHER, Metric, ProfileRows, check_frames
from perflake.readers.hpctoolkit_profiles import GPU_THREAD_BASE, SUMMARY_RANK, checked_rank, place_others

ROOT_NAME = "<program root>"
COPIED = 1  # bit 0 of a source file's flags: the file was copied into the database
_FILE_NAMES = {b"meta": "meta.db", b"prof": "profile.db", b"ctxt": "cct.db"}
_UNITS = {"sec": "seconds", "B": "bytes"}
_TIME_NAMES = {"cputime": "time", "realtime": "time", "cycles": "time"}
_MPI_RE = re.compile(r"^(P?MPI_[A-Za-z0-9_]+)")
_COMBINE = {0: "sum", 1: "min", 2: "max"}


def hatchet_function_name(name: str) -> str:
    """A function name shortened as Hatchet's from_hpctoolkit_latest does (formats.md 2.7)."""
    m = _MPI_RE.match(name)
    if m:
        name = m.group(1)
    for sep in (" [", ".", "@", "(", "<"):
        i = name.find(sep)
        if i > 0:
            name = name[:i]
    return name


def original_source_path(stored: str) -> str:
    """The original path of a source file hpcprof copied into the database: ``src/home/u/x.c`` and
    ``<outdir>/src/home/u/x.c`` -> ``/home/u/x.c`` (everything up to and including the first ``src`` path
    component removed, the leading ``/`` restored).  A path without a ``src`` component is returned as is."""
    parts = stored.split("/")
    if "src" not in parts:
        return stored
    rest = "/".join(parts[parts.index("src") + 1 :]).lstrip("/")
    return "/" + rest if rest else stored


def _source_files(meta: sec.Meta) -> tuple[dict[int, str], dict[str, str]]:
    """Source file pointer -> the path names use; and original path -> in-database path of the copied files."""
    files, copied = {}, {}
    for ptr, path in meta.files.items():
        if path is not None and meta.file_flags.get(ptr, 0) & COPIED:
            original = original_source_path(path)
            if original != path:
                copied[original] = path
            path = original
        files[ptr] = path
    return files, dict(sorted(copied.items()))


def _db_files(path: str) -> dict[bytes, str]:
    """format id -> file, the canonical name (meta.db, ...) preferred over any other *.db of that kind."""
    found: dict[bytes, str] = {}
    try:
        entries = sorted(os.listdir(path), key=lambda e: (e not in _FILE_NAMES.values(), e))
    except OSError:
        return found
    for entry in entries:
        full = os.path.join(path, entry)
        if entry.endswith(".db") and os.path.isfile(full):
            fmt = sec.format_id(full)
            if fmt in _FILE_NAMES and fmt not in found:
                found[fmt] = full
    return found


def _split_unit(raw: str) -> tuple[str, str | None]:
    r"""``"CPUTIME (sec)"`` -> ``("CPUTIME", "sec")``; ``(raw, None)`` without a final ``(...)`` (string methods:
    the regex ``^(.*?)\s*\(([^()]*)\)$`` takes quadratic time on a long run of blanks)."""
    body = raw[:-1] if raw.endswith("\n") else raw  # "$" also matches before a final newline
    i = body.rfind("(")
    if body.endswith(")") and i >= 0 and ")" not in body[i + 1 : -1]:
        base = body[:i].rstrip()
        if "\n" not in base:  # "." does not match a newline
            return base, body[i + 1 : -1]
    return raw, None


def _metric_columns(metrics: list[dict]) -> tuple[list[Metric], dict[int, str], dict[int, str], list[dict]]:
    """Metric columns, propMetricId -> column, statMetricId -> summary column, metadata descriptions."""
    out, prop, stat, described, used, summaries = [], {}, {}, [], set(), []
    for md in metrics:
        raw = md["name"] or "metric"
        base, unit = _split_unit(raw)
        unit = _UNITS.get(unit, unit)
        base = _TIME_NAMES.get(base.lower(), base.lower())
        if base in used:  # two metrics with the same Hatchet name: the later one keeps its raw name
            base = raw.lower()
            while base in used:
                base += "'"
        used.add(base)
        paired = {"function", "execution"} <= {s["scope"] for s in md["scopes"]}
        cols, scopes, sums = {}, [], []
        for s in md["scopes"]:
            if s["scope"] == "function":
                col, role, pair = base, EXCLUSIVE if paired else OTHER, f"{base} (inc)" if paired else None
            elif s["scope"] == "execution":
                col, role, pair = f"{base} (inc)", INCLUSIVE if paired else OTHER, base if paired else None
            else:
                col, role, pair = f"{base} ({s['scope']})", OTHER, None
            cols[s["scope"]] = prop[s["prop_id"]] = col
            out.append(Metric(col, role, unit, pair))
            scopes.append({**s, "column": col})
        for s in md["summaries"]:
            col = cols.get(s["scope"], f"{base} ({s['scope']})")
            formula = s["formula"] or "$$"
            inner = col if formula == "$$" else formula.replace("$$", f"({col})")
            stat[s["stat_id"]] = name = f"{_COMBINE.get(s['combine'], 'combine%d' % s['combine'])}({inner})"
            summaries.append(Metric(name, OTHER, unit if formula == "$$" else None))
            sums.append({**s, "column": name})
        described.append({"name": raw, "base": base, "unit": unit, "scopes": scopes, "summaries": sums})
    order = lambda m: not (m.name == "time" or m.name.startswith("time (") or "(time" in m.name)  # noqa: E731
    return sorted(out, key=order) + sorted(summaries, key=order), prop, stat, described


def _locations(meta: sec.Meta, infos: list[dict], path: str) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """(rank of each profile, thread of each profile, metadata records)."""
    kinds = meta.kinds
    kind_name = lambda k: kinds[k] if k < len(kinds) else f"KIND{k}"  # noqa: E731
    rank = np.zeros(len(infos), np.int32)
    thread = np.zeros(len(infos), np.int32)
    records, others, taken, n_summary = [], [], set(), 0
    for info in infos:
        ids = [(kind_name(k), bool(f & 1), lid, pid) for k, f, lid, pid in info["id_tuple"]]
        value = {k: (pid if phys else lid) for k, phys, lid, pid in ids}
        i = info["index"]
        if info["summary"]:
            rank[i], thread[i] = SUMMARY_RANK, -1 - n_summary
            n_summary += 1
        else:
            rank[i] = checked_rank(value, i, path)
            below = {k for k, *_ in ids} - {"NODE", "RANK", "CORE", "SUMMARY"}
            cpu = value.get("THREAD", 0) if below <= {"THREAD"} else None  # no id below RANK: thread 0
            if cpu is not None and (rank[i], cpu) not in taken:
                thread[i] = cpu
                taken.add((rank[i], cpu))
            else:
                others.append((rank[i], [(k, pid if phys else lid) for k, phys, lid, pid in ids], i))
        records.append({"profile": i, "summary": info["summary"], "values": info["values"],
                        "id_tuple": [{"kind": k, "physical": p, "logical_id": lid, "physical_id": pid}
                                     for k, p, lid, pid in ids]})
    return place_others(rank, thread, others, taken, records)


def _frames(meta: sec.Meta, path: str) -> tuple[dict[str, list], dict[str, list[str]]]:
    """Frame columns for the program root (local 0) and every context of meta.db (local = index + 1)."""
    c = meta.contexts
    cols = {"parent_local": [-1], "name": [ROOT_NAME], "type": ["root"], "file": [None], "line": [None],
            "module": [None]}
    full_names: dict[str, set[str]] = {}

    def look(table: dict, ptr: int, what: str, ctx: int):
        if not ptr:
            return None
        if ptr not in table:
            raise ReaderError(path, f"damaged: context {ctx} refers to a {what} at offset {ptr} not in the {what}s")
        return table[ptr]

    for i, kind in enumerate(c.kind):
        ctx = c.ctx_id[i]
        file = look(meta.files, c.file[i], "source file", ctx)
        module = look(meta.modules, c.module[i], "load module", ctx)
        line = c.line[i]
        if kind == "entry":
            name = c.name[i] or f"entry point {c.entry_kind[i]}"
        elif kind == "function":
            fn = look(meta.functions, c.function[i], "function", ctx)
            full = "<unknown function>"
            if fn is not None:
                fname, fmod, _offset, ffile, fline = fn
                full = fname or "<unknown function>"
                module = look(meta.modules, fmod, "load module", ctx) or module
                if ffile:
                    file, line = look(meta.files, ffile, "source file", ctx), fline
            short = hatchet_function_name(full)
            if short != full:
                full_names.setdefault(short, set()).add(full)
            name = f"function: {short}"
        elif kind in ("loop", "line"):
            name = f"{kind} {file if file is not None else '<unknown file>'}:{line or 0}"
        elif kind == "instruction":
            name = f"{module if module is not None else '<unknown module>'}:{c.offset[i] or 0}"
        else:  # a lexical type newer than this reader
            name = f"<{kind}> {ctx}"
        cols["parent_local"].append(c.parent[i] + 1 if c.parent[i] >= 0 else 0)
        cols["name"].append(name)
        cols["type"].append(f"inlined {kind}" if c.relation[i] == 2 else kind)
        cols["file"].append(file)
        cols["line"].append(line)
        cols["module"].append(module)
    return cols, {k: sorted(v) for k, v in sorted(full_names.items())}


def _values(prof: sec.Profiles, local: np.ndarray, n_local: int, metrics: list[Metric], prop: dict, stat: dict,
            rank: np.ndarray, thread: np.ndarray, path: str) -> tuple[pa.Table, list[Metric]]:
    """One row per (profile, context) with a value, one column per (metric, scope) or summary statistic."""
    col_of = {m.name: j for j, m in enumerate(metrics)}
    lut = np.full((2, 1 << 16), -1, np.int64)  # [is summary, metric id] -> column
    lut[0, list(prop)] = [col_of[v] for v in prop.values()]
    lut[1, list(stat)] = [col_of[v] for v in stat.values()]
    is_summary = np.array([i["summary"] for i in prof.infos])
    col = lut[is_summary[prof.profile].astype(np.int64), prof.metric]
    if (col < 0).any():
        bad = int(prof.metric[col < 0][0])
        raise ReaderError(path, f"damaged: values for metric id {bad}, which meta.db does not describe")
    rows, inv = np.unique(prof.profile.astype(np.int64) * n_local + local, return_inverse=True)
    wide = np.full((len(metrics), rows.size), np.nan)  # one contiguous row per metric column
    wide[col, inv] = prof.value
    has = set(np.unique(col).tolist())
    keep = [j for j, m in enumerate(metrics) if j in has or (m.pair in col_of and col_of[m.pair] in has)]
    profile_of_row = rows // n_local
    values = {"local_id": pa.array((rows % n_local).astype(np.int32)),
              "rank": pa.array(rank[profile_of_row]), "thread": pa.array(thread[profile_of_row])}
    # absent values are null, not NaN: nodes merged by normalize() must sum to the present values only
    values.update({metrics[j].name: pa.array(wide[j], mask=np.isnan(wide[j])) for j in keep})
    return pa.table(values), [metrics[j] for j in keep]


def _point_cost(infos: list[dict], described: list[dict], profile: np.ndarray, metric: np.ndarray,
                value: np.ndarray) -> dict[str, float]:
    """Summary column -> the summed ``point``-scope cost (a plain sum, ``$$``) stored on contexts absent
    from meta.db, in the first summary profile."""
    summary = next((i["index"] for i in infos if i["summary"]), None)
    out = {}
    for md in described:
        for s in md["summaries"]:
            if s["scope"] == "point" and s["combine"] == 0 and (s["formula"] or "$$") == "$$":
                total = value[(profile == summary) & (metric == s["stat_id"])].sum()
                if total:
                    out[s["column"]] = float(total)
    return out


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values[i]`` for each wanted key equal to ``keys[i]``, -1 for the others (sorted search: ctxIds are
    u32, so a table indexed by id could need 32 GB for a damaged file)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    pos = np.minimum(np.searchsorted(sorted_keys, wanted), max(len(keys) - 1, 0))
    hit = sorted_keys[pos] == wanted if len(keys) else np.zeros(len(wanted), bool)
    return np.where(hit, values[order][pos], -1)


def context_ids(path: str) -> np.ndarray:
    """The HPCToolkit context id (ctxId) of each frame of ``Reader().read(path)``, by local id (0: the program
    root, ctxId 0): Hatchet's ``from_hpctoolkit_latest`` numbers its nodes by them."""
    found = _db_files(os.fspath(path))
    meta = sec.read_meta(found.get(b"meta", os.path.join(os.fspath(path), _FILE_NAMES[b"meta"])))
    return np.r_[0, np.asarray(meta.contexts.ctx_id, dtype=np.int64)]


class Reader:
    kind = "hpctoolkit_v4"
    version = "2"  # 2: copied source paths restored, no node for contexts absent from meta.db

    @staticmethod
    def sniff(path: str) -> bool:
        return os.path.isdir(path) and {b"meta", b"prof"} <= _db_files(path).keys()

    @staticmethod
    def files(path: str) -> list[str]:
        found = _db_files(path)
        return [found[k] for k in (b"meta", b"prof", b"ctxt") if k in found]

    def read(self, path: str) -> ProfileRows:
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise ReaderError(path, "an HPCToolkit v4 database is a directory holding meta.db and profile.db")
        found = _db_files(path)
        for fmt in (b"meta", b"prof"):  # a canonical file with a bad header: let the section reader say why
            found.setdefault(fmt, os.path.join(path, _FILE_NAMES[fmt]))
            if not os.path.isfile(found[fmt]):
                raise ReaderError(found[fmt], "missing: an HPCToolkit v4 database needs meta.db and profile.db")
        meta = sec.read_meta(found[b"meta"])
        prof = sec.read_profiles(found[b"prof"])
        files, copied = _source_files(meta)
        meta = dataclasses.replace(meta, files=files)
        cols, full_names = _frames(meta, found[b"meta"])
        n_tree = len(cols["name"])

        # contexts: program root 0 (ctxId 0), tree contexts 1..n_tree-1; values of other ctxIds make no node
        tree_ids = np.asarray(meta.contexts.ctx_id, dtype=np.int64)
        if np.unique(tree_ids).size != tree_ids.size or (tree_ids == 0).any():
            raise ReaderError(found[b"meta"], "damaged: a ctxId is 0 or appears twice in the context tree")
        ctx = prof.ctx.astype(np.int64)
        local = _lookup(np.r_[0, tree_ids], np.arange(n_tree, dtype=np.int64), ctx)
        elided = local < 0
        missing = np.unique(ctx[elided])
        elided_values = (prof.profile[elided], prof.metric[elided], prof.value[elided])
        if missing.size:
            keep = ~elided
            prof = dataclasses.replace(prof, profile=prof.profile[keep], ctx=prof.ctx[keep],
                                       metric=prof.metric[keep], value=prof.value[keep])
            local = local[keep]
        n_local = len(cols["name"])
        frames = pa.table({"local_id": pa.array(np.arange(n_local, dtype=np.int32)),
                           "parent_local": pa.array(np.asarray(cols["parent_local"], np.int32)),
                           **{k: cols[k] for k in ("name", "type", "file", "line")},
                           "end_line": pa.nulls(n_local, pa.int64()), "module": cols["module"]}, schema=FRAME_SCHEMA)
        check_frames(found[b"meta"], frames)

        metrics, prop, stat, described = _metric_columns(meta.metrics)
        point_cost = _point_cost(prof.infos, described, *elided_values)
        rank, thread, records = _locations(meta, prof.infos, found[b"prof"])
        values, metrics = _values(prof, local, n_local, metrics, prop, stat, rank, thread, found[b"prof"])

        hosts = sorted({t["physical_id"] for r in records for t in r["id_tuple"] if t["kind"] == "NODE"})
        entries = [{"name": meta.contexts.name[i], "entry_point": meta.contexts.entry_kind[i],
                    "ctx_id": meta.contexts.ctx_id[i]} for i, k in enumerate(meta.contexts.kind) if k == "entry"]
        metadata = {
            "title": meta.title,
            "description": meta.description,
            "hpctoolkit.version": {"meta.db": meta.version, "profile.db": prof.version},
            "hpctoolkit.host_ids": hosts,
            "hpctoolkit.id_kinds": meta.kinds,
            "hpctoolkit.entry_points": entries,
            "hpctoolkit.profiles": records,
            "hpctoolkit.summary_location": {"rank": SUMMARY_RANK, "thread": -1},
            "hpctoolkit.gpu_thread_base": GPU_THREAD_BASE,
            "hpctoolkit.metrics": described,
            "hpctoolkit.contexts": len(meta.contexts.ctx_id),
            "hpctoolkit.missing_contexts": int(missing.size),
            "hpctoolkit.missing_values": int(elided.sum()),
            "hpctoolkit.missing_point_cost": point_cost,
            "hpctoolkit.copied_sources": copied,
            "hpctoolkit.function_names": full_names,
        }
        return ProfileRows(format=self.kind, source=path, frames=frames, values=values,
                           metrics=metrics, metadata=metadata, reader_version=self.version)
