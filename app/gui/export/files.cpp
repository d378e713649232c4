// files.cpp: the app's file operations (see files.hpp).
//
// Sections: folders and notices / one stage / every stage / imports /
// sessions / screenshots / --export-png.
#include "export/files.hpp"

#include <algorithm>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "attnscope/analysis/thumbnail.hpp"
#include "attnscope/book/pytorch_code.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/model/model_script.hpp"
#include "export/export_job.hpp"
#include "export/png.hpp"
#include "figure/stage_figure.hpp"
#include "figure/svg.hpp"
#include "state/session.hpp"
#include "state/view_scale.hpp"

namespace attnscope::gui {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Folders and notices

std::string_view export_extension(ExportKind k) {
  switch (k) {
    case ExportKind::Png:
      return ".png";
    case ExportKind::Svg:
      return ".svg";
    case ExportKind::Csv:
      return core::format_extension(core::DataFormat::Csv);
    case ExportKind::Npy:
      return core::format_extension(core::DataFormat::Npy);
    case ExportKind::Json:
      return core::format_extension(core::DataFormat::Json);
  }
  return ".bin";
}

fs::path export_folder(const AppState& state) {
  if (!state.files.export_folder.empty()) return state.files.export_folder;
  return core::default_export_folder();
}

void remember_folder(AppState& state, const fs::path& folder) {
  if (folder.empty()) return;
  auto& recent = state.files.recent_folders;
  const std::string f = folder.lexically_normal().string();
  recent.erase(std::remove(recent.begin(), recent.end(), f), recent.end());
  recent.insert(recent.begin(), f);
  if (recent.size() > FilesState::kMaxRecent) recent.resize(FilesState::kMaxRecent);
  state.files.last_folder = f;
}

figure::FigureStyle figure_style(const AppState& state, const core::Trace& trace,
                                 const core::Stage& stage) {
  return figure::FigureStyle{state.ui.palette,  state.ui.show_values,
                             state.ui.unicode,  heatmap_scope(state, trace, stage),
                             state.ui.decimals, state.files.theme};
}

void notify(AppState& state, std::string message, std::string path, bool error) {
  Notice& n = state.files.notice;
  const std::uint64_t serial = n.serial + 1;
  n = Notice{std::move(message), std::move(path), error, serial,
             error ? Notice::kErrorSeconds : Notice::kSeconds};
}

namespace {

// The folder exports go to, ready to write: the default one is created when
// missing; a chosen one must exist (a typo should not create folders).
fs::path ready_export_folder(const AppState& state) {
  const fs::path dir = export_folder(state);
  if (dir.empty())
    throw core::FileError("no export folder: HOME is not set; choose one in File > Export folder");
  if (state.files.export_folder.empty())
    core::ensure_folder(dir);
  else
    core::require_folder(dir);
  return dir;
}

core::DataFormat data_format_of(ExportKind k) {
  switch (k) {
    case ExportKind::Csv:
      return core::DataFormat::Csv;
    case ExportKind::Json:
      return core::DataFormat::Json;
    default:
      return core::DataFormat::Npy;
  }
}

// The class's id, or the model's name, for file names.
std::string variant_of(const core::Trace& t) { return t.producer(); }

// A stage's file name: <stage>[_h<head>]_<variant> for the chapter-3
// classes, and as attnscope-cli model export names them for a model,
// <stage>_l<layer>[_h<head>]_<model>.
std::string stage_stem(const core::Trace& t, const core::Stage& stage,
                       std::chrono::system_clock::time_point now) {
  if (t.model.empty()) return core::export_stem(stage.id, stage.head, variant_of(t), now);
  return core::export_stem(stage.id + "_l" + std::to_string(stage.layer), stage.head, t.model, now);
}

std::string png_bytes(const AppState& state, const core::Trace& trace, const core::Stage& stage,
                      int scale) {
  if (!state.files.render_png)
    throw std::runtime_error("PNG export needs the app's window (OpenGL); export SVG instead");
  const RenderedImage img = state.files.render_png(
      figure::stage_heatmap(trace, stage, figure_style(state, trace, stage)), scale);
  std::string bytes = encode_png(img.width, img.height, img.rgba);
  if (bytes.empty()) throw std::runtime_error("the PNG could not be encoded");
  return bytes;
}

}  // namespace

// ---------------------------------------------------------------------------
// One stage

std::string stage_bytes(const AppState& state, const core::Trace& trace, const core::Stage& stage,
                        ExportKind kind, int scale) {
  switch (kind) {
    case ExportKind::Png:
      return png_bytes(state, trace, stage, scale);
    case ExportKind::Svg: {
      const int rows = static_cast<int>(stage.data().rows()),
                cols = static_cast<int>(stage.data().cols());
      if (!figure::svg_supported(rows, cols))
        throw std::runtime_error(stage.id + " is " + std::to_string(rows) + " × " +
                                 std::to_string(cols) + ", too large for SVG (at most " +
                                 std::to_string(figure::kMaxSvgCells) +
                                 " cells): export it as PNG, NPY or CSV");
      return figure::heatmap_svg(
          figure::stage_heatmap(trace, stage, figure_style(state, trace, stage)));
    }
    default:
      return core::stage_file_bytes(trace, stage, data_format_of(kind));
  }
}

namespace {

// Writes what `bytes` makes into the export folder as <stem(now)>.<ext>
// (never over a file) and says so in the notice; a failure anywhere is the
// notice instead, and nullopt.
std::optional<fs::path> save_export(
    AppState& state, ExportKind kind,
    const std::function<std::string(std::chrono::system_clock::time_point)>& stem,
    const std::function<std::string()>& bytes) {
  const auto now = std::chrono::system_clock::now();
  try {
    const std::string data = bytes();
    const fs::path dir = ready_export_folder(state);
    const fs::path path = core::write_new_file(dir, stem(now), export_extension(kind), data);
    remember_folder(state, dir);
    notify(state, "Saved " + path.filename().string(), path.string(), false);
    return path;
  } catch (const std::exception& e) {
    notify(state, std::string("Export failed: ") + e.what(), "", true);
    return std::nullopt;
  }
}

}  // namespace

std::optional<fs::path> export_stage(AppState& state, const core::Stage& stage, ExportKind kind,
                                     int scale) {
  if (!state.trace) return std::nullopt;
  const std::shared_ptr<const core::Trace> trace = state.trace;  // the stage lives in it
  return save_export(
      state, kind, [&](auto now) { return stage_stem(*trace, stage, now); },
      [&] { return stage_bytes(state, *trace, stage, kind, scale); });
}

// ---------------------------------------------------------------------------
// The model view

figure::HeadGrid model_view_figure(const AppState& state, int max_cells) {
  const ModelState& m = state.model;
  if (!m.overview || !state.showing_model() || !m.is_open())
    throw std::runtime_error("there is no model view on screen");
  const ModelOverview& o = *m.overview;
  figure::HeadGrid g;
  g.layers = o.layers;
  g.heads = o.heads;
  g.title = m.model_name() + ": attention of every head (" + std::to_string(o.layers) +
            " layers × " + std::to_string(o.heads) + " heads)";
  g.subtitle = figure::run_subtitle(*state.trace);
  if (m.pattern.kind && m.pattern.sort)
    g.subtitle += "; each layer's heads sorted by " +
                  std::string(core::pattern_name(*m.pattern.kind)) +
                  ", highest first (the number: the head)";
  for (const core::Stage& t : o.thumbs)
    g.maps.push_back(t.data().rows() > max_cells ? core::downsample_max(t.data(), max_cells)
                                                 : t.data());
  if (m.pattern.kind && m.pattern.sort)
    for (int l = 0; l < o.layers; ++l) g.order.push_back(heads_in_order(o, l, m.pattern));
  g.palette = state.ui.palette;
  g.scope = state.ui.row_scale == figure::RowScale::Off ? figure::ScaleScope::Matrix
                                                        : figure::ScaleScope::Row;
  g.unicode = state.ui.unicode;
  g.theme = state.files.theme;
  return g;
}

namespace {

std::string model_view_bytes(const AppState& state, ExportKind kind, int scale) {
  if (kind == ExportKind::Svg) {
    // One element per cell: 32 cells a side keep 12 x 12 heads under SVG's cell limit.
    const figure::Scene sc = figure::layout_head_grid(model_view_figure(state, 32));
    if (!figure::svg_supported(sc.grid.rows(), sc.grid.cols()))
      throw std::runtime_error("this model has too many heads for one SVG; export PNG");
    return figure::scene_svg(sc);
  }
  if (kind != ExportKind::Png) throw std::runtime_error("the model view exports as PNG or SVG");
  if (!state.files.render_grid_png)
    throw std::runtime_error("PNG export needs the app's window (OpenGL); export SVG instead");
  const RenderedImage img =
      state.files.render_grid_png(model_view_figure(state, kThumbnailCells), scale);
  std::string bytes = encode_png(img.width, img.height, img.rgba);
  if (bytes.empty()) throw std::runtime_error("the PNG could not be encoded");
  return bytes;
}

}  // namespace

std::optional<fs::path> export_model_view(AppState& state, ExportKind kind, int scale) {
  const std::string model = state.model.is_open() ? state.model.model_name() : "model";
  return save_export(
      state, kind,
      // stage-literals: off (a file name, not a stage)
      [&](auto now) { return core::export_stem("model_view", -1, model, now); },
      // stage-literals: on
      [&] { return model_view_bytes(state, kind, scale); });
}

// ---------------------------------------------------------------------------
// The run as PyTorch code

namespace {

// The files the model on screen came from, as its load found them.
core::ModelFiles model_files(const AppState& state) {
  const ModelState& m = state.model;
  return core::locate_model(
      m.model_path, m.config.empty() ? std::nullopt : std::optional<fs::path>(fs::path(m.config)));
}

// The head of the trace on screen the script prints (the focused one).
int model_script_head(const AppState& state) {
  return std::clamp(state.head, 0, std::max(state.trace->heads_shown() - 1, 0));
}

// The model run on screen as the book's GPTModel script.
std::string model_pytorch_script(const AppState& state) {
  const ModelState& m = state.model;
  if (!m.overview || m.overview->ids.empty())
    throw std::runtime_error("the model's run is not on screen yet; try again in a moment");
  core::ModelScriptRun run;
  run.ids = m.overview->ids;
  run.layer = state.trace->layer;
  run.head = model_script_head(state);
  run.top = kModelScriptTop;
  try {
    return core::model_script(*m.model, model_files(state), std::move(run));
  } catch (const core::ParseError& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace

std::optional<std::string> pytorch_script_unavailable(const AppState& state) {
  if (!state.trace) return "there is no run yet";
  if (!state.showing_model()) return std::nullopt;
  if (state.model.family)
    return "the PyTorch script rebuilds the book's GPTModel; " + state.model.model_name() +
           " is a " +
           std::string(core::model_family_name(state.model.family->model->config().family)) +
           " model (its PyTorch classes are the book's ch05 bonus notebooks)";
  if (!state.model.model) return "no model is open";
  try {
    return core::model_script_refusal(model_files(state), state.model.model->format());
  } catch (const core::ParseError& e) {  // the files moved or went since the load
    return std::string(e.what());
  }
}

std::string run_pytorch_script(const AppState& state) {
  if (const auto why = pytorch_script_unavailable(state)) throw std::runtime_error(*why);
  if (state.showing_model()) return model_pytorch_script(state);
  const auto run = session_of_trace(state);  // the run on screen, with its weights
  if (!run)
    throw std::runtime_error(
        "the weights this run used were replaced; wait for the recompute and try again");
  const core::Parameters* weights = run->weights ? &*run->weights : nullptr;
  // Inputs that are still the draw of the input seed are written as the two
  // lines that draw them (checked against the run on screen, which may be
  // older than an edit).
  if (state.origin == InputOrigin::Random) {
    const auto T = static_cast<int>(run->inputs.embeddings.rows());
    const auto D = static_cast<int>(run->inputs.embeddings.cols());
    if (core::random_inputs(T, D, state.input_seed).embeddings == run->inputs.embeddings)
      return core::pytorch_script(run->config, core::RandomInputs{T, D, state.input_seed}, weights);
  }
  return core::pytorch_script(run->config, run->inputs, weights);
}

std::optional<fs::path> save_run_as_python(AppState& state) {
  const auto now = std::chrono::system_clock::now();
  try {
    const std::string script = run_pytorch_script(state);
    const fs::path dir = ready_export_folder(state);
    std::string named = variant_of(*state.trace);
    if (state.showing_model())
      named += "_layer" + std::to_string(state.trace->layer) + "_head" +
               std::to_string(model_script_head(state));
    const fs::path path =
        core::write_new_file(dir, core::export_stem("run", -1, named, now), ".py", script);
    remember_folder(state, dir);
    notify(state,
           "Saved " + path.filename().string() + ": a PyTorch script that prints " +
               pytorch_script_prints(state),
           path.string(), false);
    return path;
  } catch (const std::exception& e) {
    notify(state, std::string("Saving the run as .py failed: ") + e.what(), "", true);
    return std::nullopt;
  }
}

std::string pytorch_script_prints(const AppState& state) {
  if (!state.trace || !state.showing_model()) return "the output";
  return "layer " + std::to_string(state.trace->layer) + " head " +
         std::to_string(model_script_head(state)) + "'s weights and the next tokens";
}

// ---------------------------------------------------------------------------
// Every stage

namespace {

// Every stage of `trace`, in order, with how each is drawn now.
void add_every_stage(const AppState& state, ExportSpec& spec) {
  for (const core::Stage& s : spec.trace->stages) {
    spec.stages.push_back(&s);
    spec.styles.push_back(figure_style(state, *spec.trace, s));
  }
}

}  // namespace

bool start_export_all(AppState& state) {
  if (!state.trace) return false;
  if (state.files.exporting()) {
    notify(state, "An export is running; wait for it or cancel it first", "", true);
    return false;
  }
  ExportSpec spec;
  spec.trace = state.trace;
  spec.time = std::chrono::system_clock::now();
  try {
    // A model's block is reproduced by the app's session (the model's path,
    // the text, the layer); the chapter-3 classes by the run itself.
    spec.session =
        state.showing_model() ? std::optional(session_document(state)) : session_of_trace(state);
    if (!spec.session)
      throw std::runtime_error(
          "the weights this trace ran with were replaced; recompute before exporting");
    spec.session->view_json = session_view_json(state);
    if (!state.files.render_png)
      throw std::runtime_error("PNG export needs the app's window (OpenGL)");
    add_every_stage(state, spec);
    spec.png_scale = state.files.png_scale;
    spec.data = state.files.all_format;
    const fs::path parent = ready_export_folder(state);
    spec.folder = core::create_new_folder(
        parent, "attnscope_" + variant_of(*spec.trace) +
                    (spec.trace->model.empty() ? "" : "_l" + std::to_string(spec.trace->layer)) +
                    "_" + core::timestamp_text(spec.time));
  } catch (const std::exception& e) {
    notify(state, std::string("Export failed: ") + e.what(), "", true);
    return false;
  }
  const fs::path folder = spec.folder;
  try {
    state.files.export_job = std::make_shared<ExportJob>(std::move(spec));
  } catch (const std::exception& e) {  // no thread: the folder is still empty
    std::error_code ec;
    fs::remove_all(folder, ec);
    notify(state, std::string("Export failed: ") + e.what(), "", true);
    return false;
  }
  return true;
}

void poll_export(AppState& state) {
  const std::shared_ptr<ExportJob> job = state.files.export_job;
  if (!job) return;
  if (!job->finished()) job->step(state.files.render_png, state.files.export_budget_ms);
  if (!job->finished()) return;
  const fs::path& dir = job->spec().folder;
  switch (job->status()) {
    case ExportJob::Status::Done:
      remember_folder(state, dir.parent_path());
      notify(state,
             "Exported " + std::to_string(job->progress().done) + " files (" +
                 std::to_string(job->spec().stages.size()) + " stages) to " +
                 dir.filename().string(),
             dir.string(), false);
      break;
    case ExportJob::Status::Cancelled:
      notify(state, "Export cancelled; " + dir.filename().string() + " was removed", "", false);
      break;
    default:
      notify(state, "Export failed: " + job->error(), "", true);
  }
  state.files.export_job.reset();
  state.files.frames_after_export = 3;
}

void cancel_export(AppState& state) {
  if (state.files.export_job) state.files.export_job->cancel();
}

std::optional<fs::path> export_all_stages(AppState& state) {
  if (!start_export_all(state)) return std::nullopt;
  const std::shared_ptr<ExportJob> job = state.files.export_job;
  job->run_to_end(state.files.render_png);
  poll_export(state);
  if (job->status() != ExportJob::Status::Done) return std::nullopt;
  return job->spec().folder;
}

// ---------------------------------------------------------------------------
// Imports

std::string import_embeddings(AppState& state, const fs::path& path) {
  try {
    const core::ImportedEmbeddings imported = core::read_embeddings_file(path);
    core::Inputs inputs =
        core::apply_embeddings(imported, state.inputs.tokens, path.filename().string());
    // Imported weights are for one d_in: a different width runs seeded again.
    const bool drop_weights = state.explicit_parameters &&
                              !core::validate_parameters(*state.explicit_parameters, state.config,
                                                         static_cast<int>(inputs.embeddings.cols()))
                                   .empty();
    const auto rows = inputs.embeddings.rows(), cols = inputs.embeddings.cols();
    state.inputs = std::move(inputs);
    state.inputs_replaced(InputOrigin::Imported);
    if (drop_weights) reset_to_seeded_weights(state);
    state.pinned = CellRef{};
    remember_folder(state, path.parent_path());
    notify(state,
           "Imported " + std::to_string(rows) + " x " + std::to_string(cols) + " embeddings from " +
               path.filename().string() +
               (drop_weights ? "; the imported weights did not fit them and were reset to seeded"
                             : ""),
           path.string(), false);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string import_weights(AppState& state, const fs::path& path) {
  try {
    const core::WeightSet set = core::read_weights(path);
    core::Parameters params = core::parameters_from_weights(
        set, state.config, static_cast<int>(state.inputs.embeddings.cols()));
    auto p = std::make_shared<const core::Parameters>(std::move(params));
    state.explicit_parameters = p;
    state.files.imported = p;
    state.files.imported_from = path.string();
    state.mark_dirty();
    remember_folder(state, fs::is_directory(path) ? path : path.parent_path());
    notify(state,
           "Running " + std::string(core::variant_book_name(state.config.variant)) +
               " with the weights from " + path.filename().string() + " (not seeded)",
           path.string(), false);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

void reset_to_seeded_weights(AppState& state) {
  state.explicit_parameters.reset();
  state.files.imported.reset();
  state.files.imported_from.clear();
  state.mark_dirty();
}

std::string weights_origin(const AppState& state) {
  if (!state.explicit_parameters) return {};
  if (state.files.imported.lock() == state.explicit_parameters) return state.files.imported_from;
  return "edited";
}

// ---------------------------------------------------------------------------
// Sessions

std::string open_session_file(AppState& state, const fs::path& path) {
  try {
    const std::string text = core::read_import_file(path);
    apply_session_json(text, path.string(), state, SessionScope{false});
    remember_folder(state, path.parent_path());
    notify(state, "Opened session " + path.filename().string(), path.string(), false);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string save_session_file(AppState& state, const fs::path& path, bool replace) {
  try {
    if (path.filename().empty()) return "'" + path.string() + "' names a folder: give a file name";
    core::require_folder(path.has_parent_path() ? path.parent_path() : fs::path("."));
    const std::string text = session_json(state);
    core::write_file_atomic(path, text,
                            replace ? core::Overwrite::Replace : core::Overwrite::Never);
    remember_folder(state, path.parent_path());
    const bool draft = text.find("\"draft\"") != std::string::npos;
    notify(state,
           "Saved session " + path.filename().string() +
               (draft ? " (the current edits do not run; it holds the last good run and the edits)"
                      : ""),
           path.string(), false);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

// ---------------------------------------------------------------------------
// Screenshots

std::string screenshot_stem(std::chrono::system_clock::time_point t) {
  return "screenshot_" + core::timestamp_text(t);
}

std::optional<fs::path> save_screenshot_png(AppState& state, const std::string& png) {
  try {
    if (png.empty()) throw std::runtime_error("the window could not be read");
    const fs::path dir = ready_export_folder(state);
    const fs::path path =
        core::write_new_file(dir, screenshot_stem(std::chrono::system_clock::now()), ".png", png);
    remember_folder(state, dir);
    notify(state, "Saved screenshot " + path.filename().string(), path.string(), false);
    return path;
  } catch (const std::exception& e) {
    notify(state, std::string("Screenshot failed: ") + e.what(), "", true);
    return std::nullopt;
  }
}

void save_window_screenshot(AppState& state, const RenderedImage& window) {
  if (window.width <= 0 || window.height <= 0) {  // minimised: there are no pixels to save
    notify(state, "No screenshot: the window has no pixels (is it minimised?)", "", true);
    return;
  }
  save_screenshot_png(state, encode_png(window.width, window.height, window.rgba));
}

// ---------------------------------------------------------------------------
// --export-png

int export_pngs(AppState& state, const std::string& dir, int scale) {
  state.finish_recompute();
  if (!state.error.empty() || !state.trace) {
    std::cerr << "error: " << (state.error.empty() ? "nothing to export" : state.error) << "\n";
    return 2;
  }
  bool created = false;
  try {
    if (!state.files.render_png)
      throw std::runtime_error("PNG export needs the app's window (OpenGL); export SVG instead");
    std::error_code ec;
    if (fs::exists(dir, ec) || fs::is_symlink(dir, ec)) {
      core::require_folder(dir);
    } else {
      core::ensure_folder(dir);  // with its parents, as attnscope-cli export --out does
      created = true;
      std::cerr << "attnscope: created the folder " << dir << "\n";
    }
    ExportSpec spec;
    spec.trace = state.trace;
    add_every_stage(state, spec);
    spec.png_scale = scale;
    spec.folder = dir;
    spec.own_folder = created;  // a folder it made goes on failure; else only the PNGs
    spec.time = std::chrono::system_clock::now();
    ExportJob job(std::move(spec));
    job.run_to_end(state.files.render_png);
    if (job.status() != ExportJob::Status::Done) throw std::runtime_error(job.error());
    for (const auto& p : job.png_paths()) std::cout << p.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::error_code ec;
    if (created) fs::remove_all(dir, ec);  // made above, for this export only
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace attnscope::gui
