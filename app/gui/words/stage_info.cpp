// stage_info.cpp: what each step says and shows.
//
// Sections
//   1. names and shapes of stages
//   2. the texts of each step
//   3. ASCII fallback for the built-in font
#include "words/stage_info.hpp"

#include <cstdio>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "figure/stage_figure.hpp"

namespace attnscope::gui {

// ---------------------------------------------------------------------------
// 1. Names and shapes

std::string shape_text(const core::RowMatrix& m) {
  return std::to_string(m.rows()) + "×" + std::to_string(m.cols());
}

std::string stage_name(std::string_view id) { return figure::stage_name(id); }

std::string stage_symbol(std::string_view id, Wording wording) {
  const core::StageInfo* info = core::find_stage_info(id);
  if (!info) return std::string(id);
  if (wording == Wording::Model && !info->model_symbol.empty())
    return std::string(info->model_symbol);
  return std::string(info->symbol);
}

std::string stage_title(const core::Stage& stage) {
  std::string t = stage_name(stage.id) + " (" + shape_text(stage.data()) + ")";
  if (stage.head >= 0) t += " · head " + std::to_string(stage.head);
  return t;
}

std::string stage_short_symbol(std::string_view id) {
  const core::StageInfo* info = core::find_stage_info(id);
  return std::string(info ? info->short_symbol : id);
}

std::vector<std::string> stage_titles(const core::Stage& stage) {
  const std::string shape = " (" + shape_text(stage.data()) + ")";
  const std::string head = stage.head >= 0 ? " · head " + std::to_string(stage.head) : "";
  const std::string h = stage.head >= 0 ? " · h" + std::to_string(stage.head) : "";
  const std::string symbol = stage_symbol(stage.id), short_symbol = stage_short_symbol(stage.id);
  std::vector<std::string> out;
  for (std::string t : {stage_title(stage), symbol + shape + head, symbol + shape + h,
                        short_symbol + shape + h, short_symbol + h})
    if (out.empty() || out.back() != t) out.push_back(std::move(t));
  return out;
}

std::string sym(const core::Stage* s, std::string_view symbol) {
  if (!s) return "?";
  return (symbol.empty() ? stage_symbol(s->id) : std::string(symbol)) + " (" +
         shape_text(s->data()) + ")";
}

std::string sym(const core::Stage* s, Wording wording) {
  return s ? sym(s, stage_symbol(s->id, wording)) : "?";
}

namespace {

std::string fmt4(double v) { return core::fixed_text(v, 4); }

std::string fmt_p(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

// The factor kept weights are multiplied by: any non-zero entry of the
// engine's dropout mask (0 when everything was dropped).
float kept_scale(const core::Stage* mask) {
  if (!mask) return 0.0f;
  for (Eigen::Index k = 0; k < mask->data().size(); ++k)
    if (mask->data().data()[k] != 0.0f) return mask->data().data()[k];
  return 0.0f;
}

}  // namespace

// ---------------------------------------------------------------------------
// 2. Texts

namespace {

// What every step's text is computed from: the trace, the head shown, and
// the numbers several steps quote.
struct StepContext {
  const core::Trace& t;
  int h = -1;             // the stage head shown (core::stage_head)
  bool simple = false;    // the simplified variant: no weights
  int proj_head = -1;     // the projections' head (multihead projects once: -1)
  std::string T;          // the number of tokens
  std::string d_k;        // the keys' width, "?" without them
  std::string head_note;  // " Shown for head h." for per-head stages
};

StepContext step_context(const core::Trace& t, int head) {
  const int h = core::stage_head(t, head);
  const core::Config& c = t.config;
  const bool simple = c.variant == core::Variant::Simple;
  const core::Stage* keys =
      simple ? t.find(core::stage_id::inputs, -1) : t.find(core::stage_id::keys, h);
  return StepContext{.t = t,
                     .h = h,
                     .simple = simple,
                     .proj_head = core::split_heads(c.variant) ? -1 : h,
                     .T = std::to_string(t.num_tokens()),
                     .d_k = keys ? std::to_string(keys->data().cols()) : "?",
                     .head_note = h >= 0 ? " Shown for head " + std::to_string(h) + "." : ""};
}

// What the projections step adds for a class that cuts one projection into heads.
std::string projections_note(core::Variant v) {
  switch (v) {
    case core::Variant::GroupedQuery:
      return " GroupedQueryAttention builds W_key and W_value first, with only num_kv_groups × "
             "head_dim columns: fewer heads of keys and values than of queries.";
    case core::Variant::Latent:
      return " Only the queries come straight from X: keys and values come up from the "
             "latent C_kv through W_UK and W_UV.";
    case core::Variant::Cross:
      return " The queries come from X; the keys and values from the second sequence M.";
    default:
      return " MultiHeadAttention projects once to all d_out columns; the next step splits "
             "them between the heads.";
  }
}

std::string projections_formula(core::Variant v, bool bias) {
  const std::string b = bias ? " + b" : "";
  switch (v) {
    case core::Variant::Latent:
      return "Q = X·W_query" + b + "    K = C_kv·W_UK" + b + "    V = C_kv·W_UV" + b;
    case core::Variant::Cross:
      return "Q = X·W_query" + b + "    K = M·W_key" + b + "    V = M·W_value" + b;
    default:
      return bias ? "Q = X·W_query + b_query    K = X·W_key + b_key    V = X·W_value + b_value"
                  : "Q = X·W_query    K = X·W_key    V = X·W_value";
  }
}

// Inputs, Q/K/V, the head split and the scores.
StepText describe_inputs_to_scores(Step step, const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = x.t.config;
  const int h = x.h;
  const bool simple = x.simple;
  const int proj_head = x.proj_head;
  const std::string& T = x.T;
  auto find = [&](std::string_view id, int hh) { return x.t.find(id, hh); };
  const std::string& d_k = x.d_k;
  const std::string& head_note = x.head_note;
  StepText s;
  switch (step) {
    case Step::Inputs:
      s.title = "Inputs: the token embeddings";
      s.plain = "Each row is one token's embedding, a vector of d_in = " + std::to_string(t.d_in) +
                " numbers. Attention will build a new vector for every token by mixing these rows.";
      s.formula = "X = embeddings";
      s.shapes = sym(find(core::stage_id::inputs, -1)) + ": " + T +
                 " tokens × d_in = " + std::to_string(t.d_in);
      break;

    case Step::Projections: {
      const bool bias = find(core::stage_id::b_query, proj_head) != nullptr;
      s.title = "Queries, keys and values";
      s.plain =
          "Three trainable matrices turn every input row into a query (what this token looks "
          "for), a key (what it can be found by) and a value (what it passes on).";
      if (c.variant == core::Variant::SelfAttentionV1)
        s.plain += " SelfAttention_v1 fills them with torch.rand.";
      else if (c.variant == core::Variant::MultiheadWrapper)
        s.plain += " Each head of the wrapper has its own three matrices." + head_note;
      else if (core::split_heads(c.variant))
        s.plain += projections_note(c.variant);
      else
        s.plain += " They are nn.Linear layers, so they start random.";
      s.formula = projections_formula(c.variant, bias);
      s.shapes = sym(find(core::stage_id::inputs, -1)) + " · " +
                 sym(find(core::stage_id::W_query, proj_head), core::stage_id::W_query) + " → " +
                 sym(find(core::stage_id::queries, proj_head));
      if (c.variant == core::Variant::Multihead || c.variant == core::Variant::SlidingWindow ||
          !core::split_heads(c.variant))
        s.shapes += "; the same for K and V";
      else
        s.shapes += "; K and V: " + sym(find(core::stage_id::keys, -1)) + " each";
      break;
    }

    case Step::SplitHeads: {
      const core::Stage* q = find(core::stage_id::queries, -1);
      const core::Stage* qh = find(core::stage_id::queries, h);
      const int hd = c.num_heads > 0 ? c.d_out / c.num_heads : 0;
      s.title = "Split into heads";
      s.plain = "The d_out = " + std::to_string(c.d_out) + " columns of Q, K and V are cut into " +
                std::to_string(c.num_heads) + " groups of head_dim = " + std::to_string(hd) +
                " columns, one group per head (the coloured bands). Each head then runs attention "
                "on its own slice." +
                head_note;
      s.formula = "Q.view(T, num_heads, head_dim).transpose(0, 1)";
      s.shapes = sym(q) + " → " + std::to_string(c.num_heads) + " heads × " + sym(qh, "Q_h") +
                 ", head_dim = " + std::to_string(c.d_out) + " / " + std::to_string(c.num_heads);
      break;
    }

    case Step::Scores:
      s.title = "Attention scores";
      if (simple) {
        s.plain =
            "Every token is compared with every other by a dot product: the more two "
            "embeddings point the same way, the bigger the score. Row i holds token i "
            "against all tokens.";
        s.formula = "ω_ij = x_i · x_j        ω = X·Xᵀ";
        s.shapes = sym(find(core::stage_id::inputs, -1)) + " · Xᵀ (" + std::to_string(t.d_in) +
                   "×" + T + ") → " + sym(find(core::stage_id::scores, -1));
      } else {
        const bool rotated = find(core::stage_id::queries_rotated, h) != nullptr;
        const core::Stage* keys = find(core::stage_id::keys, h);
        const std::string S = keys ? std::to_string(keys->data().rows()) : T;
        s.plain =
            "Every query is compared with every key by a dot product. Row i says how "
            "strongly token i's query matches each token's key; rows are queries, columns "
            "are keys." +
            std::string(rotated ? " Both were rotated by RoPE, so each score also depends on "
                                  "how far apart the two tokens are."
                                : "") +
            head_note;
        s.formula = rotated ? "ω_ij = rot(q_i) · rot(k_j)        ω = Q_rot·K_rotᵀ"
                            : "ω_ij = q_i · k_j        ω = Q·Kᵀ";
        s.shapes =
            sym(find(rotated ? core::stage_id::queries_rotated : core::stage_id::queries, h)) +
            " · Kᵀ (" + d_k + "×" + S + ") → " + sym(find(core::stage_id::scores, h));
      }
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
}

// Scaling, the causal mask and the softmax.
StepText describe_scores_to_weights(Step step, const StepContext& x) {
  const core::Trace& t = x.t;
  const int h = x.h;
  const bool simple = x.simple;
  auto find = [&](std::string_view id, int hh) { return x.t.find(id, hh); };
  const std::string& d_k = x.d_k;
  const std::string& head_note = x.head_note;
  StepText s;
  switch (step) {
    case Step::Scaled: {
      std::string root = "?";
      if (auto b = core::explain_score(t, h, 0, 0)) root = fmt4(b->sqrt_dk);
      const core::Stage* masked = find(core::stage_id::masked_scores, h);
      s.title = "Scaled scores";
      s.plain =
          "The scores are divided by √d_k, the square root of the key width. Without it, "
          "wide keys give large scores, the softmax becomes nearly one-hot and training "
          "gets tiny gradients.";
      if (masked)
        s.plain +=
            " As in the book's CausalAttention, the division comes after the mask, inside "
            "the softmax call: −∞ ÷ √d_k is still −∞.";
      s.plain += head_note;
      s.formula = masked ? "scaled = masked / √d_k        d_k = " + d_k + ", √d_k = " + root
                         : "scaled = ω / √d_k        d_k = " + d_k + ", √d_k = " + root;
      s.shapes = sym(masked ? masked : find(core::stage_id::scores, h)) + " ÷ " + root + " → " +
                 sym(find(core::stage_id::scaled_scores, h));
      break;
    }

    case Step::Mask: {
      long future = 0;
      const core::Stage* m = find(core::stage_id::mask, h);
      if (m)
        for (Eigen::Index k = 0; k < m->data().size(); ++k) future += m->data().data()[k] != 0.0f;
      s.title = "Causal mask";
      s.plain =
          "A language model must not peek at the words it will predict: token i may only "
          "look at itself and the tokens before it. The mask marks with 1 every key that "
          "lies in a query's future (column j > row i).";
      s.formula = "mask = torch.triu(torch.ones(T, T), diagonal=1)";
      s.shapes = sym(m, core::stage_id::mask) + ": " + std::to_string(future) + " of " +
                 std::to_string(m ? m->data().size() : 0) + " entries are in the future";
      break;
    }

    case Step::Masked:
      s.title = "Masked scores";
      s.plain =
          "The raw scores of future keys are replaced by −∞ (the hatched cells), in place, "
          "as the book's masked_fill_ does. exp(−∞) = 0, so after the softmax those keys "
          "get exactly zero weight and the other weights still sum to 1." +
          head_note;
      s.formula = "masked = ω.masked_fill(mask.bool(), −∞)";
      s.shapes = sym(find(core::stage_id::scores, h)) + " + " +
                 sym(find(core::stage_id::mask, h), core::stage_id::mask) + " → " +
                 sym(find(core::stage_id::masked_scores, h));
      break;

    case Step::Softmax: {
      const core::Stage* in = find(core::stage_id::scaled_scores, h);
      if (!in) in = find(core::stage_id::scores, h);
      s.title = "Softmax: attention weights";
      s.plain =
          "Each row of scores becomes a row of attention weights: subtract the row's "
          "maximum (for numerical safety), exponentiate, divide by the row's sum. Every "
          "weight is between 0 and 1 and each row sums to 1." +
          head_note;
      s.formula = simple ? "weights_ij = exp(ω_ij) / Σ_k exp(ω_ik)"
                         : "weights_ij = exp(s_ij − max_k s_ik) / Σ_k exp(s_ik − max_k s_ik)";
      s.shapes = sym(in) + " → " + sym(find(core::stage_id::weights, h)) + ", each row sums to 1";
      break;
    }
    default:  // the other groups' steps
      break;
  }
  return s;
}

// Dropout, the context vectors, the heads' concatenation and the output projection.
StepText describe_weights_to_output(Step step, const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = x.t.config;
  const int h = x.h;
  const bool simple = x.simple;
  auto find = [&](std::string_view id, int hh) { return x.t.find(id, hh); };
  const std::string& head_note = x.head_note;
  StepText s;
  switch (step) {
    case Step::Dropout:
      s.title = "Dropout on the weights";
      if (!c.training)
        s.plain =
            "Eval mode: nn.Dropout does nothing, so the mask is all ones and the weights "
            "pass through unchanged.";
      else if (c.dropout <= 0.0)
        s.plain = "Dropout rate p = 0: nothing is dropped and the weights pass through unchanged.";
      else if (const float keep = kept_scale(find(core::stage_id::dropout_mask, h)); keep > 0.0f)
        s.plain =
            "In training, nn.Dropout zeroes each weight with probability p = " + fmt_p(c.dropout) +
            " and multiplies the survivors by 1/(1−p) = " + fmt4(keep) +
            ", so that on average a row still sums to 1.";
      else
        s.plain = "In training with p = " + fmt_p(c.dropout) +
                  ", nn.Dropout zeroes every weight: all context vectors become 0.";
      s.plain += head_note;
      s.formula = "dropped = weights ⊙ dropout_mask        dropout_mask_ij ∈ {0, 1/(1−p)}";
      s.shapes = sym(find(core::stage_id::weights, h)) + " ⊙ " +
                 sym(find(core::stage_id::dropout_mask, h), "dropout mask") + " → " +
                 sym(find(core::stage_id::dropped_weights, h));
      break;

    case Step::Context: {
      const core::Stage* w = find(core::stage_id::dropped_weights, h);
      if (!w) w = find(core::stage_id::weights, h);
      const core::Stage* v =
          simple ? find(core::stage_id::inputs, -1) : find(core::stage_id::values, h);
      s.title = "Context vectors";
      s.plain = std::string("Each token's new vector is the sum of all ") +
                (simple ? "input rows" : "value rows") +
                ", each scaled by that token's attention weight for it. Tokens it attends to "
                "strongly contribute most." +
                head_note;
      s.formula = simple ? "z_i = Σ_j weights_ij · x_j        Z = weights·X"
                         : "z_i = Σ_j weights_ij · v_j        Z = weights·V";
      s.shapes = sym(w) + " · " + sym(v) + " → " + sym(find(core::stage_id::context, h));
      break;
    }

    case Step::Concat: {
      const bool mha = core::split_heads(c.variant);
      const core::Stage* out = find(mha ? core::stage_id::concat : core::stage_id::output, -1);
      s.title = "Concatenate the heads";
      s.plain = mha ? "The heads' context vectors are put back side by side, so each token again "
                      "has one row of d_out numbers: head 0's columns first, then head 1's, ..."
                    : "Each head ran its own CausalAttention. The wrapper's output is their "
                      "context vectors side by side: head 0's columns first, then head 1's, ...";
      s.formula = mha ? "concat = context.transpose(1, 2).contiguous().view(T, d_out)"
                      : "output = torch.cat([head(x) for head in heads], dim=−1)";
      s.shapes = std::to_string(t.heads_shown()) + " heads × " +
                 sym(find(core::stage_id::context, 0), "Z_h") + " → " +
                 sym(out, mha ? core::stage_id::concat : core::stage_id::output);
      break;
    }

    case Step::OutProj: {
      const core::Stage* b = find(core::stage_id::b_out, -1);
      s.title = "Output projection";
      s.plain =
          "A final linear layer (out_proj) mixes the heads' columns together, so every "
          "output column can combine what all heads found.";
      if (!b) s.plain += " GroupedQueryAttention builds it without a bias.";
      s.formula = b ? "output = concat·W_out + b_out" : "output = concat·W_out";
      s.shapes = sym(find(core::stage_id::concat, -1)) + " · " +
                 sym(find(core::stage_id::W_out, -1), core::stage_id::W_out) +
                 (b ? " + " + sym(b, core::stage_id::b_out) : std::string()) + " → " +
                 sym(find(core::stage_id::output, -1));
      break;
    }
    default:  // the other groups' steps
      break;
  }
  return s;
}

// Which query heads read each K/V head: "heads 0–1 read K/V head 0, ...".
std::string sharing_text(int heads, int groups) {
  const int per = groups > 0 ? heads / groups : 0;
  std::string out;
  for (int g = 0; g < groups && per > 0; ++g) {
    if (g > 0) out += g + 1 == groups ? " and " : ", ";
    const int first = g * per, last = first + per - 1;
    out += per == 1 ? "head " + std::to_string(first)
                    : "heads " + std::to_string(first) + "–" + std::to_string(last);
    out += g == 0 ? " read K/V head 0" : " head " + std::to_string(g);
  }
  return out;
}

long count_nonzero(const core::Stage* m) {
  long n = 0;
  if (m)
    for (Eigen::Index k = 0; k < m->data().size(); ++k) n += m->data().data()[k] != 0.0f;
  return n;
}

// Cross-attention's second sequence.
StepText describe_memory(const StepContext& x) {
  const core::Trace& t = x.t;
  auto find = [&](std::string_view id, int hh) { return t.find(id, hh); };
  StepText s;
  const core::Stage* m = find(core::stage_id::memory, -1);
  const core::Stage* in = find(core::stage_id::inputs, -1);
  const bool self = m && in && m->data() == in->data() && t.key_tokens == t.tokens;
  s.title = "The second sequence: where keys and values come from";
  s.plain =
      "Cross-attention reads two sequences. The queries come from X, the sequence being "
      "written; the keys and values come from M, the sequence that was read (a "
      "translator's encoder output: the German sentence of the translate preset). No "
      "causal mask: all of M is there before the first word of X is written.";
  if (self)
    s.plain += " No second sequence was given, so M is X itself: self-attention without a mask.";
  s.formula = "Q = X·W_query        K = M·W_key        V = M·W_value";
  s.shapes = sym(m, core::stage_id::memory) + ": " + std::to_string(m ? m->data().rows() : 0) +
             " tokens × d_in = " + std::to_string(m ? m->data().cols() : 0);
  return s;
}

// Latent attention's K/V latent.
StepText describe_latent(const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = t.config;
  auto find = [&](std::string_view id, int hh) { return t.find(id, hh); };
  StepText s;
  const core::Stage* latent = find(core::stage_id::latent_kv, -1);
  const long L = latent ? static_cast<long>(latent->data().cols()) : 0;
  s.title = "The K/V latent: the few columns a cache keeps";
  s.plain =
      "MultiHeadLatentAttention does not project keys and values straight from X. W_DKV "
      "first squeezes every token into latent_dim = " +
      std::to_string(L) +
      " numbers, the latent C_kv; the next step brings keys and values back up from it "
      "with W_UK and W_UV. A KV cache keeps only the latent: " +
      std::to_string(L) +
      " numbers per token instead of 2 × d_out = " + std::to_string(2 * c.d_out) + ".";
  s.formula = find(core::stage_id::b_down, -1) ? "C_kv = X·W_DKV + b_DKV" : "C_kv = X·W_DKV";
  s.shapes = sym(find(core::stage_id::inputs, -1)) + " · " +
             sym(find(core::stage_id::W_down, -1), "W_DKV") + " → " +
             sym(latent, core::stage_id::latent_kv);
  return s;
}

// RoPE on one head's queries and keys.
StepText describe_rotate(const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = t.config;
  const int h = x.h;
  auto find = [&](std::string_view id, int hh) { return t.find(id, hh); };
  StepText s;
  const core::Stage* k = find(core::stage_id::keys, h);
  const long hd = k ? static_cast<long>(k->data().cols()) : 0;
  s.title = "RoPE: queries and keys turned by their position";
  s.plain =
      "Rotary position embedding adds nothing to the tokens. It turns each pair of columns "
      "(i, i + " +
      std::to_string(hd / 2) +
      ") of a head's queries and keys by the angle "
      "position × θ_i: quickly in the first pairs, slowly in the last. Both sides turn, so "
      "q_m · k_n depends only on m − n, how far apart the tokens are. Values are not "
      "turned." +
      x.head_note;
  s.formula = "rot(x_m) = x_m·cos(m·θ_i) + rotate_half(x_m)·sin(m·θ_i)        θ_i = " +
              fmt_p(c.rope_theta) + "^(−2i/" + std::to_string(hd) + ")";
  s.shapes = sym(find(core::stage_id::queries, h)) + " → " +
             sym(find(core::stage_id::queries_rotated, h), "Q_rot") + ", " + sym(k) + " → " +
             sym(find(core::stage_id::keys_rotated, h), "K_rot");
  return s;
}

// Grouped-query attention's shared K/V heads.
StepText describe_kv_groups(const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = t.config;
  auto find = [&](std::string_view id, int hh) { return t.find(id, hh); };
  StepText s;
  const int H = c.num_heads, G = c.num_kv_groups;
  s.title = "Shared keys and values: " + std::to_string(H) + " query heads, " + std::to_string(G) +
            " K/V head" + (G == 1 ? "" : "s");
  s.plain = "GroupedQueryAttention computes keys and values for only num_kv_groups = " +
            std::to_string(G) +
            " heads and lets the query heads share them: " + sharing_text(H, G) +
            ". The heads strip shows the keys each query head reads, so the heads of one "
            "group look alike. One group is multi-query attention; as many groups as heads "
            "is multi-head attention again. A KV cache holds " +
            std::to_string(G) + " heads instead of " + std::to_string(H) + ".";
  s.formula = "K_h = K_g with g = h ÷ " + std::to_string(G > 0 ? H / G : 0) +
              "        keys.repeat_interleave(" + std::to_string(G > 0 ? H / G : 0) + ", dim=1)";
  s.shapes = sym(find(core::stage_id::keys, -1)) + " → " + std::to_string(G) + " × " +
             sym(find(core::stage_id::group_keys, 0), "K_g") + ", read by " + std::to_string(H) +
             " query heads";
  return s;
}

// The sliding window's mask.
StepText describe_window(const StepContext& x) {
  const core::Trace& t = x.t;
  const core::Config& c = t.config;
  const int h = x.h;
  auto find = [&](std::string_view id, int hh) { return t.find(id, hh); };
  StepText s;
  const core::Stage* w = find(core::stage_id::window_mask, h);
  const long hidden = count_nonzero(w), future = count_nonzero(find(core::stage_id::mask, h));
  const int W = c.window.value_or(t.num_tokens());
  s.title = "The sliding window: only the last " + std::to_string(W) + " keys";
  s.plain =
      "MultiHeadAttentionWithSWA keeps the causal mask and hides more: query i sees only "
      "keys i − " +
      std::to_string(W - 1) + " … i, the " + std::to_string(W) +
      " most recent tokens counting itself. The band of 0s along the diagonal is what each "
      "query may read, and a KV cache needs to keep only the last " +
      std::to_string(W) + " keys and values.";
  if (W >= t.num_tokens())
    s.plain += " Here the window is as long as the text, so it hides nothing more.";
  s.formula = "hidden where j > i or j ≤ i − " + std::to_string(W);
  s.shapes = sym(w, core::stage_id::window_mask) + ": " + std::to_string(hidden) + " of " +
             std::to_string(w ? w->data().size() : 0) + " entries hidden (" +
             std::to_string(future) + " by the causal mask, " + std::to_string(hidden - future) +
             " by the window)";
  return s;
}

// The second sequence, the latent, RoPE, the K/V heads and the window.
StepText describe_after_chapter3(Step step, const StepContext& x) {
  switch (step) {
    case Step::Memory:
      return describe_memory(x);
    case Step::Latent:
      return describe_latent(x);
    case Step::Rotate:
      return describe_rotate(x);
    case Step::KvGroups:
      return describe_kv_groups(x);
    case Step::WindowMask:
      return describe_window(x);
    default:  // the other groups' steps
      return {};
  }
}

}  // namespace

StepText describe_step(Step step, const core::Trace& t, int head) {
  if (t.is_model()) return describe_model_step(step, t, head);
  const StepContext x = step_context(t, head);
  switch (step) {
    case Step::Inputs:
    case Step::Projections:
    case Step::SplitHeads:
    case Step::Scores:
      return describe_inputs_to_scores(step, x);
    case Step::Scaled:
    case Step::Mask:
    case Step::Masked:
    case Step::Softmax:
      return describe_scores_to_weights(step, x);
    case Step::Dropout:
    case Step::Context:
    case Step::Concat:
    case Step::OutProj:
      return describe_weights_to_output(step, x);
    case Step::Memory:
    case Step::Latent:
    case Step::QkNorm:
    case Step::Rotate:
    case Step::KvGroups:
    case Step::WindowMask:
      return describe_after_chapter3(step, x);
    case Step::LayerNorm:
    case Step::Residual:
    case Step::LayerNorm2:
    case Step::MlpHidden:
    case Step::Activation:
    case Step::MlpOutput:
    case Step::BlockOutput:
    case Step::FinalNorm:
    case Step::Logits:
      break;  // a model's steps only
  }
  return {};
}

// ---------------------------------------------------------------------------
// 3. ASCII fallback

std::string ascii_fallback(std::string_view text) {
  struct Sub {
    std::string_view from, to;
  };
  static constexpr Sub kSubs[] = {
      {"−∞", "-inf"}, {"∞", "inf"}, {"−", "-"},   {"√", "sqrt "}, {"ᵀ", "^T"},
      {"→", "->"},    {"⊙", "*"},   {"Σ", "sum"}, {"ω", "w"},     {"…", "..."},
      {"◀", "<"},     {"▶", ">"},   {"∈", "in"},
  };
  std::string out(text);
  for (const auto& s : kSubs) {
    std::size_t pos = 0;
    while ((pos = out.find(s.from, pos)) != std::string::npos) {
      out.replace(pos, s.from.size(), s.to);
      pos += s.to.size();
    }
  }
  return out;
}

}  // namespace attnscope::gui
