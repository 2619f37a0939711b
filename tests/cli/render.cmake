# gpubank render: usage errors, invalid input, --check, and writing a real --out directory
# (render.sh). Included from tests/cli/CMakeLists.txt (cli_test, GPUBANK, EXAMPLES).
cli_test(help-render 0 "Usage:.*render \\[OPTIONS\\]" -- ${GPUBANK} render --help)
cli_test(usage-render-without-files 2 "--filename is required" -- ${GPUBANK} render --backend kueue --check)
cli_test(usage-render-without-backend 2 "--backend is required" -- ${GPUBANK} render -f examples/policies --check)
cli_test(usage-render-unknown-backend 2 "\"yunikorn\" is neither kueue nor volcano"
         -- ${GPUBANK} render -f examples/policies --backend yunikorn --check)
cli_test(usage-render-without-out 2 "--out is required" -- ${GPUBANK} render -f examples/policies --backend kueue)
# Invalid policies: exit 1, the finding on stderr, nothing rendered or written.
cli_test(render-invalid 1 "\\[quota.sum-exceeds-pool\\]" "!written"
         -- ${GPUBANK} render -f examples/policies examples/invalid/quota.sum-exceeds-pool.yaml --backend kueue
            --out ${CMAKE_CURRENT_BINARY_DIR}/render-invalid)
cli_test(render-check 0 "^[0-9]+ objects rendered, nothing written \\(no --out\\)$"
         -- ${GPUBANK} render -f examples/policies --backend volcano --check)
cli_test(render-check-json 0 "\"path\": \"kueue/clusterqueue-ads-h100-rdma-training.yaml\""
         -- ${GPUBANK} render -f examples/policies --backend kueue --check -o json)
add_test(NAME cli.render-out-directory
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/render.sh ${GPUBANK} ${CMAKE_CURRENT_BINARY_DIR}/render-out
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# The --out directory is appliable as it is: `kubectl kustomize` on it yields exactly the
# rendered objects, and `kubectl apply -R -f` reads only objects (render_kubectl.sh).
# Offline; skipped where kubectl is not installed (CI).
add_test(NAME cli.render-out-kubectl
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/render_kubectl.sh ${GPUBANK} ${CMAKE_CURRENT_BINARY_DIR}/render-kubectl
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.render-out-kubectl PROPERTIES SKIP_RETURN_CODE 77)
