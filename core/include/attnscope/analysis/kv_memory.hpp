// kv_memory.hpp: KV-cache memory as the book's estimators compute it
// (memory_estimator_gqa.py, memory_estimator_mla.py, memory_estimator_swa.py):
// the bytes a model's cache holds at a context length for multi-head (MHA),
// grouped-query (GQA), latent (MLA) and sliding-window (SWA) attention.
//
//   per layer = batch x tokens x head_dim x kv_heads x 2 (K and V) x dtype bytes
//   MLA       = batch x tokens x layers x latent_dim x dtype bytes
//   SWA       = swa_layers x per layer(min(tokens, W)) + full_layers x per layer(tokens)
//
// The scripts take head_dim = ceil(emb_dim / n_heads); a shape may instead
// give the model's own head_dim (Qwen3 and Gemma 3 use wider heads). Note
// the scripts' --n_kv_groups is the number of query heads per K/V head
// (n_kv_heads = n_heads / n_kv_groups), the reverse of the classes'
// num_kv_groups (the number of K/V heads); a shape here names n_kv_heads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core {

// A model's attention shape, as the estimators' flags give it.
struct KvModelShape {
  std::string id;          // e.g. "llama3.2-1b"
  std::string name;        // e.g. "Llama 3.2 1B"
  int emb_dim = 0;         // --emb_dim
  int n_heads = 0;         // --n_heads (query heads)
  int n_kv_heads = 0;      // K/V heads of its grouped-query attention
  int n_layers = 0;        // --n_layers
  int head_dim = 0;        // 0: the scripts' ceil(emb_dim / n_heads)
  int latent_dim = 0;      // MLA's per-token latent (--latent_dim); 0: no MLA row
  int sliding_window = 0;  // --sliding_window_size; 0: no SWA rows
  int swa_layers = 1;      // --swa_ratio a:b, a SWA layers for every b full ones
  int full_layers = 0;
  int context_length = 1024;   // the model's context length (the plots' right end)
  std::string dtype = "bf16";  // the model's dtype: fp32, bf16, fp16, fp8, int8
};

// The presets: GPT-2 124M, Llama 3.2 1B, Qwen3 0.6B, Gemma 3 270M, the 8B
// example of the GQA and SWA READMEs ("book-8b") and the MLA README's
// example ("book-mla").
const std::vector<KvModelShape>& kv_model_presets();
// The preset with that id, or nullopt.
std::optional<KvModelShape> find_kv_model_preset(std::string_view id);

// DTYPE_BYTES: fp32 4, bf16 2, fp16 2, fp8 1, int8 1; nullopt otherwise.
std::optional<int> kv_dtype_bytes(std::string_view dtype);

// "" when the shape can be estimated, else one sentence naming the bad value.
std::string validate_kv_shape(const KvModelShape& shape);

// The head size the estimate uses (shape.head_dim, or ceil(emb_dim / n_heads)).
int kv_head_dim(const KvModelShape& shape);

// calc_kv_bytes_per_layer: batch x tokens x head_dim x kv_heads x 2 x bytes.
std::uint64_t kv_bytes_per_layer(std::uint64_t batch, std::uint64_t tokens, std::uint64_t head_dim,
                                 std::uint64_t kv_heads, std::uint64_t bytes_per_elem);

// distribute_layers(n_layers, a, b): whole blocks of a SWA + b full layers,
// then the rest SWA first.
struct SwaLayerSplit {
  int swa = 0, full = 0;
};
SwaLayerSplit distribute_swa_layers(int n_layers, int swa, int full);

// One line of the estimate.
struct KvMemoryRow {
  std::string mechanism;  // "MHA", "GQA", "MLA", "MHA + SWA", "GQA + SWA"
  std::uint64_t bytes = 0;
};

// The estimate at `context_length` tokens and `bytes_per_elem`: MHA (every
// head caches K and V) and GQA (n_kv_heads), then MLA when the shape has a
// latent, then MHA + SWA and GQA + SWA when it has a window.
// Precondition: validate_kv_shape(shape) is "".
std::vector<KvMemoryRow> kv_memory_table(const KvModelShape& shape, std::uint64_t context_length,
                                         int bytes_per_elem, std::uint64_t batch = 1);

// convert_bytes: bytes / 1000^3 as "17.18 GB" (two decimals, thousands commas).
std::string format_gb(std::uint64_t bytes);

// A number the book's READMEs print from an estimator's run: the preset whose
// shape that run used, its --context_length and dtype, and one row.
struct KvBookPrint {
  std::string_view preset;     // a kv_model_presets() id
  std::uint64_t context = 0;   // --context_length
  std::string_view dtype;      // --dtype
  std::string_view mechanism;  // a KvMemoryRow::mechanism
  std::string_view printed;    // as the README prints it, e.g. "17.18 GB"
  std::string_view readme;     // which README, e.g. "ch04/04_gqa"
};
const std::vector<KvBookPrint>& kv_book_prints();
// The print for this row of an estimate of `shape` at `context` tokens in
// `dtype`, when the shape is a preset's unchanged (every field the estimate
// reads) and the README ran that context and dtype; nullptr otherwise.
const KvBookPrint* find_kv_book_print(const KvModelShape& shape, std::uint64_t context,
                                      std::string_view dtype, std::string_view mechanism);

}  // namespace attnscope::core
