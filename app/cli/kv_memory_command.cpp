// kv_memory_command.cpp: `attnscope-cli kv-memory` (kv_memory_command.hpp).
#include "kv_memory_command.hpp"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>

#include "attnscope/analysis/kv_memory.hpp"
#include "attnscope/base/errors.hpp"

namespace attnscope::cli {

namespace {

std::string preset_ids() {
  std::string s;
  for (const auto& p : core::kv_model_presets()) s += (s.empty() ? "" : ", ") + p.id;
  return s;
}

// "a:b" -> {a, b}; throws ParseError naming the flag.
std::pair<int, int> parse_ratio(const std::string& text) {
  const auto colon = text.find(':');
  int a = 0, b = 0;
  const auto whole = [](std::string_view s, int& out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (colon == std::string::npos || !whole(std::string_view(text).substr(0, colon), a) ||
      !whole(std::string_view(text).substr(colon + 1), b) || a < 0 || b < 0 || a + b == 0)
    throw core::ParseError("--swa-ratio '" + text +
                           "' must be a:b, sliding-window layers to full ones, e.g. 5:1");
  return {a, b};
}

// The shape the flags describe: a preset, with any shape flag over it.
core::KvModelShape shape_of(const KvMemoryOptions& o) {
  const bool own = o.emb_dim || o.n_heads || o.n_kv_heads || o.n_layers;
  core::KvModelShape s;
  if (o.preset || !own) {
    const std::string id = o.preset.value_or("book-8b");
    const auto found = core::find_kv_model_preset(id);
    if (!found)
      throw core::ParseError("unknown --model '" + id + "' (known: " + preset_ids() + ")");
    s = *found;
  } else {
    s.id = "custom";
    s.name = "custom";
    s.n_kv_heads = 0;
  }
  if (o.emb_dim) s.emb_dim = *o.emb_dim;
  if (o.n_heads) s.n_heads = *o.n_heads;
  if (o.n_kv_heads) s.n_kv_heads = *o.n_kv_heads;
  if (!o.preset && own && !o.n_kv_heads) s.n_kv_heads = s.n_heads;
  if (o.n_layers) s.n_layers = *o.n_layers;
  if (o.head_dim) s.head_dim = *o.head_dim;
  if (o.latent_dim) s.latent_dim = *o.latent_dim;
  if (o.window) s.sliding_window = *o.window;
  if (o.swa_ratio) std::tie(s.swa_layers, s.full_layers) = parse_ratio(*o.swa_ratio);
  if (o.dtype) s.dtype = *o.dtype;
  return s;
}

}  // namespace

CLI::App* add_kv_memory_command(CLI::App& app, KvMemoryOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "kv-memory",
      "print the KV cache's bytes for MHA, GQA, MLA and SWA as the book's memory estimators do");
  cmd->add_option("--model", o.preset,
                  "a model's shape: " + preset_ids() +
                      " (default book-8b unless shape flags "
                      "are given)");
  cmd->add_option("--emb-dim", o.emb_dim, "embedding width (--emb_dim)");
  cmd->add_option("--heads", o.n_heads, "query heads (--n_heads)");
  cmd->add_option("--kv-heads", o.n_kv_heads,
                  "K/V heads of grouped-query attention (n_heads / the scripts' --n_kv_groups)");
  cmd->add_option("--layers", o.n_layers, "transformer blocks (--n_layers)");
  cmd->add_option("--head-dim", o.head_dim, "head size (default ceil(emb_dim / heads))");
  cmd->add_option("--latent-dim", o.latent_dim, "MLA's latent per token (adds the MLA row)");
  cmd->add_option("--window", o.window, "sliding window (adds the SWA rows)");
  cmd->add_option("--swa-ratio", o.swa_ratio, "a:b, sliding-window layers to full ones (5:1)");
  cmd->add_option("--context", o.context, "context length in tokens (default: the model's)");
  cmd->add_option("--dtype", o.dtype, "fp32, bf16, fp16, fp8 or int8 (default: the model's)");
  cmd->add_option("--batch", o.batch, "batch size (default 1)");
  cmd->add_option("--format", o.format, "text (a table) or json")
      ->check(CLI::IsMember({"text", "json"}));
  return cmd;
}

int run_kv_memory(const KvMemoryOptions& o) {
  const core::KvModelShape shape = shape_of(o);
  if (std::string problem = core::validate_kv_shape(shape); !problem.empty())
    throw core::ParseError(problem);
  const auto bytes = core::kv_dtype_bytes(shape.dtype);
  if (!bytes)
    throw core::ParseError("--dtype '" + shape.dtype +
                           "' is not a dtype the estimators know: use fp32, bf16, fp16, fp8 or "
                           "int8");
  const long long context = o.context.value_or(shape.context_length);
  if (context < 1)
    throw core::ParseError("--context (" + std::to_string(context) + ") must be at least 1 token");
  if (o.batch < 1)
    throw core::ParseError("--batch (" + std::to_string(o.batch) + ") must be at least 1");
  const auto rows = core::kv_memory_table(shape, static_cast<std::uint64_t>(context), *bytes,
                                          static_cast<std::uint64_t>(o.batch));
  if (o.format == "json") {
    // Ids, names and dtypes are plain ASCII words: no escaping needed.
    std::string out = "{\"model\": \"" + shape.id + "\", \"name\": \"" + shape.name +
                      "\", \"context_length\": " + std::to_string(context) +
                      ", \"batch\": " + std::to_string(o.batch) + ", \"dtype\": \"" + shape.dtype +
                      "\", \"bytes_per_elem\": " + std::to_string(*bytes) +
                      ", \"head_dim\": " + std::to_string(core::kv_head_dim(shape)) +
                      ", \"mechanisms\": [";
    for (std::size_t k = 0; k < rows.size(); ++k)
      out += std::string(k ? ", " : "") + "{\"mechanism\": \"" + rows[k].mechanism +
             "\", \"bytes\": " + std::to_string(rows[k].bytes) + ", \"gb\": \"" +
             core::format_gb(rows[k].bytes) + "\"}";
    std::cout << out << "]}\n";
  } else {
    std::cout << shape.name << ": " << shape.n_layers << " layers, " << shape.n_heads << " heads ("
              << shape.n_kv_heads << " K/V), head_dim " << core::kv_head_dim(shape) << ", "
              << context << " tokens, batch " << o.batch << ", " << shape.dtype << "\n";
    for (const auto& r : rows) {
      char line[128];
      std::snprintf(line, sizeof line, "%-10s %16llu bytes  %s\n", r.mechanism.c_str(),
                    static_cast<unsigned long long>(r.bytes), core::format_gb(r.bytes).c_str());
      std::cout << line;
    }
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace attnscope::cli
