// weights.cpp: reading weight files, checking them against a run, and
// running with them.
//
// Sections
//   1. tensor names (canonical, state_dict, heads.<h>. prefixes)
//   2. readers: JSON, NPY, folders
//   3. parameters_from_weights: the checks
//   4. weights_json, run_with_explicit_parameters
#include "attnscope/io/weights.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "attnscope/base/stages.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"
#include "formats/json_matrix.hpp"

namespace attnscope::core {

namespace fs = std::filesystem;
using detail::json;

namespace {

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw ParseError(std::string(source) + ": " + what);
}

// ---------------------------------------------------------------------------
// 1. Names

constexpr const char* kCanonical[] = {stage_id::W_query, stage_id::W_key, stage_id::W_value,
                                      stage_id::b_query, stage_id::b_key, stage_id::b_value,
                                      stage_id::W_out,   stage_id::b_out};

const char* const kKnownNames =
    "W_query, W_key, W_value, b_query, b_key, b_value, W_out, b_out, or PyTorch's "
    "W_query.weight, W_query.bias, ..., out_proj.weight, out_proj.bias, each optionally "
    "prefixed heads.<h>. for MultiHeadAttentionWrapper";

// A name from a file, resolved.
struct ParsedName {
  bool ignored = false;   // a buffer such as "mask"
  std::string canonical;  // W_query ... b_out
  int head = -1;
  bool transposed = false;  // PyTorch (out, in) storage: transpose on load
};

std::optional<ParsedName> parse_name(std::string_view name) {
  ParsedName p;
  if (name.starts_with("heads.")) {
    std::string_view rest = name.substr(6);
    int h = 0;
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), h);
    if (ec != std::errc() || ptr == rest.data() || h < 0 || h >= kMaxHeads) return std::nullopt;
    rest.remove_prefix(static_cast<std::size_t>(ptr - rest.data()));
    if (!rest.starts_with(".")) return std::nullopt;
    name = rest.substr(1);
    p.head = h;
  }
  // stage-literals: off (the module's mask buffer)
  if (name == "mask") {
    // stage-literals: on
    p.ignored = true;
    return p;
  }
  for (const char* c : kCanonical)
    if (name == c) {
      p.canonical = c;
      return p;
    }
  struct Alias {
    std::string_view torch_name, canonical;
    bool transposed;
  };
  constexpr Alias kAliases[] = {
      {"W_query.weight", stage_id::W_query, true}, {"W_key.weight", stage_id::W_key, true},
      {"W_value.weight", stage_id::W_value, true}, {"W_query.bias", stage_id::b_query, false},
      {"W_key.bias", stage_id::b_key, false},      {"W_value.bias", stage_id::b_value, false},
      {"out_proj.weight", stage_id::W_out, true},  {"out_proj.bias", stage_id::b_out, false},
  };
  for (const auto& a : kAliases)
    if (name == a.torch_name) {
      p.canonical = std::string(a.canonical);
      p.transposed = a.transposed;
      return p;
    }
  return std::nullopt;
}

bool is_bias(std::string_view canonical) { return canonical.starts_with("b_"); }

std::string shape_text(Eigen::Index r, Eigen::Index c) {
  return std::to_string(r) + " × " + std::to_string(c);
}

void add_tensor(WeightSet& set, const ParsedName& n, RowMatrix value, std::string origin) {
  for (const auto& t : set.tensors)
    if (t.name == n.canonical && t.head == n.head)
      throw ParseError(origin + ": " +
                       (n.head >= 0 ? "head " + std::to_string(n.head) + "'s " : "") + n.canonical +
                       " is given twice (also as " + t.origin + ")");
  WeightTensor t;
  t.name = n.canonical;
  t.head = n.head;
  t.value = n.transposed ? RowMatrix(value.transpose()) : std::move(value);
  t.origin = std::move(origin);
  t.transposed = n.transposed;
  set.tensors.push_back(std::move(t));
}

// ---------------------------------------------------------------------------
// 2. Readers

