// run_spec.cpp: config parsing, presets and random inputs (io.hpp; the
// trace writers are in trace_writers.cpp).
//
// Sections
//   1. JSON field readers (each throws ParseError naming the field)
//   2. parse_run_spec / merge / resolve
//   3. presets (embedded from assets/presets at build time)
//   4. seeds and random inputs
#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attnscope/base/rng.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "formats/json_matrix.hpp"
#include "io/presets_data.hpp"

namespace attnscope::core {

using detail::json_type_name;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------
// 1. Field readers

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw ParseError(std::string(source) + ": " + what);
}

// A whole number in [lo, hi]; integral floats such as 2.0 are accepted.
long long read_integer(const json& v, std::string_view source, const char* field, long long lo,
                       long long hi) {
  long long n = 0;
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_unsigned() &&
        v.get<unsigned long long>() >
            static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
      fail(source, std::string(field) + " (" + v.dump() + ") is too large");
    n = v.get<long long>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      fail(source, std::string(field) + " must be a whole number, got " + v.dump());
    if (d < -9.0e18 || d > 9.0e18)
      fail(source, std::string(field) + " (" + v.dump() + ") is too large");
    n = static_cast<long long>(d);
  } else {
    fail(source, std::string(field) + " must be a whole number, got " + json_type_name(v));
  }
  if (n < lo || n > hi)
    fail(source, std::string(field) + " (" + std::to_string(n) + ") must be between " +
                     std::to_string(lo) + " and " + std::to_string(hi));
  return n;
}

std::uint64_t read_seed(const json& v, std::string_view source) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer())  // signed and so negative here
    fail(source, "seed (" + v.dump() + ") must be a whole number from 0 to 18446744073709551615");
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= 0 && d < 1.8446744073709552e19)
      return static_cast<std::uint64_t>(d);
  }
  fail(source, "seed must be a whole number from 0 to 18446744073709551615, got " +
                   (v.is_number() ? v.dump() : json_type_name(v)));
}

double read_number(const json& v, std::string_view source, const std::string& field) {
  if (!v.is_number()) fail(source, field + " must be a number, got " + json_type_name(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(source, field + " must be a finite number");
  return d;
}

bool read_bool(const json& v, std::string_view source, const char* field) {
  if (!v.is_boolean())
    fail(source, std::string(field) + " must be true or false, got " + json_type_name(v));
  return v.get<bool>();
}

std::vector<std::string> read_tokens(const json& v, std::string_view source) {
  if (!v.is_array()) fail(source, "tokens must be a list of strings, got " + json_type_name(v));
  if (v.size() > static_cast<std::size_t>(kMaxTokens))
    fail(source, "too many tokens (" + std::to_string(v.size()) + "): at most " +
                     std::to_string(kMaxTokens) + " are supported");
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      fail(source,
           "tokens[" + std::to_string(i) + "] must be a string, got " + json_type_name(v[i]));
    tokens.push_back(v[i].get<std::string>());
  }
  return tokens;
}

RowMatrix read_embeddings(const json& v, std::string_view source) {
  if (!v.is_array())
    fail(source, "embeddings must be a list of rows (one list of numbers per token), got " +
                     json_type_name(v));
  if (v.empty()) fail(source, "embeddings is empty: give at least one token's row of numbers");
  if (v.size() > static_cast<std::size_t>(kMaxTokens))
    fail(source, "too many tokens (" + std::to_string(v.size()) + " rows of embeddings): at most " +
                     std::to_string(kMaxTokens) + " are supported");
  const auto rows = v.size();
  std::size_t cols = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const json& row = v[r];
    if (!row.is_array())
      fail(source, "embeddings[" + std::to_string(r) + "] must be a list of numbers, got " +
                       json_type_name(row));
    if (r == 0) {
      cols = row.size();
      if (cols == 0) fail(source, "embeddings[0] is empty: each token needs at least one number");
      if (cols > static_cast<std::size_t>(kMaxDim))
        fail(source, "d_in (" + std::to_string(cols) + ") is too large: at most " +
                         std::to_string(kMaxDim) + " is supported");
    } else if (row.size() != cols) {
      auto count = [](std::size_t n) {
        return std::to_string(n) + (n == 1 ? " number" : " numbers");
      };
      fail(source, "embeddings are ragged: row " + std::to_string(r) + " has " + count(row.size()) +
                       " but row 0 has " + count(cols) + "; every row needs the same d_in");
    }
  }
  RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const std::string where = "embeddings[" + std::to_string(r) + "][" + std::to_string(c) + "]";
      const double d = read_number(v[r][c], source, where);
      if (std::fabs(d) > static_cast<double>(FLT_MAX))
        fail(source, where + " (" + v[r][c].dump() + ") is too large for a 32-bit float (max " +
                         "about 3.4e38)");
      m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = static_cast<float>(d);
    }
  return m;
}

