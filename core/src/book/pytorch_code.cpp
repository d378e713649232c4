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
// 2b. The classes after chapter 3, as the book's bonus code writes them (the
// forward without the KV cache, which a single forward pass does not use).
// With RoPE the script gives the module cos and sin tables (llama3.py's
// compute_rope_params) and its forward rotates queries and keys before the
// scores: the lines kRopeLines marks.

constexpr const char* kRopeFunctions =
    R"(def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    assert head_dim % 2 == 0, "Embedding dimension must be even"

    # Compute the inverse frequencies
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype)[: (head_dim // 2)].float() / head_dim))

    # Generate position indices
    positions = torch.arange(context_length, dtype=dtype)

    # Compute the angles
    angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)  # Shape: (context_length, head_dim // 2)

    # Expand angles to match the head_dim
    angles = torch.cat([angles, angles], dim=1)  # Shape: (context_length, head_dim)

    # Precompute sine and cosine
    cos = torch.cos(angles)
    sin = torch.sin(angles)

    return cos, sin


def apply_rope(x, cos, sin):
    # x: (batch_size, num_heads, seq_len, head_dim)
    batch_size, num_heads, seq_len, head_dim = x.shape
    assert head_dim % 2 == 0, "Head dimension must be even"

    # Split x into first half and second half
    x1 = x[..., : head_dim // 2]  # First half
    x2 = x[..., head_dim // 2:]  # Second half

    # Adjust sin and cos shapes
    cos = cos[:seq_len, :].unsqueeze(0).unsqueeze(0)  # Shape: (1, 1, seq_len, head_dim)
    sin = sin[:seq_len, :].unsqueeze(0).unsqueeze(0)

    # Apply the rotary transformation
    rotated = torch.cat((-x2, x1), dim=-1)
    x_rotated = (x * cos) + (rotated * sin)

    # It's ok to use lower-precision after applying cos and sin rotation
    return x_rotated.to(dtype=x.dtype)
)";

// The forward's RoPE lines, for queries and keys of shape (b, heads, T, head_dim).
constexpr const char* kRopeLines = R"(
        # RoPE: rotate queries and keys by position (self.cos, self.sin from
        # compute_rope_params); values are not rotated
        queries = apply_rope(queries, self.cos, self.sin)
        keys = apply_rope(keys, self.cos, self.sin)
)";

constexpr const char* kGqaHead = R"(class GroupedQueryAttention(nn.Module):
    def __init__(
            self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False
    ):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        assert num_heads % num_kv_groups == 0, "num_heads must be divisible by num_kv_groups"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, num_tokens, _ = x.shape

        # Apply projections
        queries = self.W_query(x)  # (b, num_tokens, num_heads * head_dim)
        keys = self.W_key(x)       # (b, num_tokens, num_kv_groups * head_dim)
        values = self.W_value(x)   # (b, num_tokens, num_kv_groups * head_dim)

        # Reshape
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
)";

constexpr const char* kGqaTail = R"(
        # Expand keys and values to match the number of heads
        # Shape: (b, num_heads, num_tokens, head_dim)
        keys = keys.repeat_interleave(self.group_size, dim=1)
        values = values.repeat_interleave(self.group_size, dim=1)

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        # Shape: (b, num_heads, num_tokens, num_tokens)
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        # causal mask
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)

        # Use the mask to fill attention scores
        attn_scores = attn_scores.masked_fill(mask, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        assert keys.shape[-1] == self.head_dim
        attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec
)";

constexpr const char* kSwaHead = R"(class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # Reduce the projection dim to match desired output dim

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # Linear layer to combine head outputs
        self.dropout = nn.Dropout(dropout)
        self.sliding_window_size = sliding_window_size

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)  # Shape: (b, num_tokens, d_out)
        values = self.W_value(x)
        queries = self.W_query(x)

        # We implicitly split the matrix by adding a `num_heads` dimension
        # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
)";

constexpr const char* kSwaTail = R"(
        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        # causal + sliding-window mask
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        # Sliding window width
        W = num_tokens_K + 1 if self.sliding_window_size is None else int(self.sliding_window_size)
        diff = q_positions.unsqueeze(-1) - k_positions.unsqueeze(0)
        mask_bool = (diff < 0) | (diff >= W)

        # Use the mask to fill attention scores
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec
)";

