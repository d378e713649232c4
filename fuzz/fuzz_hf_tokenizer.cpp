// fuzz_hf_tokenizer.cpp: the tokenizer.json reader and its encoder on
// arbitrary bytes. The input is a tokenizer.json, a NUL byte, and a text.
// A bad file or invalid UTF-8 must be refused with ParseError; otherwise,
// with and without special tokens, every token's id must name a token and
// the spans must be increasing, disjoint and inside the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "attnscope/base/errors.hpp"
#include "attnscope/text/hf_tokenizer.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view file = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  try {
    const core::HfTokenizer tok = core::HfTokenizer::parse(file, "", "fuzz.json");
    for (const bool special : {true, false}) {
      std::size_t floor = 0;
      for (const auto& t : tok.encode(text, {.special = special})) {
        if (t.start < floor || t.end < t.start || t.end > text.size()) std::abort();
        if (tok.token_bytes(t.id).empty() && !t.text.empty()) std::abort();
        floor = t.end;
      }
    }
  } catch (const core::ParseError&) {
    return 0;
  }
  return 0;
}
