// dropped.hpp: what a file or folder dropped onto the window is, and opening
// it as that: a session, embeddings, chapter-3 weights, or a GPT-2 model.
#pragma once

#include <filesystem>
#include <string>

#include "state/app_state.hpp"

namespace attnscope::gui {

enum class DroppedKind { Session, Embeddings, Weights, Model, Unknown };

// Decides from the name and, for JSON, the top-level fields:
//   a folder with .npy files (and no model files)         Weights
//   any other folder, .safetensors, .pth, .bin, config    Model
//   .json with "attnscope_session"                        Session
//   .json whose keys are weight names (W_query, ...)      Weights
//   other .json (a list of rows, {"tokens", ...}, stages) Embeddings
//   .npy named after a weight (W_query.npy, ...)          Weights
//   other .npy, .csv                                      Embeddings
// Anything else, and JSON that does not parse, is Unknown.
DroppedKind classify_dropped(const std::filesystem::path& path);

// Opens `path` as classify_dropped says. A session, embeddings or weights
// show the chapter-3 view; a model loads on its thread (the Model panel
// shows the load). Success and failure are reported by the notice or the
// banner; on failure nothing on screen changes.
void open_dropped_file(AppState& state, const std::string& path);

}  // namespace attnscope::gui
