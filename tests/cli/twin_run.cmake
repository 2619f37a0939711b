# twin run: a timed scenario on the admission core plus the bank.
set(SCENARIOS ${PROJECT_SOURCE_DIR}/examples/scenarios)
set(RUN_DATA ${PROJECT_SOURCE_DIR}/tests/twin/run/data)
cli_test(help-twin-run 0 "Usage:.*twin run \\[OPTIONS\\]" -- ${GPUBANK} twin run --help)
cli_test(usage-twin-run-without-workloads 2 "give exactly one of --workloads and --trace" -- ${GPUBANK} twin run --policies examples/policies)
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
# research reclaims: the protected fine-tune on its lent GPUs is not a victim; the borrower
# on the GPUs no one is guaranteed (the Cohort's) is.
cli_test(twin-run-protection-lease 0 "search-training/query-embeddings \\(8 GPUs, LongStateless\\): notice 7200 s"
         "ranking-finetune \\(8 GPUs"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/protection-lease.yaml)

# --store: a run persists its ledger and audit log; bank ledger and audit verify read them.
set(RUN_STORE ${CMAKE_CURRENT_BINARY_DIR}/twin-run-store/run.db)
add_test(NAME cli.twin-run-store-setup
         COMMAND sh -c "rm -rf \"$(dirname \"$2\")\" && mkdir -p \"$(dirname \"$2\")\" && \"$1\" twin run --policies examples/policies --workloads \"$3\" --store \"$2\" > /dev/null"
                 sh ${GPUBANK} ${RUN_STORE} ${SCENARIOS}/lend-and-reclaim.yaml
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.twin-run-store-setup PROPERTIES FIXTURES_SETUP twin_run_store)
function(cli_run_store_test name)
  cli_test(${name} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED twin_run_store)
endfunction()
cli_run_store_test(twin-run-store-audit-verifies 0 "intact" -- ${GPUBANK} audit verify --store ${RUN_STORE})
cli_run_store_test(twin-run-store-ledger 0 "search +ads +h100-rdma-training" -- ${GPUBANK} bank ledger --store ${RUN_STORE})
# The run was the store's first writer: its borrow record ids carry epoch 1.
cli_run_store_test(twin-run-store-record-ids 0 "\"id\": \"1-h100-rdma-training/1\"" -- ${GPUBANK} bank ledger --store ${RUN_STORE} -o json)
cli_run_store_test(twin-run-store-not-empty 1 "already holds .* ledger and .* audit entries. a run needs an empty store"
                   -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/lend-and-reclaim.yaml --store ${RUN_STORE})
# twin run on a cluster and on a trace.
set(ALIBABA ${PROJECT_SOURCE_DIR}/../shared/traces/alibaba-gpu-v2023)
cli_test(twin-run-inventory 0 "Cluster: 184 GPUs"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/lend-and-reclaim.yaml
         --inventory examples/inventory/example.yaml)
cli_test(twin-run-alibaba-trace 0 "\"podsMapped\": 7063"
         -- ${GPUBANK} twin run --trace alibaba:${ALIBABA}/openb_pod_list_default.csv
         --inventory alibaba:${ALIBABA}/openb_node_list_gpu_node.csv -o json)
# A list without creation times maps nothing in time: exit 1 with the reason, not an empty run.
cli_test(twin-run-alibaba-multigpu-maps-nothing 1 "no pod of the 9061 read became a workload.*no creation times.*\\[trace.empty\\]"
         -- ${GPUBANK} twin run --trace alibaba:${ALIBABA}/openb_pod_list_multigpu50.csv
         --inventory alibaba:${ALIBABA}/openb_node_list_gpu_node.csv)
cli_test(usage-twin-run-workloads-and-trace 2 "exactly one of --workloads and --trace"
         -- ${GPUBANK} twin run --policies examples/policies --workloads ${SCENARIOS}/lend-and-reclaim.yaml
         --trace alibaba:${ALIBABA}/openb_pod_list_default.csv)
cli_test(usage-twin-run-trace-kind 2 "expected alibaba:<pod list csv> or philly:<folder>" -- ${GPUBANK} twin run --trace helios:x.csv)
cli_test(usage-twin-run-trace-without-inventory 2 "needs --inventory alibaba:"
         -- ${GPUBANK} twin run --trace alibaba:${ALIBABA}/openb_pod_list_default.csv)
cli_test(twin-run-trace-azure-llm-missing 1 "x.csv" -- ${GPUBANK} twin run --trace azure-llm:x.csv)
cli_test(twin-run-azure-llm-trace 0 "customer-service-llm: [0-9]+ requests" -- ${GPUBANK} twin run
         --trace azure-llm:${PROJECT_SOURCE_DIR}/../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv --policies examples/policies
         --until 2h)
# Options a trace kind does not use are refused, not ignored; --events is written for the
# Azure LLM trace's platform days too.
cli_test(usage-twin-run-azure-llm-replicate 2 "--replicate does nothing with --trace azure-llm: .*drop it"
         -- ${GPUBANK} twin run --trace azure-llm:x.csv --replicate 4)
