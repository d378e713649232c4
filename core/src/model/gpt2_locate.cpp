// gpt2_locate.cpp: where a model's files are (locate_model, find_models)
// and the book's GPT_CONFIG.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "attnscope/base/errors.hpp"
#include "attnscope/hub/cache.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core {

namespace fs = std::filesystem;

namespace detail {

[[noreturn]] void fail(const fs::path& where, const std::string& what) {
  throw ParseError(where.string() + ": " + what);
}

}  // namespace detail

using detail::fail;

namespace {

bool is_pth(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".pth" || e == ".pt";
}

fs::path tokenizer_folder(const fs::path& dir) {
  std::error_code ec;
  if ((fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) ||
      (fs::exists(dir / "encoder.json", ec) && fs::exists(dir / "vocab.bpe", ec)))
    return dir;
  return {};
}

}  // namespace

fs::path resolve_model_path(const fs::path& model) {
  std::error_code ec;
  if (fs::exists(model, ec) || model.empty()) return model;
  const std::string text = model.string();
  hub::RepoRef ref;
  try {
    ref = hub::parse_repo_ref(text);
  } catch (const ParseError&) {
    fail(model, "no such file or folder");
  }
  const fs::path storage = hub::cache_root() / hub::repo_folder_name(ref.repo);
  const std::string pull = "attnscope-cli model pull " + text;
  const auto commit = hub::read_ref(storage, ref.revision);
  if (!commit) {
    if (text.find('/') == std::string::npos && text.find('.') != std::string::npos)
      fail(model, "no such file or folder");  // "gpt2.safetensors" is a file, not a model id
    fail(model, "no such file or folder, and no " + ref.repo + " revision '" + ref.revision +
                    "' in the Hugging Face cache (" + storage.string() + "): `" + pull +
                    "` downloads it");
  }
  const fs::path snapshot = storage / "snapshots" / *commit;
  if (!fs::exists(snapshot / "config.json", ec))
    fail(model, "the Hugging Face cache names commit " + *commit + " for " + ref.repo + "@" +
                    ref.revision + " but has no model in " + snapshot.string() + ": `" + pull +
                    "` completes it");
  return snapshot;
}

ModelFiles locate_model(const fs::path& given, const std::optional<fs::path>& config) {
  std::error_code ec;
  ModelFiles files;
  const fs::path path = resolve_model_path(given);
  if (!fs::exists(path, ec)) fail(path, "no such file or folder");
  fs::path dir = path;
  if (fs::is_directory(path, ec)) {
    for (const char* name :
         {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "model.pth"})
      if (fs::exists(path / name, ec)) {
        files.weights = path / name;
        break;
      }
    if (files.weights.empty()) {
      for (const auto& e : fs::directory_iterator(path, ec))
        if (is_pth(e.path())) files.weights = e.path();
    }
    if (files.weights.empty())
      fail(path,
           "no model.safetensors, model.safetensors.index.json or .pth file in this folder "
           "(a Hugging Face GPT-2 folder has config.json and model.safetensors)");
  } else {
    files.weights = path;
    dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  }
  if (config) {
    if (!fs::is_regular_file(*config, ec)) fail(*config, "no such config file");
    files.config = *config;
  } else if (is_pth(files.weights)) {
    for (const char* name : {"gpt_config.json", "config.json"})
      if (fs::exists(dir / name, ec)) {
        files.config = dir / name;
        break;
      }
    if (files.config.empty())
      fail(files.weights,
           "a .pth state_dict does not say its number of heads or whether W_query has a bias: "
           "pass --config FILE with the book's GPT_CONFIG as JSON ({\"vocab_size\": 50257, "
           "\"context_length\": 1024, \"emb_dim\": 768, \"n_heads\": 12, \"n_layers\": 12, "
           "\"drop_rate\": 0.1, \"qkv_bias\": false}), or put it beside the file as "
           "gpt_config.json");
  } else {
    if (!fs::exists(dir / "config.json", ec))
      fail(dir,
           "no config.json beside the weights (a Hugging Face GPT-2 folder has one; or pass "
           "--config FILE)");
    files.config = dir / "config.json";
  }
  files.tokenizer = tokenizer_folder(dir);
  return files;
}

