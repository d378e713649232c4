// files_panel.cpp: the widgets of exports, imports and sessions (files_ui.hpp).
//
// Sections
//   1. export menus (per heatmap) and their theme choice, File / View menu
//      items, F12, Export all's progress window
//   2. the weights badge
//   3. the path-field dialogs: path, recent folders, folder listing
//   4. the notice
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>

#include "attnscope/formats/files.hpp"
#include "attnscope/formats/formats.hpp"
#include "export/export_job.hpp"
#include "export/files.hpp"
#include "export/files_ui.hpp"
#include "imgui.h"
#include "imgui_stdlib.h"  // needs imgui.h first
#include "panels/panels.hpp"
#include "platform/native_dialog.hpp"

namespace attnscope::gui {

namespace fs = std::filesystem;

namespace {

// F12: ImGui 1.86 has no named function keys; its GLFW backend indexes keys
// by GLFW key code (GLFW_KEY_F12 = 301).
bool f12_pressed() {
#if IMGUI_VERSION_NUM >= 18700
  return ImGui::IsKeyPressed(ImGuiKey_F12, false);
#else
  return ImGui::IsKeyPressed(301, false);
#endif
}

// What the desktop's dialog for `d` shows; nullopt for Export all, whose
// options only the app's own dialog has.
std::optional<DialogRequest> native_request(FileDialog d, const std::string& start) {
  using Mode = DialogRequest::Mode;
  switch (d) {
    case FileDialog::OpenSession:
      return DialogRequest{
          Mode::OpenFile, "Open session", start, {{"attnscope sessions", {"*.json"}}}};
    case FileDialog::SaveSession:
      return DialogRequest{
          Mode::SaveFile, "Save session", start, {{"attnscope sessions", {"*.json"}}}};
    case FileDialog::ImportEmbeddings:
      return DialogRequest{Mode::OpenFile,
                           "Import embeddings",
                           start,
                           {{"Embeddings", {"*.csv", "*.npy", "*.json"}}}};
    case FileDialog::ImportWeights:
      return DialogRequest{
          Mode::OpenFile, "Import weights", start, {{"Weights", {"*.json", "*.npy"}}}};
    case FileDialog::ExportFolder:
      return DialogRequest{Mode::ChooseFolder, "Export folder", start, {}};
    case FileDialog::OpenModel:
      return checkpoint_request(start);
    case FileDialog::ExportAll:
    case FileDialog::None:
      break;
  }
  return std::nullopt;
}

}  // namespace

void open_file_dialog(AppState& state, FileDialog d) {
  FilesState& f = state.files;
  f.dialog = d;
  f.dialog_error.clear();
  f.confirm_replace = false;
  std::string start = f.last_folder;
  if (d == FileDialog::OpenModel) start = checkpoint_dialog_start(state.model.path);
  if (d == FileDialog::ExportFolder || start.empty()) start = export_folder(state).string();
  if (start.empty()) {
    std::error_code ec;
    start = fs::current_path(ec).string();
  }
  if (!start.empty() && start.back() != '/') start += '/';
  if (d == FileDialog::SaveSession) start += "attnscope-session.json";
  f.path_input = start;
  // The desktop's own dialog when there is one; the path field stays ready
  // behind it for when it fails.
  const DialogTool tool = f.dialog_tool();
  if (tool == DialogTool::Builtin) return;
  // The desktop's dialogs start elsewhere when the folder is missing (the
  // default export folder before the first export): start in the nearest
  // folder that exists instead.
  fs::path folder = d == FileDialog::SaveSession ? fs::path(start).parent_path() : fs::path(start);
  std::error_code ec;
  while (folder.has_parent_path() && folder != folder.root_path() && !fs::is_directory(folder, ec))
    folder = folder.parent_path();
  if (d == FileDialog::SaveSession)
    start = (folder / "attnscope-session.json").string();
  else
    start = folder.string();
  if (const auto request = native_request(d, start))
    f.native = std::make_shared<NativeDialog>(dialog_command(tool, *request), f.wake_ui);
}

// ---------------------------------------------------------------------------
// 1. Menus

void draw_export_menu_items(AppState& state, const core::Stage& stage) {
  const bool png = static_cast<bool>(state.files.render_png);
  ImGui::TextDisabled("Export %s%s to %s", stage.id.c_str(),
                      stage.head >= 0 ? (", head " + std::to_string(stage.head)).c_str() : "",
                      export_folder(state).string().c_str());
  for (int scale : {1, 2, 4}) {
    const std::string label = "PNG " + std::to_string(scale) + "×";
    if (ImGui::MenuItem(label.c_str(), nullptr, false, png))
      export_stage(state, stage, ExportKind::Png, scale);
  }
  if (ImGui::MenuItem("SVG (vector)")) export_stage(state, stage, ExportKind::Svg);
  draw_theme_choice(state);
  ImGui::Separator();
  if (ImGui::MenuItem("CSV")) export_stage(state, stage, ExportKind::Csv);
  if (ImGui::MenuItem("NPY (numpy.load)")) export_stage(state, stage, ExportKind::Npy);
  if (ImGui::MenuItem("JSON")) export_stage(state, stage, ExportKind::Json);
  ImGui::Separator();
  if (ImGui::MenuItem("Copy as torch.tensor([...])")) {
    ImGui::SetClipboardText(core::matrix_torch(stage.data()).c_str());
    notify(state,
           "Copied " + stage.id + " (" + std::to_string(stage.data().rows()) + " x " +
               std::to_string(stage.data().cols()) + ") as torch.tensor to the clipboard",
           "", false);
  }
}

void draw_file_menu_items(AppState& state) {
  if (ImGui::MenuItem("Open session...")) open_file_dialog(state, FileDialog::OpenSession);
  if (ImGui::MenuItem("Open model...")) open_file_dialog(state, FileDialog::OpenModel);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "A trained GPT-2: a Hugging Face folder, a .safetensors file or the "
        "book's chapter-5 .pth");
  if (ImGui::MenuItem("Get a model from the Hub...")) open_get_model_window(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Download trained GPT-2 weights from the Hugging Face Hub, then open them");
  if (ImGui::MenuItem("Save session...")) open_file_dialog(state, FileDialog::SaveSession);
  ImGui::Separator();
  if (ImGui::MenuItem("Import embeddings..."))
    open_file_dialog(state, FileDialog::ImportEmbeddings);
  if (ImGui::MenuItem("Import weights...")) open_file_dialog(state, FileDialog::ImportWeights);
  if (ImGui::MenuItem("Reset to seeded weights", nullptr, false,
                      static_cast<bool>(state.explicit_parameters)))
    reset_to_seeded_weights(state);
  ImGui::Separator();
  if (ImGui::MenuItem("Export all stages...", nullptr, false,
                      state.trace && !state.files.exporting()))
    open_file_dialog(state, FileDialog::ExportAll);
  if (ImGui::MenuItem("Export folder...")) open_file_dialog(state, FileDialog::ExportFolder);
  const DialogTool tool = state.files.installed_dialog_tool();
  if (tool != DialogTool::Builtin) {
    const std::string label =
        std::string("Use the desktop's file dialogs (") + dialog_tool_name(tool) + ")";
    ImGui::MenuItem(label.c_str(), nullptr, &state.files.native_dialogs);
  }
  ImGui::Separator();
  // Greyed where no script can be written, the reason on hover: no run yet,
  // or a model that is not the book's GPTModel as .pth.
  const std::optional<std::string> no_script = pytorch_script_unavailable(state);
  const auto explain = [&] {
    if (!no_script || !ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) return;
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.0f);
    ImGui::TextUnformatted(("No script: " + *no_script + ".").c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  };
  if (ImGui::MenuItem("Copy run as PyTorch code", nullptr, false, !no_script)) {
    try {
      const std::string script = run_pytorch_script(state);
      ImGui::SetClipboardText(script.c_str());
      notify(state,
             "Copied the run as PyTorch code to the clipboard: a script that prints " +
                 pytorch_script_prints(state),
             "", false);
    } catch (const std::exception& e) {
      notify(state, std::string("Copying the run as PyTorch code failed: ") + e.what(), "", true);
    }
  }
  explain();
  if (ImGui::MenuItem("Save run as .py", nullptr, false, !no_script)) save_run_as_python(state);
  explain();
}

void draw_theme_choice(AppState& state) {
  ImGui::TextUnformatted("Theme:");
  for (figure::Theme t : figure::kAllThemes) {
    ImGui::SameLine();
    const std::string label = std::string(figure::theme_label(t)) + "##theme";
    if (ImGui::RadioButton(label.c_str(), state.files.theme == t)) state.files.theme = t;
  }
}

void draw_export_progress(AppState& state) {
  if (state.files.frames_after_export > 0) --state.files.frames_after_export;
  poll_export(state);
  const std::shared_ptr<ExportJob> job = state.files.export_job;
  if (!job) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(
      ImVec2(vp->WorkPos.x + vp->WorkSize.x - 12, vp->WorkPos.y + vp->WorkSize.y - 12),
      ImGuiCond_Always, ImVec2(1.0f, 1.0f));
  ImGui::SetNextWindowBgAlpha(0.95f);
  constexpr ImGuiWindowFlags kFlags = ImGuiWindowFlags_NoDecoration |
                                      ImGuiWindowFlags_AlwaysAutoResize |
                                      ImGuiWindowFlags_NoSavedSettings |
                                      ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav;
  if (ImGui::Begin("##export_progress", nullptr, kFlags)) {
    const ExportJob::Progress p = job->progress();
    const bool cancelling = job->stopping();
    if (cancelling)
      ImGui::TextUnformatted("Cancelling the export...");
    else
      ImGui::Text("Exporting %d of %d files", p.done, p.total);
    ImGui::ProgressBar(
        p.total > 0 ? static_cast<float>(p.done) / static_cast<float>(p.total) : 0.0f,
        ImVec2(ImGui::GetFontSize() * 20, 0));
    ImGui::TextDisabled("%s", job->spec().folder.string().c_str());
    ImGui::BeginDisabled(cancelling);
    if (ImGui::Button("Cancel")) cancel_export(state);
    ImGui::EndDisabled();
  }
  ImGui::End();
}

void draw_screenshot_menu_item(AppState& state) {
  if (ImGui::MenuItem("Screenshot", "F12")) state.files.screenshot_countdown = 2;
}

void handle_file_shortcuts(AppState& state) {
  if (f12_pressed()) state.files.screenshot_countdown = 2;
}

// ---------------------------------------------------------------------------
// 2. The weights badge

void draw_weights_badge(AppState& state) {
  const std::string origin = weights_origin(state);
  if (origin.empty()) return;
  const bool edited = origin == "edited";
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.72f, 0.25f, 1.0f));
  const bool open = ImGui::BeginMenu(edited ? "[edited weights]" : "[imported weights]");
  ImGui::PopStyleColor();
  if (open) {
    if (edited)
      ImGui::TextUnformatted("Running with weights edited in the app, not the seeded ones.");
    else
      ImGui::Text("Running with the weights from %s,\nnot the ones torch.manual_seed(%llu) draws.",
                  origin.c_str(), static_cast<unsigned long long>(state.config.seed));
    if (ImGui::MenuItem("Reset to seeded weights")) reset_to_seeded_weights(state);
    ImGui::EndMenu();
  }
}

