#!/usr/bin/env bash
# Replays every pod list of an Alibaba GPU trace v2023 folder (the release publishes 24:
# default, cpu*, gpushare*, gpuspec*, multigpu*) with `gpubank twin run --trace alibaba:`
# against the folder's openb_node_list_gpu_node.csv, and prints one line per list: exit
# code, pods read, workloads, skip reasons, wall seconds. A list without creation times
# (multigpu*) is expected to exit 1 with trace.empty; every other list must exit 0.
#
#   scripts/alibaba-variants.sh [FOLDER]   (default: ../shared/traces/alibaba-gpu-v2023)
#
# Expects a built gpubank (build/release, else build/asan). Exit 1 when a list does not
# do what is expected of it.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in -h|--help) sed -n '2,12p' "$0"; exit 0 ;; esac
folder="${1:-$root/../shared/traces/alibaba-gpu-v2023}"
gpubank="$root/build/release/cmd/gpubank/gpubank"
[ -x "$gpubank" ] || gpubank="$root/build/asan/cmd/gpubank/gpubank"
[ -x "$gpubank" ] || { echo "alibaba-variants: build gpubank first" >&2; exit 1; }
nodes="$folder/openb_node_list_gpu_node.csv"
[ -f "$nodes" ] || { echo "alibaba-variants: no $nodes" >&2; exit 1; }
summarize='
import json, sys
m = json.load(sys.stdin)["mapping"]
skipped = ", ".join(k + " " + str(v) for k, v in sorted(m["skipped"].items())) or "none"
print("pods %d, workloads %d, skipped %s" % (m["podsRead"], m["workloads"], skipped))
'
bad=0
for pods in "$folder"/openb_pod_list_*.csv; do
  name="$(basename "$pods" .csv)"
  started="$(date +%s.%N)"
  out="$("$gpubank" twin run --trace "alibaba:$pods" --inventory "alibaba:$nodes" -o json 2>/tmp/alibaba-variants.err)"
  code=$?
  ended="$(date +%s.%N)"
  seconds="$(python3 -c "print(f'{$ended - $started:.2f}')")"
  if [ "$code" -eq 0 ]; then
    summary="$(python3 -c "$summarize" <<<"$out")"
  else
    summary="$(grep -o '\[trace\.[a-z-]*\].*' /tmp/alibaba-variants.err | head -1 | cut -c1-160)"
  fi
  if head -1 "$pods" | grep -q creation_time; then want=0; else want=1; fi
  verdict=ok
  if [ "$code" -ne "$want" ]; then verdict="UNEXPECTED (exit $want expected)"; bad=1; fi
  printf '%-28s exit %d  %6ss  %s  %s\n' "$name" "$code" "$seconds" "$verdict" "$summary"
done
exit $bad
