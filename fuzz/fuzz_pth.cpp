// fuzz_pth.cpp: .pth parsing (the zip archive through libzip, the pickle
// machine's opcodes, memo, marks and allowed callables, the state_dict's
// tensors against their storages) and reading every tensor it accepts,
// through the same entry point PthFile::open uses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/io.hpp"
#include "attnscope/pth.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto f =
        core::PthFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pth");
    for (const core::PthTensor& t : f.tensors()) {
      // A stride-0 view can stand for far more elements than its storage
      // holds; read the ones a small input can describe honestly.
      if (t.elements() > (std::uint64_t{1} << 20)) continue;
      try {
        // Gathers every element through the stride: out of bounds shows under ASan.
        const core::RowMatrix m = f.matrix(t.name);
        (void)m;
      } catch (const core::ParseError&) {
      }
    }
  } catch (const core::ParseError&) {
  }
  return 0;
}
