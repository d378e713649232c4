// pytorch_code.cpp: a run as a PyTorch script (see pytorch_code.hpp).
//
// Sections
//   1. numbers and tensor literals
//   2. the book's classes, as Python source
//   3. the script
#include "attnscope/book/pytorch_code.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "attnscope/base/stages.hpp"
#include "attnscope/io/weights.hpp"

namespace attnscope::core {

// ---------------------------------------------------------------------------
// 1. Numbers and tensor literals

std::string python_float32(float v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  char buf[64];
  // The shortest decimal that reads back as v when read as a float32...
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // ...but Python reads a double first, then torch rounds it to float32: a
  // decimal at the edge of v's rounding interval could round twice the wrong
  // way. Check, and fall back to 9 significant digits (always safe: within
  // 5e-9 relative of v, far from the interval's edges).
  if (static_cast<float>(std::strtod(s.c_str(), nullptr)) != v) {
    const int n = std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    s.assign(buf, static_cast<std::size_t>(n));
  }
  // A float literal, not an int: "1" -> "1.0" (torch.tensor([[1, 2]]) is int64).
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string python_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest, round-trips as a double
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// A token name inside a Python comment: control characters (a line break
// would end the comment) become spaces.
std::string comment_text(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return s;
}

// A 2-D tensor literal laid out as the book writes its inputs: one row a
// line, the closing parenthesis on its own; row_comment(r), when given,
// follows row r.
std::string matrix_literal(const RowMatrix& m,
                           const std::function<std::string(Eigen::Index)>& row_comment = {}) {
  std::string out = "torch.tensor(\n    [";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    if (r) out += "     ";
    out += "[";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      if (c) out += ", ";
      out += python_float32(m(r, c));
    }
    out += r + 1 < m.rows() ? "]," : "]]";
    if (row_comment) out += "  # " + row_comment(r);
    out += "\n";
  }
  return out + ")";
}

// A (1, n) bias as a 1-D tensor literal on one line.
std::string vector_literal(const RowMatrix& m) {
  std::string out = "torch.tensor([";
  for (Eigen::Index c = 0; c < m.cols(); ++c) {
    if (c) out += ", ";
    out += python_float32(m(0, c));
  }
  return out + "])";
}

// ---------------------------------------------------------------------------
// 2. The book's classes (chapter 3), as Python source

constexpr const char* kSelfAttentionV1 = R"(class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key   = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # omega
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )
        context_vec = attn_weights @ values
        return context_vec
)";

constexpr const char* kSelfAttentionV2 = R"(class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )
        context_vec = attn_weights @ values
        return context_vec
)";

constexpr const char* kCausalAttention = R"(class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length,
                 dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask',
            torch.triu(torch.ones(context_length, context_length),
                       diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(
            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec
)";

constexpr const char* kWrapper = R"(class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length,
                 dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(
                 d_in, d_out, context_length, dropout, qkv_bias
             )
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
)";

constexpr const char* kMultiHeadAttention = R"(class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out,
                 context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert (d_out % num_heads == 0), \
            "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask',
            torch.triu(torch.ones(context_length, context_length),
                       diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(
            b, num_tokens, self.num_heads, self.head_dim
        )

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)

        context_vec = context_vec.contiguous().view(
            b, num_tokens, self.d_out
        )
        context_vec = self.out_proj(context_vec)
        return context_vec
)";

// ---------------------------------------------------------------------------
// 3. The script

// The module's variable name, as the book names it.
const char* module_name(Variant v) {
  switch (v) {
    case Variant::SelfAttentionV1:
      return "sa_v1";
    case Variant::SelfAttentionV2:
      return "sa_v2";
    case Variant::Causal:
      return "ca";
    case Variant::MultiheadWrapper:
    case Variant::Multihead:
      return "mha";
    case Variant::Simple:
      break;
  }
  return "";
}

