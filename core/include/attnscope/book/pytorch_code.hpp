// pytorch_code.hpp: one run as a self-contained PyTorch script, for a
// learner's notebook ("Copy run as PyTorch code", `attnscope-cli code`).
//
// The script, run as it is with python3 and PyTorch, prints the run's output
// tensor (context vectors, or the multi-head output) with the numbers the
// app shows, dropout included. It holds, in order:
//   the book's class for the variant (chapter 3; simplified self-attention has
//   no class and is the book's three lines), the inputs (a tensor literal, one
//   row per token, or torch.manual_seed(input_seed); torch.rand(T, d_in), or a
//   text's token ids through chapter 2's nn.Embedding layers),
//   torch.manual_seed(seed) and the module's construction (which draws its
//   parameters), the explicit weights if any, copied in under torch.no_grad()
//   (nn.Linear stores weight as (d_out, d_in): our (d_in, d_out) matrix .T),
//   train() or eval(), the forward on a batch of one (1, T, d_in) (the
//   self-attention classes take the 2-D (T, d_in) inputs as in the book), and
//   last print() of the output. Dropout draws from the generator after the
//   construction, as attnscope does (docs/trace-format.md).
//
// Every float is written so that it reads back as the same float32; the
// output prints with 6 decimals (torch.set_printoptions), every element.
#pragma once

#include <cstdint>
#include <string>

#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/embedding.hpp"
#include "attnscope/base/config.hpp"

namespace attnscope::core {

// Inputs the script draws itself: torch.manual_seed(seed); torch.rand(tokens, d_in).
struct RandomInputs {
  int tokens = 0;          // T
  int d_in = 0;            // embedding width
  std::uint64_t seed = 0;  // the input seed, drawn from before the module's seed
};

// The script for config on explicit inputs (written as a tensor literal, each
// row commented with its token). explicit_weights: nullptr for seeded weights.
// Preconditions (else std::invalid_argument): validate(config, inputs) is
// empty; explicit_weights, if given, fit the run (validate_parameters).
std::string pytorch_script(const Config& config, const Inputs& inputs,
                           const Parameters* explicit_weights);

// The same with inputs the script draws: torch.manual_seed(random.seed);
// inputs = torch.rand(T, d_in). Same preconditions for a T x d_in run.
std::string pytorch_script(const Config& config, const RandomInputs& random,
                           const Parameters* explicit_weights);

// The same with a text's inputs as the book's chapter 2 makes them: the token
// ids as a tensor literal (one a line, commented with its token), then
// torch.manual_seed(text.seed), nn.Embedding(vocab_size, d_in) and, with a
// context_length, nn.Embedding(context_length, d_in); inputs = the sum of
// their rows. Same preconditions, and those of chapter2_embeddings.
std::string pytorch_script(const Config& config, const TextInputs& text,
                           const Parameters* explicit_weights);

// A float32 as Python source that reads back (through double, as Python and
// torch.tensor read it) as exactly `v`: the shortest such decimal, e.g.
// "0.43", "-0.0", "1e-45"; non-finite values as float('inf') etc.
std::string python_float32(float v);

}  // namespace attnscope::core
