// files.hpp: the app's file operations, without widgets (panels/files_panel.cpp
// draws them): exporting one stage (PNG, SVG, CSV, NPY, JSON), exporting
// every stage, importing embeddings and weights, opening and saving
// sessions, screenshots' names. Every file is written by core's safe writers
// (files.hpp: temporary file + rename, never overwriting an export) and every
// failure leaves the app's state and what was on disk as they were.
//
// Operations report through FilesState::notice (exports) or return the error
// message ("" when it worked; dialogs show it next to the path field).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/io/session.hpp"
#include "figure/head_grid_figure.hpp"
#include "figure/stage_figure.hpp"
#include "state/app_state.hpp"

namespace attnscope::gui {

// What one stage can be exported as.
enum class ExportKind { Png, Svg, Csv, Npy, Json };
// ".png", ".svg", ...
std::string_view export_extension(ExportKind k);

// The export folder in effect: the chosen one, else core::default_export_folder().
std::filesystem::path export_folder(const AppState& state);
// Remembers `folder` as the most recent folder (front of the list, no duplicates).
void remember_folder(AppState& state, const std::filesystem::path& folder);

// How `stage` of `trace` is drawn now: the palette, "Numbers in cells",
// decimals and row scale of the View menu, as on screen, in the export
// menus' theme.
figure::FigureStyle figure_style(const AppState& state, const core::Trace& trace,
                                 const core::Stage& stage);

// Sets the notice (and prints nothing: the UI shows it).
void notify(AppState& state, std::string message, std::string path, bool error);

// The bytes of `stage` as `kind`; PNG needs FilesState::render_png. Throws
// std::runtime_error (or core::FileError) with the reason.
std::string stage_bytes(const AppState& state, const core::Trace& trace, const core::Stage& stage,
                        ExportKind kind, int scale);

// Writes `stage` of the trace on screen into the export folder as
// <stage>[_h<head>]_<variant>_<YYYYmmdd-HHMMSS>.<ext> (-1, -2 ... when taken);
// the default folder is created when missing, a chosen one must exist.
// Returns the path, or nullopt after setting an error notice.
std::optional<std::filesystem::path> export_stage(AppState& state, const core::Stage& stage,
                                                  ExportKind kind, int scale = 1);

// The model view as one figure (figure/head_grid_figure.hpp): every head's
// thumbnail in the order and colours on screen, each cut to at most
// `max_cells` a side, titled with the model, its size and the text.
// Throws std::runtime_error when no model view is on screen.
figure::HeadGrid model_view_figure(const AppState& state, int max_cells);
// Writes it into the export folder as PNG (at `scale`) or SVG:
// model_view_<model>_<YYYYmmdd-HHMMSS>.<ext>. Returns the path, or nullopt
// after setting an error notice.
std::optional<std::filesystem::path> export_model_view(AppState& state, ExportKind kind, int scale);

// Export all: every stage (every head) of the trace on screen into a new
// folder <export folder>/attnscope_<variant>_<timestamp>: a PNG (at
// files.png_scale, in files.theme) and a data file (files.all_format) per
// stage, plus session.json that reproduces the run (a model's block: the
// app's session, which reopens the model). It runs as files.export_job
// (export_job.hpp) beside the frames. All or nothing: on failure or Cancel
// the new folder is removed. Returns false after setting an error notice
// (another export is running, no trace, the folder cannot be made, ...).
bool start_export_all(AppState& state);
// Once a frame (the progress window): renders the running export's next
// figures within files.export_budget_ms; once it has finished, says how it
// went in the notice and lets it go.
void poll_export(AppState& state);
// Cancel: the export stops and its folder goes (the notice says so once it has).
void cancel_export(AppState& state);
// start_export_all, run to the end on this thread (tests, synchronous
// callers). Returns the folder, or nullopt after setting an error notice.
std::optional<std::filesystem::path> export_all_stages(AppState& state);

// Why the run on screen has no PyTorch script, or nullopt when it has one:
// no run yet, or a model other than the book's GPTModel saved as .pth (a
// Hugging Face checkpoint: core::model_script_refusal's reason), or a model
// whose files cannot be found again. The menu greys its items with this.
std::optional<std::string> pytorch_script_unavailable(const AppState& state);
// The run on screen as one PyTorch script: for the chapter-3 classes the
// trace's config, inputs and weights, printing its output
// (core/pytorch_code.hpp); for a .pth model the book's GPTModel loading the
// file and running the text on screen, printing the weights of the layer
// and head on screen and the next tokens (core/model_script.hpp). Throws
// std::runtime_error with pytorch_script_unavailable's reason, or when the
// weights a chapter-3 run used were replaced since.
std::string run_pytorch_script(const AppState& state);
// Writes run_pytorch_script into the export folder as
// run_<variant>_<YYYYmmdd-HHMMSS>.py, for a model
// run_<model>_layer<L>_head<H>_<YYYYmmdd-HHMMSS>.py (-1, -2 ... when taken;
// never overwritten). Returns the path, or nullopt after setting an error notice.
std::optional<std::filesystem::path> save_run_as_python(AppState& state);
// What the script prints, for notices: "the output", or "layer 1 head 0's
// weights and the next tokens".
std::string pytorch_script_prints(const AppState& state);
// Next tokens a model's script prints (the Model panel lists as many).
inline constexpr int kModelScriptTop = 10;

// Replaces the embeddings with a CSV, NPY or JSON file's (core formats.hpp).
// Returns "" or the message (file name and problem); on error nothing changes.
std::string import_embeddings(AppState& state, const std::filesystem::path& path);
// Runs the variant with the weights in a JSON file, an NPY file, or a folder
// of NPY files (core weights.hpp), checked against the current config and
// embeddings. Returns "" or the message; on error nothing changes.
std::string import_weights(AppState& state, const std::filesystem::path& path);
// Back to the weights torch.manual_seed(seed) draws.
void reset_to_seeded_weights(AppState& state);
// The file the running weights came from, "" when they are seeded, or
// "edited" when they were edited in the app.
std::string weights_origin(const AppState& state);

// Opens a session file: the run, its weights and the view (stage, head,
// pinned cell, colours); UI size preferences stay. Returns "" or the message;
// on error nothing changes.
std::string open_session_file(AppState& state, const std::filesystem::path& path);
// Saves the session (gui/session.hpp's document) to `path`; an existing file
// is replaced only when `replace`. Returns "" or the message.
std::string save_session_file(AppState& state, const std::filesystem::path& path, bool replace);

// The file name stem of a window screenshot: screenshot_<YYYYmmdd-HHMMSS>.
std::string screenshot_stem(std::chrono::system_clock::time_point t);
// Writes PNG bytes of a screenshot into the export folder; sets the notice.
std::optional<std::filesystem::path> save_screenshot_png(AppState& state, const std::string& png);
// F12: the window's pixels (render/gl_texture.hpp's read_window) as a PNG
// screenshot in the export folder; sets the notice, an error one when the
// window had no pixels (minimised).
void save_window_screenshot(AppState& state, const RenderedImage& window);

// --export-png DIR: every stage of the state's run (every head) as a PNG in
// the existing folder `dir` at `scale` and files.theme, rendered by
// FilesState::render_png (the export job, run to the end) and named as
// exports are; prints each path on stdout. All or nothing: on failure the
// PNGs it wrote are removed. Returns the exit code (0, or 2 with "error:
// ..." on stderr).
int export_pngs(AppState& state, const std::string& dir, int scale);

}  // namespace attnscope::gui
