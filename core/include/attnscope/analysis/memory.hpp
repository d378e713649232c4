// memory.hpp: process-wide allocator settings for programs that recompute
// large traces again and again (the app while a slider moves, bench).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "attnscope/base/config.hpp"

namespace attnscope::core {

// The bytes a trace of `config` on (tokens, d_in) inputs holds: its distinct
// matrices (the heads share one causal mask; parameters counted once), plus
// the dropout flags drawn while it is built. Exact for run_attention's trace
// (tested), so it can be checked before a run that would not fit.
std::size_t trace_memory_bytes(const Config& config, long tokens, long d_in);

// The memory the system can still give (MemAvailable in /proc/meminfo), or
// nullopt where that is unknown. The environment variable
// ATTNSCOPE_MEMORY_LIMIT_MB (a whole number of MB, 10^6 bytes, as
// memory_problem prints sizes) lowers it: a budget for
// attnscope on a shared machine, and how tests reach the refusal.
std::optional<std::size_t> available_memory_bytes();

// "" when such a trace fits in `available` bytes (or available is unknown),
// else one sentence naming both sizes and what to change. A run that does not
// fit would not fail cleanly: Linux promises the memory and later kills the
// process when the pages are touched.
std::string memory_problem(const Config& config, long tokens, long d_in,
                           std::optional<std::size_t> available);
// The same for a run on `inputs`, against available_memory_bytes().
std::string memory_problem(const Config& config, const Inputs& inputs);

// Asks the C library to keep freed trace buffers (up to 32 MiB each) for the
// next run instead of returning them to the OS, so that a recompute reuses
// warm pages rather than faulting in hundreds of megabytes anew. No-op where
// the C library has no such setting.
void keep_freed_memory_for_reuse();

// Hands the freed memory the C library keeps (see above) back to the OS, in
// every allocator arena. For when the program goes idle: the next run then
// faults its pages in again (~0.1 s for a ~320 MiB trace). No-op where the C
// library cannot.
void release_freed_memory();

}  // namespace attnscope::core
