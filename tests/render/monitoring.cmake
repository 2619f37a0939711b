# PrometheusRule and Grafana renderers; the rule tests run the real promtool.
gpubank_test(render_monitoring_tests
  SOURCES prometheus_rules_test.cpp grafana_test.cpp
  LIBS gpubank_render gpubank_document)
