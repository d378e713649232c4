// tokenizer.cpp: GPT-2's byte-level BPE (see tokenizer.hpp). The steps follow
// OpenAI's encoder.py: bytes_to_unicode, the pre-tokenizer pattern (here a
// scanner over code points), bpe() by merge rank, and the encoder lookup.
#include "attnscope/text/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/text/utf8.hpp"
#include "text/unicode_text.hpp"

#ifndef ATTNSCOPE_ASSETS_DIR
#error "ATTNSCOPE_ASSETS_DIR must name the source tree's assets folder"
#endif
#ifndef ATTNSCOPE_DATA_FROM_BIN
#error "ATTNSCOPE_DATA_FROM_BIN must name the installed data folder relative to bin/"
#endif

namespace attnscope::core {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

using unicode::byte_chars;
using unicode::byte_of_char;
using unicode::CharClass;
using unicode::classify;
using unicode::utf8_sequence;

// One code point of the text being scanned, with its byte offset.
struct CodePoint {
  std::uint32_t cp;
  std::size_t offset;
  CharClass cls;
};

// Length in code points of the pattern's match at cps[i] (always >= 1).
std::size_t match_length(const std::vector<CodePoint>& cps, std::size_t i) {
  const std::size_t n = cps.size();
  const auto is = [&](std::size_t k, std::uint32_t c) { return k < n && cps[k].cp == c; };
  if (cps[i].cp == '\'') {  // 's|'t|'re|'ve|'m|'ll|'d
    if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd')) return 2;
    if ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) ||
        (is(i + 1, 'l') && is(i + 2, 'l')))
      return 3;
  }
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional space, then a run of one class.
  std::size_t j = i;
  if (cps[i].cp == ' ' && i + 1 < n && cps[i + 1].cls != CharClass::Space) ++j;
  if (cps[j].cls != CharClass::Space) {
    const CharClass cls = cps[j].cls;
    while (j < n && cps[j].cls == cls) ++j;
    return j - i;
  }
  // \s+(?!\S) then \s+: a run followed by a non-space gives the run minus
  // its last character, when that leaves any.
  while (j < n && cps[j].cls == CharClass::Space) ++j;
  const std::size_t run = j - i;
  return (j < n && run > 1) ? run - 1 : run;
}

}  // namespace

std::vector<Token> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<Token> out;
  std::size_t chunk_start = 0;
  while (chunk_start <= text.size()) {
    const std::size_t special =
        end_of_text_id_ < 0 ? std::string_view::npos : text.find(kEndOfText, chunk_start);
    const std::size_t chunk_end = special == std::string_view::npos ? text.size() : special;
    encode_piece(text, chunk_start, chunk_end, out);
    if (special == std::string_view::npos) break;
    out.push_back({end_of_text_id_, std::string(kEndOfText), special, special + kEndOfText.size()});
    chunk_start = special + kEndOfText.size();
  }
  return out;
}

std::vector<Token> Gpt2Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<Token> out;
  encode_piece(text, 0, text.size(), out);
  return out;
}

void Gpt2Tokenizer::encode_piece(std::string_view text, std::size_t start, std::size_t end,
                                 std::vector<Token>& out) const {
  std::vector<CodePoint> cps;
  for (std::size_t i = start; i < end;) {
    std::uint32_t cp = 0;
    const std::size_t len = utf8_sequence(text.substr(0, end), i, cp);
    if (len == 0)
      throw ParseError("text is not valid UTF-8 at byte " + std::to_string(i) +
                       ": encode UTF-8 text (GPT-2 tokenizes UTF-8 bytes)");
    cps.push_back({cp, i, classify(cp)});
    i += len;
  }
  const auto& chars = byte_chars();
  for (std::size_t i = 0; i < cps.size();) {
    const std::size_t len = match_length(cps, i);
    const std::size_t piece_start = cps[i].offset;
    const std::size_t piece_end = i + len < cps.size() ? cps[i + len].offset : end;
    i += len;
    // bpe(): the piece's bytes as mapped characters, merged pair by pair,
    // lowest rank first, every occurrence of the pair left to right.
    std::vector<std::string> parts;
    for (std::size_t b = piece_start; b < piece_end; ++b)
      parts.push_back(chars[static_cast<unsigned char>(text[b])]);
    while (parts.size() > 1) {
      int best = std::numeric_limits<int>::max();
      std::size_t best_at = 0;
      for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
        const auto it = rank_of_.find(parts[k] + " " + parts[k + 1]);
        if (it != rank_of_.end() && it->second < best) best = it->second, best_at = k;
      }
      if (best == std::numeric_limits<int>::max()) break;
      const std::string left = parts[best_at];
      const std::string right = parts[best_at + 1];
      std::vector<std::string> merged;
      for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k + 1 < parts.size() && parts[k] == left && parts[k + 1] == right) {
          merged.push_back(left + right);
          ++k;
        } else {
          merged.push_back(parts[k]);
        }
      }
      parts = std::move(merged);
    }
    std::size_t offset = piece_start;
    for (const auto& part : parts) {
      const auto it = id_of_.find(part);
      if (it == id_of_.end())
        throw ParseError("the vocabulary has no token \"" + part +
                         "\" although its merges make it");
      const std::string& bytes = bytes_of_id_[static_cast<std::size_t>(it->second)];
      out.push_back({it->second, bytes, offset, offset + bytes.size()});
      offset += bytes.size();
    }
  }
}