constexpr const char* kMla = R"(class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads,
                 qkv_bias=False, latent_dim=None):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.latent_dim = latent_dim if latent_dim is not None else max(16, d_out // 8)

        # Projections
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)              # per-head Q
        self.W_DKV = nn.Linear(d_in, self.latent_dim, bias=qkv_bias)    # down to latent C
        self.W_UK = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)   # latent -> per-head K
        self.W_UV = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)   # latent -> per-head V

        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def _reshape_to_heads(x, num_heads, head_dim):
        # (b, T, d_out) -> (b, num_heads, T, head_dim)
        bsz, num_tokens, _ = x.shape
        return x.view(bsz, num_tokens, num_heads, head_dim).transpose(1, 2).contiguous()

    def forward(self, x):
        b, num_tokens, _ = x.shape
        num_heads = self.num_heads
        head_dim = self.head_dim

        # 1) Project to queries (per-token, per-head) and the latent
        queries_all = self.W_query(x)  # (b, T, d_out)
        latent = self.W_DKV(x)  # (b, T, latent_dim)

        # 2) Up-project the latent to per-head keys/values (then split into heads)
        keys_all = self.W_UK(latent)   # (b, T, d_out)
        values_all = self.W_UV(latent)   # (b, T, d_out)

        # 3) Reshape to heads
        queries = self._reshape_to_heads(queries_all, num_heads, head_dim)
        keys = self._reshape_to_heads(keys_all, num_heads, head_dim)
        values = self._reshape_to_heads(values_all, num_heads, head_dim)

        # 4) Scaled dot-product attention with causal mask
        attn_scores = torch.matmul(queries, keys.transpose(-2, -1))

        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)

        # Use the mask to fill attention scores
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec
)";

// Ours (the book has no class for it): MultiHeadAttention's construction,
// with W_key and W_value reading a second sequence and no mask.
constexpr const char* kCross = R"(class CrossAttention(nn.Module):
    # Queries from x, keys and values from a second sequence (an encoder's
    # output), nothing masked: built as MultiHeadAttention is.
    def __init__(self, d_in, d_memory, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_memory, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_memory, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory):
        b, num_tokens, _ = x.shape
        num_memory = memory.shape[1]
        queries = self.W_query(x)
        keys = self.W_key(memory)
        values = self.W_value(memory)

        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(b, num_memory, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_memory, self.num_heads, self.head_dim).transpose(1, 2)

        # (b, num_heads, num_tokens, num_memory): every query sees every key
        attn_scores = queries @ keys.transpose(2, 3)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
)";

// The chapter-3 MultiHeadAttention split where RoPE's lines go (after the
// transposes), for Multihead with RoPE.
std::string multihead_with_rope() {
  const std::string text = kMultiHeadAttention;
  const std::string after = "        values = values.transpose(1, 2)\n";
  const std::size_t at = text.find(after) + after.size();
  return text.substr(0, at) + kRopeLines + text.substr(at);
}

// The class source for a variant core::modern runs, RoPE's lines in place.
std::string modern_class_source(const Config& config) {
  const std::string rope = config.rope ? kRopeLines : "";
  switch (config.variant) {
    case Variant::GroupedQuery:
      return std::string(kGqaHead) + rope + kGqaTail;
    case Variant::SlidingWindow:
      return std::string(kSwaHead) + rope + kSwaTail;
    case Variant::Latent:
      return kMla;
    case Variant::Cross:
      return kCross;
    default:
      return multihead_with_rope();
  }
}

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
    case Variant::GroupedQuery:
      return "gqa";
    case Variant::SlidingWindow:
      return "swa";
    case Variant::Latent:
      return "mla";
    case Variant::Cross:
      return "cross";
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

