// hf_tokenizer.cpp: reading tokenizer.json (see hf_tokenizer.hpp).
// Sections: helpers; normalizer and pre-tokenizer; the BPE model; added
// tokens; post-processor and tokenizer_config.json; load.
#include "attnscope/text/hf_tokenizer.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "text/hf_tokenizer_internal.hpp"
#include "text/unicode_text.hpp"

namespace attnscope::core {

namespace {

using nlohmann::json;

// The Split regexes of Llama 3 (digits in threes) and Qwen2/Qwen3 (one by one).
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

// --- helpers ----------------------------------------------------------------

[[noreturn]] void refuse(const std::string& source, const std::string& key,
                         const std::string& what) {
  throw ParseError(source + ": " + key + ": " + what);
}

std::string type_of(const json& node) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) return "";
  return node["type"].get<std::string>();
}

bool flag(const json& node, const char* key, bool fallback) {
  if (!node.is_object() || !node.contains(key) || node[key].is_null()) return fallback;
  return node[key].is_boolean() ? node[key].get<bool>() : fallback;
}

// A string option that must be absent, null or one of `allowed`.
void expect_string(const json& node, const char* key, std::initializer_list<std::string> allowed,
                   const std::string& source, const std::string& where) {
  if (!node.contains(key) || node[key].is_null()) return;
  if (node[key].is_string())
    for (const auto& a : allowed)
      if (node[key].get<std::string>() == a) return;
  refuse(source, where + "." + key, node[key].dump() + " is not read (only null or \"\")");
}

// --- normalizer and pre-tokenizer --------------------------------------------

void read_normalizer(const json& node, HfTokenizer::Impl& t, const std::string& source,
                     const std::string& where) {
  static const std::string kSupported =
      "supported: null, NFC, Replace(\" \" -> \"\xE2\x96\x81\"), Prepend(\"\xE2\x96\x81\"), "
      "or a Sequence of them";
  if (node.is_null()) return;
  const std::string type = type_of(node);
  if (type == "Sequence" && node.contains("normalizers") && node["normalizers"].is_array()) {
    int k = 0;
    for (const auto& n : node["normalizers"])
      read_normalizer(n, t, source, where + ".normalizers[" + std::to_string(k++) + "]");
  } else if (type == "NFC") {
    if (t.prepend_space_mark || t.replace_space)
      refuse(source, where, "NFC after Replace or Prepend is not read; " + kSupported);
    t.nfc = true;
  } else if (type == "Replace" && node.contains("pattern") && node["pattern"].is_object() &&
             node["pattern"].contains("String") && node["pattern"]["String"] == " " &&
             node.value("content", std::string()) == kSpaceMark) {
    t.replace_space = true;
  } else if (type == "Prepend" && node.value("prepend", std::string()) == kSpaceMark) {
    if (t.replace_space) refuse(source, where, "Prepend after Replace is not read; " + kSupported);
    t.prepend_space_mark = true;
  } else {
    refuse(source, where,
           "type \"" + type + "\" (" + node.dump().substr(0, 80) + ") is not read; " + kSupported);
  }
}

void read_split(const json& node, HfTokenizer::Impl& t, const std::string& source,
                const std::string& where) {
  const json& pattern = node.value("pattern", json::object());
  const std::string behavior = node.value("behavior", std::string());
  if (flag(node, "invert", false)) refuse(source, where + ".invert", "true is not read");
  if (pattern.contains("Regex") && pattern["Regex"].is_string() && behavior == "Isolated") {
    const std::string rx = pattern["Regex"].get<std::string>();
    if (rx == kLlama3Pattern) {
      t.max_digits = 3;
    } else if (rx == kQwenPattern) {
      t.max_digits = 1;
    } else {
      refuse(source, where + ".pattern.Regex",
             "the pattern " + json(rx).dump() +
                 " is not read; supported: Llama 3's and Qwen's (\\p{N}{1,3} or \\p{N})");
    }
  } else if (pattern.contains("String") && pattern["String"] == " " &&
             behavior == "MergedWithPrevious") {
    t.split_on_space = true;
  } else {
    refuse(source, where,
           "Split " + pattern.dump() + " with behavior \"" + behavior +
               "\" is not read; supported: Regex (Llama 3's or Qwen's) Isolated, String \" \" "
               "MergedWithPrevious");
  }
}

