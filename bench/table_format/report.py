"""Summarise bench/work/table_format/results.jsonl, one line per measurement (what docs/table-format.md quotes).

    .venv/bin/python bench/table_format/report.py [WORKLOAD ...]
"""

from __future__ import annotations

import json
import pathlib
import sys

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "work" / "table_format" / "results.jsonl"
SKIP = {"command", "load_avg", "date", "workload", "frames", "writers_out"}


def main() -> None:
    want = set(sys.argv[1:])
    for line in RESULTS.read_text().splitlines():
        rec = json.loads(line)
        if want and rec["workload"] not in want:
            continue
        load = "/".join(f"{x:.1f}" for x in rec.get("load_avg", []))
        print(f"## {rec['workload']} {rec.get('store', '')}  ({rec['date']}, load {load})\n   `{rec['command']}`")
        print("   " + json.dumps({k: v for k, v in rec.items() if k not in SKIP}, default=str)[:3000])
        for w in rec.get("writers_out") or []:
            print("     writer", json.dumps(w)[:400])


if __name__ == "__main__":
    main()
