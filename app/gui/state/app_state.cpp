// app_state.cpp: the recompute point, selection upkeep.
#include "state/app_state.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/embedding.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "platform/fonts.hpp"

namespace attnscope::gui {

void rebuild_fonts(UiState& ui) {
  const FontSet fonts =
      setup_fonts_and_style(effective_scale(ui.content_scale, ui.ui_scale), ui.extra_glyphs);
  ui.unicode = fonts.unicode;
  ui.font_heading = fonts.heading;
  ui.font_mono = fonts.mono;
}

void note_text_glyphs(AppState& state) {
  UiState& ui = state.ui;
  std::size_t added = 0;
  if (state.model.typed.text != ui.glyphs_model_text) {
    ui.glyphs_model_text = state.model.typed.text;
    added += collect_extra_glyphs(ui.glyphs_model_text, ui.extra_glyphs);
  }
  if (state.text_source.typed.text != ui.glyphs_chapter_text) {
    ui.glyphs_chapter_text = state.text_source.typed.text;
    added += collect_extra_glyphs(ui.glyphs_chapter_text, ui.extra_glyphs);
  }
  if (state.trace && state.trace_version != ui.glyphs_trace_version) {
    ui.glyphs_trace_version = state.trace_version;
    for (const std::string& token : state.trace->tokens)
      added += collect_extra_glyphs(token, ui.extra_glyphs);
  }
  // The built-in font (no DejaVu) has no other characters to add.
  if (added > 0 && ui.unicode) ui.fonts_dirty = true;
}

namespace {

struct SourceName {
  Source source;
  std::string_view id;
};
constexpr SourceName kSources[] = {{Source::Inputs, "inputs"},  // not a stage id
                                   {Source::Text, "text"},
                                   {Source::Model, "model"}};

struct OriginName {
  InputOrigin origin;
  std::string_view id;
};
constexpr OriginName kOrigins[] = {{InputOrigin::Preset, "preset"},
                                   {InputOrigin::Random, "random"},
                                   {InputOrigin::Imported, "imported"},
                                   {InputOrigin::Edited, "edited"},
                                   {InputOrigin::Text, "text"}};

}  // namespace

std::string_view source_id(Source s) {
  for (const auto& n : kSources)
    if (n.source == s) return n.id;
  return "?";
}

std::optional<Source> parse_source(std::string_view id) {
  if (id == "chapter3") return Source::Inputs;
  for (const auto& n : kSources)
    if (n.id == id) return n.source;
  return std::nullopt;
}

std::string_view input_origin_id(InputOrigin o) {
  for (const auto& n : kOrigins)
    if (n.origin == o) return n.id;
  return "?";
}

std::optional<InputOrigin> parse_input_origin(std::string_view id) {
  for (const auto& n : kOrigins)
    if (n.id == id) return n.origin;
  return std::nullopt;
}

void AppState::start_worker(std::function<void()> notify) {
  worker = std::make_unique<ComputeWorker>(std::move(notify));
}

std::optional<ComputeJob> AppState::next_job() {
  if (model_source()) {
    error.clear();
    if (!model.is_open()) return std::nullopt;  // the Model panel says how to open one
    if (!model.typed.error.empty()) {
      error = model.typed.error;
      return std::nullopt;
    }
    auto job = std::make_shared<ModelJob>();
    job->model = model.model;
    job->family = model.family;
    job->ids = model.typed.ids();
    job->layer = model.layer;
    job->head = head;
    job->next_at = model.next_at;
    job->lens = model.lens_open;
    job->induction = model.induction;
    if (model.compare.open && model.model) job->compare = model.compare.model;
    ComputeJob j;
    j.model = std::move(job);
    j.version = requested_version;
    return j;
  }
  error = core::validate(config, inputs);
  if (error.empty() && explicit_parameters)
    error = core::validate_parameters(*explicit_parameters, config,
                                      static_cast<int>(inputs.embeddings.cols()));
  if (!error.empty()) return std::nullopt;
  return ComputeJob{config, inputs, explicit_parameters, requested_version, nullptr};
}

void AppState::post_if_dirty() {
  if (!dirty) return;
  dirty = false;
  ++requested_version;  // jobs in flight are stale from here on
  if (incoming) {       // ... and so is a result still being prepared
    incoming.reset();
    textures.drop_prepared();
  }
  std::optional<ComputeJob> job = next_job();
  if (!job) {
    settled_version = requested_version;  // keep the last good trace on screen
  } else if (worker) {
    keep_only_the_view();
    worker->post(std::move(*job));
  } else {
    settled_version = requested_version;
    adopt(run_job(*job, sync_cache, sync_model_run));
  }
}

void AppState::recompute_if_dirty() {
  post_if_dirty();
  if (!worker) return;
  // A finished job: adopted only when it answers the newest request; older
  // ones (the inputs changed since) are dropped, never shown.
  if (std::optional<ComputeResult> r = worker->take(); r && r->version == requested_version) {
    if (r->trace && trace)
      incoming = std::move(r);  // its heatmaps are prepared first, below
    else
      adopt(std::move(*r));  // an error, or the first trace (nothing to keep on screen)
  }
  if (incoming && textures.prepare(*incoming->trace, trace_version + 1, upload_budget_ms)) {
    textures.commit_prepared(trace_version + 1);
    adopt(std::move(*incoming));  // frees the previous trace and its textures
    incoming.reset();
    worker->release_when_idle();
  }
}

void AppState::keep_only_the_view() {
  // Two full traces (the one on screen and the one being built) would be
  // 2 x ~320 MiB at T = 1024, d = 768, 12 heads. What stays on screen while
  // the worker computes is the current step: keep the whole-layer stages
  // (small), every stage of the focused and the pinned head (the matrices
  // above and the inspector's breakdown), and the head grid's stage of every
  // head. Other steps come back with the new trace. Only a trace nobody else
  // holds (else nothing would be freed) and that run_job built (not const).
  constexpr std::size_t kSlimAbove = 64u << 20;
  const std::shared_ptr<core::Trace> own = own_trace.lock();
  if (!own || own != trace || own.use_count() != 2 || trace_bytes(*own) <= kSlimAbove) return;
  const int focused = stage_head();
  const int pinned_head = pinned.valid() ? pinned.head : -1;
  const std::string_view grid = per_head_stage(step, *trace);
  // The same numbers stay: the same trace_version, the textures stay valid.
  drop_stages(*own, [&](const core::Stage& s) {
    return s.head < 0 || s.head == focused || s.head == pinned_head || s.id == grid;
  });
}

void AppState::adopt(ComputeResult r) {
  settled_version = r.version;
  if (!r.trace) {
    error = r.error;
    return;
  }
  if (r.overview && r.overview != model.overview) {  // the worker reuses it for a layer or head
    model.overview = std::move(r.overview);
    ++model.overview_version;
    if (!model.induction) model.induction = model.overview->induction;
  }
  if (r.trace->is_model()) model.compare.result = std::move(r.comparison);
  own_trace = r.trace;
  trace = std::move(r.trace);  // the previous trace is freed here, not later
  nonfinite = std::move(r.nonfinite);
  ++trace_version;
  fix_selection();
}

void AppState::finish_recompute() {
  recompute_if_dirty();
  if (!worker || !computing()) return;
  worker->wait_idle();
  recompute_if_dirty();
  if (incoming) {  // no frames to spread the uploads over: show it now
    textures.drop_prepared();
    adopt(std::move(*incoming));
    incoming.reset();
  }
}

std::vector<Step> AppState::steps() const {
  return trace ? steps_for(*trace) : steps_for(config.variant);
}

void AppState::step_by(int delta) {
  const auto all = steps();
  auto it = std::find(all.begin(), all.end(), step);
  const long at = it == all.end() ? 0 : it - all.begin();
  const long to = std::clamp(at + delta, 0L, static_cast<long>(all.size()) - 1);
  step = all[static_cast<std::size_t>(to)];
}

int AppState::stage_head() const {
  if (!trace) return -1;
  return core::stage_head(*trace, head);
}

void AppState::fix_selection() {
  const auto all = steps();
  if (std::find(all.begin(), all.end(), step) == all.end()) {
    // The latest step of the new pipeline that comes before the old one.
    Step best = all.front();
    for (Step s : all)
      if (static_cast<int>(s) <= static_cast<int>(step)) best = s;
    step = best;
  }
  if (!trace) return;
  head = std::clamp(head, 0, std::max(0, trace->heads_shown() - 1));

  if (pinned.valid()) {
    const core::Stage* s = trace->find(pinned.stage, pinned.head);
    if (!s) {  // e.g. the variant gained or lost heads
      pinned.head = pinned.head < 0 ? core::stage_head(*trace, head) : -1;
      s = trace->find(pinned.stage, pinned.head);
    }
    if (!s || pinned.row >= s->data().rows() || pinned.col >= s->data().cols()) pinned = CellRef{};
  }
}

void AppState::draw_random_inputs(int tokens, int dims) {
  inputs = core::random_inputs(tokens, dims, input_seed);
  inputs_replaced(InputOrigin::Random);
}

void AppState::inputs_replaced(InputOrigin o) {
  origin = o;
  if (source == Source::Text && o != InputOrigin::Text) source = Source::Inputs;
  mark_dirty();
}

bool AppState::embed_text() {
  TextSource& t = text_source;
  if (!t.typed.encode(core::Gpt2Tokenizer::builtin())) return false;
  try {
    inputs = core::chapter2_inputs(core::text_inputs(t.typed.tokens, t.d_in, t.seed, t.positions));
  } catch (const core::ParseError& e) {
    t.typed.error = e.what();
    return false;
  }
  inputs_replaced(InputOrigin::Text);
  if (source != Source::Model) source = Source::Text;
  return true;
}

std::string AppState::embed_memory_text(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    inputs.memory = core::RowMatrix();
    inputs.memory_tokens.clear();
    mark_dirty();
    return "";
  }
  const int d_in = static_cast<int>(inputs.embeddings.cols());
  try {
    core::Inputs m = core::chapter2_inputs(
        core::tokenize_text(text, d_in, text_source.seed, text_source.positions));
    if (m.tokens.empty()) return "the second sentence has no tokens: type a word or two";
    inputs.memory = std::move(m.embeddings);
    inputs.memory_tokens = std::move(m.tokens);
  } catch (const core::ParseError& e) {
    return e.what();
  }
  mark_dirty();
  return "";
}