void read_pre_tokenizer(const json& node, HfTokenizer::Impl& t, const std::string& source) {
  static const std::string kSupported =
      "supported: Sequence [Split(Regex, Isolated), ByteLevel(use_regex false)], "
      "Split(\" \", MergedWithPrevious), or null";
  if (node.is_null()) return;
  const std::string type = type_of(node);
  if (type == "Split") return read_split(node, t, source, "pre_tokenizer");
  const bool sequence = type == "Sequence" && node.contains("pretokenizers") &&
                        node["pretokenizers"].is_array() && node["pretokenizers"].size() == 2;
  if (!sequence)
    refuse(source, "pre_tokenizer", "type \"" + type + "\" is not read; " + kSupported);
  const json& split = node["pretokenizers"][0];
  const json& byte_level = node["pretokenizers"][1];
  if (type_of(split) != "Split" || type_of(byte_level) != "ByteLevel")
    refuse(source, "pre_tokenizer.pretokenizers",
           "a Sequence of \"" + type_of(split) + "\" and \"" + type_of(byte_level) +
               "\" is not read; " + kSupported);
  read_split(split, t, source, "pre_tokenizer.pretokenizers[0]");
  if (t.max_digits == 0) refuse(source, "pre_tokenizer.pretokenizers[0]", kSupported);
  if (flag(byte_level, "use_regex", true))
    refuse(source, "pre_tokenizer.pretokenizers[1].use_regex", "true is not read; " + kSupported);
  if (flag(byte_level, "add_prefix_space", false))
    refuse(source, "pre_tokenizer.pretokenizers[1].add_prefix_space",
           "true is not read; " + kSupported);
  t.byte_level = true;
}

// --- the BPE model -----------------------------------------------------------

