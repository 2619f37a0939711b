// The process allocator's policy for long-running servers.
#pragma once

namespace gpubank {

// Asks the process allocator to give freed memory back to the system at once. The release
// build links mimalloc (GPUBANK_MIMALLOC), which by default keeps freed pages committed
// for a while per thread; a server whose load comes in bursts (hundreds of connections
// opened and dropped, a refused 4 MiB body) then holds its peak resident set long after.
// Measured by bench/webhook_abuse: peak RSS 64 MiB by default, 41 MiB with this. The
// webhook and the node exporter call it. Without mimalloc in the process (sanitizer builds,
// glibc malloc) it does nothing. Idempotent.
void return_freed_memory_promptly();

}  // namespace gpubank
