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
// 50257 x 768 table costs ~0.1 s, not the 38 M normals of the whole table.
#pragma once

#include <cstdint>
#include <span>

#include "attnscope/matrix.hpp"

namespace attnscope::core {

// GPT-2's vocabulary size (the book's vocab_size).
inline constexpr int kGpt2VocabSize = 50257;

// (T, d_in) float32 inputs for the T token ids, as above; context_length 0
// adds no positional embedding. Throws std::invalid_argument naming the
// problem: no ids, an id outside [0, vocab_size), d_in or vocab_size below 1
// or d_in above kMaxDim, T above kMaxTokens, T above context_length.
RowMatrix chapter2_embeddings(std::span<const int> ids, int d_in, std::uint64_t seed,
                              int context_length = 0, int vocab_size = kGpt2VocabSize);

}  // namespace attnscope::core
