// model_predictions.cpp: what chapter 5 reads from a model run, in the
// model panel and a window of its own:
//   1. the loss of the typed text: its mean, the perplexity, and a strip of
//      each next token's cross-entropy under the chips;
//   2. Sampling: temperature, top-k and seed as the book's generate() takes
//      them, the distribution before and after, and Sample;
//   3. the Logit lens window: what each layer would predict after the
//      clicked token, and the top token of every layer x position.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "imgui.h"
#include "panels/panels.hpp"
#include "platform/fonts.hpp"
#include "render/colormap.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

void help(const char* text) {
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text);
}

ImU32 colour_of(const AppState& state, float t) {
  const Rgba8 c = sample(sequential_map(state.ui.palette), std::clamp(t, 0.0f, 1.0f));
  return IM_COL32(c.r, c.g, c.b, 255);
}

// A probability as a percentage with digits enough to tell small ones
// apart (0.0123 %, not 0.00 %).
std::string percent(double p) {
  char buf[32];
  const double pct = 100.0 * p;
  if (pct >= 1.0)
    std::snprintf(buf, sizeof buf, "%.1f %%", pct);
  else
    std::snprintf(buf, sizeof buf, "%.3g %%", pct);
  return buf;
}

// The overview, when it belongs to the text on screen (a refused or
// half-typed text leaves the last run's numbers, which name other tokens).
const ModelOverview* current_overview(const AppState& state) {
  const ModelState& m = state.model;
  if (!m.overview || !m.typed.error.empty()) return nullptr;
  return m.overview->ids == m.typed.ids() ? m.overview.get() : nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. Loss

void draw_text_loss(AppState& state) {
  const ModelOverview* o = current_overview(state);
  if (!o) return;
  const core::TextLoss& loss = o->loss;
  if (!loss.mean) {
    ImGui::TextDisabled("Loss: type a second token (one token has nothing to predict)");
    return;
  }
  // An untrained model's perplexity runs to 19 digits: from a million on, in powers of ten.
  char mean[32], perplexity[48];
  std::snprintf(mean, sizeof mean, "Loss %.3f", *loss.mean);
  std::snprintf(perplexity, sizeof perplexity,
                *loss.perplexity < 1e6 ? "perplexity %.1f" : "perplexity %.3g", *loss.perplexity);
  // One line where the column is wide enough, else two (a large UI scale).
  const std::string line = std::string(mean) + " · " + perplexity;
  ImGui::BeginGroup();  // the tooltip below is over both lines
  if (ImGui::CalcTextSize(line.c_str()).x <= ImGui::GetContentRegionAvail().x) {
    ImGui::TextUnformatted(line.c_str());
  } else {
    ImGui::TextUnformatted(mean);
    ImGui::TextUnformatted(perplexity);
  }
  ImGui::EndGroup();
  help(
      "The book's calc_loss_batch on this text: at each position the model predicts the next "
      "token; the loss is -log of the probability it gave the token that came, averaged over "
      "the text. Perplexity = e^loss: as unsure as a uniform choice among that many tokens.");
  // The strip: one cell per predicted token (1..T-1), coloured by its loss
  // on a scale up to ln(vocab), the loss of a uniform guess.
  const float width = ImGui::GetContentRegionAvail().x, height = ImGui::GetFrameHeight() * 0.6f;
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##loss_strip", ImVec2(std::max(width, 1.0f), height));
  const auto n = static_cast<int>(loss.per_token.size());
  const double top = std::log(static_cast<double>(o->last_logits ? o->last_logits->cols() : 50257));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float cell = width / static_cast<float>(n);
  for (int i = 0; i < n; ++i) {
    const float x0 = at.x + cell * static_cast<float>(i);
    const float x1 =
        std::max(x0 + 1.0f, at.x + cell * static_cast<float>(i + 1) - (cell > 4 ? 1 : 0));
    draw->AddRectFilled(
        ImVec2(x0, at.y), ImVec2(x1, at.y + height),
        colour_of(state, static_cast<float>(loss.per_token[static_cast<std::size_t>(i)] / top)));
  }
  if (ImGui::IsItemHovered()) {
    const int i = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - at.x) / cell), 0, n - 1);
    const double l = loss.per_token[static_cast<std::size_t>(i)];
    const auto& tokens = state.model.typed.tokens;
    const std::string next =
        static_cast<std::size_t>(i + 1) < tokens.size()
            ? drawable_text(core::printable_token(tokens[static_cast<std::size_t>(i + 1)].text))
            : "";
    ImGui::SetTooltip(
        "token %d \"%s\": loss %.3f, the model gave it p = %s after token %d\n"
        "(dark: expected; bright: surprising; a uniform guess scores ln %lld = %.2f)",
        i + 1, next.c_str(), l, percent(std::exp(-l)).c_str(), i,
        static_cast<long long>(o->last_logits ? o->last_logits->cols() : 0), top);
  }
}

