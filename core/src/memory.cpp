// memory.cpp: see memory.hpp.
#include "attnscope/memory.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc systems, so include it before testing

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attnscope::core {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // Blocks below the mmap threshold come from the heap and are reused after
  // free; 32 MiB is glibc's largest threshold and holds a 2048 x 2048 stage.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  // Do not hand freed heap memory back to the OS between recomputes.
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
#endif
}

void release_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);  // every arena; whole free pages inside the heap too (glibc >= 2.8)
#endif
}

}  // namespace attnscope::core
