"""Writer of HPCToolkit v4 databases (``meta.db`` + ``profile.db`` + ``cct.db``) from the synthetic model.

``write_hpctoolkit_v4_runs(out, nodes=, ranks=, threads=, runs=, seed=, ...)`` writes ``out/run-000`` ... like the
old-format writer (same trees, same metric seeds: the same arguments describe the same executions), in the
calling-context shape hpcprof (2022+) writes:

* entry point ``main thread`` -> function ``main`` (call); every call of the model tree is a source line of the
  caller (the call site, lexical) holding the callee's function context (relation call; inlined call for the
  ``std::`` templates; MPI routines are reached through an instruction context of the MPI library, relation
  call, as binary-only frames are);
* every function owns a statement line with (part of) its exclusive time; about a third of the solver
  functions also have a loop holding a second statement line and all their call sites; MPI routines' line is
  the ``[libmpi...]:0`` placeholder of a binary without line information;
* ``elide=True``: half of the statements carry their cost on an instruction child with a lexical relation,
  which hpcprof leaves out of meta.db (``elide()`` in its ``sinks/metadb.hpp``) but whose values it still writes
  to profile.db and cct.db: their cost is in the parent's execution and function values, as in real databases;
* ``threads > 1`` with ``app_threads=True``: threads 1.. run a copy of the tree under the entry point
  ``application thread`` (root function ``worker_thread_main``), thread 0 the one under ``main thread``;
  ``unknown_entry=True`` adds an ``unknown entry`` (instruction -> unknown function -> instruction, relation call)
  with a little cost on thread 0 of every rank;
* one metric ``REALTIME (sec)`` with the scopes point (raw cost), function (exclusive: along lexical edges, the
  context's ``propagation`` bit 0) and execution (inclusive), one sum statistic each (statMetricIds differ from
  the propMetricIds); the summary profile (profile 0) sums every thread; ctxId 0 holds the execution total;
* source files under ``/home/hpcuser/apps/<app>/src`` are copied into the database when ``copied_sources`` is
  ``"src"`` (stored as ``src/<absolute path>``, flag copied) or ``"outdir"`` (releases before mid-2023:
  ``<output dir given to hpcprof>/src/<absolute path>``); system headers and ``[module]`` placeholders never are;
* ctxIds are a seed-dependent permutation (a reader must not assume tree order) and profiles are in a
  seed-dependent order; ``layout="2022-pre"`` writes the layout of an hpcprof pre-release of 2022 (see
  :mod:`perflake.generators.hpctoolkit_v4_bytes`).

Everything is a pure function of the arguments: same arguments, same bytes.  :func:`plan_hpctoolkit_v4` returns
the model of one run (contexts and per-thread point values in integer microseconds) for tests.
"""
from __future__ import annotations

import pathlib
import zlib
from dataclasses import dataclass, field

import numpy as np

from . import hpctoolkit_v4_bytes as enc
from .calltree import CallTree, make_metrics, make_tree, perturb
from .names import MPI, ROOT_NAME, SOLVER, STD, category, source_location
from .size_limits import check_sizes

LAYOUTS = ("4.0", "2022-pre")
COPIED = (None, "src", "outdir")
LEXICAL, CALL, INLINED = 0, 1, 2
_APPS = ["lulesh2.0", "amg", "miniFE.x", "lmp", "nekbone", "xhpcg"]
_LIBMPI = "/opt/cray/pe/mpich/8.1.25/ofi/gnu/9.1/lib/libmpi_gnu_91.so.12.0.0"
_LIBC = "/usr/lib64/libc.so.6"
_STD_DIR = "/usr/include/c++/11/bits"
_THREAD_ROOT = "worker_thread_main"


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


