// session.cpp: session documents on core's format, the draft of a run that
// does not validate, setting corrupt files aside.
//
// Sections: the view object / writing / reading / files.
#include "state/session.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/embedding.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "figure/theme.hpp"

namespace attnscope::gui {

using nlohmann::json;

std::filesystem::path config_dir() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg == '/')
    return fs::path(xdg) / "attnscope";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".config" / "attnscope";
  return {};
}

namespace {

// ---------------------------------------------------------------------------
// The view: everything the app shows besides the run.

// The model source: what to open and where the learner was (never the weights).
json model_view_of(const ModelState& m) {
  json j = {{"path", m.is_open() ? m.model_path : m.path},
            {"config", m.config},
            {"text", m.typed.text},
            {"layer", m.layer},
            {"view", std::string(model_view_id(m.view))},
            {"query", m.query},
            {"next_at", m.next_at},
            {"keep_last", m.keep_last},
            {"recent", m.recent},
            {"sort", m.pattern.sort}};
  if (m.pattern.kind) j["pattern"] = std::string(core::pattern_key(*m.pattern.kind));
  return j;
}

// Reads model_view_of's object into `m` (unknown or missing fields keep their defaults).
void read_model_view(const json& j, ModelState& m, bool preferences) {
  m.path = j.value("path", std::string());
  m.config = j.value("config", std::string());
  m.typed.text = j.value("text", m.typed.text);
  m.layer = std::max(0, j.value("layer", 0));
  m.view = parse_model_view(j.value("view", std::string("model"))).value_or(ModelView::Model);
  m.query = std::max(-1, j.value("query", -1));
  m.next_at = std::max(-1, j.value("next_at", -1));
  m.keep_last = j.value("keep_last", false);
  if (preferences) {
    m.recent = j.value("recent", std::vector<std::string>{});
    if (m.recent.size() > ModelState::kRecent) m.recent.resize(ModelState::kRecent);
  }
  m.pattern.sort = j.value("sort", false);
  m.pattern.kind.reset();
  const std::string key = j.value("pattern", std::string());
  for (core::PatternKind k : core::kPatternKinds)
    if (core::pattern_key(k) == key) m.pattern.kind = k;
}

json view_of(const AppState& s) {
  json view;
  view["preset"] = s.preset;
  view["stage"] = std::string(step_id(s.step));
  view["head"] = s.head;
  view["input_seed"] = s.input_seed;
  view["source"] = std::string(source_id(s.source));
  view["origin"] = std::string(input_origin_id(s.origin));
  view["text"] = {{"text", s.text_source.typed.text},
                  {"d_in", s.text_source.d_in},
                  {"seed", s.text_source.seed},
                  {"positions", s.text_source.positions}};
  view["model"] = model_view_of(s.model);
  if (s.pinned.valid())
    view["pinned"] = {{"stage", s.pinned.stage},
                      {"head", s.pinned.head},
                      {"row", s.pinned.row},
                      {"col", s.pinned.col}};
  view["ui"] = {{"palette", std::string(palette_id(s.ui.palette))},
                {"show_values", s.ui.show_values},
                {"row_scale", std::string(figure::row_scale_id(s.ui.row_scale))},
                {"welcome_dismissed", s.ui.welcome_dismissed},
                {"decimals", s.ui.decimals},
                {"ui_scale", s.ui.ui_scale},
                {"window", {s.ui.window_width, s.ui.window_height}},
                {"random_tokens", s.ui.random_tokens},
                {"random_dims", s.ui.random_dims}};
  const FilesState& f = s.files;
  json files = {{"export_folder", f.export_folder.string()},
                {"recent_folders", f.recent_folders},
                {"last_folder", f.last_folder},
                {"png_scale", f.png_scale},
                {"all_format", std::string(core::format_id(f.all_format))},
                {"theme", std::string(figure::theme_id(f.theme))},
                {"desktop_dialogs", f.native_dialogs}};
  if (s.explicit_parameters && f.imported.lock() == s.explicit_parameters)
    files["weights_from"] = f.imported_from;
  view["files"] = std::move(files);
  return view;
}

// The run as a config document, valid or not (the draft of a mid-edit run).
json run_document(const AppState& s) {
  json run;
  run["tokens"] = s.inputs.tokens;
  json rows = json::array();
  for (Eigen::Index r = 0; r < s.inputs.embeddings.rows(); ++r) {
    json row = json::array();
    for (Eigen::Index c = 0; c < s.inputs.embeddings.cols(); ++c)
      row.push_back(static_cast<double>(s.inputs.embeddings(r, c)));
    rows.push_back(std::move(row));
  }
  run["embeddings"] = std::move(rows);  // not a stage id
  run["variant"] = std::string(core::variant_id(s.config.variant));
  run["d_out"] = s.config.d_out;
  run["num_heads"] = s.config.num_heads;
  run["dropout"] = s.config.dropout;
  run["seed"] = s.config.seed;
  run["qkv_bias"] = s.config.qkv_bias;
  run["training"] = s.config.training;
  const core::Config defaults;
  if (s.config.num_kv_groups != defaults.num_kv_groups)
    run["num_kv_groups"] = s.config.num_kv_groups;
  if (s.config.window) run["window"] = *s.config.window;
  if (s.config.latent_dim) run["latent_dim"] = *s.config.latent_dim;
  if (s.config.rope) run["rope"] = true;
  if (s.config.rope_theta != defaults.rope_theta) run["rope_theta"] = s.config.rope_theta;
  if (s.inputs.memory.rows() > 0) {
    run["memory_tokens"] = s.inputs.memory_tokens;
    json memory = json::array();
    for (Eigen::Index r = 0; r < s.inputs.memory.rows(); ++r) {
      json row = json::array();
      for (Eigen::Index c = 0; c < s.inputs.memory.cols(); ++c)
        row.push_back(static_cast<double>(s.inputs.memory(r, c)));
      memory.push_back(std::move(row));
    }
    run["memory_embeddings"] = std::move(memory);
  }
  return run;
}

bool runs_as_is(const AppState& s) {
  if (!core::validate(s.config, s.inputs).empty()) return false;
  return !s.explicit_parameters ||
         core::validate_parameters(*s.explicit_parameters, s.config,
                                   static_cast<int>(s.inputs.embeddings.cols()))
             .empty();
}

}  // namespace

