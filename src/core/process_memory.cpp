#include "core/process_memory.hpp"

#include <cstdlib>

#include <mimalloc.h>

// Weak: the libraries never link mimalloc, only the executables that choose it as the
// process allocator do (gpubank_process_allocator in CMakeLists.txt). When none did, the
// symbol stays null and there is nothing to tune.
#pragma weak mi_option_set

namespace gpubank {

void return_freed_memory_promptly() {
  if (&mi_option_set == nullptr) return;
  // An operator's own setting wins (mimalloc reads MIMALLOC_<OPTION> itself; 2.0 also
  // knows decommit_delay by its older name, reset_delay).
  if (std::getenv("MIMALLOC_DECOMMIT_DELAY") != nullptr || std::getenv("MIMALLOC_RESET_DELAY") != nullptr) return;
  // Decommit freed pages without the default delay (mimalloc 2.0's decommit_delay, 25 ms,
  // is counted on a thread's next allocation: a thread that goes idle keeps them).
  mi_option_set(mi_option_decommit_delay, 0);
}

}  // namespace gpubank
