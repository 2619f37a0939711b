# Registers one CTest test per GoogleTest suite of a test binary (run in script mode after
# the binary is built, as GoogleTest's gtest_discover_tests does per case).
#
# Why per suite: CI's sanitizer build starts a process per CTest test, and each start costs
# about a tenth of a second (shadow memory, static initialisation): with some 2,000 cases,
# minutes of CI's two cores. A suite is one process; a failing case is still named in the
# output (ctest --output-on-failure) and can be run alone with --gtest_filter.
#
# Tests are named <PREFIX><Suite>: two binaries may have suites of the same name.
#
# Inputs (-D): BINARY, PREFIX, OUTPUT (the file CTest includes), FILTER (a gtest filter or empty),
# ENVIRONMENT and SKIP (suites registered elsewhere) as lists separated by "|" (a ";" does
# not survive the build tool's command line), COST, TIMEOUT_SECONDS (for the listing).
cmake_minimum_required(VERSION 3.25)

# An empty positive part matches no test at all in GoogleTest: "*" is every test.
set(list_filter "${FILTER}")
if(list_filter STREQUAL "" OR list_filter MATCHES "^-")
  set(list_filter "*${list_filter}")
endif()
execute_process(
  COMMAND "${BINARY}" --gtest_list_tests "--gtest_filter=${list_filter}"
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors
  RESULT_VARIABLE status
  TIMEOUT ${TIMEOUT_SECONDS})
if(NOT status EQUAL 0)
  file(REMOVE "${OUTPUT}")
  message(FATAL_ERROR "listing the tests of ${BINARY} failed (${status}):\n${listing}\n${errors}")
endif()

string(REPLACE "|" ";" environment "${ENVIRONMENT}")
string(REPLACE "|" ";" skip "${SKIP}")
# The negative part of FILTER applies to every suite's filter too.
set(negative "")
string(FIND "${FILTER}" "-" dash)
if(dash GREATER_EQUAL 0)
  math(EXPR after "${dash} + 1")
  string(SUBSTRING "${FILTER}" ${after} -1 negative)
endif()

string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  # "Suite." or "Prefix/Suite/0.  # TypeParam = ..." at column 0; cases are indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( |$)")
    list(APPEND suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES suites)
# A test binary that lists nothing is a broken listing or filter, not an empty success.
if(suites STREQUAL "")
  file(REMOVE "${OUTPUT}")
  message(FATAL_ERROR "${BINARY} lists no test for the filter \"${list_filter}\":\n${listing}")
endif()

set(script "")
foreach(suite IN LISTS suites)
  if(suite IN_LIST skip)
    continue()
  endif()
  set(filter "${suite}.*")
  if(NOT negative STREQUAL "")
    string(APPEND filter ":-${negative}")
  endif()
  string(APPEND script "add_test([=[${PREFIX}${suite}]=] [=[${BINARY}]=] [=[--gtest_filter=${filter}]=])\n")
  string(APPEND script "set_tests_properties([=[${PREFIX}${suite}]=] PROPERTIES ENVIRONMENT [=[${environment}]=]")
  if(NOT COST STREQUAL "")
    string(APPEND script " COST ${COST}")
  endif()
  string(APPEND script ")\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
