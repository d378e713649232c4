// gpt2_model.cpp: finding a model's files, reading its weights (Hugging Face
// GPT-2 or the book's GPTModel) into the engine's layout, and the per-row
// math the forward shares (LayerNorm, the projections, the activations).
#include "attnscope/model/gpt2_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unsupported/Eigen/SpecialFunctions>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "kernels/cpu_share.hpp"
#include "model/gpt2_internal.hpp"

#if defined(ATTNSCOPE_HAVE_OPENMP)
#include <omp.h>
#endif

namespace attnscope::core {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// The math shared by the forward pass.

namespace detail {

Linear Linear::from(const float* w, Eigen::Index in, Eigen::Index out, RowMatrix bias) {
  Linear l;
  l.in = in;
  l.out = out;
  l.bias = bias.size() ? std::move(bias) : RowMatrix::Zero(1, out);
  const Eigen::Map<const RowMatrix> m(w, in, out);
  l.max_abs = in > 0 && out > 0 ? m.cwiseAbs().maxCoeff() : 0.0f;
  if (!std::isfinite(l.max_abs)) l.max_abs = std::numeric_limits<float>::infinity();
  if (gemm::available())
    l.packed = gemm::pack_weights(w, in, out);
  else
    l.weight = m;
  return l;
}

namespace {

// W back from its panels, for the rare x whose products could overflow in the kernel.
RowMatrix unpack(const gemm::PackedWeights& p) {
  RowMatrix w(p.rows, p.cols);
  for (Eigen::Index q = 0; q < p.panels(); ++q) {
    const Eigen::Index col = q * gemm::kPanelCols;
    const Eigen::Index n = std::min(gemm::kPanelCols, p.cols - col);
    for (Eigen::Index k = 0; k < p.rows; ++k)
      std::copy_n(p.panel(q) + k * gemm::kPanelCols, n, w.data() + k * p.cols + col);
  }
  return w;
}

}  // namespace

void Linear::apply(const RowMatrix& x, RowMatrix& y) const {
  y.resize(x.rows(), out);
  apply_into(x, y);
}

bool Linear::apply_one_tile(const RowMatrix& x, gemm::PackedRows& xt,
                            Eigen::Ref<RowMatrix> y) const {
  // At most 8 rows multiply every weight once: bound by reading the
  // weights, not by FMAs. The tile is packed here (768 floats cost less
  // than a barrier); then each thread streams its own contiguous range of
  // panels, fetching ahead only within it, and helps with the others' when
  // done (RangeShare), with no barrier between. Runs of panels handed out
  // after a parallel packing (the path for more rows) read GPT-2 124M's
  // blocks for one row 10-15 % slower, in interleaved runs.
  xt.max_abs = gemm::pack_columns(x, 0, xt);
  if (!gemm::sums_stay_finite(xt.max_abs, max_abs, in)) return false;
  const auto panels = static_cast<int>(packed.panels());
  const int team = panels > 1 && in * out >= (1 << 18) ? team_size() : 1;
  RangeShare share(panels, team);
#pragma omp parallel num_threads(team)
  share.run([&](int p, bool next_is_own) {
    gemm::multiply_panel(xt, packed.panel(p), p, bias, y, next_is_own);
  });
  return true;
}

void Linear::apply_into(const RowMatrix& x, Eigen::Ref<RowMatrix> y) const {
  if (x.rows() == 0) return;
  if (gemm::available()) {
    thread_local gemm::PackedRows tiles;
    gemm::PackedRows& xt = tiles;
    gemm::size_rows(x.rows(), x.cols(), xt);
    const auto panels = static_cast<int>(packed.panels());
    const auto row_tiles = static_cast<int>(xt.tiles());
    if (row_tiles == 1) {  // an append's row
      if (apply_one_tile(x, xt, y)) return;
    } else {
      float largest = 0.0f;
      bool done = false;
      // One team packs x (tiles shared between the threads), then multiplies
      // runs of consecutive panels: multiply_panel fetches a thread's next
      // panel while it works on this one. Runs of a few panels, handed to
      // whichever thread is free, so that a thread slowed by another program
      // on its core holds up the others by one run at most.
      const int run = std::max(1, panels / 8);
#pragma omp parallel if (panels > 1 && in * out >= (1 << 18))
      {
#pragma omp for schedule(dynamic, 4) reduction(max : largest)
        for (int t = 0; t < row_tiles; ++t)
          largest = std::max(largest, gemm::pack_columns(x, 0, xt, t, t + 1));
        if (gemm::sums_stay_finite(largest, max_abs, in)) {  // the same answer on every thread
#pragma omp for schedule(dynamic, run)
          for (int p = 0; p < panels; ++p) gemm::multiply_panel(xt, packed.panel(p), p, bias, y);
#pragma omp single nowait
          done = true;
        }
      }
      xt.max_abs = largest;
      if (done) return;
    }
    y.noalias() = x * unpack(packed);
  } else {
    y.noalias() = x * weight;
  }
  y.rowwise() += bias.row(0);
}

RowMatrix Norm::apply(const Eigen::Ref<const RowMatrix>& x, double eps) const {
  // Float sums in Eigen's vectorised reduction (a tree over 16 lanes, as
  // precise as PyTorch's float LayerNorm); rows in parallel.
  RowMatrix y(x.rows(), x.cols());
  const auto d = static_cast<float>(x.cols());
  const auto e = static_cast<float>(eps);
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    const auto row = x.row(i).array();
    const float mean = row.sum() / d;
    const float var = (row - mean).square().sum() / d;
    const float inv = 1.0f / std::sqrt(var + e);
    y.row(i).array() = ((row - mean) * inv) * gain.row(0).array() + shift.row(0).array();
  }
  return y;
}

void activate(RowMatrix& x, Gpt2Activation a) {
  // Eigen's array functions are vectorised (its tanh a rational approximation
  // within a few ulp of std::tanh); rows in parallel, a block at a time.
  const Eigen::Index rows = x.rows();
  const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
#pragma omp parallel for schedule(static) if (x.size() > 100000)
  for (Eigen::Index r = 0; r < rows; ++r) {
    auto v = x.row(r).array();
    switch (a) {
      case Gpt2Activation::GeluNew:
      case Gpt2Activation::GeluPytorchTanh:
        v = 0.5f * v * (1.0f + (c * (v + 0.044715f * v.cube())).tanh());
        break;
      case Gpt2Activation::Gelu:
        v = 0.5f * v * (1.0f + (v * static_cast<float>(M_SQRT1_2)).erf());
        break;
      case Gpt2Activation::Relu:
        v = v.max(0.0f);
        break;
    }
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Where a model's files are.

namespace {

[[noreturn]] void fail(const fs::path& where, const std::string& what) {
  throw ParseError(where.string() + ": " + what);
}

bool is_pth(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".pth" || e == ".pt";
}

fs::path tokenizer_folder(const fs::path& dir) {
  std::error_code ec;
  if ((fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) ||
      (fs::exists(dir / "encoder.json", ec) && fs::exists(dir / "vocab.bpe", ec)))
    return dir;
  return {};
}

}  // namespace

ModelFiles locate_model(const fs::path& path, const std::optional<fs::path>& config) {
  std::error_code ec;
  ModelFiles files;
  if (!fs::exists(path, ec)) fail(path, "no such file or folder");
  fs::path dir = path;
  if (fs::is_directory(path, ec)) {
    for (const char* name :
         {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "model.pth"})
      if (fs::exists(path / name, ec)) {
        files.weights = path / name;
        break;
      }
    if (files.weights.empty()) {
      for (const auto& e : fs::directory_iterator(path, ec))
        if (is_pth(e.path())) files.weights = e.path();
    }
    if (files.weights.empty())
      fail(path,
           "no model.safetensors, model.safetensors.index.json or .pth file in this folder "
           "(a Hugging Face GPT-2 folder has config.json and model.safetensors)");
  } else {
    files.weights = path;
    dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  }
  if (config) {
    if (!fs::is_regular_file(*config, ec)) fail(*config, "no such config file");
    files.config = *config;
  } else if (is_pth(files.weights)) {
    for (const char* name : {"gpt_config.json", "config.json"})
      if (fs::exists(dir / name, ec)) {
        files.config = dir / name;
        break;
      }
    if (files.config.empty())
      fail(files.weights,
           "a .pth state_dict does not say its number of heads or whether W_query has a bias: "
           "pass --config FILE with the book's GPT_CONFIG as JSON ({\"vocab_size\": 50257, "
           "\"context_length\": 1024, \"emb_dim\": 768, \"n_heads\": 12, \"n_layers\": 12, "
           "\"drop_rate\": 0.1, \"qkv_bias\": false}), or put it beside the file as "
           "gpt_config.json");
  } else {
    if (!fs::exists(dir / "config.json", ec))
      fail(dir,
           "no config.json beside the weights (a Hugging Face GPT-2 folder has one; or pass "
           "--config FILE)");
    files.config = dir / "config.json";
  }
  files.tokenizer = tokenizer_folder(dir);
  return files;
}

namespace {

fs::path env_path(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? fs::path(v) : fs::path();
}

fs::path home() {
  const fs::path h = env_path("HOME");
  return h.empty() ? fs::path(".") : h;
}

bool has_weights(const fs::path& dir) {
  std::error_code ec;
  for (const char* name :
       {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "model.pth"})
    if (fs::exists(dir / name, ec)) return true;
  return false;
}

}  // namespace

std::vector<fs::path> model_search_folders() {
  fs::path hub = env_path("HF_HUB_CACHE");
  if (hub.empty() && !env_path("HF_HOME").empty()) hub = env_path("HF_HOME") / "hub";
  if (hub.empty() && !env_path("XDG_CACHE_HOME").empty())
    hub = env_path("XDG_CACHE_HOME") / "huggingface" / "hub";
  if (hub.empty()) hub = home() / ".cache" / "huggingface" / "hub";
  fs::path data = env_path("XDG_DATA_HOME");
  if (data.empty()) data = home() / ".local" / "share";
  return {hub, data / "attnscope" / "models"};
}

std::vector<FoundModel> find_models() {
  std::vector<FoundModel> found;
  const auto folders = model_search_folders();
  std::error_code ec;
  // The hub: models--<org>--<name>/snapshots/<revision>/ with config.json.
  for (const auto& repo : fs::directory_iterator(folders[0], ec)) {
    const std::string dir = repo.path().filename().string();
    if (!dir.starts_with("models--")) continue;
    std::string name = dir.substr(8);
    if (auto at = name.find("--"); at != std::string::npos) name.replace(at, 2, "/");
    std::error_code ec2;
    for (const auto& snap : fs::directory_iterator(repo.path() / "snapshots", ec2))
      if (fs::exists(snap.path() / "config.json", ec2) && has_weights(snap.path()))
        found.push_back({name, snap.path(), "huggingface-cache"});
  }
  for (const auto& e : fs::directory_iterator(folders[1], ec)) {
    const fs::path& p = e.path();
    const std::string ext = p.extension().string();
    std::error_code ec2;
    if ((fs::is_directory(p, ec2) && has_weights(p)) || ext == ".safetensors" || ext == ".pth")
      found.push_back({p.filename().string(), p, "attnscope"});
  }
  std::sort(found.begin(), found.end(), [](const FoundModel& a, const FoundModel& b) {
    return std::tie(a.name, a.path) < std::tie(b.name, b.path);
  });
  return found;
}

BookConfig parse_book_config(std::string_view json_text, std::string_view source) {
  const std::string where(source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw ParseError(where + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw ParseError(where + ": the book's GPT_CONFIG must be a JSON object");
  BookConfig b;
  Gpt2Config& c = b.config;
  auto whole = [&](const char* key, int& out) {
    if (!j.contains(key)) return;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 30))
      throw ParseError(where + ": \"" + key + "\" must be a positive whole number");
    out = v.get<int>();
  };
  static const std::set<std::string> known = {"vocab_size", "context_length", "emb_dim", "n_heads",
                                              "n_layers",   "drop_rate",      "qkv_bias"};
  for (const auto& [key, value] : j.items())
    if (!known.contains(key))
      throw ParseError(where + ": unknown key \"" + key + "\" (the book's GPT_CONFIG has " +
                       "vocab_size, context_length, emb_dim, n_heads, n_layers, drop_rate, "
                       "qkv_bias)");
  whole("vocab_size", c.vocab_size);
  whole("context_length", c.n_positions);
  whole("emb_dim", c.n_embd);
  whole("n_heads", c.n_head);
  whole("n_layers", c.n_layer);
  if (!j.contains("n_heads"))
    throw ParseError(where + ": \"n_heads\" is missing (the state_dict cannot say it)");
  if (j.contains("drop_rate") && !j["drop_rate"].is_number())
    throw ParseError(where + ": \"drop_rate\" must be a number (it is ignored: eval mode)");
  if (j.contains("qkv_bias")) {
    if (!j["qkv_bias"].is_boolean())
      throw ParseError(where + ": \"qkv_bias\" must be true or false");
    b.qkv_bias = j["qkv_bias"].get<bool>();
  }
  c.n_inner = 4 * c.n_embd;
  c.tie_word_embeddings = false;  // GPTModel has its own out_head
  if (c.n_embd % c.n_head != 0)
    throw ParseError(where + ": emb_dim " + std::to_string(c.n_embd) +
                     " is not divisible by n_heads " + std::to_string(c.n_head));
  return b;
}

// ---------------------------------------------------------------------------
// Reading weights.

namespace {

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
  // file name that are not UTF-8 become U+FFFD, as the token texts do.
  std::string name = decode_utf8_replace(full.filename().string());
  return std::make_shared<const Gpt2Model>(std::move(weights), std::move(name),
                                           book ? ModelFormat::Book : ModelFormat::HuggingFace,
                                           std::move(tokenizer));
}

double machine_fma_gflops(double seconds) { return gemm::measure_fma_gflops(seconds); }

WeightStream stream_weights(const Gpt2Model& model, int repeat) {
  const Gpt2Model::Weights& w = model.weights();
  std::vector<std::pair<const float*, Eigen::Index>> spans;  // (data, floats)
  auto add = [&](const detail::Linear& l) {
    if (gemm::available())
      spans.emplace_back(l.packed.data.data(), static_cast<Eigen::Index>(l.packed.data.size()));
    else
      spans.emplace_back(l.weight.data(), l.weight.size());
  };
  for (const detail::Block& b : w.blocks) {
    add(b.attn);
    add(b.proj);
    add(b.fc);
    add(b.fc_proj);
  }
  spans.emplace_back(w.head().data(), w.head().rows * w.head().cols);
  // 256 KiB pieces, shared out between the threads.
  constexpr Eigen::Index kPiece = 1 << 16;
  std::vector<std::pair<const float*, Eigen::Index>> pieces;
  WeightStream out;
  for (const auto& [data, n] : spans) {
    out.bytes += 4.0 * static_cast<double>(n);
    for (Eigen::Index i = 0; i < n; i += kPiece)
      pieces.emplace_back(data + i, std::min(kPiece, n - i));
  }
  const auto count = static_cast<int>(pieces.size());
  out.ms = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(repeat, 1); ++r) {
    float sum = 0.0f;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int i = 0; i < count; ++i)
      sum += Eigen::Map<const Eigen::ArrayXf>(pieces[static_cast<std::size_t>(i)].first,
                                              pieces[static_cast<std::size_t>(i)].second)
                 .sum();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    volatile float keep = sum;  // the reads are used
    (void)keep;
    out.ms = std::min(out.ms, ms);
  }
  return out;
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
