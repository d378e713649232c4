// run_flags.hpp: the flags both programs share, declared once (attnscope-cli's
// trace/export/code and the attnscope app).
//
//   run:     --config FILE|-  --preset NAME  --variant V  --d-out N  --heads H
//            --dropout P  --seed S  --qkv-bias  --eval  --random T,D  --input-seed S
//            --kv-groups G  --window W  --latent-dim L  --rope  --rope-theta T
//   figures: --row-scale  --decimals N (the CLI's SVG export, the app's heatmaps)
//            --theme dark|light (exported figures' colours)
//   text:    --text TEXT  --text-file FILE|-  --d-in N  --embed-seed S  --positions N
//            (a sentence as chapter-3 inputs; in the app also a model's text)
//   model:   MODEL (the CLI's model commands) or --model PATH (the app),
//            --config FILE (the app: --model-config)  --ids 1,2,3  --keep-last
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
#include <string_view>
#include <vector>

#include "attnscope/io/io.hpp"
#include "attnscope/model/gpt2_model.hpp"
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
  // After chapter 3:
  std::optional<int> num_kv_groups;  // --kv-groups G (gqa)
  std::optional<int> window;         // --window W (swa)
  std::optional<int> latent_dim;     // --latent-dim L (mla)
  bool rope = false;                 // --rope
  std::optional<double> rope_theta;  // --rope-theta T (with --rope)

  // True when any flag that changes the run was given.
  bool any() const;
  // --seed / --input-seed parsed by core::parse_seed; throw core::ParseError.
  std::optional<std::uint64_t> parsed_seed() const;
  std::optional<std::uint64_t> parsed_input_seed() const;
  // --config's path; throws core::ParseError when it was given empty.
  std::optional<std::string> config_path() const;
  // The flags as a RunSpec to merge on top of a config file or held values:
  // preset, variant, d_out, num_heads, dropout, seed, qkv_bias, training,
  // num_kv_groups, window, latent_dim, rope, rope_theta. Throws
  // core::ParseError for an unknown variant, a bad seed, or --rope-theta
  // without --rope.
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

// Where a group of flags is declared: their help says what they do there.
enum class Program {
  Cli,       // attnscope-cli trace/export/code: the text makes chapter-3 inputs
  CliModel,  // attnscope-cli model ...: the text a model reads (no embedding flags)
  App,       // attnscope: both (the text is a model's with --model)
};

// A typed text: chapter 2's inputs (GPT-2's tokens through nn.Embedding,
// core::tokenize_text), or the text a model reads.
struct TextFlags {
  std::optional<std::string> text;        // --text TEXT
  std::optional<std::string> text_file;   // --text-file FILE|-
  std::optional<int> d_in;                // --d-in N (default core::kDefaultTextDim)
  std::optional<std::string> embed_seed;  // --embed-seed S: text, as --seed
  std::optional<int> positions;           // --positions N: context_length; 0 = none

  bool given() const { return text || text_file; }
  // "--text" or "--text-file", for messages.
  std::string flag() const { return text ? "--text" : "--text-file"; }
  // The text: --text's, or the file --text-file names ('-': standard input).
  // Throws core::ParseError when both are given, core::FileError when the
  // file cannot be read.
  std::string read() const;
};

struct TextFlagOptions {
  CLI::Option* text = nullptr;
  CLI::Option* text_file = nullptr;
  CLI::Option* d_in = nullptr;        // not declared for Program::CliModel
  CLI::Option* embed_seed = nullptr;  // ...
  CLI::Option* positions = nullptr;   // ...
};

// Declares --text and --text-file, and for Cli and App the embedding flags
// (--d-in, --embed-seed, --positions).
TextFlagOptions add_text_flags(CLI::App& cmd, TextFlags& flags, Program program);

// A trained model: its files and the tokens it reads.
struct ModelFlags {
  std::optional<std::string> path;    // MODEL (CliModel) or --model PATH (App)
  std::optional<std::string> config;  // --config FILE (CliModel) or --model-config FILE (App)
  std::optional<std::string> ids;     // --ids 1,2,3: token ids instead of a text
  bool keep_last = false;             // --keep-last: keep the last n_positions tokens

  // The tokens the model reads: --ids, or the text's tokens (`text`: the
  // --text / --text-file given with these flags), with at most n_positions
  // of them (the last ones with --keep-last). Throws core::ParseError for
  // no text or two, an id outside the vocabulary, or a text too long.
  std::vector<int> model_ids(const core::Gpt2Model& model, const TextFlags& text) const;
};

struct ModelFlagOptions {
  CLI::Option* path = nullptr;
  CLI::Option* config = nullptr;
  CLI::Option* ids = nullptr;
};

// Declares the model, its config file and --ids (with --keep-last for
// CliModel), and `text`'s --text and --text-file after the config when
// given (the CLI's model commands). The app's --config is the chapter-3
// run's, so its model config is --model-config (--config with --model is
// still read as the model's).
ModelFlagOptions add_model_flags(CLI::App& cmd, ModelFlags& flags, Program program,
                                 TextFlags* text = nullptr);

// "15496,11,995" as token ids of `model`; throws core::ParseError naming an
// item that is not a whole number or an id outside its vocabulary.
std::vector<int> parse_ids(std::string_view list, const core::Gpt2Model& model);
// The same for a model named `name` with `vocab` token ids.
std::vector<int> parse_ids(std::string_view list, const std::string& name, int vocab);

// "simple, self_attention_v1, ..., multihead": core's variant ids.
std::string variant_names();

}  // namespace attnscope::run_flags
