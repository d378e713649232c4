// model_script.hpp: a run of the book's GPTModel as a self-contained
// PyTorch script ("Copy run as PyTorch code" with a .pth model showing,
// `attnscope-cli model script`).
//
// The script, run with python3 and PyTorch, holds in order: the book's
// chapter-4 classes (LayerNorm with scale and shift, the tanh GELU,
// FeedForward, MultiHeadAttention, TransformerBlock, GPTModel), whose
// attention keeps its last weights; the GPT_CONFIG dict; torch.load of the
// .pth (a bare state_dict or a checkpoint's "model_state_dict", as the
// engine's .pth reader takes them); the token ids as a list literal (the
// text in a comment, each id commented with its token); model.eval() and
// the forward under torch.no_grad(). It prints, one record a line:
//   weights ROW V0 V1 ... V(T-1)     layer L head H's softmax weights, row ROW
//   next RANK ID LOGIT PROBABILITY   the `top` most likely next tokens after
//                                    the last position, most likely first
// after a "#" line naming what follows. Numbers print with 9 significant
// digits (float32 reads back exactly).
//
// Only the book's GPTModel saved with torch.save as .pth has such a script:
// a Hugging Face checkpoint's numbers come from `attnscope-cli model trace`,
// and no script can be checked against Hugging Face's classes here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/model/gpt2_model.hpp"

namespace attnscope::core {

// What the script runs and prints.
struct ModelScriptRun {
  std::filesystem::path weights;    // the .pth file torch.load reads (written as given)
  BookConfig config;                // its GPT_CONFIG: shape, qkv_bias, drop_rate
  std::vector<int> ids;             // the text's token ids (1..context_length)
  std::vector<std::string> tokens;  // each id's printable token (a comment), or empty
  std::string text;                 // the text, as a comment ("" for none)
  int layer = 0;                    // the block whose attention weights print
  int head = 0;                     // ... and its head
  int top = 5;                      // next tokens printed
};

// Why the model at `files` can have no script, or nullopt when it can: its
// weights are a .pth or .pt file and, when `format` is known (the model is
// loaded), in the book's layout. The reason is one sentence, which ends by
// pointing at `attnscope-cli model trace`.
std::optional<std::string> model_script_refusal(const ModelFiles& files,
                                                std::optional<ModelFormat> format = std::nullopt);

// The script of `run`. Throws std::invalid_argument for a run it cannot
// write: no ids or more than context_length, an id outside the vocabulary,
// a layer or head the config does not have, top < 1 or above vocab_size.
std::string model_script(const ModelScriptRun& run);

// The run of `model`, loaded from `files` (as locate_model resolves them):
// reads the book's GPT_CONFIG from files.config into run.config (qkv_bias
// and drop_rate are not in the loaded model), sets run.weights to the
// weights' absolute path, and fills run.tokens and run.text from the ids
// with the model's tokenizer when they are empty. Throws ParseError with
// model_script_refusal's reason for a model that has no script, or naming
// the config's problem; then as model_script(run).
std::string model_script(const Gpt2Model& model, const ModelFiles& files, ModelScriptRun run);

}  // namespace attnscope::core