// Lines that copy one projection's explicit weights into `path` (e.g.
// "mha.heads[1].W_key"): the tensors are defined under `name` (e.g. "W_key_1")
// into `out`, the copies appended to `copies` (run under torch.no_grad()).
void append_projection(std::string& out, const std::string& path, const std::string& name,
                       const Projection& p, bool linear, std::string& copies) {
  out += name + " = " + matrix_literal(p.weight) + "\n";
  if (linear) {
    copies += "    " + path + ".weight.copy_(" + name + ".T)\n";
  } else {
    copies += "    " + path + ".copy_(" + name + ")\n";
  }
  if (p.bias.size() > 0) {
    const std::string bias_name = "b" + name.substr(1);  // W_query_1 -> b_query_1
    out += bias_name + " = " + vector_literal(p.bias) + "\n";
    copies += "    " + path + ".bias.copy_(" + bias_name + ")\n";
  }
}

std::string explicit_weights_section(const Config& config, const Parameters& params) {
  const std::string m = module_name(config.variant);
  const bool linear = config.variant != Variant::SelfAttentionV1;
  std::string out =
      "\n# The imported weights, as the app shows them (x @ W + b): W is (d_in, d_out).\n";
  if (linear) out += "# nn.Linear stores its weight transposed, (d_out, d_in): copy W.T into it.\n";
  std::string copies;
  const bool wrapper = config.variant == Variant::MultiheadWrapper;
  for (std::size_t h = 0; h < params.qkv.size(); ++h) {
    const std::string prefix = wrapper ? m + ".heads[" + std::to_string(h) + "]" : m;
    const std::string suffix = wrapper ? "_" + std::to_string(h) : "";
    const QkvProjections& q = params.qkv[h];
    append_projection(out, prefix + ".W_query", stage_id::W_query + suffix, q.query, linear,
                      copies);
    append_projection(out, prefix + ".W_key", stage_id::W_key + suffix, q.key, linear, copies);
    append_projection(out, prefix + ".W_value", stage_id::W_value + suffix, q.value, linear,
                      copies);
  }
  if (config.variant == Variant::Multihead)
    append_projection(out, m + ".out_proj", stage_id::W_out, params.out, true, copies);
  out += "with torch.no_grad():\n" + copies;
  return out;
}

std::string config_summary(const Config& config, bool explicit_weights) {
  std::string s = "d_out=" + std::to_string(config.d_out);
  if (has_heads(config.variant)) s += ", num_heads=" + std::to_string(config.num_heads);
  if (is_causal(config.variant)) s += ", dropout=" + python_double(config.dropout);
  if (config.variant != Variant::Simple) {
    s += ", seed=" + std::to_string(config.seed);
    if (config.variant != Variant::SelfAttentionV1)
      s += std::string(", qkv_bias=") + (config.qkv_bias ? "True" : "False");
  }
  if (is_causal(config.variant)) s += config.training ? ", training mode" : ", eval mode";
  if (explicit_weights) s += ", imported weights";
  return s;
}

void check_preconditions(const Config& config, const Inputs& inputs,
                         const Parameters* explicit_weights) {
  if (std::string problem = validate(config, inputs); !problem.empty())
    throw std::invalid_argument("pytorch_script: " + problem);
  if (explicit_weights) {
    const std::string problem =
        validate_parameters(*explicit_weights, config, static_cast<int>(inputs.embeddings.cols()));
    if (!problem.empty()) throw std::invalid_argument("pytorch_script: " + problem);
  }
}

