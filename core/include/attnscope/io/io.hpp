// io.hpp: the boundary. Parses config JSON (files, stdin, presets) into a
// Config + Inputs, and writes a Trace as JSON. Errors are ParseError with a
// message a person can act on.
#pragma once

#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/errors.hpp"
#include "attnscope/base/trace.hpp"

namespace attnscope::core {

// A run description: what a config file says, before defaults are applied.
// Fields left unset keep the defaults of Config / the preset.
struct RunSpec {
  std::optional<std::string> preset;
  std::optional<std::vector<std::string>> tokens;
  std::optional<RowMatrix> embeddings;
  std::optional<Variant> variant;
  std::optional<int> d_out;
  std::optional<int> num_heads;
  std::optional<double> dropout;
  std::optional<std::uint64_t> seed;
  std::optional<bool> qkv_bias;
  std::optional<bool> training;
  // After chapter 3 (Config's fields of the same names).
  std::optional<int> num_kv_groups;
  std::optional<int> window;
  std::optional<int> latent_dim;
  std::optional<bool> rope;
  std::optional<double> rope_theta;
  // Cross-attention's second sequence: its token names and rows.
  std::optional<std::vector<std::string>> memory_tokens;
  std::optional<RowMatrix> memory_embeddings;
};

// Parses a config document (a JSON object). `source` names it in errors.
RunSpec parse_run_spec(std::string_view json_text, std::string_view source);
// A --seed value: a whole number 0..2^64-1 written in decimal ("-1" or
// "1e3" are refused, not wrapped or rounded); throws ParseError naming `flag`.
std::uint64_t parse_seed(std::string_view text, std::string_view flag = "--seed");
// Overlays every field set in `top` onto `base`.
RunSpec merge(RunSpec base, const RunSpec& top);
// Sets every config field `spec` gives (variant, d_out, ...) on `config`,
// leaving the others as they are; no validation.
void apply_config_fields(const RunSpec& spec, Config& config);
// Applies defaults and the preset, checks limits; throws ParseError.
void resolve(const RunSpec& spec, Config& config, Inputs& inputs);

// The names of the built-in presets ("book", "shiny").
std::vector<std::string> preset_names();
// The preset's tokens and embeddings; nullopt when there is no such preset.
std::optional<Inputs> find_preset(std::string_view name);

// Random inputs have a seed of their own. Drawn under the weights' seed,
// torch.rand(T, D) repeats the uniforms the module's constructor turns into
// W_query (rescaled to +-1/sqrt(d_in)), and Q, K and V show stripes that
// look learned. The default input seed is not Config's default weights seed (123).
inline constexpr std::uint64_t kDefaultInputSeed = 42;

// torch.manual_seed(input_seed); torch.rand(tokens, dims), bit for bit, as
// embeddings (tokens, dims) in [0, 1), with tokens named "t0" .. "t<T-1>".
// Throws ParseError unless 1 <= tokens <= kMaxTokens and 1 <= dims <= kMaxDim.
Inputs random_inputs(int tokens, int dims, std::uint64_t input_seed);
// A --random value "T,D" (e.g. "1024,768") -> {T, D}; throws ParseError
// naming `flag` and the limits when it is not two whole numbers in range.
std::pair<int, int> parse_random_shape(std::string_view text, std::string_view flag = "--random");

// Writes the trace as JSON (docs/trace-format.md) to `out`.
void write_trace_json(const Trace& trace, std::ostream& out);
// Writes a person-readable listing of every stage, torch-style (4 decimals;
// values of 1e6 or more in scientific form, 1.0000e+30).
void write_trace_text(const Trace& trace, std::ostream& out);

// v as printf's "%.*f" with `decimals` places, except that a value that
// rounds to zero at that precision prints without a minus sign ("0.00" for
// -0.001 or -0.0, never "-0.00"): text for people, not an exact export.
std::string fixed_text(double v, int decimals);

}  // namespace attnscope::core
