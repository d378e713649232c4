// digest.hpp: what SHA-1 and SHA-256 share (internal to the hub room): the
// Merkle-Damgard padding that ends a message, and the digest as hex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope::core::hub::detail {

// Ends the message `hash` has taken (`length` bytes so far, `buffered` of
// them not yet in a 64-byte block): 0x80, zeros up to 56 bytes mod 64, then
// the length in bits as a big-endian 64-bit number.
template <class Hash>
void pad_message(Hash& hash, std::uint64_t length, std::size_t buffered) {
  const std::uint64_t bits = length * 8;
  const std::uint8_t one = 0x80;
  hash.update(&one, 1);
  const std::uint8_t zero[64] = {};
  hash.update(zero, (buffered < 56 ? 55 : 119) - buffered);
  std::uint8_t tail[8];
  for (int i = 0; i < 8; ++i) tail[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  hash.update(tail, 8);
}

// The state words as the digest's bytes, each big-endian.
template <std::size_t Words>
std::array<std::uint8_t, 4 * Words> digest_bytes(const std::array<std::uint32_t, Words>& state) {
  std::array<std::uint8_t, 4 * Words> out;
  for (std::size_t i = 0; i < Words; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      out[4 * i + j] = static_cast<std::uint8_t>(state[i] >> (24 - 8 * j));
  return out;
}

// Lowercase hex of a digest.
template <std::size_t N>
std::string hex_of(const std::array<std::uint8_t, N>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * N);
  for (std::uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace attnscope::core::hub::detail