// The construction of a class core::modern runs, as the book's examples
// call it (GroupedQueryAttention's dtype comes before qkv_bias: by keyword).
std::string modern_construction(const Config& config) {
  const std::string m = module_name(config.variant);
  const std::string args = std::string("(d_in, d_out, ") + python_double(config.dropout) +
                           ", num_heads=" + std::to_string(config.num_heads);
  const std::string bias = std::string(", qkv_bias=") + (config.qkv_bias ? "True" : "False");
  switch (config.variant) {
    case Variant::GroupedQuery:
      return m + " = GroupedQueryAttention" + args +
             ", num_kv_groups=" + std::to_string(config.num_kv_groups) + bias + ")\n";
    case Variant::SlidingWindow:
      return m + " = MultiHeadAttentionWithSWA" + args + bias + ", sliding_window_size=" +
             (config.window ? std::to_string(*config.window) : std::string("None")) + ")\n";
    case Variant::Latent:
      return m + " = MultiHeadLatentAttention" + args + bias + ", latent_dim=" +
             (config.latent_dim ? std::to_string(*config.latent_dim) : std::string("None")) +
             ")  # None: max(16, d_out // 8)\n";
    case Variant::Cross:
      return m + " = CrossAttention(d_in, d_memory, d_out, " + python_double(config.dropout) +
             ", num_heads=" + std::to_string(config.num_heads) + bias + ")\n";
    default:
      return m + " = MultiHeadAttention(d_in, d_out, context_length, " +
             python_double(config.dropout) + ", num_heads=" + std::to_string(config.num_heads) +
             bias + ")\n";
  }
}

