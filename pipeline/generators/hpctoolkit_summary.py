"""The parts of an old-layout HPCToolkit database that hpcprof (2019-2020, ``experiment.xml`` version 2.2) writes
when metric-db output is off: the summary values inline in experiment.xml, and the ``.hpctrace`` files.

Facts used (hpcprof's ``Prof::CCT::ANode::writeXML_pre``/``writeMetricsXML`` and ``xml::MakeAttrNum``,
hpcrun's ``hpctrace_fmt_hdr_outbuf``/``hpctrace_fmt_datum_outbuf``, and public databases of 2020-21):

* MetricTable: one ``:Sum (I)``/``(E)`` pair per raw metric, ids after the raw metrics' (2 x raw metrics x
  profiles), ``v="derived-incr"``, ``md`` "Sum over rank/thread of ...", ``o`` (-1 for the exclusive one),
  ``em``/``es``/``ep``, ``t``, ``partner``, ``show``, ``show-percent``, a ``combine`` and a ``finalize``
  MetricFormula and ``units`` Info; the MetricDBTable is empty; a TraceDBTable describes the traces
  (``u`` = 1000000000: nanoseconds, ``db-header-sz`` 32);
* CCT elements unindented, attributes ``i s l`` then ``lm f n`` (PF) / ``f`` (L) / ``it`` (S, the trace id);
  a node's metrics on the next line, ``<M n=.. v=../>`` concatenated, non-zero values only, ``%g``; an element
  with no child and no value is self-closing; the implicit root's values come first, (I) only;
* a trace file: ``HPCRUN-trace______`` ``01.01`` ``b`` + 8-byte flags (0: no data-centric ids), then
  big-endian records of a u64 time (ns) and the u32 ``it`` id of the sampled statement.

Our own: the embedded DTD is the generator's small subset (real files embed HPCToolkit's whole DTD), ``s``
ids are arbitrary, no ``v`` (address) attributes, the trace visits each statement with a cost once, in tree
order, for as long as its cost.
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

import numpy as np

TRACE_MAGIC = b"HPCRUN-trace______" + b"01.01" + b"b"
TRACE_HEADER = TRACE_MAGIC + bytes(8)  # flags: no data-centric metric ids, no LCA
_RECORD = np.dtype([("time", ">u8"), ("cp", ">u4")])
_EPOCH_NS = 1_600_000_000 * 10**9  # September 2020


@dataclass
class Traces:
    names: list[str] = field(default_factory=list)
    min_time: int = 0
    max_time: int = 0


def trace_id(element_id: int) -> int:
    """The ``it`` attribute (hpcrun's call-path id) of the statement with CCT id ``element_id``."""
    return 2 * element_id + 1


def _statements(layout) -> np.ndarray:
    return np.array([t[1] for t in layout.tokens if not isinstance(t, str) and t[0] == "S"], dtype=np.int64)


def write_traces(run_dir: pathlib.Path, layout, exc: np.ndarray, stems: list[str], *, seed: int) -> Traces:
    """One ``<stem>.hpctrace`` per location (column of ``exc``, microseconds per CCT row)."""
    stmt = _statements(layout)
    out = Traces()
    for col, stem in enumerate(stems):
        cost = exc[stmt - 1, col]
        keep = cost > 0
        t0 = _EPOCH_NS + (seed % 1000) * 10**9 + col * 1_000
        start = t0 + 1000 * np.concatenate([[0], np.cumsum(cost[keep])[:-1]]).astype(np.int64)
        rec = np.empty(int(keep.sum()), dtype=_RECORD)
        rec["time"], rec["cp"] = start, trace_id(stmt[keep])
        name = f"{stem}.hpctrace"
        (run_dir / name).write_bytes(TRACE_HEADER + rec.tobytes())
        out.names.append(name)
        if len(rec):
            out.min_time = min(out.min_time or int(start[0]), int(start[0]))
            out.max_time = max(out.max_time, int(start[-1]))
    return out


def _g(usec) -> str:
    return "%g" % (float(usec) / 1e6)


def _metric_table(first: int) -> str:
    out = []
    for j, (ie, kind, o) in enumerate((("I", "inclusive", "0"), ("E", "exclusive", "-1"))):
        i = first + j
        out.append(
            f'    <Metric i="{i}" n="CPUTIME (sec):Sum ({ie})" o="{o}" v="derived-incr" md="Sum over rank/thread of'
            f" {kind} 'CPUTIME (sec)'\" em=\"0\" es=\"0\" ep=\"0\" t=\"{kind}\" partner=\"{first + 1 - j}\""
            f' show="1" show-percent="1">\n'
            f'      <MetricFormula t="combine" frm="sum(${i}, ${i})"/>\n'
            f'      <MetricFormula t="finalize" frm="${i}"/>\n'
            f'      <Info><NV n="units" v="events"/></Info>\n    </Metric>\n')
    return "".join(out)


def summary_xml(layout, program: str, inc: np.ndarray, exc: np.ndarray, *, n_profiles: int, trace: Traces,
                doctype: str) -> str:
    """experiment.xml version 2.2 with the summary values ``inc``/``exc`` (microseconds per CCT row, summed
    over ranks and threads) inline, written in seconds."""
    from .hpctoolkit import _esc  # noqa: PLC0415 (hpctoolkit imports this module)

    first = 2 * n_profiles  # ids after the raw (I)/(E) metric of every profile
    modules, files, procs = layout.tables
    tab = lambda tag, t, extra=lambda k: "": "".join(  # noqa: E731
        f'    <{tag} i="{i}" n="{_esc(k)}"{extra(k)}/>\n' for k, i in t.items())
    placeholder = lambda k: ' f="1"' if k.startswith("<") and k.endswith(" root>") else ""  # noqa: E731
    head = (
        f'<?xml version="1.0"?>\n{doctype}<HPCToolkitExperiment version="2.2">\n'
        f'<Header n="{_esc(program)}">\n  <Info/>\n</Header>\n<SecCallPathProfile i="0" n="{_esc(program)}">\n'
        f"<SecHeader>\n  <MetricTable>\n{_metric_table(first)}  </MetricTable>\n"
        f"  <MetricDBTable>\n  </MetricDBTable>\n"
        f'  <TraceDBTable>\n    <TraceDB i="0" u="1000000000" db-glob="*.hpctrace" db-min-time="{trace.min_time}"'
        f' db-max-time="{trace.max_time}" db-header-sz="{len(TRACE_HEADER)}"/>\n  </TraceDBTable>\n'
        f"  <LoadModuleTable>\n{tab('LoadModule', modules)}  </LoadModuleTable>\n"
        f"  <FileTable>\n{tab('File', files)}  </FileTable>\n"
        f"  <ProcedureTable>\n{tab('Procedure', procs, placeholder)}  </ProcedureTable>\n  <Info/>\n</SecHeader>\n"
        f'<SecCallPathProfileData>\n<M n="{first}" v="{_g(inc[0])}"/>\n'
    )
    out = [head]
    for t in layout.tokens:
        if isinstance(t, str):
            out.append(t)
            continue
        tag, i, attrs, _, proc = t
        vi, ve = int(inc[i - 1]), int(exc[i - 1])
        values = (f'<M n="{first}" v="{_g(vi)}"/>' if vi else "") + (f'<M n="{first + 1}" v="{_g(ve)}"/>' if ve else "")
        s = proc if tag == "PF" else i + 7
        it = f' it="{trace_id(i)}"' if tag == "S" else ""
        if tag == "S" and not values:  # a leaf without values
            out.append(f'<S i="{i}" s="{s}"{attrs}{it}/>\n')
        elif tag == "S":
            out.append(f'<S i="{i}" s="{s}"{attrs}{it}>\n{values}\n</S>\n')
        else:
            out.append(f'<{tag} i="{i}" s="{s}"{attrs}>\n' + (f"{values}\n" if values else ""))
    out.append("</SecCallPathProfileData>\n</SecCallPathProfile>\n</HPCToolkitExperiment>\n")
    return "".join(out)
