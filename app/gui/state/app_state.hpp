// app_state.hpp: everything the app knows, owned by main and passed to every
// panel. Widgets edit `inputs`/`config` and call mark_dirty(); the frame's
// recompute point, recompute_if_dirty() (and post_if_dirty() at the frame's
// end, for edits drawn in it), validates and runs the engine. Panels
// read `trace` and write only the selection and UI state.
//
// Sections: pinned cell / UI state / AppState. The stepper's steps: step.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/analysis/diagnose.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/base/config.hpp"
#include "attnscope/base/trace.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "compute/compute_worker.hpp"
#include "figure/scale.hpp"
#include "imgui.h"
#include "platform/text_edit.hpp"
#include "render/colormap.hpp"
#include "render/texture.hpp"
#include "state/files_state.hpp"
#include "state/model_state.hpp"
#include "state/step.hpp"
#include "state/teach_state.hpp"
#include "state/typed_text.hpp"

namespace attnscope::gui {

// Where the matrices on screen come from.
enum class Source {
  Inputs,  // the book's classes on the Embeddings panel's matrix (InputOrigin says whose)
  Text,    // the book's classes on typed text, embedded the chapter-2 way (TextSource)
  Model,   // a trained GPT-2 or chapter-5 GPTModel on typed text (ModelState)
};
std::string_view source_id(Source s);  // "inputs", "text", "model"
// Also reads "chapter3", what sessions saved before typed text was a source.
std::optional<Source> parse_source(std::string_view id);

// What made the chapter-3 inputs (`AppState::inputs`), set by whatever
// replaced them; kept while a model is shown, for the way back.
enum class InputOrigin {
  Preset,    // a built-in preset (AppState::preset)
  Random,    // torch.rand under AppState::input_seed (the panel names the seed)
  Imported,  // a file, a config file or the command line
  Edited,    // changed by hand since (a value, a row or a column)
  Text,      // text_source's embeddings: they follow its every edit
};
std::string_view input_origin_id(InputOrigin o);  // "preset", "random", ...
std::optional<InputOrigin> parse_input_origin(std::string_view id);

// Typed text as the inputs, the book's chapter-2 way: GPT-2's token ids of
// the text, then torch.manual_seed(seed); nn.Embedding(50257, d_in) (and
// nn.Embedding(positions, d_in) right after it when positions > 0).
struct TextSource {
  TypedText typed{"Your journey starts with one step"};
  int d_in = 3;
  std::uint64_t seed = 123;
  int positions = 0;  // 0: no positional embedding
};

// ---------------------------------------------------------------------------
// A cell the user clicked: its inspector breakdown stays on screen.

struct CellRef {
  std::string stage;  // trace stage id, e.g. "weights"
  int head = -1;      // the stage's head (-1: whole layer)
  int row = -1, col = -1;
  bool valid() const { return !stage.empty() && row >= 0 && col >= 0; }
  friend bool operator==(const CellRef&, const CellRef&) = default;
};

// Zoom and pan of one heatmap on screen.
struct ViewState {
  float zoom = 1.0f;  // 1 = fit the area; up to 64
  ImVec2 pan{0, 0};   // px the image is scrolled by (>= 0)
  int decimals = 0;   // places its cells showed in the last frame (0: no numbers)
};

// ---------------------------------------------------------------------------
// UI state: what is shown and how, never what is computed.

struct UiState {
  Palette palette = Palette::Standard;
  bool show_values = true;  // numbers in cells when they fit
  // Each heatmap row coloured on its own scale (View menu, R): Auto does so
  // for the token-by-token matrices from figure::kAutoRowScaleTokens tokens.
  figure::RowScale row_scale = figure::RowScale::Auto;
  int decimals = 4;                // places in cells (View > Decimals, 1..6); the book prints 4
  float ui_scale = 1.0f;           // the user's factor on top of the monitor's
  float content_scale = 1.0f;      // the monitor's (glfwGetWindowContentScale)
  bool fonts_dirty = false;        // main rebuilds the font atlas before the next frame
  bool unicode = true;             // the font has −, ∞, √, ᵀ, → (false: built-in font)
  ImFont* font_heading = nullptr;  // larger, for titles (nullptr: default font)
  ImFont* font_mono = nullptr;     // fixed width, for tables of numbers
  // Characters of the texts shown that the fonts' fixed ranges lack (Cyrillic,
  // CJK, ...): rebuild_fonts bakes them too. At most kMaxExtraGlyphs.
  std::set<char32_t> extra_glyphs;
  // What note_text_glyphs scanned last: a text or trace is scanned again
  // only when it differs from these.
  std::string glyphs_model_text, glyphs_chapter_text;
  std::uint64_t glyphs_trace_version = ~std::uint64_t{0};

