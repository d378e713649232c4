// typed_text.cpp: a text box's text and its tokens.
#include "state/typed_text.hpp"

#include "attnscope/base/errors.hpp"

namespace attnscope::gui {

bool TypedText::encode(const core::Gpt2Tokenizer& tokenizer) {
  try {
    tokens = tokenizer.encode(text);
  } catch (const core::ParseError& e) {
    tokens.clear();
    error = e.what();
    return false;
  }
  error.clear();
  return true;
}

std::vector<int> TypedText::ids() const {
  std::vector<int> out;
  out.reserve(tokens.size());
  for (const core::Token& t : tokens) out.push_back(t.id);
  return out;
}

}  // namespace attnscope::gui
