// embedding.hpp: the book's chapter-2 inputs without a trained model. Token
// ids (GPT-2's, tokenizer.hpp) become vectors the way chapter 2 builds them:
//
//   torch.manual_seed(seed)
//   token_embedding_layer = torch.nn.Embedding(vocab_size, d_in)
//   pos_embedding_layer = torch.nn.Embedding(context_length, d_in)  # if context_length > 0
//   inputs = token_embedding_layer(ids) + pos_embedding_layer(torch.arange(T))
//
// bit for bit (both layers' init is normal_(0, 1), rng.hpp). Only the rows
// the ids pick are computed, but every draw of both layers is made, so a
// 50257 x 768 table costs ~7 ms (bench Chapter2Embeddings), not 38 M normals.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/config.hpp"
#include "attnscope/base/matrix.hpp"
#include "attnscope/text/tokenizer.hpp"

namespace attnscope::core {

// GPT-2's vocabulary size (the book's vocab_size).
inline constexpr int kGpt2VocabSize = 50257;

// (T, d_in) float32 inputs for the T token ids, as above; context_length 0
// adds no positional embedding. Throws std::invalid_argument naming the
// problem: no ids, an id outside [0, vocab_size), d_in or vocab_size below 1
// or d_in above kMaxDim, T above kMaxTokens, T above context_length.
RowMatrix chapter2_embeddings(std::span<const int> ids, int d_in, std::uint64_t seed,
                              int context_length = 0, int vocab_size = kGpt2VocabSize);

// The defaults of a text run: d_in 3 keeps the chapter-3 matrices as small as
// the book's own example (chapter 2 uses 256); seed 123 is the book's.
inline constexpr int kDefaultTextDim = 3;
inline constexpr std::uint64_t kDefaultEmbedSeed = 123;

// A typed text's tokens and how chapter 2 embeds them.
struct TextInputs {
  std::vector<int> ids;             // GPT-2's token ids
  std::vector<std::string> tokens;  // their texts as printable_token (" journey" keeps its space)
  int d_in = kDefaultTextDim;
  std::uint64_t seed = kDefaultEmbedSeed;  // torch.manual_seed before the layers
  int context_length = 0;                  // 0: no positional embedding
  int vocab_size = kGpt2VocabSize;
};

// Tokens already encoded (by GPT-2's tokenizer or one of its vocabulary
// size) with the embedding settings. Throws ParseError for no token.
TextInputs text_inputs(std::span<const Token> tokens, int d_in, std::uint64_t seed,
                       int context_length = 0, int vocab_size = kGpt2VocabSize);

// GPT-2's tokens of `text` with the embedding settings. Throws ParseError
// (base/errors.hpp) for text that is not UTF-8 or gives no token.
TextInputs tokenize_text(std::string_view text, int d_in, std::uint64_t seed,
                         int context_length = 0,
                         const Gpt2Tokenizer& tokenizer = Gpt2Tokenizer::builtin());

// The run's inputs: the tokens and chapter2_embeddings of their ids. Throws
// ParseError with chapter2_embeddings' message (too many tokens for
// context_length or kMaxTokens, d_in out of range).
Inputs chapter2_inputs(const TextInputs& text);

}  // namespace attnscope::core
