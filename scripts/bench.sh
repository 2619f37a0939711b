#!/usr/bin/env bash
# Runs gpubank's benchmarks and writes bench/RESULTS.md (see bench/README.md).
#
#   scripts/bench.sh
#
# Installs what is missing (scripts/bootstrap.sh), configures and builds the `release`
# preset's benchmark targets in build/release, runs bench/validate_bench,
# bench/render_bench, bench/webhook_load (closed loop, then paced), bench/webhook_abuse, the admission and
# Kueue scalability benchmarks and bench/store_bench, and writes the
# results with a description of the machine. Progress goes to stderr; the raw outputs
# stay in build/release/bench-results.
# Benchmarks are not tests: ctest never runs this.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="build/release"
out="$build/bench-results"
work="$build/bench-work"  # audit logs and certificates: on the build's disk, not a tmpfs
results="bench/RESULTS.md"

log() { echo "bench: $*" >&2; }

log "bootstrap"
./scripts/bootstrap.sh

log "configure (preset release)"
cmake --preset release -DCMAKE_CXX_FLAGS="" >&2
log "build the benchmarks"
cmake --build --preset release --target validate_bench webhook_load webhook_abuse admission_cycle_bench kueue_perf_bench render_bench \
  store_bench inference_bench telemetry_bench placement_bench watch_bench exporter_bench scan_bench portal_bench gpubank >&2

mkdir -p "$out" "$work"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"

log "validate_bench (5 repetitions, medians)"
"$build/bench/validate_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --summary="$out/validate.md" | tee "$out/validate.txt" >&2

log "render_bench (5 repetitions, medians)"
"$build/bench/render_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --summary="$out/render.md" | tee "$out/render.txt" >&2

log "webhook_load, closed loop: 32 connections, 10000 requests per phase"
"$build/bench/webhook_load" --connections=32 --requests=10000 --work-dir="$work" \
  --summary="$out/webhook.md" | tee "$out/webhook.txt" >&2

log "webhook_load, paced: 32 connections, 100 requests/s, 2000 requests per phase"
"$build/bench/webhook_load" --connections=32 --requests=2000 --rate=100 --in-process-samples=200 \
  --audit-samples=50 --work-dir="$work" --summary="$out/webhook-paced.md" | tee "$out/webhook-paced.txt" >&2

log "webhook_abuse: 200 slow-loris connections, a 1 GiB chunked body and a gzip bomb for 20 s"
"$build/bench/webhook_abuse" --work-dir="$work" --summary="$out/webhook-abuse.md" | tee "$out/webhook-abuse.txt" >&2

log "admission_cycle_bench (2000 cycles per case, 5 runs, interleaved)"
# Five runs of every case: one p99 is the 20th-slowest of 2,000 cycles, and these cycles are
# bound by memory, which the VM shares with other tenants: the same deterministic run has
# taken from 5.4 to 11.1 s of CPU time within a minute while an ALU-bound loop varied by
# under 15 % (bench/README.md). The target is read on the median of the five runs' p99
# (Google Benchmark's median aggregate), and every run's p99 is listed next to a reading of
# the host's cache contention taken with it (bench/cache_probe.hpp), with a second verdict
# for "every run". The runs of the four cases and of the baseline are interleaved in random
# order, so that a slow minute of the host falls on runs of several cases instead of on
# every run of one. Kueue's scenarios run apart, afterwards: interleaved with them, the
# cycle cases ran on a heap those scenarios had churned, about a quarter slower. The output
# is then put back in the benchmarks' own order (a stable sort on their position in
# --benchmark_list_tests).
"$build/bench/admission_cycle_bench" --benchmark_list_tests > "$out/admission-cycle-order.txt"
{
  "$build/bench/admission_cycle_bench" --benchmark_color=false --benchmark_repetitions=5 \
    --benchmark_filter='^(admission_cycle|available_walk)' --benchmark_enable_random_interleaving=true
  "$build/bench/admission_cycle_bench" --benchmark_color=false --benchmark_repetitions=3 --benchmark_filter='^kueue_'
} | tee "$out/admission-cycle-interleaved.txt" >&2
awk 'NR == FNR { sub(/\/iterations:[0-9]+$/, ""); order[$0] = FNR; next }
  { name = $1; sub(/_(mean|median|stddev|cv)$/, "", name); sub(/\/iterations:[0-9]+$/, "", name)
    printf "%d\t%s\n", (name in order) ? order[name] : 0, $0 }' \
  "$out/admission-cycle-order.txt" "$out/admission-cycle-interleaved.txt" | sort -s -n -k1,1 | cut -f2- \
  > "$out/admission-cycle.txt"