// ---------------------------------------------------------------------------
// 3. Dialogs

namespace {

const char* dialog_title(FileDialog d) {
  switch (d) {
    case FileDialog::OpenSession:
      return "Open session";
    case FileDialog::SaveSession:
      return "Save session";
    case FileDialog::ImportEmbeddings:
      return "Import embeddings";
    case FileDialog::ImportWeights:
      return "Import weights";
    case FileDialog::ExportFolder:
      return "Export folder";
    case FileDialog::ExportAll:
      return "Export all stages";
    case FileDialog::OpenModel:
      return "Open model";
    case FileDialog::None:
      break;
  }
  return "";
}

const char* dialog_hint(FileDialog d) {
  switch (d) {
    case FileDialog::OpenSession:
      return "A session file (.json) saved by attnscope: the run, its weights and the view.";
    case FileDialog::SaveSession:
      return "Tokens, embeddings, config, explicit weights and the view, as JSON.";
    case FileDialog::ImportEmbeddings:
      return "CSV (optional header row, optional first column of token names), NPY (2-D "
             "float32/float64) or JSON.";
    case FileDialog::ImportWeights:
      return "JSON (W_query, W_key, W_value, W_out, b_*; or a state_dict), one .npy named after "
             "its tensor, or a folder of them.";
    case FileDialog::ExportFolder:
      return "Exports and screenshots go here; files are never overwritten.";
    case FileDialog::OpenModel:
      return "A Hugging Face GPT-2 folder (or its config.json), a .safetensors file, or the "
             "book's chapter-5 .pth (its GPT_CONFIG as JSON beside it, or in the Model panel's "
             "config field).";
    default:
      return "";
  }
}

bool wants_file(FileDialog d) {
  return d != FileDialog::ExportFolder && d != FileDialog::ExportAll;
}

// The folder part of the path field: the path itself when it is a folder.
fs::path folder_of(const std::string& input) {
  std::error_code ec;
  const fs::path p(input);
  if (!input.empty() && (input.back() == '/' || fs::is_directory(p, ec))) return p;
  return p.parent_path();
}

void refresh_listing(FilesState& f) {
  const fs::path dir = folder_of(f.path_input);
  if (dir.string() == f.listed_folder) return;
  f.listed_folder = dir.string();
  f.listing.clear();
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code e2;
    f.listing.emplace_back(name, it->is_directory(e2));
    if (f.listing.size() >= 500) break;
  }
  std::sort(f.listing.begin(), f.listing.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second : a.first < b.first;
  });
}

