"""Caliper inputs of a chosen size or shape, for the memory tests and benchmark of the Caliper readers
(tests/test_reader_memory_cali_hpct.py, bench/bench_memory_cali_hpct.py): a ``.cali`` aggregated profile whose
size is set by its number of regions and ranks, with optional oversize parts (a long global value, a long
region name, a deep chain of regions), and the same oversize parts in a json-split file.

A ``.cali`` written here is laid out as Caliper 2 writes an aggregated profile (formats.md section 4): the
attributes ``region`` (nested string), ``mpi.rank``, ``sum#time.duration`` (double) and ``note`` (a global),
then one node per region (parents first) and per rank, one ``ctx`` record per (region, rank) and a ``globals``
record.  Same arguments, same bytes.
"""

from __future__ import annotations

import json
import pathlib

_ATTRS = """__rec=node,id=12,attr=10,data=276,parent=3
__rec=node,id=13,attr=8,data=region,parent=12
__rec=node,id=14,attr=10,data=21,parent=5
__rec=node,id=15,attr=8,data=sum#time.duration,parent=14
__rec=node,id=16,attr=10,data=12,parent=1
__rec=node,id=17,attr=8,data=mpi.rank,parent=16
__rec=node,id=18,attr=10,data=588,parent=3
__rec=node,id=19,attr=8,data=note,parent=18
"""
_REGION0, _RANK0 = 1000, 100_000_000
_BLOCK = 1 << 20


def region_parents(regions: int, *, fanout: int = 8, chain: bool = False) -> list[int]:
    """The parent of each region (-1 for the root): a tree of ``fanout`` children per region, or one chain."""
    return [k - 1 if chain else (k - 1) // fanout for k in range(regions)] if regions else []


def write_cali(path, *, regions: int, ranks: int = 1, chain: bool = False, name_bytes: int = 12,
               long_name: int = 0, global_bytes: int = 16) -> pathlib.Path:
    """A ``.cali`` profile: ``regions`` regions (a tree of fanout 8, or one ``chain``), each with one record per
    rank; region names of about ``name_bytes`` bytes, the last region's ``long_name`` bytes when given; the
    global ``note`` of ``global_bytes`` bytes (written in blocks: it may be far larger than memory allows)."""
    path = pathlib.Path(path)
    parents = region_parents(regions, chain=chain)
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.write(_ATTRS)
        lines = []
        for k, p in enumerate(parents):
            name = f"r{k}_".ljust(name_bytes, "x") if not (long_name and k == regions - 1) else "n" * long_name
            lines.append(f"__rec=node,id={_REGION0 + k},attr=13,data={name}"
                         + (f",parent={_REGION0 + p}" if p >= 0 else "") + "\n")
            if len(lines) >= 4096:
                out.write("".join(lines))
                lines = []
        lines += [f"__rec=node,id={_RANK0 + r},attr=17,data={r}\n" for r in range(ranks)]
        out.write("".join(lines))
        for r in range(ranks):
            out.write("".join(f"__rec=ctx,ref={_REGION0 + k}={_RANK0 + r},attr=15,data={(k * 7 + r) % 1000 / 8:.6f}\n"
                              for k in range(regions)))
        out.write("__rec=globals,attr=19,data=")
        left = global_bytes
        while left > 0:
            out.write("g" * min(left, _BLOCK))
            left -= _BLOCK
        out.write("\n")
    return path


def write_json_split(path, *, nodes: int, rows_per_node: int = 1, chain: bool = False, label_bytes: int = 12,
                     long_label: int = 0, meta_bytes: int = 16) -> pathlib.Path:
    """A json-split file as Caliper lays it out (rows one per line first, then ``columns``, ``column_metadata``,
    ``nodes`` and a metadata key ``note`` of ``meta_bytes`` bytes): ``nodes`` nodes (fanout 8, or one
    ``chain``), ``rows_per_node`` rows (ranks) per node, labels of ``label_bytes`` bytes, the last node's
    ``long_label`` bytes when given."""
    path = pathlib.Path(path)
    parents = region_parents(nodes, chain=chain)
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.write('{\n    "data": [\n')
        rows = [f"        [ {(k * 7 + r) % 1000 / 8:.6f}, {r}, {k} ]"
                for r in range(rows_per_node) for k in range(nodes)]
        for i in range(0, len(rows), 65536):
            out.write(",\n".join(rows[i:i + 65536]) + (",\n" if i + 65536 < len(rows) else "\n"))
        out.write('    ],\n    "columns": ["sum#time.duration", "mpi.rank", "path"],\n')
        out.write('    "column_metadata": [{"is_value": true}, {"is_value": true}, {"is_value": false}],\n')
        out.write('    "nodes": [\n')
        for k, p in enumerate(parents):
            label = f"n{k}_".ljust(label_bytes, "x") if not (long_label and k == nodes - 1) else "l" * long_label
            node = {"label": label, "column": "path", **({"parent": p} if p >= 0 else {})}
            out.write("        " + json.dumps(node) + (",\n" if k + 1 < nodes else "\n"))
        out.write('    ],\n    "cali.caliper.version": "2.10.0",\n    "note": "')
        left = meta_bytes
        while left > 0:
            out.write("m" * min(left, _BLOCK))
            left -= _BLOCK
        out.write('"\n}\n')
    return path
