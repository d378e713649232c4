// run_flags.hpp: the flags both programs share, declared once (attnscope-cli's
// trace/export/code and the attnscope app).
//
//   run:     --config FILE|-  --preset NAME  --variant V  --d-out N  --heads H
//            --dropout P  --seed S  --qkv-bias  --eval  --random T,D  --input-seed S
//   figures: --row-scale  --decimals N (the CLI's SVG export, the app's heatmaps)
//            --theme dark|light (exported figures' colours)
//
// Each program adds its own flags next to these (the CLI's --embeddings and
// --weights, the app's --stage, --cell, ...) and decides what the flags mean
// on top of what it holds; the wording of help texts and of the errors below
// is the same in both.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "attnscope/io/io.hpp"
#include "figure/theme.hpp"

namespace attnscope::run_flags {

// The exit code of a bad command line or bad input, with one "error: ..." line on stderr.
inline constexpr int kExitBadInput = 2;

// The values as typed; unset when the flag was not given.
struct RunFlags {
  std::optional<std::string> config;  // --config FILE (- reads standard input); "" when given empty
  std::optional<std::string> preset;  // --preset NAME
  std::optional<std::string> variant;  // --variant V, checked by spec()
  std::optional<int> d_out;            // --d-out N
  std::optional<int> num_heads;        // --heads H
  std::optional<double> dropout;       // --dropout P
  std::optional<std::string> seed;    // --seed S: text for core::parse_seed (CLI11 would wrap "-1")
  bool qkv_bias = false;              // --qkv-bias
  bool eval = false;                  // --eval
  std::optional<std::string> random;  // --random T,D: torch.rand(T, D) inputs
  std::optional<std::string> input_seed;  // --input-seed S: text, as --seed

  // True when any flag that changes the run was given.
  bool any() const;
  // --seed / --input-seed parsed by core::parse_seed; throw core::ParseError.
  std::optional<std::uint64_t> parsed_seed() const;
  std::optional<std::uint64_t> parsed_input_seed() const;
  // --config's path; throws core::ParseError when it was given empty.
  std::optional<std::string> config_path() const;
  // The flags as a RunSpec to merge on top of a config file or held values:
  // preset, variant, d_out, num_heads, dropout, seed, qkv_bias, training.
  // Throws core::ParseError for an unknown variant or a bad seed.
  core::RunSpec spec() const;
};

// The options add_run_flags made, for a program's own rules between them
// (e.g. the app's --random excludes --preset).
struct RunFlagOptions {
  CLI::Option* config = nullptr;
  CLI::Option* preset = nullptr;
  CLI::Option* random = nullptr;
};

// Declares the run flags on `cmd`, writing into `flags`.
RunFlagOptions add_run_flags(CLI::App& cmd, RunFlags& flags);

// How heatmaps are drawn: the app's View menu, the CLI's SVG figures.
struct FigureFlags {
  bool row_scale = false;            // --row-scale: each row coloured on its own scale
  std::optional<int> decimals;       // --decimals N: places in cells
  std::optional<std::string> theme;  // --theme dark|light: the colours around the cells

  // --decimals, checked against 1..6; throws core::ParseError.
  std::optional<int> checked_decimals() const;
  // --theme as a figure::Theme; throws core::ParseError naming the valid values.
  std::optional<figure::Theme> checked_theme() const;
};

struct FigureFlagOptions {
  CLI::Option* row_scale = nullptr;
  CLI::Option* decimals = nullptr;
  CLI::Option* theme = nullptr;
};

// Declares --row-scale, --decimals and --theme on `cmd`; a program may add
// to their help what it does without them (the app's automatic row scale).
FigureFlagOptions add_figure_flags(CLI::App& cmd, FigureFlags& flags);

// "simple, self_attention_v1, ..., multihead": core's variant ids.
std::string variant_names();

}  // namespace attnscope::run_flags
