// formats_internal.hpp (private to core): what the format readers share.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/errors.hpp"
#include "attnscope/base/matrix.hpp"
#include "attnscope/formats/formats.hpp"

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

// A checkpoint tensor's values (C order) as a matrix: a scalar is 1 x 1,
// shape [n] is 1 x n, [r, c] is r x c and [a, ..., y, z] is (a*...*y) x z.
// Throws ParseError naming `source` and `tensor` when a side passes INT_MAX.
inline RowMatrix folded_matrix(const std::vector<std::uint64_t>& shape,
                               const std::vector<float>& values, std::string_view source,
                               const std::string& tensor) {
  const std::uint64_t cols = shape.empty() ? 1 : shape.back();
  std::uint64_t rows = 1;
  for (std::size_t k = 0; k + 1 < shape.size(); ++k)
    if (__builtin_mul_overflow(rows, shape[k], &rows)) rows = UINT64_MAX;
  constexpr auto kMaxSide = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  if (rows > kMaxSide || cols > kMaxSide)
    fail(source, "tensor \"" + tensor + "\" is too large for a matrix");
  RowMatrix m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  if (!values.empty()) std::memcpy(m.data(), values.data(), values.size() * sizeof(float));
  return m;
}

}  // namespace attnscope::core::detail
