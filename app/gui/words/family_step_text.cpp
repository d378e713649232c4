// family_step_text.cpp: what each step of an open model family's block
// says (Llama, Mistral, Qwen2/3, Gemma 3), in the names of its Hugging Face
// checkpoint (input_layernorm, q_proj, q_norm, o_proj, gate_proj, ...) and
// with the numbers of the trace on screen and of the block's config.
#include <cmath>
#include <string>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/io/io.hpp"
#include "words/stage_info.hpp"

namespace attnscope::gui {

// stage-literals: off (the symbols the texts print, not stage ids)
namespace {

namespace id = core::stage_id;

struct FamilyStep {
  const core::Trace& t;
  const core::BlockDescription& b;
  int h = 0, g = 0, l = 0;  // the head shown, the K/V head it reads, the block
  int group = 1;            // query heads per K/V head
  int d = 0;                // the residual stream's width
  std::string H, G, T;
  bool gemma = false;

  const core::Stage* find(std::string_view stage, int head) const {
    return t.find(core::StageKey{l, head, stage});
  }
  const core::Stage* run(std::string_view stage) const {
    return t.find(core::StageKey{-1, -1, stage});
  }
  std::string sym_of(std::string_view stage, int head) const {
    return sym(find(stage, head), Wording::Model);
  }
};

FamilyStep family_step(const core::Trace& t, int head) {
  const core::BlockDescription& b = t.block;
  const int h = core::stage_head(t, head);
  const int group = b.kv_heads > 0 ? std::max(b.heads / b.kv_heads, 1) : 1;
  FamilyStep x{.t = t, .b = b, .H = {}, .G = {}, .T = {}};
  x.h = h;
  x.g = h / group;
  x.l = t.layer;
  x.group = group;
  x.d = t.d_in;
  x.H = std::to_string(h);
  x.G = std::to_string(x.g);
  x.T = std::to_string(t.num_tokens());
  x.gemma = b.family == "gemma3_text";
  return x;
}

std::string number(double v) { return core::fixed_text(v, v == std::floor(v) ? 0 : 4); }

// The norm's formula: Gemma scales by (1 + w), its weights centred on 0.
std::string rms_formula(const FamilyStep& x, const std::string& of) {
  return of + " / √(mean(" + of + "²) + ε) · " + (x.gemma ? "(1 + w)" : "w");
}

// The block's input, its norm, the projections, q/k norm, RoPE, the K/V heads.
StepText describe_family_input(Step step, const FamilyStep& x) {
  StepText s;
  const int heads = x.b.heads, hd = x.b.head_dim, kv = x.b.kv_heads;
  switch (step) {
    case Step::Inputs:
      s.title = "The block's input: the residual stream";
      s.plain = x.l == 0 ? std::string("Each token's row is its row of embed_tokens") +
                               (x.gemma ? ", multiplied by √hidden_size = " +
                                              core::fixed_text(std::sqrt(double(x.d)), 3)
                                        : std::string()) +
                               ". No position embedding is added: positions enter later, "
                               "when RoPE turns the queries and keys."
                         : "Each token's row is what block " + std::to_string(x.l - 1) +
                               " handed on: the embeddings plus every earlier block's additions.";
      s.formula = x.l == 0 ? (x.gemma ? "x = embed_tokens[ids] · √d" : "x = embed_tokens[ids]")
                           : "x = block " + std::to_string(x.l - 1) + " output";
      s.shapes = sym(x.t.find(x.t.block_input_key()), Wording::Model) + ": " + x.T + " tokens × " +
                 std::to_string(x.d) + " dimensions";
      break;
    case Step::LayerNorm:
      s.title = "RMSNorm before attention (input_layernorm)";
      s.plain =
          "Each row is divided by its root mean square and multiplied by a learned weight. "
          "Unlike GPT-2's LayerNorm nothing is subtracted and there is no bias.";
      s.formula = "input_layernorm(x) = " + rms_formula(x, "x");
      s.shapes =
          sym(x.t.find(x.t.block_input_key()), Wording::Model) + " → " + x.sym_of(id::ln_1, -1);
      break;
    case Step::Projections:
      s.title = "Queries, keys and values of head " + x.H;
      s.plain = "q_proj gives " + std::to_string(heads) + " query heads of " + std::to_string(hd) +
                " columns; k_proj and v_proj give only " + std::to_string(kv) +
                " key and value head" + (kv > 1 ? "s" : "") + ". Query head " + x.H +
                " reads K/V head " + x.G + ".";
      s.formula = "Q = x_n · W_q,  K = x_n · W_k,  V = x_n · W_v  (x_n = input_layernorm(x))";
      s.shapes = x.sym_of(id::ln_1, -1) + " → " + x.sym_of(id::queries, x.h) + ", " +
                 x.sym_of(id::keys, x.h) + ", " + x.sym_of(id::values, x.h);
      break;
    case Step::QkNorm:
      s.title = "q_norm and k_norm";
      s.plain = "Each head's query row and key row is RMS-normalised over its " +
                std::to_string(hd) +
                " columns, with a learned weight per column, before RoPE. Scores then stay "
                "in a steady range however large the projections grow.";
      s.formula = "q_n = " + rms_formula(x, "q") + " (k the same with k_norm)";
      s.shapes = x.sym_of(id::queries, x.h) + " → " + x.sym_of(id::queries_normed, x.h);
      break;
    case Step::Rotate:
      s.title = "RoPE: queries and keys turned by position";
      s.plain = "Columns i and i + " + std::to_string(hd / 2) +
                " of each query and key form a pair, turned by the angle position · θ_i. "
                "A query and a key then score by how far apart they are, not where they "
                "stand. This layer's base is " +
                number(x.b.rope_theta) +
                (x.b.rope_scaled ? " with Llama 3's stretch of the slow frequencies" : "") + ".";
      s.formula = "θ_i = " + number(x.b.rope_theta) + "^(−2i/" + std::to_string(hd) + ")";
      s.shapes = x.sym_of(id::queries_rotated, x.h) + ", " + x.sym_of(id::keys_rotated, x.h);
      break;
    case Step::KvGroups:
      s.title = "K/V heads: " + std::to_string(heads) + " query heads share " + std::to_string(kv);
      s.plain = "Heads " + std::to_string(x.g * x.group) + "–" +
                std::to_string(x.g * x.group + x.group - 1) + " read K/V head " + x.G +
                ": the same keys and values, so the cache keeps " + std::to_string(kv) +
                " heads instead of " + std::to_string(heads) + " (grouped-query attention).";
      s.formula = "head h reads K/V head h ÷ " + std::to_string(x.group);
      s.shapes = x.sym_of(id::group_keys, x.g) + ", " + x.sym_of(id::group_values, x.g);
      break;
    default:
      break;
  }
  return s;
}

// Scores to context vectors of one head.
StepText describe_family_attention(Step step, const FamilyStep& x) {
  StepText s;
  switch (step) {
    case Step::Scores:
      s.title = "Attention scores";
      s.plain = "Each rotated query row meets every rotated key row of K/V head " + x.G +
                " in a dot product. Block " + std::to_string(x.l) + ", head " + x.H + ".";
      s.formula = "ω = RoPE(Q_h) · RoPE(K_g)ᵀ";
      s.shapes = x.sym_of(id::queries_rotated, x.h) + " · Kᵀ → " + x.sym_of(id::scores, x.h);
      break;
    case Step::Mask:
      s.title = "The causal mask";
      s.plain = "The model predicts the next token: no token may read a later one.";
      s.formula = "mask[i][j] = 1 where j > i";
      s.shapes = x.sym_of(id::mask, x.h);
      break;
    case Step::WindowMask: {
      s.title = "Sliding window of " + std::to_string(x.b.window);
      const core::Stage* w = x.find(id::window_mask, x.h);
      const auto hidden = w ? static_cast<long>(w->data().sum()) : 0L;
      s.plain = "This layer slides: query i sees only keys i − " + std::to_string(x.b.window) +
                " < j ≤ i, its last " + std::to_string(x.b.window) +
                " tokens. The layers without a window see every earlier token.";
      s.formula = "hidden where j > i or j ≤ i − " + std::to_string(x.b.window);
      s.shapes = x.sym_of(id::window_mask, x.h) + ": " + std::to_string(hidden) + " entries hidden";
      break;
    }
    case Step::Masked:
      s.title = "Masked scores";
      s.plain = "Every hidden score becomes −∞, so softmax gives it weight 0 exactly.";
      s.formula = "ω_masked = ω where visible, else −∞";
      s.shapes = x.sym_of(id::scores, x.h) + " → " + x.sym_of(id::masked_scores, x.h);
      break;
    case Step::Scaled:
      s.title = "Scaled scores";
      s.plain = "The scores are multiplied by " + core::fixed_text(x.b.query_scale, 4) +
                (x.gemma ? " (query_pre_attn_scalar^−½)" : " (1 / √head_dim)") +
                ", which keeps softmax from turning rows one-hot.";
      s.formula = "ω_scaled = ω_masked · " + core::fixed_text(x.b.query_scale, 4);
      s.shapes = x.sym_of(id::masked_scores, x.h) + " → " + x.sym_of(id::scaled_scores, x.h);
      break;
    case Step::Softmax:
      s.title = "Attention weights";
      s.plain = "Softmax makes each row positive and sum to 1: how much of each token head " + x.H +
                " takes in.";
      s.formula = "weights = softmax(ω_scaled, row)";
      s.shapes = x.sym_of(id::scaled_scores, x.h) + " → " + x.sym_of(id::weights, x.h);
      break;
    case Step::Context:
      s.title = "Context vectors of head " + x.H;
      s.plain = "Each token's new row is the weighted sum of K/V head " + x.G + "'s value rows.";
      s.formula = "Z_h = weights · V_g";
      s.shapes = x.sym_of(id::weights, x.h) + " · " + x.sym_of(id::values, x.h) + " → " +
                 x.sym_of(id::context, x.h);
      break;
    default:
      break;
  }
  return s;
}

// The heads together, o_proj, the residual and the MLP half.
StepText describe_family_output(Step step, const FamilyStep& x) {
  StepText s;
  const std::string pre_mlp = x.gemma ? "pre_feedforward_layernorm" : "post_attention_layernorm";
  const core::Stage* hidden = x.find(id::mlp_hidden, -1);
  const std::string inner = hidden ? std::to_string(hidden->data().cols() / 2) : "?";
  const bool swiglu = x.b.recipe.mlp == core::MlpKind::SwiGlu;
  switch (step) {
    case Step::Concat:
      s.title = "The heads side by side";
      s.plain = std::to_string(x.b.heads) + " heads × " + std::to_string(x.b.head_dim) +
                " columns = " + std::to_string(x.b.heads * x.b.head_dim) + " columns" +
                (x.b.heads * x.b.head_dim != x.d
                     ? ", not the stream's " + std::to_string(x.d) + ": o_proj maps them back"
                     : std::string()) +
                ".";
      s.formula = "concat = [Z_0 | … | Z_" + std::to_string(x.b.heads - 1) + "]";
      s.shapes = x.sym_of(id::concat, -1);
      break;
    case Step::OutProj:
      s.title = "Output projection (o_proj)";
      s.plain = "A learned layer mixes the heads' columns into the stream's width.";
      s.formula = "output = concat · W_o";
      s.shapes = x.sym_of(id::concat, -1) + " → " + x.sym_of(id::output, -1);
      break;
    case Step::Residual:
      s.title = "Back into the residual stream";
      s.plain = x.gemma ? "Gemma 3 normalises attention's output (post_attention_layernorm) "
                          "before adding it to the block's input."
                        : "The block adds attention's output to its input (the shortcut).";
      s.formula = x.gemma ? "a = x + post_attention_layernorm(output)" : "a = x + output";
      s.shapes = x.sym_of(id::output, -1) + " → " + x.sym_of(id::attn_output, -1);
      break;
    case Step::LayerNorm2:
      s.title = "RMSNorm before the MLP (" + pre_mlp + ")";
      s.plain = x.gemma ? "Gemma 3's second norm of the block, on the residual after attention."
                        : "Despite its name, post_attention_layernorm is the norm the MLP reads: "
                          "it normalises the residual after attention.";
      s.formula = "a_n = " + rms_formula(x, "a");
      s.shapes = x.sym_of(id::attn_output, -1) + " → " + x.sym_of(id::ln_2, -1);
      break;
    case Step::MlpHidden:
      s.title = "gate_proj and up_proj: " + std::to_string(x.d) + " → 2 × " + inner;
      s.plain =
          "Two learned layers read each token: a gate and an up projection, side by side "
          "here (gate on the left).";
      s.formula = "[gate | up] = a_n · [W_gate | W_up]";
      s.shapes = x.sym_of(id::ln_2, -1) + " → " + sym(hidden, Wording::Model);
      break;
    case Step::Activation:
      s.title = swiglu ? "SwiGLU: silu(gate) · up" : "GeGLU: gelu(gate) · up";
      s.plain = std::string("The gate goes through ") + (swiglu ? "SiLU" : "GELU (tanh)") +
                " and then multiplies the up projection, column by column: the gate decides "
                "how much of each feature passes.";
      s.formula = swiglu ? "g = silu(gate) ⊙ up,  silu(z) = z · σ(z)" : "g = gelu_tanh(gate) ⊙ up";
      s.shapes = sym(hidden, Wording::Model) + " → " + x.sym_of(id::mlp_activation, -1);
      break;
    case Step::MlpOutput:
      s.title = "down_proj: " + inner + " → " + std::to_string(x.d);
      s.plain = x.gemma ? "down_proj brings each row back to the stream's width, and "
                          "post_feedforward_layernorm normalises it."
                        : "down_proj brings each row back to the stream's width.";
      s.formula = x.gemma ? "mlp = post_feedforward_layernorm(g · W_down)" : "mlp = g · W_down";
      s.shapes = x.sym_of(id::mlp_activation, -1) + " → " + x.sym_of(id::mlp_output, -1);
      break;
    case Step::BlockOutput:
      s.title = "The second shortcut: the block's output";
      s.plain = "The MLP's output is added to the residual after attention.";
      s.formula = "x' = a + mlp";
      s.shapes = x.sym_of(id::block_output, -1);
      break;
    case Step::FinalNorm:
      s.title = "The final RMSNorm (norm)";
      s.plain = "After the last block each row is RMS-normalised once more for lm_head.";
      s.formula = "norm(x) = " + rms_formula(x, "x");
      s.shapes = x.sym_of(id::block_output, -1) + " → " + sym(x.run(id::ln_f), Wording::Model);
      break;
    case Step::Logits:
      s.title = "Logits: a score for every token of the vocabulary";
      s.plain = std::string("lm_head") +
                (x.b.recipe.tied_embeddings ? " (tied: embed_tokens itself)" : "") +
                " turns the chosen token's normalised row into one score per token" +
                (x.gemma ? "; Gemma 3 may softcap them with tanh" : "") + ".";
      s.formula = "logits = norm(x)[i] · W_headᵀ";
      s.shapes =
          sym(x.run(id::ln_f), Wording::Model) + " row → " + sym(x.run(id::logits), Wording::Model);
      break;
    default:
      break;
  }
  return s;
}

}  // namespace

StepText describe_family_step(Step step, const core::Trace& t, int head) {
  const FamilyStep x = family_step(t, head);
  switch (step) {
    case Step::Inputs:
    case Step::LayerNorm:
    case Step::Projections:
    case Step::QkNorm:
    case Step::Rotate:
    case Step::KvGroups:
      return describe_family_input(step, x);
    case Step::Scores:
    case Step::Mask:
    case Step::WindowMask:
    case Step::Masked:
    case Step::Scaled:
    case Step::Softmax:
    case Step::Context:
      return describe_family_attention(step, x);
    case Step::Concat:
    case Step::OutProj:
    case Step::Residual:
    case Step::LayerNorm2:
    case Step::MlpHidden:
    case Step::Activation:
    case Step::MlpOutput:
    case Step::BlockOutput:
    case Step::FinalNorm:
    case Step::Logits:
      return describe_family_output(step, x);
    case Step::Memory:
    case Step::Latent:
    case Step::SplitHeads:
    case Step::Dropout:
      break;
  }
  StepText s;
  s.title = std::string(step_label(step));
  s.plain = "This model's block has no such step.";
  return s;
}
// stage-literals: on

}  // namespace attnscope::gui
