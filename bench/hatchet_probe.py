"""Hatchet/Thicket side of the benchmarks -- run with the *bench* venv: .bench-venv/bin/python.

    .bench-venv/bin/python bench/hatchet_probe.py PATH [PATH ...] [--reader R] [--paths-from FILE]
                                                  [--dump OUT.npz] [--metric KEY=COLUMN ...]

``--reader`` (default ``tau``) picks what is timed:

==============  ==================================================================================================
tau             ``hatchet.GraphFrame.from_tau(PATH)``
caliper         ``hatchet.GraphFrame.from_caliper(PATH)`` (json-split); when that fails with the KeyError on the
                missing ``Node order`` column (formats.md 3.4) the failure and its time are recorded and
                ``from_caliper(PATH, node_ordering=False)`` is timed instead, in the same process.  With
                ``--no-node-ordering`` only ``from_caliper(PATH, node_ordering=False)`` is called (a clean time
                and peak RSS, without the failed call's leftovers)
hpctoolkit      ``hatchet.GraphFrame.from_hpctoolkit(PATH)``
caliperreader   ``hatchet.GraphFrame.from_caliperreader(f)`` for every input file, one by one, in this process
                (the GraphFrames are kept in a list, as a user comparing runs would)
thicket         ``thicket.Thicket.from_caliperreader([all input files])`` (defaults: tqdm bars on stderr)
==============  ==================================================================================================

The timed region is exactly the call(s) above, like the one-liner
``import hatchet,time; t=time.perf_counter(); gf=hatchet.GraphFrame.from_tau(PATH); print(time.perf_counter()-t)``:
the first stdout line is that number.  Then, outside the timed region, the peak RSS so far (``ru_maxrss``: the
load's own peak, before the check dump) is noted and, with ``--dump``, per (input, call path, rank) sums of the
chosen metric columns are written to OUT.npz for the correctness check of the benchmark:

* ``paths`` (unique call-path keys: frame names root first, joined by ``\\x1f``), ``pidx`` (index into
  ``paths`` per row), ``run`` (index of the input in the command line order), ``rank`` (0 when there is no
  rank level), one float64 array per ``--metric KEY=COLUMN`` under KEY (default ``time=time`` and
  ``inc=time (inc)``), ``inputs`` (the input paths);
* the last stdout line is ``RESULT {json}``.

Only the public API is used (GraphFrame.from_*, Thicket.from_caliperreader, graph.roots, Node.children,
Node.frame, .dataframe, Thicket.profile_mapping).  Inputs can come from a file (one path per line) with
``--paths-from`` when there are many.
"""

import json
import resource
import sys
import time

READERS = ("tau", "caliper", "hpctoolkit", "caliperreader", "thicket")
SEP = "\x1f"  # joins the frame names of a call path into one key
DEFAULT_METRICS = (("time", "time"), ("inc", "time (inc)"))

t_import = time.perf_counter()
import hatchet  # noqa: E402

t_import = time.perf_counter() - t_import


def parse_args(argv):
    a = {"reader": "tau", "dump": None, "metrics": [], "inputs": [], "no_node_ordering": False}
    it = iter(argv[1:])
    for arg in it:
        if arg == "--no-node-ordering":
            a["no_node_ordering"] = True
        elif arg == "--reader":
            a["reader"] = next(it)
        elif arg == "--dump":
            a["dump"] = next(it)
        elif arg == "--metric":
            key, _, col = next(it).partition("=")
            a["metrics"].append((key, col))
        elif arg == "--paths-from":
            with open(next(it), encoding="utf-8") as fh:
                a["inputs"] += [ln.rstrip("\n") for ln in fh if ln.strip()]
        else:
            a["inputs"].append(arg)
    if a["reader"] not in READERS:
        raise SystemExit(f"--reader must be one of {', '.join(READERS)}")
    if not a["inputs"]:
        raise SystemExit("no input path")
    if a["reader"] in ("tau", "caliper", "hpctoolkit") and len(a["inputs"]) != 1:
        raise SystemExit(f"--reader {a['reader']} takes one input")
    a["metrics"] = a["metrics"] or list(DEFAULT_METRICS)
    return a


def call_path_keys(graph, df_names: dict) -> dict:
    """node object -> 'root<SEP>child<SEP>...': each frame's ``name``, else the dataframe's ``name`` column
    (HPCToolkit loop and statement frames have no name; their ``Loop@file:line``/``file:line`` is a column)."""

    def name(node) -> str:
        n = node.frame.get("name")
        return str(n if n is not None else df_names.get(node))

    keys = {}
    stack = [(root, name(root)) for root in graph.roots]
    while stack:
        node, key = stack.pop()
        if node in keys:  # a DAG node reached twice keeps its first path (the readers here give trees)
            continue
        keys[node] = key
        stack.extend((child, key + SEP + name(child)) for child in node.children)
    return keys


