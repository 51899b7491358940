"""Caliper's ``Node order`` (issue 15, theme 4 of the issue): Hatchet orders each node's children by it and drops the
column; perflake's Caliper readers lay their frames out in it (readers/node_order.py), so the order is the frames'
``local_id`` order that GraphFrames keep as the children's order.  Compared with llnl-hatchet 2026.2.0 in
.bench-venv: the pre-order of the call tree (names) and each node's value, on the real ordered .cali files of
../shared and on generated ``.cali`` / json-split files whose Node order differs from the file order, with
duplicate node orders (equal keys keep the file's order, as Hatchet's stable sort does).

Generated json-split files hold one data row per node, row k for node k: Hatchet's json reader takes a node's order
from the data row with the node's *index* (``json_data[idx][0]``), not from the row whose path is the node; the
two agree on such files (and on Caliper's own, whose rows are in node order), and perflake uses the row's path."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import hatchet_load
from conftest import DATA, _need, need_bench_python
from perflake import readers
from perflake.generators.cali_stream import INT, NAME, PROP, STRING, _Process
from perflake.readers.node_order import new_positions


def preorder(rows) -> list[tuple[str, ...]]:
    """Call paths of a reader's frames, children in local_id order (what a GraphFrame keeps)."""
    frames = rows.frames.to_pylist()
    kids: dict[int, list[int]] = {}
    for f in frames:
        kids.setdefault(f["parent_local"], []).append(f["local_id"])
    out, stack = [], [(i, ()) for i in reversed(kids.get(-1, []))]
    while stack:
        i, above = stack.pop()
        path = (*above, frames[i]["name"])
        out.append(path)
        stack.extend((c, path) for c in reversed(kids.get(i, [])))
    return out


def values_by_path(rows, metric: str) -> dict:
    """Sum of ``metric`` per call path (the rows of each frame)."""
    frames = rows.frames.to_pylist()
    path_of: dict[int, tuple[str, ...]] = {}
    for f in frames:  # parents precede children
        above = path_of[f["parent_local"]] if f["parent_local"] >= 0 else ()
        path_of[f["local_id"]] = (*above, f["name"])
    out: dict = {}
    for lid, v in zip(rows.values.column("local_id").to_pylist(), rows.values.column(metric).to_pylist()):
        out[path_of[lid]] = out.get(path_of[lid], 0.0) + v
    return out


def random_tree(seed: int, n: int, duplicates: bool):
    """(names, parents, orders): parents precede children; orders a random permutation (with repeats)."""
    rng = random.Random(seed)
    parents = [-1] + [rng.randrange(i) for i in range(1, n)]
    names = [f"r{i}" for i in range(n)]
    orders = list(range(n))
    rng.shuffle(orders)
    orders[0] = 0  # the root: a single root keeps the comparison about children
    if duplicates:
        for i in range(1, n):
            if rng.random() < 0.4:
                orders[i] = orders[rng.randrange(1, n)]
    return names, parents, orders


def cali_text(names, parents, orders) -> str:
    p = _Process(12, attribute_first=True, escaped=True)
    glob = p.node(PROP, "588", STRING)
    ver = p.node(NAME, "cali.caliper.version", glob)
    region = p.attribute("region", STRING, 276)
    slot = p.attribute("min#min#aggregate.slot", INT, 21)
    total = p.attribute("Total time", 5, 21)
    ids = []
    for i, (name, parent) in enumerate(zip(names, parents)):
        ids.append(p.node(region, name, ids[parent] if parent >= 0 else -1))
    for i in range(len(names)):  # records in tree order (Hatchet gives a parent first seen in a child's path -1)
        p.record("ctx", [ids[i]], [slot, total], [str(orders[i]), f"{1.0 + i:.6f}"])
    p.record("globals", [p.node(ver, "2.10.0")])
    return p.text()


def json_text(names, parents, orders) -> str:
    nodes = [{"label": n, "column": "path", **({"parent": p} if p >= 0 else {})} for n, p in zip(names, parents)]
    data = [[orders[i], 0, 1.0 + i, i] for i in range(len(names))]
    return json.dumps({"data": data, "columns": ["Node order", "mpi.rank", "time", "path"],
                       "column_metadata": [{"is_value": True, "attribute.alias": "Node order"}, {"is_value": True},
                                           {"is_value": True}, {"is_value": False}],
                       "nodes": nodes, "cali.caliper.version": "2.10.0"})


GENERATED = [(seed, n, dup) for seed, n, dup in [(1, 8, False), (2, 15, False), (3, 15, True), (4, 30, True),
                                                  (5, 40, True), (6, 12, True)]]
REAL = ["caliper-ordered-cali/230525-151052_1930517_eWbGeyrlBOPT.cali",
        "caliper-ordered-cali-mpi/230525-151723_1930647_FSY8b8cKSEEi.cali"]