// The script's body for a class core::modern runs, after the inputs.
std::string modern_body(const Config& config, int tokens, int d_in, const Inputs* cross) {
  const std::string m = module_name(config.variant);
  std::string out;
  out += "d_in = inputs.shape[1]  # " + std::to_string(d_in) + "\n";
  out += "d_out = " + std::to_string(config.d_out) + "\n";
  out += "batch = inputs.unsqueeze(0)  # a batch of one: (1, T, d_in)\n";
  out += "context_length = batch.shape[1]  # T = " + std::to_string(tokens) + "\n";
  if (cross) {
    out +=
        "d_memory = memory.shape[1]  # " + std::to_string(memory_of(*cross).memory.cols()) + "\n";
    out += "memory_batch = memory.unsqueeze(0)  # (1, S, d_memory)\n";
  }
  out += "\ntorch.manual_seed(" + std::to_string(config.seed) +
         ")  # the module's constructor draws its weights from here\n";
  out += modern_construction(config);
  if (config.rope)
    out += m + ".cos, " + m + ".sin = compute_rope_params(d_out // " +
           std::to_string(config.num_heads) + ", theta_base=" + python_double(config.rope_theta) +
           ", context_length=context_length)\n";
  if (config.training)
    out += m + ".train()  # training mode: dropout draws from the generator after the weights\n";
  else
    out += m + ".eval()  # eval mode: dropout is off\n";
  const long long numel = static_cast<long long>(tokens) * config.d_out;
  out += "\ntorch.set_printoptions(precision=6" +
         (numel >= 1000 ? ", threshold=" + std::to_string(numel + 1) : std::string()) +
         ")  # the book prints 4 decimals\n";
  out +=
      "context_vecs = " + m + (cross ? "(batch, memory_batch)" : "(batch)") + "  # (1, T, d_out)\n";
  out += "print(context_vecs)\n";
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
  if (config.variant == Variant::Cross) s += ", dropout=" + python_double(config.dropout);
  if (config.variant == Variant::GroupedQuery)
    s += ", num_kv_groups=" + std::to_string(config.num_kv_groups);
  if (config.variant == Variant::SlidingWindow && config.window)
    s += ", sliding_window_size=" + std::to_string(*config.window);
  if (config.variant == Variant::Latent)
    s +=
        ", latent_dim=" + std::to_string(config.latent_dim.value_or(book_latent_dim(config.d_out)));
  if (config.rope && takes_rope(config.variant))
    s += ", RoPE theta=" + python_double(config.rope_theta);
  if (has_dropout(config.variant)) s += config.training ? ", training mode" : ", eval mode";
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

// The script's opening comment and imports.
std::string script_header(const Config& config, int tokens, int d_in, bool explicit_weights) {
  const Variant v = config.variant;
  std::string out;
  if (runs_modern(config)) {
    out += "# attnscope " ATTNSCOPE_VERSION ": one run as PyTorch code, with the attention the\n";
    out += "# code of Raschka's \"Build a Large Language Model (From Scratch)\" builds after\n";
    out += "# chapter 3";
    out += v == Variant::Cross ? " (cross-attention: ours, in chapter 3's style).\n" : ".\n";
  } else {
    out += "# attnscope " ATTNSCOPE_VERSION ": one run as PyTorch code, with the classes of\n";
    out += "# chapter 3 of Raschka's \"Build a Large Language Model (From Scratch)\".\n";
  }
  out += "# " +
         std::string(v == Variant::Simple ? "simplified self-attention" : variant_book_name(v)) +
         ", T=" + std::to_string(tokens) + ", d_in=" + std::to_string(d_in) + ", " +
         config_summary(config, explicit_weights) + "\n";
  out += "# Run it with python3 and PyTorch: it prints the output the app shows.\n";
  out += "import torch\n";
  if (v != Variant::Simple) out += "import torch.nn as nn\n";
  out += "\n";
  return out;
}

// The whole script; `inputs_section` defines `inputs` (T, d_in) (and, for
// Cross, `memory` (S, d_memory) from `cross`'s second sequence).
std::string script(const Config& config, int tokens, int d_in, const std::string& inputs_section,
                   const Parameters* explicit_weights, const Inputs* cross = nullptr) {
  const Variant v = config.variant;
  const std::string m = module_name(v);
  const bool modern = runs_modern(config);
  std::string out = script_header(config, tokens, d_in, explicit_weights != nullptr);
  if (modern) {
    if (config.rope) out += std::string("\n") + kRopeFunctions + "\n\n";
    out += "\n" + modern_class_source(config) + "\n\n" + inputs_section + "\n";
    return out + modern_body(config, tokens, d_in, cross);
  }

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
    case Variant::GroupedQuery:  // written above
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross:
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
    case Variant::GroupedQuery:  // modern_body
    case Variant::SlidingWindow:
    case Variant::Latent:
    case Variant::Cross:
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
  const bool cross = config.variant == Variant::Cross;
  if (cross && inputs.memory.rows() == 0) {
    section += "# No second sequence was given: keys and values come from the inputs too.\n";
    section += "memory = inputs\n";
  } else if (cross) {
    const RowMatrix& mem = inputs.memory;
    section += "# The second sequence keys and values come from, (S, d_memory) = (" +
               std::to_string(mem.rows()) + ", " + std::to_string(mem.cols()) + ").\n";
    section +=
        "memory = " +
        matrix_literal(mem,
                       [&inputs](Eigen::Index r) {
                         return comment_text(inputs.memory_tokens[static_cast<std::size_t>(r)]);
                       }) +
        "\n";
  }
  return script(config, static_cast<int>(x.rows()), static_cast<int>(x.cols()), section,
                explicit_weights, cross ? &inputs : nullptr);
}

std::string pytorch_script(const Config& config, const RandomInputs& random,
                           const Parameters* explicit_weights) {
  if (random.tokens < 1 || random.tokens > kMaxTokens || random.d_in < 1 || random.d_in > kMaxDim)
    throw std::invalid_argument("pytorch_script: random inputs of " +
                                std::to_string(random.tokens) + " x " +
                                std::to_string(random.d_in) + " are outside 1..4096");
  if (config.variant == Variant::Cross)
    throw std::invalid_argument(
        "pytorch_script: cross-attention's script needs the second sequence: pass Inputs");
  // The config's own checks, on a one-token stand-in (the shape is checked above).
  Inputs probe{{"t"}, RowMatrix::Zero(1, random.d_in), {}, {}};
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
  if (config.variant == Variant::Cross)
    throw std::invalid_argument(
        "pytorch_script: cross-attention's script needs the second sequence: pass Inputs");
  const Inputs inputs{
      text.tokens,
      chapter2_embeddings(text.ids, text.d_in, text.seed, text.context_length, text.vocab_size),
      {},
      {}};
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
