// family_load.cpp: reading a Llama/Mistral/Qwen/Gemma 3 checkpoint (Hugging
// Face names, nn.Linear layout) into the engine's layout.
#include <algorithm>
#include <exception>
#include <string>

#include "attnscope/base/errors.hpp"
#include "model/family_internal.hpp"

namespace attnscope::core {

namespace fs = std::filesystem;

using detail::fail;
using detail::FamilyBlock;
using detail::Linear;

namespace {

using Shape = std::vector<std::uint64_t>;

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Reads tensors by name with the shapes the config needs, naming the file,
// the tensor and the shape in every error.
class FamilyReader {
 public:
  explicit FamilyReader(std::shared_ptr<const TensorFile> file) : file_(std::move(file)) {}

  bool has(const std::string& name) const { return file_->shape(name).has_value(); }
  void expect(const std::string& name, const Shape& want) const {
    const auto got = file_->shape(name);
    if (!got)
      fail(file_->source(),
           "tensor \"" + name + "\" is missing (the config needs shape " + shape_text(want) + ")");
    if (*got != want)
      fail(file_->source(), "tensor \"" + name + "\" has shape " + shape_text(*got) +
                                " but the config needs " + shape_text(want));
  }
  RowMatrix matrix(const std::string& name, Eigen::Index rows, Eigen::Index cols) const {
    expect(name, {static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols)});
    RowMatrix m = file_->matrix(name);
    file_->release(name);
    return m;
  }
  RowMatrix vector(const std::string& name, Eigen::Index n) const {
    expect(name, {static_cast<std::uint64_t>(n)});
    RowMatrix m = file_->matrix(name);
    m.resize(1, n);
    return m;
  }
  // A norm's gain: w, or Gemma's 1 + w (in float).
  RowMatrix gain(const std::string& name, Eigen::Index n, bool gemma) const {
    RowMatrix w = vector(name, n);
    if (gemma) w.array() += 1.0f;
    return w;
  }
  const std::string& source() const { return file_->source(); }
  bool is_bf16(const std::string& name) const { return file_->dtype(name) == "BF16"; }
  // A BF16 (rows, cols) tensor's bits, row-major (widened and back: exact).
  gemm::Buffer<std::uint16_t> bf16(const std::string& name, Eigen::Index rows,
                                   Eigen::Index cols) const {
    expect(name, {static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols)});
    const auto bits = file_->bf16_in_place(name);
    if (static_cast<Eigen::Index>(bits.size()) == rows * cols) {  // copied as they lie: no floats
      gemm::Buffer<std::uint16_t> out(bits.begin(), bits.end());
      file_->release(name);
      return out;
    }
    const RowMatrix m = matrix(name, rows, cols);
    gemm::Buffer<std::uint16_t> out(static_cast<std::size_t>(m.size()));
    for (Eigen::Index i = 0; i < m.size(); ++i)
      out[static_cast<std::size_t>(i)] = gemm::float_to_bf16_bits(m.data()[i]);
    return out;
  }

 private:
  std::shared_ptr<const TensorFile> file_;
};