  bool show_about = false;
  bool show_shortcuts = false;
  // The first-run card that offers the walkthrough: shown until the learner
  // starts the walkthrough or dismisses it (remembered in the session).
  bool welcome_dismissed = false;
  bool quit_requested = false;

  std::string heads_refusal;  // why the last head count was refused ("" when none)
  std::string typed_refusal;  // why a value typed into a slider was refused ("d_out ...")
  std::string memory_text;    // cross-attention's second sentence as typed
  std::vector<std::string> memory_shown;  // the second sequence's tokens memory_text shows
  std::string memory_error;               // why that sentence could not be embedded
  std::string typing_slider;      // the slider whose Ctrl+click field holds typed text ("" none)
  double typing_value = 0;        // ... and the value that text reads as
  std::string session_warning;    // the last session's restore: a banner until dismissed
  std::string autosave_warning;   // saving the session fails: a banner until it works again
  std::string embedding_refusal;  // why the last typed embedding value was refused
  // The value of the number being edited (an embedding or weight cell) when
  // its edit began; one is active at a time (drag_finite_cell).
  float edit_start = 0.0f;
  // The caret, selection and undo of the text box that has the keyboard
  // (widgets/text_editor.hpp; one at a time, like ImGui's own InputText).
  TextEditState text_edit;
  std::map<std::string, ViewState> views;  // per heatmap slot

  // Embedding editor's generator settings (its seed is AppState::input_seed).
  int random_tokens = 6;
  int random_dims = 3;

  int window_width = 1600, window_height = 1000;  // remembered across sessions
};

// Rebuilds the font atlas and the style for the monitor's scale times the
// user's factor, and records the fonts built in `ui`. The renderer's font
// texture must be recreated afterwards.
void rebuild_fonts(UiState& ui);

// ---------------------------------------------------------------------------

struct AppState {
  // What to run: edited by the controls and the embedding editor.
  core::Inputs inputs;
  core::Config config;
  std::string preset = "book";  // the preset "reset" returns to
  // Random inputs: torch.manual_seed(input_seed); torch.rand(T, D). A seed of
  // their own, apart from the weights' config.seed (core::kDefaultInputSeed
  // explains why). The Embeddings panel edits it; sessions save it.
  std::uint64_t input_seed = core::kDefaultInputSeed;
  // What the matrices on screen come from, and what made `inputs`.
  Source source = Source::Inputs;
  InputOrigin origin = InputOrigin::Preset;
  // Weights to run with instead of the seeded ones (imported or edited);
  // null: the module's seeded parameters. Must fit config + d_in
  // (core::validate_parameters); recompute reports a mismatch in `error`.
  std::shared_ptr<const core::Parameters> explicit_parameters;
  // The typed text and its settings the Embeddings panel edits (kept while unused).
  TextSource text_source;

  // A real model and its text, when the source is Source::Model (the
  // Model panel; model_state.hpp). Then the trace is one block of its run.
  ModelState model;

  // Selection.
  Step step = Step::Inputs;
  int head = 0;  // focused head for head variants
  CellRef pinned;

  UiState ui;