bool AppState::load_preset(const std::string& name) {
  auto p = core::find_preset(name);
  if (!p) return false;
  inputs = std::move(*p);
  preset = name;
  inputs_replaced(InputOrigin::Preset);
  return true;
}

// ---------------------------------------------------------------------------
// Real models

void AppState::open_model(const std::string& path) {
  model.path = path;
  model.load_error.clear();
  // A load the learner asked for: its failure is shown, never fallen back from.
  model.restoring = false;
  // A Hub model not pulled yet: the window that fetches it, with its id.
  if (const auto ref = uncached_repo(path)) {
    model.get.field = path;
    model.get.field_error.clear();
    model.get.open = true;
    model.load_error = path +
                       " is no file or folder here and not in the Hugging Face cache yet: "
                       "Get in the Get a model window downloads it from the Hub";
    return;
  }
  model.loader->start(path, model.config);
}

void AppState::open_dropped(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string ext = p.extension().string();
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec) || ext == ".safetensors" || ext == ".pth" ||
      ext == ".json") {
    set_source(Source::Model);  // the Model panel shows the load and any error
    open_model(path);
    return;
  }
  ui.session_warning = "Dropped " + path +
                       ": attnscope opens what is dropped onto the window when it is a model "
                       "(a Hugging Face folder, a .safetensors file or the book's .pth), a "
                       "session (.json), embeddings (.csv, .npy, .json) or chapter-3 weights "
                       "(.json, W_query.npy, a folder of them).";
}

