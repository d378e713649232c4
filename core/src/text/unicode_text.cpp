// unicode_text.cpp: UTF-8, character classes, GPT-2's byte map and NFC
// (see unicode_text.hpp). Sections: UTF-8 and classes; the byte map; NFC.
#include "text/unicode_text.hpp"

#include <algorithm>

#include "attnscope/base/errors.hpp"
#include "attnscope/text/utf8.hpp"
#include "text/unicode_tables.hpp"

namespace attnscope::core::unicode {

// --- UTF-8 and classes ------------------------------------------------------

std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  std::size_t len = 0;
  std::uint32_t lo = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F, lo = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F, lo = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07, lo = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < lo || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

namespace {

bool in_ranges(std::uint32_t cp, const CodePointRange* ranges, std::size_t count) {
  const auto* end = ranges + count;
  const auto* it = std::upper_bound(
      ranges, end, cp, [](std::uint32_t v, const CodePointRange& r) { return v < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

CharClass classify_slow(std::uint32_t cp) {
  if (in_ranges(cp, kLetterRanges, kLetterRangeCount)) return CharClass::Letter;
  if (in_ranges(cp, kNumberRanges, kNumberRangeCount)) return CharClass::Number;
  if (in_ranges(cp, kSpaceRanges, kSpaceRangeCount)) return CharClass::Space;
  return CharClass::Other;
}

}  // namespace

CharClass classify(std::uint32_t cp) {
  if (cp < 0x80) {  // the common case, without a search
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CharClass::Letter;
    if (cp >= '0' && cp <= '9') return CharClass::Number;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CharClass::Space;
    if (cp >= 0x1C && cp <= 0x1F) return classify_slow(cp);
    return CharClass::Other;
  }
  return classify_slow(cp);
}

CharClass classify_white_space(std::uint32_t cp) {
  if (cp < 0x80) {
    if (cp >= 0x1C && cp <= 0x1F) return CharClass::Other;
    return classify(cp);
  }
  if (in_ranges(cp, kLetterRanges, kLetterRangeCount)) return CharClass::Letter;
  if (in_ranges(cp, kNumberRanges, kNumberRangeCount)) return CharClass::Number;
  if (in_ranges(cp, kWhiteSpaceRanges, kWhiteSpaceRangeCount)) return CharClass::Space;
  return CharClass::Other;
}

std::vector<MappedChar> decode_utf8(std::string_view text, std::size_t begin, std::size_t end,
                                    std::string_view what) {
  std::vector<MappedChar> out;
  out.reserve(end - begin);
  const std::string_view upto = text.substr(0, end);
  for (std::size_t i = begin; i < end;) {
    std::uint32_t cp = 0;
    const std::size_t len = utf8_sequence(upto, i, cp);
    if (len == 0)
      throw ParseError("text is not valid UTF-8 at byte " + std::to_string(i) + ": encode UTF-8 " +
                       std::string(what));
    out.push_back({cp, i, i + len});
    i += len;
  }
  return out;
}

// --- the byte map -----------------------------------------------------------

const std::array<std::string, 256>& byte_chars() {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> out;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      append_utf8(out[b], printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++));
    }
    return out;
  }();
  return chars;
}

int byte_of_char(std::uint32_t code_point) {
  static const std::array<int, 512> bytes = [] {
    std::array<int, 512> out{};
    out.fill(-1);
    const auto& chars = byte_chars();
    for (int b = 0; b < 256; ++b) {
      std::uint32_t cp = 0;
      utf8_sequence(chars[b], 0, cp);
      out[cp] = b;
    }
    return out;
  }();
  return code_point < bytes.size() ? bytes[code_point] : -1;
}

// --- NFC --------------------------------------------------------------------

namespace {

constexpr std::uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr std::uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr std::uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int combining_class(std::uint32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = kCombiningClasses + kCombiningClassCount;
  const auto* it =
      std::lower_bound(kCombiningClasses, end, cp,
                       [](const CombiningClass& c, std::uint32_t v) { return c.code_point < v; });
  return it != end && it->code_point == cp ? it->ccc : 0;
}

void decompose(std::uint32_t cp, std::vector<std::uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const std::uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xC0) {
    const auto* end = kDecompositions + kDecompositionCount;
    const auto* it =
        std::lower_bound(kDecompositions, end, cp,
                         [](const Decomposition& d, std::uint32_t v) { return d.code_point < v; });
    if (it != end && it->code_point == cp) {
      out.insert(out.end(), kDecompositionData + it->offset,
                 kDecompositionData + it->offset + it->length);
      return;
    }
  }
  out.push_back(cp);
}

// The primary composite of (a, b), or 0 when there is none.
std::uint32_t compose(std::uint32_t a, std::uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = kCompositions + kCompositionCount;
  const auto* it =
      std::lower_bound(kCompositions, end, std::make_pair(a, b),
                       [](const Composition& c, std::pair<std::uint32_t, std::uint32_t> v) {
                         return std::make_pair(c.first, c.second) < v;
                       });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

// Whether cp may be the second of a composition (so must stay with what precedes it).
bool composes_with_previous(std::uint32_t cp) {
  static const std::vector<std::uint32_t> seconds = [] {
    std::vector<std::uint32_t> out;
    for (std::size_t i = 0; i < kCompositionCount; ++i) out.push_back(kCompositions[i].second);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }();
  if (cp >= kVBase && cp < kVBase + kVCount) return true;
  if (cp > kTBase && cp < kTBase + kTCount) return true;
  return std::binary_search(seconds.begin(), seconds.end(), cp);
}

// Whether NFC can never join `cp` to what comes before it.
bool starts_piece(std::uint32_t cp) {
  if (cp < 0x300) return true;
  std::vector<std::uint32_t> d;
  decompose(cp, d);
  return combining_class(d[0]) == 0 && !composes_with_previous(d[0]);
}

// NFC of one piece's code points.
std::vector<std::uint32_t> nfc_piece(const std::vector<std::uint32_t>& cps) {
  std::vector<std::uint32_t> d;
  for (std::uint32_t cp : cps) decompose(cp, d);
  // Canonical ordering: a stable sort of each run of non-starters by class.
  for (std::size_t i = 1; i < d.size(); ++i) {
    const int cc = combining_class(d[i]);
    if (cc == 0) continue;
    for (std::size_t k = i; k > 0; --k) {
      const int prev = combining_class(d[k - 1]);
      if (prev == 0 || prev <= cc) break;
      std::swap(d[k - 1], d[k]);
    }
  }
  // Canonical composition: each character joins the last starter unless a
  // character between them has a class >= its own (blocked).
  std::vector<std::uint32_t> out;
  std::size_t starter = 0;
  int last_class = combining_class(d[0]) == 0 ? 0 : 256;
  out.push_back(d[0]);
  for (std::size_t i = 1; i < d.size(); ++i) {
    const int cc = combining_class(d[i]);
    const std::uint32_t composite = last_class == 256 ? 0 : compose(out[starter], d[i]);
    if (composite != 0 && (last_class < cc || last_class == 0)) {
      out[starter] = composite;
      continue;
    }
    if (cc == 0) starter = out.size();
    last_class = cc;
    out.push_back(d[i]);
  }
  return out;
}

}  // namespace

std::vector<MappedChar> nfc(const std::vector<MappedChar>& chars) {
  std::vector<MappedChar> out;
  out.reserve(chars.size());
  std::vector<std::uint32_t> piece;
  for (std::size_t i = 0; i < chars.size();) {
    std::size_t j = i + 1;
    while (j < chars.size() && !starts_piece(chars[j].cp)) ++j;
    if (j == i + 1 && chars[i].cp < 0x300) {  // a lone character NFC keeps
      out.push_back(chars[i]);
      i = j;
      continue;
    }
    piece.clear();
    for (std::size_t k = i; k < j; ++k) piece.push_back(chars[k].cp);
    const std::vector<std::uint32_t> normal = nfc_piece(piece);
    if (normal == piece) {
      out.insert(out.end(), chars.begin() + static_cast<std::ptrdiff_t>(i),
                 chars.begin() + static_cast<std::ptrdiff_t>(j));
    } else {
      for (std::uint32_t cp : normal) out.push_back({cp, chars[i].start, chars[j - 1].end});
    }
    i = j;
  }
  return out;
}

std::string nfc_string(std::string_view text) {
  std::string out;
  for (const auto& c : nfc(decode_utf8(text, 0, text.size(), "text")))
    append_utf8(out, static_cast<char32_t>(c.cp));
  return out;
}

}  // namespace attnscope::core::unicode
