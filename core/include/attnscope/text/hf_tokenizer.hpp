// hf_tokenizer.hpp: the tokenizer.json files of Hugging Face's `tokenizers`
// for the kinds today's open models ship, encoding as that library does:
//   - byte-level BPE (Llama 3, Qwen2, Qwen3): normalizer none or NFC, the
//     pre-tokenizer Sequence [Split(Regex, Isolated), ByteLevel(use_regex
//     false)] with Llama 3's or Qwen's pattern (a hand-written scanner, as
//     GPT-2's), `ignore_merges` (a pre-token in the vocabulary is one token);
//   - SentencePiece-style BPE (Gemma 3): normalizer Replace " " -> "▁", the
//     pre-tokenizer Split(" ", MergedWithPrevious) or none, byte fallback
//     to <0xNN> tokens, an unknown token.
// Added tokens are matched in the raw text first (leftmost, then longest);
// the post-processor (TemplateProcessing) or tokenizer_config.json beside
// the file (add_bos_token, bos_token) adds the BOS. Anything else in a file
// is refused with a ParseError naming the key and what is read.
//
// Spans: each Token's [start, end) are bytes of the text given to encode().
// Where the normalizer changed the text, a token's span covers the original
// characters its bytes came from: " " -> "▁" maps back to the one space;
// where NFC rewrote a run of characters (a base and its combining marks, a
// Hangul syllable's jamo) every character of the result stands for the
// whole run, and of several tokens sharing such a run the first takes it
// and the rest get empty spans at its end. Spans are increasing, never
// overlap, and together cover the text except what the tokenizer drops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/text/tokenizer.hpp"

namespace attnscope::core {

struct HfEncodeOptions {
  // Match special added tokens in the text and add the post-processor's
  // tokens (BOS); false reads special tokens as plain text (non-special
  // added tokens are still matched, as `tokenizers` does with
  // split_special_tokens) and adds nothing.
  bool special = true;
};

class HfTokenizer {
 public:
  // A tokenizer.json, or a folder holding one; tokenizer_config.json beside
  // it is read when present. Throws ParseError naming the file and key.
  static HfTokenizer load(const std::string& path);
  // The same from the JSON texts (config_json may be empty); `source`
  // names the file in messages.
  static HfTokenizer parse(std::string_view tokenizer_json, std::string_view config_json,
                           const std::string& source);
  // Whether `path` is a tokenizer.json or a folder holding one.
  static bool is_tokenizer_json(const std::string& path);

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  ~HfTokenizer();

  // Throws ParseError naming the byte offset when `text` is not valid UTF-8.
  std::vector<Token> encode(std::string_view text, HfEncodeOptions options = {}) const;
  // The bytes a token stands for (byte-level tokens mapped back to bytes,
  // "▁" as a space, <0xNN> as its byte, an added token its content);
  // throws ParseError on an unknown id.
  const std::string& token_bytes(int id) const;
  // The tokens' bytes concatenated (not necessarily valid UTF-8).
  std::string decode(const std::vector<int>& ids) const;
  std::size_t vocab_size() const;
  // The token the post-processor puts first, -1 when none.
  int bos_id() const;

  struct Impl;

 private:
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnscope::core
