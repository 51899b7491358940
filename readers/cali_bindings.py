"""Node-id bindings of a Caliper ``.cali`` stream while it is read (see :mod:`perflake.readers.cali_format`).

``CaliFile.nodes`` is keyed by *internal* ids.  A node's first definition keeps its file id; a definition of an
id already bound to other content gets a fresh internal id from :data:`FRESH` (above every u64 file id) and the
file id is re-bound to it.  Parents are bound at definition, attributes at first use, ``attr=`` ids of records
through the latest attribute definition -- as caliper-reader (``caliperreader.metadatadb``) binds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflake.readers.base import shown

if TYPE_CHECKING:
    from perflake.readers.cali_format import CaliFile

NAME_ATTR = 8  # cali.attribute.name: a node of this attribute defines an attribute
INV_ID = 2**64 - 1  # CALI_INV_ID: node ids are below it
FRESH = 2**64  # internal ids of re-defined nodes (never a file's id)
CACHED = 1 << 16  # ref= and attr= texts whose ids are remembered (a profile's records are distinct: bounded)


def values(raw) -> list[str]:
    """The values of a raw field (``v1=v2`` text, or the unescaped tuple of a line with backslashes)."""
    return raw.split("=") if isinstance(raw, str) else list(raw)


class Bindings:
    """Node ids as the stream binds them while it is read (see the module docstring).

    ``cf.nodes`` is keyed by *internal* ids: a node's first definition keeps its file id, a re-definition
    gets a fresh id from :data:`FRESH` up and the file id is re-bound to it (``remap``).  A parent is the
    node bound to the parent id when the child is defined.  A node's attribute id stays the file id until the
    node is *used* (a record references it or a descendant): then it becomes the node bound to that id at
    that moment, as caliper-reader resolves it; nodes no record uses are resolved at the end."""

    def __init__(self, cf: CaliFile):
        self.cf = cf
        self.remap: dict[int, int] = {}  # file id -> internal id of its current definition (re-defined ids)
        self.attr_remap: dict[int, int] = {}  # file id -> its latest attribute definition, where re-defined
        self.used: set[int] = set(cf.nodes)  # internal ids whose attribute id is resolved
        self.late: dict[int, int] = {}  # internal id -> line, nodes defined before their attribute
        self.known_refs: dict = {}  # raw ref= value -> internal ids, all used
        self.known_attrs: dict = {}  # raw attr= value -> internal ids
        self.fresh = FRESH

    def define(self, lineno: int, nid: int, aid: int, value: str, parent: int) -> None:
        nodes, remap = self.cf.nodes, self.remap
        if parent >= 0:
            parent = remap.get(parent, parent)
        forward = aid not in nodes
        cur = remap.get(nid, nid)
        old = nodes.get(cur)
        if old is None:
            internal = nid
        else:
            # the same node written again (a 2016 stream writes the bootstrap nodes 0-10 itself): nothing new
            attr_now = remap.get(aid, aid) if cur in self.used else aid
            if old == (attr_now, value, parent):
                return
            internal, self.fresh = self.fresh, self.fresh + 1
            remap[nid] = internal
            self.cf.origin[internal] = (nid, lineno)
            self.known_refs.clear()
            self.known_attrs.clear()
            self.cf.redefined += 1
        nodes[internal] = (aid, value, parent)
        if forward:
            self.late[internal] = lineno
        if aid == NAME_ATTR and internal != nid:  # caliper-reader's attributes_by_id follows attribute nodes only
            self.attr_remap[nid] = internal

    def _ids(self, lineno: int, key: str, raw, remap: dict) -> tuple[int, ...]:
        try:
            got = tuple(map(int, values(raw)))
        except ValueError:
            raise self.cf.error(lineno, f"{key}= holds {shown(raw)}, expected node ids") from None
        nodes = self.cf.nodes
        missing = [n for n in got if n not in nodes]
        if missing:
            problem = f"the record refers to node {shown(missing[0])}, which is not defined before it"
            raise self.cf.error(lineno, problem)
        return tuple(remap.get(n, n) for n in got) if remap else got

    def attrs(self, lineno: int, raw) -> tuple[int, ...]:
        got = self.known_attrs.get(raw)
        if got is None:
            if len(self.known_attrs) >= CACHED:
                self.known_attrs.clear()
            got = self.known_attrs[raw] = self._ids(lineno, "attr", raw, self.attr_remap)
        return got

    def refs(self, lineno: int, raw) -> tuple[int, ...]:
        got = self.known_refs.get(raw)
        if got is None:
            if len(self.known_refs) >= CACHED:
                self.known_refs.clear()
            got = self._ids(lineno, "ref", raw, self.remap)
            for ref in got:
                self._use(lineno, ref)
            self.known_refs[raw] = got
        return got

    def _use(self, lineno: int, nid: int) -> None:
        """Resolve the attributes of ``nid`` and its ancestors (those not used before)."""
        nodes, used, remap, late = self.cf.nodes, self.used, self.remap, self.late
        while nid >= 0 and nid not in used:
            aid, value, parent = nodes[nid]
            if nid in late and aid not in nodes:
                problem = f"the record uses the node of line {late[nid]}, whose attribute {shown(aid)} is undefined"
                raise self.cf.error(lineno, problem)
            if aid in remap:
                nodes[nid] = (remap[aid], value, parent)
            used.add(nid)
            nid = parent

    def finish(self) -> None:
        """Resolve the attribute ids of the nodes no record used, with the final bindings."""
        nodes, used, remap, late = self.cf.nodes, self.used, self.remap, self.late
        for nid, line in late.items():
            if nid not in used and nodes[nid][0] not in nodes:
                raise self.cf.error(line, f"the node's attribute node {shown(nodes[nid][0])} is never defined")
        if remap:
            for nid, (aid, value, parent) in nodes.items():
                if aid in remap and nid not in used:
                    nodes[nid] = (remap[aid], value, parent)