HATCHET_CODE = """
import json
rows = []
for name, kind, path, metric in {files!r}:
    gf = hatchet.GraphFrame.from_caliperreader(path) if kind == "cali" else hatchet.GraphFrame.from_caliper(path)
    df = gf.dataframe
    nodes = list(gf.graph.traverse())
    parent_of = {{id(c): n for n in nodes for c in n.children}}  # (its json reader leaves node.parents empty)

    def path(n):
        out = [str(n.frame["name"])]
        while id(n) in parent_of:
            n = parent_of[id(n)]
            out.append(str(n.frame["name"]))
        return out[::-1]

    order = [path(n) for n in nodes]
    vals = {{}}
    flat = df.reset_index()
    for node, v in zip(flat["node"], flat[metric]):
        key = "/".join(path(node))
        vals[key] = vals.get(key, 0.0) + float(v)
    rows.append([name, json.dumps(order), json.dumps(vals), "Node order" in df.columns])
result = pd.DataFrame(rows, columns=["name", "order", "values", "has_column"])
"""


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    need_bench_python()
    tmp = tmp_path_factory.mktemp("node-order")
    files = []
    for seed, n, dup in GENERATED:
        tree = random_tree(seed, n, dup)
        (tmp / f"g{seed}.cali").write_text(cali_text(*tree))
        (tmp / f"g{seed}.json").write_text(json_text(*tree))
        files.append((f"cali-{seed}", "cali", str(tmp / f"g{seed}.cali"), "Total time"))
        files.append((f"json-{seed}", "json", str(tmp / f"g{seed}.json"), "time"))
    for rel in REAL:
        files.append((rel, "cali", str(_need(DATA / rel)), "Total time"))
    report = hatchet_load.recipe(HATCHET_CODE.format(files=files))["frame"]["values"]
    theirs = {name: (json.loads(order), json.loads(vals), has) for name, order, vals, has in report}
    return {name: (path, metric, *theirs[name]) for name, _, path, metric in files}


def expected_order(names, parents, orders) -> list[list[str]]:
    """Pre-order of a generated tree, siblings by (Node order, file position)."""
    kids: dict[int, list[int]] = {}
    for i, p in enumerate(parents):
        kids.setdefault(p, []).append(i)
    out = []

    def walk(i, above):
        here = [*above, names[i]]
        out.append(here)
        for c in sorted(kids.get(i, []), key=lambda c: (orders[c], c)):
            walk(c, here)

    for r in sorted(kids[-1], key=lambda c: (orders[c], c)):
        walk(r, [])
    return out


@pytest.mark.parametrize("name", [f"{k}-{s}" for s, _, _ in GENERATED for k in ("cali", "json")] + REAL)
def test_frames_come_in_hatchets_node_order(cases, name):
    """json-split and the real .cali files: Hatchet's order.  Generated .cali: the order by Node order, which is
    Hatchet's json reader's answer on the same tree; Hatchet 2026.2.0's .cali reader means to use it too
    (``node_ordering=True``) but never reads ``min#min#aggregate.slot`` (the branch that would is unreachable in
    caliper_native_reader.py), so its order is the order of first appearance in the records -- the same on
    Caliper's own files (the real ones here), not on these, whose records are not in Node order."""
    path, metric, order, vals, has_column = cases[name]
    rows = readers.read(path)
    if name.startswith("cali-"):
        seed = int(name.split("-")[1])
        tree = random_tree(*next(g for g in GENERATED if g[0] == seed))
        assert expected_order(*tree) == cases[f"json-{seed}"][2]  # Hatchet's json reader on the same tree
        order = expected_order(*tree)
    assert [list(p) for p in preorder(rows)] == order
    assert not has_column and all(m.name != "Node order" for m in rows.metrics)  # dropped, as Hatchet
    got = {"/".join(p): v for p, v in values_by_path(rows, metric).items()}
    assert got == pytest.approx(vals)


def test_generated_orders_differ_from_file_order():
    """The generated trees do test something: their Node order is not their file order."""
    differ = 0
    for seed, n, dup in GENERATED:
        names, parents, orders = random_tree(seed, n, dup)
        pos = new_positions(np.asarray(parents), np.asarray(orders, float))
        differ += not np.array_equal(pos, np.arange(n))
    assert differ == len(GENERATED)


def test_order_rules_by_hand():
    """A frame without its own order comes where its first descendant does; equal keys keep the file order;
    a subtree without any order goes after its ordered siblings."""
    #      0 main
    #      ├─ 1 a (order 5)
    #      ├─ 2 b (no order) └─ 3 c (order 2)
    #      ├─ 4 d (order 5, same as a)
    #      └─ 5 e (no order, no descendant with one)
    parent = np.array([-1, 0, 0, 2, 0, 0])
    keys = np.array([0, 5, np.inf, 2, 5, np.inf])
    pos = new_positions(parent, keys)
    assert [int(i) for i in np.argsort(pos)] == [0, 2, 3, 1, 4, 5]