// nn.Linear weights (out x in) stacked side by side as one (in x sum(out))
// layer for the kernel, with their biases (zeros where a part has none).
struct Part {
  std::string name;  // without ".weight"
  Eigen::Index out;
  bool bias;
};
// Where every part is BF16 in the file the layer stays BF16 in memory
// (Linear::from_bf16: the same numbers, half the bytes); else float32.
Linear fused_linear(const FamilyReader& r, Eigen::Index in, const std::vector<Part>& parts) {
  Eigen::Index total = 0;
  bool bf16 = true;
  for (const Part& p : parts) {
    total += p.out;
    r.expect(p.name + ".weight",
             {static_cast<std::uint64_t>(p.out), static_cast<std::uint64_t>(in)});
    bf16 = bf16 && r.is_bf16(p.name + ".weight");
  }
  RowMatrix b = RowMatrix::Zero(1, total);
  Eigen::Index col = 0;
  if (bf16) {
    gemm::Buffer<std::uint16_t> w(static_cast<std::size_t>(in * total));
    for (const Part& p : parts) {
      const RowMatrix m = r.matrix(p.name + ".weight", p.out, in);  // (out, in)
      constexpr Eigen::Index kTile = 64;  // transposed in tiles that stay in L1
      for (Eigen::Index j0 = 0; j0 < p.out; j0 += kTile)
        for (Eigen::Index k0 = 0; k0 < in; k0 += kTile)
          for (Eigen::Index k = k0; k < std::min(in, k0 + kTile); ++k)
            for (Eigen::Index j = j0; j < std::min(p.out, j0 + kTile); ++j)
              w[static_cast<std::size_t>(k * total + col + j)] = gemm::float_to_bf16_bits(m(j, k));
      if (p.bias) b.middleCols(col, p.out) = r.vector(p.name + ".bias", p.out);
      col += p.out;
    }
    return Linear::from_bf16(w.data(), in, total, std::move(b));
  }
  RowMatrix w(in, total);
  for (const Part& p : parts) {
    w.middleCols(col, p.out) = r.matrix(p.name + ".weight", p.out, in).transpose();
    if (p.bias) b.middleCols(col, p.out) = r.vector(p.name + ".bias", p.out);
    col += p.out;
  }
  return Linear::from(w.data(), in, total, std::move(b));
}

FamilyBlock load_block(const FamilyReader& r, const FamilyConfig& c, int l) {
  const std::string p = "model.layers." + std::to_string(l) + ".";
  const Eigen::Index d = c.hidden_size, hd = c.head_dim, inner = c.intermediate_size;
  FamilyBlock b;
  b.input_norm = r.gain(p + "input_layernorm.weight", d, c.gemma);
  b.post_attn_norm = r.gain(p + "post_attention_layernorm.weight", d, c.gemma);
  if (c.gemma) {
    b.pre_ff_norm = r.gain(p + "pre_feedforward_layernorm.weight", d, true);
    b.post_ff_norm = r.gain(p + "post_feedforward_layernorm.weight", d, true);
  }
  if (c.qk_norm) {
    b.q_norm = r.gain(p + "self_attn.q_norm.weight", hd, c.gemma);
    b.k_norm = r.gain(p + "self_attn.k_norm.weight", hd, c.gemma);
  }
  const std::string a = p + "self_attn.";
  b.qkv = fused_linear(r, d,
                       {{a + "q_proj", c.q_width(), c.q_bias},
                        {a + "k_proj", c.kv_width(), c.k_bias},
                        {a + "v_proj", c.kv_width(), c.v_bias}});
  b.o = fused_linear(r, c.q_width(), {{a + "o_proj", d, c.o_bias}});
  const std::string m = p + "mlp.";
  b.gate_up = fused_linear(
      r, d, {{m + "gate_proj", inner, c.mlp_bias}, {m + "up_proj", inner, c.mlp_bias}});
  b.down = fused_linear(r, inner, {{m + "down_proj", d, c.mlp_bias}});
  return b;
}

// The highest layer number named "model.layers.N." in the file, plus one.
int count_layers(const TensorFile& file) {
  const std::string stem = "model.layers.";
  int n = 0;
  for (const std::string& name : file.names()) {
    if (!name.starts_with(stem)) continue;
    std::size_t i = stem.size();
    int k = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && k < 1000000)
      k = k * 10 + (name[i++] - '0');
    if (i > stem.size()) n = std::max(n, k + 1);
  }
  return n;
}

}  // namespace

FamilyModel::FamilyModel(std::shared_ptr<const Weights> weights) : weights_(std::move(weights)) {}
FamilyModel::~FamilyModel() = default;

const FamilyConfig& FamilyModel::config() const { return weights_->config; }

std::size_t FamilyModel::weight_bytes() const { return weights_->bytes(); }

