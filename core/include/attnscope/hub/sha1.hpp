// sha1.hpp: SHA-1 (FIPS 180-4), for checking the small files a pull
// fetches: a file kept in git itself (not LFS) has as its ETag its git blob
// id, the SHA-1 of "blob <size>\0" followed by its bytes. Not for security:
// it only catches a body damaged on the way, as the sha256 of LFS files does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnscope::core::hub {

// An incremental SHA-1: update() with the bytes in order, then hex() once.
class Sha1 {
 public:
  Sha1();
  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // The 20-byte digest of everything added; the object is spent afterwards.
  std::array<std::uint8_t, 20> digest();
  // The digest as 40 lowercase hex digits.
  std::string hex();

 private:
  void block(const std::uint8_t* data);  // one 64-byte block
  std::array<std::uint32_t, 5> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes added
};

// The sha1 of `bytes` as 40 lowercase hex digits.
std::string sha1_hex(std::string_view bytes);

// Starts `hash` on a git blob of `size` bytes: adds "blob <size>\0"; the
// blob's bytes follow. git_blob_sha1 does it all for bytes in memory.
void start_git_blob(Sha1& hash, std::uint64_t size);
std::string git_blob_sha1(std::string_view content);

// Whether `s` is 40 lowercase hex digits (the form of a git blob id).
bool is_sha1_hex(std::string_view s);

}  // namespace attnscope::core::hub
