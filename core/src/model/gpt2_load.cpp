// gpt2_load.cpp: reading a model's weights (Hugging Face GPT-2 or the book's
// GPTModel) into the engine's layout, its tokenizer, random models.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <unsupported/Eigen/SpecialFunctions>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "kernels/cpu_share.hpp"
#include "model/gpt2_internal.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core {

namespace fs = std::filesystem;

using detail::fail;

namespace {

// "org/name" for a folder (or a file in one) the Hugging Face cache holds,
// models--org--name/snapshots/<commit>/: the commit says nothing to people.
std::optional<std::string> cached_repo_name(const fs::path& path) {
  std::error_code ec;
  const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
  const fs::path snapshots = folder.parent_path();
  const std::string repo_dir = snapshots.parent_path().filename().string();
  if (snapshots.filename() != "snapshots" || !repo_dir.starts_with("models--")) return std::nullopt;
  std::string name = repo_dir.substr(8);
  const auto at = name.find("--");
  if (at == std::string::npos || name.empty()) return std::nullopt;
  name.replace(at, 2, "/");
  return decode_utf8_replace(name);
}

using detail::Block;
using detail::Linear;
using detail::Norm;
using detail::Table;

// Reads tensors by name with their expected shapes, naming the file and the
// tensor in every error.
class Reader {
 public:
  Reader(std::shared_ptr<const TensorFile> file, std::string prefix)
      : file_(std::move(file)), prefix_(std::move(prefix)) {}

  const TensorFile& file() const { return *file_; }
  std::string full(const std::string& name) const { return prefix_ + name; }
  bool has(const std::string& name) const { return file_->shape(full(name)).has_value(); }

  // Checks that `name` exists with shape `want`.
  void expect(const std::string& name, std::vector<std::uint64_t> want) const {
    const auto got = file_->shape(full(name));
    if (!got) fail(file_->source(), "tensor \"" + full(name) + "\" is missing" + hint_);
    if (*got != want)
      fail(file_->source(), "tensor \"" + full(name) + "\" has shape " + shape_text(*got) +
                                " but the config needs " + shape_text(want) + hint_);
  }
  // A (rows x cols) table, mapped when the file holds it as F32.
  Table table(const std::string& name, Eigen::Index rows, Eigen::Index cols) const {
    expect(name, {static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols)});
    Table t;
    t.rows = rows;
    t.cols = cols;
    const auto span = file_->f32_in_place(full(name));
    if (!span.empty()) {
      t.file = file_;
      t.mapped = span.data();
    } else {
      t.owned = file_->matrix(full(name));
    }
    return t;
  }
  RowMatrix vector(const std::string& name, Eigen::Index n) const {
    expect(name, {static_cast<std::uint64_t>(n)});
    return file_->matrix(full(name));
  }
  // An (in x out) weight, Conv1D layout, packed straight from the file.
  Linear conv1d(const std::string& name, Eigen::Index in, Eigen::Index out, RowMatrix bias) const {
    expect(name, {static_cast<std::uint64_t>(in), static_cast<std::uint64_t>(out)});
    const auto span = file_->f32_in_place(full(name));
    Linear l = span.empty() ? Linear::from(file_->matrix(full(name)).data(), in, out, bias)
                            : Linear::from(span.data(), in, out, bias);
    file_->release(full(name));
    return l;
  }
  void set_hint(std::string hint) { hint_ = std::move(hint); }

 private:
  static std::string shape_text(const std::vector<std::uint64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }
  std::shared_ptr<const TensorFile> file_;
  std::string prefix_;
  std::string hint_;
};

Norm norm(const Reader& r, const std::string& gain, const std::string& shift, Eigen::Index d) {
  return Norm{r.vector(gain, d), r.vector(shift, d)};
}

// The highest block number named "<stem>N." in the file, plus one.
int count_blocks(const TensorFile& file, const std::string& stem) {
  int n = 0;
  for (const std::string& name : file.names()) {
    if (!name.starts_with(stem)) continue;
    int k = 0;
    std::size_t i = stem.size();
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) continue;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && k < 100000)
      k = k * 10 + (name[i++] - '0');
    n = std::max(n, k + 1);
  }
  return n;
}

// Before block l: stop when asked; after it: count it.
void block_starts(LoadProgress* p) {
  if (p && p->cancel.load()) throw LoadCancelled();
}
void block_done(LoadProgress* p) {
  if (p) ++p->blocks_done;
}

