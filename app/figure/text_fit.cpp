// text_fit.cpp: cluster boundaries (UTF-8 decoding) and fit_text.
#include "figure/text_fit.hpp"

namespace attnscope::figure {

namespace {

constexpr char32_t kZeroWidthJoiner = 0x200D;

// The code point starting at text[at] and its length in bytes; an invalid or
// cut sequence is its first byte alone (decoded as U+FFFD).
std::pair<char32_t, std::size_t> decode(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return {b0, 1};
  std::size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {0xFFFD, 1};
  }
  if (at + len > text.size()) return {0xFFFD, 1};
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1};
  return {cp, len};
}

// A code point that belongs to the one before it.
bool extends(char32_t cp) {
  return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
         (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE20 && cp <= 0xFE2F) ||
         (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0x1F3FB && cp <= 0x1F3FF) ||
         cp == kZeroWidthJoiner;
}

}  // namespace

std::vector<std::size_t> cluster_boundaries(std::string_view text) {
  std::vector<std::size_t> cuts{0};
  bool joined = false;  // the previous code point was a zero width joiner
  for (std::size_t at = 0; at < text.size();) {
    const auto [cp, len] = decode(text, at);
    // A cut before this code point, unless it extends the cluster or a joiner glued it.
    if (at > 0 && !extends(cp) && !joined) cuts.push_back(at);
    joined = cp == kZeroWidthJoiner;
    at += len;
  }
  if (!text.empty()) cuts.push_back(text.size());
  return cuts;
}

std::string fit_text(std::string_view text, float max_width, const TextWidth& width, bool unicode,
                     WhenNothingFits nothing) {
  if (width(text) <= max_width) return std::string(text);
  const std::string dots = unicode ? "\xE2\x80\xA6" : "..";
  const std::vector<std::size_t> cuts = cluster_boundaries(text);
  // Drop one cluster at a time from the end, the whole text (cuts.back()) first.
  for (std::size_t k = cuts.size() - 1; k-- > 0;) {
    const std::string candidate = std::string(text.substr(0, cuts[k])) + dots;
    if (width(candidate) <= max_width) return candidate;
  }
  return nothing == WhenNothingFits::Ellipsis ? dots : std::string();
}

}  // namespace attnscope::figure
