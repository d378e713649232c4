// model_script.cpp: the book's GPTModel run as a PyTorch script (see
// model_script.hpp).
//
// Sections: Python literals / the classes / refusals and checks / the script.
#include "attnscope/model/model_script.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "model/gpt2_internal.hpp"

namespace attnscope::core {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Python literals

// `c` as a two-digit \x escape.
std::string hex_escape(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  return buf;
}

// UTF-8 text as the inside of a double-quoted Python str literal: quotes,
// backslashes and control characters escaped, the rest as it is (the
// script is UTF-8, Python's default for source).
std::string python_str_body(std::string_view utf8) {
  std::string out;
  for (char ch : utf8) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += hex_escape(c);
    } else {
      out += ch;
    }
  }
  return out;
}

// A path as a Python expression giving it back: a str literal when the path
// is UTF-8, else os.fsdecode of its bytes (which torch.load takes alike).
std::string python_path(const fs::path& path) {
  const std::string bytes = path.string();
  if (decode_utf8_replace(bytes) == bytes) return "\"" + python_str_body(bytes) + "\"";
  std::string out = "os.fsdecode(b\"";
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\')
      out += std::string("\\") + ch;
    else if (c < 0x20 || c >= 0x7f)
      out += hex_escape(c);
    else
      out += ch;
  }
  return out + "\")";
}

// Text for a comment: what would end the comment's line (\n, \r) or upset
// the source (NUL, other control characters) escaped; bytes that are not
// UTF-8 as U+FFFD.
std::string comment_text(std::string_view text) {
  std::string out;
  for (char ch : decode_utf8_replace(text)) {
    const auto c = static_cast<unsigned char>(ch);
    out += c < 0x20 || c == 0x7f ? hex_escape(c) : std::string(1, ch);
  }
  return out;
}

// The shortest decimal that reads back as `v` (a config's drop_rate).
std::string python_double(double v) {
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // a float, as in GPT_CONFIG
  return s;
}

// ---------------------------------------------------------------------------
// The classes: chapter 4's GPTModel, its attention keeping its last weights.

// stage-literals: off (Python source, not stage ids)
constexpr std::string_view kClasses = R"PY(import math
import os
import pickle

import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    """Each token's vector shifted to mean 0 and scaled to variance 1 over
    its emb_dim entries, then multiplied by `scale` and moved by `shift`."""

    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # the biased variance, as GPT-2
        normed = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * normed + self.shift


class GELU(nn.Module):
    """GELU in its tanh form, the one GPT-2 was trained with."""

    def forward(self, x):
        c = torch.sqrt(torch.tensor(2.0 / math.pi))
        return 0.5 * x * (1 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3))))


class FeedForward(nn.Module):
    """emb_dim -> 4 * emb_dim -> GELU -> emb_dim, on each token alone."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg["emb_dim"]
        self.layers = nn.Sequential(nn.Linear(d, 4 * d), GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return self.layers(x)


class MultiHeadAttention(nn.Module):
    """Causal self-attention split into num_heads heads. `attn_weights`
    keeps the last forward's softmax weights, (batch, heads, T, T)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        # 1 above the diagonal: key j is hidden from query i when j > i.
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length),
                                                diagonal=1))
        self.attn_weights = None

    def split(self, x, b, t):
        # (b, t, d_out) -> (b, num_heads, t, head_dim)
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, t, _ = x.shape
        queries = self.split(self.W_query(x), b, t)
        keys = self.split(self.W_key(x), b, t)
        values = self.split(self.W_value(x), b, t)
        scores = queries @ keys.transpose(2, 3)  # (b, heads, t, t)
        scores.masked_fill_(self.mask.bool()[:t, :t], float("-inf"))
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        self.attn_weights = weights.detach()
        weights = self.dropout(weights)
        context = (weights @ values).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(context)


class TransformerBlock(nn.Module):
    """LayerNorm -> attention -> add back; LayerNorm -> feed forward -> add back."""

    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"], d_out=cfg["emb_dim"], context_length=cfg["context_length"],
            dropout=cfg["drop_rate"], num_heads=cfg["n_heads"], qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        x = x + self.drop_shortcut(self.ff(self.norm2(x)))
        return x


