// formats_internal.hpp (private to core): what the format readers share.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "attnscope/config.hpp"
#include "attnscope/formats.hpp"
#include "attnscope/io.hpp"

namespace attnscope::core::detail {

// The longest list any reader accepts: max(kMaxTokens, kMaxDim) entries.
constexpr std::size_t kMaxEntries =
    static_cast<std::size_t>(kMaxTokens > kMaxDim ? kMaxTokens : kMaxDim);

// Throws ParseError "<source>: <what>".
[[noreturn]] inline void fail(std::string_view source, const std::string& what) {
  throw ParseError(std::string(source) + ": " + what);
}

}  // namespace attnscope::core::detail
