// controls_panel.cpp: the model's knobs. Every edit goes to state.config and
// marks the state dirty; the frame's recompute point does the rest.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

#include "imgui_internal.h"  // TempInputIsActive: is a slider's Ctrl+click text field open
#include "imgui_stdlib.h"    // InputText on a std::string (needs imgui.h first)
#include "panels/panels.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

// One line on what the variant adds over the previous one.
const char* variant_blurb(core::Variant v) {
  switch (v) {
    case core::Variant::Simple:
      return "No trainable weights: scores are dot products of the inputs.";
    case core::Variant::SelfAttentionV1:
      return "Adds W_query, W_key, W_value (torch.rand) and scaling.";
    case core::Variant::SelfAttentionV2:
      return "The same with nn.Linear layers.";
    case core::Variant::Causal:
      return "Adds the causal mask and dropout.";
    case core::Variant::MultiheadWrapper:
      return "Several CausalAttention heads, outputs side by side.";
    case core::Variant::Multihead:
      return "One projection split into heads, then out_proj.";
    case core::Variant::GroupedQuery:
      return "After chapter 3: query heads share fewer K/V heads (num_kv_groups).";
    case core::Variant::SlidingWindow:
      return "After chapter 3: each token sees only the last `window` tokens.";
    case core::Variant::Latent:
      return "After chapter 3: K and V are rebuilt from a small latent.";
    case core::Variant::Cross:
      return "Queries from one sentence, keys and values from another: no mask.";
  }
  return "";
}

void error_line(const AppState& state, std::string_view field) {
  if (!state.error.starts_with(field)) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
  text_wrapped(state, state.error + ". The last good result stays on screen.");
  ImGui::PopStyleColor();
}

// "1, 2, 3 or 6": the head counts d_out can be split into.
std::string divisors_text(int n) {
  std::string s;
  std::vector<int> d;
  for (int k = 1; k <= n && k <= core::kMaxHeads; ++k)
    if (n % k == 0) d.push_back(k);
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0) s += i + 1 == d.size() ? " or " : ", ";
    s += std::to_string(d[i]);
  }
  return s;
}

// How a slider was edited this frame.
enum class SliderEdit {
  None,     // not at all, or its Ctrl+click text field is still being typed in
  Dragged,  // dragged or clicked: applies at once
  Typed,    // a typed value, confirmed with Enter or by leaving the field
};

// A slider whose typed value (Ctrl+click) counts only once it is confirmed.
// ImGui 1.86 writes the text into the value on every keystroke, so typing
// 5000 would run d_out = 5, 50 and 500 on the way; here `value` is left
// alone until Enter (or focus loss), while dragging still applies at once.
// Escape puts the old value back and changes nothing.
// A click on a widget drawn before the slider in the same frame (the menu
// bar, the variant list) takes the focus before the field can apply its
// text: the value it last read is kept in UiState and applied then.
template <class T, class Draw>
SliderEdit edit_slider(UiState& ui, const char* label, T& value, Draw draw) {
  const bool was_typing = ImGui::TempInputIsActive(ImGui::GetID(label));
  if (!was_typing && ui.typing_slider == label) {  // the focus went elsewhere first
    ui.typing_slider.clear();
    const T typed = static_cast<T>(ui.typing_value);
    draw(label, &value);  // drawn, but the typed value wins
    if (typed == value) return SliderEdit::None;
    value = typed;
    return SliderEdit::Typed;
  }
  T shown = value;  // the text field keeps its own text while it is open
  const bool changed = draw(label, &shown);
  if (ImGui::TempInputIsActive(ImGui::GetItemID())) {
    ui.typing_slider = label;
    ui.typing_value = static_cast<double>(shown);
    return SliderEdit::None;
  }
  if (ui.typing_slider == label) ui.typing_slider.clear();  // applied, or Esc
  if (!changed || shown == value) return SliderEdit::None;
  value = shown;
  return was_typing ? SliderEdit::Typed : SliderEdit::Dragged;
}

