"""Caliper ``.cali`` streams written line by line as Caliper's recorders wrote them (for tests of old streams).

Two writers, both simulating one Caliper process: a metadata tree whose node ids are given in creation order
(a child with the same attribute and value under the same parent is reused, as Caliper's tree does), and a
recorder that writes every node before the first line that uses it.

* :func:`trace_2016` -- Caliper 1.5 (2016) with the ``event``, ``recorder``, ``timestamp`` and ``trace``
  services, laid out as the stream Caliper's documentation ships (``doc/sphinx/examples/160809-094411_72298_
  fuu1NeAHT2US.cali``; see ``perflake.readers.cali_legacy``): the predefined nodes were 0-10, so the first node
  Caliper creates is 11 (a property node: newer readers predefine 11 as the ``ptr`` type, the stream defines it
  again differently); the stream writes nodes 0-10 itself, then every attribute in name order with its
  ancestors (parents first, not its own attribute: the ``time.unit=usec`` metadata node comes before the
  ``time.unit`` attribute), then per snapshot the nodes it references and the ``__rec=ctx`` line.  Values are
  written unescaped, as 2016's ``CsvSpec::write_record`` did (the names used here need no escape).  Annotation
  attributes have thread scope (property 20) and no NESTED flag; each begin/set/end makes a snapshot
  referencing the event-information chain, the context node and ``cali.caliper.version``; end and set carry
  ``time.inclusive.duration`` (usec) of the region that ends.  No ``globals`` record.
* :func:`profile_2x` -- a Caliper 2.x aggregated profile of one MPI rank: nested ``region``/``function``
  attributes (property 276), ``sum#time.duration`` and ``count`` values, ``mpi.rank``, a ``globals`` record;
  nodes from id 12 up, a node's attribute and parent written before it (``CaliWriter``); escapes as Caliper.

:func:`concatenate` and :func:`interleave` put several process streams in one file (``cat`` of per-process
files; several processes writing one stream line by line), which re-defines node ids.  Same arguments, same
text.
"""

from __future__ import annotations

import random

USR, INT, UINT, STRING = 0, 1, 2, 3
NAME, PROP = 8, 10
_BOOT_2016 = [(0, 9, "usr", -1), (1, 9, "int", -1), (2, 9, "uint", -1), (3, 9, "string", -1), (4, 9, "addr", -1),
              (5, 9, "double", -1), (6, 9, "bool", -1), (7, 9, "type", -1), (8, 8, "cali.attribute.name", 3),
              (9, 8, "cali.attribute.type", 7), (10, 8, "cali.attribute.prop", 1)]
_WORDS = ["init", "solve", "comm", "io", "setup", "loop", "halo", "reduce", "pack", "body", "finalize", "mesh"]


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace("\n", "\\n")


