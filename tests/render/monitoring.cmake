# PrometheusRule and Grafana renderers; the rule tests run the real promtool.
gpubank_test(render_monitoring_tests
  SOURCES prometheus_rules_test.cpp grafana_test.cpp lowutil_merge_test.cpp
  LIBS gpubank_render gpubank_document)
# GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function (GCC bug
# 105562) when optimising with sanitizers; both tests use std::regex on PromQL text.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  set_source_files_properties(prometheus_rules_test.cpp grafana_test.cpp PROPERTIES COMPILE_OPTIONS -Wno-maybe-uninitialized)
endif()