// A typed value is checked before it goes in: one the model cannot run
// with (d_out 5000) is refused, so the previous value and run stay on
// screen and the panel says why under the control. Returns true when
// `trial` may replace the config.
bool accept_typed(AppState& state, const core::Config& trial, std::string_view field,
                  const std::string& old_value) {
  const std::string problem = core::validate(trial, state.inputs);
  if (problem.starts_with(field)) {
    state.ui.typed_refusal = problem + ": the typed value was not applied, " + std::string(field) +
                             " stays " + old_value + ".";
    return false;
  }
  state.ui.typed_refusal.clear();
  return true;
}

void refusal_line(const AppState& state, std::string_view field) {
  if (!state.ui.typed_refusal.starts_with(field)) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.3f, 1.0f));
  text_wrapped(state, state.ui.typed_refusal);
  ImGui::PopStyleColor();
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Variant, named as the book names it, and what it adds.
void draw_variant_combo(AppState& state) {
  core::Config& c = state.config;
  if (ImGui::BeginCombo("variant", std::string(core::variant_book_name(c.variant)).c_str())) {
    for (core::Variant v : core::kAllVariants) {
      const std::string label =
          std::string(core::variant_book_name(v)) + "  (" + std::string(core::variant_id(v)) + ")";
      if (ImGui::Selectable(label.c_str(), v == c.variant) && v != c.variant) {
        c.num_heads = core::heads_after_switch(c.variant, v, c.num_heads, c.d_out);
        c.variant = v;
        state.ui.heads_refusal.clear();
        state.ui.typed_refusal.clear();
        state.mark_dirty();
      }
    }
    ImGui::EndCombo();
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", variant_blurb(c.variant));
  ImGui::PopStyleColor();
}

// d_out: the projections' width (the variants with weights).
void draw_d_out_slider(AppState& state) {
  core::Config& c = state.config;
  const bool weights = core::has_weights(c.variant);
  ImGui::BeginDisabled(!weights);
  int d_out = c.d_out;
  const SliderEdit d_edit = edit_slider(state.ui, "d_out", d_out, [](const char* l, int* v) {
    return ImGui::SliderInt(l, v, 1, 16, "%d", ImGuiSliderFlags_None);
  });
  if (d_edit != SliderEdit::None) {
    core::Config trial = c;
    trial.d_out = d_out;
    if (d_edit == SliderEdit::Dragged ||
        accept_typed(state, trial, "d_out", std::to_string(c.d_out))) {
      c.d_out = d_out;
      state.ui.heads_refusal.clear();
      state.ui.typed_refusal.clear();
      state.mark_dirty();
    }
  }
  if (!weights && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Simplified self-attention has no weights: its output keeps d_in columns.");
  ImGui::EndDisabled();
  refusal_line(state, "d_out");
  error_line(state, "d_out");
}

// heads: refused when they cannot split d_out evenly (MultiHeadAttention).
void draw_heads_slider(AppState& state) {
  core::Config& c = state.config;
  const bool heads = core::has_heads(c.variant);
  const bool split = core::split_heads(c.variant);
  ImGui::BeginDisabled(!heads);
  int h = c.num_heads;
  const int max_heads = split ? std::clamp(c.d_out, 1, 16) : 8;
  const SliderEdit h_edit = edit_slider(state.ui, "heads", h, [&](const char* l, int* v) {
    return ImGui::SliderInt(l, v, 1, std::max(max_heads, 2), "%d");
  });
  core::Config h_trial = c;
  h_trial.num_heads = h;
  if (h_edit == SliderEdit::Typed &&
      !accept_typed(state, h_trial, "num_heads", std::to_string(c.num_heads))) {
    // refused: out of range; the message is under the slider
  } else if (h_edit != SliderEdit::None) {
    if (split && h > 0 && c.d_out % h != 0) {
      // Refuse: each head must own d_out / num_heads whole columns.
      state.ui.heads_refusal = std::to_string(h) +
                               " heads cannot split d_out = " + std::to_string(c.d_out) +
                               " evenly: each head gets d_out / heads whole columns. Try " +
                               divisors_text(c.d_out) + ".";
    } else {
      c.num_heads = h;
      state.ui.heads_refusal.clear();
      state.ui.typed_refusal.clear();
      state.mark_dirty();
    }
  }
  if (!heads && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Only MultiHeadAttentionWrapper and MultiHeadAttention have heads.");
  ImGui::EndDisabled();
  if (!state.ui.heads_refusal.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.3f, 1.0f));
    text_wrapped(state, state.ui.heads_refusal);
    ImGui::PopStyleColor();
  }
  refusal_line(state, "num_heads");
  error_line(state, "num_heads");
  if (split && c.num_heads > 0 && c.d_out % c.num_heads == 0)
    ImGui::TextDisabled("head_dim = d_out / heads = %d", c.d_out / c.num_heads);
  else if (c.variant == core::Variant::MultiheadWrapper)
    ImGui::TextDisabled("output width = heads × d_out = %d", c.num_heads * c.d_out);
}

// dropout: the probability on the attention weights (causal variants).
void draw_dropout_slider(AppState& state) {
  core::Config& c = state.config;
  const bool causal = core::has_dropout(c.variant);
  ImGui::BeginDisabled(!causal);
  double p = c.dropout;
  const SliderEdit p_edit = edit_slider(state.ui, "dropout", p, [](const char* l, double* v) {
    const double lo = 0.0, hi = 1.0;
    return ImGui::SliderScalar(l, ImGuiDataType_Double, v, &lo, &hi, "%.2f");
  });
  if (p_edit != SliderEdit::None) {
    core::Config trial = c;
    trial.dropout = p;
    if (p_edit == SliderEdit::Dragged ||
        accept_typed(state, trial, "dropout", number_text(c.dropout))) {
      c.dropout = p;
      state.ui.typed_refusal.clear();
      state.mark_dirty();
    }
  }
  if (!causal && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Dropout on the weights arrives with CausalAttention.");
  ImGui::EndDisabled();
  refusal_line(state, "dropout");
  error_line(state, "dropout");
}

// training/eval and qkv_bias.
void draw_mode_and_bias(AppState& state) {
  core::Config& c = state.config;
  const bool weights = core::has_weights(c.variant);
  const bool causal = core::has_dropout(c.variant);
  // training/eval only switch dropout, which the non-causal variants do not have.
  const char* no_dropout =
      "training and eval differ only in dropout, which arrives with CausalAttention: "
      "this variant has none, so both give the same result.";
  ImGui::BeginDisabled(!causal);
  if (ImGui::RadioButton("training", c.training)) {
    c.training = true;
    state.mark_dirty();
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", causal ? "model.train(): nn.Dropout zeroes weights with probability "
                                     "dropout and scales the rest by 1 / (1 - dropout)"
                                   : no_dropout);
  ImGui::SameLine();
  if (ImGui::RadioButton("eval", !c.training)) {
    c.training = false;
    state.mark_dirty();
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", causal ? "model.eval(): nn.Dropout passes the weights through unchanged"
                                   : no_dropout);
  ImGui::EndDisabled();

  const bool bias_matters = weights && c.variant != core::Variant::SelfAttentionV1;
  ImGui::BeginDisabled(!bias_matters);
  if (ImGui::Checkbox("qkv_bias", &c.qkv_bias)) state.mark_dirty();
  if (!bias_matters && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Only the nn.Linear variants (SelfAttention_v2 and later) have a bias.");
  ImGui::EndDisabled();
}

// Seed: type it, step it with -/+, or roll one.
void draw_seed(AppState& state) {
  core::Config& c = state.config;
  const bool weights = core::has_weights(c.variant);
  const bool causal = core::is_causal(c.variant);
  ImGui::BeginDisabled(!weights && !causal);
  const std::uint64_t one = 1, hundred = 100;
  const float roll_w = ImGui::CalcTextSize("Roll").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(ImGui::CalcItemWidth() - roll_w - ImGui::GetStyle().ItemSpacing.x);
  // A typed seed applies on Enter, as the sliders' typed values do (not
  // digit by digit, each a run); - and + apply at once.
  if (ImGui::InputScalar("##seed", ImGuiDataType_U64, &c.seed, &one, &hundred, "%llu",
                         ImGuiInputTextFlags_EnterReturnsTrue))
    state.mark_dirty();
  const bool seeded = weights || causal;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", seeded ? "torch.manual_seed(seed): type one and press Enter, or "
                                     "step it with - and + (Ctrl: by 100)"
                                   : "The seed draws the weights (and the dropout mask): "
                                     "simplified self-attention has neither, so it changes "
                                     "nothing.");
  ImGui::SameLine();
  if (ImGui::Button("Roll")) {
    std::random_device rd;
    c.seed = (static_cast<std::uint64_t>(rd()) << 32 | rd()) % 1000000;
    state.mark_dirty();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A random seed from 0 to 999999");
  ImGui::SameLine();
  ImGui::TextUnformatted("seed");
  ImGui::EndDisabled();
}

// One of the options after chapter 3 takes a new value: it applies when
// the engine accepts the run, and otherwise the engine's reason (which
// names the value and what would work) stays under the control.
void apply_option(AppState& state, const core::Config& trial, std::string_view field,
                  const std::string& old_value) {
  const std::string problem = core::validate(trial, state.inputs);
  if (problem.starts_with(field)) {
    state.ui.typed_refusal =
        problem + ": not applied, " + std::string(field) + " stays " + old_value + ".";
    return;
  }
  state.ui.typed_refusal.clear();
  state.config = trial;
  state.mark_dirty();
}

// num_kv_groups: K/V heads the query heads share (GroupedQueryAttention).
void draw_kv_groups_slider(AppState& state) {
  core::Config& c = state.config;
  int g = c.num_kv_groups;
  const SliderEdit e = edit_slider(state.ui, "groups", g, [&](const char* l, int* v) {
    return ImGui::SliderInt(l, v, 1, std::max(c.num_heads, 2), "%d");
  });
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "num_kv_groups: how many heads of keys and values the %d query heads "
        "share (1 = multi-query attention, %d = multi-head attention)",
        c.num_heads, c.num_heads);
  if (e != SliderEdit::None) {
    core::Config trial = c;
    trial.num_kv_groups = g;
    apply_option(state, trial, "num_kv_groups", std::to_string(c.num_kv_groups));
  }
  refusal_line(state, "num_kv_groups");
  if (c.num_kv_groups > 0 && c.num_heads % c.num_kv_groups == 0)
    ImGui::TextDisabled("%d query heads per K/V head", c.num_heads / c.num_kv_groups);
}

// sliding_window_size: the keys each query sees, itself included.
void draw_window_slider(AppState& state) {
  core::Config& c = state.config;
  const int T = static_cast<int>(state.inputs.embeddings.rows());
  int w = c.window.value_or(T);
  const SliderEdit e = edit_slider(state.ui, "window", w, [&](const char* l, int* v) {
    return ImGui::SliderInt(l, v, 1, std::max(T, 2), "%d");
  });
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("sliding_window_size: query i sees keys i - W + 1 ... i");
  if (e != SliderEdit::None) {
    core::Config trial = c;
    trial.window = w;
    apply_option(state, trial, "the sliding window",
                 c.window ? std::to_string(*c.window) : "unset");
  }
  refusal_line(state, "the sliding window");
  if (c.window && *c.window >= T) ImGui::TextDisabled("window >= %d tokens: plain causal", T);
}

// latent_dim: the width of the K/V latent (MultiHeadLatentAttention).
void draw_latent_slider(AppState& state) {
  core::Config& c = state.config;
  const int book = core::book_latent_dim(c.d_out);
  int l = c.latent_dim.value_or(book);
  const SliderEdit e = edit_slider(state.ui, "latent", l, [&](const char* lbl, int* v) {
    return ImGui::SliderInt(lbl, v, 1, std::max(64, book), "%d");
  });
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "latent_dim: the columns W_DKV squeezes each token into; the book's "
        "default is max(16, d_out // 8) = %d",
        book);
  if (e != SliderEdit::None) {
    core::Config trial = c;
    trial.latent_dim = l;
    apply_option(state, trial, "latent_dim", std::to_string(c.latent_dim.value_or(book)));
  }
  refusal_line(state, "latent_dim");
  if (!c.latent_dim || *c.latent_dim == book)
    ImGui::TextDisabled("the book's default, max(16, d_out // 8)");
}

// RoPE on the classes that take it, and its theta_base.
void draw_rope(AppState& state) {
  core::Config& c = state.config;
  bool rope = c.rope;
  if (ImGui::Checkbox("RoPE", &rope)) {
    core::Config trial = c;
    trial.rope = rope;
    apply_option(state, trial, "RoPE", c.rope ? "on" : "off");
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Rotate each head's queries and keys by their positions (llama3.py's "
        "apply_rope) before the scores");
  refusal_line(state, "RoPE");
  if (!c.rope) return;
  double theta = c.rope_theta;
  const SliderEdit e = edit_slider(state.ui, "theta", theta, [](const char* l, double* v) {
    const double lo = 1.0, hi = 1e6;
    return ImGui::SliderScalar(l, ImGuiDataType_Double, v, &lo, &hi, "%.0f",
                               ImGuiSliderFlags_Logarithmic);
  });
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "theta_base of compute_rope_params (10000 in the book; Llama 3 uses "
        "500000)");
  if (e != SliderEdit::None) {
    core::Config trial = c;
    trial.rope_theta = theta;
    apply_option(state, trial, "the RoPE theta", number_text(c.rope_theta));
  }
  refusal_line(state, "the RoPE theta");
}

