#!/usr/bin/env bash
# How `gpubank twin run` scales with the work it replays: the Alibaba v2023 default pod list
# in seeded copies (1x to 128x the pods on the same 6,212 GPUs, so the larger runs back up),
# and a backlog of one-GPU workloads arriving a second apart on the example policies' 64-GPU
# pool (5,000 to 40,000; each runs 10 minutes, so thousands wait). Prints two Markdown tables
# with each run's wall time next to the smallest run of the same kind and the previous row
# (the growth per doubling of work).
#
#   bench/replay.sh > replay.md        # GPUBANK=path/to/gpubank (default build/release/...)
#
# Called by scripts/bench.sh; also runs alone. Timings depend on the machine; the event
# counts are deterministic.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
gpubank="${GPUBANK:-build/release/cmd/gpubank/gpubank}"
alibaba="${ALIBABA:-../shared/traces/alibaba-gpu-v2023}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log() { echo "replay: $*" >&2; }

# One run: "<workloads> <events> <wall s> <peak MiB>" from the run's stderr summary. The
# first argument is the workload count when the output does not give it (a scenario file).
measure() {
  local count="$1" err="$work/run.err" json="$work/run.json"
  shift
  "$@" -o json > "$json" 2> "$err"
  local line workloads
  line="$(grep 'events in' "$err")"
  workloads="$(grep -o '"workloads": [0-9]*' "$json" | head -1 | grep -o '[0-9]*$' || true)"
  workloads="${workloads:-$count}"
  echo "$line" | awk -v n="$workloads" '{ for (i = 1; i <= NF; i++) { if ($i == "events" && $(i+1) == "in") { ev = $(i-1); wall = $(i+2) }
                                           if ($i == "memory") mem = $(i+1) }
                                          print n, ev, wall, mem }'
}

# Table rows from "<label> <workloads> <events> <wall> <mem>" lines on stdin.
rows() {
  awk '{ per = $4 / $2
         if (NR == 1) { bw = $4; bp = per }
         growth = NR == 1 ? "-" : sprintf("%.2f", ($4 / pw) / ($2 / pn))
         printf "| %s | %s | %s | %.2f | %.0f | %s | %.2f | %.2f | %s |\n", $1, $2, $3, $4, $3 / $4, $5, $4 / bw, per / bp, growth
         pw = $4; pn = $2 }'
}

header='| %s | workloads | events | wall (s) | events/s | peak memory (MiB) | wall vs first | wall per workload vs first | growth vs previous row, per unit of work |'

log "the Alibaba default list: 1x to 128x the pods"
{
  for k in 1 4 16 64 96 128; do
    log "  ${k}x"
    echo "${k}x $(measure - "$gpubank" twin run --trace "alibaba:$alibaba/openb_pod_list_default.csv" \
      --inventory "alibaba:$alibaba/openb_node_list_gpu_node.csv" --replicate "$k")"
  done
} > "$work/alibaba.txt"

log "a backlog of one-GPU workloads a second apart: 5,000 to 40,000"
{
  for n in 5000 10000 20000 40000; do
    log "  $n"
    python3 - "$n" > "$work/backlog-$n.yaml" <<'EOF'
import sys
n = int(sys.argv[1])
print('start: "2026-12-01T00:00:00Z"')
print("workloads:")
for i in range(n):
    print(f"- {{name: w{i}, businessGroup: ads, resourcePool: h100-rdma-training, gpus: 1, workloadType: batch,"
          f" priorityClass: batch-low, arrivalTime: {i}s, runTime: 10m}}")
EOF
    echo "$n $(measure "$n" "$gpubank" twin run --policies examples/policies --workloads "$work/backlog-$n.yaml")"
  done
} > "$work/backlog.txt"

echo "### The Alibaba v2023 default pod list in seeded copies (\`--replicate K\`)"
echo
printf "$header\n" copies
echo "|---|---|---|---|---|---|---|---|---|"
rows < "$work/alibaba.txt"
echo
echo "### A backlog: N one-GPU workloads of ads, one a second, 10 minutes each, on h100-rdma-training (64 GPUs)"
echo
printf "$header\n" N
echo "|---|---|---|---|---|---|---|---|---|"
rows < "$work/backlog.txt"
echo
echo "The growth column is (wall / previous wall) / (workloads / previous workloads): 1.00 is linear;"
echo "the goal is at most 1.10 per doubling (2.2x the time for 2x the work)."
