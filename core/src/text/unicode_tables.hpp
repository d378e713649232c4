// unicode_tables.hpp: the Unicode classes of the pre-tokenizers as sorted
// code point ranges, generated from Python's `regex` module, and NFC's
// tables from Python's `unicodedata` (scripts/gen_unicode_tables.py writes
// unicode_tables.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace attnscope::core::unicode {

// Inclusive range [first, last] of code points.
struct CodePointRange {
  std::uint32_t first;
  std::uint32_t last;
};

extern const CodePointRange kLetterRanges[];  // \p{L}
extern const std::size_t kLetterRangeCount;
extern const CodePointRange kNumberRanges[];  // \p{N}
extern const std::size_t kNumberRangeCount;
extern const CodePointRange kSpaceRanges[];  // \s
extern const std::size_t kSpaceRangeCount;
extern const CodePointRange kWhiteSpaceRanges[];  // \p{White_Space}: Oniguruma's \s
extern const std::size_t kWhiteSpaceRangeCount;

// NFC's data, Hangul syllables excluded (they are algorithmic).
struct CombiningClass {
  std::uint32_t code_point;
  std::uint8_t ccc;  // canonical combining class, 1..254
};
struct Decomposition {
  std::uint32_t code_point;
  std::uint16_t offset;  // into kDecompositionData
  std::uint8_t length;   // the full canonical decomposition, 1..4 code points
};
struct Composition {
  std::uint32_t first;
  std::uint32_t second;
  std::uint32_t composite;
};

extern const CombiningClass kCombiningClasses[];  // sorted by code point
extern const std::size_t kCombiningClassCount;
extern const Decomposition kDecompositions[];  // sorted by code point
extern const std::size_t kDecompositionCount;
extern const std::uint32_t kDecompositionData[];
extern const Composition kCompositions[];  // sorted by (first, second)
extern const std::size_t kCompositionCount;

}  // namespace attnscope::core::unicode
