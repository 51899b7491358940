"""Hatchet side of bench_ingest_tau.py -- run with the *bench* venv: .bench-venv/bin/python.

    .bench-venv/bin/python bench/hatchet_probe.py TAU_RUN_DIR [--dump OUT.npz]

Times ``hatchet.GraphFrame.from_tau(TAU_RUN_DIR)`` exactly like

    import hatchet,time; t=time.perf_counter(); gf=hatchet.GraphFrame.from_tau(PATH); print(time.perf_counter()-t)

(the first stdout line is that number), then -- outside the timed region -- optionally dumps per
(call path, rank) sums of ``time`` and ``time (inc)`` to OUT.npz for the correctness check, and
prints one final line ``RESULT {json}``.  Only hatchet's public API is used (GraphFrame.from_tau,
graph.roots, Node.children, Node.frame, GraphFrame.dataframe).
"""

import json
import sys
import time

t_import = time.perf_counter()
import hatchet  # noqa: E402

t_import = time.perf_counter() - t_import

SEP = "\x1f"  # joins the frame names of a call path into one key


def call_path_keys(gf) -> dict:
    """node object -> 'root<SEP>child<SEP>...' (names of the frames from the root down)."""
    keys = {}
    stack = [(root, root.frame["name"]) for root in gf.graph.roots]
    while stack:
        node, key = stack.pop()
        if node in keys:  # a DAG node reached twice keeps its first path (TAU gives trees)
            continue
        keys[node] = key
        stack.extend((child, key + SEP + child.frame["name"]) for child in node.children)
    return keys


def main(argv) -> int:
    path = argv[1]
    dump = argv[argv.index("--dump") + 1] if "--dump" in argv else None

    t = time.perf_counter()
    gf = hatchet.GraphFrame.from_tau(path)
    elapsed = time.perf_counter() - t
    print(elapsed, flush=True)

    df = gf.dataframe
    info = {"from_tau_s": elapsed, "import_s": t_import, "rows": int(len(df)),
            "index": list(df.index.names), "columns": [str(c) for c in df.columns],
            "hatchet_version": getattr(hatchet, "__version__", None)}
    if dump:
        import numpy as np
        import pandas as pd

        keys = call_path_keys(gf)
        flat = df.reset_index()
        rank = flat["rank"] if "rank" in flat.columns else pd.Series(0, index=flat.index)
        table = pd.DataFrame({"path": [keys[n] for n in flat["node"]], "rank": rank.astype("int64"),
                              "time": flat["time"].astype("float64"),
                              "inc": flat["time (inc)"].astype("float64")})
        table = table.groupby(["path", "rank"], sort=True, as_index=False).sum()
        np.savez(dump, path=table["path"].to_numpy(dtype=str), rank=table["rank"].to_numpy(),
                 time=table["time"].to_numpy(), inc=table["inc"].to_numpy())
        info["dump"] = dump
        info["n_paths"] = int(table["path"].nunique())
    print("RESULT " + json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
