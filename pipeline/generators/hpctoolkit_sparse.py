"""Writer of HPCToolkit 2021-2022 "sparse" databases (``experiment.xml`` 4.0 + big-endian ``profile.db``,
``cct.db``, ``trace.db``) from the synthetic model, byte by byte per that era's FORMATS.md and hpcprof2's writers
(the layout is in :mod:`perflake.readers.hpctoolkit_sparse_sections`).

The calling-context tree is hpcprof2's (Prof2 ``Context`` scopes, ids a dense permutation of 0..N-1, the
global context 0): ``<program root>`` (function) > call instruction > ``main`` > ...; a model function owns a
source line holding two instructions with its exclusive time (a third of it, for about a third of the solver
frames, in a loop's line instead); a call is a line (shared with any other call on that line) > call
instruction > callee; an MPI function calls, from an instruction without source line, an instruction of an
unsymbolized library (an instruction under an instruction) that holds its time.  Only instructions have
(``point``) values; the execution and function scopes are propagated as hpcprof2 does (function pulls lines,
loops and instructions into functions, loops and lines).  experiment.xml is written as hpcprof2 wrote it:

* ``variant="2022"``: ``<PF i="7">..<S i="-7"/></PF>`` for an instruction under an instruction, 18-byte id
  tuple elements (kind, physical, logical), profile.db version 4.0;
* ``variant="2021"``: ``<PF i="-7">..<S i="7"/></PF>``, 10-byte id tuple elements (kind, index), version 1.0;
* both: instructions under a line that have no children get no element (folded), their values are stored.

Per-thread values use the MetricDB ids (execution ``2j``, function ``2j + 1`` for metric j); the summary profile
(index 0) the PARTIAL ids ``(MetricDB id << 8) + k`` of the count, sum, sum of squares, min and max partials
(statistics Sum, Mean, StdDev, Min, Max).  Profile infos are in a shuffled order, value blocks in yet another.
Everything is a pure function of the arguments: same seed, same bytes.
"""
from __future__ import annotations

import pathlib
import struct
import zlib

import numpy as np

from .calltree import CallTree, make_metrics, make_tree, perturb
from .hpctoolkit import _APPS, _LIBMPI, _MONITOR, _esc
from .names import MPI, ROOT_NAME, SOLVER, category, source_location

PROFDB_MAGIC, CCTDB_MAGIC, TRACEDB_MAGIC = b"HPCPROF-profdb__", b"HPCPROF-cctdb___", b"HPCPROF-tracedb_"
END_CTX, END_MID = 0x656E6421, 0x6564
METRICS = ("CPUTIME (sec)", "PAPI_TOT_INS")  # metric j: seconds, or instructions (1000 per microsecond)
_LIBFABRIC = "/usr/lib64/libfabric.so.1"
_COMBINE = ("sum", "sum", "sum", "min", "max")  # partials: count, sum, sum of squares, min, max
_STATS = (("Sum", "${s}"), ("Mean", "${s}/${c}"), ("StdDev", "sqrt((${q}/${c}) - pow(${s}/${c}, 2))"),
          ("Min", "${lo}"), ("Max", "${hi}"))
_KINDS = ("SUMMARY", "NODE", "RANK", "THREAD", "GPUDEVICE", "GPUCONTEXT", "GPUSTREAM", "CORE")
_GLOBAL, _FUNCTION, _LINE, _LOOP, _POINT = range(5)
_VAL = np.dtype([("value", ">f8"), ("metric", ">u2")])
_CIDX = np.dtype([("ctx", ">u4"), ("start", ">u8")])
_CVAL = np.dtype([("value", ">f8"), ("prof", ">u4")])
_MIDX = np.dtype([("metric", ">u2"), ("start", ">u8")])


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def has_loop(tree: CallTree) -> np.ndarray:
    """Which model nodes get a loop (a third of their exclusive time in the loop's line)."""
    return np.array([category(nm) == SOLVER and nm != ROOT_NAME and _crc(nm + "#loop") % 1000 < 330
                     for nm in tree.names])