def load(reader: str, inputs: list[str], info: dict, no_node_ordering: bool = False):
    """The timed call(s); returns a list of (input index or None, graph, dataframe, profile->input map)."""
    if reader == "caliper" and no_node_ordering:
        info["kwargs"] = {"node_ordering": False}
        gf = hatchet.GraphFrame.from_caliper(inputs[0], node_ordering=False)
        return [(0, gf.graph, gf.dataframe, None)]
    if reader == "tau":
        gf = hatchet.GraphFrame.from_tau(inputs[0])
        return [(0, gf.graph, gf.dataframe, None)]
    if reader == "hpctoolkit":
        gf = hatchet.GraphFrame.from_hpctoolkit(inputs[0])
        return [(0, gf.graph, gf.dataframe, None)]
    if reader == "caliper":
        t = time.perf_counter()
        try:
            gf = hatchet.GraphFrame.from_caliper(inputs[0])
        except KeyError as exc:
            if "Node order" not in str(exc):
                raise
            info["default_call_failed"] = {"error": f"KeyError: {exc}", "after_s": time.perf_counter() - t}
            info["kwargs"] = {"node_ordering": False}
            raise _Retry() from None
        return [(0, gf.graph, gf.dataframe, None)]
    if reader == "caliperreader":
        gfs = [hatchet.GraphFrame.from_caliperreader(f) for f in inputs]
        return [(i, gf.graph, gf.dataframe, None) for i, gf in enumerate(gfs)]
    import thicket  # imported before the timer (see main)

    th = thicket.Thicket.from_caliperreader(inputs)
    index_of = {p: i for i, p in enumerate(inputs)}
    profile_run = {prof: index_of.get(str(f), -1) for prof, f in th.profile_mapping.items()}
    return [(None, th.graph, th.dataframe, profile_run)]


class _Retry(Exception):
    """from_caliper failed on the missing Node order column: time the node_ordering=False call."""


def dump_table(parts, metrics, out: str) -> dict:
    import numpy as np
    import pandas as pd

    path_id: dict[str, int] = {}
    frames = []
    for run, graph, df, profile_run in parts:
        idx = df.index
        if isinstance(idx, pd.MultiIndex):  # levels + codes: no per-row hashing of Node objects
            lvl = idx.names.index("node")
            uniq, codes = idx.levels[lvl], np.asarray(idx.codes[lvl])
        else:
            codes, uniq = pd.factorize(idx)
        df_names = {}
        if "name" in df.columns:
            present, first = np.unique(codes, return_index=True)
            col = df["name"].to_numpy()
            df_names = {uniq[c]: col[i] for c, i in zip(present, first)}
        keys = call_path_keys(graph, df_names)
        pid = np.array([path_id.setdefault(keys[n], len(path_id)) for n in uniq], dtype=np.int64)
        table = {"pidx": pid[codes]}
        names = list(idx.names)
        table["rank"] = (np.asarray(idx.get_level_values("rank"), dtype=np.int64) if "rank" in names
                         else np.zeros(len(df), dtype=np.int64))
        if profile_run is not None:
            prof = idx.get_level_values("profile")
            table["run"] = np.array([profile_run[p] for p in prof], dtype=np.int64)
        else:
            table["run"] = np.full(len(df), run, dtype=np.int64)
        for key, col in metrics:
            table[key] = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        frames.append(pd.DataFrame(table))
    t = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    t = t.groupby(["run", "pidx", "rank"], sort=True, as_index=False).sum(min_count=1)
    paths = np.empty(len(path_id), dtype=object)
    for p, i in path_id.items():
        paths[i] = p
    arrays = {"paths": paths.astype(str), "pidx": t["pidx"].to_numpy(np.int32), "run": t["run"].to_numpy(np.int32),
              "rank": t["rank"].to_numpy(np.int64), **{k: t[k].to_numpy(np.float64) for k, _ in metrics}}
    np.savez(out, **arrays)
    return {"dump": out, "dump_rows": int(len(t)), "n_paths": len(path_id)}


def main(argv) -> int:
    a = parse_args(argv)
    reader, inputs = a["reader"], a["inputs"]
    info = {"reader": reader, "import_s": t_import, "n_inputs": len(inputs),
            "hatchet_version": getattr(hatchet, "__version__", None)}
    if reader == "thicket":
        t = time.perf_counter()
        import thicket

        info["import_thicket_s"] = time.perf_counter() - t
        info["thicket_version"] = getattr(thicket, "__version__", None)

    t = time.perf_counter()
    try:
        parts = load(reader, inputs, info, a["no_node_ordering"])
    except _Retry:
        t = time.perf_counter()
        gf = hatchet.GraphFrame.from_caliper(inputs[0], node_ordering=False)
        parts = [(0, gf.graph, gf.dataframe, None)]
    elapsed = time.perf_counter() - t
    print(elapsed, flush=True)
    info["load_s"] = elapsed
    info[f"from_{reader}_s"] = elapsed
    info["rss_after_load_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    df0 = parts[0][2]
    info.update({"rows": int(sum(len(p[2]) for p in parts)), "index": [str(n) for n in df0.index.names],
                 "columns": [str(c) for c in df0.columns]})
    if a["dump"]:
        info.update(dump_table(parts, a["metrics"], a["dump"]))
        info["metrics"] = dict(a["metrics"])
    print("RESULT " + json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
