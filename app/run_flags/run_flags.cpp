// run_flags.cpp: the run flags' declarations and their reading into a RunSpec.
#include "run_flags.hpp"

#include <vector>

#include "figure/scale.hpp"

namespace attnscope::run_flags {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string variant_names() {
  std::vector<std::string> names;
  for (core::Variant v : core::kAllVariants) names.emplace_back(core::variant_id(v));
  return joined(names);
}

bool RunFlags::any() const {
  return config || preset || variant || d_out || num_heads || dropout || seed || qkv_bias || eval ||
         random || input_seed;
}

std::optional<std::uint64_t> RunFlags::parsed_seed() const {
  if (!seed) return std::nullopt;
  return core::parse_seed(*seed);
}

std::optional<std::uint64_t> RunFlags::parsed_input_seed() const {
  if (!input_seed) return std::nullopt;
  return core::parse_seed(*input_seed, "--input-seed");
}

std::optional<std::string> RunFlags::config_path() const {
  if (config && config->empty())
    throw core::ParseError("--config needs a file path (or - for standard input)");
  return config;
}

core::RunSpec RunFlags::spec() const {
  core::RunSpec s;
  s.preset = preset;
  if (variant) {
    s.variant = core::parse_variant(*variant);
    if (!s.variant)
      throw core::ParseError("unknown variant '" + *variant + "' (known: " + variant_names() + ")");
  }
  s.d_out = d_out;
  s.num_heads = num_heads;
  s.dropout = dropout;
  s.seed = parsed_seed();
  if (qkv_bias) s.qkv_bias = true;
  if (eval) s.training = false;
  return s;
}

RunFlagOptions add_run_flags(CLI::App& cmd, RunFlags& f) {
  RunFlagOptions made;
  // An empty value stays a given one ("" for std::optional<std::string>),
  // for config_path() and core::parse_seed to refuse.
  made.config = cmd.add_option("--config", f.config,
                               "JSON config file (- reads standard input); see "
                               "docs/trace-format.md");
  made.preset =
      cmd.add_option("--preset", f.preset,
                     "built-in inputs: " + joined(core::preset_names()) + " (default: book)");
  cmd.add_option("--variant", f.variant, variant_names());
  cmd.add_option("--d-out", f.d_out, "output width of the query/key/value projections");
  cmd.add_option("--heads", f.num_heads, "number of attention heads");
  cmd.add_option("--dropout", f.dropout, "dropout probability on the attention weights, 0..1");
  cmd.add_option("--seed", f.seed, "torch.manual_seed value (default 123)");
  cmd.add_flag("--qkv-bias", f.qkv_bias, "give the query/key/value projections a bias");
  cmd.add_flag("--eval", f.eval, "eval mode: dropout off");
  made.random = cmd.add_option("--random", f.random,
                               "inputs: T tokens t0..t<T-1> of D random values, torch.rand(T, D) "
                               "after torch.manual_seed(--input-seed), e.g. 512,64");
  cmd.add_option("--input-seed", f.input_seed,
                 "torch.manual_seed value for random inputs (--random), apart from --seed for "
                 "the weights (default " +
                     std::to_string(core::kDefaultInputSeed) + ")");
  return made;
}

std::optional<int> FigureFlags::checked_decimals() const {
  if (decimals && (*decimals < figure::kMinDecimals || *decimals > figure::kMaxDecimals))
    throw core::ParseError("--decimals (" + std::to_string(*decimals) + ") must be between " +
                           std::to_string(figure::kMinDecimals) + " and " +
                           std::to_string(figure::kMaxDecimals));
  return decimals;
}

std::optional<figure::Theme> FigureFlags::checked_theme() const {
  if (!theme) return std::nullopt;
  if (const auto t = figure::parse_theme(*theme)) return t;
  throw core::ParseError("--theme '" + *theme + "' is not a theme: use " +
                         std::string(figure::kThemeNames));
}

FigureFlagOptions add_figure_flags(CLI::App& cmd, FigureFlags& f) {
  FigureFlagOptions made;
  made.row_scale = cmd.add_flag("--row-scale", f.row_scale,
                                "colour each heatmap row on its own scale (View > Colour each "
                                "row on its own scale)");
  made.decimals = cmd.add_option("--decimals", f.decimals,
                                 "decimals in heatmap cells, 1 to 6 (default 4, the book's; View "
                                 "> Decimals)");
  made.theme = cmd.add_option("--theme", f.theme,
                              "exported figures' colours around the cells: dark (as the app's "
                              "screen) or light (a white page with dark text, for papers and "
                              "slides); light unless set");
  return made;
}

}  // namespace attnscope::run_flags