// Reads the named matrices of one JSON object; `head` is set for the
// objects of a "heads" list.
void read_json_object(const json& obj, std::string_view source, int head, WeightSet& set) {
  for (const auto& [key, value] : obj.items()) {
    const std::string where = head >= 0 ? "heads[" + std::to_string(head) + "]." + key : key;
    if (key == "heads") {
      if (head >= 0) fail(source, where + ": heads cannot be nested");
      if (!value.is_array() || value.empty())
        fail(source,
             "heads must be a list of objects, one per head, got " + detail::json_type_name(value));
      if (value.size() > static_cast<std::size_t>(kMaxHeads))
        fail(source, "heads has " + std::to_string(value.size()) + " entries: at most " +
                         std::to_string(kMaxHeads) + " heads are supported");
      for (std::size_t h = 0; h < value.size(); ++h) {
        if (!value[h].is_object())
          fail(source, "heads[" + std::to_string(h) +
                           "] must be an object of named matrices, got " +
                           detail::json_type_name(value[h]));
        read_json_object(value[h], source, static_cast<int>(h), set);
      }
      continue;
    }
    if (key == "description") continue;
    auto name = parse_name(key);
    if (!name) fail(source, "unknown weight name '" + where + "' (known: " + kKnownNames + ")");
    if (name->ignored) continue;  // a registered buffer (the causal mask): not a parameter
    if (head >= 0) {
      if (name->head >= 0) fail(source, where + ": a head prefix inside \"heads\" is not allowed");
      name->head = head;
    }
    RowMatrix m =
        detail::json_matrix(value, source, where, is_bias(name->canonical), NonFinite::Reject);
    if (is_bias(name->canonical) && m.rows() != 1)
      fail(source, where + " is " + shape_text(m.rows(), m.cols()) +
                       ": a bias is one list of numbers (d_out)");
    add_tensor(set, *name, std::move(m), std::string(source) + ": " + where);
  }
}

WeightSet read_npy_tensor(const fs::path& path) {
  const std::string source = path.string();
  std::string stem = path.filename().string();
  if (stem.size() > 4 && stem.ends_with(".npy")) stem.resize(stem.size() - 4);
  const std::string bytes = read_import_file(path);  // a missing file says so first
  const auto name = parse_name(stem);
  if (!name || name->ignored)
    fail(source, "the file name does not say which tensor it holds: name it after one (" +
                     std::string(kKnownNames) + "), e.g. W_query.npy");
  RowMatrix m =
      parse_npy(bytes, source, is_bias(name->canonical) ? NpyRank::MatrixOrVector : NpyRank::Matrix,
                NonFinite::Reject);
  if (is_bias(name->canonical) && m.rows() != 1)
    fail(source, "is " + shape_text(m.rows(), m.cols()) + ": a bias is 1-D (d_out,)");
  WeightSet set;
  set.source = source;
  add_tensor(set, *name, std::move(m), source);
  return set;
}

}  // namespace

const WeightTensor* WeightSet::find(std::string_view name, int head) const {
  for (const auto& t : tensors)
    if (t.name == name && t.head == head) return &t;
  return nullptr;
}

WeightSet parse_weights_json(std::string_view text, std::string_view source) {
  const json doc = detail::parse_json_document(text, source);
  if (!doc.is_object())
    fail(source,
         "must be a JSON object of named matrices such as {\"W_query\": [[...], ...]}, got " +
             detail::json_type_name(doc));
  WeightSet set;
  set.source = std::string(source);
  read_json_object(doc, source, -1, set);
  if (set.tensors.empty())
    fail(source, "holds no weights (expected " + std::string(kKnownNames) + ")");
  return set;
}

WeightSet read_weights(const fs::path& path) {
  std::error_code ec;
  const std::string source = path.string();
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".npy") files.push_back(entry.path());
      if (files.size() > 8 * static_cast<std::size_t>(kMaxHeads) + 8)
        fail(source, "holds too many .npy files to be one module's weights");
    }
    if (ec) fail(source, "cannot list the folder: " + ec.message());
    if (files.empty())
      fail(source,
           "is a folder without .npy files: put one file per tensor in it, named "
           "W_query.npy, W_key.npy, ... (docs/file-formats.md)");
    std::sort(files.begin(), files.end());
    WeightSet set;
    set.source = source;
    for (const auto& f : files) merge_weights(set, read_npy_tensor(f));
    set.source = source;
    return set;
  }
  std::string ext = path.extension().string();
  if (ext == ".npy") return read_npy_tensor(path);
  const std::string bytes = read_import_file(path);
  if (bytes.starts_with("\x93NUMPY"))
    fail(source, "is a .npy file: name it after the tensor it holds, e.g. W_query.npy");
  return parse_weights_json(bytes, source);
}

