// hf_tokenizer_encode.cpp: HfTokenizer::encode (see hf_tokenizer.hpp), in
// the order of Hugging Face's `tokenizers`: added tokens matched in the raw
// text, then for each stretch between them the normalizer, the
// pre-tokenizer (the Split regex as a scanner, or a split after spaces),
// the BPE model (merges by rank with a priority queue, as its merge_word),
// and last the post-processor's tokens. Sections: added tokens; normalizer;
// pre-tokenizer; BPE; encode.
#include <algorithm>
#include <queue>

#include "attnscope/base/errors.hpp"
#include "attnscope/text/hf_tokenizer.hpp"
#include "attnscope/text/utf8.hpp"
#include "text/hf_tokenizer_internal.hpp"
#include "text/unicode_text.hpp"

namespace attnscope::core {

namespace {

using unicode::CharClass;
using unicode::MappedChar;

// --- added tokens --------------------------------------------------------------

// One added token found in the text: bytes [start, end) (with the whitespace
// lstrip / rstrip take), and its index in Impl::added.
struct AddedMatch {
  std::size_t start;
  std::size_t end;
  int index;
};

bool is_word_char(const std::vector<MappedChar>& chars, std::size_t k) {
  const std::uint32_t cp = chars[k].cp;
  if (cp == '_') return true;
  const CharClass c = unicode::classify_white_space(cp);
  return c == CharClass::Letter || c == CharClass::Number;
}

// Leftmost, then longest, as `tokenizers` matches added tokens. `chars` is
// the text's code points (matches begin and end on their boundaries).
std::vector<AddedMatch> find_added(const HfTokenizer::Impl& t, std::string_view text,
                                   const std::vector<MappedChar>& chars, bool special) {
  std::vector<AddedMatch> out;
  if (t.added.empty()) return out;
  std::size_t c = 0;
  while (c < chars.size()) {
    int node = 0, best = -1;
    std::size_t best_end = 0;
    for (std::size_t i = chars[c].start; i < text.size(); ++i) {
      const auto it = t.trie_edges.find((static_cast<std::uint64_t>(node) << 8) |
                                        static_cast<unsigned char>(text[i]));
      if (it == t.trie_edges.end()) break;
      node = it->second;
      const int index = t.token_at[static_cast<std::size_t>(node)];
      if (index >= 0 && (special || !t.added[static_cast<std::size_t>(index)].special))
        best = index, best_end = i + 1;
    }
    if (best < 0) {
      ++c;
      continue;
    }
    std::size_t last = c;  // the match's last code point
    while (last + 1 < chars.size() && chars[last + 1].start < best_end) ++last;
    const HfAddedToken& token = t.added[static_cast<std::size_t>(best)];
    if (token.single_word && ((c > 0 && is_word_char(chars, c - 1)) ||
                              (last + 1 < chars.size() && is_word_char(chars, last + 1)))) {
      ++c;
      continue;
    }
    std::size_t first = c;
    const std::size_t floor = out.empty() ? 0 : out.back().end;
    if (token.lstrip)
      while (first > 0 && chars[first - 1].start >= floor &&
             unicode::classify_white_space(chars[first - 1].cp) == CharClass::Space)
        --first;
    if (token.rstrip)
      while (last + 1 < chars.size() &&
             unicode::classify_white_space(chars[last + 1].cp) == CharClass::Space)
        ++last;
    out.push_back({chars[first].start, chars[last].end, best});
    c = last + 1;
  }
  return out;
}

// --- normalizer ------------------------------------------------------------------

std::vector<MappedChar> normalize(const HfTokenizer::Impl& t, std::vector<MappedChar> chars) {
  if (chars.empty()) return chars;
  if (t.nfc) chars = unicode::nfc(chars);
  if (t.prepend_space_mark) chars.insert(chars.begin(), {0x2581, chars[0].start, chars[0].start});
  if (t.replace_space)
    for (auto& c : chars)
      if (c.cp == ' ') c.cp = 0x2581;
  return chars;
}

// --- pre-tokenizer ---------------------------------------------------------------

// Length in code points of the Split regex's match at i (Llama 3's or
// Qwen's; they differ only in \p{N}{1,max_digits}), always >= 1:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
//   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
std::size_t split_match(const std::vector<MappedChar>& chars, const std::vector<CharClass>& cls,
                        std::size_t i, int max_digits) {
  const std::size_t n = chars.size();
  const auto cp = [&](std::size_t k) { return k < n ? chars[k].cp : 0u; };
  const auto lower = [&](std::size_t k) {
    const std::uint32_t c = cp(k);
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
  };
  const auto is_newline = [&](std::size_t k) { return cp(k) == '\r' || cp(k) == '\n'; };
  const auto run = [&](std::size_t k, CharClass c) {
    while (k < n && cls[k] == c) ++k;
    return k;
  };
  if (cp(i) == '\'') {
    const std::uint32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  if (cls[i] == CharClass::Letter) return run(i, CharClass::Letter) - i;
  if (!is_newline(i) && cls[i] != CharClass::Number && i + 1 < n && cls[i + 1] == CharClass::Letter)
    return run(i + 1, CharClass::Letter) - i;
  if (cls[i] == CharClass::Number)
    return std::min(run(i, CharClass::Number) - i, static_cast<std::size_t>(max_digits));
  std::size_t j = i;
  if (cp(i) == ' ' && i + 1 < n && cls[i + 1] == CharClass::Other) ++j;
  if (cls[j] == CharClass::Other) {
    std::size_t k = run(j, CharClass::Other);
    while (k < n && is_newline(k)) ++k;
    return k - i;
  }
  // Whitespace: \s*[\r\n]+ ends after the run's last newline; else
  // \s+(?!\S) leaves the run's last character to the word after it.
  const std::size_t end = run(i, CharClass::Space);
  for (std::size_t k = end; k > i; --k)
    if (is_newline(k - 1)) return k - i;
  if (end == n || end - i == 1) return end - i;
  return end - i - 1;
}

// The pre-tokens of a normalized stretch, as [begin, end) code point indices.
std::vector<std::pair<std::size_t, std::size_t>> pre_tokenize(
    const HfTokenizer::Impl& t, const std::vector<MappedChar>& chars) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (t.max_digits > 0) {
    std::vector<CharClass> cls(chars.size());
    for (std::size_t k = 0; k < chars.size(); ++k)
      cls[k] = unicode::classify_white_space(chars[k].cp);
    for (std::size_t i = 0; i < chars.size();) {
      const std::size_t len = split_match(chars, cls, i, t.max_digits);
      out.emplace_back(i, i + len);
      i += len;
    }
  } else if (t.split_on_space) {
    std::size_t begin = 0;
    for (std::size_t k = 0; k < chars.size(); ++k)
      if (chars[k].cp == ' ') out.emplace_back(begin, k + 1), begin = k + 1;
    if (begin < chars.size()) out.emplace_back(begin, chars.size());
  } else if (!chars.empty()) {
    out.emplace_back(0, chars.size());
  }
  return out;
}

// --- BPE ---------------------------------------------------------------------------

// A symbol of a word being merged: a token id and the original bytes it
// stands for; prev/next link the live symbols (-1 at the ends).
struct Symbol {
  int id;
  std::size_t start;
  std::size_t end;
  int prev;
  int next;
};

// A pair that may merge: lowest rank first, then leftmost, as merge_word.
struct Candidate {
  int rank;
  int pos;
  int left;
  int right;
  int merged;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

void push_symbol(std::vector<Symbol>& word, int id, std::size_t start, std::size_t end) {
  const int at = static_cast<int>(word.size());
  word.push_back({id, start, end, at - 1, -1});
  if (at > 0) word[static_cast<std::size_t>(at - 1)].next = at;
}

// The original bytes byte k of character c stands for: itself when the
// character is the text's own, else the character's whole range.
std::pair<std::size_t, std::size_t> byte_range(const MappedChar& c, std::size_t k,
                                               std::size_t len) {
  if (c.end - c.start == len) return {c.start + k, c.start + k + 1};
  return {c.start, c.end};
}

// The initial symbols of a pre-token: its bytes (ByteLevel), else its
// characters, falling back to <0xNN> tokens, else the unknown token.
std::vector<Symbol> initial_symbols(const HfTokenizer::Impl& t,
                                    const std::vector<MappedChar>& chars, std::size_t begin,
                                    std::size_t end) {
  std::vector<Symbol> word;
  std::string utf8;
  for (std::size_t c = begin; c < end; ++c) {
    utf8.clear();
    append_utf8(utf8, static_cast<char32_t>(chars[c].cp));
    if (t.byte_level) {
      for (std::size_t k = 0; k < utf8.size(); ++k) {
        const auto [a, b] = byte_range(chars[c], k, utf8.size());
        push_symbol(word, t.byte_ids[static_cast<unsigned char>(utf8[k])], a, b);
      }
      continue;
    }
    const int id = t.id_of.find(utf8);
    if (id >= 0) {
      push_symbol(word, id, chars[c].start, chars[c].end);
      continue;
    }
    const bool all_bytes = t.byte_fallback && std::all_of(utf8.begin(), utf8.end(), [&](char b) {
                             return t.fallback_ids[static_cast<unsigned char>(b)] >= 0;
                           });
    if (all_bytes) {
      for (std::size_t k = 0; k < utf8.size(); ++k) {
        const auto [a, b] = byte_range(chars[c], k, utf8.size());
        push_symbol(word, t.fallback_ids[static_cast<unsigned char>(utf8[k])], a, b);
      }
    } else if (t.unk_id < 0) {
      throw ParseError("the vocabulary has no token for U+" + std::to_string(chars[c].cp) +
                       " and the tokenizer has no unknown token");
    } else if (t.fuse_unk && !word.empty() && word.back().id == t.unk_id) {
      word.back().end = chars[c].end;
    } else {
      push_symbol(word, t.unk_id, chars[c].start, chars[c].end);
    }
  }
  return word;
}

void merge_word(const HfTokenizer::Impl& t, std::vector<Symbol>& word) {
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int pos) {
    if (pos < 0) return;
    const Symbol& s = word[static_cast<std::size_t>(pos)];
    if (s.next < 0) return;
    const int right = word[static_cast<std::size_t>(s.next)].id;
    if (const MergeTable::Merge* m = t.merges.find(s.id, right))
      queue.push({m->rank, pos, s.id, right, m->merged});
  };
  for (int pos = 0; pos + 1 < static_cast<int>(word.size()); ++pos) consider(pos);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& s = word[static_cast<std::size_t>(top.pos)];
    if (s.id != top.left || s.next < 0 || word[static_cast<std::size_t>(s.next)].id != top.right)
      continue;  // stale: one of the two has merged since
    Symbol& r = word[static_cast<std::size_t>(s.next)];
    s.id = top.merged;
    s.end = std::max(s.end, r.end);
    s.next = r.next;
    r.id = -1;
    if (s.next >= 0) word[static_cast<std::size_t>(s.next)].prev = top.pos;
    consider(s.prev);
    consider(top.pos);
  }
}

// Appends the tokens of one pre-token.
void encode_word(const HfTokenizer::Impl& t, const std::vector<MappedChar>& chars,
                 std::size_t begin, std::size_t end, std::vector<Token>& out) {
  if (t.ignore_merges) {
    std::string key, utf8;
    for (std::size_t c = begin; c < end; ++c) {
      utf8.clear();
      append_utf8(utf8, static_cast<char32_t>(chars[c].cp));
      if (!t.byte_level) key += utf8;
      for (const char b : utf8)
        if (t.byte_level) key += unicode::byte_chars()[static_cast<unsigned char>(b)];
    }
    const int id = t.id_of.find(key);
    if (id >= 0) {
      out.push_back({id, t.bytes_of_id[static_cast<std::size_t>(id)], chars[begin].start,
                     chars[end - 1].end});
      return;
    }
  }
  std::vector<Symbol> word = initial_symbols(t, chars, begin, end);
  merge_word(t, word);
  for (int pos = word.empty() ? -1 : 0; pos >= 0; pos = word[static_cast<std::size_t>(pos)].next) {
    const Symbol& s = word[static_cast<std::size_t>(pos)];
    out.push_back({s.id, t.bytes_of_id[static_cast<std::size_t>(s.id)], s.start, s.end});
  }
}

// Makes the spans increasing and disjoint: a token that starts inside the
// one before it (NFC joined their characters) starts where that one ends.
void tidy_spans(std::vector<Token>& tokens, std::size_t from) {
  std::size_t floor = from == 0 ? 0 : tokens[from - 1].end;
  for (std::size_t k = from; k < tokens.size(); ++k) {
    tokens[k].start = std::max(tokens[k].start, floor);
    tokens[k].end = std::max(tokens[k].end, tokens[k].start);
    floor = tokens[k].end;
  }
}

}  // namespace

