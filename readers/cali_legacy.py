"""Caliper ``.cali`` streams from before the NESTED property and the ``globals`` record (Caliper 1.x, 2016).

What such a stream holds (Caliper's git history: ``src/services/recorder/Recorder.cpp``, ``src/common/Node.cpp``,
``src/common/ContextRecord.cpp``, ``src/common/csv/CsvSpec.cpp``, and the stream Caliper 1.5.dev wrote for its
own documentation, ``doc/sphinx/examples/160809-094411_72298_fuu1NeAHT2US.cali`` with ``doc/tools.rst``):

* the same line grammar and records (``__rec=node`` with ``id``, ``attr``, ``data``, ``parent``; ``__rec=ctx``
  with ``ref``, ``attr``, ``data``), but no ``__rec=globals``: run information such as
  ``cali.caliper.version`` is a *process*-scope attribute whose node every snapshot references;
* the predefined nodes were 0-10 only: the first node Caliper created got id 11 (a property node, where newer
  readers predefine the ``ptr`` type), and the stream writes nodes 0-10 again itself (handled by
  :mod:`perflake.readers.cali_format`, which re-binds ids as caliper-reader does);
* no NESTED flag: every begin/set/end annotation attribute (default thread scope, property 20) is a node of one
  context tree, nested across attributes in begin order (``main=body/loop``, ``iteration=0``,
  ``factorial=init`` below it); the event service adds trigger attributes (``event.begin#<attr>``,
  ``event.set#<attr>``, ``event.end#<attr>``, ``cali.snapshot.event.*``; SKIP_EVENTS, property 64) and
  hidden bookkeeping (``cali.lvl.*``, ``offs.*``; property 128);
* the timer's ``time.inclusive.duration`` (uint, unit in the ``time.unit`` metadata, ``usec``) is recorded at
  the snapshot that ends or replaces a region, whose context is that region: per context node, the sum is the
  region's inclusive time;
* the ``trace`` service writes one snapshot per event (no aggregation); Caliper's ``cali-query`` expands them
  to ``main=body/init,...`` and ``cali-print`` shows every attribute that is neither Caliper-internal
  (``cali.*``) nor an event trigger.

Neither caliper-reader nor Hatchet gives such records a ``path`` (Hatchet's reader then drops every record).
perflake reads the context tree as the call path, following the rules below; a stream is treated so only when
it has no ``globals`` record and defines no NESTED attribute, which every newer Caliper stream does.
"""

from __future__ import annotations

from perflake.errors import ReaderError
from perflake.readers.cali_format import NAME_ATTR, NESTED, PROP_ATTR, TYPE_ATTR, Attribute, CaliFile, typed

SKIP_EVENTS, GLOBAL = 64, 512
SCOPE_MASK, SCOPE_PROCESS = 60, 12
_TRIGGERS = ("event.begin#", "event.set#", "event.end#")


def is_legacy(cf: CaliFile) -> bool:
    """No ``globals`` record and no attribute with the NESTED property (the nearest property node above an
    attribute node holds its flags; the flags found above each node are remembered, so that attributes below
    one long metadata chain cost one walk)."""
    if cf.globals:
        return False
    nodes, flags = cf.nodes, {-1: 0}  # node -> flags of the nearest property node at or above it (0: none)
    for aid, _value, parent in nodes.values():
        if aid != NAME_ATTR:
            continue
        path = []
        while parent not in flags:
            pattr, pvalue, up = nodes[parent]
            if pattr == PROP_ATTR:
                flags[parent] = int(pvalue) if pvalue.isdigit() and len(pvalue) < 20 else 0
                break
            path.append(parent)
            parent = up
        for n in path:
            flags[n] = flags[parent]
        if flags[parent] & NESTED:
            return False
    return True


def is_frame(attr: Attribute) -> bool:
    """A context annotation: not a value, not hidden, not event information, not run information."""
    return not (attr.is_value or attr.is_hidden or attr.prop & (SKIP_EVENTS | GLOBAL)
                or attr.prop & SCOPE_MASK == SCOPE_PROCESS or attr.name.startswith(("cali.",) + _TRIGGERS))


def is_run_info(attr: Attribute) -> bool:
    """Run information: a process-scope or GLOBAL attribute that is no value, not hidden, no event information."""
    return (not (attr.is_value or attr.is_hidden or attr.prop & SKIP_EVENTS or attr.name.startswith(_TRIGGERS))
            and (attr.prop & GLOBAL or attr.prop & SCOPE_MASK == SCOPE_PROCESS))


def record_globals(cf: CaliFile, skip: frozenset = frozenset()) -> dict:
    """Run metadata of a legacy stream: the run-information attributes on the records' context chains, typed as
    ``globals`` are; an attribute seen with several values becomes the list of its distinct values in file
    order.  Attributes named in ``skip`` (those that steer the reader, e.g. ``mpi.rank``) are left out."""
    found: dict[str, tuple[Attribute, list[str]]] = {}
    seen: set[int] = set()  # nodes already looked at (a chain is walked up to the first of them)
    for line, refs, _attrs, _values in cf.records:
        try:
            for ref in refs:
                _chain_run_info(cf, ref, skip, seen, found)
        except ReaderError as exc:
            raise cf.at_line(line, exc) from None
    out = {}
    for name, (attr, values) in found.items():
        typed_values = [typed(attr, v) for v in values]
        out[name] = typed_values[0] if len(typed_values) == 1 else typed_values
    return out


def _chain_run_info(cf: CaliFile, ref: int, skip: frozenset, seen: set, found: dict) -> None:
    nodes, chain = cf.nodes, []
    while ref >= 0 and ref not in seen:
        seen.add(ref)
        chain.append(ref)
        ref = nodes[ref][2]
    for nid in reversed(chain):
        aid, value, _ = nodes[nid]
        if aid in (NAME_ATTR, TYPE_ATTR, PROP_ATTR):
            continue
        attr = cf.attribute(aid)
        if attr.name not in skip and is_run_info(attr):
            values = found.setdefault(attr.name, (attr, []))[1]
            if value not in values:
                values.append(value)