  // Derived, from the one recompute point.
  std::shared_ptr<const core::Trace> trace;  // the last good trace
  std::uint64_t trace_version = 0;           // bumps on every new trace
  std::string error;                         // why inputs/config cannot run ("" when fine)
  // The trace's first NaN/inf that the math does not expect (not the causal
  // mask's -inf), explained; shown above the matrices (stage_panel.cpp).
  std::optional<core::NonFiniteFinding> nonfinite;
  bool dirty = true;

  TextureCache textures;

  // Files: export folder, dialogs, the last notice, imported weights' origin,
  // the off-screen PNG renderer (state/files_state.hpp).
  FilesState files;

  // The Learn features: walkthrough position, open windows, compare's run A.
  TeachState teach;

  // The engine's thread (compute_worker.hpp). Null: recompute_if_dirty()
  // runs the engine itself, on this thread (the tests, --screenshot).
  std::unique_ptr<ComputeWorker> worker;
  std::uint64_t requested_version = 0;  // the newest job posted (or refused as invalid)
  std::uint64_t settled_version = 0;    // the newest job whose outcome is on screen

  // Starts the engine's thread; `notify` runs on it when a result is ready.
  void start_worker(std::function<void()> notify);
  // True while the newest request is still being computed: the trace on
  // screen is the previous one ("computing…").
  bool computing() const { return settled_version < requested_version; }
  // Shows a finished run: its trace replaces the one on screen, or its error is shown.
  void adopt(ComputeResult result);
  core::ParameterCache sync_cache;  // the parameters of the last run without a worker
  KeptRun sync_model_run;           // the last model run and overview without a worker
  // The newest result, waiting until its heatmaps are coloured and uploaded
  // (TextureCache::prepare, upload_budget_ms per frame); then it is adopted.
  std::optional<ComputeResult> incoming;
  double upload_budget_ms = 6.0;
  // A new trace or a heatmap's colours are still being prepared over frames,
  // or an Export all renders its figures a frame at a time: main keeps
  // drawing frames while this holds.
  bool preparing() const {
    return incoming.has_value() || textures.pending() || files.needs_frames();
  }
  // The last trace run_job built (not a const object): when it is the one
  // on screen, keep_only_the_view() may drop its stages in place.
  std::weak_ptr<core::Trace> own_trace;
  // Before a job is posted: a big trace on screen keeps only the stages the
  // current view reads (drop_stages), so that the old and the new trace are
  // never both alive in full.
  void keep_only_the_view();

  // Call after editing inputs or config.
  void mark_dirty() { dirty = true; }
  // The frame's recompute point: when dirty, validates at once and runs the
  // engine (posts a job to the worker, or runs it here without one); then
  // adopts a finished result if it answers the newest request (older ones
  // are dropped, never shown). On an invalid state keeps the last good trace
  // and sets `error`.
  void recompute_if_dirty();
  // The first half of recompute_if_dirty: when dirty, posts the job (or runs
  // it without a worker). The frame ends with it, so that an edit made while
  // drawing (a keystroke, a click) reaches the engine while the frame is
  // still being rendered and shown, not a frame later.
  void post_if_dirty();
  // The job for the current state, or nullopt (and `error` says why, or is
  // empty when there is simply nothing to run: a model source with no model).
  std::optional<ComputeJob> next_job();
  // Waits for the worker's newest job and adopts its result (tests,
  // --screenshot, --cell); without a worker, the same as recompute_if_dirty().
  void finish_recompute();

  // The steps of the trace's variant (of the config before the first trace).
  std::vector<Step> steps() const;
  // Moves the selection by `delta` steps, clamped to the pipeline.
  void step_by(int delta);
  // Keeps step/head/pinned meaningful after the trace changed shape.
  void fix_selection();
  // The head per-head stages use: -1 for variants without heads.
  int stage_head() const;

