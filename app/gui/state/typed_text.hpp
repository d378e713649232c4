// typed_text.hpp: what a text box holds, for both of them (the Embeddings
// panel's sentence for the chapter-3 classes, the Model panel's text for a
// model): the text, its tokens from one tokenizer call, and why it cannot
// run. Each user of the text adds its own limits (the model's context, the
// chapter-2 embedding's sizes) to `error`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attnscope/text/hf_tokenizer.hpp"
#include "attnscope/text/tokenizer.hpp"

namespace attnscope::gui {

struct TypedText {
  TypedText() = default;
  TypedText(std::string typed) : text(std::move(typed)) {}  // NOLINT: a text box's text

  std::string text;
  std::vector<core::Token> tokens;  // with byte spans, as encoded last
  std::string error;                // why the text cannot run ("" when it can)

  // Tokenizes `text` with `tokenizer` into `tokens`: the one tokenizer call.
  // Text that is not UTF-8 leaves no tokens and sets `error` to the
  // tokenizer's message; otherwise `error` is cleared. Returns error.empty().
  bool encode(const core::Gpt2Tokenizer& tokenizer);
  // The same with a tokenizer.json's tokenizer (its special tokens and BOS rule).
  bool encode(const core::HfTokenizer& tokenizer);
  // The token ids of `tokens`.
  std::vector<int> ids() const;
};

}  // namespace attnscope::gui