void AppState::poll_model_loader(bool wait) {
  if (wait) model.loader->wait();
  std::optional<ModelLoader::Outcome> o = model.loader->take();
  if (!o) return;
  const bool restoring = std::exchange(model.restoring, false);
  if (!o->model && !o->family) {
    model.load_error = o->error;  // the previous model and everything on screen stay
    if (restoring) {
      ui.session_warning = "The session's model could not be opened (" + o->error +
                           "): showing the chapter-3 classes.";
      set_source(chapter3_source());
    }
    return;
  }
  model.model = std::move(o->model);
  model.family = std::move(o->family);
  model.model_path = o->path;
  model.load_error.clear();
  model.remember(o->path);
  model.overview.reset();
  model.induction.reset();
  model.layer = std::clamp(model.layer, 0, model.num_layers() - 1);
  head = std::clamp(head, 0, model.num_heads() - 1);
  model.query = -1;
  model.next_at = -1;
  model.heads_off.assign(static_cast<std::size_t>(model.num_heads()), false);
  set_source(Source::Model);
}

void AppState::open_compare_model(const std::string& path) {
  model.compare.path = path;
  model.compare.error.clear();
  model.compare.open = true;
  model.compare.loader->start(path, model.compare.config);
}

void AppState::poll_compare_loader(bool wait) {
  CheckpointCompare& c = model.compare;
  if (wait) c.loader->wait();
  std::optional<ModelLoader::Outcome> o = c.loader->take();
  if (!o) return;
  if (!o->model) {
    // A, and any B before, stay.
    c.error = o->family
                  ? o->path + " is a " +
                        std::string(core::model_family_name(o->family->model->config().family)) +
                        " model: Compare checkpoints compares two GPT-2-shaped checkpoints "
                        "(two epochs of the book's training, or GPT-2 and a fine-tune)"
                  : o->error;
    return;
  }
  c.model = std::move(o->model);
  c.model_path = o->path;
  c.error.clear();
  c.result.reset();
  mark_dirty();  // the worker runs B beside A
}

