# twin run: a timed scenario on the admission core plus the bank.
set(SCENARIOS ${PROJECT_SOURCE_DIR}/examples/scenarios)
set(RUN_DATA ${PROJECT_SOURCE_DIR}/tests/twin/run/data)
cli_test(help-twin-run 0 "Usage:.*twin run \\[OPTIONS\\]" -- ${GPUBANK} twin run --help)
cli_test(usage-twin-run-without-workloads 2 "--workloads is required" -- ${GPUBANK} twin run --policies examples/policies)
cli_test(usage-twin-run-bad-until 2 "--until" -- ${GPUBANK} twin run --policies examples/policies
         --workloads ${SCENARIOS}/lend-and-reclaim.yaml --until tomorrow)
cli_test(twin-run-invalid-scenario 1
         "invalid-scenario.yaml:3:78: error: workloads\\[0\\].gpus: must be between 1 and 100000, got 0 \\[schema.out-of-range\\]"
         "!Reclaims" -- ${GPUBANK} twin run --policies examples/policies --workloads ${RUN_DATA}/invalid-scenario.yaml)
cli_test(twin-run-unknown-group 1 "workloads\\[0\\].businessGroup: business group \"marketing\" is not in the guardrails"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${RUN_DATA}/unknown-group.yaml)
cli_test(twin-run-invalid-policies 1 "the policies are invalid"
         -- ${GPUBANK} twin run --policies examples/policies examples/invalid/quota.sum-exceeds-pool.yaml --workloads ${SCENARIOS}/lend-and-reclaim.yaml)
cli_test(twin-run-example-text 0 "reclaim-1: search in h100-rdma-training, demand 8 GPUs.*Completed"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/lend-and-reclaim.yaml)
cli_test(twin-run-example-json 0 "\"kind\": \"ReclaimVictimStopped\""
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/lend-and-reclaim.yaml -o json)
cli_test(twin-run-protection-lease 0 "\"reason\": \"BorrowersProtected\""
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/protection-lease.yaml -o json)
