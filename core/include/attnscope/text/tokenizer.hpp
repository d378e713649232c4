// tokenizer.hpp: GPT-2's byte-level BPE tokenizer, exactly as OpenAI's
// encoder.py (and the book's tiktoken "gpt2" with
// allowed_special={"<|endoftext|>"}): bytes mapped to printable characters,
// the pre-tokenizer pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (a hand-written scanner; Unicode classes from Python's `regex` module),
// then merges applied by rank. "<|endoftext|>" typed in the text is the
// special token 50256. Errors are ParseError (base/errors.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnscope::core {

// One token of an encoded text.
struct Token {
  int id = 0;
  std::string text;       // the token's bytes (may be part of a UTF-8 character)
  std::size_t start = 0;  // byte span [start, end) in the encoded text
  std::size_t end = 0;
};

class Gpt2Tokenizer {
 public:
  static constexpr std::string_view kEndOfText = "<|endoftext|>";

  // OpenAI's files: encoder.json (token string -> id) and vocab.bpe (merges,
  // first line "#version: ..."). Throws ParseError naming the file.
  static Gpt2Tokenizer load(const std::string& encoder_json_path,
                            const std::string& vocab_bpe_path);
  // A Hugging Face folder's vocab.json and merges.txt (the same data).
  static Gpt2Tokenizer load_hf(const std::string& vocab_json_path,
                               const std::string& merges_txt_path);
  // A folder holding encoder.json + vocab.bpe, or vocab.json + merges.txt.
  static Gpt2Tokenizer load_dir(const std::string& dir);
  // GPT-2's vocabulary from assets/gpt2 (see assets_dir()); loaded once.
  static const Gpt2Tokenizer& builtin();
  // The folder holding gpt2/ and presets/: $ATTNSCOPE_ASSETS when set, else
  // <folder of the executable>/../share/attnscope when an installed copy is
  // there (a relocatable prefix), else the source tree's assets folder.
  static std::string assets_dir();

  // Throws ParseError naming the byte offset when `text` is not valid UTF-8.
  std::vector<Token> encode(std::string_view text) const;
  // The same with "<|endoftext|>" read as plain text (tiktoken's encode_ordinary).
  std::vector<Token> encode_ordinary(std::string_view text) const;
  // The bytes of the tokens, concatenated; throws ParseError on an unknown id.
  // They need not be valid UTF-8 (a token may end inside a character): text
  // for people or for JSON is decode_text().
  std::string decode(const std::vector<int>& ids) const;
  // The tokens as text, as tiktoken's decode gives it: their bytes
  // concatenated, then decode_utf8_replace(). Throws ParseError on an unknown id.
  std::string decode_text(const std::vector<int>& ids) const;
  // The bytes of one token; throws ParseError on an unknown id.
  const std::string& token_bytes(int id) const;
  std::size_t vocab_size() const { return bytes_of_id_.size(); }
  int end_of_text_id() const { return end_of_text_id_; }

 private:
  void encode_piece(std::string_view text, std::size_t start, std::size_t end,
                    std::vector<Token>& out) const;

  std::unordered_map<std::string, int> id_of_;    // byte-mapped token string -> id
  std::vector<std::string> bytes_of_id_;          // id -> the token's bytes
  std::unordered_map<std::string, int> rank_of_;  // "left right" (byte-mapped) -> merge rank
  int end_of_text_id_ = -1;                       // -1: the vocabulary has no "<|endoftext|>"
};

// Bytes as valid UTF-8, as Python's bytes.decode("utf-8", errors="replace")
// reads them (so tiktoken's decode): well-formed characters kept, each
// maximal subpart of an ill-formed sequence (a character cut short, a lone
// continuation byte, an overlong form, a surrogate, a byte C0, C1 or F5..FF)
// replaced by one U+FFFD. E.g. "a\xe6\x9d" -> "a\uFFFD", "\xed\xa0\x80" -> three.
std::string decode_utf8_replace(std::string_view bytes);

// One token's bytes as UTF-8 text for people: complete characters as they
// are, every byte of an incomplete one (a token may hold part of a
// character) as "<0xHH>". E.g. " \xe6" -> " <0xE6>". Always valid UTF-8; a
// lone token keeps its bytes visible where decode_utf8_replace would show
// one "\uFFFD" for many different tokens. Text of several tokens is
// Gpt2Tokenizer::decode_text, so that a split character comes out whole.
std::string printable_token(std::string_view bytes);

// One line of JSON: {"ids": [...], "tokens": [...], "spans": [[start, end], ...]}
// with tokens as printable_token() and spans as byte offsets into the text.
std::string tokens_json(const std::vector<Token>& tokens);

// JSON lines: every non-empty line of `text` must be one JSON string; returns
// them in order. Throws ParseError naming `source` and the line.
std::vector<std::string> parse_json_string_lines(std::string_view text, std::string_view source);

}  // namespace attnscope::core
