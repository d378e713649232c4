// fuzz_safetensors.cpp: .safetensors parsing (header length, header JSON,
// duplicate keys, entries, dtypes, sizes, ranges, overlaps) and reading every
// tensor it accepts, through the same entry point SafetensorsFile::open uses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/formats/safetensors.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto f = core::SafetensorsFile::parse(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
    for (const core::TensorInfo& t : f.tensors()) {
      try {
        // Reads every byte of the tensor: out of bounds shows under ASan.
        const core::RowMatrix m = f.matrix(t.name);
        (void)m;
        if (t.dtype == "F32") (void)f.f32(t.name);
      } catch (const core::ParseError&) {
      }
    }
  } catch (const core::ParseError&) {
  }
  return 0;
}
