"""`make demo`: generate a small TAU ensemble, ingest it into ./demo-lake, and show what perflake does.

Everything here goes through the public API and the `perflake` command, exactly as a user would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "demo-data"
LAKE = ROOT / "demo-lake"
OUT = ROOT / "demo-out"
PERFLAKE = [sys.executable, "-m", "perflake.cli.app"]


def step(title: str, *args: str) -> str:
    print((f"\n=== {title}\n" if title else "") + f"$ perflake {' '.join(args)}", flush=True)
    proc = subprocess.run([*PERFLAKE, *args], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"demo step failed with exit code {proc.returncode}")
    return proc.stdout


def main() -> None:
    for d in (DATA, LAKE, OUT):
        shutil.rmtree(d, ignore_errors=True)
    step("Generate 8 TAU runs x 16 ranks (real TAU format, deterministic)",
         "generate", "tau", str(DATA), "--nodes", "300", "--ranks", "16", "--runs", "8", "--seed", "42")
    step("Ingest them into a lake", "ingest", str(DATA), "--lake", str(LAKE))
    step("Ingest again: nothing new (idempotent)", "ingest", str(DATA), "--lake", str(LAKE))
    step("The catalog", "runs", "--lake", str(LAKE))
    runs = step("Run ids", "sql", "select run_id from runs order by source", "--lake", str(LAKE), "--format", "csv")
    ids = runs.split()[1:]
    step("Call tree of the first run (inclusive time, rank 0, 4 levels)",
         "tree", ids[0], "--lake", str(LAKE), "--depth", "4", "--no-header")
    step("Top-10 imbalanced call paths of the first run (max/mean of exclusive time over ranks)",
         "imbalance", ids[0], "--lake", str(LAKE), "--top", "10")
    step("Compare run 1 with run 2 (mean exclusive time per call path; biggest differences first)",
         "compare", ids[0], ids[1], "--lake", str(LAKE), "--top", "10")
    step("Ensemble: per call path statistics of exclusive time across the 8 runs (first rows)",
         "ensemble", "--lake", str(LAKE), "--stats", "count,mean,std,min,max", "--max-rows", "8")
    step("SQL: the 5 functions with the most exclusive time over the whole ensemble",
         "sql", """select n.name, count(distinct m.run_id) as runs, round(sum(m."time") / 1e6, 3) as total_s
                   from metrics m join nodes n using (run_id, node_id)
                   group by n.name order by total_s desc limit 5""", "--lake", str(LAKE))
    OUT.mkdir(exist_ok=True)
    step("Pictures: a flame graph of the first run and its imbalance per call path",
         "flamegraph", ids[0], "--lake", str(LAKE), "-o", str(OUT / "flamegraph.svg"))
    step("", "plot", "imbalance", ids[0], "--lake", str(LAKE), "--top", "15", "-o", str(OUT / "imbalance.png"))
    print(f"\nThe lake is in {LAKE}, pictures in {OUT}; try: .venv/bin/perflake sql 'select * from runs' "
          f"--lake {LAKE.name}")


if __name__ == "__main__":
    main()