// The fields of the options after chapter 3 and cross-attention's second
// sequence; false when `key` is none of them.
bool read_modern_field(RunSpec& spec, const std::string& key, const json& value,
                       std::string_view source) {
  if (key == "num_kv_groups") {
    spec.num_kv_groups =
        static_cast<int>(read_integer(value, source, "num_kv_groups", 1, kMaxHeads));
  } else if (key == "window") {
    spec.window = static_cast<int>(read_integer(value, source, "window", 1, kMaxTokens));
  } else if (key == "latent_dim") {
    spec.latent_dim = static_cast<int>(read_integer(value, source, "latent_dim", 1, kMaxDim));
  } else if (key == "rope") {
    spec.rope = read_bool(value, source, "rope");
  } else if (key == "rope_theta") {
    const double theta = read_number(value, source, "rope_theta");
    if (theta <= 0.0)
      fail(source, "rope_theta (" + value.dump() + ") must be a positive number, e.g. 10000");
    spec.rope_theta = theta;
  } else if (key == "memory_tokens") {
    try {
      spec.memory_tokens = read_tokens(value, source);
    } catch (const ParseError& e) {  // say which list
      std::string what = e.what();
      const auto at = what.find("tokens");
      if (at != std::string::npos) what.replace(at, 6, "memory_tokens");
      throw ParseError(what);
    }
  } else if (key == "memory_embeddings") {
    try {
      spec.memory_embeddings = read_embeddings(value, source);
    } catch (const ParseError& e) {
      std::string what = e.what();
      const auto at = what.find("embeddings");  // not a stage id
      if (at != std::string::npos) what.replace(at, 10, "memory_embeddings");
      throw ParseError(what);
    }
  } else {
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// 3. Presets

std::optional<RunSpec> preset_spec(std::string_view name) {
  for (std::size_t i = 0; i < kEmbeddedPresetCount; ++i)
    if (name == kEmbeddedPresets[i].name)
      return parse_run_spec(kEmbeddedPresets[i].json,
                            std::string("preset '") + kEmbeddedPresets[i].name + "'");
  return std::nullopt;
}

std::string known_presets() {
  std::string s;
  for (const auto& n : preset_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// 2. Run specs

RunSpec parse_run_spec(std::string_view json_text, std::string_view source) {
  if (json_text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    fail(source, "is empty: expected a JSON object such as {\"embeddings\": [[0.1, 0.2]]}");
  const json doc = detail::parse_json_document(json_text, source);
  if (!doc.is_object()) fail(source, "must be a JSON object ({...}), got " + json_type_name(doc));

  RunSpec spec;
  for (const auto& [key, value] : doc.items()) {
    if (key == "preset") {
      if (!value.is_string()) fail(source, "preset must be a string, got " + json_type_name(value));
      spec.preset = value.get<std::string>();
    } else if (key == "description") {
      if (!value.is_string()) fail(source, "description must be a string");
    } else if (key == "tokens") {
      spec.tokens = read_tokens(value, source);
    } else if (key == "embeddings") {  // not a stage id
      spec.embeddings = read_embeddings(value, source);
    } else if (key == "variant") {
      if (!value.is_string())
        fail(source, "variant must be a string, got " + json_type_name(value));
      const auto v = parse_variant(value.get<std::string>());
      if (!v) {
        std::string known;
        for (auto k : kAllVariants)
          known += (known.empty() ? "" : ", ") + std::string(variant_id(k));
        fail(source, "unknown variant '" + value.get<std::string>() + "' (known: " + known + ")");
      }
      spec.variant = *v;
    } else if (key == "d_out") {
      spec.d_out = static_cast<int>(read_integer(value, source, "d_out", 1, kMaxDim));
    } else if (key == "num_heads") {
      spec.num_heads = static_cast<int>(read_integer(value, source, "num_heads", 1, kMaxHeads));
    } else if (key == "dropout") {
      const double p = read_number(value, source, "dropout");
      if (p < 0.0 || p > 1.0)
        fail(source, "dropout (" + value.dump() + ") must be between 0 and 1");
      spec.dropout = p;
    } else if (key == "seed") {
      spec.seed = read_seed(value, source);
    } else if (key == "qkv_bias") {
      spec.qkv_bias = read_bool(value, source, "qkv_bias");
    } else if (key == "training") {
      spec.training = read_bool(value, source, "training");
    } else if (!read_modern_field(spec, key, value, source)) {
      fail(source, "unknown field '" + key +
                       "' (known: preset, tokens, embeddings, variant, d_out, num_heads, dropout, "
                       "seed, qkv_bias, training, num_kv_groups, window, latent_dim, rope, "
                       "rope_theta, memory_tokens, memory_embeddings, description)");
    }
  }
  return spec;
}

RunSpec merge(RunSpec base, const RunSpec& top) {
  auto over = [](auto& dst, const auto& src) {
    if (src) dst = src;
  };
  over(base.preset, top.preset);
  over(base.tokens, top.tokens);
  over(base.embeddings, top.embeddings);
  over(base.variant, top.variant);
  over(base.d_out, top.d_out);
  over(base.num_heads, top.num_heads);
  over(base.dropout, top.dropout);
  over(base.seed, top.seed);
  over(base.qkv_bias, top.qkv_bias);
  over(base.training, top.training);
  over(base.num_kv_groups, top.num_kv_groups);
  over(base.window, top.window);
  over(base.latent_dim, top.latent_dim);
  over(base.rope, top.rope);
  over(base.rope_theta, top.rope_theta);
  over(base.memory_tokens, top.memory_tokens);
  over(base.memory_embeddings, top.memory_embeddings);
  return base;
}

void apply_config_fields(const RunSpec& spec, Config& config) {
  if (spec.variant) config.variant = *spec.variant;
  if (spec.d_out) config.d_out = *spec.d_out;
  if (spec.num_heads) config.num_heads = *spec.num_heads;
  if (spec.dropout) config.dropout = *spec.dropout;
  if (spec.seed) config.seed = *spec.seed;
  if (spec.qkv_bias) config.qkv_bias = *spec.qkv_bias;
  if (spec.training) config.training = *spec.training;
  if (spec.num_kv_groups) config.num_kv_groups = *spec.num_kv_groups;
  if (spec.window) config.window = *spec.window;
  if (spec.latent_dim) config.latent_dim = *spec.latent_dim;
  if (spec.rope) config.rope = *spec.rope;
  if (spec.rope_theta) config.rope_theta = *spec.rope_theta;
}

namespace {

// Cross-attention's second sequence: the spec's, else its preset's; token
// names default to m0 .. m<S-1>.
void resolve_memory(const RunSpec& spec, const std::optional<RunSpec>& preset, Inputs& inputs) {
  if (spec.memory_embeddings)
    inputs.memory = *spec.memory_embeddings;
  else if (preset && preset->memory_embeddings)
    inputs.memory = *preset->memory_embeddings;
  const auto S = static_cast<std::size_t>(inputs.memory.rows());
  if (spec.memory_tokens) {
    inputs.memory_tokens = *spec.memory_tokens;
  } else if (preset && preset->memory_tokens && preset->memory_tokens->size() == S &&
             !spec.memory_embeddings) {
    inputs.memory_tokens = *preset->memory_tokens;
  } else {
    for (std::size_t s = 0; s < S; ++s) inputs.memory_tokens.push_back("m" + std::to_string(s));
  }
  if (!spec.memory_embeddings && spec.memory_tokens && !preset)
    throw ParseError("memory_tokens names the rows of memory_embeddings: give those too");
}

}  // namespace

void resolve(const RunSpec& spec, Config& config, Inputs& inputs) {
  config = Config{};
  apply_config_fields(spec, config);

  std::optional<RunSpec> preset;
  if (spec.preset) {
    preset = preset_spec(*spec.preset);
    if (!preset)
      throw ParseError("unknown preset '" + *spec.preset + "' (known: " + known_presets() + ")");
  }

  inputs = Inputs{};
  if (spec.embeddings) {
    inputs.embeddings = *spec.embeddings;
  } else if (preset) {
    inputs.embeddings = *preset->embeddings;
  } else {
    throw ParseError(
        "no embeddings given: add \"embeddings\": [[...], ...] to the config, or name a preset "
        "(known: " +
        known_presets() + ")");
  }
  const auto T = static_cast<std::size_t>(inputs.embeddings.rows());
  if (spec.tokens) {
    inputs.tokens = *spec.tokens;
  } else if (preset && preset->tokens && preset->tokens->size() == T) {
    inputs.tokens = *preset->tokens;
  } else {
    for (std::size_t t = 0; t < T; ++t) {
      std::string name = std::to_string(t);
      name.insert(name.begin(), 't');
      inputs.tokens.push_back(std::move(name));
    }
  }
  resolve_memory(spec, preset, inputs);
  if (const auto problem = validate(config, inputs); !problem.empty()) throw ParseError(problem);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kEmbeddedPresetCount; ++i)
    names.emplace_back(kEmbeddedPresets[i].name);
  return names;
}

std::optional<Inputs> find_preset(std::string_view name) {
  const auto spec = preset_spec(name);
  if (!spec) return std::nullopt;
  Inputs inputs;
  inputs.embeddings = *spec->embeddings;
  inputs.tokens = *spec->tokens;
  if (spec->memory_embeddings) inputs.memory = *spec->memory_embeddings;
  if (spec->memory_tokens) inputs.memory_tokens = *spec->memory_tokens;
  return inputs;
}

// ---------------------------------------------------------------------------
// 4. Seeds and random inputs

std::uint64_t parse_seed(std::string_view text, std::string_view flag) {
  std::uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw ParseError(std::string(flag) + " (" + std::string(text) +
                     ") must be a whole number from 0 to 18446744073709551615");
  return seed;
}

Inputs random_inputs(int tokens, int dims, std::uint64_t input_seed) {
  if (tokens < 1 || tokens > kMaxTokens || dims < 1 || dims > kMaxDim)
    throw ParseError("random inputs of " + std::to_string(tokens) + " tokens × " +
                     std::to_string(dims) + " dims: tokens must be 1 to " +
                     std::to_string(kMaxTokens) + " and dims 1 to " + std::to_string(kMaxDim));
  Inputs in;
  in.embeddings.resize(tokens, dims);  // (T, D) torch.rand: uniform [0, 1)
  TorchGenerator gen(input_seed);
  gen.fill_uniform(in.embeddings, 0.0f, 1.0f);
  in.tokens.reserve(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; ++t) in.tokens.push_back("t" + std::to_string(t));
  return in;
}

std::pair<int, int> parse_random_shape(std::string_view text, std::string_view flag) {
  const auto whole = [](std::string_view s, int& out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  const auto comma = text.find(',');
  int T = 0, D = 0;
  if (comma == std::string_view::npos || !whole(text.substr(0, comma), T) ||
      !whole(text.substr(comma + 1), D) || T < 1 || T > kMaxTokens || D < 1 || D > kMaxDim)
    throw ParseError(std::string(flag) + " '" + std::string(text) +
                     "' must be T,D with T from 1 to " + std::to_string(kMaxTokens) +
                     " and D from 1 to " + std::to_string(kMaxDim) + ", e.g. 1024,768");
  return {T, D};
}

}  // namespace attnscope::core