void merge_weights(WeightSet& into, const WeightSet& more) {
  for (const auto& t : more.tensors) {
    ParsedName n;
    n.canonical = t.name;
    n.head = t.head;
    add_tensor(into, n, t.value, t.origin);
    into.tensors.back().transposed = t.transposed;
  }
  if (into.source.empty())
    into.source = more.source;
  else if (!more.source.empty() && into.source != more.source)
    into.source += ", " + more.source;
}

// ---------------------------------------------------------------------------
// 3. Checks

namespace {

// Takes the tensor (name, head) from the set, checking its shape.
class Checker {
 public:
  Checker(const WeightSet& w, const Config& c, int d_in) : w_(w), config_(c), d_in_(d_in) {
    used_.assign(w.tensors.size(), false);
  }

  // The tensor, which must exist and be (rows, cols) as used.
  RowMatrix take(const char* name, int head, Eigen::Index rows, Eigen::Index cols,
                 const char* rows_meaning, const char* cols_meaning) {
    const WeightTensor* t = w_.find(name, head);
    if (!t) {
      std::string which = head >= 0 ? "head " + std::to_string(head) + "'s " + name : name;
      std::string hint;
      if (is_bias(name))
        hint =
            " (qkv_bias is on, so the projections need biases; turn it off with qkv_bias "
            "false, or add W_query.bias etc.)";
      if (std::string_view(name) == stage_id::b_out)
        hint = " (MultiHeadAttention's out_proj always has a bias: out_proj.bias)";
      if (head >= 0)
        hint = " (" + variant_name() + " has " + std::to_string(config_.num_heads) +
               " heads: give \"heads\": [{...}, ...] with one object per head, or names "
               "prefixed heads.<h>.)";
      throw ParseError(w_.source + ": " + which + " is missing" + hint);
    }
    used_[static_cast<std::size_t>(t - w_.tensors.data())] = true;
    const RowMatrix& m = t->value;
    if (m.rows() == rows && m.cols() == cols) return m;
    // Say the shape in the file's own orientation, and what to change.
    const std::string file_shape =
        t->transposed ? shape_text(m.cols(), m.rows()) : shape_text(m.rows(), m.cols());
    std::string msg = t->origin + " is " + file_shape;
    if (t->transposed)
      msg += " (PyTorch's out × in; as used " + shape_text(m.rows(), m.cols()) + ")";
    msg += " but this run needs " + std::string(rows_meaning) + " x " + cols_meaning + " = " +
           shape_text(rows, cols) + " as used";
    if (is_bias(name)) {
      msg += ": the bias has " + std::to_string(m.cols()) + " numbers, d_out is " +
             std::to_string(cols);
    } else if (m.rows() == cols && m.cols() == rows && rows != cols) {
      msg += t->transposed
                 ? ": it looks transposed (a name ending in .weight is PyTorch's d_out × d_in and "
                   "is transposed on load; use the plain name for d_in × d_out)"
                 : ": it looks transposed (the plain name is x · W, d_in × d_out; name it " +
                       std::string(name == std::string_view(stage_id::W_out) ? "out_proj" : name) +
                       ".weight to have PyTorch's d_out × d_in transposed on load)";
    } else if (m.rows() != rows && std::string_view(rows_meaning) == "d_in") {
      msg += ": it has d_in " + std::to_string(m.rows()) + " but the embeddings have d_in " +
             std::to_string(d_in_);
    } else if (m.cols() != cols) {
      msg += ": set d_out to " + std::to_string(m.cols()) + " to use it";
    }
    throw ParseError(msg);
  }

  // Throws for the first tensor the variant does not use.
  void check_all_used() const {
    for (std::size_t k = 0; k < used_.size(); ++k) {
      if (used_[k]) continue;
      const WeightTensor& t = w_.tensors[k];
      std::string why;
      if (config_.variant == Variant::Simple)
        why = "simplified self-attention has no trainable weights";
      else if (t.head >= 0 && config_.variant != Variant::MultiheadWrapper)
        why = "only multihead_wrapper has per-head weights";
      else if (t.head >= config_.num_heads)
        why = "the run has " + std::to_string(config_.num_heads) + " heads (num_heads)";
      else if (t.head < 0 && config_.variant == Variant::MultiheadWrapper)
        why =
            "multihead_wrapper's weights belong to its heads (\"heads\": [{...}, ...] or "
            "heads.<h>. names)";
      else if (is_bias(t.name) && t.name != stage_id::b_out &&
               config_.variant == Variant::SelfAttentionV1)
        why = "SelfAttention_v1 has no biases";
      else if (is_bias(t.name) && t.name != stage_id::b_out)
        why = "qkv_bias is false; turn it on (qkv_bias true, --qkv-bias) to use biases";
      else
        why = variant_name() + " has no " + t.name;
      throw ParseError(t.origin + " is not used by this run: " + why);
    }
  }