// Cross-attention's second sentence: the keys and values come from it.
void draw_memory_text(AppState& state) {
  UiState& ui = state.ui;
  // The field follows the second sequence when it changes (a preset, a
  // session, an embedded sentence), not while the learner edits the text.
  if (ui.memory_shown != state.inputs.memory_tokens) {
    ui.memory_shown = state.inputs.memory_tokens;
    // GPT-2's tokens (" du", "ann") spell the text when put together; a
    // preset's words ("du") need spaces between them.
    const bool words = std::none_of(ui.memory_shown.begin(), ui.memory_shown.end(),
                                    [](const std::string& t) { return t.starts_with(' '); });
    ui.memory_text.clear();
    for (const std::string& t : ui.memory_shown) {
      if (words && !ui.memory_text.empty()) ui.memory_text += ' ';
      ui.memory_text += t;
    }
  }
  ImGui::TextUnformatted("keys and values from:");
  if (ImGui::InputTextWithHint("##memory", "a second sentence (Enter)", &ui.memory_text,
                               ImGuiInputTextFlags_EnterReturnsTrue))
    ui.memory_error = state.embed_memory_text(ui.memory_text);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Type the sentence the queries read from and press Enter; empty: the "
        "inputs themselves");
  if (!ui.memory_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.3f, 1.0f));
    text_wrapped(state, ui.memory_error + ". The second sequence stays as it was.");
    ImGui::PopStyleColor();
  } else if (state.inputs.memory.rows() == 0) {
    ImGui::TextDisabled("none given: keys and values come from the inputs");
  }
}