// The whole script; `inputs_section` defines `inputs` (T, d_in).
std::string script(const Config& config, int tokens, int d_in, const std::string& inputs_section,
                   const Parameters* explicit_weights) {
  const Variant v = config.variant;
  const std::string m = module_name(v);
  std::string out;
  out += "# attnscope " ATTNSCOPE_VERSION ": one run as PyTorch code, with the classes of\n";
  out += "# chapter 3 of Raschka's \"Build a Large Language Model (From Scratch)\".\n";
  out += "# " +
         std::string(v == Variant::Simple ? "simplified self-attention" : variant_book_name(v)) +
         ", T=" + std::to_string(tokens) + ", d_in=" + std::to_string(d_in) + ", " +
         config_summary(config, explicit_weights != nullptr) + "\n";
  out += "# Run it with python3 and PyTorch: it prints the output the app shows.\n";
  out += "import torch\n";
  if (v != Variant::Simple) out += "import torch.nn as nn\n";
  out += "\n";

  switch (v) {
    case Variant::Simple:
      break;
    case Variant::SelfAttentionV1:
      out += std::string("\n") + kSelfAttentionV1 + "\n\n";
      break;
    case Variant::SelfAttentionV2:
      out += std::string("\n") + kSelfAttentionV2 + "\n\n";
      break;
    case Variant::Causal:
      out += std::string("\n") + kCausalAttention + "\n\n";
      break;
    case Variant::MultiheadWrapper:
      out += std::string("\n") + kCausalAttention + "\n\n" + kWrapper + "\n\n";
      break;
    case Variant::Multihead:
      out += std::string("\n") + kMultiHeadAttention + "\n\n";
      break;
  }

  out += inputs_section;
  out += "\n";
  // Every element of the output (torch summarises from 1000 on), 6 decimals.
  const long long numel =
      static_cast<long long>(tokens) *
      (v == Variant::Simple
           ? d_in
           : config.d_out * (v == Variant::MultiheadWrapper ? config.num_heads : 1));
  const std::string print_options =
      "torch.set_printoptions(precision=6" +
      (numel >= 1000 ? ", threshold=" + std::to_string(numel + 1) : std::string()) +
      ")  # the book prints 4 decimals\n";

  if (v == Variant::Simple) {
    out += "# Simplified self-attention (section 3.3) has no trainable weights.\n";
    out += "attn_scores = inputs @ inputs.T\n";
    out += "attn_weights = torch.softmax(attn_scores, dim=-1)\n";
    out += "all_context_vecs = attn_weights @ inputs\n";
    out += print_options;
    out += "print(all_context_vecs)\n";
    return out;
  }

  out += "d_in = inputs.shape[1]  # " + std::to_string(d_in) + "\n";
  out += "d_out = " + std::to_string(config.d_out) + "\n";
  const bool batched = is_causal(v);
  if (batched) {
    out += "batch = inputs.unsqueeze(0)  # a batch of one: (1, T, d_in)\n";
    out += "context_length = batch.shape[1]  # T = " + std::to_string(tokens) + "\n";
  }
  out += "\ntorch.manual_seed(" + std::to_string(config.seed) +
         ")  # the module's constructor draws its weights from here\n";
  const std::string bias = config.qkv_bias ? "True" : "False";
  const std::string dropout = python_double(config.dropout);
  switch (v) {
    case Variant::SelfAttentionV1:
      out += m + " = SelfAttention_v1(d_in, d_out)\n";
      break;
    case Variant::SelfAttentionV2:
      out += m + " = SelfAttention_v2(d_in, d_out, qkv_bias=" + bias + ")\n";
      break;
    case Variant::Causal:
      out += m + " = CausalAttention(d_in, d_out, context_length, " + dropout +
             ", qkv_bias=" + bias + ")\n";
      break;
    case Variant::MultiheadWrapper:
    case Variant::Multihead:
      out += m + " = " + std::string(variant_book_name(v)) + "(d_in, d_out, context_length, " +
             dropout + ", num_heads=" + std::to_string(config.num_heads) + ", qkv_bias=" + bias +
             ")\n";
      break;
    case Variant::Simple:
      break;
  }
  if (explicit_weights) out += explicit_weights_section(config, *explicit_weights) + "\n";
  if (batched) {
    if (config.training)
      out += m + ".train()  # training mode: dropout draws from the generator after the weights\n";
    else
      out += m + ".eval()  # eval mode: dropout is off\n";
  }
  out += "\n" + print_options;
  if (batched) {
    out += "context_vecs = " + m + "(batch)  # (1, T, " +
           (v == Variant::MultiheadWrapper ? std::string("num_heads * d_out") : "d_out") + ")\n";
  } else {
    out += "context_vecs = " + m + "(inputs)  # (T, d_out)\n";
  }
  out += "print(context_vecs)\n";
  return out;
}

}  // namespace