// Runs the dialog's action on the path field; true when it worked (close).
bool run_action(AppState& state) {
  FilesState& f = state.files;
  const fs::path path(f.path_input);
  std::string err;
  switch (f.dialog) {
    case FileDialog::OpenSession:
      err = open_session_file(state, path);
      break;
    case FileDialog::SaveSession: {
      std::error_code ec;
      if (!f.confirm_replace && fs::exists(fs::symlink_status(path, ec))) {
        f.confirm_replace = true;  // ask first
        f.dialog_error = "'" + path.string() + "' exists. Save again to replace it.";
        return false;
      }
      err = save_session_file(state, path, f.confirm_replace);
      break;
    }
    case FileDialog::ImportEmbeddings:
      err = import_embeddings(state, path);
      break;
    case FileDialog::ImportWeights:
      err = import_weights(state, path);
      break;
    case FileDialog::ExportFolder: {
      try {
        core::require_folder(path);
        f.export_folder = path.lexically_normal();
        remember_folder(state, f.export_folder);
        notify(state, "Exports go to " + f.export_folder.string(), f.export_folder.string(), false);
      } catch (const std::exception& e) {
        err = e.what();
      }
      break;
    }
    case FileDialog::ExportAll:
      start_export_all(state);  // its progress window, then the notice, report how it goes
      return true;
    case FileDialog::OpenModel: {
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        err = "'" + path.string() + "' does not exist: choose a model's folder or file";
        break;
      }
      // The load runs in the background; the Model panel shows its progress
      // and, if it fails, why.
      state.model.path =
          path.filename() == "config.json" ? path.parent_path().string() : path.string();
      state.open_model(state.model.path);
      break;
    }
    case FileDialog::None:
      return true;
  }
  f.dialog_error = err;
  f.confirm_replace = false;
  return err.empty();
}

