#!/usr/bin/env bash
# Second round, after run_all.sh was stopped at its 4th line (the Iceberg one-commit-per-run runs of run_all.sh
# used a scan plan per commit to find the present hashes: replaced by an incremental read, see
# iceberg_store.runs_head).  Ordered by what the comparison needs most; the caps (commits, seconds) are set
# for a shared 2-core machine and stated in docs/table-format.md.
set -u
cd "$(dirname "$0")/../.."
B="nice -n 10 timeout 2400 .venv/bin/python bench/table_format/bench.py"
for s in parquet delta iceberg; do $B batched --store $s --runs 10000 --per-commit 1000; done
for s in parquet delta iceberg; do $B big --store $s --repeat 2; done
$B big --store delta-default
$B concurrent --store delta --writers 4 --commits 200 --max-seconds 1800
$B concurrent --store iceberg --writers 4 --commits 200 --max-seconds 1800
$B concurrent --store delta --writers 4 --commits 200 --disjoint --max-seconds 1800
$B concurrent --store iceberg --writers 4 --commits 50 --disjoint --max-seconds 1800
for s in delta iceberg; do $B evolve --store $s; $B timetravel --store $s; done
$B compact --store delta --commits 1000
$B compact --store iceberg --commits 300
$B kill --store delta --commits 100 --kills 10
$B kill --store iceberg --commits 50 --kills 10
$B small --store delta --commits 100 --s3
$B small --store iceberg --commits 50 --s3
$B concurrent --store delta --writers 4 --commits 50 --s3 --max-seconds 1800
$B concurrent --store iceberg --writers 4 --commits 25 --s3 --max-seconds 1800
$B small --store delta --commits 10000 --max-seconds 600 --compact-every 100
$B small --store iceberg --commits 1000 --max-seconds 400
$B small --store iceberg --commits 1000 --max-seconds 400 --expire-every 100 --compact-every 100
