// kv_memory.cpp: the book's KV-cache memory estimators (analysis/kv_memory.hpp).
#include "attnscope/analysis/kv_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace attnscope::core {

namespace {

KvModelShape shape(std::string id, std::string name, int emb, int heads, int kv, int layers,
                   int context, std::string dtype) {
  KvModelShape s;
  s.id = std::move(id);
  s.name = std::move(name);
  s.emb_dim = emb;
  s.n_heads = heads;
  s.n_kv_heads = kv;
  s.n_layers = layers;
  s.context_length = context;
  s.dtype = std::move(dtype);
  return s;
}

// Data table: the presets' shapes from the models' configs (the book's
// standalone notebooks) and the READMEs' examples.
std::vector<KvModelShape> make_presets() {
  std::vector<KvModelShape> p;
  p.push_back(shape("gpt2-124m", "GPT-2 124M", 768, 12, 12, 12, 1024, "fp32"));
  p.push_back(shape("llama3.2-1b", "Llama 3.2 1B", 2048, 32, 8, 16, 131072, "bf16"));
  p.push_back(shape("qwen3-0.6b", "Qwen3 0.6B", 1024, 16, 8, 28, 40960, "bf16"));
  p.back().head_dim = 128;
  p.push_back(shape("gemma3-270m", "Gemma 3 270M", 640, 4, 1, 18, 32768, "bf16"));
  p.back().head_dim = 256;
  p.back().sliding_window = 512;  // five sliding layers, then one full
  p.back().swa_layers = 5;
  p.back().full_layers = 1;
  // memory_estimator_gqa.py / _swa.py in the READMEs: --n_kv_groups 4 (8 K/V heads).
  p.push_back(shape("book-8b", "The book's 8B example", 4096, 32, 8, 32, 32768, "bf16"));
  p.back().sliding_window = 1024;
  p.back().swa_layers = 5;
  p.back().full_layers = 1;
  // memory_estimator_mla.py in its README: --n_kv_groups 4 (6 K/V heads), latent 1024.
  p.push_back(shape("book-mla", "The book's MLA example", 2048, 24, 6, 48, 8192, "bf16"));
  p.back().latent_dim = 1024;
  return p;
}

}  // namespace

const std::vector<KvModelShape>& kv_model_presets() {
  static const std::vector<KvModelShape> presets = make_presets();
  return presets;
}

std::optional<KvModelShape> find_kv_model_preset(std::string_view id) {
  for (const KvModelShape& s : kv_model_presets())
    if (s.id == id) return s;
  return std::nullopt;
}

std::optional<int> kv_dtype_bytes(std::string_view dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8" || dtype == "int8") return 1;
  return std::nullopt;
}

std::string validate_kv_shape(const KvModelShape& s) {
  std::ostringstream msg;
  if (s.emb_dim < 1 || s.n_heads < 1 || s.n_layers < 1)
    msg << "emb_dim (" << s.emb_dim << "), n_heads (" << s.n_heads << ") and n_layers ("
        << s.n_layers << ") must each be at least 1";
  else if (s.n_kv_heads < 1 || s.n_heads % s.n_kv_heads != 0)
    msg << "n_kv_heads (" << s.n_kv_heads << ") must divide n_heads (" << s.n_heads
        << "): each K/V head serves the same number of query heads";
  else if (s.head_dim < 0 || s.latent_dim < 0 || s.sliding_window < 0)
    msg << "head_dim, latent_dim and the sliding window must not be negative (0 means unset)";
  else if (s.swa_layers < 0 || s.full_layers < 0 || s.swa_layers + s.full_layers == 0)
    msg << "the SWA:full layer ratio (" << s.swa_layers << ":" << s.full_layers
        << ") must be two non-negative whole numbers, not both 0, e.g. 5:1";
  else if (!kv_dtype_bytes(s.dtype))
    msg << "unknown dtype \"" << s.dtype << "\": use fp32, bf16, fp16, fp8 or int8";
  return msg.str();
}

int kv_head_dim(const KvModelShape& s) {
  return s.head_dim > 0 ? s.head_dim : (s.emb_dim + s.n_heads - 1) / s.n_heads;  // math.ceil
}

std::uint64_t kv_bytes_per_layer(std::uint64_t batch, std::uint64_t tokens, std::uint64_t head_dim,
                                 std::uint64_t kv_heads, std::uint64_t bytes_per_elem) {
  return batch * tokens * head_dim * kv_heads * 2 * bytes_per_elem;
}

