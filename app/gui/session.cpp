// session.cpp: session JSON, atomic writes, setting corrupt files aside.
#include "session.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "attnscope/io.hpp"

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

std::string session_json(const AppState& s) {
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

  // The layout of core's session files (core/include/attnscope/session.hpp):
  // the run as a config document, the GUI's own state under "view".
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
  json doc;
  doc["attnscope_session"] = 1;
  doc["run"] = std::move(run);
  doc["view"] = std::move(view);
  return doc.dump(1) + "\n";
}

void apply_session_json(std::string_view text, std::string_view source, AppState& state) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    throw SessionError(std::string(source) + " is not valid JSON");
  }
  if (!doc.is_object() || doc.value("attnscope_session", 0) != 1)
    throw SessionError(std::string(source) + " is not an attnscope session");
  try {
    // The run part uses the config-file format, so core checks every field.
    const json& run = doc.at("run");
    const core::RunSpec spec = core::parse_run_spec(run.dump(), source);
    if (!spec.tokens || !spec.embeddings) throw SessionError("no tokens or embeddings");
    if (static_cast<Eigen::Index>(spec.tokens->size()) != spec.embeddings->rows())
      throw SessionError("token count does not match the embeddings");

    core::Inputs inputs{*spec.tokens, *spec.embeddings};
    core::Config config;
    if (spec.variant) config.variant = *spec.variant;
    if (spec.d_out) config.d_out = *spec.d_out;
    if (spec.num_heads) config.num_heads = *spec.num_heads;
    if (spec.dropout) config.dropout = *spec.dropout;
    if (spec.seed) config.seed = *spec.seed;
    if (spec.qkv_bias) config.qkv_bias = *spec.qkv_bias;
    if (spec.training) config.training = *spec.training;

    static const json kEmpty = json::object();
    const json& view = doc.contains("view") ? doc.at("view") : kEmpty;
    if (!view.is_object()) throw SessionError("\"view\" must be an object");
    const auto step = parse_step(view.value("stage", std::string("inputs")));
    CellRef pinned;
    if (view.contains("pinned")) {
      const json& p = view.at("pinned");
      pinned = CellRef{p.at("stage").get<std::string>(), p.at("head").get<int>(),
                       p.at("row").get<int>(), p.at("col").get<int>()};
    }
    UiState ui = state.ui;
    if (view.contains("ui")) {
      const json& u = view.at("ui");
      ui.palette = parse_palette(u.value("palette", std::string("standard")));
      ui.show_values = u.value("show_values", true);
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

    // Everything parsed: apply.
    state.inputs = std::move(inputs);
    state.config = config;
    state.preset = view.value("preset", std::string("book"));
    state.step = step.value_or(Step::Inputs);
    state.head = std::max(0, view.value("head", 0));
    state.pinned = pinned;
    state.ui = std::move(ui);
    state.mark_dirty();
  } catch (const core::ParseError& e) {
    throw SessionError(e.what());
  } catch (const SessionError& e) {
    throw SessionError(std::string(source) + ": " + e.what());
  } catch (const json::exception&) {
    throw SessionError(std::string(source) + " has a missing or mistyped field");
  }
}

std::string write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return "cannot create " + path.parent_path().string() + ": " + ec.message();
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot write " + tmp.string() + ": " + std::strerror(errno);
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      fs::remove(tmp, ec);
      return "cannot write " + tmp.string() + ": " + why;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // Data on disk before the rename makes it visible: a crash leaves the old
  // file or the new one, never half of one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    fs::remove(tmp, ec);
    return "cannot write " + tmp.string() + ": " + std::strerror(errno);
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot replace " + path.string() + ": " + ec.message();
  }
  return {};
}

std::string load_session(const std::filesystem::path& file, AppState& state, bool set_aside) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::string text;
  try {
    text = core::read_text_file(file.string());
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
  return write_file_atomic(file, session_json(state));
}

}  // namespace attnscope::gui
