// fuzz_csv.cpp: CSV embeddings import (header and label detection, quotes,
// BOM, ragged rows, non-numeric cells) and applying it to current tokens.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)core::parse_csv_table(bytes, "fuzz.csv", core::NonFinite::Allow);
  } catch (const core::ParseError&) {
  }
  try {
    const auto imported = core::parse_embeddings(bytes, "fuzz.csv", core::EmbeddingFormat::Csv);
    (void)core::apply_embeddings(imported, {"a", "b", "c"}, "fuzz.csv");
  } catch (const core::ParseError&) {
  }
  return 0;
}