std::shared_ptr<Gpt2Model::Weights> load_hugging_face(std::shared_ptr<const TensorFile> file,
                                                      const Gpt2Config& c, LoadProgress* progress) {
  std::string prefix;
  if (file->shape("transformer.wte.weight")) prefix = "transformer.";
  Reader r(file, prefix);
  r.set_hint(" (is this a GPT-2 checkpoint, and does config.json belong to it?)");
  const int blocks = count_blocks(*file, prefix + "h.");
  if (blocks != c.n_layer)
    fail(file->source(), "the file has " + std::to_string(blocks) +
                             " blocks (h.0 ... ) but config.json says n_layer " +
                             std::to_string(c.n_layer));
  auto w = std::make_shared<Gpt2Model::Weights>();
  w->config = c;
  if (progress) progress->blocks = c.n_layer;
  const Eigen::Index d = c.n_embd, inner = c.n_inner;
  w->wte = r.table("wte.weight", c.vocab_size, d);
  w->wpe = r.table("wpe.weight", c.n_positions, d);
  w->blocks.resize(static_cast<std::size_t>(c.n_layer));
  // Blocks are packed in parallel (half the load time on two cores); the
  // first error any of them meets is rethrown here.
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
  for (int l = 0; l < c.n_layer; ++l) {
    try {
      block_starts(progress);
      const std::string h = "h." + std::to_string(l) + ".";
      Block& b = w->blocks[static_cast<std::size_t>(l)];
      b.ln_1 = norm(r, h + "ln_1.weight", h + "ln_1.bias", d);
      b.attn =
          r.conv1d(h + "attn.c_attn.weight", d, 3 * d, r.vector(h + "attn.c_attn.bias", 3 * d));
      b.proj = r.conv1d(h + "attn.c_proj.weight", d, d, r.vector(h + "attn.c_proj.bias", d));
      b.ln_2 = norm(r, h + "ln_2.weight", h + "ln_2.bias", d);
      b.fc = r.conv1d(h + "mlp.c_fc.weight", d, inner, r.vector(h + "mlp.c_fc.bias", inner));
      b.fc_proj = r.conv1d(h + "mlp.c_proj.weight", inner, d, r.vector(h + "mlp.c_proj.bias", d));
      block_done(progress);
    } catch (...) {
#pragma omp critical(attnscope_load_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  w->ln_f = norm(r, "ln_f.weight", "ln_f.bias", d);
  const Reader top(file, "");
  if (top.has("lm_head.weight")) {
    w->lm_head = top.table("lm_head.weight", c.vocab_size, d);
  } else if (!c.tie_word_embeddings) {
    fail(file->source(),
         "config.json says tie_word_embeddings false but the file has no lm_head.weight");
  }
  return w;
}

// nn.Linear's weight is (out x in): the engine's (in x out) is its transpose.
Linear linear_transposed(const Reader& r, const std::string& name, Eigen::Index in,
                         Eigen::Index out, RowMatrix bias) {
  r.expect(name, {static_cast<std::uint64_t>(out), static_cast<std::uint64_t>(in)});
  const RowMatrix w = r.file().matrix(r.full(name)).transpose();
  return Linear::from(w.data(), in, out, std::move(bias));
}

RowMatrix optional_bias(const Reader& r, const std::string& name, Eigen::Index n, bool present) {
  if (!present) {
    if (r.has(name))
      fail(r.file().source(), "tensor \"" + name +
                                  "\" is present but the config says qkv_bias false (set "
                                  "\"qkv_bias\": true)");
    return RowMatrix::Zero(1, n);
  }
  if (!r.has(name))
    fail(r.file().source(), "tensor \"" + name +
                                "\" is missing but the config says qkv_bias true (set "
                                "\"qkv_bias\": false)");
  return r.vector(name, n);
}

Block book_block(const Reader& r, int l, const Gpt2Config& c, bool qkv_bias) {
  const std::string t = "trf_blocks." + std::to_string(l) + ".";
  const Eigen::Index d = c.n_embd, inner = c.n_inner;
  Block b;
  b.ln_1 = norm(r, t + "norm1.scale", t + "norm1.shift", d);
  // W_query, W_key, W_value side by side: GPT-2's fused c_attn.
  RowMatrix qkv(d, 3 * d), bias(1, 3 * d);
  const char* names[] = {"W_query", "W_key", "W_value"};  // tensor names, not a stage id
  for (int k = 0; k < 3; ++k) {
    const std::string w = t + "att." + names[k] + ".weight";
    r.expect(w, {static_cast<std::uint64_t>(d), static_cast<std::uint64_t>(d)});
    qkv.middleCols(k * d, d) = r.file().matrix(r.full(w)).transpose();
    bias.middleCols(k * d, d) = optional_bias(r, t + "att." + names[k] + ".bias", d, qkv_bias);
  }
  b.attn = Linear::from(qkv.data(), d, 3 * d, std::move(bias));
  b.proj =
      linear_transposed(r, t + "att.out_proj.weight", d, d, r.vector(t + "att.out_proj.bias", d));
  b.ln_2 = norm(r, t + "norm2.scale", t + "norm2.shift", d);
  b.fc = linear_transposed(r, t + "ff.layers.0.weight", d, inner,
                           r.vector(t + "ff.layers.0.bias", inner));
  b.fc_proj =
      linear_transposed(r, t + "ff.layers.2.weight", inner, d, r.vector(t + "ff.layers.2.bias", d));
  return b;
}

std::shared_ptr<Gpt2Model::Weights> load_book(std::shared_ptr<const TensorFile> file,
                                              const BookConfig& book, const fs::path& config,
                                              LoadProgress* progress) {
  Reader r(file, "");
  r.set_hint(" (is this the book's GPTModel state_dict?)");
  Gpt2Config c = book.config;
  const auto tok = file->shape("tok_emb.weight");
  const auto pos = file->shape("pos_emb.weight");
  if (!tok || tok->size() != 2 || !pos || pos->size() != 2)
    fail(file->source(),
         "no 2-D tok_emb.weight and pos_emb.weight: not the book's GPTModel state_dict");
  const auto check = [&](const char* key, long long from_file, int from_config) {
    if (from_file != from_config)
      fail(config, std::string("\"") + key + "\" is " + std::to_string(from_config) +
                       " but the weights in " + file->source() + " have " +
                       std::to_string(from_file));
  };
  check("vocab_size", static_cast<long long>((*tok)[0]), c.vocab_size);
  check("emb_dim", static_cast<long long>((*tok)[1]), c.n_embd);
  check("context_length", static_cast<long long>((*pos)[0]), c.n_positions);
  check("n_layers", count_blocks(*file, "trf_blocks."), c.n_layer);
  auto w = std::make_shared<Gpt2Model::Weights>();
  w->config = c;
  w->wte = r.table("tok_emb.weight", c.vocab_size, c.n_embd);
  w->wpe = r.table("pos_emb.weight", c.n_positions, c.n_embd);
  if (progress) progress->blocks = c.n_layer;
  for (int l = 0; l < c.n_layer; ++l) {
    block_starts(progress);
    w->blocks.push_back(book_block(r, l, c, book.qkv_bias));
    block_done(progress);
  }
  w->ln_f = norm(r, "final_norm.scale", "final_norm.shift", c.n_embd);
  w->lm_head = r.table("out_head.weight", c.vocab_size, c.n_embd);
  w->config.tie_word_embeddings = false;
  return w;
}

std::shared_ptr<const Gpt2Tokenizer> load_tokenizer(const fs::path& dir) {
  if (dir.empty())
    return std::shared_ptr<const Gpt2Tokenizer>(&Gpt2Tokenizer::builtin(),
                                                [](const Gpt2Tokenizer*) {});
  return std::make_shared<const Gpt2Tokenizer>(Gpt2Tokenizer::load_dir(dir.string()));
}

}  // namespace

Gpt2Model::Gpt2Model(std::shared_ptr<const Weights> weights, std::string name, ModelFormat format,
                     std::shared_ptr<const Gpt2Tokenizer> tokenizer)
    : weights_(std::move(weights)),
      name_(std::move(name)),
      format_(format),
      tokenizer_(std::move(tokenizer)) {}

Gpt2Model::~Gpt2Model() = default;

const Gpt2Config& Gpt2Model::config() const { return weights_->config; }

std::shared_ptr<const Gpt2Model> Gpt2Model::load(const fs::path& path,
                                                 const std::optional<fs::path>& config,
                                                 LoadProgress* progress) {
  const ModelFiles files = locate_model(path, config);
  // The vocabulary (~0.1 s to parse) loads beside the weights.
  auto tokenizer_loading =
      std::async(std::launch::async, [dir = files.tokenizer] { return load_tokenizer(dir); });
  std::shared_ptr<const TensorFile> file = open_tensor_file(files.weights);
  const std::string text = read_text_file(files.config.string());
  const bool book = file->shape("tok_emb.weight").has_value();
  std::shared_ptr<const Weights> weights;
  if (book) {
    weights =
        load_book(file, parse_book_config(text, files.config.string()), files.config, progress);
  } else {
    weights = load_hugging_face(file, parse_gpt2_config(text, files.config.string()), progress);
  }
  auto tokenizer = tokenizer_loading.get();
  if (static_cast<int>(tokenizer->vocab_size()) > weights->config.vocab_size)
    fail(files.config, "the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                           " tokens but the model only " +
                           std::to_string(weights->config.vocab_size));
  fs::path full = fs::absolute(path).lexically_normal();
  if (full.filename().empty()) full = full.parent_path();  // "gpt2/" -> "gpt2"
  // Shown and written as text (titles, trace JSON, exports): bytes of the
  // file name that are not UTF-8 become U+FFFD, as the token texts do. A
  // repo id found in the Hub's cache is named as given ("org/name"), and so
  // is a snapshot folder of the cache (its own name is a commit).
  std::error_code ec;
  std::string name =
      decode_utf8_replace(fs::exists(path, ec) ? full.filename().string() : path.string());
  if (std::optional<std::string> repo = cached_repo_name(full)) name = std::move(*repo);
  return std::make_shared<const Gpt2Model>(std::move(weights), std::move(name),
                                           book ? ModelFormat::Book : ModelFormat::HuggingFace,
                                           std::move(tokenizer));
}

double machine_fma_gflops(double seconds) { return gemm::measure_fma_gflops(seconds); }

WeightStream stream_spans(const std::vector<std::pair<const std::byte*, std::size_t>>& spans,
                          int repeat) {
  // 256 KiB pieces of 64-bit words, shared out between the threads.
  constexpr std::size_t kPiece = 1 << 18;
  std::vector<std::pair<const std::uint64_t*, std::size_t>> pieces;  // (words, count)
  WeightStream out;
  for (const auto& [data, bytes] : spans) {
    out.bytes += static_cast<double>(bytes);
    for (std::size_t i = 0; i + 8 <= bytes; i += kPiece)
      pieces.emplace_back(reinterpret_cast<const std::uint64_t*>(data + i),
                          std::min(kPiece, bytes - i) / 8);
  }
  const auto count = static_cast<int>(pieces.size());
  out.ms = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(repeat, 1); ++r) {
    std::uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int i = 0; i < count; ++i) {
      const auto& [words, n] = pieces[static_cast<std::size_t>(i)];
      for (std::size_t k = 0; k < n; ++k) sum += words[k];
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    volatile std::uint64_t keep = sum;  // the reads are used
    (void)keep;
    out.ms = std::min(out.ms, ms);
  }
  return out;
}