# Ratios against the baseline in the same run: the median mean cycle over the median
# available() walk. The aggregate lines (_mean, _median, _stddev, _cv) are left out but for
# the baseline's median.
awk 'function counter(line, key,   f, j) { split(line, f, /[ =]+/); for (j in f) if (f[j] == key) return f[j+1]; return "" }
  function us(v) { if (v ~ /k$/) { sub(/k$/, "", v); return v * 1000 } return v + 0 }
  # The median of v[i, 0..k-1] (the lower middle one for an even k).
  function median(v, i, k,   s, r, j, x) {
    for (r = 0; r < k; r++) s[r] = v[i, r]
    for (r = 1; r < k; r++) { x = s[r]; for (j = r - 1; j >= 0 && s[j] > x; j--) s[j + 1] = s[j]; s[j + 1] = x }
    return s[int((k - 1) / 2)]
  }
  BEGIN {n = 0}
  /^available_walk_median/ {base=$2}
  /^admission_cycle_1000_queues/ && !/_(mean|median|stddev|cv) / {
    name=$1; sub(/\/iterations:[0-9]+/, "", name)
    if (!(name in idx)) { idx[name]=n; names[n]=name; n++ }
    i=idx[name]; r=runs[i]++
    t[i, r]=$2; p50[i, r]=us(counter($0, "p50_us")); p99[i, r]=us(counter($0, "p99_us")); probe[i, r]=counter($0, "probe_ns")
    heads[i]=counter($0, "heads_per_cycle"); dec[i]=counter($0, "decisions_per_cycle")
  }
  END {
    print "| case | mean cycle (us) | x available() walk | p50 (us) | p99 (us), median of runs | p99 (us), each run | cache probe (ns), each run | heads/cycle | decisions/cycle |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 0; i < n; i++) {
      k = runs[i]; worst = 0; list = ""; probes = ""
      for (r = 0; r < k; r++) {
        list = list sprintf("%s%.0f", r ? ", " : "", p99[i, r]); if (p99[i, r] > worst) worst = p99[i, r]
        probes = probes sprintf("%s%.0f", r ? ", " : "", probe[i, r])
      }
      tm = median(t, i, k); pm = median(p50, i, k); p99m = median(p99, i, k)
      printf "| %s | %s | %.1f | %.0f | %.0f | %s | %s | %s | %s |\n", names[i], tm, tm / base, pm, p99m, list, probes, heads[i], dec[i]
      if (p99m < 1000) met++; else missed = missed sprintf("%s%s, %.2f ms", missed == "" ? "" : "; ", names[i], p99m / 1000)
      if (worst < 1000) met_all++; else missed_all = missed_all sprintf("%s%s, slowest run %.2f ms", missed_all == "" ? "" : "; ", names[i], worst / 1000)
    }
    printf "\nMean cycle, p50 and the p99 of the median run: medians over the %d runs of each case. Baseline `available_walk` (Available() once per queue, 1,000 queues): %s us (median). Cache probe: ns per dependent load through 8 MiB, read before and after each run, the larger of the two (about 25-30 ns when the host is quiet).\n", k, base
    printf "\n**Target: an admission cycle over 1,000 queues under 1 ms at p99 (the median of %d runs): %s** (%d of %d cases%s).\n",
      k, met == n ? "met" : "NOT met", met, n, missed == "" ? "" : "; not met: " missed
    printf "\nIn every run: %s (%d of %d cases%s).\n",
      met_all == n ? "met" : "not met", met_all, n, missed_all == "" ? "" : "; not met: " missed_all
  }' "$out/admission-cycle.txt" > "$out/admission-cycle.md"