class GPTModel(nn.Module):
    """Token + position embeddings, n_layers blocks, a last LayerNorm and
    the output head: logits (batch, T, vocab_size)."""

    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        _, t = in_idx.shape
        x = self.tok_emb(in_idx) + self.pos_emb(torch.arange(t, device=in_idx.device))
        x = self.trf_blocks(self.drop_emb(x))
        return self.out_head(self.final_norm(x))
)PY";

// Loading the file, running the text, printing: after the config, the
// path and the ids are defined (PTH, ids, LAYER, HEAD, TOP).
constexpr std::string_view kRun = R"PY(
# torch.save(model.state_dict(), PTH) saves a bare state_dict; chapter 5's
# training checkpoint keeps it under "model_state_dict" beside the optimizer's.
try:
    checkpoint = torch.load(PTH, map_location="cpu", weights_only=True)
except TypeError:  # PyTorch before 1.13 has no weights_only
    checkpoint = torch.load(PTH, map_location="cpu")
except pickle.UnpicklingError:
    # PyTorch 1.13's weights-only reader lacks opcodes an optimizer's state
    # uses (floats). attnscope opened this file with a reader that calls
    # nothing but the tensors' own rebuild, so the full reader reads it here.
    checkpoint = torch.load(PTH, map_location="cpu", weights_only=False)
state_dict = checkpoint.get("model_state_dict", checkpoint)

model = GPTModel(GPT_CONFIG)
missing, unexpected = model.load_state_dict(state_dict, strict=False)
# The causal mask is a buffer made from context_length, not a learned weight.
missing = [k for k in missing if not k.endswith(".att.mask")]
unexpected = [k for k in unexpected if not k.endswith(".att.mask")]
if missing or unexpected:
    raise SystemExit(f"{PTH} does not hold this GPT_CONFIG's GPTModel: missing {missing}, "
                     f"unexpected {unexpected}")
model.eval()  # dropout off: the numbers of a trained model

with torch.no_grad():
    logits = model(torch.tensor([ids]))  # (1, T, vocab_size)

T = len(ids)
weights = model.trf_blocks[LAYER].att.attn_weights[0, HEAD]  # (T, T); row i sums to 1
print(f"# layer {LAYER} head {HEAD}: attention weights, {T} x {T} (weights ROW V0 .. V{T - 1})")
for i, row in enumerate(weights.tolist()):
    print("weights", i, " ".join(f"{v:.9g}" for v in row))

last = logits[0, -1]  # the scores of every vocabulary entry as the token after the text
probabilities = torch.softmax(last, dim=-1)
top = torch.topk(last, TOP)
print(f"# the {TOP} most likely next tokens after token {T - 1} (next RANK ID LOGIT PROBABILITY)")
for rank, (logit, i) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
    print("next", rank, i, f"{logit:.9g}", f"{probabilities[i].item():.9g}")
)PY";
// stage-literals: on

// ---------------------------------------------------------------------------
// Refusals and checks

bool is_pth_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".pth" || e == ".pt";
}

void check_run(const ModelScriptRun& run) {
  const Gpt2Config& c = run.config.config;
  const auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (run.ids.empty()) bad("the script needs at least one token");
  if (static_cast<int>(run.ids.size()) > c.n_positions)
    bad(std::to_string(run.ids.size()) + " tokens do not fit the model's context_length " +
        std::to_string(c.n_positions));
  for (int id : run.ids)
    if (id < 0 || id >= c.vocab_size)
      bad("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
          std::to_string(c.vocab_size - 1) + ")");
  if (run.layer < 0 || run.layer >= c.n_layer)
    bad("layer " + std::to_string(run.layer) + " is not a layer of the model: it has " +
        std::to_string(c.n_layer) + ", 0.." + std::to_string(c.n_layer - 1));
  if (run.head < 0 || run.head >= c.n_head)
    bad("head " + std::to_string(run.head) + " is not a head of the model: it has " +
        std::to_string(c.n_head) + ", 0.." + std::to_string(c.n_head - 1));
  if (run.top < 1 || run.top > c.vocab_size)
    bad("the number of next tokens must be 1.." + std::to_string(c.vocab_size) + ", not " +
        std::to_string(run.top));
  if (!run.tokens.empty() && run.tokens.size() != run.ids.size())
    bad("the script's tokens and ids differ in number");
}

}  // namespace

