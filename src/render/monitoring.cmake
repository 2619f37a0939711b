# Monitoring outputs (issue 4): PrometheusRule objects and Grafana dashboards.
target_sources(gpubank_render PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/prometheus_rules.cpp
  ${CMAKE_CURRENT_LIST_DIR}/grafana.cpp
)