  std::string variant_name() const { return std::string(variant_id(config_.variant)); }

 private:
  const WeightSet& w_;
  const Config& config_;
  int d_in_;
  std::vector<bool> used_;
};

}  // namespace

namespace {

// "" when explicit weights can describe the run's module, else why not: the
// classes after chapter 3 (and RoPE) have parameters of other shapes, which
// only their seed draws.
std::string explicit_weights_refusal(const Config& config) {
  if (!is_modern(config.variant) && !config.rope) return "";
  return "explicit weights are for the chapter-3 classes without RoPE: " +
         std::string(variant_id(config.variant)) + (config.rope ? " with RoPE" : "") +
         " draws its parameters from the seed; drop the weights or choose another variant";
}

}  // namespace

Parameters parameters_from_weights(const WeightSet& weights, const Config& config, int d_in) {
  if (std::string refusal = explicit_weights_refusal(config); !refusal.empty())
    throw ParseError(refusal);
  Checker check(weights, config, d_in);
  Parameters p;
  const Eigen::Index in = d_in, out = config.d_out;
  const bool bias = config.qkv_bias && config.variant != Variant::SelfAttentionV1;
  auto qkv = [&](int head) {
    QkvProjections q;
    q.query.weight = check.take(stage_id::W_query, head, in, out, "d_in", "d_out");
    q.key.weight = check.take(stage_id::W_key, head, in, out, "d_in", "d_out");
    q.value.weight = check.take(stage_id::W_value, head, in, out, "d_in", "d_out");
    if (bias) {
      q.query.bias = check.take(stage_id::b_query, head, 1, out, "1", "d_out");
      q.key.bias = check.take(stage_id::b_key, head, 1, out, "1", "d_out");
      q.value.bias = check.take(stage_id::b_value, head, 1, out, "1", "d_out");
    }
    return q;
  };
  switch (config.variant) {
    case Variant::Simple:
      break;
    case Variant::SelfAttentionV1:
    case Variant::SelfAttentionV2:
    case Variant::Causal:
      p.qkv.push_back(qkv(-1));
      break;
    case Variant::MultiheadWrapper:
      for (int h = 0; h < config.num_heads; ++h) p.qkv.push_back(qkv(h));
      break;
    case Variant::Multihead:
      p.qkv.push_back(qkv(-1));
      p.out.weight = check.take(stage_id::W_out, -1, out, out, "d_out", "d_out");
      p.out.bias = check.take(stage_id::b_out, -1, 1, out, "1", "d_out");
      break;
    case Variant::GroupedQuery:  // refused above
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross:
      break;
  }
  check.check_all_used();
  return p;
}

// ---------------------------------------------------------------------------
// 4. Writing and running

WeightSet weights_of(const Parameters& params, const Config& config) {
  WeightSet set;
  set.source = "the weights";
  auto add = [&](const char* name, int head, const RowMatrix& m) {
    if (m.size() == 0) return;
    WeightTensor t;
    t.name = name;
    t.head = head;
    t.value = m;
    t.origin = head >= 0 ? "the weights: heads." + std::to_string(head) + "." + name
                         : std::string("the weights: ") + name;
    set.tensors.push_back(std::move(t));
  };
  const bool per_head = config.variant == Variant::MultiheadWrapper;
  for (std::size_t h = 0; h < params.qkv.size(); ++h) {
    const int head = per_head ? static_cast<int>(h) : -1;
    const QkvProjections& q = params.qkv[h];
    add(stage_id::W_query, head, q.query.weight);
    add(stage_id::W_key, head, q.key.weight);
    add(stage_id::W_value, head, q.value.weight);
    add(stage_id::b_query, head, q.query.bias);
    add(stage_id::b_key, head, q.key.bias);
    add(stage_id::b_value, head, q.value.bias);
  }
  add(stage_id::W_out, -1, params.out.weight);
  add(stage_id::b_out, -1, params.out.bias);
  return set;
}

