// session.cpp: session documents on core's format, the draft of a run that
// does not validate, setting corrupt files aside.
//
// Sections: the view object / writing / reading / files.
#include "session.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "attnscope/files.hpp"
#include "attnscope/io.hpp"
#include "attnscope/weights.hpp"
#include "export/files.hpp"

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

json view_of(const AppState& s) {
  json view;
  view["preset"] = s.preset;
  view["stage"] = std::string(step_id(s.step));
  view["head"] = s.head;
  if (s.pinned.valid())
    view["pinned"] = {{"stage", s.pinned.stage},
                      {"head", s.pinned.head},
                      {"row", s.pinned.row},
                      {"col", s.pinned.col}};
  view["ui"] = {{"palette", std::string(palette_id(s.ui.palette))},
                {"show_values", s.ui.show_values},
                {"ui_scale", s.ui.ui_scale},
                {"window", {s.ui.window_width, s.ui.window_height}},
                {"random_seed", s.ui.random_seed},
                {"random_tokens", s.ui.random_tokens},
                {"random_dims", s.ui.random_dims}};
  const FilesState& f = s.files;
  json files = {{"export_folder", f.export_folder.string()},
                {"recent_folders", f.recent_folders},
                {"last_folder", f.last_folder},
                {"png_scale", f.png_scale},
                {"all_format", std::string(core::format_id(f.all_format))}};
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
  run["embeddings"] = std::move(rows);
  run["variant"] = std::string(core::variant_id(s.config.variant));
  run["d_out"] = s.config.d_out;
  run["num_heads"] = s.config.num_heads;
  run["dropout"] = s.config.dropout;
  run["seed"] = s.config.seed;
  run["qkv_bias"] = s.config.qkv_bias;
  run["training"] = s.config.training;
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
  const core::Stage* x = t.find("inputs");
  out.inputs.embeddings = x ? x->data : s.inputs.embeddings;
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

std::string session_view_json(const AppState& s) { return view_of(s).dump(); }

std::string session_json(const AppState& s) {
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
  doc.view_json = view.dump();
  json out = json::parse(core::session_json(doc));
  return out.dump(1) + "\n";
}

// ---------------------------------------------------------------------------
// Reading

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
    if (view.contains("draft")) {
      // A run that did not validate when it was saved: restored as it was.
      const core::RunSpec spec = core::parse_run_spec(view.at("draft").dump(), source);
      if (!spec.tokens || !spec.embeddings)
        throw SessionError("the draft has no tokens or embeddings");
      if (static_cast<Eigen::Index>(spec.tokens->size()) != spec.embeddings->rows())
        throw SessionError("the draft's token count does not match its embeddings");
      inputs = core::Inputs{*spec.tokens, *spec.embeddings};
      core::apply_config_fields(spec, config);
    }

    const auto step = parse_step(view.value("stage", std::string("inputs")));
    CellRef pinned;
    if (view.contains("pinned")) {
      const json& p = view.at("pinned");
      pinned = CellRef{p.at("stage").get<std::string>(), p.at("head").get<int>(),
                       p.at("row").get<int>(), p.at("col").get<int>()};
    }
    UiState ui = state.ui;
    FilesState files_prefs;
    if (view.contains("ui")) {
      const json& u = view.at("ui");
      ui.palette = parse_palette(u.value("palette", std::string("standard")));
      ui.show_values = u.value("show_values", true);
      if (scope.preferences) {
        ui.ui_scale = std::clamp(u.value("ui_scale", 1.0f), 0.5f, 3.0f);
        if (u.contains("window") && u["window"].is_array() && u["window"].size() == 2) {
          ui.window_width = std::clamp(u["window"][0].get<int>(), 320, 16384);
          ui.window_height = std::clamp(u["window"][1].get<int>(), 240, 16384);
        }
        ui.random_seed = u.value("random_seed", ui.random_seed);
        ui.random_tokens =
            std::clamp(u.value("random_tokens", ui.random_tokens), 1, core::kMaxTokens);
        ui.random_dims = std::clamp(u.value("random_dims", ui.random_dims), 1, core::kMaxDim);
      }
    }
    std::string weights_from;
    if (view.contains("files")) {
      const json& f = view.at("files");
      files_prefs.export_folder = f.value("export_folder", std::string());
      files_prefs.recent_folders = f.value("recent_folders", std::vector<std::string>{});
      if (files_prefs.recent_folders.size() > FilesState::kMaxRecent)
        files_prefs.recent_folders.resize(FilesState::kMaxRecent);
      files_prefs.last_folder = f.value("last_folder", std::string());
      const int scale = f.value("png_scale", 2);
      files_prefs.png_scale = scale == 1 || scale == 4 ? scale : 2;
      files_prefs.all_format = core::parse_data_format(f.value("all_format", std::string("npy")))
                                   .value_or(core::DataFormat::Npy);
      if (files_prefs.all_format == core::DataFormat::Torch)
        files_prefs.all_format = core::DataFormat::Npy;
      weights_from = f.value("weights_from", std::string());
    }

    // Everything parsed: apply.
    state.inputs = std::move(inputs);
    state.config = config;
    state.explicit_parameters.reset();
    state.files.imported.reset();
    state.files.imported_from.clear();
    if (doc.weights) {
      auto p = std::make_shared<const core::Parameters>(std::move(*doc.weights));
      state.explicit_parameters = p;
      state.files.imported = p;
      state.files.imported_from = weights_from.empty() ? std::string(source) : weights_from;
    }
    state.preset = view.value("preset", std::string("book"));
    state.step = step.value_or(Step::Inputs);
    state.head = std::max(0, view.value("head", 0));
    state.pinned = pinned;
    state.ui = std::move(ui);
    if (scope.preferences) {
      state.files.export_folder = std::move(files_prefs.export_folder);
      state.files.recent_folders = std::move(files_prefs.recent_folders);
      state.files.last_folder = std::move(files_prefs.last_folder);
      state.files.png_scale = files_prefs.png_scale;
      state.files.all_format = files_prefs.all_format;
    }
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

std::string load_session(const std::filesystem::path& file, AppState& state, bool set_aside) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  try {
    const std::string text = core::read_import_file(file);
    apply_session_json(text, file.string(), state);
    return {};
  } catch (const std::exception& e) {
    std::string warning =
        std::string("Your last session could not be restored (") + e.what() + "). ";
    if (!set_aside) return warning + "attnscope started from the defaults.";
    const fs::path bak = file.string() + ".bak";
    fs::rename(file, bak, ec);
    warning += ec ? "attnscope started from the defaults."
                  : "It was moved to " + bak.string() + " and attnscope started from the defaults.";
    return warning;
  }
}

std::string save_session(const std::filesystem::path& file, const AppState& state) {
  try {
    return write_file_atomic(file, session_json(state));
  } catch (const std::exception& e) {  // core::ParseError: cannot happen for a validated run
    return e.what();
  }
}

}  // namespace attnscope::gui
