// fuzz_tokenizer.cpp: GPT-2's tokenizer on arbitrary bytes. Invalid UTF-8
// must be refused with ParseError; valid text must give tokens whose byte
// spans tile the text, whose bytes are the text's, and that decode back to
// it; the JSON of the tokens must always be writable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/io/io.hpp"
#include "attnscope/text/tokenizer.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& tok = core::Gpt2Tokenizer::builtin();
  std::vector<core::Token> tokens;
  try {
    tokens = tok.encode(text);
  } catch (const core::ParseError&) {
    return 0;
  }
  std::vector<int> ids;
  std::size_t offset = 0;
  for (const auto& t : tokens) {
    if (t.start != offset || t.end != t.start + t.text.size() ||
        text.substr(t.start, t.end - t.start) != t.text)
      std::abort();
    if (tok.token_bytes(t.id) != t.text) std::abort();
    offset = t.end;
    ids.push_back(t.id);
  }
  if (offset != text.size() || tok.decode(ids) != text) std::abort();
  (void)core::tokens_json(tokens);
  return 0;
}
