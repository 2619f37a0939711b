gpubank_test(render_object_tests SOURCES object_test.cpp LIBS gpubank_render)
