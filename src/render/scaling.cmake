# KEDA ScaledObjects and KServe annotations (scaling.cpp) and the four-layer capacity
# check `gpubank render --check` runs first (consistency.cpp).
target_sources(gpubank_render PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/scaling.cpp
  ${CMAKE_CURRENT_LIST_DIR}/consistency.cpp
)
