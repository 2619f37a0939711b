# The engine renderers (src/render/engines.cmake): pipeline, Kueue, Volcano, PriorityClasses,
# golden files, and the rendered Kueue objects run through the twin (admission and runs).
gpubank_test(render_engine_tests
  SOURCES render_test.cpp kueue_test.cpp volcano_test.cpp scheduling_test.cpp golden_test.cpp kueue_twin_test.cpp limits_test.cpp
  LIBS gpubank_render gpubank_kueue gpubank_twin_admission gpubank_twin_run)
