// fuzz_pth.cpp: .pth parsing through the same entry point PthFile::open
// uses, in two modes chosen by the first byte:
//
//   even (a real archive starts with 'P'): the input is the whole file: the
//     zip archive (libzip), the pickle, the storages;
//   odd: the rest of the input is data.pkl, wrapped here into a valid archive
//     next to storages "0" to "3" (64 bytes each), so that mutations reach
//     the pickle machine (opcodes, memo, marks, nesting, allowed callables,
//     persistent ids) and the tensor checks instead of failing the zip's CRC.
//
// Every tensor accepted (up to 2^20 elements) is then gathered through its
// stride into a matrix: a read outside a storage shows under ASan.
#include <zip.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/formats/pth.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

namespace {

// archive/data.pkl = pickle, archive/data/0..3 = 64 bytes each, as a zip in memory.
std::string wrap(const std::string& pickle) {
  static const std::string storage(64, '\x3f');  // F32 0.75, F16 1.8, ...
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  std::string bytes;
  if (!out) return bytes;
  zip_source_keep(out);
  if (zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &error)) {
    zip_file_add(z, "archive/data.pkl", zip_source_buffer(z, pickle.data(), pickle.size(), 0), 0);
    for (const char* name :
         {"archive/data/0", "archive/data/1", "archive/data/2", "archive/data/3"})
      zip_file_add(z, name, zip_source_buffer(z, storage.data(), storage.size(), 0), 0);
    for (zip_uint64_t k = 0; k < 5; ++k) zip_set_file_compression(z, k, ZIP_CM_STORE, 0);
    if (zip_close(z) != 0) zip_discard(z);
  }
  zip_stat_t st;
  if (zip_source_stat(out, &st) == 0 && (st.valid & ZIP_STAT_SIZE) && zip_source_open(out) == 0) {
    bytes.resize(static_cast<std::size_t>(st.size));
    const zip_int64_t n = zip_source_read(out, bytes.data(), bytes.size());
    bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    zip_source_close(out);
  }
  zip_source_free(out);
  zip_error_fini(&error);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string input(reinterpret_cast<const char*>(data), size);
  if (data[0] % 2 == 1) input = wrap(input.substr(1));
  try {
    const auto f = core::PthFile::parse(std::move(input), "fuzz.pth");
    for (const core::PthTensor& t : f.tensors()) {
      // A stride-0 view can stand for far more elements than its storage
      // holds; read the ones a small input can describe honestly.
      if (t.elements() > (std::uint64_t{1} << 20)) continue;
      try {
        const core::RowMatrix m = f.matrix(t.name);
        (void)m;
      } catch (const core::ParseError&) {
      }
    }
  } catch (const core::ParseError&) {
  }
  return 0;
}
