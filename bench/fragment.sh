#!/usr/bin/env bash
# FGD's arrival experiment (gpubank twin fragment) for every placement policy on the Alibaba
# v2023 pod lists, next to the figures of the authors' artifact.
#
#   bench/fragment.sh [FOLDER]
#
# Runs every policy with seeds 1..5 (SEEDS="1 2 3" to change) on openb_pod_list_default,
# gpushare100 and multigpu50 of ../shared/traces/alibaba-gpu-v2023 and on every other
# openb_pod_list_*.csv in FOLDER, against openb_node_list_gpu_node.csv, and prints a
# markdown table: unallocated GPUs at 100 % and 130 % arrived GPU demand (mean over the
# seeds), FGD's ratio to each policy at 100 %, the artifact's means (10 seeds,
# experiments/analysis/expected_results/analysis_allo_discrete.csv of
# hkust-adsl/kubernetes-scheduler-simulator; its seeds are Go's math/rand, ours
# mt19937_64, so only means compare) and the wall time of one run.
#
# Environment: GPUBANK (default build/release/cmd/gpubank/gpubank), SHARED (default
# ../shared/traces/alibaba-gpu-v2023 next to the repository), SEEDS. Needs jq.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPUBANK=${GPUBANK:-$ROOT/build/release/cmd/gpubank/gpubank}
SHARED=${SHARED:-$ROOT/../shared/traces/alibaba-gpu-v2023}
SEEDS=${SEEDS:-1 2 3 4 5}
POLICIES="fgd fgd-exact best-fit dot-product packing clustering random"
NODES=$SHARED/openb_node_list_gpu_node.csv

command -v jq >/dev/null || { echo "bench/fragment.sh: needs jq" >&2; exit 2; }
[ -x "$GPUBANK" ] || { echo "bench/fragment.sh: no gpubank at $GPUBANK (set GPUBANK)" >&2; exit 2; }
[ -r "$NODES" ] || { echo "bench/fragment.sh: no node list at $NODES (set SHARED)" >&2; exit 2; }

# The pod lists: the shared three, then FOLDER's others (by name, each once).
declare -A seen
LISTS=()
for name in default gpushare100 multigpu50; do
  LISTS+=("$SHARED/openb_pod_list_$name.csv")
  seen[$name]=1