namespace {

fs::path env_path(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? fs::path(v) : fs::path();
}

fs::path home() {
  const fs::path h = env_path("HOME");
  return h.empty() ? fs::path(".") : h;
}

bool has_weights(const fs::path& dir) {
  std::error_code ec;
  for (const char* name :
       {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "model.pth"})
    if (fs::exists(dir / name, ec)) return true;
  return false;
}

// A ref of the hub repo folder `storage` naming `commit` ("main" first), or "".
std::string ref_naming(const fs::path& storage, const std::string& commit) {
  if (hub::read_ref(storage, "main") == commit) return "main";
  std::error_code ec;
  const fs::path refs = storage / "refs";
  for (auto it = fs::recursive_directory_iterator(refs, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = fs::relative(it->path(), refs, ec).generic_string();
    if (hub::read_ref(storage, name) == commit) return name;
  }
  return "";
}

}  // namespace

std::vector<fs::path> model_search_folders() {
  const fs::path hub = hub::cache_root();
  fs::path data = env_path("XDG_DATA_HOME");
  if (data.empty()) data = home() / ".local" / "share";
  return {hub, data / "attnscope" / "models"};
}

std::vector<FoundModel> find_models() {
  std::vector<FoundModel> found;
  const auto folders = model_search_folders();
  std::error_code ec;
  // The hub: models--<org>--<name>/snapshots/<revision>/ with config.json.
  for (const auto& repo : fs::directory_iterator(folders[0], ec)) {
    const std::string dir = repo.path().filename().string();
    if (!dir.starts_with("models--")) continue;
    std::string name = dir.substr(8);
    if (auto at = name.find("--"); at != std::string::npos) name.replace(at, 2, "/");
    std::error_code ec2;
    for (const auto& snap : fs::directory_iterator(repo.path() / "snapshots", ec2))
      if (fs::exists(snap.path() / "config.json", ec2) && has_weights(snap.path())) {
        FoundModel m;
        m.name = m.repo = name;
        m.path = snap.path();
        m.where = "huggingface-cache";
        m.commit = snap.path().filename().string();
        m.revision = ref_naming(repo.path(), m.commit);
        m.bytes = hub::folder_bytes(snap.path());
        found.push_back(std::move(m));
      }
  }
  for (const auto& e : fs::directory_iterator(folders[1], ec)) {
    const fs::path& p = e.path();
    const std::string ext = p.extension().string();
    std::error_code ec2;
    if ((fs::is_directory(p, ec2) && has_weights(p)) || ext == ".safetensors" || ext == ".pth") {
      FoundModel m;
      m.name = p.filename().string();
      m.path = p;
      m.where = "attnscope";
      m.bytes = fs::is_directory(p, ec2) ? hub::folder_bytes(p) : fs::file_size(p, ec2);
      found.push_back(std::move(m));
    }
  }
  std::sort(found.begin(), found.end(), [](const FoundModel& a, const FoundModel& b) {
    return std::tie(a.name, a.path) < std::tie(b.name, b.path);
  });
  return found;
}

BookConfig parse_book_config(std::string_view json_text, std::string_view source) {
  const std::string where(source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw ParseError(where + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw ParseError(where + ": the book's GPT_CONFIG must be a JSON object");
  BookConfig b;
  Gpt2Config& c = b.config;
  auto whole = [&](const char* key, int& out) {
    if (!j.contains(key)) return;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 30))
      throw ParseError(where + ": \"" + key + "\" must be a positive whole number");
    out = v.get<int>();
  };
  static const std::set<std::string> known = {"vocab_size", "context_length", "emb_dim", "n_heads",
                                              "n_layers",   "drop_rate",      "qkv_bias"};
  for (const auto& [key, value] : j.items())
    if (!known.contains(key))
      throw ParseError(where + ": unknown key \"" + key + "\" (the book's GPT_CONFIG has " +
                       "vocab_size, context_length, emb_dim, n_heads, n_layers, drop_rate, "
                       "qkv_bias)");
  whole("vocab_size", c.vocab_size);
  whole("context_length", c.n_positions);
  whole("emb_dim", c.n_embd);
  whole("n_heads", c.n_head);
  whole("n_layers", c.n_layer);
  if (!j.contains("n_heads"))
    throw ParseError(where + ": \"n_heads\" is missing (the state_dict cannot say it)");
  if (j.contains("drop_rate") && !j["drop_rate"].is_number())
    throw ParseError(where + ": \"drop_rate\" must be a number (it is ignored: eval mode)");
  if (j.contains("drop_rate")) b.drop_rate = j["drop_rate"].get<double>();
  if (j.contains("qkv_bias")) {
    if (!j["qkv_bias"].is_boolean())
      throw ParseError(where + ": \"qkv_bias\" must be true or false");
    b.qkv_bias = j["qkv_bias"].get<bool>();
  }
  c.n_inner = 4 * c.n_embd;
  c.tie_word_embeddings = false;  // GPTModel has its own out_head
  if (c.n_embd % c.n_head != 0)
    throw ParseError(where + ": emb_dim " + std::to_string(c.n_embd) +
                     " is not divisible by n_heads " + std::to_string(c.n_head));
  return b;
}

}  // namespace attnscope::core