const std::string& Gpt2Tokenizer::token_bytes(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= bytes_of_id_.size())
    throw ParseError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                     std::to_string(bytes_of_id_.size() - 1) + ")");
  return bytes_of_id_[static_cast<std::size_t>(id)];
}

std::string Gpt2Tokenizer::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) out += token_bytes(id);
  return out;
}

std::string Gpt2Tokenizer::decode_text(const std::vector<int>& ids) const {
  // Bytes first, text second: a character split across two tokens comes out
  // whole, as tiktoken's decode gives it.
  return decode_utf8_replace(decode(ids));
}

namespace {

// Parses encoder.json / vocab.json into the tokenizer's two id tables.
void read_vocabulary(std::unordered_map<std::string, int>& id_of,
                     std::vector<std::string>& bytes_of_id, const std::string& text,
                     const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ParseError(path + ": not valid JSON (" + e.what() +
                     "): expected GPT-2's encoder.json / vocab.json");
  }
  if (!doc.is_object() || doc.empty())
    throw ParseError(path + ": expected a JSON object mapping token strings to ids");
  bytes_of_id.assign(doc.size(), std::string());
  std::vector<bool> seen(doc.size(), false);
  for (const auto& [key, value] : doc.items()) {
    if (!value.is_number_integer() || value.get<long long>() < 0 ||
        value.get<long long>() >= static_cast<long long>(doc.size()))
      throw ParseError(path + ": token \"" + key + "\" has id " + value.dump() +
                       "; ids must be 0.." + std::to_string(doc.size() - 1));
    const auto id = static_cast<std::size_t>(value.get<long long>());
    if (seen[id]) throw ParseError(path + ": id " + std::to_string(id) + " is given to two tokens");
    seen[id] = true;
    std::string bytes;
    if (key == Gpt2Tokenizer::kEndOfText) {
      bytes = key;
    } else {
      for (std::size_t i = 0; i < key.size();) {
        std::uint32_t cp = 0;
        const std::size_t len = utf8_sequence(key, i, cp);
        const int byte = len == 0 ? -1 : byte_of_char(cp);
        if (byte < 0)
          throw ParseError(path + ": token \"" + key + "\" (id " + std::to_string(id) +
                           ") holds a character outside GPT-2's byte-to-unicode map");
        bytes += static_cast<char>(byte);
        i += len;
      }
    }
    bytes_of_id[id] = std::move(bytes);
    id_of.emplace(key, static_cast<int>(id));
  }
}

// Parses vocab.bpe / merges.txt: "#version" line, then "left right" per line by rank.
void read_merges(std::unordered_map<std::string, int>& rank_of, const std::string& text,
                 const std::string& path) {
  std::size_t line_start = 0;
  int line_number = 0;
  int rank = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw ParseError(path + ": line " + std::to_string(line_number) +
                       " is not a merge \"left right\" (two token strings and one space)");
    rank_of.emplace(line, rank++);
  }
  if (rank == 0) throw ParseError(path + ": no merges (expected GPT-2's vocab.bpe / merges.txt)");
}

}  // namespace

Gpt2Tokenizer Gpt2Tokenizer::load(const std::string& encoder_json_path,
                                  const std::string& vocab_bpe_path) {
  Gpt2Tokenizer tok;
  read_vocabulary(tok.id_of_, tok.bytes_of_id_, read_text_file(encoder_json_path),
                  encoder_json_path);
  read_merges(tok.rank_of_, read_text_file(vocab_bpe_path), vocab_bpe_path);
  const auto eot = tok.id_of_.find(std::string(kEndOfText));
  tok.end_of_text_id_ = eot == tok.id_of_.end() ? -1 : eot->second;
  return tok;
}

