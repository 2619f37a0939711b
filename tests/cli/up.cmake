# gpubank up: help, usage errors, invalid inputs; the server itself is tested in
# tests/api (platform_server_tests, up_prometheus_tests).
cli_test(help-up 0 "Usage:.*up \\[OPTIONS\\]" -- ${GPUBANK} up --help)
cli_test(usage-up-bad-speed 2 "--speed: must be a number in \\(0, 1000000\\] or \"max\", got \"fast\""
         -- ${GPUBANK} up --speed fast)
cli_test(usage-up-bad-start 2 "--start" -- ${GPUBANK} up --start yesterday)
cli_test(up-invalid-policies 1 "the policies are invalid"
         -- ${GPUBANK} up --policies examples/policies examples/invalid/quota.sum-exceeds-pool.yaml)
cli_test(up-missing-inventory 1 "the inventory is invalid" -- ${GPUBANK} up --inventory /nonexistent/inventory.yaml)
# The seeded day (its first 6 hours) at max speed, then exit.
cli_test(up-runs-the-day 0 "stopped at 2026-11-30T22:00:00Z \\(virtual\\)"
         -- ${GPUBANK} up --speed max --port 0 --exit-when-done --hours 6)
# --data-dir: resume without duplicating the ledger or breaking the audit chain.
add_test(NAME cli.up-resume COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/up_resume.sh ${GPUBANK}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# Both run parts of the day: tens of seconds under the sanitizers, so they start early
# (see gpubank_test in tests/CMakeLists.txt).
set_tests_properties(cli.up-runs-the-day cli.up-resume PROPERTIES COST 20)
# --data-dir survives SIGKILL: 50 kills at seeded moments, each followed by a restart; the
# store then equals an uninterrupted run's (up_store_dump prints both). About a minute
# under the sanitizers on 2 cores.
add_executable(up_store_dump up_store_dump.cpp)
target_link_libraries(up_store_dump PRIVATE gpubank_store gpubank_bank_ledger nlohmann_json::nlohmann_json gpubank_warnings)
# The runs share one calibration cache (GPUBANK_CALIBRATION_CACHE): without it every
# restart calibrated the embed service's fluid model again (about 2 s under the sanitizers).
# cli.up-kill-long (`ctest -L long`) kills 150 times with another seed.
add_test(NAME cli.up-kill COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/up_kill.sh ${GPUBANK} $<TARGET_FILE:up_store_dump> 50
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.up-kill PROPERTIES COST 30 TIMEOUT 300)
add_test(NAME cli.up-kill-long
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/up_kill.sh ${GPUBANK} $<TARGET_FILE:up_store_dump> 150 29
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.up-kill-long PROPERTIES LABELS long TIMEOUT 1800)
# Two processes on one --data-dir: the second fences the first, which exits 1 saying why;
# the store equals an uninterrupted run's.
add_test(NAME cli.up-fence COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/up_fence.sh ${GPUBANK}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.up-fence PROPERTIES COST 20 TIMEOUT 300)
# The API's interventions (an XID error, a tidal freeze) survive SIGKILL: journalled, and
# replayed by the restart at their virtual time; an edited journal stops the start.
add_test(NAME cli.up-interventions COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/up_interventions.sh ${GPUBANK}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.up-interventions PROPERTIES COST 20 TIMEOUT 300)
