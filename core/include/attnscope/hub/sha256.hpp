// sha256.hpp: SHA-256 (FIPS 180-4), for checking the files a pull fetches
// against the Hub's ETag (an LFS file's ETag is its content's sha256; a
// small file's is its git blob sha1, hub/sha1.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnscope::core::hub {

// An incremental SHA-256: update() with the bytes in order, then hex() once.
// Uses the CPU's SHA extensions when it has them (x86-64), else portable code.
class Sha256 {
 public:
  // Portable: the reference rounds even where the CPU has SHA extensions (tests).
  enum class Path { Best, Portable };
  explicit Sha256(Path path = Path::Best);
  // Adds `size` bytes to the message.
  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // The 32-byte digest of everything added; the object is spent afterwards.
  std::array<std::uint8_t, 32> digest();
  // The digest as 64 lowercase hex digits.
  std::string hex();

 private:
  void blocks(const std::uint8_t* data, std::size_t count);  // count 64-byte blocks
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes added
  bool portable_ = false;
};

// The sha256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

// Whether `s` is 64 lowercase hex digits (the form of an LFS file's ETag).
bool is_sha256_hex(std::string_view s);

}  // namespace attnscope::core::hub