# Every cycle of Kueue's own large-scale and baseline scenarios, timed one by one, each run.
awk 'BEGIN { print "\n| Kueue scenario | run | cycles | heads/cycle (max) | p50 (us) | p99 (us) | max (us) |"
             print "|---|---|---|---|---|---|---|" }
  /^kueue_(large_scale|baseline)_cycles/ && !/_(mean|median|stddev|cv) / {
    split($0, f, /[ =]+/); c=""; p50=""; p99=""; mx=""; h=""; mh=""
    for (j in f) { if (f[j] == "cycles") c=f[j+1]; if (f[j] == "p50_us") p50=f[j+1]; if (f[j] == "p99_us") p99=f[j+1];
                   if (f[j] == "max_us") mx=f[j+1]; if (f[j] == "heads_per_cycle") h=f[j+1]; if (f[j] == "max_heads") mh=f[j+1] }
    name=$1; sub(/\/iterations:[0-9]+/, "", name)
    printf "| %s | %d | %s | %s (%s) | %s | %s | %s |\n", name, ++run[name], c, h, mh, p50, p99, mx
  }' "$out/admission-cycle.txt" >> "$out/admission-cycle.md"

for config in baseline large-scale; do
  log "kueue_perf_bench on $config-generator.yaml"
  "$build/bench/kueue_perf_bench" --config="../shared/kueue-perf/$config-generator.yaml" \
    --summary="$out/kueue-perf-$config.md" | tee "$out/kueue-perf-$config.txt" >&2
  log "gpubank twin kueue-perf $config-generator.yaml"
  "$build/cmd/gpubank/gpubank" twin kueue-perf "../shared/kueue-perf/$config-generator.yaml" \
    > "$out/kueue-perf-$config-cli.txt" 2>/dev/null
done

log "store_bench (3 repetitions, medians; SQLite files in $work, a private PostgreSQL server)"
"$build/bench/store_bench" --work-dir="$work/store" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --summary="$out/store.md" | tee "$out/store.txt" >&2

log "inference_bench (3 repetitions, medians; one day of diurnal load)"
"$build/bench/inference_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --summary="$out/inference.md" | tee "$out/inference.txt" >&2
log "telemetry_bench (3 repetitions, medians)"
"$build/bench/telemetry_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --summary="$out/telemetry.md" | tee "$out/telemetry.txt" >&2
log "placement_bench (3 repetitions, medians; the Alibaba v2023 inventory)"
"$build/bench/placement_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --summary="$out/placement.md" | tee "$out/placement.txt" >&2

log "watch_bench (5 repetitions, medians; 5,000 Workloads, a burst of 10,000 updates, the fake API server in a child process)"
"$build/bench/watch_bench" --repetitions=5 --summary="$out/watch.md" | tee "$out/watch.txt" >&2

log "exporter_bench (3 repetitions, medians; 8 GPUs x 7 MIG x 30 fields, 10 scrapers, a 60 s soak; the 1-hour soak is --soak-seconds 3600)"
"$build/bench/exporter_bench" --repetitions 3 --summary "$out/exporter.md" | tee "$out/exporter.txt" >&2

