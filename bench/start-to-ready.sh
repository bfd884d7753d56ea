#!/usr/bin/env bash
# Start-to-ready of the built server on an existing data dir (issue 18): spawn → GET /healthz 200
# (curl every 20 ms), and the server's CPU time by then (utime + stime from /proc/<pid>/stat).
# Usage: npm run build && bash bench/start-to-ready.sh DATA_DIR [RUNS=5] [PORT=3556]
# NO_CHECKPOINT=1: remove the load checkpoints before each start (a start-up after a crash;
# a clean stop writes them again).
# A data dir with 1M links (the growth benchmark's, through the import path):
#   node --import tsx bench/growth.ts --import-only /tmp/links-1m 1000000
set -euo pipefail
dir=${1:?data dir}; runs=${2:-5}; port=${3:-3556}
cd "$(dirname "$0")/.."
all=()
for _ in $(seq "$runs"); do
  [ -n "${NO_CHECKPOINT:-}" ] && rm -f "$dir"/.*.checkpoint
  t0=$(date +%s%N)
  PORT=$port DATA_DIR=$dir RATE_LIMITS=off LOG_LEVEL=error node bin/devtoolbox.js serve >/dev/null 2>&1 &
  pid=$!
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$port/healthz" || true)" = 200 ]; do
    kill -0 $pid 2>/dev/null || { echo "the server exited" >&2; exit 1; }
    sleep 0.02
  done
  t1=$(date +%s%N)
  cpu=$(awk '{print ($14 + $15) * 10}' /proc/$pid/stat)
  ms=$(( (t1 - t0) / 1000000 ))
  echo "ready ms $ms · cpu ms $cpu"
  all+=("$ms")
  kill $pid
  t2=$(date +%s%N); wait $pid 2>/dev/null || true
  echo "  stopped in $(( ($(date +%s%N) - t2) / 1000000 )) ms (the clean close writes the checkpoint)"
  sleep 0.3
done
printf '%s\n' "${all[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ready ms " a[int((NR+1)/2)]}'
