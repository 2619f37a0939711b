# The entry point (render.cpp: validation, checks, renderers, stamping), the queueing
# backends (Kueue, Volcano) and the PriorityClasses every backend needs.
target_sources(gpubank_render PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/render.cpp
  ${CMAKE_CURRENT_LIST_DIR}/scheduling.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kueue.cpp
  ${CMAKE_CURRENT_LIST_DIR}/volcano.cpp
)
# to_file_texts() spreads YAML emission over threads.
target_link_libraries(gpubank_render PRIVATE Threads::Threads)
