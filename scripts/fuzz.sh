#!/usr/bin/env bash
# Builds the libFuzzer targets (the "fuzz" preset: clang 14, ASan + UBSan) and runs each
# for a fixed time on its seed corpus.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Without SECONDS_PER_TARGET, kueue_admit_fuzzer runs 20 s, policy_decoder_fuzzer 11 s,
# metrics_text_fuzzer and ledger_json_fuzzer 8 s, apply_fuzzer, lease_fuzzer, snapshot_fuzzer, enrich_fuzzer, scan_record_fuzzer, token_fuzzer, proposal_fuzzer and scale_fuzzer 5 s
# and every other target 9 s (about 2.9 minutes of fuzzing in all, 1.5 minutes of wall time on
# CI's two CPUs: its 30-minute budget; long runs are `scripts/fuzz.sh 600`);
# without targets, all of them run. Targets run side by side, FUZZ_JOBS at a time (default:
# one per CPU).
#
# Corpora live in build/fuzz/corpus/<target> (seeds are copied in on every run, what the
# fuzzer finds is kept for the next run); logs in build/fuzz/logs/<target>.log. A crash,
# leak, timeout or out-of-memory leaves its reproducer in build/fuzz/artifacts/ and makes
# the script exit 1, after the remaining targets have run. Reproduce one with
#   build/fuzz/fuzz/<target> build/fuzz/artifacts/<target>-crash-<sha1>
# Extra libFuzzer flags can be passed in FUZZ_FLAGS (e.g. FUZZ_FLAGS="-seed=1 -max_len=8192").
# FUZZ_PRESET=asan uses the fuzzers the test build made (-O0, what scripts/test.sh does)
# instead of building the -O1 "fuzz" preset.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

all_targets=(policy_decoder_fuzzer policy_render_fuzzer json_reader_fuzzer admission_review_fuzzer cron_fuzzer kueue_admit_fuzzer
             kueue_perf_config_fuzzer schema_validate_fuzzer twin_scenario_fuzzer metrics_text_fuzzer
             ledger_json_fuzzer trace_reader_fuzzer twin_inventory_fuzzer prometheus_query_fuzzer kubeconfig_fuzzer
             watch_event_fuzzer apply_fuzzer lease_fuzzer snapshot_fuzzer enrich_fuzzer scan_record_fuzzer token_fuzzer proposal_fuzzer
             scale_fuzzer)

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit "${1:-2}"
}
case "${1:-}" in -h | --help) usage 0 ;; esac

seconds=""
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "fuzz.sh: unknown target \"$t\" (targets: ${all_targets[*]})" >&2; usage ;;
  esac
done

default_seconds() {
  case "$1" in
    policy_decoder_fuzzer) echo 11 ;;  # 9 s went to policy_render_fuzzer, which reads the same input
    kueue_admit_fuzzer) echo 20 ;;
    metrics_text_fuzzer) echo 8 ;;
    ledger_json_fuzzer) echo 8 ;;
    apply_fuzzer | lease_fuzzer | snapshot_fuzzer | enrich_fuzzer | scan_record_fuzzer | token_fuzzer | proposal_fuzzer | scale_fuzzer) echo 5 ;;  # small, pure: a few seconds cover them
    *) echo 9 ;;
  esac
}

# Seed files of a target, one path per line.
seeds() {
  case "$1" in
    policy_decoder_fuzzer) find examples/policies examples/invalid fuzz/corpus-seeds/policy fuzz/corpus-seeds/policy-render -type f -name '*.yaml' ;;
    policy_render_fuzzer) find fuzz/corpus-seeds/policy-render -type f -name '*.yaml' ;;
    json_reader_fuzzer) find fuzz/corpus-seeds/json fuzz/corpus-seeds/admission -type f ;;
    admission_review_fuzzer) find fuzz/corpus-seeds/admission -type f ;;
    cron_fuzzer) find fuzz/corpus-seeds/cron -type f ;;
    kueue_admit_fuzzer) find tests/twin/conformance -name input.yaml; find examples/kueue -type f -name '*.yaml' ;;
    kueue_perf_config_fuzzer) find ../shared/kueue-perf -name '*-generator.yaml'; find tests/twin/kueue_perf/data -type f ;;
    schema_validate_fuzzer) find examples/kueue tests/schema/data tests/kueue/data -type f -name '*.yaml' ;;
    twin_scenario_fuzzer) find examples/scenarios tests/twin/run/data -type f -name '*.yaml' ;;
    metrics_text_fuzzer) find fuzz/corpus-seeds/metrics -type f ;;
    ledger_json_fuzzer) find fuzz/corpus-seeds/ledger -type f ;;
    trace_reader_fuzzer) find fuzz/corpus-seeds/trace -type f ;;
    prometheus_query_fuzzer) find fuzz/corpus-seeds/prometheus fuzz/corpus-seeds/metrics -type f ;;
    twin_inventory_fuzzer) find examples/inventory fuzz/corpus-seeds/inventory -type f; find ../shared/traces/alibaba-gpu-v2023 -name openb_node_list_gpu_node.csv ;;
    kubeconfig_fuzzer) find fuzz/corpus-seeds/kubeconfig -type f ;;
    watch_event_fuzzer) find fuzz/corpus-seeds/watch -type f ;;
    apply_fuzzer) find fuzz/corpus-seeds/apply -type f ;;
    lease_fuzzer) find fuzz/corpus-seeds/lease -type f ;;
    snapshot_fuzzer) find fuzz/corpus-seeds/snapshot -type f ;;
    enrich_fuzzer) find fuzz/corpus-seeds/enrich -type f ;;
    scan_record_fuzzer) find fuzz/corpus-seeds/scan fuzz/corpus-seeds/prometheus -type f ;;
    token_fuzzer) find fuzz/corpus-seeds/token -type f ;;
    proposal_fuzzer) find examples/policies examples/invalid -type f -name '*.yaml' ;;
    scale_fuzzer) find fuzz/corpus-seeds/scale -type f ;;
  esac
}

