# Every rendered object against the upstream CRD schemas in ../shared/crds (and the
# built-in PriorityClass and ConfigMap schemas).
gpubank_test(render_schema_tests SOURCES schema_validation_test.cpp LIBS gpubank_render gpubank_schema)