void draw_path_field(AppState& state) {
  FilesState& f = state.files;
  ImGui::SetNextItemWidth(-1);
  const std::string before = f.path_input;
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere(0);  // typing goes to the path
  if (ImGui::InputText("##path", &f.path_input,
                       ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll)) {
    if (run_action(state)) f.dialog = FileDialog::None;
    return;
  }
  if (f.path_input != before) f.confirm_replace = false;

  if (!f.recent_folders.empty()) {
    ImGui::TextDisabled("Recent folders");
    for (const std::string& r : f.recent_folders)
      if (ImGui::Selectable(r.c_str(), false)) {
        f.path_input = r + (r.ends_with('/') ? "" : "/");
        if (f.dialog == FileDialog::SaveSession) f.path_input += "attnscope-session.json";
      }
  }
  refresh_listing(f);
  const fs::path dir = folder_of(f.path_input);
  ImGui::TextDisabled("In %s", dir.string().c_str());
  ImGui::BeginChild("listing", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 9), true);
  if (dir.has_parent_path() && dir != dir.root_path() && ImGui::Selectable("../"))
    f.path_input = dir.lexically_normal().parent_path().string() + "/";
  for (const auto& [name, is_dir] : f.listing) {
    const std::string shown = is_dir ? name + "/" : name;
    if (!is_dir && !wants_file(f.dialog)) continue;
    if (ImGui::Selectable(shown.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
      std::string base = dir.string();
      if (!base.empty() && base.back() != '/') base += '/';
      f.path_input = base + shown;
      f.confirm_replace = false;
      if (!is_dir && ImGui::IsMouseDoubleClicked(0) && run_action(state))
        f.dialog = FileDialog::None;
    }
  }
  ImGui::EndChild();
}