cli_test(usage-twin-run-azure-llm-store 2 "--store does nothing with --trace azure-llm"
         -- ${GPUBANK} twin run --trace azure-llm:x.csv --store /tmp/never.db)
cli_test(usage-twin-run-azure-llm-groups 2 "--groups does nothing with --trace azure-llm"
         -- ${GPUBANK} twin run --trace azure-llm:x.csv --groups a=1)
cli_test(usage-twin-run-philly-replicate 2 "--replicate does nothing with --trace philly"
         -- ${GPUBANK} twin run --trace philly:/nonexistent --replicate 2)
cli_test(usage-twin-run-philly-groups 2 "--groups does nothing with --trace philly: the business groups are the trace's virtual clusters"
         -- ${GPUBANK} twin run --trace philly:/nonexistent --groups a=1)
cli_test(twin-run-azure-llm-events 0 "\"kind\":\"ReplicaReady\"" -- sh -c
         "${GPUBANK} twin run --trace azure-llm:${PROJECT_SOURCE_DIR}/../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv --policies examples/policies --until 1h --events ${CMAKE_CURRENT_BINARY_DIR}/azure-llm-events.jsonl > /dev/null && grep -m1 ReplicaReady ${CMAKE_CURRENT_BINARY_DIR}/azure-llm-events.jsonl")
cli_test(twin-run-trace-philly-missing 1 "--trace philly: .*philly_vc.csv" -- ${GPUBANK} twin run --trace philly:/nonexistent)
cli_test(twin-run-philly-dated 0 "\"start\": \"2017-10-03T00:00:00Z\"" -- ${GPUBANK} twin run --trace philly:${PROJECT_SOURCE_DIR}/../shared/traces/philly --days 1 -o json)
cli_test(twin-run-philly-trace 0 "\"virtualClusters\": 11" -- ${GPUBANK} twin run --trace philly:${PROJECT_SOURCE_DIR}/../shared/traces/philly --days 7 -o json)
# The same trace and seed: the same output, byte for byte (stdout: the progress line with
# the wall time goes to stderr).
add_test(NAME cli.twin-run-trace-deterministic
         COMMAND sh -c "a=$(\"$1\" twin run --trace alibaba:$2/openb_pod_list_default.csv --inventory alibaba:$2/openb_node_list_gpu_node.csv -o json 2>/dev/null) && b=$(\"$1\" twin run --trace alibaba:$2/openb_pod_list_default.csv --inventory alibaba:$2/openb_node_list_gpu_node.csv -o json 2>/dev/null) && [ -n \"$a\" ] && [ \"$a\" = \"$b\" ]" _ ${GPUBANK} ${ALIBABA})
cli_test(usage-twin-run-bad-groups 2 "--groups: each group is name=weight"
         -- ${GPUBANK} twin run --trace alibaba:${ALIBABA}/openb_pod_list_default.csv
         --inventory alibaba:${ALIBABA}/openb_node_list_gpu_node.csv --groups a=1,b)

# gpubank twin preview (src/twin/preview): the same policies change nothing; a proposal
# outside the guardrails is refused naming the rule (exit 1); usage errors exit 2.
cli_test(help-twin-preview 0 "Usage:.*preview \\[OPTIONS\\]" -- ${GPUBANK} twin preview --help)
cli_test(twin-preview-same 0 "the proposal changes nothing"
         -- ${GPUBANK} twin preview --quiet --current examples/policies --proposed examples/policies
            --workloads examples/scenarios/lend-and-reclaim.yaml)
cli_test(twin-preview-refused 1 "\\[quota.sum-exceeds-pool\\]"
         -- ${GPUBANK} twin preview --quiet --current examples/policies
            --proposed examples/policies examples/invalid/quota.sum-exceeds-pool.yaml
            --workloads examples/scenarios/lend-and-reclaim.yaml)
cli_test(twin-preview-json 0 "\"refused\": false"
         -- ${GPUBANK} twin preview --quiet --current examples/policies --proposed examples/policies
            --workloads examples/scenarios/lend-and-reclaim.yaml -o json)
cli_test(usage-twin-preview-no-proposal 2 "--proposed is required"
         -- ${GPUBANK} twin preview --current examples/policies)
# The services' requests from the Azure LLM trace (the code one: the conv one is the
# twin's calibration's own distribution), two hours with the fluid model; a cluster trace is
# refused with where to replay it.
cli_test(twin-preview-llm-trace 0 "serving: fluid model, requests from .*AzureLLMInferenceTrace_code.csv\\)"
         -- ${GPUBANK} twin preview --quiet --current examples/policies --proposed examples/policies --hours 2
            --trace azure-llm:${PROJECT_SOURCE_DIR}/../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv)
cli_test(usage-twin-preview-cluster-trace 2 "--trace: expected azure-llm:.*gpubank twin run --trace"
         -- ${GPUBANK} twin preview --current examples/policies --proposed examples/policies --trace alibaba:x.csv)
cli_test(usage-twin-preview-bad-serving-model 2 "--serving-model"
         -- ${GPUBANK} twin preview --current examples/policies --proposed examples/policies --serving-model exact)
