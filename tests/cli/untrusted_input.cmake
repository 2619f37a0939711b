# Input cannot smuggle or forge (issue 28): bytes YAML forbids are rejected where they are,
# and names holding line breaks or terminal escapes are printed escaped, one line each.
# Included from tests/cli/CMakeLists.txt (GPUBANK).
add_test(NAME cli.untrusted-input
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/untrusted_input.sh ${GPUBANK} ${CMAKE_CURRENT_BINARY_DIR}/untrusted-input
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
