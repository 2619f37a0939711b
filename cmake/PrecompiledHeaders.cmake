# Precompiled headers for the asan preset, which is what CI builds on two cores: the standard
# library, nlohmann-json, GoogleTest and CLI11 are parsed (and json's templates instantiated)
# once per set of compile flags instead of in every file. A precompiled header only serves
# files compiled with the same flags, so there is one per set (libraries at the preset's
# level, those among them instrumented for the fuzzers, the command-line layer at -O0, tests
# at -O0 with GoogleTest). The debug
# and release presets do not use them, so they keep checking that each file includes what it
# uses.

set(gpubank_pch_common
  <algorithm> <array> <chrono> <cmath> <cstdint> <filesystem> <fstream> <functional> <limits>
  <map> <memory> <optional> <set> <span> <sstream> <string> <string_view> <unordered_map>
  <utility> <variant> <vector> <nlohmann/json.hpp>)

set(gpubank_pch_source ${PROJECT_BINARY_DIR}/pch/empty.cpp)
# (CONFIGURE writes only when the text changes, so a reconfigure rebuilds nothing.)
file(CONFIGURE OUTPUT ${gpubank_pch_source} CONTENT "// Holds a precompiled header; see cmake/PrecompiledHeaders.cmake.\n")

function(gpubank_pch_holder name)
  cmake_parse_arguments(H "UNOPTIMIZED" "" "HEADERS;LIBS;OPTIONS" ${ARGN})
  add_library(${name} STATIC ${gpubank_pch_source})
  target_link_libraries(${name} PRIVATE gpubank_warnings nlohmann_json::nlohmann_json ${H_LIBS})
  if(H_UNOPTIMIZED)
    target_compile_options(${name} PRIVATE -O0)
  endif()
  target_compile_options(${name} PRIVATE ${H_OPTIONS})
  target_precompile_headers(${name} PRIVATE ${gpubank_pch_common} ${H_HEADERS})
endfunction()

gpubank_pch_holder(gpubank_pch_optimized)
if(GPUBANK_FUZZ)
  # The libraries under fuzz carry coverage instrumentation, which a header must share.
  gpubank_pch_holder(gpubank_pch_fuzzed OPTIONS -fsanitize=fuzzer-no-link)
endif()
gpubank_pch_holder(gpubank_pch_unoptimized UNOPTIMIZED HEADERS <CLI/CLI.hpp> LIBS CLI11::CLI11)
if(GPUBANK_BUILD_TESTS)
  gpubank_pch_holder(gpubank_pch_tests UNOPTIMIZED HEADERS <gtest/gtest.h> <gmock/gmock.h>
                     LIBS GTest::gtest GTest::gmock)
endif()

function(gpubank_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    gpubank_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Every compiled target of ours reuses the holder whose flags it shares; the fuzzers
# (-fsanitize=fuzzer) keep their own.
gpubank_targets_below(${PROJECT_SOURCE_DIR} gpubank_all_targets)
foreach(target IN LISTS gpubank_all_targets)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$" OR target MATCHES "^gpubank_pch_")
    continue()
  endif()
  get_target_property(dir ${target} SOURCE_DIR)
  # proto/: protoc's generated code, compiled without our warnings (no holder shares its flags).
  if(dir MATCHES "/(fuzz|proto)$")
    continue()
  endif()
  get_target_property(options ${target} COMPILE_OPTIONS)
  get_target_property(links ${target} LINK_LIBRARIES)
  if("GTest::gtest" IN_LIST links)
    target_precompile_headers(${target} REUSE_FROM gpubank_pch_tests)
  elseif("-fsanitize=fuzzer-no-link" IN_LIST options)
    target_precompile_headers(${target} REUSE_FROM gpubank_pch_fuzzed)
  elseif("-O0" IN_LIST options)
    target_precompile_headers(${target} REUSE_FROM gpubank_pch_unoptimized)
  else()
    target_precompile_headers(${target} REUSE_FROM gpubank_pch_optimized)
  endif()
endforeach()