# The scan reads a real Prometheus (Debian's, installed by bootstrap.sh) that scrapes the
# series from the benchmark; its data and SQLite stores go to $work/scan_bench, removed after.
log "scan_bench (5 repetitions, medians; 10,000 workloads on 20,000 GPUs in a real Prometheus, a sample every 60 s, and every 30 s)"
"$build/bench/scan_bench" --work-dir="$work" --summary="$out/scan.md" | tee "$out/scan.txt" >&2
"$build/bench/scan_bench" --work-dir="$work" --step-seconds=30 --summary="$out/scan-30s.md" | tee "$out/scan-30s.txt" >&2

log "portal_bench (the overview's requests at the example's size and at 15x: 2,040 GPUs; the 7-day impact preview: fluid serving 3 runs, every request once)"
"$build/bench/portal_bench" --summary="$out/portal.md" | tee "$out/portal.txt" >&2

log "twin run's scaling (bench/replay.sh): the Alibaba v2023 default list 1x..128x, a backlog of 5,000..40,000 workloads"
GPUBANK="$build/cmd/gpubank/gpubank" bench/replay.sh > "$out/trace.md"

log "FGD's fragmentation experiment (bench/fragment.sh): every policy, seeds 1..5${ALIBABA_RELEASE:+, and the lists in $ALIBABA_RELEASE}"
GPUBANK="$build/cmd/gpubank/gpubank" bench/fragment.sh ${ALIBABA_RELEASE:+"$ALIBABA_RELEASE"} > "$out/fragment.md"

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the machine -------------------------------------------------------------------------
lscpu_field() { lscpu | sed -n "s/^$1:[[:space:]]*//p" | head -1; }
cpu_model="$(lscpu_field 'Model name')"
sockets="$(lscpu_field 'Socket(s)')"
cores_per_socket="$(lscpu_field 'Core(s) per socket')"
threads_per_core="$(lscpu_field 'Thread(s) per core')"
hypervisor="$(lscpu_field 'Hypervisor vendor')"
if [ -z "$hypervisor" ] && grep -qw hypervisor /proc/cpuinfo; then hypervisor="hypervisor not named"; fi
memory="$(free -h | awk '/^Mem:/ {print $2}')"
os="$(. /etc/os-release && echo "$PRETTY_NAME")"
kernel="$(uname -srm)"
compiler="$(g++ --version | head -1)"
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
build_type="$(cache CMAKE_BUILD_TYPE)"
flags="$(cache CMAKE_CXX_FLAGS) $(cache CMAKE_CXX_FLAGS_RELEASE)"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench ':!bench/RESULTS.md' && echo '' || echo ' (with uncommitted changes)')"
libs="$(dpkg-query -W -f='${Package} ${Version}, ' libyaml-cpp-dev libcpp-httplib-dev libssl-dev libbenchmark-dev \
  nlohmann-json3-dev libsqlite3-dev libpqxx-dev postgresql-15 libmimalloc-dev prometheus 2>/dev/null | sed 's/, $//')"
allocator="$(test "$(cache GPUBANK_MIMALLOC)" = ON && echo "mimalloc (GPUBANK_MIMALLOC=ON), for gpubank and every benchmark" || echo "glibc malloc")"

log "serving comparison (scripts/bench-serving.sh): seeds 1..5, seeded load and Azure LLM traces"
./scripts/bench-serving.sh --section "$out/serving-section.md" >&2