WeightStream stream_weights(const Gpt2Model& model, int repeat) {
  const Gpt2Model::Weights& w = model.weights();
  std::vector<std::pair<const std::byte*, std::size_t>> spans;  // (data, bytes)
  auto add = [&](const float* data, Eigen::Index n) {
    spans.emplace_back(reinterpret_cast<const std::byte*>(data),
                       static_cast<std::size_t>(n) * sizeof(float));
  };
  for (const detail::Block& b : w.blocks)
    for (const detail::Linear* l : {&b.attn, &b.proj, &b.fc, &b.fc_proj}) {
      if (gemm::available())
        add(l->packed.data.data(), static_cast<Eigen::Index>(l->packed.data.size()));
      else
        add(l->weight.data(), l->weight.size());
    }
  add(w.head().data(), w.head().rows * w.head().cols);
  return stream_spans(spans, repeat);
}

std::shared_ptr<const Gpt2Model> random_gpt2(const Gpt2Config& c, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto random = [&](Eigen::Index rows, Eigen::Index cols) {
    RowMatrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(engine);
    return m;
  };
  auto ones = [](Eigen::Index n) { return RowMatrix::Ones(1, n); };
  auto zeros = [](Eigen::Index n) { return RowMatrix::Zero(1, n); };
  auto w = std::make_shared<Gpt2Model::Weights>();
  w->config = c;
  const Eigen::Index d = c.n_embd, inner = c.n_inner;
  auto table = [](RowMatrix m) {
    Table t;
    t.rows = m.rows();
    t.cols = m.cols();
    t.owned = std::move(m);
    return t;
  };
  w->wte = table(random(c.vocab_size, d));
  w->wpe = table(random(c.n_positions, d));
  for (int l = 0; l < c.n_layer; ++l) {
    Block b;
    b.ln_1 = Norm{ones(d), zeros(d)};
    b.attn = Linear::from(random(d, 3 * d).data(), d, 3 * d, random(1, 3 * d));
    b.proj = Linear::from(random(d, d).data(), d, d, random(1, d));
    b.ln_2 = Norm{ones(d), zeros(d)};
    b.fc = Linear::from(random(d, inner).data(), d, inner, random(1, inner));
    b.fc_proj = Linear::from(random(inner, d).data(), inner, d, random(1, d));
    w->blocks.push_back(std::move(b));
  }
  w->ln_f = Norm{ones(d), zeros(d)};
  auto tokenizer =
      std::shared_ptr<const Gpt2Tokenizer>(&Gpt2Tokenizer::builtin(), [](const Gpt2Tokenizer*) {});
  return std::make_shared<const Gpt2Model>(std::move(w), "random", ModelFormat::HuggingFace,
                                           std::move(tokenizer));
}

}  // namespace attnscope::core