// The bytes a vocabulary key stands for.
std::string key_bytes(const std::string& key, const HfTokenizer::Impl& t, const std::string& source,
                      int id) {
  std::string bytes;
  if (t.byte_level) {
    for (std::size_t i = 0; i < key.size();) {
      std::uint32_t cp = 0;
      const std::size_t len = unicode::utf8_sequence(key, i, cp);
      const int byte = len == 0 ? -1 : unicode::byte_of_char(cp);
      if (byte < 0)
        refuse(source, "model.vocab",
               "token " + json(key).dump() + " (id " + std::to_string(id) +
                   ") holds a character outside the ByteLevel map");
      bytes += static_cast<char>(byte);
      i += len;
    }
    return bytes;
  }
  if (t.byte_fallback && key.size() == 6 && key.rfind("<0x", 0) == 0 && key[5] == '>') {
    const auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : (c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1);
    };
    const int hi = hex(key[3]), lo = hex(key[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  for (std::size_t i = 0; i < key.size();) {
    if (key.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      bytes += ' ';
      i += kSpaceMark.size();
    } else {
      bytes += key[i++];
    }
  }
  return bytes;
}

void read_vocab(const std::vector<std::pair<std::string, long long>>& vocab, HfTokenizer::Impl& t,
                const std::string& source) {
  if (vocab.empty())
    refuse(source, "model.vocab", "expected an object mapping token strings to ids");
  t.id_of.reserve(vocab.size());
  for (const auto& [key, value] : vocab) {
    if (value < 0 || value >= (1LL << 30))
      refuse(source, "model.vocab",
             "token " + json(key).dump() + " has id " + std::to_string(value));
    const auto id = static_cast<std::size_t>(value);
    if (id >= t.bytes_of_id.size()) t.bytes_of_id.resize(id + 1);
    if (!t.bytes_of_id[id].empty())
      refuse(source, "model.vocab", "id " + std::to_string(id) + " is given to two tokens");
    t.bytes_of_id[id] = key_bytes(key, t, source, static_cast<int>(id));
    if (!t.id_of.insert(key, static_cast<int>(id)))
      refuse(source, "model.vocab", "token " + json(key).dump() + " appears twice");
  }
}

int vocab_id(const HfTokenizer::Impl& t, const std::string& key, const std::string& source,
             std::size_t rank) {
  const int id = t.id_of.find(key);
  if (id < 0)
    refuse(source, "model.merges[" + std::to_string(rank) + "]",
           "token " + json(key).dump() + " is not in the vocabulary");
  return id;
}

void read_merges(const std::vector<std::pair<std::string, std::string>>& merges,
                 HfTokenizer::Impl& t, const std::string& source) {
  t.merges.reserve(merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    joined.assign(left).append(right);
    const int a = vocab_id(t, left, source, rank);
    const int b = vocab_id(t, right, source, rank);
    const int ab = vocab_id(t, joined, source, rank);
    t.merges.insert(a, b, {static_cast<int>(rank), ab});
  }
}

void read_model(const TokenizerDocument& file, HfTokenizer::Impl& t, const std::string& source) {
  const json& model = file.doc["model"];
  if (type_of(model) != "BPE")
    refuse(source, "model.type",
           "\"" + type_of(model) +
               "\" is not read; supported: BPE (byte-level or with byte "
               "fallback)");
  if (model.contains("dropout") && !model["dropout"].is_null())
    refuse(source, "model.dropout", model["dropout"].dump() + " is not read (only null)");
  expect_string(model, "continuing_subword_prefix", {""}, source, "model");
  expect_string(model, "end_of_word_suffix", {""}, source, "model");
  t.ignore_merges = flag(model, "ignore_merges", false);
  t.byte_fallback = flag(model, "byte_fallback", false);
  t.fuse_unk = flag(model, "fuse_unk", false);
  if (t.byte_level && t.byte_fallback)
    refuse(source, "model.byte_fallback", "true with a ByteLevel pre-tokenizer is not read");
  if (!file.has_vocab) refuse(source, "model.vocab", "missing (an object of token strings to ids)");
  if (!file.has_merges) refuse(source, "model.merges", "missing (an array of merges)");
  read_vocab(file.vocab, t, source);
  read_merges(file.merges, t, source);
  const auto& chars = unicode::byte_chars();
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    const std::string fallback = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
    t.fallback_ids[static_cast<std::size_t>(b)] = t.id_of.find(fallback);
    const int c = t.id_of.find(chars[static_cast<std::size_t>(b)]);
    t.byte_ids[static_cast<std::size_t>(b)] = c;
    if (t.byte_level && c < 0)
      refuse(source, "model.vocab",
             "the byte " + std::to_string(b) + "'s character " +
                 json(chars[static_cast<std::size_t>(b)]).dump() +
                 " is missing (a ByteLevel vocabulary has all 256)");
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const int u = t.id_of.find(model["unk_token"].get<std::string>());
    if (u < 0)
      refuse(source, "model.unk_token", model["unk_token"].dump() + " is not in the vocabulary");
    t.unk_id = u;
  }
}

// --- added tokens --------------------------------------------------------------

void add_to_trie(HfTokenizer::Impl& t, const std::string& content, int index) {
  int node = 0;
  for (const char c : content) {
    const std::uint64_t edge =
        (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(c);
    const auto it = t.trie_edges.find(edge);
    if (it != t.trie_edges.end()) {
      node = it->second;
    } else {
      const int next = static_cast<int>(t.token_at.size());
      t.token_at.push_back(-1);
      t.trie_edges.emplace(edge, next);
      node = next;
    }
  }
  t.token_at[static_cast<std::size_t>(node)] = index;
}

// Whether the normalizer leaves `content` as it is (a normalized added token
// is matched on the raw text, which is right only then).
bool normalizer_keeps(const HfTokenizer::Impl& t, const std::string& content) {
  if (t.prepend_space_mark) return false;
  if (t.replace_space && content.find(' ') != std::string::npos) return false;
  return !t.nfc || unicode::nfc_string(content) == content;
}

void read_added_tokens(const json& list, HfTokenizer::Impl& t, const std::string& source) {
  if (list.is_null()) return;
  if (!list.is_array()) refuse(source, "added_tokens", "expected an array");
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& a = list[k];
    const std::string where = "added_tokens[" + std::to_string(k) + "]";
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string() ||
        a["content"].get<std::string>().empty())
      refuse(source, where, "expected {\"id\": N, \"content\": \"...\", ...}");
    HfAddedToken token;
    const long long id = a["id"].get<long long>();
    if (id < 0 || id >= (1LL << 30)) refuse(source, where + ".id", std::to_string(id));
    token.id = static_cast<int>(id);
    token.content = a["content"].get<std::string>();
    token.special = flag(a, "special", false);
    token.lstrip = flag(a, "lstrip", false);
    token.rstrip = flag(a, "rstrip", false);
    token.single_word = flag(a, "single_word", false);
    if (flag(a, "normalized", !token.special) && !normalizer_keeps(t, token.content))
      refuse(source, where + ".normalized",
             "true for " + json(token.content).dump() +
                 ", which the normalizer changes, is not read (added tokens are matched in the "
                 "raw text)");
    unicode::decode_utf8(token.content, 0, token.content.size(), "added tokens");
    // A token of the vocabulary keeps the bytes its key stands for (Gemma's
    // "▁▁" is two spaces when the model makes it); any other, its content.
    if (static_cast<std::size_t>(token.id) >= t.bytes_of_id.size())
      t.bytes_of_id.resize(static_cast<std::size_t>(token.id) + 1);
    if (t.bytes_of_id[static_cast<std::size_t>(token.id)].empty())
      t.bytes_of_id[static_cast<std::size_t>(token.id)] = token.content;
    t.id_of.assign(token.content, token.id);
    add_to_trie(t, token.content, static_cast<int>(t.added.size()));
    t.added.push_back(std::move(token));
  }
}

