#!/usr/bin/env bash
# Every measurement quoted in docs/table-format.md, one after the other, niced (the machine is shared).
# Results: bench/work/table_format/results.jsonl (one JSON object per line, with its command).
# Caps: Iceberg's one-commit-per-run workload stops at 1,000 commits (or 900 s): its commit time grows with
# the number of snapshots (see the doc); the S3 runs use fewer commits (moto is an in-process Python server).
set -u
cd "$(dirname "$0")/../.."
B="nice -n 10 timeout 2400 .venv/bin/python bench/table_format/bench.py"
.venv/bin/python bench/table_format/data.py --small 10000 --big
$B small --store parquet --commits 10000 --max-seconds 1200
$B small --store delta --commits 10000 --max-seconds 1500
$B small --store iceberg --commits 1000 --max-seconds 900
$B small --store iceberg --commits 1000 --max-seconds 900 --expire-every 100
for s in parquet delta iceberg; do $B batched --store $s --runs 10000 --per-commit 1000; done
for s in parquet delta delta-default iceberg; do $B big --store $s; done
for s in delta iceberg; do
  $B concurrent --store $s --writers 4 --commits 200 --max-seconds 1800
  $B concurrent --store $s --writers 4 --commits 200 --disjoint --max-seconds 1800
  $B evolve --store $s
  $B timetravel --store $s
  $B compact --store $s --commits 1000
done
$B small --store delta --commits 200 --s3
$B small --store iceberg --commits 200 --s3
$B concurrent --store delta --writers 4 --commits 200 --s3 --max-seconds 1800
$B concurrent --store iceberg --writers 4 --commits 50 --s3 --max-seconds 1800