  // Replaces the inputs with a built-in preset; false when unknown.
  bool load_preset(const std::string& name);
  // Replaces the inputs with torch.rand(tokens, dims) under input_seed
  // (core::random_inputs; throws core::ParseError for a size out of range).
  void draw_random_inputs(int tokens, int dims);
  // Whoever replaced or changed `inputs` says so: `origin` becomes `o`, the
  // text stops being the source (unless `o` is Text), and the run follows.
  void inputs_replaced(InputOrigin o);
  // Replaces the inputs with text_source's tokens and embeddings
  // (core::chapter2_inputs) and makes the text the source (unless a model
  // is shown). When the text cannot be embedded (no token, too many for
  // `positions`, a size out of range) the inputs stay as they were,
  // text_source.typed.error says why, and false is returned.
  bool embed_text();
  // Cross-attention's second sequence from typed text, embedded as the
  // text source embeds (its seed and positions, the inputs' d_in): the
  // inputs stay, only inputs.memory changes. An empty text clears it (the
  // class then reads the inputs themselves). On a problem (no token, bad
  // sizes) nothing changes and the reason is returned; "" on success.
  std::string embed_memory_text(const std::string& text);

  // Real models (model_state.hpp).
  // Starts loading the checkpoint at `path` (with model.config when set) on
  // the loader's thread; the previous model stays until the new one is in.
  void open_model(const std::string& path);
  // A model dropped onto the window (a folder, a .safetensors, .index.json
  // or .pth file) is opened; anything else gets a banner that says what can
  // be dropped (export/dropped.hpp opens sessions, embeddings and weights).
  void open_dropped(const std::string& path);
  // Takes a finished load: a model replaces the previous one and becomes
  // the source; a failure keeps everything and sets model.load_error.
  // Called once a frame; waits for the load first when `wait` (tests, --screenshot).
  void poll_model_loader(bool wait = false);
  // Compare checkpoints: starts loading checkpoint B at `path` (with
  // model.compare.config when set) and opens the window; A stays open.
  void open_compare_model(const std::string& path);
  // Takes B's finished load: B replaces the previous B and the worker runs
  // it beside A; a failure keeps everything and sets model.compare.error.
  // Called once a frame; waits for the load first when `wait`.
  void poll_compare_loader(bool wait = false);
  // Switches the source; the matrices follow at the next recompute. The
  // text source embeds the text (staying on the inputs when it cannot); the
  // inputs source returns to the preset from text-made inputs.
  void set_source(Source s);
  // The chapter-3 source `inputs` stand for: Text when the text made them.
  Source chapter3_source() const {
    return origin == InputOrigin::Text ? Source::Text : Source::Inputs;
  }
  // True while a model is the source.
  bool model_source() const { return source == Source::Model; }
  // The model's text changed: re-encode it and recompute.
  void model_text_changed();
  // Shows block `layer` (clamped to the model's); recomputes.
  void select_layer(int layer);
  // Focuses head `h` (clamped): a model's block trace holds the focused
  // head's every stage, so a model recomputes its trace too.
  void select_head(int h);
  // Appends the most likely next token to the text (greedy), as the book's
  // generate_text_simple does; false when there is none or no room.
  bool append_top_token();
  // Draws the next token as the book's generate() does with the Sampling
  // panel's temperature, top-k and seed, and appends it; its id, or nullopt
  // (no run yet, no room, bad settings: typed.error says which).
  std::optional<int> sample_token();
  // Appends token `id`'s text; false (with typed.error) when the text is full
  // or the tokenizer has no text for the id.
  bool append_token(int id);
  // True when the trace on screen is a model's block (not chapter 3).
  bool showing_model() const { return trace && trace->is_model(); }
};

// Collects into state.ui.extra_glyphs the characters the fonts lack from
// the texts on screen (the model's typed text, chapter 3's typed text, the
// trace's token labels), each scanned only when it changed; sets fonts_dirty
// when one was new. Called once a frame, before anything is drawn.
void note_text_glyphs(AppState& state);

}  // namespace attnscope::gui