// ---------------------------------------------------------------------------
// Writing

std::optional<core::Session> session_of_trace(const AppState& s) {
  if (!s.trace) return std::nullopt;
  const core::Trace& t = *s.trace;
  core::Session out;
  out.config = t.config;
  out.inputs.tokens = t.tokens;
  const core::Stage* x = t.find(core::stage_id::inputs);
  out.inputs.embeddings = x ? x->data() : s.inputs.embeddings;
  if (t.explicit_weights) {
    // The trace ran with explicit weights: the ones held now, if they still fit it.
    if (!s.explicit_parameters ||
        !core::validate_parameters(*s.explicit_parameters, t.config, t.d_in).empty())
      return std::nullopt;
    out.weights = *s.explicit_parameters;
  }
  if (!core::validate(out.config, out.inputs).empty()) return std::nullopt;
  return out;
}

// Folder names and paths may be any bytes on Linux; JSON text must be UTF-8:
// invalid sequences become U+FFFD instead of failing the save.
std::string dump_view(const json& view) {
  return view.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string session_view_json(const AppState& s) { return dump_view(view_of(s)); }

core::Session session_document(const AppState& s) {
  json view = view_of(s);
  core::Session doc;
  if (runs_as_is(s)) {
    doc.config = s.config;
    doc.inputs = s.inputs;
    if (s.explicit_parameters) doc.weights = *s.explicit_parameters;
  } else {
    // Mid-edit: the last good run as "run", the edits as the view's draft.
    if (auto last = session_of_trace(s)) {
      doc = std::move(*last);
    } else {
      doc.inputs = *core::find_preset("book");
      doc.config = core::Config{};
    }
    view["draft"] = run_document(s);
  }
  doc.view_json = dump_view(view);
  return doc;
}

std::string session_text(const core::Session& doc) {
  const json out = json::parse(core::session_json(doc));
  return out.dump(1) + "\n";
}

std::string session_json(const AppState& s) { return session_text(session_document(s)); }

// ---------------------------------------------------------------------------
// Fingerprint

namespace {

// Eight bytes at a time: h = (h ^ word) * odd; h ^= h >> 32. Both steps are
// bijections, so a change in any one word always changes the result.
class Hasher {
 public:
  void word(std::uint64_t w) {
    h_ = (h_ ^ w) * 0x9E3779B97F4A7C15ull;
    h_ ^= h_ >> 32;
  }
  void bytes(const void* data, std::size_t n) {
    word(n);
    const auto* p = static_cast<const unsigned char*>(data);
    for (; n >= 8; n -= 8, p += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, 8);
      word(w);
    }
    std::uint64_t tail = 0;
    if (n > 0) std::memcpy(&tail, p, n);  // an empty matrix's data() may be null
    word(tail);
  }
  void text(std::string_view t) { bytes(t.data(), t.size()); }
  void matrix(const core::RowMatrix& m) {
    word(static_cast<std::uint64_t>(m.rows()));
    word(static_cast<std::uint64_t>(m.cols()));
    bytes(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
  }
  void projection(const core::Projection& p) {
    matrix(p.weight);
    matrix(p.bias);
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0x243F6A8885A308D3ull;
};

}  // namespace

std::uint64_t session_fingerprint(const AppState& s) {
  // Keep in step with session_document: the view, the run as edited, the
  // explicit weights, and (for a run that does not validate) the trace that
  // supplies the last good run.
  Hasher h;
  h.text(session_view_json(s));
  h.word(s.inputs.tokens.size());
  for (const auto& t : s.inputs.tokens) h.text(t);
  h.matrix(s.inputs.embeddings);
  const core::Config& c = s.config;
  h.word(static_cast<std::uint64_t>(c.variant));
  h.word(static_cast<std::uint64_t>(c.d_out));
  h.word(static_cast<std::uint64_t>(c.num_heads));
  h.bytes(&c.dropout, sizeof c.dropout);
  h.word(c.seed);
  h.word((c.qkv_bias ? 1u : 0u) | (c.training ? 2u : 0u) | (c.rope ? 4u : 0u));
  h.word(static_cast<std::uint64_t>(c.num_kv_groups));
  h.word(static_cast<std::uint64_t>(c.window.value_or(-1)));
  h.word(static_cast<std::uint64_t>(c.latent_dim.value_or(-1)));
  h.bytes(&c.rope_theta, sizeof c.rope_theta);
  for (const auto& t : s.inputs.memory_tokens) h.text(t);
  h.matrix(s.inputs.memory);
  if (const auto& p = s.explicit_parameters) {
    h.word(p->qkv.size());
    for (const auto& q : p->qkv) {
      h.projection(q.query);
      h.projection(q.key);
      h.projection(q.value);
    }
    h.projection(p->out);
  } else {
    h.word(0xFFFFFFFFull);
  }
  if (!runs_as_is(s)) h.word(s.trace_version);
  return h.value();
}

// ---------------------------------------------------------------------------
// Reading

namespace {

// A session's model source: the settings now; the model itself loads on its
// thread (AppState::poll_model_loader). A model that is gone gives the
// chapter-3 classes and a banner that says so.
void apply_model_view(ModelState from, bool model_source, AppState& state) {
  ModelState& m = state.model;
  m.path = std::move(from.path);
  m.config = std::move(from.config);
  m.typed.text = std::move(from.typed.text);
  m.layer = from.layer;
  m.view = from.view;
  m.query = from.query;
  m.next_at = from.next_at;
  m.recent = std::move(from.recent);
  m.pattern = from.pattern;
  m.overview.reset();
  if (!model_source || m.path.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(m.path, ec)) {
    state.ui.session_warning = "The session's model " + m.path +
                               " is not there any more: showing the chapter-3 classes. Open a "
                               "model from the Source menu (Trained model).";
    return;
  }
  state.source = Source::Model;
  m.encode_text();  // the chips while the model loads (GPT-2's tokenizer until then)
  state.open_model(m.path);
  m.restoring = true;
}

// A run that did not validate when it was saved: restored as it was.
void read_draft(const json& draft, std::string_view source, core::Inputs& inputs,
                core::Config& config) {
  const core::RunSpec spec = core::parse_run_spec(draft.dump(), source);
  if (!spec.tokens || !spec.embeddings) throw SessionError("the draft has no tokens or embeddings");
  if (static_cast<Eigen::Index>(spec.tokens->size()) != spec.embeddings->rows())
    throw SessionError("the draft's token count does not match its embeddings");
  inputs = core::Inputs{*spec.tokens, *spec.embeddings,
                        spec.memory_tokens.value_or(std::vector<std::string>{}),
                        spec.memory_embeddings.value_or(core::RowMatrix())};
  core::apply_config_fields(spec, config);
}

// The view's pinned cell.
CellRef read_pinned(const json& p) {
  return CellRef{p.at("stage").get<std::string>(), p.at("head").get<int>(), p.at("row").get<int>(),
                 p.at("col").get<int>()};
}

// What made a session's inputs, for sessions from before they said so: the
// draw of the input seed, the typed text's embeddings, the preset, or else
// a hand's. Compares the values (the draws are serial: the first value
// decides most cases without drawing them all).
InputOrigin recognised_origin(const AppState& s) {
  const core::RowMatrix& x = s.inputs.embeddings;
  const auto T = x.rows();
  const auto D = x.cols();
  if (T >= 1 && T <= core::kMaxTokens && D >= 1 && D <= core::kMaxDim &&
      core::random_inputs(1, 1, s.input_seed).embeddings(0, 0) == x(0, 0) &&
      core::random_inputs(static_cast<int>(T), static_cast<int>(D), s.input_seed).embeddings == x)
    return InputOrigin::Random;
  try {
    const TextSource& t = s.text_source;
    const core::Inputs made =
        core::chapter2_inputs(core::tokenize_text(t.typed.text, t.d_in, t.seed, t.positions));
    if (made.tokens == s.inputs.tokens && made.embeddings.rows() == T &&
        made.embeddings.cols() == D && made.embeddings == x)
      return InputOrigin::Text;
  } catch (const std::exception&) {
    // settings that cannot be embedded made nothing on screen
  }
  const std::optional<core::Inputs> preset = core::find_preset(s.preset);
  if (preset && preset->embeddings.rows() == T && preset->embeddings.cols() == D &&
      preset->embeddings == x)
    return InputOrigin::Preset;
  return InputOrigin::Edited;
}

// The session's source: the view's; sessions from before typed text was a
// source saved "chapter3" or "model" with the model's settings.
Source saved_source(const json& view) {
  std::string id = view.value("source", std::string());
  if (id.empty() && view.contains("model") && view.at("model").is_object())
    id = view.at("model").value("source", std::string());
  return parse_source(id).value_or(Source::Inputs);
}

// Typed-text settings into `typed` (missing fields keep its values).
void read_text_source(const json& t, TextSource& typed) {
  typed.typed.text = t.value("text", typed.typed.text);
  typed.d_in = std::clamp(t.value("d_in", typed.d_in), 1, core::kMaxDim);
  typed.seed = t.value("seed", typed.seed);
  typed.positions = std::clamp(t.value("positions", typed.positions), 0, core::kMaxTokens);
}

// The view's "ui" object into `ui`; the window, scale and random-input sizes
// only with `preferences`.
void read_ui_view(const json& u, UiState& ui, bool preferences) {
  ui.palette = parse_palette(u.value("palette", std::string("standard")));
  ui.show_values = u.value("show_values", true);
  // "auto", "on" or "off"; sessions from before Auto saved true or false
  // (on or off), and those from before the setting nothing (auto).
  ui.row_scale = figure::RowScale::Auto;
  if (u.contains("row_scale")) {
    const json& rs = u.at("row_scale");
    if (rs.is_boolean())
      ui.row_scale = rs.get<bool>() ? figure::RowScale::On : figure::RowScale::Off;
    else if (rs.is_string())
      ui.row_scale =
          figure::parse_row_scale(rs.get<std::string>()).value_or(figure::RowScale::Auto);
  }
  // A session from before the card existed: its learner has used the app.
  ui.welcome_dismissed = u.value("welcome_dismissed", true);
  ui.decimals = std::clamp(u.value("decimals", figure::kBookDecimals), figure::kMinDecimals,
                           figure::kMaxDecimals);
  if (preferences) {
    ui.ui_scale = std::clamp(u.value("ui_scale", 1.0f), 0.5f, 3.0f);
    if (u.contains("window") && u["window"].is_array() && u["window"].size() == 2) {
      ui.window_width = std::clamp(u["window"][0].get<int>(), 320, 16384);
      ui.window_height = std::clamp(u["window"][1].get<int>(), 240, 16384);
    }
    ui.random_tokens = std::clamp(u.value("random_tokens", ui.random_tokens), 1, core::kMaxTokens);
    ui.random_dims = std::clamp(u.value("random_dims", ui.random_dims), 1, core::kMaxDim);
  }
}

// The view's "files" object: the export preferences into `prefs`, and the
// file the explicit weights came from into `weights_from`.
void read_files_view(const json& f, FilesState& prefs, std::string& weights_from) {
  prefs.export_folder = f.value("export_folder", std::string());
  prefs.recent_folders = f.value("recent_folders", std::vector<std::string>{});
  if (prefs.recent_folders.size() > FilesState::kMaxRecent)
    prefs.recent_folders.resize(FilesState::kMaxRecent);
  prefs.last_folder = f.value("last_folder", std::string());
  const int scale = f.value("png_scale", 2);
  prefs.png_scale = scale == 1 || scale == 4 ? scale : 2;
  prefs.all_format = core::parse_data_format(f.value("all_format", std::string("npy")))
                         .value_or(core::DataFormat::Npy);
  if (prefs.all_format == core::DataFormat::Torch) prefs.all_format = core::DataFormat::Npy;
  // Sessions from before themes have none: the figures' look then, light.
  prefs.theme =
      figure::parse_theme(f.value("theme", std::string())).value_or(figure::kDefaultTheme);
  prefs.native_dialogs = f.value("desktop_dialogs", true);
  weights_from = f.value("weights_from", std::string());
}

// The session's explicit weights (none: the run's own), and the file they
// came from.
void apply_session_weights(std::optional<core::Parameters>& weights, std::string_view source,
                           const std::string& weights_from, AppState& state) {
  state.explicit_parameters.reset();
  state.files.imported.reset();
  state.files.imported_from.clear();
  if (weights) {
    auto p = std::make_shared<const core::Parameters>(std::move(*weights));
    state.explicit_parameters = p;
    state.files.imported = p;
    state.files.imported_from = weights_from.empty() ? std::string(source) : weights_from;
  }
}

// The export preferences read by read_files_view.
void apply_files_prefs(FilesState& prefs, FilesState& files) {
  files.export_folder = std::move(prefs.export_folder);
  files.recent_folders = std::move(prefs.recent_folders);
  files.last_folder = std::move(prefs.last_folder);
  files.png_scale = prefs.png_scale;
  files.all_format = prefs.all_format;
  files.theme = prefs.theme;
  files.native_dialogs = prefs.native_dialogs;
}

}  // namespace

void apply_session_json(std::string_view text, std::string_view source, AppState& state,
                        SessionScope scope) {
  core::Session doc;
  try {
    doc = core::parse_session(text, source);
  } catch (const core::ParseError& e) {
    throw SessionError(e.what());
  }
  try {
    const json view = json::parse(doc.view_json);
    core::Inputs inputs = std::move(doc.inputs);
    core::Config config = doc.config;
    if (view.contains("draft")) read_draft(view.at("draft"), source, inputs, config);

    // stage-literals: off (a step name)
    const auto step = parse_step(view.value("stage", std::string("inputs")));
    // stage-literals: on
    CellRef pinned;
    if (view.contains("pinned")) pinned = read_pinned(view.at("pinned"));
    // Sessions before the inputs had a seed of their own have none: the default.
    const std::uint64_t input_seed = view.value("input_seed", core::kDefaultInputSeed);
    // Typed-text settings (sessions before them have none: the defaults).
    TextSource typed;
    if (view.contains("text")) read_text_source(view.at("text"), typed);
    UiState ui = state.ui;
    FilesState files_prefs;
    if (view.contains("ui")) read_ui_view(view.at("ui"), ui, scope.preferences);
    std::string weights_from;
    if (view.contains("files")) read_files_view(view.at("files"), files_prefs, weights_from);

    ModelState model_view;  // only its settings: never a model
    model_view.recent = state.model.recent;
    if (view.contains("model")) read_model_view(view.at("model"), model_view, scope.preferences);

    // Everything parsed: apply.
    state.inputs = std::move(inputs);
    state.config = config;
    apply_session_weights(doc.weights, source, weights_from, state);
    state.preset = view.value("preset", std::string("book"));
    state.step = step.value_or(Step::Inputs);
    state.head = std::max(0, view.value("head", 0));
    state.pinned = pinned;
    state.input_seed = input_seed;
    state.text_source = std::move(typed);
    const std::optional<InputOrigin> origin =
        parse_input_origin(view.value("origin", std::string()));
    state.origin = origin ? *origin : recognised_origin(state);
    if (state.origin == InputOrigin::Text)
      state.text_source.typed.encode(core::Gpt2Tokenizer::builtin());  // for the chips
    state.source = state.chapter3_source();  // the model's once its file is found
    state.ui = std::move(ui);
    if (scope.preferences) apply_files_prefs(files_prefs, state.files);
    // After ui: it may raise a banner.
    apply_model_view(std::move(model_view), saved_source(view) == Source::Model, state);
    state.mark_dirty();
  } catch (const core::ParseError& e) {
    throw SessionError(e.what());
  } catch (const SessionError& e) {
    throw SessionError(std::string(source) + ": " + e.what());
  } catch (const json::exception&) {
    throw SessionError(std::string(source) + ": the view has a missing or mistyped field");
  }
}

// ---------------------------------------------------------------------------
// Files

std::string write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  try {
    if (path.has_parent_path()) core::ensure_folder(path.parent_path());
    core::write_file_atomic(path, text, core::Overwrite::Replace);
    return {};
  } catch (const core::FileError& e) {
    return e.what();
  }
}

namespace {

// Reads the top-level "attnscope_session" value without building the
// document: a SAX pass that stops as soon as it has it.
class VersionReader : public nlohmann::json_sax<json> {
 public:
  std::optional<long long> version;

  bool null() override { return value_seen(); }
  bool boolean(bool) override { return value_seen(); }
  bool number_integer(number_integer_t v) override {
    return want_ ? found(static_cast<long long>(v)) : value_seen();
  }
  bool number_unsigned(number_unsigned_t v) override {
    const auto most = static_cast<number_unsigned_t>(std::numeric_limits<long long>::max());
    return want_ ? found(static_cast<long long>(std::min(v, most))) : value_seen();
  }
  bool number_float(number_float_t, const string_t&) override { return value_seen(); }
  bool string(string_t&) override { return value_seen(); }
  bool binary(binary_t&) override { return value_seen(); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) top_is_object_ = true;
    want_ = false;
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    want_ = depth_ == 1 && k == "attnscope_session";
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    want_ = false;
    ++depth_;
    return depth_ > 1 || top_is_object_;  // a top-level list is no session
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool value_seen() {
    want_ = false;
    return true;
  }
  bool found(long long v) {
    version = v;
    return false;  // stop: nothing else is needed
  }
  int depth_ = 0;
  bool want_ = false;
  bool top_is_object_ = false;
};

}  // namespace

std::optional<long long> session_version(std::string_view text) {
  VersionReader reader;
  try {
    (void)json::sax_parse(text.begin(), text.end(), &reader);
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return reader.version;
}

SessionRestore load_session(const std::filesystem::path& file, AppState& state, bool set_aside) {
  namespace fs = std::filesystem;
  SessionRestore out;
  std::error_code ec;
  if (!fs::exists(file, ec)) return out;
  try {
    std::string text = core::read_import_file(file);
    const std::optional<long long> version = session_version(text);
    if (version && *version > core::kSessionVersion) {
      out.newer_version = true;
      out.warning = "Your last session " + file.string() +
                    " was saved by a newer attnscope (session format " + std::to_string(*version) +
                    "; this attnscope reads format " + std::to_string(core::kSessionVersion) +
                    ") and could not be restored. ";
    } else {
      apply_session_json(text, file.string(), state);
      out.text = std::move(text);
      return out;
    }
  } catch (const std::exception& e) {
    // Name the file once, and the problem without the parsers' "<file>: ".
    std::string problem = e.what();
    if (const std::string prefix = file.string() + ": "; problem.starts_with(prefix))
      problem.erase(0, prefix.size());
    out.warning =
        "Your last session " + file.string() + " could not be restored (" + problem + "). ";
  }
  if (!set_aside) {
    out.warning += "attnscope started from the defaults.";
    return out;
  }
  try {
    out.set_aside_as = core::move_aside(file, ".bak");
    out.warning +=
        "It was kept as " + out.set_aside_as.string() + " and attnscope started from the defaults.";
    if (out.newer_version) out.warning += " Open it with the newer attnscope.";
  } catch (const core::FileError& e) {
    out.may_save = false;
    out.warning += std::string("It could not be set aside (") + e.what() +
                   "), so attnscope started from the defaults and will not save this session "
                   "over it.";
  }
  return out;
}

std::string save_session(const std::filesystem::path& file, const AppState& state) {
  try {
    return write_file_atomic(file, session_json(state));
  } catch (const std::exception& e) {  // core::ParseError: cannot happen for a validated run
    return e.what();
  }
}

}  // namespace attnscope::gui