class _Process:
    """One Caliper process: its metadata tree and the lines its recorder has written."""

    def __init__(self, first_id: int, *, attribute_first: bool, escaped: bool):
        self.nodes: dict[int, tuple[int, str, int]] = {}
        self._index: dict[tuple, int] = {}
        self.next_id = first_id
        self.written: set[int] = set(range(first_id))
        self.attribute_first = attribute_first
        self.escaped = escaped
        self.lines: list[str] = []

    def node(self, attr: int, data: str, parent: int = -1) -> int:
        key = (parent, attr, data)
        nid = self._index.get(key)
        if nid is None:
            nid = self._index[key] = self.next_id
            self.next_id += 1
            self.nodes[nid] = (attr, data, parent)
        return nid

    def attribute(self, name: str, type_node: int, prop: int, meta: tuple = ()) -> int:
        parent = type_node
        for attr, value in meta:
            parent = self.node(attr, value, parent)
        return self.node(NAME, name, self.node(PROP, str(prop), parent))

    def write(self, nid: int) -> None:
        if nid in self.written:
            return
        attr, data, parent = self.nodes[nid]
        if self.attribute_first:
            self.write(attr)
        if parent >= 0:
            self.write(parent)
        self.written.add(nid)
        text = escape(data) if self.escaped else data
        self.lines.append(f"__rec=node,id={nid},attr={attr},data={text}" + (f",parent={parent}" if parent >= 0 else ""))

    def record(self, kind: str, refs: list[int], attrs: list[int] = (), values: list[str] = ()) -> None:
        for n in list(refs) + list(attrs):
            self.write(n)
        line = f"__rec={kind}"
        if refs:
            line += ",ref=" + "=".join(map(str, refs))
        if attrs:
            line += ",attr=" + "=".join(map(str, attrs)) + ",data=" + "=".join(values)
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def trace_2016(seed: int, *, regions: int = 12, attributes: int = 2, iterations: int = 3,
               version: str = "1.5.dev") -> str:
    """An event trace of a program with ``regions`` begin/end regions over ``attributes`` annotation
    attributes (``main``, ``phase``, ...), one of them a loop that sets ``iteration`` 0..``iterations``-1."""
    rng = random.Random(seed)
    p = _Process(11, attribute_first=False, escaped=False)
    p.attribute("cali.key.attribute", USR, 148)  # the first node Caliper 1.5 creates: id 11 (a property node)
    ver = p.node(p.attribute("cali.caliper.version", STRING, 12), version)
    level = p.attribute("cali.snapshot.event.attr.level", UINT, 84)
    event = {k: p.attribute(f"cali.snapshot.event.{k}", UINT, 84) for k in ("begin", "set", "end")}
    triggers: dict[int, dict[str, int]] = {}

    def annotation(name: str, type_node: int) -> int:  # the event service adds trigger attributes to each
        aid = p.attribute(name, type_node, 20)
        triggers[aid] = {k: p.attribute(f"event.{k}#{name}", type_node, 84) for k in ("begin", "set", "end")}
        p.attribute(f"cali.lvl.{aid}", INT, 213)
        return aid

    unit = annotation("time.unit", STRING)
    p.attribute("time.timestamp", UINT, 77, ((unit, "sec"),))
    p.attribute("time.offset", UINT, 213, ((unit, "usec"),))
    inclusive = p.attribute("time.inclusive.duration", UINT, 85, ((unit, "usec"),))
    names = ["main", "phase", "function", "kernel"][:max(1, attributes)]
    attrs = [annotation(n, STRING) for n in names]
    iteration = annotation("iteration", INT)
    stack: list[tuple[int, str, int]] = []  # (attribute, value, context node)
    snapshots: list[tuple[list[int], list[int], list[str]]] = []

    def snap(kind: str, aid: int, value: str, with_time: bool) -> None:
        depth = sum(1 for a, _, _ in stack if a == aid) + (kind == "begin")
        chain = p.node(triggers[aid][kind], value, p.node(event[kind], str(aid), p.node(level, str(max(1, depth)))))
        refs = [chain] + ([stack[-1][2]] if stack else []) + [ver]
        t = [str(rng.randint(1, 2000))] if with_time else []
        snapshots.append((refs, [inclusive] if with_time else [], t))

    def begin(aid: int, value: str) -> None:
        snap("begin", aid, value, False)
        stack.append((aid, value, p.node(aid, value, stack[-1][2] if stack else -1)))

    def end() -> None:
        aid, value, _ = stack[-1]
        snap("end", aid, value, True)
        stack.pop()

    def set_(aid: int, value: str) -> None:  # replaces the top value of the attribute on top of the stack
        snap("set", aid, value, True)
        stack[-1] = (aid, value, p.node(aid, value, stack[-2][2] if len(stack) > 1 else -1))

    left = regions
    while left > 0:  # a random program: nested regions, a loop of iterations somewhere
        depth = len(stack)
        if depth and (rng.random() < 0.4 or depth > 4):
            end()
            continue
        aid = rng.choice(attrs)
        begin(aid, rng.choice(_WORDS))
        left -= 1
        if iterations and rng.random() < 0.25:
            begin(iteration, "0")
            for i in range(1, iterations):
                begin(rng.choice(attrs), rng.choice(_WORDS))
                end()
                set_(iteration, str(i))
            end()
    while stack:
        end()

    p.lines += [f"__rec=node,id={i},attr={a},data={d}" + (f",parent={par}" if par >= 0 else "")
                for i, a, d, par in _BOOT_2016]
    p.written.update(range(11))
    for aid in sorted((n for n, (a, _, _) in p.nodes.items() if a == NAME), key=lambda n: p.nodes[n][1]):
        p.write(aid)  # attributes in name order, ancestors first, their own attribute not first
    for refs, imm, values in snapshots:
        p.record("ctx", refs, imm, values)
    return p.text()


def profile_2x(seed: int, rank: int, *, regions: int = 10, extra: int = 0, version: str = "2.10.0") -> str:
    """An aggregated region profile of one rank: a random region tree (its shape depends on ``seed`` and
    ``rank``), one record per region with its time and count, one record outside all regions.  ``extra``
    attributes (``user.0``, ...) are created first (a process that did more before: every id moves)."""
    rng = random.Random(seed * 1_000_003 + rank)
    p = _Process(12, attribute_first=True, escaped=True)
    for k in range(extra):
        p.attribute(f"user.{k}", INT, 20)
    glob = p.node(PROP, "588", STRING)
    ver_attr, channel = p.node(NAME, "cali.caliper.version", glob), p.node(NAME, "cali.channel", glob)
    kinds = [p.attribute(n, STRING, 276) for n in ("region", "function")]
    rank_attr = p.attribute("mpi.rank", INT, 12)
    time_attr = p.attribute("sum#time.duration", 5, 21)
    count = p.attribute("count", INT, 21)
    rank_node = p.node(rank_attr, str(rank))
    metrics = [time_attr, count]
    p.record("ctx", [rank_node], metrics, [f"{rng.uniform(0.1, 2):.6f}", "1"])
    nodes: list[int] = []
    for _ in range(regions):
        parent = rng.choice(nodes) if nodes and rng.random() < 0.8 else -1
        name = rng.choice(_WORDS) + rng.choice(["", ",x", "=y", "\\z", ""])
        nid = p.node(rng.choice(kinds), name, parent)
        nodes.append(nid)
        p.record("ctx", [nid, rank_node], metrics, [f"{rng.uniform(0, 5):.6f}", str(rng.randint(1, 50))])
    p.record("globals", [p.node(channel, "regionprofile", p.node(ver_attr, version))])
    return p.text()


def concatenate(streams: list[str]) -> str:
    """Several process streams in one file, one after the other (``cat``)."""
    return "".join(streams)


def interleave(streams: list[str], seed: int) -> str:
    """Several process streams writing one file line by line (each stream's lines in order)."""
    rng = random.Random(seed)
    queues = [s.splitlines() for s in streams]
    pos = [0] * len(queues)
    out = []
    while True:
        live = [i for i, q in enumerate(queues) if pos[i] < len(q)]
        if not live:
            return "\n".join(out) + "\n"
        i = rng.choice(live)
        out.append(queues[i][pos[i]])
        pos[i] += 1