// The options of the classes after chapter 3, for the class chosen.
void draw_after_chapter3(AppState& state) {
  const core::Variant v = state.config.variant;
  if (v == core::Variant::GroupedQuery) draw_kv_groups_slider(state);
  if (v == core::Variant::SlidingWindow) draw_window_slider(state);
  if (v == core::Variant::Latent) draw_latent_slider(state);
  if (core::takes_rope(v)) draw_rope(state);
  if (v == core::Variant::Cross) draw_memory_text(state);
}

}  // namespace

void draw_controls_panel(AppState& state) {
  if (state.ui.font_heading) ImGui::PushFont(state.ui.font_heading);
  ImGui::TextUnformatted("Model");
  if (state.ui.font_heading) ImGui::PopFont();

  // Problems that belong to a control are shown next to it (below); only
  // the rest gets a line up here, so the controls do not jump around.
  const std::string& e = state.error;
  const bool placed = e.starts_with("d_out") || e.starts_with("num_heads") ||
                      e.starts_with("dropout") || e.starts_with("there are") ||
                      e.starts_with("embeddings") || e.starts_with("too many") ||  // not a stage id
                      e.starts_with("d_in");
  if (!e.empty() && !placed) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.42f, 0.42f, 1.0f));
    text_wrapped(state, "Cannot run this: " + e + ". The last good result stays on screen.");
    ImGui::PopStyleColor();
  }

  const float label_w = ImGui::CalcTextSize("dropout ").x + ImGui::GetStyle().ItemInnerSpacing.x;
  ImGui::PushItemWidth(-label_w);

  draw_variant_combo(state);
  draw_d_out_slider(state);
  draw_heads_slider(state);
  draw_dropout_slider(state);
  draw_mode_and_bias(state);
  draw_seed(state);
  draw_after_chapter3(state);
  ImGui::PopItemWidth();
  ImGui::Separator();
}

}  // namespace attnscope::gui
