// utf8.hpp: a code point written as UTF-8.
#pragma once

#include <string>

namespace attnscope::core {

// Appends code point c (at most U+10FFFF, not a surrogate) to out as 1 to 4
// bytes of UTF-8.
void append_utf8(std::string& out, char32_t c);

}  // namespace attnscope::core