class Contexts:
    """hpcprof2's context tree for a model tree: parallel lists, parents before children."""

    def __init__(self, tree: CallTree, app: str, seed: int):
        self.kind, self.parent, self.attrs, self.value_of = [], [], [], []
        self.files, self.modules, self.procs = {"<unknown file>": 0}, {}, {}
        exe = f"/home/hpcuser/apps/{app.split('.')[0]}/build/{app}"
        lines: dict[tuple[int, int], int] = {}
        loop = has_loop(tree)

        def add(kind, parent, value=None, **attrs):
            self.kind.append(kind)
            self.parent.append(parent)
            self.attrs.append(attrs)
            self.value_of.append(value)
            return len(self.kind) - 1

        def line(scope, file, ln):
            if (scope, ln) not in lines:
                lines[scope, ln] = add(_LINE, scope, file=file, line=ln)
            return lines[scope, ln]

        def function(parent, name, module, file, ln):
            return add(_FUNCTION, parent, proc=name, module=module, file=file, line=ln, offset=_crc(name) % 0xFFFFF)

        add(_GLOBAL, -1)
        root = function(0, "<program root>", _MONITOR, "<unknown file>", 0)
        call_point = {-1: add(_POINT, root, module=_MONITOR, offset=0x4F2)}
        scope_of: dict[int, int] = {}
        for k, p in enumerate(tree.parent.tolist()):
            name = tree.names[k]
            src, first, last = source_location(name)
            if p >= 0:  # the call: a line of the caller's scope, then a call instruction
                _, pf, pl = source_location(tree.names[p])
                ln = pf + 1 + _crc(f"{tree.names[p]}->{name}") % max(1, pl - pf - 1)
                call_point[k] = add(_POINT, line(scope_of[p], source_location(tree.names[p])[0], ln),
                                    module=exe, offset=0x400000 + _crc(f"call {p}->{k}") % 0xFFFFF)
            at = call_point[k if p >= 0 else -1]
            if category(name) == MPI:
                f = function(at, name, _LIBMPI, f"<unknown file> [{pathlib.PurePath(_LIBMPI).name}]", 0)
                inner = add(_POINT, f, module=_LIBMPI, offset=0x1000 + _crc(name) % 0xFFFF)
                off = 0x2000 + _crc(name + "#fi") % 0xFFFF
                add(_POINT, inner, ("mpi", k), module=_LIBFABRIC, offset=off,
                    proc=f"<unknown procedure> 0x{off:x} [libfabric.so.1]")
                scope_of[k] = f
                continue
            f = scope_of[k] = function(at, name, exe, src, first)
            stmt = line(f, src, first + 1 + _crc(name + "#stmt") % max(1, last - first))
            add(_POINT, stmt, ("a1", k), module=exe, offset=0x400000 + _crc(name + "#a1") % 0xFFFFF)
            add(_POINT, stmt, ("a2", k), module=exe, offset=0x400000 + _crc(name + "#a2") % 0xFFFFF)
            if loop[k]:
                ln = first + 1 + _crc(name + "#L") % max(1, last - first)
                scope_of[k] = add(_LOOP, f, file=src, line=ln)
                add(_POINT, line(scope_of[k], src, ln + 1), ("b", k), module=exe,
                    offset=0x400000 + _crc(name + "#b") % 0xFFFFF)
        self.n = len(self.kind)
        self.ids = np.r_[0, 1 + np.random.default_rng(seed).permutation(self.n - 1)].astype(np.int64)
        self.children: list[list[int]] = [[] for _ in range(self.n)]
        for c, p in enumerate(self.parent[1:], start=1):
            self.children[p].append(c)
        self.folded = np.array([k == _POINT and self.kind[self.parent[c]] == _LINE and not self.children[c]
                                for c, k in enumerate(self.kind)])

    def point_values(self, exclusive: np.ndarray) -> np.ndarray:
        """[n contexts, columns] int64 microseconds: the instructions' own (point) values."""
        pv = np.zeros((self.n, exclusive.shape[1]), np.int64)
        loop = {k for c, v in enumerate(self.value_of) if v and v[0] == "b" for k in [v[1]]}
        for c, v in enumerate(self.value_of):
            if v is None:
                continue
            what, k = v
            e = exclusive[k]
            sa = e // 3 if k in loop else e
            pv[c] = {"mpi": e, "a1": (sa + 1) // 2, "a2": sa // 2, "b": e - e // 3}[what]
        return pv

    def propagate(self, pv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(execution, function) scopes of every context from the point values (hpcprof2's propagation:
        execution sums every child, function only lines, loops and instructions into functions, loops, lines)."""
        exe, fun = pv.copy(), pv.copy()
        kind, parent = np.array(self.kind), np.array(self.parent)
        pulls = np.isin(kind, (_POINT, _LOOP, _LINE)) & np.isin(kind[np.maximum(parent, 0)],
                                                                (_FUNCTION, _LOOP, _LINE)) & (parent >= 0)
        depth = np.zeros(self.n, np.int64)
        for c in range(1, self.n):  # parents come first
            depth[c] = depth[parent[c]] + 1
        for d in range(int(depth.max(initial=0)), 0, -1):
            at = np.flatnonzero(depth == d)
            np.add.at(exe, parent[at], exe[at])
            at = at[pulls[at]]
            np.add.at(fun, parent[at], fun[at])
        return exe, fun

    def table(self, name: str, key: str) -> int:
        t = {"file": self.files, "module": self.modules, "proc": self.procs}[name]
        return t.setdefault(key, len(t) + (2 if name == "proc" else 1 if name == "module" else 0))

    def xml_body(self, variant: str) -> str:
        out: list[str] = []
        self._emit(0, variant, out)
        return "".join(out)

    def _emit(self, c: int, variant: str, out: list[str]) -> None:
        kind, a, i, kids = self.kind[c], self.attrs[c], int(self.ids[c]), self.children[c]
        parent_kind = self.kind[self.parent[c]] if c else None
        closing = ""
        if kind == _GLOBAL:
            out.append("<SecCallPathProfileData>\n")
            closing = "</SecCallPathProfileData>\n"
        elif kind == _FUNCTION:
            p = self.table("proc", a["proc"])
            out.append(f'<PF i="{i}" s="{p}" n="{p}" v="0x{a["offset"]:x}" f="{self.table("file", a["file"])}"'
                       f' l="{a["line"]}" lm="{self.table("module", a["module"])}"' + (">\n" if kids else "/>\n"))
            closing = "</PF>\n" if kids else ""
        elif kind == _LOOP:
            out.append(f'<L i="{i}" s="0" v="0" f="{self.table("file", a["file"])}"'
                       f' l="{a["line"]}">\n')
            closing = "</L>\n"
        elif kind == _LINE:  # a closed S; the line's children follow it at the same level
            f = f' f="{self.table("file", a["file"])}"' if variant == "2022" else ""
            out.append(f'<S i="{i}" it="{i}"{f} l="{a["line"]}" s="0" v="0"/>\n')
        elif self.folded[c]:
            return
        else:  # an instruction: S when a leaf, C when it calls; a PF of its own under an instruction
            wrapped = parent_kind in (_POINT, _GLOBAL)
            sign = "-" if wrapped and variant == "2022" else ""
            if wrapped:
                p, m = self.table("proc", a["proc"]), self.table("module", a["module"])
                uf = self.table("file", f"<unknown file> [{pathlib.PurePath(a['module']).name}]")
                out.append(f'<PF i="{"" if variant == "2022" else "-"}{i}" n="{p}" s="{p}" l="0" f="{uf}"'
                           f' lm="{m}">\n')
            ln = self.attrs[self.parent[c]]["line"] if parent_kind == _LINE else 0
            tag = "C" if kids else "S"
            out.append(f'<{tag} i="{sign}{i}" s="0" v="0x{a["offset"]:x}" it="{i}" l="{ln}"'
                       + (">\n" if kids else "/>\n"))
            closing = ("</C>\n" if kids else "") + ("</PF>\n" if wrapped else "")
        for k in kids:
            self._emit(k, variant, out)
        out.append(closing)


def _metric_tables(n_metrics: int) -> tuple[str, str]:
    metrics, dbs = [], []
    for j, name in enumerate(METRICS[:n_metrics]):
        for e, scope, t, suffix in ((2 * j, 2 * j + 1, "inclusive", "I"), (2 * j + 1, 2 * j, "exclusive", "E")):
            for k, comb in enumerate(_COMBINE):
                i = (e << 8) + k
                metrics.append(f'<Metric i="{i}" o="{i}" n="{_esc(name)}:PARTIAL:{k} ({suffix})" md="" v="derived-incr"'
                               f' t="{t}" partner="{(scope << 8) + k}" show="4" show-percent="0">\n'
                               f'<MetricFormula t="combine" frm="{comb}(${i}, ${i})"/>\n'
                               f'<Info><NV n="units" v="events"/></Info>\n</Metric>\n')
            ids = {"c": (e << 8), "s": (e << 8) + 1, "q": (e << 8) + 2, "lo": (e << 8) + 3, "hi": (e << 8) + 4}
            for k, (stat, frm) in enumerate(_STATS):
                i, partner = (e << 8) + 256 - len(_STATS) + k, (scope << 8) + 256 - len(_STATS) + k
                view = frm.replace("${", "{").format(**{x: f"${v}" for x, v in ids.items()})
                metrics.append(f'<Metric i="{i}" o="{i}" n="{_esc(name)}:{stat} ({suffix})" md="" v="derived-incr"'
                               f' t="{t}" partner="{partner}" show="1" show-percent="1">\n'
                               f'<MetricFormula t="view" frm="{view}"/>\n'
                               f'<Info><NV n="units" v="events"/></Info>\n</Metric>\n')
            dbs.append(f'<MetricDB i="{e}" n="{_esc(name)} ({suffix})"/>\n')
    return "".join(metrics), "".join(dbs)


def _xml(ctx: Contexts, app: str, variant: str, n_metrics: int, times: tuple[int, int]) -> str:
    body = ctx.xml_body(variant)  # first: it fills the tables
    metrics, dbs = _metric_tables(n_metrics)
    tab = lambda tag, t, extra="": "".join(f'<{tag} i="{i}" n="{_esc(k)}"{extra}/>\n'  # noqa: E731
                                           for k, i in sorted(t.items(), key=lambda x: x[1]))
    names = "".join(f'<Identifier i="{k}" n="{n}"/>\n' for k, n in enumerate(_KINDS))
    procs = tab("Procedure", ctx.procs, ' v="0"')
    return (f'<?xml version="1.0"?>\n<HPCToolkitExperiment version="4.0">\n<Header n="{_esc(app)}">\n<Info/>\n'
            f'</Header>\n<SecCallPathProfile i="0" n="{_esc(app)}">\n<SecHeader>\n'
            f"<IdentifierNameTable>\n{names}</IdentifierNameTable>\n<MetricTable>\n{metrics}</MetricTable>\n"
            f"<MetricDBTable>\n{dbs}</MetricDBTable>\n<TraceDBTable>\n"
            f'<TraceDB i="0" db-glob="trace.db" db-min-time="{times[0]}" db-max-time="{times[1]}" u="1000000000"/>\n'
            f"</TraceDBTable>\n<LoadModuleTable>\n{tab('LoadModule', ctx.modules)}</LoadModuleTable>\n"
            f"<FileTable>\n{tab('File', ctx.files)}</FileTable>\n"
            f"<ProcedureTable>\n{procs}</ProcedureTable>\n<Info/>\n</SecHeader>\n"
            f"{body}</SecCallPathProfile>\n</HPCToolkitExperiment>\n")


def _id_tuple(kinds: list[tuple[int, int, int, int]], wide: bool) -> bytes:
    """u16 length, then (u16 kind, u64 physical, u64 logical) or (u16 kind, u64 index: the host id for NODE,
    the logical id otherwise) per element."""
    elems = [struct.pack(">HQQ", (interp << 14) | k, phys, log) if wide
             else struct.pack(">HQ", k, phys if k == 1 else log) for k, interp, phys, log in kinds]
    return struct.pack(">H", len(kinds)) + b"".join(elems)


def _align(v: int, a: int = 8) -> int:
    return (v + a - 1) // a * a


def _block(ids: np.ndarray, mids: np.ndarray, vals: np.ndarray) -> tuple[bytes, int, int]:
    """A profile's sparse value block from [contexts, metric ids] values (0 = absent); contexts in id order."""
    present = vals != 0
    rows = np.flatnonzero(present.any(axis=1))
    present, vals = present[rows], vals[rows]
    mv = np.zeros(int(present.sum()), _VAL)
    mv["value"] = vals[present]
    mv["metric"] = np.broadcast_to(mids, vals.shape)[present]
    ci = np.zeros(rows.size + 1, _CIDX)
    ci["ctx"] = np.r_[ids[rows], END_CTX]
    ci["start"] = np.r_[0, np.cumsum(present.sum(axis=1))]
    return mv.tobytes() + ci.tobytes(), mv.size, rows.size


def write_hpctoolkit_sparse_runs(out_dir, *, nodes: int, ranks: int, runs: int = 1, seed: int = 0, threads: int = 1,
                                 variant: str = "2022", n_metrics: int = 1, cct: bool = True,
                                 cct_zeroed: bool = False, trace: bool = True) -> list[pathlib.Path]:
    """Write ``runs`` sparse databases ``out_dir/run-000`` ... and return their directories (run k > 0 is
    ``perturb(base, seed=seed * 1000 + k)``, with the metric seeds of the other writers)."""
    if nodes < 1 or ranks < 1 or threads < 1 or runs < 0 or seed < 0 or not 1 <= n_metrics <= len(METRICS):
        raise ValueError("nodes, ranks and threads must be >= 1; runs and seed >= 0; n_metrics 1 or 2")
    if variant not in ("2021", "2022"):
        raise ValueError("variant is '2021' or '2022'")
    out, app, base = pathlib.Path(out_dir), _APPS[seed % len(_APPS)], make_tree(nodes, seed=seed)
    dirs = []
    for k in range(runs):
        tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
        m = make_metrics(tree, ranks, seed=seed * 1000 + k + 500, n_threads=threads, app_seed=seed)
        run = out / f"run-{k:03d}"
        run.mkdir(parents=True, exist_ok=True)
        _write_run(run, Contexts(tree, app, seed * 1000 + k), m.exclusive, app, seed, ranks, threads, variant,
                   n_metrics, cct, cct_zeroed, trace)
        dirs.append(run)
    return dirs


def _write_run(run: pathlib.Path, ctx: Contexts, exclusive: np.ndarray, app: str, seed: int, ranks: int,
               threads: int, variant: str, n_metrics: int, cct: bool, cct_zeroed: bool, trace: bool) -> None:
    n_cols, wide = ranks * threads, variant == "2022"
    rng = np.random.default_rng(seed + 77)
    info_of_col = 1 + rng.permutation(n_cols)  # profile info index of each column (0 is the summary)
    by_id = np.argsort(ctx.ids)  # contexts in id order
    ids = ctx.ids[by_id]
    mids = np.arange(2 * n_metrics)  # execution 2j, function 2j + 1
    scale = np.array([1e-6, 1e3])[:n_metrics]
    n_prof = n_cols + 1
    tuples = [_id_tuple([(0, 0, 0, 0)], wide)]
    for col in np.argsort(info_of_col):
        r, t = divmod(int(col), threads)
        node = [(1, 0, 0xA8C00000 + (seed * 37 + r // 64) % 0x10000, r // 64)]
        tuples.append(_id_tuple(node + ([(2, 0, r, r)] if ranks > 1 else []) + [(3, 3, 4000 + t, t)], wide))
    pi_ptr, idt_ptr = 128, 128 + _align(52 * n_prof)
    tuple_ptr = idt_ptr + np.r_[0, np.cumsum([len(x) for x in tuples])[:-1]]
    idt = b"".join(tuples)
    infos = [None] * n_prof
    # summary partials per MetricDB id: count, sum, sum of squares, min and max over the locations
    cnt, total, sq, hi = (np.zeros((ctx.n, 2 * n_metrics)) for _ in range(4))
    low = np.full((ctx.n, 2 * n_metrics), np.inf)
    cct_parts = []
    with open(run / "profile.db", "wb") as fh:
        pos = _align(idt_ptr + len(idt))
        fh.seek(pos)
        for lo in range(0, n_cols, 16):
            cols = range(lo, min(lo + 16, n_cols))
            exe, fun = ctx.propagate(ctx.point_values(exclusive[:, cols]))
            for c, col in enumerate(cols):
                vals = np.zeros((ctx.n, 2 * n_metrics))
                for j in range(n_metrics):
                    vals[:, 2 * j], vals[:, 2 * j + 1] = exe[:, c] * scale[j], fun[:, c] * scale[j]
                cnt += vals != 0
                total += vals
                sq += vals * vals
                low = np.where(vals != 0, np.minimum(low, vals), low)
                hi = np.maximum(hi, vals)
                data, n_vals, n_ctx = _block(ids, mids, vals[by_id])
                infos[info_of_col[col]] = (n_vals, n_ctx, pos)
                fh.write(data)
                pos += len(data)
                if cct:
                    nz = np.nonzero(vals[by_id])
                    cct_parts.append((ids[nz[0]], mids[nz[1]], np.full(nz[0].size, info_of_col[col]),
                                      vals[by_id][nz]))
        low[np.isinf(low)] = 0
        cols_s = [a[:, d] for d in range(2 * n_metrics) for a in (cnt, total, sq, low, hi)]
        smids = [(d << 8) + k for d in range(2 * n_metrics) for k in range(5)]  # ascending
        data, n_vals, n_ctx = _block(ids, np.array(smids), np.stack(cols_s, axis=1)[by_id])
        infos[0] = (n_vals, n_ctx, pos)
        fh.write(data + b"tfBDFORP")  # PROFDBft, written as a native (little-endian) u64 by hpcprof2
        fh.seek(0)
        major = 4 if wide else 1
        fh.write(struct.pack(">16sBBIHQQQQ", PROFDB_MAGIC, major, 0, n_prof, 2, 52 * n_prof, pi_ptr, len(idt),
                             idt_ptr).ljust(pi_ptr, b"\0"))
        fh.write(b"".join(struct.pack(">QQQQQIQ", int(tuple_ptr[i]), 0, 0, 0, *infos[i]) for i in range(n_prof)))
        fh.seek(idt_ptr)
        fh.write(idt)
    times = (1_600_000_000_000_000_000 + seed * 1_000_000, 1_600_000_000_000_000_000 + seed * 1_000_000 + 10**9)
    (run / "experiment.xml").write_text(_xml(ctx, app, variant, n_metrics, times), encoding="utf-8", newline="\n")
    if cct:
        _write_cct(run / "cct.db", ctx.n, cct_parts, major, cct_zeroed)
    if trace:
        _write_trace(run / "trace.db", ctx, n_cols, major, times)


def _write_cct(path: pathlib.Path, n_ctx: int, parts: list, major: int, zeroed: bool) -> None:
    """cct.db: per context (ids 0..n-1), (value, profile) pairs grouped by metric id, then (metric, index)
    pairs ending with 0x6564; ``zeroed`` writes every value block as zeros (the headers stay)."""
    ctx, mid, prof, val = (np.concatenate([p[i] for p in parts]) for i in range(4))
    order = np.lexsort((prof, mid, ctx))
    ctx, mid, prof, val = ctx[order], mid[order], prof[order], val[order]
    pos = 128 + _align(22 * n_ctx)
    infos, blocks = [], []
    bounds = np.searchsorted(ctx, np.arange(n_ctx + 1))
    for c in range(n_ctx):
        a, b = bounds[c], bounds[c + 1]
        if a == b:
            infos.append(struct.pack(">IQHQ", c, 0, 0, pos))
            continue
        cv = np.zeros(b - a, _CVAL)
        cv["value"], cv["prof"] = val[a:b], prof[a:b]
        starts = np.flatnonzero(np.r_[True, mid[a + 1 : b] != mid[a : b - 1]])
        mi = np.zeros(starts.size + 1, _MIDX)
        mi["metric"], mi["start"] = np.r_[mid[a:b][starts], END_MID], np.r_[starts, b - a]
        data = cv.tobytes() + mi.tobytes()
        blocks.append(bytes(len(data)) if zeroed else data)
        infos.append(struct.pack(">IQHQ", c, b - a, starts.size, pos))
        pos += len(data)
    head = struct.pack(">16sBBIHQQ", CCTDB_MAGIC, major, 0, n_ctx, 1, 22 * n_ctx, 128).ljust(128, b"\0")
    path.write_bytes(head + b"".join(infos).ljust(_align(22 * n_ctx), b"\0") + b"".join(blocks) + b"rtfBDTCC")


def _write_trace(path: pathlib.Path, ctx: Contexts, n_cols: int, major: int, times: tuple[int, int]) -> None:
    """trace.db: four samples per profile at leaf source lines (the XML's ``it`` ids)."""
    leaves = ctx.ids[[c for c, k in enumerate(ctx.kind) if k == _LINE]]
    hdrs, lines = [], []
    pos = 128 + _align(22 * n_cols)
    for col in range(n_cols):
        line = np.zeros(4, np.dtype([("t", ">u8"), ("ctx", ">u4")]))
        line["t"] = times[0] + np.arange(1, 5) * (times[1] - times[0]) // 5
        line["ctx"] = leaves[(np.arange(4) * 7 + col) % leaves.size]
        hdrs.append(struct.pack(">IHQQ", col + 1, 0, pos, pos + line.nbytes))
        lines.append(line.tobytes())
        pos += line.nbytes
    head = struct.pack(">16sBBIHQQQQ", TRACEDB_MAGIC, major, 0, n_cols, 1, 22 * n_cols, 128, *times)
    path.write_bytes(head.ljust(128, b"\0") + b"".join(hdrs).ljust(_align(22 * n_cols), b"\0") + b"".join(lines))