// --- post-processor and tokenizer_config.json -----------------------------------

void read_template(const json& node, HfTokenizer::Impl& t, const std::string& source,
                   const std::string& where) {
  const json& single = node.value("single", json());
  const json& specials = node.value("special_tokens", json::object());
  if (!single.is_array()) refuse(source, where + ".single", "expected an array");
  bool seen_a = false;
  for (const auto& item : single) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", std::string()) != "A")
        refuse(source, where + ".single", "only the sequence \"A\" is read");
      seen_a = true;
      continue;
    }
    const std::string name = item.contains("SpecialToken") && item["SpecialToken"].is_object()
                                 ? item["SpecialToken"].value("id", std::string())
                                 : std::string();
    if (name.empty() || !specials.contains(name) || !specials[name].contains("ids") ||
        !specials[name]["ids"].is_array())
      refuse(source, where + ".single", item.dump() + " names no entry of special_tokens");
    for (const auto& id : specials[name]["ids"]) {
      if (!id.is_number_integer() || id.get<long long>() < 0 ||
          id.get<long long>() >= static_cast<long long>(t.bytes_of_id.size()))
        refuse(source, where + ".special_tokens", "id " + id.dump() + " is outside the vocabulary");
      (seen_a ? t.suffix_ids : t.prefix_ids).push_back(static_cast<int>(id.get<long long>()));
    }
  }
}

void read_post_processor(const json& node, HfTokenizer::Impl& t, const std::string& source,
                         const std::string& where) {
  if (node.is_null()) return;
  const std::string type = type_of(node);
  if (type == "ByteLevel") return;  // offsets only: it adds no token
  if (type == "TemplateProcessing") return read_template(node, t, source, where);
  if (type == "Sequence" && node.contains("processors") && node["processors"].is_array()) {
    int k = 0;
    for (const auto& p : node["processors"])
      read_post_processor(p, t, source, where + ".processors[" + std::to_string(k++) + "]");
    return;
  }
  refuse(source, where,
         "type \"" + type +
             "\" is not read; supported: TemplateProcessing, ByteLevel, a Sequence of them, null");
}