Gpt2Tokenizer Gpt2Tokenizer::load_hf(const std::string& vocab_json_path,
                                     const std::string& merges_txt_path) {
  return load(vocab_json_path, merges_txt_path);
}

Gpt2Tokenizer Gpt2Tokenizer::load_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path base(dir);
  if (fs::exists(base / "encoder.json") && fs::exists(base / "vocab.bpe"))
    return load((base / "encoder.json").string(), (base / "vocab.bpe").string());
  if (fs::exists(base / "vocab.json") && fs::exists(base / "merges.txt"))
    return load_hf((base / "vocab.json").string(), (base / "merges.txt").string());
  throw ParseError(dir +
                   ": no GPT-2 vocabulary here: expected encoder.json + vocab.bpe (OpenAI) or "
                   "vocab.json + merges.txt (Hugging Face)");
}

std::string Gpt2Tokenizer::assets_dir() {
  const char* env = std::getenv("ATTNSCOPE_ASSETS");
  if (env != nullptr && *env != '\0') return env;
  // An installed program finds its data beside it (<prefix>/bin/../share/
  // attnscope), wherever the prefix was installed or moved to; a program in
  // the build tree has nothing there and reads the source tree's assets.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed =
        (exe.parent_path() / ATTNSCOPE_DATA_FROM_BIN).lexically_normal();
    if (std::filesystem::exists(installed / "gpt2" / "encoder.json", ec)) return installed.string();
  }
  return ATTNSCOPE_ASSETS_DIR;
}

const Gpt2Tokenizer& Gpt2Tokenizer::builtin() {
  static const Gpt2Tokenizer tok = [] {
    const std::string dir = (std::filesystem::path(assets_dir()) / "gpt2").string();
    if (!std::filesystem::exists(std::filesystem::path(dir) / "encoder.json") ||
        !std::filesystem::exists(std::filesystem::path(dir) / "vocab.bpe"))
      throw ParseError(
          "GPT-2's vocabulary is missing: " + dir +
          " needs encoder.json and vocab.bpe; set ATTNSCOPE_ASSETS to the folder holding gpt2/");
    return load((std::filesystem::path(dir) / "encoder.json").string(),
                (std::filesystem::path(dir) / "vocab.bpe").string());
  }();
  return tok;
}

std::string printable_token(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    std::uint32_t cp = 0;
    const std::size_t len = utf8_sequence(bytes, i, cp);
    if (len == 0) {
      static const char* hex = "0123456789ABCDEF";
      const auto b = static_cast<unsigned char>(bytes[i]);
      out += "<0x";
      out += hex[b >> 4];
      out += hex[b & 0xF];
      out += '>';
      ++i;
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string decode_utf8_replace(std::string_view bytes) {
  static constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const unsigned char c = at(i);
    // The bytes that may follow the first, as Unicode's table of well-formed
    // sequences lists them: narrower second-byte ranges rule out overlong
    // forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    if (len == 0) {  // 80..C1 or F5..FF: never the start of a character
      out += kReplacement;
      ++i;
      continue;
    }
    // Take continuation bytes while they fit; a sequence cut short (by the
    // end or by a byte that cannot continue it) is one maximal subpart and
    // becomes one U+FFFD, and the byte that stopped it is read afresh.
    std::size_t k = 1;
    while (k < len && i + k < bytes.size() && at(i + k) >= lo && at(i + k) <= hi) {
      ++k;
      lo = 0x80, hi = 0xBF;
    }
    if (k == len)
      out.append(bytes.substr(i, len));
    else
      out += kReplacement;
    i += k;
  }
  return out;
}

std::string tokens_json(const std::vector<Token>& tokens) {
  nlohmann::json ids = nlohmann::json::array();
  nlohmann::json texts = nlohmann::json::array();
  nlohmann::json spans = nlohmann::json::array();
  for (const auto& t : tokens) {
    ids.push_back(t.id);
    texts.push_back(printable_token(t.text));
    spans.push_back({t.start, t.end});
  }
  return "{\"ids\": " + ids.dump() + ", \"tokens\": " + texts.dump(-1, ' ', false) +
         ", \"spans\": " + spans.dump() + "}";
}

std::vector<std::string> parse_json_string_lines(std::string_view text, std::string_view source) {
  std::vector<std::string> out;
  std::size_t line_start = 0;
  int line_number = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      value = nullptr;
    }
    if (!value.is_string())
      throw ParseError(std::string(source) + ": line " + std::to_string(line_number) +
                       " is not a JSON string (--jsonl reads one JSON string per line)");
    out.push_back(value.get<std::string>());
  }
  return out;
}

}  // namespace attnscope::core