preset="${FUZZ_PRESET:-fuzz}"
case "$preset" in fuzz | asan) ;; *) echo "fuzz.sh: FUZZ_PRESET must be fuzz or asan" >&2; usage ;; esac
build_dir=build/$preset
mkdir -p "$build_dir/logs"
echo "fuzz.sh: building ${targets[*]} (preset $preset)" >&2
if ! { cmake --preset "$preset" && cmake --build --preset "$preset" --target "${targets[@]}"; } >"$build_dir/logs/build.log" 2>&1; then
  tail -n 40 "$build_dir/logs/build.log" >&2
  echo "fuzz.sh: build failed (log: $build_dir/logs/build.log)" >&2
  exit 1
fi

mkdir -p "$build_dir/artifacts"
export GPUBANK_SOURCE_DIR="$repo"  # the admission fuzzer loads examples/policies
export GPUBANK_SHARED_DIR="$repo/../shared"  # the schema fuzzer loads a CRD from ../shared/crds
read -r -a extra_flags <<<"${FUZZ_FLAGS:-}"

# One target: seeds, run, verdict on stderr; returns 1 when it found something.
run_target() {
  local t="$1"
  local corpus="$build_dir/corpus/$t"
  mkdir -p "$corpus"
  # Copied under their own names, so reruns overwrite rather than duplicate them.
  while IFS= read -r f; do
    cp "$f" "$corpus/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
  done < <(seeds "$t")
  if [ "$t" = policy_render_fuzzer ]; then
    # A whole valid platform in one input (the render invariants need a set that validates).
    first=1
    for f in examples/policies/*.yaml; do
      [ "$first" = 1 ] || echo ---
      first=0
      cat "$f"
    done >"$corpus/seed-examples-policies.yaml"
  fi

  flags=(-max_total_time="${seconds:-$(default_seconds "$t")}" -timeout=10 -rss_limit_mb=2048
         -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$t-")
  case "$t" in
    policy_decoder_fuzzer | policy_render_fuzzer | kueue_admit_fuzzer | kueue_perf_config_fuzzer | schema_validate_fuzzer | twin_scenario_fuzzer | twin_inventory_fuzzer | kubeconfig_fuzzer | proposal_fuzzer) flags+=(-dict=fuzz/yaml.dict) ;;
    metrics_text_fuzzer | enrich_fuzzer) flags+=(-dict=fuzz/metrics.dict) ;;
    prometheus_query_fuzzer | scan_record_fuzzer) flags+=(-dict=fuzz/prometheus.dict) ;;
    lease_fuzzer) flags+=(-dict=fuzz/lease.dict) ;;
  esac

  log="$build_dir/logs/$t.log"
  before="$(ls "$build_dir/artifacts" | grep -c "^$t-" || true)"
  set +e
  "$build_dir/fuzz/$t" "${flags[@]}" "${extra_flags[@]}" "$corpus" >"$log" 2>&1
  rc=$?
  set -e
  after="$(ls "$build_dir/artifacts" | grep -c "^$t-" || true)"

  # The last status line ("#123456 DONE cov: 2345 ft: 6789 corp: 321/45Kb ...") and the
  # final stats.
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  per_sec="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  status_line="$(grep -E '^#[0-9]+' "$log" | tail -1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status_line")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status_line")"
  corp="$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$status_line")"
  summary="${runs:-?} runs (${per_sec:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"

  if [ "$rc" -eq 0 ] && [ "$after" -eq "$before" ]; then
    echo "fuzz.sh: $t: ok: $summary" >&2
  else
    failed=1
    what="$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer|UndefinedBehaviorSanitizer)[^(]*|runtime error: .*' "$log" || true)"
    artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
    echo "fuzz.sh: $t: FAILED (exit $rc): ${what:-see log}; reproducer ${artifact:-none}; log $log" >&2
    return 1
  fi
}

# Targets run FUZZ_JOBS at a time (default: one per CPU); each keeps its own time budget,
# so the fuzzing done is the same and the wall time is divided by the CPUs.
max_jobs="${FUZZ_JOBS:-$(nproc)}"
[[ "$max_jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_JOBS must be a positive integer" >&2; usage; }
failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$max_jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done

exit "$failed"
