// memory.cpp: see memory.hpp.
#include "attnscope/analysis/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>  // defines __GLIBC__ on glibc systems, so include it before testing
#include <fstream>
#include <limits>
#include <sstream>

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

std::size_t trace_memory_bytes(const Config& config, long tokens, long d_in) {
  const auto T = static_cast<std::size_t>(tokens);
  const auto din = static_cast<std::size_t>(d_in);
  const auto dout = static_cast<std::size_t>(config.d_out);
  const auto heads = static_cast<std::size_t>(config.num_heads);
  const bool bias = config.qkv_bias;
  std::size_t floats = T * din;  // inputs
  std::size_t flags = 0;         // dropout keep flags, one byte per weight
  // One projection set: W_query/W_key/W_value (+ biases) and Q, K, V.
  const auto qkv = [&](std::size_t width, bool with_bias) {
    return 3 * din * width + (with_bias ? 3 * width : 0) + 3 * T * width;
  };
  const bool drawing = config.training && config.dropout > 0.0 && config.dropout < 1.0;
  switch (config.variant) {
    case Variant::Simple:
      floats += 2 * T * T + T * din;  // scores, weights, context
      break;
    case Variant::SelfAttentionV1:
    case Variant::SelfAttentionV2:
      floats +=
          qkv(dout, bias && config.variant == Variant::SelfAttentionV2) + 3 * T * T + T * dout;
      break;
    case Variant::Causal:
      floats += qkv(dout, bias) + T * T + 6 * T * T + T * dout;  // the mask, six T x T stages
      flags = drawing ? T * T : 0;
      break;
    case Variant::MultiheadWrapper:
      floats += T * T + heads * (qkv(dout, bias) + 6 * T * T + T * dout) + T * heads * dout;
      flags = drawing ? heads * T * T : 0;
      break;
    case Variant::Multihead: {
      const std::size_t d_head = dout / heads;
      floats += qkv(dout, bias) + T * T + heads * (3 * T * d_head + 6 * T * T + T * d_head) +
                T * dout + dout * dout + dout + T * dout;  // concat, W_out, b_out, output
      flags = drawing ? heads * T * T : 0;
      break;
    }
    case Variant::GroupedQuery:
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross: {
      // core::modern keeps its Run (eight T x T matrices and five T x d_head
      // per head, the projections, the latent) and the trace copies it: twice.
      const std::size_t d_head = dout / heads;
      const std::size_t latent =
          config.latent_dim ? static_cast<std::size_t>(*config.latent_dim) : dout / 8 + 16;
      floats +=
          2 *
          (qkv(dout, bias) + heads * (8 * T * T + 6 * T * d_head) + 3 * T * dout + dout * dout +
           dout +
           (config.variant == Variant::Latent ? T * latent + din * latent + 2 * latent * dout : 0));
      break;
    }
  }
  if (config.rope && config.variant == Variant::Multihead)  // the same, on core::modern
    floats += floats;
  return floats * sizeof(float) + flags;
}

std::optional<std::size_t> available_memory_bytes() {
  std::optional<std::size_t> available;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::size_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  if (const char* cap = std::getenv("ATTNSCOPE_MEMORY_LIMIT_MB"); cap && *cap) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(cap, &end, 10);
    if (end && *end == '\0') {
      constexpr std::size_t kMB = 1000000;  // MB as the message prints them
      const std::size_t bytes = mb > std::numeric_limits<std::size_t>::max() / kMB
                                    ? std::numeric_limits<std::size_t>::max()
                                    : static_cast<std::size_t>(mb) * kMB;
      available = available ? std::min(*available, bytes) : bytes;
    }
  }
  return available;
}

std::string memory_problem(const Config& config, long tokens, long d_in,
                           std::optional<std::size_t> available) {
  const std::size_t need = trace_memory_bytes(config, tokens, d_in);
  if (!available || need <= *available) return "";
  const auto gb = [](std::size_t bytes) {
    char text[32];
    if (bytes < 1000000000u)
      std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / 1e6);
    else
      std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
    return std::string(text);
  };
  return "this trace needs " + gb(need) + " of memory and " + gb(*available) +
         " is available: try fewer tokens, fewer heads or a smaller d_out";
}

std::string memory_problem(const Config& config, const Inputs& inputs) {
  // Cross-attention's T x S stages: the longer of the two sequences bounds them.
  const long tokens = static_cast<long>(std::max(inputs.embeddings.rows(), inputs.memory.rows()));
  const long width = static_cast<long>(std::max(inputs.embeddings.cols(), inputs.memory.cols()));
  return memory_problem(config, tokens, width, available_memory_bytes());
}

}  // namespace attnscope::core