// ---------------------------------------------------------------------------
// 2. Sampling

void draw_sampling(AppState& state) {
  ModelState& m = state.model;
  const ModelOverview* o = current_overview(state);
  if (!o || !o->last_logits || !m.is_open()) return;
  if (m.model) {  // the lens reads GPT-2's ln_f and head (core::logit_lens)
    if (ImGui::Button(m.lens_open ? "Logit lens (open)"
                                  : "What each layer predicts (logit lens)") &&
        !m.lens_open) {
      m.lens_open = true;
      state.mark_dirty();  // the grid is computed while the window is open
    }
    help(
        "Each block's output read through the final LayerNorm and the output head: where in "
        "the stack the answer forms");
  }
  SamplingState& s = m.sampling;
  ImGui::Spacing();
  ImGui::TextDisabled("Sampling (the book's generate)");
  ImGui::Separator();
  float temperature = static_cast<float>(s.settings.temperature);
  if (ImGui::SliderFloat("temperature", &temperature, 0.0f, 3.0f, "%.2f"))
    s.settings.temperature = std::max(0.0, static_cast<double>(temperature));
  help(
      "The logits are divided by this before the softmax. 0: greedy (always the most likely "
      "token). Above 1 the distribution flattens and rarer tokens get drawn; below 1 it "
      "sharpens.");
  const int vocab = static_cast<int>(o->last_logits->cols());
  int k = s.settings.top_k;
  if (ImGui::InputInt("top-k", &k, 1, 10)) s.settings.top_k = std::clamp(k, 0, vocab);
  help("Keep only the k largest logits (and any equal to the k-th); 0 keeps all");
  int seed = static_cast<int>(s.settings.seed);
  if (ImGui::InputInt("seed", &seed, 1, 100, ImGuiInputTextFlags_EnterReturnsTrue))
    s.settings.seed = static_cast<std::uint64_t>(std::max(seed, 0));
  help("torch.manual_seed(seed) before generate(): the same seed draws the same tokens");

  const core::Sampling& now = s.settings;
  if (!s.step || s.step_version != m.overview_version ||
      s.step_settings.temperature != now.temperature || s.step_settings.top_k != now.top_k) {
    s.step = core::sampling_step(*o->last_logits, now);
    s.step_version = m.overview_version;
    s.step_settings = now;
  }
  const core::SamplingStep& step = *s.step;
  if (now.top_k > 0)
    ImGui::TextDisabled("top-k keeps %d of %d tokens (logits ≥ %.3f)", step.kept, vocab,
                        static_cast<double>(step.cut));
  else
    ImGui::TextDisabled("no top-k cut: all %d tokens stay", vocab);
  if (ImGui::BeginTable("##sampling", 3,
                        ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) {
    ImGui::TableSetupColumn("after the last token");
    ImGui::TableSetupColumn("softmax");
    ImGui::TableSetupColumn(now.temperature > 0 ? "drawn from" : "greedy");
    ImGui::TableHeadersRow();
    for (const core::NextToken& t : o->next_last) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("\"%s\"", drawable_text(t.token).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(percent(step.before[static_cast<std::size_t>(t.id)]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(percent(step.after[static_cast<std::size_t>(t.id)]).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::BeginDisabled(state.computing());
  const bool continuing = s.sampler && s.after_text == m.typed.text;
  if (ImGui::Button("Sample")) state.sample_token();
  ImGui::EndDisabled();
  help(
      "Draw the next token from the 'drawn from' column, as torch.multinomial does, and add it "
      "to the text. Press again to go on: the draws are those of the book's generate() after "
      "torch.manual_seed(seed).");
  ImGui::SameLine();
  if (continuing)
    ImGui::TextDisabled("%d drawn since seed %llu", s.drawn,
                        static_cast<unsigned long long>(s.sampler->sampling().seed));
  else
    ImGui::TextDisabled("starts from seed %llu", static_cast<unsigned long long>(now.seed));
}

// ---------------------------------------------------------------------------
// 3. Logit lens

void draw_lens_window(AppState& state) {
  ModelState& m = state.model;
  if (!m.lens_open) return;
  const ImVec2 screen = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(std::min(screen.x * 0.9f, ImGui::GetFontSize() * 66),
                                  std::min(screen.y * 0.85f, ImGui::GetFontSize() * 40)),
                           ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(screen.x * 0.5f, screen.y * 0.5f), ImGuiCond_FirstUseEver,
                          ImVec2(0.5f, 0.5f));
  if (!ImGui::Begin("Logit lens", &m.lens_open)) {
    ImGui::End();
    return;
  }
  const ModelOverview* o = current_overview(state);
  if (!o || o->lens.layers.empty()) {
    ImGui::TextDisabled(m.model    ? "Waiting for the run of this text..."
                        : m.family ? "The logit lens reads GPT-2 models (and the book's GPTModel)."
                                   : "Open a model first.");
    ImGui::End();
    return;
  }
  const auto& tokens = m.typed.tokens;
  const int p = o->lens.position;
  const std::string at =
      static_cast<std::size_t>(p) < tokens.size()
          ? drawable_text(core::printable_token(tokens[static_cast<std::size_t>(p)].text))
          : "";
  ImGui::TextWrapped(
      "What the model would predict after token %d \"%s\" if it stopped after each block: the "
      "residual stream through the final LayerNorm and the output head. Click a token in the "
      "Text section to read another position.",
      p, at.c_str());
  const int L = static_cast<int>(o->lens.layers.size()) - 1;
  if (ImGui::BeginTable("##lens", 1 + kLensTop,
                        ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_RowBg |
                            ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("after", ImGuiTableColumnFlags_WidthFixed,
                            ImGui::CalcTextSize("block 99 (final)").x);
    for (int k = 0; k < kLensTop; ++k) ImGui::TableSetupColumn(k == 0 ? "top" : "");
    ImGui::TableHeadersRow();
    for (int l = 0; l <= L; ++l) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string name = core::lens_layer_name(l) + (l == L ? " (final)" : "");
      if (l == L)
        ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1.0f), "%s", name.c_str());
      else
        ImGui::TextUnformatted(name.c_str());
      for (const core::NextToken& t : o->lens.layers[static_cast<std::size_t>(l)]) {
        ImGui::TableNextColumn();
        ImGui::Text("\"%s\"", drawable_text(t.token).c_str());
        ImGui::SameLine();
        ImGui::TextDisabled("%s", percent(t.probability).c_str());
      }
    }
    ImGui::EndTable();
  }
  ImGui::Spacing();
  ImGui::TextDisabled("Top token of every layer at every position (brighter: more sure)");
  if (!o->grid) {
    ImGui::TextDisabled("computing...");
    ImGui::End();
    return;
  }
  const core::LensGrid& g = *o->grid;
  const float cell_w = ImGui::GetFontSize() * 5.0f, cell_h = ImGui::GetFrameHeight();
  const float label_w =
      ImGui::CalcTextSize(core::lens_layer_name(0).c_str()).x + ImGui::GetStyle().ItemSpacing.x;
  ImGui::BeginChild("##lens_grid", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(label_w + cell_w * static_cast<float>(g.positions),
                      cell_h * static_cast<float>(g.layers + 1)));
  for (int t = 0; t < g.positions; ++t) {  // the tokens read, along the top
    const std::string tok =
        static_cast<std::size_t>(t) < tokens.size()
            ? drawable_text(core::printable_token(tokens[static_cast<std::size_t>(t)].text))
            : "";
    const ImVec2 c(origin.x + label_w + cell_w * static_cast<float>(t), origin.y);
    draw->PushClipRect(c, ImVec2(c.x + cell_w - 2, c.y + cell_h), true);
    draw->AddText(ImVec2(c.x + 2, c.y + 2),
                  t == p ? IM_COL32(255, 215, 80, 255) : ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  tok.c_str());
    draw->PopClipRect();
  }
  for (int l = 0; l < g.layers; ++l) {
    const float y = origin.y + cell_h * static_cast<float>(l + 1);
    draw->AddText(ImVec2(origin.x, y + 2),
                  l + 1 == g.layers ? IM_COL32(255, 215, 80, 255)  // the model's own answer
                                    : ImGui::GetColorU32(ImGuiCol_Text),
                  core::lens_layer_name(l).c_str());
    for (int t = 0; t < g.positions; ++t) {
      const core::NextToken& n = g.at(l, t);
      const ImVec2 a(origin.x + label_w + cell_w * static_cast<float>(t), y);
      const ImVec2 b(a.x + cell_w - 2, a.y + cell_h - 2);
      const float sure = static_cast<float>(std::sqrt(n.probability));
      draw->AddRectFilled(a, b, colour_of(state, sure));
      draw->PushClipRect(a, b, true);
      draw->AddText(ImVec2(a.x + 2, a.y + 2),
                    sure > 0.6f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255),
                    drawable_text(n.token).c_str());
      draw->PopClipRect();
      if (ImGui::IsMouseHoveringRect(a, b))
        ImGui::SetTooltip("after token %d, %s: \"%s\" %s", t, core::lens_layer_name(l).c_str(),
                          drawable_text(n.token).c_str(), percent(n.probability).c_str());
    }
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace attnscope::gui