// tokenizer_config.json's add_bos_token / add_eos_token, when true, add the
// token its bos_token / eos_token names unless the post-processor already does.
void read_config(std::string_view text, HfTokenizer::Impl& t, const std::string& source) {
  if (text.empty()) return;
  json config;
  try {
    config = json::parse(text);
  } catch (const json::exception& e) {
    throw ParseError(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!config.is_object()) throw ParseError(source + ": expected a JSON object");
  const auto token_named = [&](const char* key) -> int {
    if (!config.contains(key)) return -1;
    const json& v = config[key];
    const std::string name = v.is_string()                            ? v.get<std::string>()
                             : v.is_object() && v.contains("content") ? v.value("content", "")
                                                                      : std::string();
    const int id = name.empty() ? -1 : t.id_of.find(name);
    if (id < 0) refuse(source, key, v.dump() + " names no token of the vocabulary");
    return id;
  };
  if (flag(config, "add_bos_token", false)) {
    const int bos = token_named("bos_token");
    if (bos >= 0 && (t.prefix_ids.empty() || t.prefix_ids.front() != bos))
      t.prefix_ids.insert(t.prefix_ids.begin(), bos);
  }
  if (flag(config, "add_eos_token", false)) {
    const int eos = token_named("eos_token");
    if (eos >= 0 && (t.suffix_ids.empty() || t.suffix_ids.back() != eos))
      t.suffix_ids.push_back(eos);
  }
}

std::filesystem::path tokenizer_file(const std::string& path) {
  const std::filesystem::path p(path);
  return std::filesystem::is_directory(p) ? p / "tokenizer.json" : p;
}

}  // namespace

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

HfTokenizer HfTokenizer::parse(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& source) {
  const TokenizerDocument file = read_tokenizer_document(tokenizer_json, source);
  const json& doc = file.doc;
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object())
    throw ParseError(source + ": expected a tokenizer.json (an object with \"model\")");
  auto t = std::make_unique<Impl>();
  read_normalizer(doc.value("normalizer", json()), *t, source, "normalizer");
  read_pre_tokenizer(doc.value("pre_tokenizer", json()), *t, source);
  read_model(file, *t, source);
  read_added_tokens(doc.value("added_tokens", json()), *t, source);
  read_post_processor(doc.value("post_processor", json()), *t, source, "post_processor");
  for (std::size_t id = 0; id < t->bytes_of_id.size(); ++id)
    if (t->bytes_of_id[id].empty())
      refuse(source, "model.vocab",
             "no token has id " + std::to_string(id) +
                 " (ids must run 0..N-1, added tokens included)");
  read_config(config_json, *t,
              (std::filesystem::path(source).parent_path() / "tokenizer_config.json").string());
  return HfTokenizer(std::move(t));
}

HfTokenizer HfTokenizer::load(const std::string& path) {
  const std::filesystem::path file = tokenizer_file(path);
  if (!std::filesystem::is_regular_file(file)) throw ParseError(path + ": no tokenizer.json here");
  const std::filesystem::path config = file.parent_path() / "tokenizer_config.json";
  const std::string config_text =
      std::filesystem::is_regular_file(config) ? read_text_file(config.string()) : std::string();
  return parse(read_text_file(file.string()), config_text, file.string());
}

bool HfTokenizer::is_tokenizer_json(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path file = tokenizer_file(path);
  return file.extension() == ".json" && std::filesystem::is_regular_file(file, ec);
}

const std::string& HfTokenizer::token_bytes(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->bytes_of_id.size())
    throw ParseError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                     std::to_string(impl_->bytes_of_id.size() - 1) + ")");
  return impl_->bytes_of_id[static_cast<std::size_t>(id)];
}

std::string HfTokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) out += token_bytes(id);
  return out;
}

std::size_t HfTokenizer::vocab_size() const { return impl_->bytes_of_id.size(); }

int HfTokenizer::bos_id() const {
  return impl_->prefix_ids.empty() ? -1 : impl_->prefix_ids.front();
}

}  // namespace attnscope::core
