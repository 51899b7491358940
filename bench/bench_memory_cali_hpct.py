"""Peak RSS against input size of the Caliper (.cali, json-split) and HPCToolkit (old layout, v4) readers, at three
sizes each, plus the refusal of a 50 MB attribute (issue 23, item 2).

Each measurement is one child process: it imports the libraries, reads a tiny input of the same format (warm-up),
then reads the measured input and reports its peak RSS growth over the warm-up (VmHWM after resetting it; ru_maxrss
would keep the parent's peak across fork and exec).  Memory, not time.
Inputs are generated in bench/work/memory-cali-hpct (pipeline/generators: caliper_sized, hpctoolkit,
hpctoolkit_v4, hpctoolkit_sized).

    .venv/bin/python bench/bench_memory_cali_hpct.py            # prints a Markdown table
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

from perflake.generators.caliper_sized import write_cali, write_json_split
from perflake.generators.hpctoolkit import write_hpctoolkit_runs
from perflake.generators.hpctoolkit_sized import altered
from perflake.generators.hpctoolkit_v4 import write_hpctoolkit_v4_runs

WORK = pathlib.Path(__file__).resolve().parent / "work" / "memory-cali-hpct"
MB = 1 << 20

CHILD = textwrap.dedent("""
    import json, sys
    import numpy, pyarrow, pyarrow.compute, pyarrow.csv
    from perflake.errors import PerflakeError
    from perflake.readers import get_reader
    reader = get_reader(sys.argv[1])
    reader.read(sys.argv[3])  # a tiny valid input first: what a first read imports and sets up is no growth
    # peak RSS of this process image: VmHWM (ru_maxrss keeps the parent's peak across fork and exec), reset to
    # the current RSS after the warm-up (Linux clear_refs 5)
    status = lambda key: next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key))
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    base = status("VmRSS:")
    peak = lambda: status("VmHWM:")
    try:
        rows = reader.read(sys.argv[2])
        out = {"frames": rows.frames.num_rows, "rows": rows.values.num_rows}
    except PerflakeError as exc:
        out = {"error": str(exc)[:120]}
    print(json.dumps({**out, "growth_kb": peak() - base}))
""")


def _size(path: pathlib.Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir()) if path.is_dir() else path.stat().st_size


def measure(kind: str, path: pathlib.Path, tiny: pathlib.Path) -> dict:
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(path), str(tiny)], capture_output=True, text=True,
                          env=env, check=True)
    return {"reader": kind, "input": path.name, "mb": _size(path) / MB, **json.loads(proc.stdout)}


def cases() -> list[tuple[str, pathlib.Path, pathlib.Path]]:
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    out = []
    tiny = write_cali(WORK / "tiny.cali", regions=5)
    for regions, ranks in ((1000, 16), (4000, 64), (20000, 64)):
        out.append(("caliper", write_cali(WORK / f"r{regions}x{ranks}.cali", regions=regions, ranks=ranks), tiny))
    out.append(("caliper", write_cali(WORK / "attr50mb.cali", regions=20, global_bytes=50 * MB), tiny))
    tiny = write_json_split(WORK / "tiny.json", nodes=5)
    for nodes, ranks in ((1000, 16), (4000, 64), (20000, 64)):
        out.append(("caliper_json", write_json_split(WORK / f"n{nodes}x{ranks}.json", nodes=nodes,
                                                     rows_per_node=ranks), tiny))
    out.append(("caliper_json", write_json_split(WORK / "meta50mb.json", nodes=20, meta_bytes=50 * MB), tiny))
    tiny = write_hpctoolkit_runs(WORK / "tiny-hpct", nodes=20, ranks=1)[0]
    for nodes, ranks in ((1000, 4), (5000, 16), (20000, 16)):
        db = write_hpctoolkit_runs(WORK / f"hpct-{nodes}x{ranks}", nodes=nodes, ranks=ranks)[0]
        out.append(("hpctoolkit", db.rename(db.parent.parent / f"hpct-{nodes}x{ranks}-db"), tiny))
    out.append(("hpctoolkit", altered(tiny, WORK / "hpct-info50mb", info_bytes=50 * MB), tiny))
    tiny = write_hpctoolkit_v4_runs(WORK / "tiny-v4", nodes=20, ranks=1)[0]
    for nodes, ranks in ((1000, 4), (2000, 16), (5000, 64)):
        db = write_hpctoolkit_v4_runs(WORK / f"v4-{nodes}x{ranks}", nodes=nodes, ranks=ranks)[0]
        out.append(("hpctoolkit_v4", db.rename(db.parent.parent / f"v4-{nodes}x{ranks}-db"), tiny))
    return out


def main() -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=pathlib.Path(__file__).parent).stdout.strip()
    print(f"commit {head} (plus the working tree); peak RSS growth over a warm-up read, one process each\n")
    print("| reader | input | input MB | frames | rows | peak RSS growth MB | growth / input | outcome |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for kind, path, tiny in cases():
        r = measure(kind, path, tiny)
        growth = r["growth_kb"] / 1024
        outcome = "read" if "error" not in r else "refused: " + r["error"].split(": ", 1)[-1][:70]
        print(f"| {kind} | {r['input']} | {r['mb']:.1f} | {r.get('frames', '')} | {r.get('rows', '')} | "
              f"{growth:.1f} | {growth / r['mb']:.2f} | {outcome} |", flush=True)


if __name__ == "__main__":
    main()