WeightStream stream_weights(const FamilyModel& model, int repeat) {
  const FamilyModel::Weights& w = model.weights();
  std::vector<std::pair<const std::byte*, std::size_t>> spans;  // (data, bytes)
  auto add = [&](const auto& v) {
    if (!v.empty())
      spans.emplace_back(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(v[0]));
  };
  for (const detail::FamilyBlock& b : w.blocks)
    for (const detail::Linear* l : {&b.qkv, &b.o, &b.gate_up, &b.down}) {
      add(l->packed.data);
      add(l->packed.bf16);
      if (l->weight.size())
        spans.emplace_back(reinterpret_cast<const std::byte*>(l->weight.data()),
                           static_cast<std::size_t>(l->weight.size()) * sizeof(float));
    }
  if (!w.head_bf16().empty())
    add(w.head_bf16());
  else
    spans.emplace_back(reinterpret_cast<const std::byte*>(w.head().data()),
                       static_cast<std::size_t>(w.head().size()) * sizeof(float));
  return stream_spans(spans, repeat);
}

std::size_t FamilyModel::Weights::bytes() const {
  auto floats = [](const RowMatrix& m) {
    return static_cast<std::size_t>(m.size()) * sizeof(float);
  };
  std::size_t n = floats(embed) + floats(lm_head) + floats(final_norm) +
                  (embed_bf16.size() + lm_head_bf16.size()) * sizeof(std::uint16_t);
  for (const detail::FamilyBlock& b : blocks)
    n += floats(b.input_norm) + floats(b.post_attn_norm) + floats(b.pre_ff_norm) +
         floats(b.post_ff_norm) + floats(b.q_norm) + floats(b.k_norm) + b.qkv.bytes() +
         b.o.bytes() + b.gate_up.bytes() + b.down.bytes();
  return n;
}

std::shared_ptr<const FamilyModel> FamilyModel::load(const FamilyConfig& c,
                                                     std::shared_ptr<const TensorFile> file,
                                                     LoadProgress* progress) {
  const FamilyReader r(file);
  const int layers = count_layers(*file);
  if (layers > c.num_hidden_layers)
    fail(file->source(), "the file has " + std::to_string(layers) +
                             " layers (model.layers.0 ...) but config.json says "
                             "num_hidden_layers " +
                             std::to_string(c.num_hidden_layers));
  auto w = std::make_shared<Weights>();
  w->config = c;
  if (progress) progress->blocks = c.num_hidden_layers;
  if (r.has("model.embed_tokens.weight") && r.is_bf16("model.embed_tokens.weight"))
    w->embed_bf16 = r.bf16("model.embed_tokens.weight", c.vocab_size, c.hidden_size);
  else
    w->embed = r.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size);
  w->blocks.resize(static_cast<std::size_t>(c.num_hidden_layers));
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    try {
      if (progress && progress->cancel.load()) throw LoadCancelled();
      w->blocks[static_cast<std::size_t>(l)] = load_block(r, c, l);
      if (progress) ++progress->blocks_done;
    } catch (...) {
#pragma omp critical(attnscope_family_load_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  w->final_norm = r.gain("model.norm.weight", c.hidden_size, c.gemma);
  if (r.has("lm_head.weight")) {
    if (r.is_bf16("lm_head.weight"))
      w->lm_head_bf16 = r.bf16("lm_head.weight", c.vocab_size, c.hidden_size);
    else
      w->lm_head = r.matrix("lm_head.weight", c.vocab_size, c.hidden_size);
  } else if (!c.tie_word_embeddings) {
    r.expect("lm_head.weight",
             {static_cast<std::uint64_t>(c.vocab_size), static_cast<std::uint64_t>(c.hidden_size)});
  }
  return std::make_shared<const FamilyModel>(std::move(w));
}

std::shared_ptr<const FamilyModel> FamilyModel::load(const fs::path& path, LoadProgress* progress) {
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  if (!folder && !fs::exists(path, ec)) fail(path, "no such file or folder");
  const fs::path dir = folder ? path : path.parent_path();
  fs::path weights = path;
  if (folder) {
    weights = dir / "model.safetensors";
    if (!fs::exists(weights, ec)) weights = dir / "model.safetensors.index.json";
    if (!fs::exists(weights, ec))
      fail(path, "holds neither model.safetensors nor model.safetensors.index.json");
  }
  const fs::path config = dir / "config.json";
  if (!fs::exists(config, ec)) fail(path, "has no config.json beside its weights");
  const FamilyConfig c = read_family_config(config.string());
  std::shared_ptr<const TensorFile> file = open_tensor_file(weights);
  return load(c, std::move(file), progress);
}

}  // namespace attnscope::core