SwaLayerSplit distribute_swa_layers(int n_layers, int swa, int full) {
  const int block = swa + full;
  if (block <= 0 || swa < 0 || full < 0) return {0, n_layers};  // refused by validate_kv_shape
  const int blocks = n_layers / block, rest = n_layers % block;
  return {blocks * swa + std::min(swa, rest), blocks * full + std::max(0, rest - swa)};
}

std::vector<KvMemoryRow> kv_memory_table(const KvModelShape& s, std::uint64_t context_length,
                                         int bytes_per_elem, std::uint64_t batch) {
  const auto hd = static_cast<std::uint64_t>(kv_head_dim(s));
  const auto bytes = static_cast<std::uint64_t>(bytes_per_elem);
  const auto layers = static_cast<std::uint64_t>(s.n_layers);
  const auto mha_heads = static_cast<std::uint64_t>(s.n_heads);
  const auto gqa_heads = static_cast<std::uint64_t>(s.n_kv_heads);
  std::vector<KvMemoryRow> rows;
  rows.push_back({"MHA", kv_bytes_per_layer(batch, context_length, hd, mha_heads, bytes) * layers});
  rows.push_back({"GQA", kv_bytes_per_layer(batch, context_length, hd, gqa_heads, bytes) * layers});
  if (s.latent_dim > 0)
    rows.push_back({"MLA", batch * context_length * layers *
                               static_cast<std::uint64_t>(s.latent_dim) * bytes});
  if (s.sliding_window > 0) {
    const SwaLayerSplit split = distribute_swa_layers(s.n_layers, s.swa_layers, s.full_layers);
    const std::uint64_t window =
        std::min(context_length, static_cast<std::uint64_t>(s.sliding_window));
    for (const auto& [name, heads] : {std::pair{"MHA + SWA", mha_heads}, {"GQA + SWA", gqa_heads}})
      rows.push_back({name, static_cast<std::uint64_t>(split.swa) *
                                    kv_bytes_per_layer(batch, window, hd, heads, bytes) +
                                static_cast<std::uint64_t>(split.full) *
                                    kv_bytes_per_layer(batch, context_length, hd, heads, bytes)});
  }
  return rows;
}

std::string format_gb(std::uint64_t bytes) {
  // f"{gb:,.2f} GB" with gb = bytes / 1000**3 (a Python float).
  char digits[64];
  std::snprintf(digits, sizeof digits, "%.2f", static_cast<double>(bytes) / 1e9);
  std::string s = digits;
  const std::size_t point = s.find('.');
  for (std::size_t i = point; i > 3; i -= 3) s.insert(i - 3, ",");
  return s + " GB";
}

const std::vector<KvBookPrint>& kv_book_prints() {
  // The READMEs' example runs: memory_estimator_gqa.py and _swa.py on the
  // 8B shape at 32,768 tokens, memory_estimator_mla.py on its 2048-wide
  // shape at 8,192 tokens, all in bf16.
  static const std::vector<KvBookPrint> prints = {
      {"book-8b", 32768, "bf16", "MHA", "17.18 GB", "ch04/04_gqa"},
      {"book-8b", 32768, "bf16", "GQA", "4.29 GB", "ch04/04_gqa"},
      {"book-8b", 32768, "bf16", "MHA + SWA", "3.14 GB", "ch04/06_swa"},
      {"book-8b", 32768, "bf16", "GQA + SWA", "0.78 GB", "ch04/06_swa"},
      {"book-mla", 8192, "bf16", "MHA", "3.25 GB", "ch04/05_mla"},
      {"book-mla", 8192, "bf16", "GQA", "0.81 GB", "ch04/05_mla"},
      {"book-mla", 8192, "bf16", "MLA", "0.81 GB", "ch04/05_mla"},
  };
  return prints;
}

const KvBookPrint* find_kv_book_print(const KvModelShape& shape, std::uint64_t context,
                                      std::string_view dtype, std::string_view mechanism) {
  const std::optional<KvModelShape> preset = find_kv_model_preset(shape.id);
  if (!preset) return nullptr;
  const KvModelShape& p = *preset;
  const bool same_shape = p.emb_dim == shape.emb_dim && p.n_heads == shape.n_heads &&
                          p.n_kv_heads == shape.n_kv_heads && p.n_layers == shape.n_layers &&
                          kv_head_dim(p) == kv_head_dim(shape) &&
                          p.latent_dim == shape.latent_dim &&
                          p.sliding_window == shape.sliding_window &&
                          p.swa_layers == shape.swa_layers && p.full_layers == shape.full_layers;
  if (!same_shape) return nullptr;
  for (const KvBookPrint& print : kv_book_prints())
    if (print.preset == shape.id && print.context == context && print.dtype == dtype &&
        print.mechanism == mechanism)
      return &print;
  return nullptr;
}

}  // namespace attnscope::core