// The desktop's dialog: while it is open a small window says so (with a way
// to the app's own instead); its answer runs the same action as the path
// field. Returns true while it is open or after it has been answered.
bool poll_native_dialog(AppState& state) {
  FilesState& f = state.files;
  if (!f.native) return false;
  const std::optional<NativeDialog::Result> result = f.native->result();
  if (!result) {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(
        ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.4f),
        ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    const std::string title = std::string(dialog_title(f.dialog)) + "###files_dialog";
    if (ImGui::Begin(title.c_str(), nullptr,
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                         ImGuiWindowFlags_AlwaysAutoResize)) {
      ImGui::TextUnformatted("Choose in the desktop's file dialog; attnscope waits for it.");
      if (ImGui::Button("Use attnscope's own dialog")) f.native.reset();  // closes the other
      ImGui::SameLine();
      if (ImGui::Button("Cancel")) {
        f.native.reset();
        f.dialog = FileDialog::None;
      }
    }
    ImGui::End();
    return true;
  }
  f.native.reset();
  switch (result->status) {
    case NativeDialog::Result::Status::Cancelled:
      f.dialog = FileDialog::None;
      return true;
    case NativeDialog::Result::Status::Failed:
      f.dialog_error = "The desktop's file dialog could not be shown (" + result->error +
                       "); choose the path here instead.";
      return false;
    case NativeDialog::Result::Status::Chosen:
      f.path_input = result->path;
      // The desktop's save dialog asked before replacing a file.
      if (f.dialog == FileDialog::SaveSession) f.confirm_replace = true;
      // On failure the path field shows the path and why.
      if (run_action(state)) f.dialog = FileDialog::None;
      return true;
  }
  return true;
}

}  // namespace

