// formats_internal.hpp (private to core): what the format readers share.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
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

// An IEEE half (F16) as float32: subnormals, infinities and NaNs kept.
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace attnscope::core::detail
