// sha1.cpp: SHA-1 as FIPS 180-4 writes it (hub/sha1.hpp). Checked against
// the FIPS vectors and git's blob ids in core/tests/test_hub.cpp, and
// against Python's hashlib by app/tests/hub_pull_test.py.
#include "attnscope/hub/sha1.hpp"

#include <algorithm>
#include <cstring>

#include "hub/digest.hpp"

namespace attnscope::core::hub {

namespace {

constexpr std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

}  // namespace

Sha1::Sha1() : state_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0} {}

void Sha1::block(const std::uint8_t* data) {
  std::uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = std::uint32_t{data[4 * i]} << 24 | std::uint32_t{data[4 * i + 1]} << 16 |
           std::uint32_t{data[4 * i + 2]} << 8 | std::uint32_t{data[4 * i + 3]};
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4];
  for (int i = 0; i < 80; ++i) {
    std::uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
}

void Sha1::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  length_ += size;
  while (size > 0) {
    const std::size_t take = std::min(size, 64 - buffered_);
    if (buffered_ == 0 && take == 64) {
      block(p);  // a whole block: no copy
    } else {
      std::memcpy(buffer_.data() + buffered_, p, take);
      buffered_ += take;
      if (buffered_ == 64) {
        block(buffer_.data());
        buffered_ = 0;
      }
    }
    p += take;
    size -= take;
  }
}

std::array<std::uint8_t, 20> Sha1::digest() {
  detail::pad_message(*this, length_, buffered_);
  return detail::digest_bytes(state_);
}

std::string Sha1::hex() { return detail::hex_of(digest()); }

std::string sha1_hex(std::string_view bytes) {
  Sha1 h;
  h.update(bytes);
  return h.hex();
}

void start_git_blob(Sha1& hash, std::uint64_t size) {
  const std::string head = "blob " + std::to_string(size);
  hash.update(head.data(), head.size() + 1);  // with its '\0'
}

std::string git_blob_sha1(std::string_view content) {
  Sha1 h;
  start_git_blob(h, content.size());
  h.update(content);
  return h.hex();
}

bool is_sha1_hex(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace attnscope::core::hub