@dataclass
class V4Plan:
    """One database: contexts in tree order (parents first), their ctxIds and per-location point values."""

    app: str
    exe: str
    src_dir: str
    locations: list[tuple[int, int]]  # (rank, thread) of each value column
    profile_order: list[int] = field(default_factory=list)  # column of profile 1, 2, ...
    ctx_id: np.ndarray = None  # int64 per context
    parent: list[int] = field(default_factory=list)  # index, -1 for an entry point
    kind: list[str] = field(default_factory=list)  # entry, function, loop, line, instruction
    relation: list[int] = field(default_factory=list)  # 0 lexical, 1 call, 2 inlined call, -1 entry point
    elided: list[bool] = field(default_factory=list)  # in profile.db/cct.db only
    entry_kind: list[int] = field(default_factory=list)  # 0 unknown, 1 main thread, 2 application thread; -1
    name: list[str | None] = field(default_factory=list)  # function name / entry point pretty name
    fn: list[tuple | None] = field(default_factory=list)  # function key (name, module, offset, file, line)
    file: list[str | None] = field(default_factory=list)  # original absolute path of a line/loop
    line: list[int] = field(default_factory=list)
    module: list[str | None] = field(default_factory=list)  # of an instruction/loop
    offset: list[int] = field(default_factory=list)
    model: list[int] = field(default_factory=list)  # model node of a function context, -1 otherwise
    point: np.ndarray = None  # int64 µs [context, column]
    _scopes: tuple | None = field(default=None, repr=False)

    def add(self, kind, parent, relation, *, name=None, fn=None, file=None, line=0, module=None, offset=0,
            model=-1, elided=False, entry_kind=-1) -> int:
        for col, v in ((self.kind, kind), (self.parent, parent), (self.relation, relation), (self.name, name),
                       (self.fn, fn), (self.file, file), (self.line, line), (self.module, module),
                       (self.offset, offset), (self.model, model), (self.elided, elided),
                       (self.entry_kind, entry_kind)):
            col.append(v)
        return len(self.kind) - 1

    def entries(self) -> list[int]:
        return [i for i, k in enumerate(self.kind) if k == "entry"]

    def function_key(self, i: int) -> tuple:
        return self.fn[i]

    def functions(self) -> list[tuple]:
        return [k for k in self.fn if k is not None]

    def modules(self) -> list[str]:
        mods = [m for m in self.module if m] + [k[1] for k in self.functions() if k[1]]
        return list(dict.fromkeys(mods))

    def files(self) -> list[str]:
        return list(dict.fromkeys([f for f in self.file if f] + [k[3] for k in self.functions() if k[3]]))

    def children(self, written_only: bool = False) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.kind]
        for i, p in enumerate(self.parent):
            if p >= 0 and not (written_only and self.elided[i]):
                kids[p].append(i)
        return kids

    def depth(self) -> np.ndarray:
        d = np.zeros(len(self.kind), np.int64)
        for i, p in enumerate(self.parent):
            d[i] = 0 if p < 0 else d[p] + 1
        return d

    def scopes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(point, function, execution) values [context, column] in µs: execution sums every descendant,
        function the descendants reached through lexical edges only (the exclusive cost)."""
        if self._scopes is None:
            point = self.point
            function, execution = point.copy(), point.copy()
            depth, parent = self.depth(), np.asarray(self.parent)
            lexical = np.asarray(self.relation) == LEXICAL
            for d in range(int(depth.max()), 0, -1):
                idx = np.flatnonzero(depth == d)
                np.add.at(execution, parent[idx], execution[idx])
                lex = idx[lexical[idx]]
                np.add.at(function, parent[lex], function[lex])
            self._scopes = (point, function, execution)
        return self._scopes


class _Builder:
    """Lays out the contexts of one entry point's copy of the model tree and records which model quantity each
    cost-carrying context holds."""

    def __init__(self, plan: V4Plan, tree: CallTree, elide: bool):
        self.plan, self.tree, self.elide = plan, tree, elide
        self.costs: list[tuple[int, int, int, np.ndarray]] = []  # (context, model node, part 0 A / 1 B, columns)
        self.has_loop = [category(nm) == SOLVER and nm != ROOT_NAME and _crc(nm + "#loop") % 1000 < 330
                         for nm in tree.names]

    def src(self, name: str) -> str:
        file = source_location(name)[0]
        return f"{_STD_DIR}/{file}" if category(name) == STD else f"{self.plan.src_dir}/{file}"

    def function_key(self, name: str) -> tuple:
        if category(name) == MPI:
            return name, _LIBMPI, 0x40000 + _crc(name) % 0x100000, None, 0
        return name, self.plan.exe, 0x1000 + _crc(name) % 0x400000, self.src(name), source_location(name)[1]

    def tree_under(self, entry: int, columns: np.ndarray, root_name: str) -> None:
        plan, tree = self.plan, self.tree
        container, used = {}, {}  # model node -> context holding its call sites; holder -> lines taken

        def free_line(holder: int, want: int) -> int:
            taken = used.setdefault(holder, set())
            while want in taken:
                want += 1
            taken.add(want)
            return want

        for k, p in enumerate(tree.parent.tolist()):
            name = root_name if p < 0 else tree.names[k]
            _, first, last = source_location(tree.names[k])
            if p < 0:
                at, rel = entry, CALL
            else:
                pname = tree.names[p]
                _, pf, pl = source_location(pname)
                want = pf + 1 + _crc(f"{pname}->{tree.names[k]}") % max(1, pl - pf - 1)
                holder = container[p]
                at = plan.add("line", holder, LEXICAL, file=self.src(pname), line=free_line(holder, want))
                rel = INLINED if category(name) == STD else CALL
                if category(name) == MPI:  # reached through a binary-only frame of the MPI library
                    at = plan.add("instruction", at, CALL, module=_LIBMPI, offset=0x8000 + _crc(name + "#w") % 4096)
            f = plan.add("function", at, rel, name=name, fn=self.function_key(name), model=k)
            container[k] = f
            if category(name) == MPI:
                stmt = plan.add("line", f, LEXICAL, file=f"[{_LIBMPI.rsplit('/', 1)[1]}]", line=0)
            else:
                want = first + 1 + _crc(name + "#stmt") % max(1, last - first)
                stmt = plan.add("line", f, LEXICAL, file=self.src(name), line=free_line(f, want))
            holder = stmt
            if self.elide and _crc(tree.names[k] + "#elide") % 2 == 0:  # the cost sits on an elided instruction
                mod = _LIBMPI if category(name) == MPI else plan.exe
                holder = plan.add("instruction", stmt, LEXICAL, module=mod, offset=0x10000 + _crc(name) % 65536,
                                  elided=True)
            self.costs.append((holder, k, 0, columns))
            if self.has_loop[k]:
                line = first + 1 + _crc(tree.names[k] + "#L") % max(1, last - first)
                loop = plan.add("loop", f, LEXICAL, file=self.src(name), line=line, module=plan.exe,
                                offset=0x2000 + _crc(name + "#L") % 0x300000)
                inner = plan.add("line", loop, LEXICAL, file=self.src(name), line=free_line(loop, line + 1))
                self.costs.append((inner, k, 1, columns))
                container[k] = loop


def plan_hpctoolkit_v4(nodes: int, ranks: int, *, threads: int = 1, seed: int = 0, run: int = 0,
                       elide: bool = True, app_threads: bool = True, unknown_entry: bool = True,
                       shuffle: bool = True) -> V4Plan:
    """The database of run ``run`` of ``write_hpctoolkit_v4_runs`` with these arguments."""
    if nodes < 1 or ranks < 1 or threads < 1 or run < 0 or seed < 0:
        raise ValueError("nodes, ranks and threads must be >= 1; run and seed >= 0")
    app = _APPS[seed % len(_APPS)]
    stem = app.split(".")[0]
    base = make_tree(nodes, seed=seed)
    tree = base if run == 0 else perturb(base, seed=seed * 1000 + run)
    m = make_metrics(tree, ranks, seed=seed * 1000 + run + 500, n_threads=threads, app_seed=seed)
    locations = [(r, t) for r in range(ranks) for t in range(threads)]
    plan = V4Plan(app=app, exe=f"/home/hpcuser/apps/{stem}/build/{app}", src_dir=f"/home/hpcuser/apps/{stem}/src",
                  locations=locations)
    thread_of = np.array([t for _, t in locations])
    split = app_threads and threads > 1
    b = _Builder(plan, tree, elide)
    main = plan.add("entry", -1, -1, name="main thread", entry_kind=1)
    b.tree_under(main, np.flatnonzero(thread_of == 0) if split else np.arange(len(locations)), ROOT_NAME)
    if split:
        worker = plan.add("entry", -1, -1, name="application thread", entry_kind=2)
        b.tree_under(worker, np.flatnonzero(thread_of > 0), _THREAD_ROOT)
    unknown = []
    if unknown_entry:
        entry = plan.add("entry", -1, -1, name="unknown entry", entry_kind=0)
        i1 = plan.add("instruction", entry, CALL, module=_LIBC, offset=0x29D90)
        f = plan.add("function", i1, CALL)  # an unknown function: no function record, no flex words
        i2 = plan.add("instruction", f, CALL, module=_LIBC, offset=0x11EA3C)
        unknown = [(i1, 1), (i2, 2)]
    n_ctx = len(plan.kind)
    point = np.zeros((n_ctx, len(locations)), np.int64)
    exc = m.exclusive
    part_a = np.where(np.asarray(b.has_loop)[:, None], exc // 3, exc)
    for ctx, k, part, cols in b.costs:
        point[ctx, cols] = (part_a[k] if part == 0 else exc[k] - part_a[k])[cols]
    for ctx, j in unknown:
        cols = np.flatnonzero(thread_of == 0)
        point[ctx, cols] = [200 + _crc(f"unknown{j}#{locations[c][0]}#{seed}") % 800 for c in cols]
    plan.point = point
    rng = np.random.default_rng(seed * 7919 + run)
    plan.ctx_id = (1 + (rng.permutation(n_ctx) if shuffle else np.arange(n_ctx))).astype(np.int64)
    order = rng.permutation(len(locations)) if shuffle else np.arange(len(locations))
    plan.profile_order = [int(c) for c in order]
    return plan


def stored_paths(plan: V4Plan, copied_sources: str | None, run_dir_name: str) -> dict[str, tuple[str, int]]:
    """Original file path -> (path stored in meta.db, flags): application sources copied into the database."""
    if copied_sources not in COPIED:
        raise ValueError(f"copied_sources must be one of {COPIED}")
    out = {}
    for f in plan.files():
        if copied_sources and f.startswith(plan.src_dir + "/"):
            prefix = "src" if copied_sources == "src" else f"hpctoolkit-{run_dir_name}-database/src"
            out[f] = (prefix + f, 1)
        else:
            out[f] = (f, 0)
    return out


def write_hpctoolkit_v4_runs(out_dir, *, nodes: int, ranks: int, threads: int = 1, runs: int = 1, seed: int = 0,
                             layout: str = "4.0", copied_sources: str | None = None, elide: bool = True,
                             app_threads: bool = True, unknown_entry: bool = True, shuffle: bool = True,
                             ranks_per_node: int = 16) -> list[pathlib.Path]:
    """Write ``runs`` HPCToolkit v4 databases ``out_dir/run-000`` ... and return their directories."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}")
    check_sizes(nodes=nodes, ranks=ranks, threads=threads, runs=runs, seed=seed)
    if ranks_per_node < 1:
        raise ValueError("ranks_per_node must be >= 1")
    out = pathlib.Path(out_dir)
    dirs = []
    for k in range(runs):
        plan = plan_hpctoolkit_v4(nodes, ranks, threads=threads, seed=seed, run=k, elide=elide,
                                  app_threads=app_threads, unknown_entry=unknown_entry, shuffle=shuffle)
        run_dir = out / f"run-{k:03d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        paths = stored_paths(plan, copied_sources, plan.app.split(".")[0])
        desc = (f"perflake synthetic {plan.app}: {nodes} model nodes, {ranks} ranks x {threads} threads, "
                f"seed {seed}, run {k}")
        (run_dir / "meta.db").write_bytes(enc.meta_db(plan, layout=layout, title=plan.app, description=desc,
                                                      file_paths=paths))
        (run_dir / "profile.db").write_bytes(enc.profile_db(plan, layout=layout, ranks_per_node=ranks_per_node))
        (run_dir / "cct.db").write_bytes(enc.cct_db(plan))
        dirs.append(run_dir)
    return dirs
