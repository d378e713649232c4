// hf_tokenizer_internal.hpp: what a loaded tokenizer.json holds
// (hf_tokenizer.cpp reads it, hf_tokenizer_encode.cpp encodes with it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attnscope/text/hf_tokenizer.hpp"

namespace attnscope::core {

// An entry of added_tokens: matched in the raw text before anything else.
struct HfAddedToken {
  int id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;       // the match takes the whitespace before it
  bool rstrip = false;       // ... and after it
  bool single_word = false;  // only between non-word characters
};

// Token string -> id, open addressing over one arena of the keys: loading
// Gemma 3's 262,144 tokens and checking 514,906 merges against them is most
// of a load, and a node per key (std::unordered_map) misses the cache.
class TokenIds {
 public:
  void reserve(std::size_t count);
  // Adds key -> id; false (and no change) when key is there already.
  bool insert(std::string_view key, int id);
  // Adds key -> id or gives key the new id.
  void assign(std::string_view key, int id);
  // The id of key, or -1.
  int find(std::string_view key) const;

 private:
  struct Slot {
    std::uint32_t offset = 0;  // into arena_
    std::uint32_t length = 0;
    std::uint32_t hash = 0;
    int id = -1;  // -1: empty
  };
  std::size_t locate(std::string_view key, std::uint32_t hash) const;
  void grow();

  std::string arena_;
  std::vector<Slot> slots_;  // a power of two in size, at most half full
  std::size_t count_ = 0;
};

// (left id, right id) -> (rank, merged id), open addressing.
class MergeTable {
 public:
  struct Merge {
    int rank;
    int merged;
  };
  void reserve(std::size_t count);
  void insert(int left, int right, Merge merge);  // the first of two equal pairs stays
  const Merge* find(int left, int right) const;   // nullptr when the pair does not merge

 private:
  struct Slot {
    std::uint64_t key = ~std::uint64_t{0};  // ~0: empty
    Merge merge{};
  };
  std::size_t locate(std::uint64_t key) const;

  std::vector<Slot> slots_;  // a power of two in size, at most half full
  std::size_t count_ = 0;
};

struct HfTokenizer::Impl {
  // Model and pre-tokenizer.
  bool byte_level = false;      // ByteLevel: bytes as GPT-2's printable characters
  int max_digits = 0;           // the Split regex's \p{N}{1,max_digits}; 0 without a Split
  bool split_on_space = false;  // Split(" ", MergedWithPrevious)
  bool ignore_merges = false;   // a pre-token in the vocabulary is one token
  bool byte_fallback = false;   // an unknown character -> its <0xNN> tokens
  bool fuse_unk = false;
  int unk_id = -1;
  // Normalizer (applied in this order).
  bool nfc = false;
  bool prepend_space_mark = false;  // Prepend("▁")
  bool replace_space = false;       // Replace(" " -> "▁")

  TokenIds id_of;                        // vocabulary key -> id
  std::vector<std::string> bytes_of_id;  // id -> the bytes it stands for
  MergeTable merges;
  std::array<int, 256> byte_ids{};      // byte-level: id of each byte's character
  std::array<int, 256> fallback_ids{};  // <0xNN> ids, -1 when missing

  std::vector<HfAddedToken> added;
  // A byte trie of the added tokens' contents: edges (node << 8 | byte) ->
  // node; node 0 is the root; token_at[node] indexes `added`, or -1.
  std::unordered_map<std::uint64_t, int> trie_edges;
  std::vector<int> token_at{-1};

  std::vector<int> prefix_ids;  // the post-processor's tokens before the text (BOS)
  std::vector<int> suffix_ids;  // ... and after it
};

}  // namespace attnscope::core

#include <nlohmann/json.hpp>

namespace attnscope::core {

// A tokenizer.json as read in one pass: model.vocab and model.merges (most
// of the file) straight into lists, everything else as JSON.
struct TokenizerDocument {
  nlohmann::json doc;  // the file without model.vocab and model.merges
  bool has_vocab = false;
  std::vector<std::pair<std::string, long long>> vocab;  // (token, id) in file order
  bool has_merges = false;
  std::vector<std::pair<std::string, std::string>> merges;  // (left, right) by rank
  std::string problem;  // a malformed entry of either (read_tokenizer_document throws)
};

// Throws ParseError naming `source` when the text is not JSON or an entry of
// the vocabulary or merges is malformed.
TokenizerDocument read_tokenizer_document(std::string_view text, const std::string& source);

}  // namespace attnscope::core
