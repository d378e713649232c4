// kv_memory_command.hpp: `attnscope-cli kv-memory`, the KV cache's bytes for
// MHA, GQA, MLA and SWA as the book's memory estimators compute them
// (core/include/attnscope/analysis/kv_memory.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace attnscope::cli {

struct KvMemoryOptions {
  std::optional<std::string> preset;  // --model ID (default book-8b without shape flags)
  std::optional<int> emb_dim, n_heads, n_kv_heads, n_layers, head_dim, latent_dim, window;
  std::optional<std::string> swa_ratio;  // --swa-ratio a:b
  std::optional<long long> context;      // --context N (default: the preset's, else 1024)
  std::optional<std::string> dtype;      // --dtype (default: the preset's, else bf16)
  long long batch = 1;                   // --batch B
  std::string format = "text";           // --format text|json
};

// Declares the command on `app`; returns it.
CLI::App* add_kv_memory_command(CLI::App& app, KvMemoryOptions& o);
// Prints the table (text) or one JSON object; throws core::ParseError for a
// bad value (exit 2). Returns the exit code.
int run_kv_memory(const KvMemoryOptions& o);

}  // namespace attnscope::cli