log "write $results"
{
  echo "# Benchmark results"
  echo
  echo "Written by \`scripts/bench.sh\` (what is measured: [README.md](README.md)). Numbers are from one run on"
  echo "the machine below; compare ratios within a run rather than absolute numbers across machines."
  echo
  echo "- Date: $started"
  echo "- Commit: $commit"
  echo "- CPU: $cpu_model; $(nproc) logical CPUs ($sockets socket(s) x $cores_per_socket core(s) x $threads_per_core thread(s))${hypervisor:+, virtualised ($hypervisor)}"
  echo "- Memory: $memory"
  echo "- OS: $os, $kernel"
  echo "- Compiler: $compiler"
  echo "- Build: CMake preset \`release\`, CMAKE_BUILD_TYPE=$build_type, flags \`$(echo $flags)\`"
  echo "- Libraries: $libs"
  echo "- Process allocator: $allocator"
  echo "- Load average (1, 5, 15 min) before the run: $load_before; after: $load_after. Anything else running on the"
  echo "  machine competes with the benchmarks for its $(nproc) CPUs."
  echo
  echo "## Policy validation: bench/validate_bench"
  echo
  cat "$out/validate.md"
  echo
  echo "## Rendering policies into engine objects: bench/render_bench"
  echo
  cat "$out/render.md"
  echo
  echo "## Admission webhook: bench/webhook_load, closed loop"
  echo
  cat "$out/webhook.md"
  echo
  echo "## Admission webhook: bench/webhook_load, paced at 100 requests/s"
  echo
  cat "$out/webhook-paced.md"
  echo
  echo "## Admission webhook under attack: bench/webhook_abuse"
  echo
  cat "$out/webhook-abuse.md"
  echo
  echo "## Twin admission cycle: bench/admission_cycle_bench"
  echo
  cat "$out/admission-cycle.md"
  echo
  echo "## The store and the ledger book: bench/store_bench"
  echo
  cat "$out/store.md"
  echo
  echo "## Inference serving in the twin: bench/inference_bench"
  echo
  cat "$out/inference.md"
  echo
  echo "## One scrape of the twin's dcgm-exporter, 6,212 GPUs: bench/telemetry_bench"
  echo
  cat "$out/telemetry.md"
  echo
  echo "## Placement on the Alibaba v2023 inventory: bench/placement_bench"
  echo
  cat "$out/placement.md"
  echo
  echo "## Watching 10,000 Workload updates: bench/watch_bench"
  echo
  cat "$out/watch.md"
  echo
  echo "## The node exporter, 8 GPUs x 7 MIG instances x 30 fields: bench/exporter_bench"
  echo
  cat "$out/exporter.md"
  echo
  echo "## The low-utilisation scan, 10,000 workloads on 20,000 GPUs: bench/scan_bench"
  echo
  echo "### A sample every 60 s"
  echo
  cat "$out/scan.md"
  echo
  echo "### A sample every 30 s"
  echo
  cat "$out/scan-30s.md"
  echo
  echo "## The portal's API and the impact preview: bench/portal_bench"
  echo
  cat "$out/portal.md"
  echo
  echo "<!-- bench-serving:begin -->"
  echo "## Serving: the autoscaler against the smallest static count that meets the SLO"
  echo
  cat "$out/serving-section.md"
  echo "<!-- bench-serving:end -->"
  echo
  echo "## How \`gpubank twin run\` scales: bench/replay.sh"
  echo
  cat "$out/trace.md"
  echo
  echo "## FGD's fragmentation experiment: \`gpubank twin fragment\` (bench/fragment.sh)"
  echo
  echo "docs/twin-fragment.md says what is measured. Unallocated GPUs of 6,212, mean over seeds 1..5;"
  echo "the artifact's columns are the means of its 10 seeds (hkust-adsl/kubernetes-scheduler-simulator,"
  echo "experiments/analysis/expected_results/analysis_allo_discrete.csv). Set ALIBABA_RELEASE to a folder"
  echo "with the release's 24 pod lists to include them all."
  echo
  cat "$out/fragment.md"
  echo
  if [ -f bench/kueue-perf-notes.md ]; then cat bench/kueue-perf-notes.md; echo; fi
  for config in baseline large-scale; do
    echo "## Kueue's scalability scenario \`$config-generator.yaml\` on the twin"
    echo
    echo "### bench/kueue_perf_bench"
    echo
    cat "$out/kueue-perf-$config.md"
    echo
    echo "### \`gpubank twin kueue-perf ../shared/kueue-perf/$config-generator.yaml\`"
    echo
    echo '```'
    cat "$out/kueue-perf-$config-cli.txt"
    echo '```'
    echo
  done
} > "$results"
log "done: $results"
