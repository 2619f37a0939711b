# Output that cannot be written is a failure (issue 28): every command with its stdout on
# /dev/full exits 1 (or keeps its own failure code) and says why on stderr, and so does a
# command whose --events or --metrics file cannot be written. Included from
# tests/cli/CMakeLists.txt (GPUBANK, EXPECT).
set(WRITE_ERROR "^gpubank: error writing output: No space left on device$")

# cli_full_test(NAME CODE ARGS...): `gpubank ARGS... > /dev/full` exits CODE with the message.
function(cli_full_test name code)
  add_test(NAME cli.stdout-full-${name}
           COMMAND ${EXPECT} ${code} ${WRITE_ERROR} -- sh -c "exec \"$0\" \"$@\" > /dev/full" ${GPUBANK} ${ARGN}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

set(OUTPUT_SCENARIO ${PROJECT_SOURCE_DIR}/examples/scenarios/lend-and-reclaim.yaml)
cli_full_test(version 1 --version)
cli_full_test(help 1 --help)
cli_full_test(validate 1 validate examples/policies)
cli_full_test(validate-json 1 validate -o json examples/policies)
# Invalid input keeps its exit code; the lost report is still reported.
cli_full_test(validate-invalid 1 validate examples/policies examples/invalid/quota.sum-exceeds-pool.yaml)
cli_full_test(convert 1 convert examples/policies)
cli_full_test(crds 1 crds)
cli_full_test(rules 1 rules)
cli_full_test(cron 1 cron "0 8 * * *" -z Europe/Berlin --after 2026-03-28T12:00:00Z -n 2)
cli_full_test(schema-validate 1 schema validate --crds ${PROJECT_SOURCE_DIR}/../shared/crds examples/kueue)
cli_full_test(render-check 1 render -f examples/policies --backend kueue --check)
cli_full_test(tidal-timeline 1 tidal timeline weekday-serving-training --from 2026-11-30T16:00:00Z --days 1)
cli_full_test(twin-admit 1 twin admit -f examples/kueue)
cli_full_test(twin-run 1 twin run --policies examples/policies --workloads ${OUTPUT_SCENARIO})
cli_full_test(twin-run-json 1 twin run --policies examples/policies --workloads ${OUTPUT_SCENARIO} -o json)
cli_full_test(twin-serving 1 twin serving --control static --static-replicas 3 --hours 1 --serving-load 0.05 --quiet)
cli_full_test(twin-kueue-perf 1 twin kueue-perf --no-stats ${CMAKE_CURRENT_SOURCE_DIR}/data/kueue-perf-small.yaml)
# The store's readers, on the store twin_run.cmake's fixture fills.
cli_full_test(bank-ledger 1 bank ledger --store ${RUN_STORE})
cli_full_test(audit-verify 1 audit verify --store ${RUN_STORE})
set_tests_properties(cli.stdout-full-bank-ledger cli.stdout-full-audit-verify PROPERTIES FIXTURES_REQUIRED twin_run_store)

# Files the commands write themselves.
cli_test(twin-run-events-full 1 "--events: cannot write /dev/full"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${OUTPUT_SCENARIO} --events /dev/full)
cli_test(twin-run-metrics-full 1 "--metrics: cannot write /dev/full"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${OUTPUT_SCENARIO} --metrics /dev/full)
cli_test(twin-admit-events-full 1 "--events: cannot write /dev/full" -- ${GPUBANK} twin admit -f examples/kueue --events /dev/full)
# twin serving names its events files PREFIX.<control>.jsonl: a link to /dev/full is one.
set(SERVING_FULL ${CMAKE_CURRENT_BINARY_DIR}/serving-full)
add_test(NAME cli.twin-serving-events-full
         COMMAND sh -c "dir=$1 && shift && rm -rf \"$dir\" && mkdir -p \"$dir\" && ln -s /dev/full \"$dir/ev.static.jsonl\" && exec \"$@\""
                 sh ${SERVING_FULL} ${EXPECT} 1 "cannot write .*/ev.static.jsonl" -- ${GPUBANK} twin serving --control static
                 --static-replicas 3 --hours 1 --serving-load 0.05 --quiet --events ${SERVING_FULL}/ev
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
