// unicode_tables.hpp: the Unicode classes of GPT-2's pre-tokenizer as sorted
// code point ranges, generated from Python's `regex` module
// (scripts/gen_unicode_tables.py writes unicode_tables.cpp).
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

}  // namespace attnscope::core::unicode
