"""One concurrent writer (or the reader) of the ``concurrent`` workload, started by bench.py.

    writer.py STORE ROOT DATA_FOLDER N WRITER_NO   commit runs 0..N-1, one per commit, in an order shuffled by
                                                   WRITER_NO (every writer commits the same N inputs)
    writer.py STORE ROOT DATA_FOLDER 0 reader      read snapshots until SIGTERM: every committed run must be
                                                   whole (all its metric rows, once)

Prints one JSON line.  TF_S3 (JSON) holds the S3 storage options when the lake is on the loopback server.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import signal
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import protocol  # noqa: E402
from stores import open_store  # noqa: E402

import data  # noqa: E402


def write(store, runs, n: int, writer: int) -> dict:
    disjoint = os.environ.get("TF_DISJOINT") == "1"  # writer w commits inputs w*n .. w*n+n-1 instead
    order = list(range(writer * n, writer * n + n)) if disjoint else list(range(n))
    random.Random(writer).shuffle(order)
    out = {"writer": writer, "committed": 0, "skipped_before": 0, "lost": 0, "cas_conflicts": 0, "errors": []}
    t0 = time.perf_counter()
    for i in order:
        try:
            o = protocol.commit(store, [runs.run(i)])
        except Exception as exc:  # a commit that failed for good: reported, the next input goes on
            out["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        out["committed"] += len(o.committed)
        out["skipped_before"] += len(o.skipped)
        out["lost"] += len(o.lost)
        out["cas_conflicts"] += o.conflicts
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["app_retries"] = dict(store.retries)
    out["traceback"] = None
    return out


def read_loop(store, runs) -> dict:
    want = {r["run_id"]: runs.run(i).tables["metrics"].num_rows for i, r in enumerate(runs.rows[:4000])}
    stats = {"reads": 0, "torn": 0, "errors": [], "max_runs_seen": 0}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        try:
            pinned = store.read("runs", columns=["run_id", "batch"])
            m = protocol.committed(store.read("metrics", columns=["run_id", "batch"]), pinned)
            counts = {}
            for rid in m.column("run_id").to_pylist():
                counts[rid] = counts.get(rid, 0) + 1
            torn = [r for r in pinned.column("run_id").to_pylist() if counts.get(r, 0) != want.get(r, -1)]
            stats["reads"] += 1
            stats["torn"] += bool(torn)
            stats["max_runs_seen"] = max(stats["max_runs_seen"], pinned.num_rows)
        except Exception as exc:
            stats["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        time.sleep(0.2)
    more = len(stats["errors"]) - 5
    stats["errors"] = stats["errors"][:5] + ([f"... {more} more"] if more > 0 else [])
    return stats


def main() -> None:
    kind, root, folder, n, who = sys.argv[1:6]
    s3 = json.loads(os.environ["TF_S3"]) if os.environ.get("TF_S3") else None
    store = open_store(kind, root, s3)
    runs = data.Runs(pathlib.Path(folder))
    if who == "reader":
        print(json.dumps(read_loop(store, runs)), flush=True)
        return
    print(json.dumps({"ready": True}), flush=True)  # (the kill workload waits for this line)
    try:
        out = write(store, runs, int(n), int(who))
    except Exception:
        out = {"writer": int(who), "traceback": traceback.format_exc()[-2000:]}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
