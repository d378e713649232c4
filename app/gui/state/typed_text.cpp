// typed_text.cpp: a text box's text and its tokens.
#include "state/typed_text.hpp"

#include "attnscope/base/errors.hpp"

namespace attnscope::gui {

namespace {

template <class Tokenizer>
bool encode_with(TypedText& t, const Tokenizer& tokenizer) {
  try {
    t.tokens = tokenizer.encode(t.text);
  } catch (const core::ParseError& e) {
    t.tokens.clear();
    t.error = e.what();
    return false;
  }
  t.error.clear();
  return true;
}

}  // namespace

bool TypedText::encode(const core::Gpt2Tokenizer& tokenizer) {
  return encode_with(*this, tokenizer);
}

bool TypedText::encode(const core::HfTokenizer& tokenizer) { return encode_with(*this, tokenizer); }

std::vector<int> TypedText::ids() const {
  std::vector<int> out;
  out.reserve(tokens.size());
  for (const core::Token& t : tokens) out.push_back(t.id);
  return out;
}

}  // namespace attnscope::gui
