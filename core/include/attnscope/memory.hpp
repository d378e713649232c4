// memory.hpp: process-wide allocator settings for programs that recompute
// large traces again and again (the app while a slider moves, bench).
#pragma once

namespace attnscope::core {

// Asks the C library to keep freed trace buffers (up to 32 MiB each) for the
// next run instead of returning them to the OS, so that a recompute reuses
// warm pages rather than faulting in hundreds of megabytes anew. No-op where
// the C library has no such setting.
void keep_freed_memory_for_reuse();

// Hands the freed memory the C library keeps (see above) back to the OS, in
// every allocator arena. For when the program goes idle: the next run then
// faults its pages in again (~0.1 s for a 375 MiB trace). No-op where the C
// library cannot.
void release_freed_memory();

}  // namespace attnscope::core
