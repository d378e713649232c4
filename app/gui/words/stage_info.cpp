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
                     .proj_head = c.variant == core::Variant::Multihead ? -1 : h,
                     .T = std::to_string(t.num_tokens()),
                     .d_k = keys ? std::to_string(keys->data().cols()) : "?",
                     .head_note = h >= 0 ? " Shown for head " + std::to_string(h) + "." : ""};
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
      else if (c.variant == core::Variant::Multihead)
        s.plain +=
            " MultiHeadAttention projects once to all d_out columns; the next step splits "
            "them between the heads.";
      else
        s.plain += " They are nn.Linear layers, so they start random.";
      s.formula = bias ? "Q = X·W_query + b_query    K = X·W_key + b_key    V = X·W_value + b_value"
                       : "Q = X·W_query    K = X·W_key    V = X·W_value";
      s.shapes = sym(find(core::stage_id::inputs, -1)) + " · " +
                 sym(find(core::stage_id::W_query, proj_head), core::stage_id::W_query) + " → " +
                 sym(find(core::stage_id::queries, proj_head)) + "; the same for K and V";
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
        s.plain =
            "Every query is compared with every key by a dot product. Row i says how "
            "strongly token i's query matches each token's key; rows are queries, columns "
            "are keys." +
            head_note;
        s.formula = "ω_ij = q_i · k_j        ω = Q·Kᵀ";
        s.shapes = sym(find(core::stage_id::queries, h)) + " · Kᵀ (" + d_k + "×" + T + ") → " +
                   sym(find(core::stage_id::scores, h));
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
      const bool mha = c.variant == core::Variant::Multihead;
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

    case Step::OutProj:
      s.title = "Output projection";
      s.plain =
          "A final linear layer (out_proj) mixes the heads' columns together, so every "
          "output column can combine what all heads found.";
      s.formula = "output = concat·W_out + b_out";
      s.shapes = sym(find(core::stage_id::concat, -1)) + " · " +
                 sym(find(core::stage_id::W_out, -1), core::stage_id::W_out) + " + " +
                 sym(find(core::stage_id::b_out, -1), core::stage_id::b_out) + " → " +
                 sym(find(core::stage_id::output, -1));
      break;
    default:  // the other groups' steps
      break;
  }
  return s;
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
