"""Writer of Caliper json-split files (``cali-query ... FORMAT json-split``) from the synthetic model.

One file per run, laid out as Caliper writes it (formats.md section 3): ``data`` rows one per line, numbers
written with six decimals, then ``columns``, ``column_metadata``, ``nodes`` and the run's globals as extra
top-level keys (strings).  The query behind it is an annotation profile per rank::

    select inclusive_sum(sum#time.duration), mpi.rank, sum(time.duration) group by path, mpi.rank

so the columns are ``inclusive#sum#time.duration``, ``mpi.rank``, ``sum#time.duration`` and ``path`` (times
in seconds, ``attribute.unit`` = ``sec``, as Caliper 2 writes them).  ``nodes`` are the call tree in
creation (pre-)order; each rank has one extra row with a null ``path``: the time outside every region.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .calltree import CallTree, Metrics, make_metrics, make_tree, perturb
from .size_limits import check_sizes

COLUMNS = ["inclusive#sum#time.duration", "mpi.rank", "sum#time.duration", "path"]
_APPS = [("lulesh2.0", ["-s", "48", "-i", "500", "-p"], "48", "500"),
         ("amg", ["-problem", "2", "-n", "80", "80", "80"], "80", "20"),
         ("miniFE.x", ["nx=256", "ny=256", "nz=256"], "256", "200"),
         ("xhpcg", ["--nx=104", "--rt=300"], "104", "50")]
_USERS = ["jsmith", "alee", "mgarcia", "pkumar"]
_CLUSTERS = ["quartz", "lassen", "ruby", "tioga"]


def _seconds(us: np.ndarray) -> pa.Array:
    """Integer microseconds as Caliper's ``%f`` text of seconds (``12.003400``)."""
    q, r = np.divmod(np.asarray(us, dtype=np.int64), 1_000_000)
    return pc.binary_join_element_wise(pc.cast(pa.array(q), pa.string()),
                                       pc.utf8_lpad(pc.cast(pa.array(r), pa.string()), 6, "0"), ".")


def _rows(incl: pa.Array, rank: pa.Array, excl: pa.Array, path: pa.Array) -> str:
    lines = pc.binary_join_element_wise("        [ ", incl, ", ", rank, ", ", excl, ", ", path, " ]", "")
    return ",\n".join(lines.to_pylist())


def _nodes(tree: CallTree) -> list[dict]:
    out = []
    for name, p in zip(tree.names, tree.parent.tolist()):
        node = {"column": "path", "label": name}
        if p >= 0:
            node["parent"] = p
        out.append(node)
    return out


def _globals(seed: int, run: int, ranks: int, elapsed_us: int, total_us: int) -> dict[str, str]:
    app, args, size, iters = _APPS[seed % len(_APPS)]
    user = _USERS[(seed // len(_APPS)) % len(_USERS)]
    launch = 1_640_995_200 + (seed * 2_654_435_761) % 90_000_000 + run * 7_200
    elapsed = elapsed_us / 1e6
    return {
        "cali.caliper.version": "2.10.0",
        "cali.channel": "runtime-profile",
        "mpi.world.size": str(ranks),
        "jobsize": str(ranks),
        "threads": "1",
        "user": user,
        "cluster": _CLUSTERS[seed % len(_CLUSTERS)],
        "launchdate": str(launch),
        "cmdline": "[" + ",".join([f"./{app}", *args]) + "]",
        "executablepath": f"/g/g90/{user}/apps/{app.split('.')[0]}/build/{app}",
        "problem_size": size,
        "iterations": iters,
        "elapsed_time": f"{elapsed:.6f}",
        "figure_of_merit": f"{int(iters) * 1e6 / max(total_us / ranks, 1):.6f}",
    }


def caliper_json_text(tree: CallTree, m: Metrics, outside_us: np.ndarray, globals_: dict[str, str]) -> str:
    """The json-split document of one run: ``m`` holds per-rank µs, ``outside_us`` the null-path rows."""
    n, ranks = len(tree), m.n_ranks * m.n_threads
    if m.n_threads != 1:
        raise ValueError("json-split rows carry mpi.rank only: n_threads must be 1")
    rank_text = pc.cast(pa.array(np.arange(ranks, dtype=np.int64)), pa.string())
    outside = _seconds(outside_us)
    head = _rows(outside, rank_text, outside, pa.array(["null"] * ranks))
    body = _rows(_seconds(m.inclusive.reshape(-1)),  # node-major, rank-minor, as Caliper lists them
                 pc.cast(pa.array(np.tile(np.arange(ranks, dtype=np.int64), n)), pa.string()),
                 _seconds(m.exclusive.reshape(-1)),
                 pc.cast(pa.array(np.repeat(np.arange(n, dtype=np.int64), ranks)), pa.string()))
    rest = {
        "columns": COLUMNS,
        "column_metadata": [{"is_value": True, "attribute.unit": "sec"}, {"is_value": True},
                            {"is_value": True, "attribute.unit": "sec"}, {"is_value": False}],
        "nodes": _nodes(tree),
        **globals_,
    }
    tail = json.dumps(rest, indent=4, ensure_ascii=False)[1:]  # '\n    "columns": ...}'
    return '{\n    "data": [\n' + head + (",\n" if n else "") + body + "\n    ]," + tail + "\n"


def write_caliper_json_runs(out_dir, *, nodes: int, ranks: int, runs: int = 1, seed: int = 0) -> list[pathlib.Path]:
    """Write ``runs`` json-split files ``out_dir/run-000.json`` ... and return their paths.

    Run 0 profiles ``make_tree(nodes, seed=seed)``; run k > 0 profiles ``perturb(base, seed=seed * 1000 + k)``,
    with the metric seeds of :func:`perflake.generators.tau.write_tau_runs`, so the TAU and Caliper runs of one
    seed hold the same call trees and per-node, per-rank times (only the time outside every region differs).
    """
    check_sizes(nodes=nodes, ranks=ranks, runs=runs, seed=seed)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = make_tree(nodes, seed=seed)
    paths = []
    for k in range(runs):
        tree = base if k == 0 else perturb(base, seed=seed * 1000 + k)
        m = make_metrics(tree, ranks, seed=seed * 1000 + k + 500, app_seed=seed)
        rng = np.random.default_rng([seed, k, 78])
        outside = np.rint(rng.uniform(150.0, 900.0, ranks)).astype(np.int64)
        elapsed = int((m.inclusive[0] + outside).max())
        text = caliper_json_text(tree, m, outside, _globals(seed, k, ranks, elapsed, int(m.inclusive[0].sum())))
        path = out / f"run-{k:03d}.json"
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        paths.append(path)
    return paths
