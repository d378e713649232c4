// predictions.hpp: what a model run predicts, as chapter 5 of the book reads
// it: the next token drawn as the book's generate() draws it (temperature,
// top-k, torch.multinomial after torch.manual_seed), the loss of the text
// (calc_loss_batch: the cross-entropy of each next token), and what each
// layer would predict if the model stopped there (the logit lens: a block's
// output through the final LayerNorm and the LM head).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnscope/base/matrix.hpp"
#include "attnscope/base/rng.hpp"
#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

// The k most likely tokens of one row of logits (1 x vocab), most likely
// first (equal logits: the lower id first); probabilities are the softmax
// of the whole row.
std::vector<NextToken> top_tokens(const Gpt2Model& model, const RowMatrix& logits, int k);
// The same with each token named by `token_name` (any tokenizer's).
std::vector<NextToken> top_tokens(const RowMatrix& logits, int k,
                                  const std::function<std::string(int)>& token_name);

// How generate() picks each next token (the book's §5.3 arguments).
struct Sampling {
  double temperature = 0.0;  // 0: greedy (torch.argmax), the book's default
  int top_k = 0;             // 0: no cut (the book's top_k=None)
  std::uint64_t seed = 123;  // torch.manual_seed(seed) before generate()
};
// Throws std::invalid_argument naming the value and what would work: a
// temperature that is negative or not finite, top_k outside 0..vocab.
void check_sampling(const Sampling& s, int vocab);

// The distributions one step of generate() reads, for people to see.
struct SamplingStep {
  std::vector<float> before;  // softmax(logits): the model's own distribution
  // What the draw picks from: softmax(logits cut to the top k, / temperature);
  // with temperature 0, all of it on the argmax (greedy).
  std::vector<float> after;
  float cut = 0.0f;  // the k-th largest logit (logits below it become -inf); top_k > 0 only
  int kept = 0;      // tokens with a logit at or above the cut (ties at the cut are kept)
};
SamplingStep sampling_step(const RowMatrix& logits, const Sampling& s);

// The book's generate() token by token, with its own random generator:
// where temperature > 0, each next() draws as torch.multinomial(probs, 1)
// does on the CPU (one exponential per vocabulary entry, the argmax of
// probs / draws), so a run from the same seed picks the same tokens as
// PyTorch after torch.manual_seed(seed).
class BookSampler {
 public:
  explicit BookSampler(const Sampling& s) : sampling_(s), generator_(s.seed) {}
  int next(const RowMatrix& logits);
  const Sampling& sampling() const { return sampling_; }

 private:
  Sampling sampling_;
  TorchGenerator generator_;
};

// generate(model, idx, max_new_tokens, context_size = n_positions,
// temperature, top_k): n_tokens times, run the last n_positions ids and add
// the token the sampler picks. Returns the new ids only. Throws as
// check_sampling does.
std::vector<int> generate(const std::shared_ptr<const Gpt2Model>& model, std::vector<int> ids,
                          int n_tokens, const Sampling& s);

// The logits (1 x vocab) after token `position`: its row of LN_f(x_L)
// through the LM head. Throws std::invalid_argument outside 0..T-1.
RowMatrix position_logits(ModelRun& run, int position);

// The cross-entropy of the text (the book's calc_loss_batch with the text as
// inputs shifted by one as targets): per_token[i] = -log p(token i + 1 |
// tokens 0..i), natural log. A one-token text has nothing to predict: no
// mean, no perplexity.
struct TextLoss {
  std::vector<double> per_token;     // T - 1 values
  std::optional<double> mean;        // the loss the book prints
  std::optional<double> perplexity;  // exp(mean)
};
// `known`: per-token losses already computed for a text that shares this
// one's first known.size() + 1 tokens (an edit further on changes none of
// them: attention is causal); only the others are computed.
TextLoss text_loss(ModelRun& run, std::span<const double> known = {});

// The logit lens at one position: for each residual of the run, x_0 (the
// embeddings, layer 0) to x_L (the last block's output, layer L), the top k
// tokens of softmax(LN_f(x_l) . W_headᵀ). layers[L] is the model's own
// prediction (ModelRun::next_tokens_at).
struct LensColumn {
  int position = 0;
  std::vector<std::vector<NextToken>> layers;  // L + 1 entries
};
// Layer l of the lens for people: "embeddings", then "block 0", "block 1", ...
std::string lens_layer_name(int layer);
// Throws std::invalid_argument for a position outside 0..T-1 or k < 1.
LensColumn logit_lens(ModelRun& run, int position, int k);

// The top token of every (layer, position) of the lens: (L + 1) x T.
struct LensGrid {
  int layers = 0, positions = 0;
  std::vector<NextToken> top;  // row-major: top[l * positions + t]
  const NextToken& at(int layer, int position) const {
    return top[static_cast<std::size_t>(layer) * static_cast<std::size_t>(positions) +
               static_cast<std::size_t>(position)];
  }
};
// With `cancel`, stops between layers once it is set (returns an empty grid).
// With `known`, its first `known_columns` positions are taken from it (a
// grid of a text that shares those tokens) and only the others computed.
LensGrid logit_lens_grid(ModelRun& run, const std::atomic<bool>* cancel = nullptr,
                         const LensGrid* known = nullptr, int known_columns = 0);

}  // namespace attnscope::core
