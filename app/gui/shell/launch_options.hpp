// launch_options.hpp: attnscope's command line, parsed with CLI11 and applied
// to the AppState with the same checks and messages as attnscope-cli.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "run_flags/run_flags.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

struct LaunchOptions {
  run_flags::RunFlags run;  // --config, --preset, --variant, ... --random, --input-seed
  // --text/--text-file: chapter 2's inputs from typed text (--d-in,
  // --embed-seed, --positions), or with --model the model's text.
  run_flags::TextFlags text;
  run_flags::ModelFlags model;           // --model PATH, --model-config FILE, --ids
  std::optional<std::string> open_file;  // FILE: opened as if dropped onto the window
  std::optional<int> layer;              // --layer L (with --model)
  std::optional<std::string> view;       // --view model|head|tokens (with --model)
  std::optional<std::string> stage;      // --stage ID
  std::optional<int> head;               // --head H
  std::optional<std::string> cell;       // --cell I,J (pins a cell of the stage's first matrix)
  std::optional<std::string> palette;    // --colors standard|colorblind|warm|greys
  run_flags::FigureFlags figure;         // --row-scale, --decimals N, --theme T
  bool no_row_scale = false;             // --no-row-scale: one scale per matrix, at any T
  std::optional<float> scale;            // --scale F (UI scale factor)
  int width = 1600, height = 1000;       // --size WxH
  bool size_given = false;
  // --compare-model B (with --model): Compare checkpoints opens on B.
  std::optional<std::string> compare_model;
  std::optional<std::string> screenshot;  // --screenshot FILE
  bool no_session = false;                // --no-session
  std::optional<int> bench_frames;        // --bench-frames N: time N frames, print, exit
  std::optional<std::string> export_png;  // --export-png DIR: every stage as PNG, then exit
  int export_scale = 1;                   // --scale N with --export-png (1, 2, 3 or 4)
  // --export-png draws what its flags say, never the last session.
  bool restore_session() const { return !no_session && !bench_frames && !export_png; }
  bool save_session() const { return !no_session && !screenshot && !bench_frames && !export_png; }
};

// What main should do after parsing.
struct ParseOutcome {
  bool run = false;  // false: exit with exit_code (after --help, --version, or an error)
  int exit_code = 0;
};

// Parses argv; prints --help/--version, or "error: ..." on stderr (exit 2).
ParseOutcome parse_launch_options(int argc, char** argv, LaunchOptions& out);

// Applies the run flags (preset/config file, random inputs, variant, sizes,
// stage, head, cell) on top of what `state` holds: the restored session
// (`session_restored`) or the defaults. Throws core::ParseError with the
// CLI's wording when a value is bad; a value the flags did not give is named
// as the saved session's (or the default, or the config file's), with the
// flag that changes it.
void apply_launch_options(const LaunchOptions& opts, AppState& state,
                          bool session_restored = false);

}  // namespace attnscope::gui