std::string pytorch_script(const Config& config, const Inputs& inputs,
                           const Parameters* explicit_weights) {
  check_preconditions(config, inputs, explicit_weights);
  const RowMatrix& x = inputs.embeddings;
  std::string section = "# The inputs: one row per token, (T, d_in) = (" +
                        std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + ").\n";
  section += "inputs = " +
             matrix_literal(x,
                            [&inputs](Eigen::Index r) {
                              return comment_text(inputs.tokens[static_cast<std::size_t>(r)]);
                            }) +
             "\n";
  return script(config, static_cast<int>(x.rows()), static_cast<int>(x.cols()), section,
                explicit_weights);
}

std::string pytorch_script(const Config& config, const RandomInputs& random,
                           const Parameters* explicit_weights) {
  if (random.tokens < 1 || random.tokens > kMaxTokens || random.d_in < 1 || random.d_in > kMaxDim)
    throw std::invalid_argument("pytorch_script: random inputs of " +
                                std::to_string(random.tokens) + " x " +
                                std::to_string(random.d_in) + " are outside 1..4096");
  // The config's own checks, on a one-token stand-in (the shape is checked above).
  Inputs probe{{"t"}, RowMatrix::Zero(1, random.d_in)};
  if (std::string problem = validate(config, probe); !problem.empty())
    throw std::invalid_argument("pytorch_script: " + problem);
  if (explicit_weights) {
    const std::string problem = validate_parameters(*explicit_weights, config, random.d_in);
    if (!problem.empty()) throw std::invalid_argument("pytorch_script: " + problem);
  }
  const std::string T = std::to_string(random.tokens), D = std::to_string(random.d_in);
  std::string section = "# The inputs: random, uniform in [0, 1), (T, d_in) = (" + T + ", " + D +
                        "), drawn under the input seed.\n";
  section += "torch.manual_seed(" + std::to_string(random.seed) + ")\n";
  section += "inputs = torch.rand(" + T + ", " + D + ")\n";
  return script(config, random.tokens, random.d_in, section, explicit_weights);
}

std::string pytorch_script(const Config& config, const TextInputs& text,
                           const Parameters* explicit_weights) {
  const Inputs inputs{text.tokens, chapter2_embeddings(text.ids, text.d_in, text.seed,
                                                       text.context_length, text.vocab_size)};
  check_preconditions(config, inputs, explicit_weights);
  const std::string T = std::to_string(text.ids.size()), D = std::to_string(text.d_in);
  std::string section =
      "# The inputs: GPT-2's token ids of the text (tiktoken.get_encoding(\"gpt2\")\n";
  section += "# .encode(text, allowed_special={\"<|endoftext|>\"})) through the embedding layers\n";
  section += "# of chapter 2, (T, d_in) = (" + T + ", " + D + ").\n";
  section += "token_ids = torch.tensor([\n";
  for (std::size_t t = 0; t < text.ids.size(); ++t)
    section +=
        "    " + std::to_string(text.ids[t]) + ",  # \"" + comment_text(text.tokens[t]) + "\"\n";
  section += "])\n";
  section += "torch.manual_seed(" + std::to_string(text.seed) + ")\n";
  section += "token_embedding_layer = torch.nn.Embedding(" + std::to_string(text.vocab_size) +
             ", " + D + ")\n";
  if (text.context_length > 0) {
    section += "pos_embedding_layer = torch.nn.Embedding(" + std::to_string(text.context_length) +
               ", " + D + ")  # context_length " + std::to_string(text.context_length) + "\n";
    section += "inputs = token_embedding_layer(token_ids) + pos_embedding_layer(torch.arange(" + T +
               "))\n";
  } else {
    section += "inputs = token_embedding_layer(token_ids)\n";
  }
  return script(config, static_cast<int>(text.ids.size()), text.d_in, section, explicit_weights);
}

}  // namespace attnscope::core
