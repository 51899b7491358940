"""Writer of HPCToolkit databases in the old layout (``experiment.xml`` + ``*.metric-db``) from the synthetic model.

Each run directory holds ``experiment.xml`` and one ``1.<exe>-<rank>-<thread>-<hostid>-<pid>-0.metric-db`` per
rank and thread (formats.md section 1); with ``metric_db=False``, as hpcprof of 2019-2020 writes it with
metric-db output off, ``experiment.xml`` (version 2.2) and one ``<exe>-<rank>-<thread>-<hostid>-<pid>-0.hpctrace``
per rank and thread instead (:mod:`perflake.generators.hpctoolkit_summary` writes those parts).  The
calling-context tree is HPCToolkit's shape:

* ``<program root>`` (libmonitor) -> call site (line 0) -> ``main``; every call of the model tree is a call site
  ``C`` (line inside the caller) holding the callee's procedure frame ``PF``;
* every procedure frame owns one statement ``S`` with (part of) its exclusive time; about a third of the
  solver frames also have a loop ``L`` holding a second statement and all their call sites, so the database has
  the PF > L > S nesting of real code (where Hatchet double counts exclusive time: formats.md B.2);
* ``nested_loops`` (the default without metric-db files): each such loop holds an inner loop with a third
  statement and the call sites, and the outer loop has cost of its own that no statement carries (as loops
  in real 2020-21 databases do);
* metric-db columns ``CPUTIME (usec) (I)`` and ``(E)`` with HPCToolkit's nested semantics (hpcprof's
  ``aggregateMetricsExcl``): (E) of a PF is its whole body's cost at any loop depth, (E) of a loop its own cost
  and its direct statements, (E) of a call site 0, (I) of any node its own cost plus its children's (I), of a
  call site its callee's (I); row 0 is the implicit root (node id 1).

Everything is a pure function of the arguments (no clock, no host facts): same seed, same bytes.
"""
from __future__ import annotations

import pathlib
import re
import zlib

import numpy as np

from .calltree import CallTree, Metrics, make_metrics, make_tree, perturb
from .names import MPI, ROOT_NAME, SOLVER, category, source_location
from .size_limits import check_sizes

MAGIC = b"HPCPROF-metricdb__00.10b"
HEADER_SZ = len(MAGIC)  # what db-header-sz says; the two u32 counts follow it
_APPS = ["lulesh2.0", "amg", "miniFE.x", "lmp", "nekbone", "xhpcg"]
_MONITOR = "/opt/hpctoolkit/2023.08.1/lib/hpctoolkit/ext-libs/libmonitor.so.0.0.0"
_MONITOR_2020 = "/opt/hpctoolkit/2020.08.03/lib/hpctoolkit/ext-libs/libmonitor.so.0.0.0"  # the summary-only layout
_LIBMPI = "/opt/cray/pe/mpich/8.1.25/ofi/gnu/9.1/lib/libmpi_gnu_91.so.12.0.0"
_UNKNOWN_FILE = "<unknown file>"
_DB_RE = re.compile(r"\.(?:metric-db|hpctrace)$")
# our own minimal internal DTD subset (real databases embed the full HPCToolkit DTD)
_DOCTYPE = """<!DOCTYPE HPCToolkitExperiment [
<!ELEMENT HPCToolkitExperiment (Header, SecCallPathProfile*)>
<!ATTLIST HPCToolkitExperiment version CDATA #REQUIRED>
<!ATTLIST Pr a (1|0) "0">
]>
"""
# component rows of the value matrix: 0 = zero, then one block of n rows per quantity: inclusive, exclusive,
# statement A (in the PF), statement B (in the loop), loop inclusive, loop exclusive (own + B), statement C
# (in the inner loop), inner loop inclusive
_ZERO, _INC, _EXC, _SA, _SB, _LINC, _LEXC, _SC, _L2INC = range(9)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