void draw_file_windows(AppState& state) {
  FilesState& f = state.files;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  if (f.dialog != FileDialog::None && !poll_native_dialog(state)) {
    const float font = ImGui::GetFontSize();
    ImGui::SetNextWindowPos(
        ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.4f),
        ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(font * 36, 0), ImGuiCond_Appearing);
    bool open = true;
    const std::string title = std::string(dialog_title(f.dialog)) + "###files_dialog";
    if (ImGui::Begin(title.c_str(), &open,
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                         ImGuiWindowFlags_AlwaysAutoResize)) {
      ImGui::PushTextWrapPos(font * 34);
      if (f.dialog == FileDialog::ExportAll) {
        ImGui::TextWrapped(
            "Every stage (every head) of the run on screen into one new folder in %s: a PNG and a "
            "data file per stage, plus session.json that reproduces the run.",
            export_folder(state).string().c_str());
        ImGui::TextUnformatted("PNG scale");
        for (int s : {1, 2, 4}) {
          ImGui::SameLine();
          const std::string l = std::to_string(s) + "×";
          if (ImGui::RadioButton(l.c_str(), f.png_scale == s)) f.png_scale = s;
        }
        ImGui::TextUnformatted("Data    ");
        for (core::DataFormat d :
             {core::DataFormat::Csv, core::DataFormat::Npy, core::DataFormat::Json}) {
          ImGui::SameLine();
          if (ImGui::RadioButton(std::string(core::format_id(d)).c_str(), f.all_format == d))
            f.all_format = d;
        }
        draw_theme_choice(state);
        if (!f.render_png) ImGui::TextDisabled("PNG export needs the app's window (OpenGL).");
      } else {
        ImGui::TextWrapped("%s", dialog_hint(f.dialog));
        draw_path_field(state);
      }
      if (!f.dialog_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
        ImGui::TextWrapped("%s", f.dialog_error.c_str());
        ImGui::PopStyleColor();
      }
      ImGui::PopTextWrapPos();
      const char* action =
          f.dialog == FileDialog::OpenSession || f.dialog == FileDialog::OpenModel ? "Open"
          : f.dialog == FileDialog::SaveSession  ? (f.confirm_replace ? "Replace" : "Save")
          : f.dialog == FileDialog::ExportFolder ? "Use this folder"
          : f.dialog == FileDialog::ExportAll    ? "Export"
                                                 : "Import";
      if (f.dialog != FileDialog::None && ImGui::Button(action) && run_action(state))
        f.dialog = FileDialog::None;
      ImGui::SameLine();
      if (f.dialog == FileDialog::ExportFolder && ImGui::Button("Use the default")) {
        f.export_folder.clear();
        notify(state, "Exports go to " + export_folder(state).string(),
               export_folder(state).string(), false);
        f.dialog = FileDialog::None;
      }
      ImGui::SameLine();
      if (ImGui::Button("Cancel")) f.dialog = FileDialog::None;
    }
    ImGui::End();
    if (!open) f.dialog = FileDialog::None;
  }

  // -------------------------------------------------------------------------
  // 4. The notice, bottom right, until dismissed, replaced or its time is
  // up; hidden while a window screenshot is pending, so that it never shows
  // in one.
  // While an export runs its progress window stands there instead.
  if (!f.notice.message.empty() && f.screenshot_countdown == 0 && !f.exporting()) {
    ImGui::SetNextWindowPos(
        ImVec2(vp->WorkPos.x + vp->WorkSize.x - 12, vp->WorkPos.y + vp->WorkSize.y - 12),
        ImGuiCond_Always, ImVec2(1.0f, 1.0f));
    ImGui::SetNextWindowBgAlpha(0.95f);
    ImGui::PushStyleColor(ImGuiCol_WindowBg, f.notice.error ? ImVec4(0.40f, 0.10f, 0.10f, 1.0f)
                                                            : ImVec4(0.12f, 0.28f, 0.18f, 1.0f));
    constexpr ImGuiWindowFlags kFlags =
        ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
        ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
        ImGuiWindowFlags_NoNav;
    if (ImGui::Begin("##notice", nullptr, kFlags)) {
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      ImGui::TextUnformatted(f.notice.message.c_str());
      if (!f.notice.path.empty()) ImGui::TextDisabled("%s", f.notice.path.c_str());
      ImGui::PopTextWrapPos();
      if (!f.notice.path.empty()) {
        if (ImGui::Button("Copy path")) ImGui::SetClipboardText(f.notice.path.c_str());
        ImGui::SameLine();
      }
      if (ImGui::Button("Dismiss")) f.notice.message.clear();
      if (!ImGui::IsWindowHovered(ImGuiHoveredFlags_RootAndChildWindows)) {
        f.notice.seconds_left -= ImGui::GetIO().DeltaTime;
        if (f.notice.seconds_left <= 0) f.notice.message.clear();
      }
    }
    ImGui::End();
    ImGui::PopStyleColor();
  }
}

}  // namespace attnscope::gui