std::optional<std::string> model_script_refusal(const ModelFiles& files,
                                                std::optional<ModelFormat> format) {
  const std::string name = decode_utf8_replace(files.weights.filename().string());
  const std::string why =
      ", and no script here can be checked against the classes it was saved from "
      "(attnscope-cli model trace prints its numbers)";
  if (!is_pth_file(files.weights))
    return "a PyTorch script is written for the book's GPTModel saved as .pth; " + name +
           " is a checkpoint in Hugging Face's format" + why;
  if (format && *format != ModelFormat::Book)
    return "a PyTorch script is written for the book's GPTModel; " + name +
           " holds Hugging Face's GPT-2 (transformer.h.N...)" + why;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The script

std::string model_script(const ModelScriptRun& run) {
  check_run(run);
  const Gpt2Config& c = run.config.config;
  const std::string T = std::to_string(run.ids.size());
  std::string s = "#!/usr/bin/env python3\n";
  s += "# The book's GPTModel (chapter 4 of \"Build a Large Language Model (From Scratch)\")\n";
  s += "# on " + comment_text(run.weights.filename().string()) + ", written by attnscope: run ";
  s += "it with python3 and PyTorch to print\n# layer " + std::to_string(run.layer) + " head " +
       std::to_string(run.head) + "'s attention weights (" + T + " x " + T + ") and the " +
       std::to_string(run.top) + " most likely next tokens.\n\n";
  s += kClasses;
  s += "\n\nGPT_CONFIG = {\n";
  s += "    \"vocab_size\": " + std::to_string(c.vocab_size) + ",\n";
  s += "    \"context_length\": " + std::to_string(c.n_positions) + ",\n";
  s += "    \"emb_dim\": " + std::to_string(c.n_embd) + ",\n";
  s += "    \"n_heads\": " + std::to_string(c.n_head) + ",\n";
  s += "    \"n_layers\": " + std::to_string(c.n_layer) + ",\n";
  s += "    \"drop_rate\": " + python_double(run.config.drop_rate) + ",\n";
  s += std::string("    \"qkv_bias\": ") + (run.config.qkv_bias ? "True" : "False") + ",\n}\n\n";
  s += "PTH = " + python_path(run.weights) + "\n\n";
  if (!run.text.empty()) {
    s += "# The text:\n";
    std::string_view rest = run.text;
    while (true) {  // one comment line per line of the text
      const std::size_t nl = rest.find('\n');
      s += "#   " + comment_text(rest.substr(0, nl)) + "\n";
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
  s += "# Its " + T + " token ids (GPT-2's tokenizer; no tiktoken needed here):\n";
  s += "ids = [\n";
  for (std::size_t i = 0; i < run.ids.size(); ++i) {
    s += "    " + std::to_string(run.ids[i]) + ",";
    if (!run.tokens.empty())
      s += "  # \"" + python_str_body(decode_utf8_replace(run.tokens[i])) + "\"";
    s += "\n";
  }
  s += "]\n\n";
  s += "LAYER = " + std::to_string(run.layer) + "  # 0-based, of " + std::to_string(c.n_layer) +
       "\n";
  s += "HEAD = " + std::to_string(run.head) + "  # 0-based, of " + std::to_string(c.n_head) + "\n";
  s += "TOP = " + std::to_string(run.top) + "\n";
  s += kRun;
  return s;
}

std::string model_script(const Gpt2Model& model, const ModelFiles& files, ModelScriptRun run) {
  if (const auto why = model_script_refusal(files, model.format())) throw ParseError(*why);
  run.config = parse_book_config(read_text_file(files.config.string()), files.config.string());
  const Gpt2Config &file = run.config.config, &loaded = model.config();
  if (file.n_layer != loaded.n_layer || file.n_head != loaded.n_head ||
      file.n_embd != loaded.n_embd || file.n_positions != loaded.n_positions ||
      file.vocab_size != loaded.vocab_size)
    throw ParseError(files.config.string() +
                     ": the config changed since the model was loaded; open the model again");
  run.weights = fs::absolute(files.weights).lexically_normal();
  if (run.tokens.empty())
    for (int id : run.ids) run.tokens.push_back(detail::token_text(model.tokenizer(), id));
  check_run(run);  // the ids before the tokenizer reads them
  const auto known = [&](int id) {
    return static_cast<std::size_t>(id) < model.tokenizer().vocab_size();
  };
  if (run.text.empty() && std::all_of(run.ids.begin(), run.ids.end(), known))
    run.text = model.tokenizer().decode_text(run.ids);
  return model_script(run);
}

}  // namespace attnscope::core
