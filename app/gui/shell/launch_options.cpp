// launch_options.cpp: CLI11 flags -> LaunchOptions -> AppState.
#include "shell/launch_options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/family_trace.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

namespace {

using run_flags::kExitBadInput;

std::string step_list(const std::vector<Step>& steps) {
  std::string s;
  for (Step st : steps) s += (s.empty() ? "" : ", ") + std::string(step_id(st));
  return s;
}

bool parse_int(std::string_view s, int& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "1600x1000" -> (1600, 1000)
bool parse_pair(const std::string& text, char sep, int& a, int& b) {
  const auto at = text.find(sep);
  if (at == std::string::npos) return false;
  return parse_int(std::string_view(text).substr(0, at), a) &&
         parse_int(std::string_view(text).substr(at + 1), b);
}

// Where the run's values came from: this command line, the config file, or
// what the app held (the restored session, or the defaults), for messages
// about values the user did not type.
struct RunOrigins {
  enum class Source { CommandLine, ConfigFile, Held };
  const core::RunSpec* flags = nullptr;  // null: no run flags, everything is held
  const core::RunSpec* file = nullptr;
  std::string file_name;
  bool session = false;  // the held values are a restored session's, not the defaults

  template <class T>
  Source of(std::optional<T> core::RunSpec::*field) const {
    if (flags && (*flags).*field) return Source::CommandLine;
    if (file && (*file).*field) return Source::ConfigFile;
    return Source::Held;
  }
  // ", from the saved session" etc. after a value; "" for one typed on this command line.
  template <class T>
  std::string note(std::optional<T> core::RunSpec::*field) const {
    switch (of(field)) {
      case Source::CommandLine:
        return "";
      case Source::ConfigFile:
        return ", from " + file_name;
      case Source::Held:
        break;
    }
    return session ? ", from the saved session" : ", the default";
  }
  // "the saved session's" etc. before a name; "" for one typed on this command line.
  template <class T>
  std::string whose(std::optional<T> core::RunSpec::*field) const {
    switch (of(field)) {
      case Source::CommandLine:
        return "";
      case Source::ConfigFile:
        return file_name + "'s";
      case Source::Held:
        break;
    }
    return session ? "the saved session's" : "the default";
  }
};

// MultiHeadAttention splits d_out into equal heads. When one of the two
// numbers was not typed on this command line, core's message ("d_out (4)
// must be divisible by num_heads (8)") would blame a value the user never
// gave: say where it came from and which flag changes it.
void check_heads_divide(const core::RunSpec& spec, const RunOrigins& origins) {
  if (spec.variant != core::Variant::Multihead || !spec.d_out || !spec.num_heads) return;
  const int d_out = *spec.d_out, heads = *spec.num_heads;
  if (d_out < 1 || heads < 1 || heads > core::kMaxHeads || d_out % heads == 0) return;
  const std::string d_from = origins.note(&core::RunSpec::d_out);
  const std::string h_from = origins.note(&core::RunSpec::num_heads);
  if (d_from.empty() && h_from.empty()) return;  // both typed: core's message says it all
  std::string msg = "d_out (" + std::to_string(d_out) + d_from +
                    ") must be divisible by num_heads (" + std::to_string(heads) + h_from + ")";
  if (!d_from.empty()) {
    msg += ": pass --d-out " + std::to_string(heads) + " (or a multiple of " +
           std::to_string(heads) + ")";
  } else {
    std::vector<int> divisors;
    for (int h = 1; h <= std::min(d_out, core::kMaxHeads); ++h)
      if (d_out % h == 0) divisors.push_back(h);
    std::string listed;
    for (std::size_t k = 0; k < divisors.size() && k < 8; ++k)
      listed += (k ? ", " : "") + std::to_string(divisors[k]);
    msg += ": pass --heads with a divisor of " + std::to_string(d_out) + " (" + listed +
           (divisors.size() > 8 ? ", ..." : "") + ")";
  }
  throw core::ParseError(msg);
}

// --text and its settings: chapter 2's inputs from the typed text.
void apply_text_flags(const LaunchOptions& o, AppState& state) {
  TextSource& t = state.text_source;
  t.typed.text = o.text.read();
  if (o.text.d_in) t.d_in = *o.text.d_in;
  if (o.text.embed_seed) t.seed = core::parse_seed(*o.text.embed_seed, "--embed-seed");
  if (o.text.positions) t.positions = *o.text.positions;
  if (!state.embed_text()) throw core::ParseError(o.text.flag() + ": " + t.typed.error);
}

// The model's steps at `layer`, for --stage with --model: a block's steps,
// and the last block's two more (the final norm, the logits).
std::vector<Step> model_steps(const ModelState& m, int layer) {
  std::vector<Step> s =
      steps_for(m.family ? core::family_block(m.family->model->config(), layer).recipe
                         : core::gpt2_block(core::Gpt2Config{}).recipe);
  s.push_back(Step::FinalNorm);
  s.push_back(Step::Logits);
  return s;
}

// --ids with --model: the text those tokens spell, which must split into
// the same tokens again (the app shows a text and its tokens, and the text
// box would re-split it). Throws core::ParseError.
void apply_ids_flag(const std::string& list, AppState& state) {
  ModelState& m = state.model;
  const std::vector<int> ids =
      m.family ? run_flags::parse_ids(list, m.model_name(), m.family->model->config().vocab_size)
               : run_flags::parse_ids(list, *m.model);
  std::string text;
  for (int id : ids) text += m.token_bytes(id).value_or("");
  m.typed.text = text;
  state.model_text_changed();
  if (m.typed.error.empty() && m.typed.ids() != ids)
    throw core::ParseError("--ids " + list + ": " + m.model_name() +
                           "'s tokenizer splits the text of these ids differently, and the app "
                           "runs a text as its tokenizer splits it; give the text with --text, "
                           "or use attnscope-cli model trace --ids for these exact ids");
}

// --model and the flags that go with it: loads the model (waiting for it),
// then the text, layer, head, stage and view. Throws core::ParseError with
// the engine's message when the model cannot be loaded.
void apply_model_flags(const LaunchOptions& o, AppState& state) {
  run_flags::RunFlags others = o.run;
  others.config.reset();
  if (others.any())
    throw core::ParseError(
        "--model runs the model's own attention: the chapter-3 flags (--preset, --variant, "
        "--d-out, --heads, --dropout, --seed, ...) do not apply to it; leave them out");
  ModelState& m = state.model;
  if (o.model.config && o.run.config)
    throw core::ParseError(
        "--model-config and --config both name the model's config file: keep --model-config");
  m.config = o.model.config ? *o.model.config : o.run.config_path().value_or("");
  if (o.model.ids && o.text.given())
    throw core::ParseError("give the model's text with one of " + o.text.flag() +
                           " and --ids, not both");
  if (o.text.given()) m.typed.text = o.text.read();
  m.keep_last = o.model.keep_last;
  state.open_model(*o.model.path);
  state.poll_model_loader(true);
  // A Hub id not downloaded yet: the app opens on the window that gets it
  // (open_model filled it in), unless other flags need the model now.
  if (!m.is_open() && m.get.open && !o.model.ids && !o.layer && !o.head && !o.stage &&
      !o.compare_model) {
    state.set_source(Source::Model);
    return;
  }
  if (!m.is_open()) throw core::ParseError("--model: " + m.load_error);
  if (o.model.ids) apply_ids_flag(*o.model.ids, state);
  if (!m.typed.error.empty())
    throw core::ParseError((o.model.ids ? "--ids" : o.text.flag()) + ": " + m.typed.error +
                           (m.too_long ? " (--keep-last keeps them)" : ""));
  const int n_layer = m.num_layers(), n_head = m.num_heads();
  if (o.layer) {
    if (*o.layer < 0 || *o.layer >= n_layer)
      throw core::ParseError(
          "--layer " + std::to_string(*o.layer) + " is out of range: " + m.model_name() + " has " +
          std::to_string(n_layer) + " layers (0 to " + std::to_string(n_layer - 1) + ")");
    m.layer = *o.layer;
  }
  if (o.head) {
    if (*o.head < 0 || *o.head >= n_head)
      throw core::ParseError(
          "--head " + std::to_string(*o.head) + " is out of range: " + m.model_name() + " has " +
          std::to_string(n_head) + " heads per layer (0 to " + std::to_string(n_head - 1) + ")");
    state.head = *o.head;
  }
  if (o.stage) {
    const auto step = parse_step(*o.stage);
    const std::vector<Step> steps = model_steps(m, m.layer);
    if (!step || std::find(steps.begin(), steps.end(), *step) == steps.end())
      throw core::ParseError("unknown stage '" + *o.stage +
                             "' of a model's block (known: " + step_list(steps) + ")");
    if ((*step == Step::FinalNorm || *step == Step::Logits) && m.layer != n_layer - 1)
      throw core::ParseError("stage '" + *o.stage + "' comes after the last block: add --layer " +
                             std::to_string(n_layer - 1));
    state.step = *step;
    m.view = ModelView::Head;
  }
  if (o.view) {
    const auto v = parse_model_view(*o.view);
    if (!v) throw core::ParseError("--view '" + *o.view + "' must be model, head or tokens");
    m.view = *v;
  }
  if (o.compare_model) {
    state.open_compare_model(*o.compare_model);
    state.poll_compare_loader(true);
    if (!m.compare.model) throw core::ParseError("--compare-model: " + m.compare.error);
  }
  state.mark_dirty();
}

// --colors, --row-scale / --no-row-scale, --decimals, --theme, --scale, --size.
void apply_view_flags(const LaunchOptions& o, AppState& state) {
  if (o.palette) {
    bool known = false;
    for (Palette p : kAllPalettes)
      if (palette_id(p) == *o.palette) {
        state.ui.palette = p;
        known = true;
      }
    if (!known)
      throw core::ParseError("unknown colours '" + *o.palette +
                             "' (known: standard, colorblind, warm, greys)");
  }
  if (o.figure.row_scale) state.ui.row_scale = figure::RowScale::On;
  if (o.no_row_scale) state.ui.row_scale = figure::RowScale::Off;
  if (const auto decimals = o.figure.checked_decimals()) state.ui.decimals = *decimals;
  if (const auto theme = o.figure.checked_theme()) state.files.theme = *theme;
  if (o.scale) {
    if (!(*o.scale >= 0.5f && *o.scale <= 3.0f))
      throw core::ParseError("--scale (" + std::to_string(*o.scale) +
                             ") must be between 0.5 and 3");
    state.ui.ui_scale = *o.scale;
  }
  if (o.size_given) {
    state.ui.window_width = o.width;
    state.ui.window_height = o.height;
  }
}

// The flags that choose the inputs or the model and what of it to open:
// the run flags, --text and its settings, FILE, --model and its settings,
// --stage, --head and --cell.
void add_source_flags(CLI::App& app, LaunchOptions& o) {
  const run_flags::RunFlagOptions run = run_flags::add_run_flags(app, o.run);
  // The app starts from one source of inputs: a preset, a config file or random ones.
  run.preset->excludes(run.config);
  run.random->excludes(run.preset);
  run.random->excludes(run.config);
  const run_flags::TextFlagOptions text =
      run_flags::add_text_flags(app, o.text, run_flags::Program::App);
  for (CLI::Option* typed : {text.text, text.text_file}) {
    typed->excludes(run.preset);
    typed->excludes(run.random);
  }
  // What a file manager's "Open with" passes (the launcher entry's %f).
  app.add_option("FILE", o.open_file,
                 "a file or folder to open as if dropped onto the window: a session (.json), a "
                 "model (Hugging Face folder, .safetensors, .pth), embeddings (.csv, .npy, "
                 ".json) or chapter-3 weights (.json, W_query.npy, a folder of them)")
      ->check(CLI::ExistingPath);
  const run_flags::ModelFlagOptions model =
      run_flags::add_model_flags(app, o.model, run_flags::Program::App);
  for (CLI::Option* chapter2 : {text.d_in, text.embed_seed, text.positions})
    chapter2->excludes(model.path);
  app.add_option("--layer", o.layer, "with --model: the layer to open (0-based)")
      ->needs(model.path);
  app.add_option("--view", o.view,
                 "with --model: model (every head as a thumbnail, the default), head (one "
                 "head's stages) or tokens (the head view)")
      ->needs(model.path);
  app.add_option("--compare-model", o.compare_model,
                 "with --model: open Compare checkpoints on this second checkpoint B (same "
                 "layers and heads), run on the same tokens")
      ->needs(model.path);
  app.add_option("--stage", o.stage,
                 "stage to open: inputs, qkv, split, scores, scaled, mask, masked, softmax, "
                 "dropout, context, concat, output; after chapter 3 also memory, latent, rope, "
                 "kv_groups, window");
  app.add_option("--head", o.head, "head to focus (0-based)");
  app.add_option("--cell", o.cell, "pin cell I,J of the stage's main matrix in the inspector");
}

// The flags of the view and of the app's other ways to run: --colors, the
// figure flags, --scale, --size (into `size`, checked after parsing),
// --screenshot, --no-session, --bench-frames and --export-png.
void add_view_and_output_flags(CLI::App& app, LaunchOptions& o, std::string& size) {
  app.add_option("--colors", o.palette, "standard, colorblind, warm or greys");
  const run_flags::FigureFlagOptions figure_flags = run_flags::add_figure_flags(app, o.figure);
  figure_flags.row_scale->description(
      figure_flags.row_scale->get_description() +
      "; without this flag or --no-row-scale: automatic, on for scores and weights from T = 128 "
      "and for a model's heads");
  app.add_flag("--no-row-scale", o.no_row_scale, "one colour scale per heatmap, also at T >= 128")
      ->excludes(figure_flags.row_scale);
  app.add_option("--scale", o.scale,
                 "UI scale factor on top of the monitor's (0.5..3); with --export-png, the PNG "
                 "scale (1, 2, 3 or 4)");
  app.add_option("--size", size, "window size WxH (default 1600x1000)");
  app.add_option("--screenshot", o.screenshot,
                 "render, save the window as a PNG and exit (the session is left untouched)");
  app.add_flag("--no-session", o.no_session, "neither restore nor save the last session");
  auto* bench =
      app.add_option(
             "--bench-frames", o.bench_frames,
             "draw N frames without idling, print each frame's CPU and wall time, the "
             "time to the first frame and peak memory, then exit (the session is untouched)")
          ->check(CLI::Range(1, 1000000));
  bench->excludes("--screenshot");
  auto* export_png = app.add_option(
      "--export-png", o.export_png,
      "render every stage's heatmaps (every head) off screen as PNGs into the folder DIR "
      "(created when missing), print their paths and exit; --scale N (1, 2, 3 or 4) sets the "
      "PNG scale");
  export_png->excludes("--screenshot");
}

// What CLI11 cannot check: --text with --config, seeds, the random shape,
// --size, and --scale with --export-png. Throws core::ParseError.
void check_parsed_flags(LaunchOptions& o, const std::string& size) {
  if (!o.text.given())
    for (const auto& [given, flag] : {std::pair{o.text.d_in.has_value(), "--d-in"},
                                      std::pair{o.text.embed_seed.has_value(), "--embed-seed"},
                                      std::pair{o.text.positions.has_value(), "--positions"}})
      if (given)
        throw core::ParseError(std::string(flag) +
                               " shapes the embeddings of --text: add --text TEXT (or "
                               "--text-file FILE), or drop " +
                               flag);
  if (o.text.given() && o.run.config && !o.model.path)
    throw core::ParseError(o.text.flag() +
                           " makes the inputs, so it excludes --config (a config file's "
                           "inputs); with --model, --model-config names the model's GPT_CONFIG");
  // A bad seed or size fails here, exit 2.
  (void)o.run.parsed_seed();
  (void)o.run.parsed_input_seed();
  if (o.run.random) (void)core::parse_random_shape(*o.run.random);
  if (!size.empty()) {
    int w = 0, h = 0;
    if (!parse_pair(size, 'x', w, h) || w < 320 || h < 240 || w > 16384 || h > 16384)
      throw core::ParseError("--size '" + size +
                             "' must be WIDTHxHEIGHT, at least 320x240, e.g. 1600x1000");
    o.width = w;
    o.height = h;
    o.size_given = true;
  }
  if (o.export_png && o.scale) {  // with --export-png, --scale is the PNG's scale
    const float f = *o.scale;
    if (!(f >= 1.0f && f <= 4.0f) || f != std::floor(f)) {
      char given[32];
      std::snprintf(given, sizeof given, "%g", static_cast<double>(f));
      throw core::ParseError(
          std::string("--scale with --export-png must be 1, 2, 3 or 4 (the PNG scale), not ") +
          given);
    }
    o.export_scale = static_cast<int>(f);
    o.scale.reset();
  }
}

}  // namespace

ParseOutcome parse_launch_options(int argc, char** argv, LaunchOptions& o) {
  CLI::App app{"attnscope: watch transformer attention happen, stage by stage", "attnscope"};
  // The second line says where the vocabulary is read from (installed or
  // the build tree's).
  app.set_version_flag("--version", [] {
    return std::string("attnscope " ATTNSCOPE_VERSION "\ndata: ") +
           core::Gpt2Tokenizer::assets_dir();
  });
  add_source_flags(app, o);
  std::string size;
  add_view_and_output_flags(app, o, size);

  try {
    app.parse(argc, argv);
    check_parsed_flags(o, size);
  } catch (const CLI::Success& e) {
    return ParseOutcome{false, app.exit(e)};
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad arguments";
    std::cerr << "error: " << what << " (run attnscope --help)\n";
    return ParseOutcome{false, kExitBadInput};
  } catch (const core::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ParseOutcome{false, kExitBadInput};
  }
  return ParseOutcome{true, 0};
}

namespace {

// Random inputs: drawn here, under their own seed, then held like the
// session's inputs (the flags after go on top).
void apply_random_inputs(const run_flags::RunFlags& run,
                         const std::optional<std::string>& config_path,
                         const std::optional<std::uint64_t>& input_seed, AppState& state) {
  if (input_seed) state.input_seed = *input_seed;
  if (run.random) {
    const auto [T, D] = core::parse_random_shape(*run.random);
    state.draw_random_inputs(T, D);
  } else if (input_seed && state.origin == InputOrigin::Random && !run.preset && !config_path) {
    // A new seed for the random inputs held: the same shape and token names.
    std::vector<std::string> names = std::move(state.inputs.tokens);
    state.draw_random_inputs(static_cast<int>(state.inputs.embeddings.rows()),
                             static_cast<int>(state.inputs.embeddings.cols()));
    state.inputs.tokens = std::move(names);
  }
}

// The run flags and the config file on top of what the app holds (not with
// --model): the variant, sizes, seed and inputs. Fills `flags`, `file` and
// `origins` (which points at the two) for the messages of the later flags.
void apply_run_flags(const LaunchOptions& o, const std::optional<std::string>& config_path,
                     core::RunSpec& flags, core::RunSpec& file, RunOrigins& origins,
                     AppState& state) {
  const run_flags::RunFlags& run = o.run;
  const bool new_inputs = run.preset || config_path;
  if (run.any() && !o.model.path) {
    // What the app holds is the base; the config file, then the flags, go on top.
    core::RunSpec base;
    base.variant = state.config.variant;
    base.d_out = state.config.d_out;
    base.num_heads = state.config.num_heads;
    base.dropout = state.config.dropout;
    base.seed = state.config.seed;
    base.qkv_bias = state.config.qkv_bias;
    base.training = state.config.training;
    if (!new_inputs) {
      base.tokens = state.inputs.tokens;
      base.embeddings = state.inputs.embeddings;
    }
    if (config_path) file = core::parse_run_spec(core::read_text_file(*config_path), *config_path);
    flags = run.spec();
    // --variant into a multi-head class without a head count: as the variant
    // menu does (core::heads_after_switch).
    if (flags.variant && !flags.num_heads && !file.num_heads) {
      const core::Variant from = file.variant.value_or(*base.variant);
      const int d_out = flags.d_out.value_or(file.d_out.value_or(*base.d_out));
      flags.num_heads = core::heads_after_switch(from, *flags.variant, *base.num_heads, d_out);
    }
    const core::RunSpec spec = core::merge(core::merge(base, file), flags);
    origins.flags = &flags;
    origins.file = &file;
    origins.file_name = config_path.value_or("");
    check_heads_divide(spec, origins);
    core::Config config;
    core::Inputs inputs;
    core::resolve(spec, config, inputs);  // throws with the CLI's messages
    state.config = config;
    state.inputs = std::move(inputs);
    if (spec.preset) state.preset = *spec.preset;
    if (new_inputs)
      state.inputs_replaced(spec.preset ? InputOrigin::Preset : InputOrigin::Imported);
    state.pinned = CellRef{};
    state.mark_dirty();
  }
}

// --stage without --model (with it, the stage was the model's: apply_model_flags).
void apply_stage_flag(const LaunchOptions& o, const RunOrigins& origins, AppState& state) {
  const auto steps = steps_for(state.config.variant);
  if (o.stage && !o.model.path) {
    const auto step = parse_step(*o.stage);
    if (!step)
      throw core::ParseError("unknown stage '" + *o.stage + "' (known: " + step_list(steps) + ")");
    if (std::find(steps.begin(), steps.end(), *step) == steps.end()) {
      std::string msg = "stage '" + *o.stage + "' is not part of " +
                        std::string(core::variant_book_name(state.config.variant));
      const std::string whose = origins.whose(&core::RunSpec::variant);
      if (whose.empty()) throw core::ParseError(msg + " (its stages: " + step_list(steps) + ")");
      // A variant the user did not choose here: say whose it is and which one has the stage.
      msg += " (" + whose + " variant; its stages: " + step_list(steps) + ")";
      for (core::Variant v : core::kAllVariants) {
        const auto has = steps_for(v);
        if (std::find(has.begin(), has.end(), *step) != has.end()) {
          msg += ": pass --variant " + std::string(core::variant_id(v)) + " (or another with it)";
          break;
        }
      }
      throw core::ParseError(msg);
    }
    state.step = *step;
  }
}

// --head without --model (with it, the head was the model's: apply_model_flags).
void apply_head_flag(const LaunchOptions& o, const RunOrigins& origins, AppState& state) {
  if (o.head && !o.model.path) {
    if (!core::has_heads(state.config.variant)) {
      if (*o.head != 0) {
        const std::string whose = origins.whose(&core::RunSpec::variant);
        throw core::ParseError(
            "--head needs a variant with heads (multihead_wrapper or multihead)" +
            (whose.empty() ? std::string()
                           : "; " + whose + " variant is " +
                                 std::string(core::variant_id(state.config.variant)) +
                                 ": pass --variant multihead"));
      }
    } else if (*o.head < 0 || *o.head >= state.config.num_heads) {
      const std::string from = origins.note(&core::RunSpec::num_heads);
      std::string msg = "--head " + std::to_string(*o.head) + " is out of range: there are " +
                        std::to_string(state.config.num_heads) + " heads (0 to " +
                        std::to_string(state.config.num_heads - 1) + from + ")";
      if (!from.empty() && *o.head > 0)
        msg += ": pass --heads " + std::to_string(*o.head + 1) + " or more";
      throw core::ParseError(msg);
    }
    state.head = *o.head;
  }
}

// --cell: pins a cell of the stage's main matrix, after computing the trace.
void apply_cell_flag(const LaunchOptions& o, AppState& state) {
  if (o.cell) {
    int i = 0, j = 0;
    if (!parse_pair(*o.cell, ',', i, j))
      throw core::ParseError("--cell '" + *o.cell + "' must be ROW,COL, e.g. 1,2");
    state.finish_recompute();
    if (!state.error.empty()) throw core::ParseError(state.error);
    const StepMatrices m = step_matrices(state.step, *state.trace, state.head);
    if (m.outputs.empty()) throw core::ParseError("--cell: this stage has no matrix");
    const core::Stage& s = *m.outputs.front();
    if (i < 0 || j < 0 || i >= s.data().rows() || j >= s.data().cols())
      throw core::ParseError("--cell " + *o.cell + " is outside " + s.id + " (" +
                             std::to_string(s.data().rows()) + " × " +
                             std::to_string(s.data().cols()) + ")");
    state.pinned = CellRef{s.id, s.head, i, j};
  }
}

}  // namespace

void apply_launch_options(const LaunchOptions& o, AppState& state, bool session_restored) {
  const run_flags::RunFlags& run = o.run;
  const std::optional<std::string> config_path = run.config_path();
  const std::optional<std::uint64_t> input_seed = run.parsed_input_seed();
  apply_random_inputs(run, config_path, input_seed, state);
  if (o.model.path) {
    apply_model_flags(o, state);
  } else if (o.text.given()) {
    apply_text_flags(o, state);
  }
  core::RunSpec flags, file;  // what this command line and the config file say
  RunOrigins origins;         // without run flags: every value is held
  origins.session = session_restored;
  apply_run_flags(o, config_path, flags, file, origins, state);

  apply_view_flags(o, state);

  // With --model, stage and head were the model's (apply_model_flags).
  apply_stage_flag(o, origins, state);
  apply_head_flag(o, origins, state);
  apply_cell_flag(o, state);
}

}  // namespace attnscope::gui