void AppState::set_source(Source s) {
  if (s == Source::Text && origin != InputOrigin::Text && !embed_text()) {
    s = Source::Inputs;  // the Embeddings panel shows why the text cannot run
  } else if (s == Source::Inputs && origin == InputOrigin::Text) {
    load_preset(preset);
  }
  source = s;
  if (s == Source::Model)
    model.encode_text();
  else  // the model stays loaded; its run goes with the next job
    model.overview.reset();
  pinned = CellRef{};
  mark_dirty();
}

void AppState::model_text_changed() {
  const int dropped_before = model.dropped;
  model.encode_text();
  // Tokens dropped from the front (keep_last) move the clicked token left.
  const int shift = model.dropped - dropped_before;
  if (shift != 0) {
    if (model.query >= 0) model.query = model.query >= shift ? model.query - shift : -1;
    if (model.next_at >= 0) model.next_at = model.next_at >= shift ? model.next_at - shift : -1;
  }
  const int n = static_cast<int>(model.typed.tokens.size());
  if (model.query >= n) model.query = -1;
  if (model.next_at >= n) model.next_at = -1;
  mark_dirty();
}

void AppState::select_layer(int layer) {
  if (!model.is_open()) return;
  model.layer = std::clamp(layer, 0, model.num_layers() - 1);
  mark_dirty();
}

void AppState::select_head(int h) {
  const int heads = model_source() && model.is_open() ? model.num_heads()
                    : trace                           ? trace->heads_shown()
                                                      : 1;
  head = std::clamp(h, 0, std::max(heads - 1, 0));
  // Above kEveryHeadUpTo tokens a block's trace holds the focused head's
  // stages only: fetch the new head's.
  if (showing_model() && !trace->find(core::stage_id::scores, head)) mark_dirty();
}

bool AppState::append_top_token() {
  if (!model.overview || model.overview->next_last.empty() || !model.is_open()) return false;
  return append_token(model.overview->next_last[0].id);
}

std::optional<int> AppState::sample_token() {
  if (!model.overview || !model.overview->last_logits || !model.is_open()) return std::nullopt;
  SamplingState& s = model.sampling;
  const core::Sampling& want = s.settings;
  const bool same = s.sampler && s.after_text == model.typed.text &&
                    s.sampler->sampling().temperature == want.temperature &&
                    s.sampler->sampling().top_k == want.top_k &&
                    s.sampler->sampling().seed == want.seed;
  if (!same) {
    s.sampler = std::make_unique<core::BookSampler>(want);
    s.drawn = 0;
  }
  int id = 0;
  try {
    id = s.sampler->next(*model.overview->last_logits);
  } catch (const std::invalid_argument& e) {
    model.typed.error = e.what();
    return std::nullopt;
  }
  ++s.drawn;
  if (!append_token(id)) return std::nullopt;
  s.after_text = model.typed.text;
  return id;
}

bool AppState::append_token(int id) {
  if (static_cast<int>(model.typed.tokens.size()) >= model.max_tokens() && !model.keep_last) {
    model.typed.error = "The text fills the model's " + std::to_string(model.max_tokens()) +
                        " positions; there is no room for another token. Keep its last " +
                        std::to_string(model.max_tokens()) +
                        " tokens to go on (the first ones drop out).";
    model.too_long = true;
    return false;
  }
  // The text box holds text, not bytes: a token that stops inside a
  // character (or continues none) leaves U+FFFD there, as tiktoken's decode
  // of the whole text would show it, instead of bytes that are not UTF-8
  // (which the tokenizer refuses and the session cannot save).
  const std::optional<std::string> bytes = model.token_bytes(id);
  if (!bytes) {
    model.typed.error = "Token id " + std::to_string(id) +
                        " has no text in this model's tokenizer (its vocabulary is padded); "
                        "it cannot be added to the text.";
    return false;
  }
  model.typed.text = core::decode_utf8_replace(model.typed.text + *bytes);
  model_text_changed();
  return true;
}

}  // namespace attnscope::gui
