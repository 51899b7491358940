#!/usr/bin/env bash
# Third round: the concurrent workload on the loopback S3 server at full size (run_more.sh ran it capped).
set -u
cd "$(dirname "$0")/../.."
B="nice -n 10 timeout 2400 .venv/bin/python bench/table_format/bench.py"
$B concurrent --store delta --writers 4 --commits 200 --s3 --max-seconds 1800
$B small --store delta --commits 1000 --s3 --max-seconds 600
$B concurrent --store iceberg --writers 4 --commits 100 --s3 --max-seconds 1500