class _Layout:
    """The XML elements and, for every CCT id, which component gives its (I) and (E) values.

    ``tokens`` holds the CCT in document order: an element is (tag, id, attributes after ``s``, self-closing,
    procedure table id or 0), a closing tag is its text."""

    def __init__(self, tree: CallTree, app: str, loop_share: float = 0.33, nested: bool = False,
                 monitor: str = _MONITOR):
        n = len(tree)
        self.nested = nested
        exe = f"/home/hpcuser/apps/{app.split('.')[0]}/build/{app}"
        modules, files, procs = {}, {}, {}

        def table_id(table: dict, key: str) -> int:
            return table.setdefault(key, len(table) + 1)

        self.has_loop = np.array([category(nm) == SOLVER and nm != ROOT_NAME
                                  and (_crc(nm + "#loop") % 1000) < loop_share * 1000 for nm in tree.names])
        idx_i, idx_e = [(_INC, 0)], [(_ZERO, 0)]  # id 1: the implicit root
        out = []
        next_id = [2]

        def element(tag: str, attrs: str, inc: tuple, exc: tuple, close: bool = False, proc: int = 0) -> None:
            i = next_id[0]
            next_id[0] += 1
            idx_i.append(inc)
            idx_e.append(exc)
            out.append((tag, i, attrs, close, proc))

        def proc_frame(name: str, module: str, file: str, line: int, inc: tuple, exc: tuple) -> None:
            proc = table_id(procs, name)
            attrs = f' l="{line}" lm="{table_id(modules, module)}" f="{table_id(files, file)}" n="{proc}"'
            element("PF", attrs, inc, exc, proc=proc)

        closing = "</L>\n</L>\n" if nested else "</L>\n"

        proc_frame("<program root>", monitor, _UNKNOWN_FILE, 0, (_INC, 0), (_ZERO, 0))
        stack: list[int] = []  # open model nodes
        parents = tree.parent.tolist()
        depth = tree.depth.tolist()
        for k in range(n):
            while stack and depth[stack[-1]] >= depth[k]:
                out.append(closing if self.has_loop[stack.pop()] else "")
                out.append("</PF>\n</C>\n")
            name = tree.names[k]
            src, first, last = source_location(name)
            is_mpi = category(name) == MPI
            p = parents[k]
            if p < 0:
                call_line = 0
            else:
                _, pf, pl = source_location(tree.names[p])
                call_line = pf + 1 + _crc(f"{tree.names[p]}->{name}") % max(1, pl - pf - 1)
            element("C", f' l="{call_line}"', (_INC, k), (_ZERO, 0))
            file = _UNKNOWN_FILE if is_mpi else src
            proc_frame(name, _LIBMPI if is_mpi else exe, file, 0 if is_mpi else first, (_INC, k), (_EXC, k))
            stmt = 0 if is_mpi else first + 1 + _crc(name + "#stmt") % max(1, last - first)
            element("S", f' l="{stmt}"', (_SA, k), (_SA, k), close=True)
            if self.has_loop[k]:
                loop = first + 1 + _crc(name + "#L") % max(1, last - first)
                f_id = table_id(files, file)
                element("L", f' l="{loop}" f="{f_id}"', (_LINC, k), (_LEXC if nested else _SB, k))
                element("S", f' l="{loop + 1}"', (_SB, k), (_SB, k), close=True)
                if nested:  # the call sites go into the inner loop
                    element("L", f' l="{loop + 2}" f="{f_id}"', (_L2INC, k), (_SC, k))
                    element("S", f' l="{loop + 3}"', (_SC, k), (_SC, k), close=True)
            stack.append(k)
        while stack:
            out.append(closing if self.has_loop[stack.pop()] else "")
            out.append("</PF>\n</C>\n")
        out.append("</PF>\n")
        self.n_ids = next_id[0] - 1
        self.tokens = out
        self.comp_i = np.array([c * n + k for c, k in idx_i], dtype=np.int64)
        self.comp_e = np.array([c * n + k for c, k in idx_e], dtype=np.int64)
        self.tables = (modules, files, procs)
        # PF + S (+ L + S, + L + S nested): what a reader builds
        self.n_frames = 1 + 2 * n + (4 if nested else 2) * int(self.has_loop.sum())

    @property
    def body(self) -> str:
        """The CCT as the metric-db layout writes it (no inline values)."""
        return "".join(t if isinstance(t, str) else
                       f'<{t[0]} i="{t[1]}" s="{t[1] + 7}"{t[2]}{"/" if t[3] else ""}>\n' for t in self.tokens)

    def components(self, m: Metrics) -> np.ndarray:
        """[9 * n, columns] int64: zero, inclusive, exclusive, statements A and B, loop inclusive and exclusive,
        statement C, inner loop inclusive.  Nested: A = E/3, the loop's own cost E/7, C = E/4, B the rest."""
        exc, inc = m.exclusive, m.inclusive
        loop = self.has_loop[:, None]
        sa = np.where(loop, exc // 3, exc)
        own = np.where(loop, exc // 7, 0) if self.nested else np.zeros_like(exc)
        sc = np.where(loop, exc // 4, 0) if self.nested else np.zeros_like(exc)
        sb = exc - sa - own - sc
        return np.concatenate([np.zeros_like(exc), inc, exc, sa, sb, inc - sa, own + sb, sc, inc - sa - own - sb])

    def xml(self, program: str, total: int) -> str:
        modules, files, procs = self.tables
        tab = lambda tag, t: "".join(f'    <{tag} i="{i}" n="{_esc(k)}"/>\n' for k, i in t.items())  # noqa: E731
        metrics = "".join(
            f'    <Metric i="{2 + j}" n="CPUTIME (usec):Sum ({ie})" v="derived-incr" t="{kind}" partner="{3 - j}"'
            f' show="1" show-percent="1">\n      <Info><NV n="units" v="events"/></Info>\n    </Metric>\n'
            for j, (ie, kind) in enumerate((("I", "inclusive"), ("E", "exclusive"))))
        dbs = "".join(
            f'    <MetricDB i="{j}" n="CPUTIME (usec) ({ie})" t="{kind}" partner="{1 - j}" db-glob="*.metric-db"'
            f' db-id="{j}" db-num-metrics="2" db-header-sz="{HEADER_SZ}"/>\n'
            for j, (ie, kind) in enumerate((("I", "inclusive"), ("E", "exclusive"))))
        return (
            f'<?xml version="1.0"?>\n{_DOCTYPE}<HPCToolkitExperiment version="2.0">\n'
            f'<Header n="{_esc(program)}">\n  <Info/>\n</Header>\n<SecCallPathProfile i="0" n="{_esc(program)}">\n'
            f"<SecHeader>\n  <MetricTable>\n{metrics}  </MetricTable>\n  <MetricDBTable>\n{dbs}  </MetricDBTable>\n"
            f"  <LoadModuleTable>\n{tab('LoadModule', modules)}  </LoadModuleTable>\n"
            f"  <FileTable>\n{tab('File', files)}  </FileTable>\n"
            f"  <ProcedureTable>\n{tab('Procedure', procs)}  </ProcedureTable>\n  <Info/>\n</SecHeader>\n"
            f'<SecCallPathProfileData>\n<M n="2" v="{total}"/>\n{self.body}'
            f"</SecCallPathProfileData>\n</SecCallPathProfile>\n</HPCToolkitExperiment>\n"
        )


def write_hpctoolkit_runs(out_dir, *, nodes: int, ranks: int, runs: int = 1, seed: int = 0,
                          threads: int = 1, metric_db: bool = True,
                          nested_loops: bool | None = None) -> list[pathlib.Path]:
    """Write ``runs`` HPCToolkit databases ``out_dir/run-000`` ... and return their directories.

    Run 0 profiles ``make_tree(nodes, seed=seed)``, run k > 0 ``perturb(base, seed=seed * 1000 + k)``; the
    metric seeds are those of the TAU writer, so the same arguments describe the same executions.
    ``metric_db=False``: no metric-db files, the summary values (sums over ranks and threads, in seconds) inline
    in experiment.xml version 2.2, and ``.hpctrace`` files.  ``nested_loops`` (default: ``not metric_db``):
    loops hold an inner loop and have cost of their own.
    """
    check_sizes(nodes=nodes, ranks=ranks, threads=threads, runs=runs, seed=seed)
    nested = (not metric_db) if nested_loops is None else bool(nested_loops)
    out = pathlib.Path(out_dir)
    app = _APPS[seed % len(_APPS)]
    base = make_tree(nodes, seed=seed)
    run_dirs: list[pathlib.Path] = []
    for k in range(runs):
        tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
        m = make_metrics(tree, ranks, seed=seed * 1000 + k + 500, n_threads=threads, app_seed=seed)
        layout = _Layout(tree, app, nested=nested, monitor=_MONITOR if metric_db else _MONITOR_2020)
        comps = layout.components(m)
        inc, exc = comps[layout.comp_i], comps[layout.comp_e]  # [n_ids, columns]
        run_dir = out / f"run-{k:03d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        locations = []
        for col in range(ranks * threads):
            rank, thread = divmod(col, threads)
            hostid = 0xA8C00000 + (seed * 37 + rank // 64) % 0x10000
            pid = 10_000 + (seed * 7919 + rank * 131 + k * 17) % 50_000
            locations.append((rank, thread, f"{app}-{rank:06d}-{thread:03d}-{hostid:08x}-{pid}-0"))
        written = set()
        if metric_db:
            xml = layout.xml(app, int(m.inclusive[0].sum()))
            header = MAGIC + np.array([layout.n_ids, 2], dtype=">u4").tobytes()
            for col, (_, _, stem) in enumerate(locations):
                name = f"1.{stem}.metric-db"
                rows = np.empty((layout.n_ids, 2), dtype=">f8")
                rows[:, 0], rows[:, 1] = inc[:, col], exc[:, col]
                (run_dir / name).write_bytes(header + rows.tobytes())
                written.add(name)
        else:
            from .hpctoolkit_summary import summary_xml, write_traces  # noqa: PLC0415 (it imports _esc from here)

            traces = write_traces(run_dir, layout, exc, [stem for _, _, stem in locations], seed=seed * 1000 + k)
            written.update(traces.names)
            xml = summary_xml(layout, app, inc.sum(axis=1), exc.sum(axis=1), n_profiles=len(locations),
                              trace=traces, doctype=_DOCTYPE)
        (run_dir / "experiment.xml").write_text(xml, encoding="utf-8", newline="\n")
        for stale in run_dir.iterdir():  # files of an earlier, larger run in the same place
            if _DB_RE.search(stale.name) and stale.name not in written and stale.is_file():
                stale.unlink()
        run_dirs.append(run_dir)
    return run_dirs