// --- encode -------------------------------------------------------------------------

std::vector<Token> HfTokenizer::encode(std::string_view text, HfEncodeOptions options) const {
  const Impl& t = *impl_;
  const std::vector<MappedChar> chars = unicode::decode_utf8(text, 0, text.size(), "text");
  const std::vector<AddedMatch> matches = find_added(t, text, chars, options.special);
  std::vector<Token> out;
  if (options.special)
    for (int id : t.prefix_ids)
      out.push_back({id, t.bytes_of_id[static_cast<std::size_t>(id)], 0, 0});
  std::size_t c = 0;  // the next code point to encode
  for (std::size_t m = 0; m <= matches.size(); ++m) {
    const std::size_t stop = m < matches.size() ? matches[m].start : text.size();
    std::vector<MappedChar> stretch;
    while (c < chars.size() && chars[c].start < stop) stretch.push_back(chars[c++]);
    const std::size_t from = out.size();
    const std::vector<MappedChar> normal = normalize(t, std::move(stretch));
    for (const auto& [begin, end] : pre_tokenize(t, normal))
      encode_word(t, normal, begin, end, out);
    tidy_spans(out, from);
    if (m == matches.size()) break;
    const HfAddedToken& token = t.added[static_cast<std::size_t>(matches[m].index)];
    out.push_back({token.id, token.content, matches[m].start, matches[m].end});
    while (c < chars.size() && chars[c].start < matches[m].end) ++c;
  }
  if (options.special)
    for (int id : t.suffix_ids)
      out.push_back({id, t.bytes_of_id[static_cast<std::size_t>(id)], text.size(), text.size()});
  return out;
}

}  // namespace attnscope::core
