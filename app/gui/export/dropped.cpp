// dropped.cpp: classify_dropped and open_dropped_file (dropped.hpp).
#include "export/dropped.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "export/files.hpp"

namespace attnscope::gui {

namespace fs = std::filesystem;

namespace {

// The names chapter-3 weight files use (core weights.cpp reads them): the
// book's attribute names and PyTorch's state_dict keys.
bool weight_name(std::string_view name) {
  return name.starts_with("W_") || name.starts_with("b_") || name.starts_with("out_proj") ||
         name.starts_with("heads.");
}

bool model_file(const fs::path& p) {
  const std::string name = p.filename().string();
  const std::string ext = p.extension().string();
  return ext == ".safetensors" || ext == ".pth" || ext == ".bin" || name == "config.json" ||
         name.ends_with(".safetensors.index.json");
}

DroppedKind classify_folder(const fs::path& dir) {
  bool npy = false;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (model_file(it->path())) return DroppedKind::Model;
    if (it->path().extension() == ".npy") npy = true;
  }
  // A folder with neither goes to the model loader, which says what it lacks.
  return npy ? DroppedKind::Weights : DroppedKind::Model;
}

DroppedKind classify_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(bytes.str(), nullptr, false);
  if (doc.is_discarded()) return DroppedKind::Unknown;
  if (doc.is_object()) {
    if (doc.contains("attnscope_session")) return DroppedKind::Session;
    if (doc.contains("n_embd") || doc.contains("model_type") || doc.contains("emb_dim"))
      return DroppedKind::Model;  // a Hugging Face config.json or the book's GPT_CONFIG
    for (const auto& item : doc.items())
      if (weight_name(item.key())) return DroppedKind::Weights;
  }
  return DroppedKind::Embeddings;  // parse_embeddings says what it expected when it is not
}

}  // namespace

DroppedKind classify_dropped(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return classify_folder(path);
  if (model_file(path)) return DroppedKind::Model;
  const std::string ext = path.extension().string();
  if (ext == ".json") return classify_json(path);
  if (ext == ".npy")
    return weight_name(path.stem().string()) ? DroppedKind::Weights : DroppedKind::Embeddings;
  if (ext == ".csv") return DroppedKind::Embeddings;
  return DroppedKind::Unknown;
}

void open_dropped_file(AppState& state, const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  std::string err;
  switch (classify_dropped(p)) {
    case DroppedKind::Model:
    case DroppedKind::Unknown:  // AppState's banner says what can be dropped
      state.open_dropped(path);
      return;
    case DroppedKind::Session:
      err = open_session_file(state, p);  // its notice says it opened
      break;
    case DroppedKind::Embeddings:
      err = import_embeddings(state, p);  // its notice says what was imported
      if (err.empty()) state.set_source(Source::Inputs);
      break;
    case DroppedKind::Weights:
      err = import_weights(state, p);
      if (err.empty()) state.set_source(state.chapter3_source());
      break;
  }
  if (!err.empty()) notify(state, "Could not open the dropped " + name + ": " + err, "", true);
}

}  // namespace attnscope::gui
