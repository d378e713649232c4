// fuzz_npy.cpp: .npy parsing (magic, versions 1-3, header dict, dtype, shape
// limits before reading, truncated or surplus data) for embeddings and biases.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (auto rank : {core::NpyRank::Matrix, core::NpyRank::MatrixOrVector})
    for (auto nonfinite : {core::NonFinite::Reject, core::NonFinite::Allow}) {
      try {
        const core::RowMatrix m = core::parse_npy(bytes, "fuzz.npy", rank, nonfinite);
        (void)core::matrix_npy(m);  // what parses can be written back
      } catch (const core::ParseError&) {
      }
    }
  return 0;
}