std::string weights_json(const Parameters& params, const Config& config) {
  auto projections = [](std::string& out, const QkvProjections& q, const char* indent) {
    const std::pair<const char*, const Projection*> parts[] = {
        {stage_id::W_query, &q.query}, {stage_id::W_key, &q.key}, {stage_id::W_value, &q.value}};
    bool first = true;
    for (const auto& [name, proj] : parts) {
      out += first ? "" : ",\n";
      out += indent;
      out += std::string("\"") + name + "\": ";
      detail::append_json_rows(out, proj->weight);
      first = false;
    }
    if (q.query.bias.size() > 0) {
      const std::pair<const char*, const Projection*> biases[] = {
          {stage_id::b_query, &q.query}, {stage_id::b_key, &q.key}, {stage_id::b_value, &q.value}};
      for (const auto& [name, proj] : biases) {
        out += ",\n";
        out += indent;
        out += std::string("\"") + name + "\": ";
        detail::append_json_vector(out, proj->bias);
      }
    }
  };
  std::string out = "{";
  if (config.variant == Variant::MultiheadWrapper) {
    out += "\"heads\": [";
    for (std::size_t h = 0; h < params.qkv.size(); ++h) {
      out += h ? ",\n  {\n" : "\n  {\n";
      projections(out, params.qkv[h], "   ");
      out += "}";
    }
    out += "]";
  } else if (!params.qkv.empty()) {
    out += "\n";
    projections(out, params.qkv.front(), " ");
    if (config.variant == Variant::Multihead) {
      out += ",\n \"W_out\": ";
      detail::append_json_rows(out, params.out.weight);
      out += ",\n \"b_out\": ";
      detail::append_json_vector(out, params.out.bias);
    }
  }
  out += "}";
  return out;
}

std::string validate_parameters(const Parameters& params, const Config& config, int d_in) {
  if (std::string refusal = explicit_weights_refusal(config); !refusal.empty()) return refusal;
  auto shape = [](const RowMatrix& m) {
    return std::to_string(m.rows()) + " × " + std::to_string(m.cols());
  };
  const std::size_t sets = config.variant == Variant::Simple ? 0
                           : config.variant == Variant::MultiheadWrapper
                               ? static_cast<std::size_t>(config.num_heads)
                               : 1;
  if (params.qkv.size() != sets)
    return "the explicit weights have " + std::to_string(params.qkv.size()) +
           " query/key/value sets but " + std::string(variant_book_name(config.variant)) +
           " needs " + std::to_string(sets) + ": reset to the seeded weights";
  const bool bias = config.qkv_bias && config.variant != Variant::SelfAttentionV1;
  const char* names[] = {stage_id::W_query, stage_id::W_key, stage_id::W_value};
  for (std::size_t h = 0; h < params.qkv.size(); ++h) {
    const Projection* ps[] = {&params.qkv[h].query, &params.qkv[h].key, &params.qkv[h].value};
    for (int k = 0; k < 3; ++k) {
      const Projection& p = *ps[k];
      if (p.weight.rows() != d_in || p.weight.cols() != config.d_out)
        return std::string(names[k]) + " is " + shape(p.weight) + " but d_in × d_out is " +
               std::to_string(d_in) + " × " + std::to_string(config.d_out) +
               ": reset to the seeded weights";
      if (bias != (p.bias.size() > 0) || (bias && p.bias.cols() != config.d_out))
        return std::string(names[k]) +
               (bias ? " needs a bias of 1 × " + std::to_string(config.d_out)
                     : " has a bias but qkv_bias is off") +
               ": reset to the seeded weights";
    }
  }
  if (config.variant == Variant::Multihead &&
      (params.out.weight.rows() != config.d_out || params.out.weight.cols() != config.d_out ||
       params.out.bias.rows() != 1 || params.out.bias.cols() != config.d_out))
    return "W_out/b_out must be " + std::to_string(config.d_out) + " × " +
           std::to_string(config.d_out) + " and 1 × " + std::to_string(config.d_out) +
           ": reset to the seeded weights";
  return "";
}

Trace run_with_explicit_parameters(const Config& config, const Inputs& inputs,
                                   const Parameters& params, EnginePath path) {
  // torch.manual_seed(seed); module = Class(...) draws the parameters; the
  // notebook then overwrites them (load_state_dict). Drawing them here and
  // throwing them away leaves the generator where PyTorch's is when the
  // forward pass starts, so dropout draws the same mask.
  TorchGenerator gen(config.seed);
  (void)init_parameters(config, static_cast<int>(inputs.embeddings.cols()), gen);
  Trace trace = run_with_parameters(config, inputs, params, gen, path);
  trace.explicit_weights = true;
  return trace;
}

}  // namespace attnscope::core
