// files_ui.hpp: the widgets of the app's file features (panels/files_panel.cpp):
// the Export menu of every heatmap, the File menu's items, the path-field
// dialogs that stand in for a native file dialog (with recent folders and a
// listing of the folder), the notice after each export with its Copy path
// button, and the "imported weights" badge of the menu bar.
#pragma once

#include "state/app_state.hpp"

namespace attnscope::gui {

// PNG 1×/2×/4×, SVG, the theme, CSV, NPY, JSON, Copy as torch.tensor: the items of a
// heatmap's Export button and right-click menu (inside an open popup/menu).
void draw_export_menu_items(AppState& state, const core::Stage& stage);

// "Theme: (o) Dark ( ) Light": the colours around exported figures' cells
// (FilesState::theme), in the export menus and the Export all dialog.
void draw_theme_choice(AppState& state);

// Export all's progress beside the frames (bottom right, where the notice
// goes): "Exporting 37 of 120 files", a progress bar and Cancel. Steps the
// job first (poll_export), so it runs once every frame.
void draw_export_progress(AppState& state);

// File menu: Open/Save session, Import embeddings/weights, Reset to seeded
// weights, Export all stages, Export folder (inside the open File menu).
void draw_file_menu_items(AppState& state);

// View menu: Screenshot (F12).
void draw_screenshot_menu_item(AppState& state);

// F12 asks for a window screenshot (main grabs it after the next frame).
void handle_file_shortcuts(AppState& state);

// In the menu bar: a badge while the run uses imported or edited weights,
// with the file's name and "Reset to seeded weights".
void draw_weights_badge(AppState& state);

// Opens the dialog for `d`: the desktop's own (native_dialog.hpp) when there
// is one and the File menu allows it, else the app's path-field dialog.
void open_file_dialog(AppState& state, FileDialog d);

// The open dialog, if any, and the last notice (bottom right).
void draw_file_windows(AppState& state);

}  // namespace attnscope::gui
