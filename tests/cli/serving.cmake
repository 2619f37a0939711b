# twin serving, tidal timeline / freeze / unfreeze.
cli_test(help-twin-serving 0 "Usage:.*twin serving \\[OPTIONS\\]" -- ${GPUBANK} twin serving --help)
cli_test(usage-twin-serving-bad-control 2 "--control: must be all, autoscaler" -- ${GPUBANK} twin serving --control magic)
cli_test(usage-twin-serving-bad-start 2 "--start" -- ${GPUBANK} twin serving --start tomorrow)
cli_test(twin-serving-invalid-policies 1 "the policies are invalid"
         -- ${GPUBANK} twin serving --policies examples/policies examples/invalid/quota.sum-exceeds-pool.yaml)
# Two light hours from Tuesday 07:30 in Shanghai: the window's prewarm at 08:00 raises the
# LLM service to its floor of 6, so the autoscaler's run peaks at 6 or more.
cli_test(twin-serving-autoscaler 0 "customer-service-llm / autoscaler +1 +[0-9.]+ % +[0-9.]+ %.* [6-8] +[0-9]+/[0-9]+"
         -- ${GPUBANK} twin serving --control autoscaler --start 2026-11-30T23:30:00Z --hours 2 --serving-load 0.1 --quiet)
cli_test(twin-serving-json 0 "\"peakReplicas\": 3,"
         -- ${GPUBANK} twin serving --control static --static-replicas 3 --hours 1 --serving-load 0.05 --quiet -o json)
# Static counts outside a service's [1, maxReplicas], seeds and peak ranges that do not
# parse: usage errors before anything runs.
cli_test(usage-twin-serving-static-zero 2 "--static-replicas: 0 is outside \\[1, maxReplicas\\] of customer-service"
         -- ${GPUBANK} twin serving --control static --static-replicas 0)
cli_test(usage-twin-serving-static-above-max 2 "--static-replicas: 10000 is outside \\[1, maxReplicas\\]"
         -- ${GPUBANK} twin serving --control static --static-replicas 10000)
cli_test(usage-twin-serving-bad-seeds 2 "--seeds: the range 5..1 ends before it starts" -- ${GPUBANK} twin serving --seeds 5..1)
cli_test(usage-twin-serving-bad-peak 2 "--peak: must be HH:MM-HH:MM" -- ${GPUBANK} twin serving --peak 9-17 --hours 1)
# Two seeds: a run per seed, each with its peak-window attainment.
cli_test(twin-serving-seeds 0 "\"seed\": 2,"
         -- ${GPUBANK} twin serving --control static --static-replicas 2 --seeds 1..2 --hours 1 --serving-load 0.05 --quiet -o json)
cli_test(help-tidal-timeline 0 "Usage:.*tidal timeline" -- ${GPUBANK} tidal timeline --help)
cli_test(usage-tidal-timeline-without-from 2 "--from is required" -- ${GPUBANK} tidal timeline weekday-serving-training)
# The example's weekday: Tuesday 07:30 CST is 23:30 UTC on Monday.
cli_test(tidal-timeline-example 0 "2026-11-30T23:30:00Z  TidalWindowApproaching  daytime-serving"
         -- ${GPUBANK} tidal timeline weekday-serving-training --from 2026-11-30T16:00:00Z --days 1)
cli_test(tidal-timeline-unknown-policy 1 "no TidalPolicy named \"nightly\"" -- ${GPUBANK} tidal timeline nightly --from 2026-11-30T16:00:00Z)
cli_test(tidal-freeze-no-server 1 "cannot reach http://127.0.0.1:9" -- ${GPUBANK} tidal freeze weekday-serving-training --server http://127.0.0.1:9)
cli_test(tidal-freeze-no-token-file 1 "--token-file: cannot read a token from /nonexistent" -- ${GPUBANK} tidal freeze x --token-file /nonexistent)
cli_test(usage-tidal-freeze-bad-server 2 "--server must be an http:// URL" -- ${GPUBANK} tidal freeze x --server ftp://host)
# Numbers CLI11 alone would let through: a negative or too large seed (read as 2^64 - 1) and
# a NaN load (CLI::Range compares false with NaN): usage errors naming the option.
cli_test(usage-up-negative-seed 2 "--seed: a seed is a whole number from 0 to 18446744073709551615, got \"-1\""
         -- ${GPUBANK} up --seed -1)
cli_test(usage-up-seed-above-2-64 2 "--seed: a seed is a whole number .* got \"18446744073709551616\""
         -- ${GPUBANK} up --seed 18446744073709551616)
cli_test(usage-up-nan-load 2 "--serving-load: must be a number in \\[0.001, 10\\], got \"nan\"" -- ${GPUBANK} up --serving-load nan)
cli_test(usage-twin-preview-nan-load 2 "--serving-load: must be a number in \\[0.001, 10\\]"
         -- ${GPUBANK} twin preview --current examples/policies --proposed examples/policies --serving-load nan)
cli_test(usage-twin-run-negative-seed 2 "--seed: a seed is a whole number" -- ${GPUBANK} twin run --seed -5)
cli_test(usage-twin-serving-nan-slo 2 "--slo-target: must be a number in \\[1, 100\\]" -- ${GPUBANK} twin serving --slo-target nan)
