# The entry point (render.cpp: validation, checks, renderers, stamping), the queueing
# backends (Kueue, Volcano) and the PriorityClasses every backend needs.
target_sources(gpubank_render PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/render.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scheduling.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kueue.cpp
  ${CMAKE_CURRENT_LIST_DIR}/volcano.cpp
)