done
if [ $# -ge 1 ]; then
  for file in "$1"/openb_pod_list_*.csv; do
    [ -e "$file" ] || continue
    name=$(basename "$file" .csv)
    name=${name#openb_pod_list_}
    [ -n "${seen[$name]:-}" ] && continue
    LISTS+=("$file")
    seen[$name]=1
  done
fi

# The artifact's means: trace policy unallocated@100 unallocated@130 (GPUs of 6,212).
declare -A PAPER
while read -r trace policy at100 at130; do
  PAPER[$trace/$policy]="$at100 $at130"
done <<'PAPER_FIGURES'
cpu050 best-fit 400.1 385.5
cpu050 clustering 402.5 386.0
cpu050 dot-product 432.7 418.3
cpu050 fgd 310.8 297.8
cpu050 packing 406.1 390.3
cpu050 random 682.0 544.0
cpu100 best-fit 418.5 407.3
cpu100 clustering 471.2 457.0
cpu100 dot-product 513.7 499.8
cpu100 fgd 297.7 288.6
cpu100 packing 466.2 452.5
cpu100 random 780.5 676.3
cpu200 best-fit 487.5 472.1
cpu200 clustering 641.9 626.1
cpu200 dot-product 779.3 763.8
cpu200 fgd 321.5 307.8
cpu200 packing 622.5 607.2
cpu200 random 1054.4 1008.2
cpu250 best-fit 546.0 531.4
cpu250 clustering 760.9 746.1
cpu250 dot-product 1020.6 1006.0
cpu250 fgd 422.7 409.3
cpu250 packing 742.4 728.0
cpu250 random 1242.5 1216.6
default best-fit 443.4 430.1
default clustering 518.7 504.5
default dot-product 582.6 568.5
default fgd 296.5 286.3
default packing 510.7 496.8
default random 850.9 778.4
gpushare100 best-fit 955.7 931.4
gpushare100 clustering 1104.2 1078.0
gpushare100 dot-product 1119.5 1092.3
gpushare100 fgd 829.9 813.7
gpushare100 packing 1109.8 1082.9
gpushare100 random 1310.7 1277.0
gpushare40 best-fit 531.6 516.3
gpushare40 clustering 636.3 620.3
gpushare40 dot-product 664.4 648.6
gpushare40 fgd 375.1 363.5
gpushare40 packing 635.2 619.3
gpushare40 random 940.2 869.6
gpushare60 best-fit 679.6 661.0
gpushare60 clustering 813.7 794.9
gpushare60 dot-product 819.0 800.4
gpushare60 fgd 543.2 534.2
gpushare60 packing 798.4 779.8
gpushare60 random 1068.0 1015.5
gpushare80 best-fit 828.9 807.1
gpushare80 clustering 963.0 941.2
gpushare80 dot-product 985.5 963.7
gpushare80 fgd 678.2 664.4
gpushare80 packing 953.7 931.9
gpushare80 random 1203.8 1166.4
gpuspec10 best-fit 428.7 415.9
gpuspec10 clustering 499.7 486.0
gpuspec10 dot-product 610.4 597.0
gpuspec10 fgd 331.5 313.8
gpuspec10 packing 482.2 468.4
gpuspec10 random 853.7 781.0
gpuspec20 best-fit 716.7 416.4
gpuspec20 clustering 676.5 481.7
gpuspec20 dot-product 727.3 623.2
gpuspec20 fgd 331.6 320.7
gpuspec20 packing 665.7 438.8
gpuspec20 random 875.8 792.7
gpuspec25 best-fit 890.2 420.5
gpuspec25 clustering 844.5 492.0
gpuspec25 dot-product 904.6 643.9
gpuspec25 fgd 378.5 326.7
gpuspec25 packing 821.7 435.9
gpuspec25 random 905.8 811.5
gpuspec33 best-fit 1217.9 429.1
gpuspec33 clustering 1174.7 489.7
gpuspec33 dot-product 1253.8 674.4
gpuspec33 fgd 755.6 338.7
gpuspec33 packing 1104.6 421.2
gpuspec33 random 1002.2 841.4
multigpu20 best-fit 389.2 376.9
multigpu20 clustering 413.5 400.2
multigpu20 dot-product 506.5 493.1
multigpu20 fgd 277.8 270.2
multigpu20 packing 403.8 390.7
multigpu20 random 812.6 702.5
multigpu30 best-fit 337.6 328.1
multigpu30 clustering 338.4 327.9
multigpu30 dot-product 428.3 417.4
multigpu30 fgd 226.3 220.2
multigpu30 packing 329.0 318.5
multigpu30 random 830.5 666.8
multigpu40 best-fit 304.5 296.0
multigpu40 clustering 289.1 279.3
multigpu40 dot-product 370.2 360.7
multigpu40 fgd 192.2 187.0
multigpu40 packing 273.8 264.6
multigpu40 random 908.5 615.5
multigpu50 best-fit 271.9 264.8
multigpu50 clustering 268.0 260.2
multigpu50 dot-product 327.5 319.9
multigpu50 fgd 180.5 175.3
multigpu50 packing 244.5 237.2
multigpu50 random 1162.8 604.1
PAPER_FIGURES

mean() { awk '{ s += $1 } END { if (NR) printf "%.1f", s / NR; else printf "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "-" && b != "-" && b > 0) printf "%.2f", a / b; else printf "-" }'; }

echo "| trace | policy | unallocated GPUs @100% | @130% | FGD / policy @100% | artifact @100% | artifact @130% | artifact FGD / policy @100% | s per run |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for list in "${LISTS[@]}"; do
  trace=$(basename "$list" .csv)
  trace=${trace#openb_pod_list_}
  declare -A at100=() at130=() seconds=()
  for policy in $POLICIES; do
    values100="" values130="" times=""
    for seed in $SEEDS; do
      start=$(date +%s.%N)
      json=$("$GPUBANK" twin fragment --trace "alibaba:$list" --inventory "alibaba:$NODES" \
               --placement "$policy" --seed "$seed" -o json)
      end=$(date +%s.%N)
      times+="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"$'\n'
      values100+="$(jq '.series[] | select(.arrivedPercent == 100) | .unallocatedGpus' <<<"$json")"$'\n'
      values130+="$(jq '.series[] | select(.arrivedPercent == 130) | .unallocatedGpus' <<<"$json")"$'\n'
    done
    at100[$policy]=$(printf '%s' "$values100" | mean)
    at130[$policy]=$(printf '%s' "$values130" | mean)
    seconds[$policy]=$(printf '%s' "$times" | awk '{ s += $1 } END { printf "%.2f", s / NR }')
  done
  read -r paper_fgd100 _ <<<"${PAPER[$trace/fgd]:--  -}"
  for policy in $POLICIES; do
    read -r paper100 paper130 <<<"${PAPER[$trace/$policy]:--  -}"
    echo "| $trace | $policy | ${at100[$policy]} | ${at130[$policy]} | $(ratio "${at100[fgd]}" "${at100[$policy]}") |" \
         "$paper100 | $paper130 | $(ratio "$paper_fgd100" "$paper100") | ${seconds[$policy]} |"
  done
  unset at100 at130 seconds
done
