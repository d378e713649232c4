// embedding.cpp: chapter 2's token (+ positional) embedding layers, only the
// rows a text picks (embedding.hpp).
#include "attnscope/attention/embedding.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/errors.hpp"
#include "attnscope/base/rng.hpp"

namespace attnscope::core {

namespace {

void check_arguments(std::span<const int> ids, int d_in, int context_length, int vocab_size) {
  const auto T = static_cast<long long>(ids.size());
  if (T == 0) throw std::invalid_argument("there are no token ids: the text gave no tokens");
  if (d_in < 1 || d_in > kMaxDim)
    throw std::invalid_argument("the embedding width d_in (" + std::to_string(d_in) +
                                ") must be between 1 and " + std::to_string(kMaxDim));
  if (vocab_size < 1)
    throw std::invalid_argument("the vocabulary size (" + std::to_string(vocab_size) +
                                ") must be at least 1");
  if (T > kMaxTokens)
    throw std::invalid_argument("too many tokens (" + std::to_string(T) + "): at most " +
                                std::to_string(kMaxTokens) + " are supported");
  if (context_length < 0)
    throw std::invalid_argument("the context length (" + std::to_string(context_length) +
                                ") must be 0 (no positional embedding) or more");
  if (context_length > 0 && T > context_length)
    throw std::invalid_argument(
        "the text has " + std::to_string(T) + " tokens but the positional embedding has " +
        std::to_string(context_length) + " positions (context_length): shorten the text or " +
        "raise the context length to at least " + std::to_string(T));
  for (std::size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < 0 || ids[t] >= vocab_size)
      throw std::invalid_argument("token " + std::to_string(t) + " has id " +
                                  std::to_string(ids[t]) + ", outside the vocabulary's 0.." +
                                  std::to_string(vocab_size - 1));
}

}  // namespace

RowMatrix chapter2_embeddings(std::span<const int> ids, int d_in, std::uint64_t seed,
                              int context_length, int vocab_size) {
  check_arguments(ids, d_in, context_length, vocab_size);
  const std::size_t T = ids.size();
  const auto d = static_cast<std::size_t>(d_in);
  // Element t * d + j of the result is element index[t * d + j] of the table.
  std::vector<std::size_t> index(T * d);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < d; ++j) index[t * d + j] = static_cast<std::size_t>(ids[t]) * d + j;

  RowMatrix inputs(static_cast<Eigen::Index>(T), static_cast<Eigen::Index>(d));
  TorchGenerator gen(seed);
  gen.normal_select(static_cast<std::size_t>(vocab_size) * d, 0.0, 1.0, index, inputs.data());
  if (context_length > 0) {
    // Positions 0..T-1: the table's first T rows.
    for (std::size_t k = 0; k < T * d; ++k) index[k] = k;
    RowMatrix positions(static_cast<Eigen::Index>(T), static_cast<Eigen::Index>(d));
    gen.normal_select(static_cast<std::size_t>(context_length) * d, 0.0, 1.0, index,
                      positions.data());
    inputs += positions;  // float32 sums, as PyTorch adds the two (T, d_in) tensors
  }
  return inputs;
}

TextInputs text_inputs(std::span<const Token> tokens, int d_in, std::uint64_t seed,
                       int context_length, int vocab_size) {
  TextInputs out;
  for (const Token& t : tokens) {
    out.ids.push_back(t.id);
    out.tokens.push_back(printable_token(t.text));
  }
  if (out.ids.empty()) throw ParseError("the text gives no tokens: type at least one character");
  out.d_in = d_in;
  out.seed = seed;
  out.context_length = context_length;
  out.vocab_size = vocab_size;
  return out;
}

TextInputs tokenize_text(std::string_view text, int d_in, std::uint64_t seed, int context_length,
                         const Gpt2Tokenizer& tokenizer) {
  return text_inputs(tokenizer.encode(text), d_in, seed, context_length,
                     static_cast<int>(tokenizer.vocab_size()));
}

Inputs chapter2_inputs(const TextInputs& text) {
  Inputs inputs;
  try {
    inputs.embeddings =
        chapter2_embeddings(text.ids, text.d_in, text.seed, text.context_length, text.vocab_size);
  } catch (const std::invalid_argument& e) {
    throw ParseError(e.what());
  }
  inputs.tokens = text.tokens;
  return inputs;
}

}  // namespace attnscope::core
