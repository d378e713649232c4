// unicode_text.hpp: what both tokenizers read text with (internal to the
// text room): UTF-8 decoding, the pre-tokenizers' character classes,
// GPT-2's byte-to-character map, and NFC with a map back to the original
// bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core::unicode {

// Length of the well-formed UTF-8 sequence at text[i] (no overlongs, no
// surrogates, <= U+10FFFF), or 0 when there is none; `cp` gets its value.
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t& cp);

enum class CharClass { Letter, Number, Space, Other };

// \p{L}, \p{N}, \s as the generated tables have them, else Other.
CharClass classify(std::uint32_t cp);
// The same with \s as Oniguruma reads it in tokenizer.json's regexes: the
// White_Space property (U+0085 is a space, U+001C..U+001F are not).
CharClass classify_white_space(std::uint32_t cp);

// bytes_to_unicode(): byte -> the printable character standing for it, as UTF-8.
const std::array<std::string, 256>& byte_chars();
// The inverse of bytes_to_unicode(): code point -> byte, -1 when not in the map.
int byte_of_char(std::uint32_t code_point);

// One code point of a text being tokenized, with the bytes of the original
// text it stands for: [start, end). Without normalization that is its own
// bytes; after NFC changed a run of characters, every character of the
// result stands for the whole run.
struct MappedChar {
  std::uint32_t cp;
  std::size_t start;
  std::size_t end;
};

// The code points of text[begin, end) (valid UTF-8, else ParseError naming
// the byte offset and `what`), each standing for its own bytes.
std::vector<MappedChar> decode_utf8(std::string_view text, std::size_t begin, std::size_t end,
                                    std::string_view what);

// NFC of `chars` (Unicode's algorithm: full canonical decomposition,
// canonical ordering, canonical composition without the exclusions, Hangul
// by arithmetic). The text is cut where no composition or reordering can
// reach across (before a starter that composes with nothing before it);
// a piece NFC leaves alone keeps each character's bytes, a piece it
// changes maps every resulting character to the piece's whole byte range.
std::vector<MappedChar> nfc(const std::vector<MappedChar>& chars);

// NFC of a UTF-8 string (valid UTF-8 expected; used for tests and for
// added tokens).
std::string nfc_string(std::string_view text);

}  // namespace attnscope::core::unicode
