// dropout_panel.cpp: the dropout lab: keep mask, the 1/(1−p) scale, row sums
// after dropout, train vs eval, the average over many seeds, the book's
// standalone example and the PyTorch platform caveat. Numbers: core/teach.hpp.
#include <algorithm>

#include "attnscope/analysis/inspect.hpp"
#include "attnscope/base/stages.hpp"
#include "teach/teach.hpp"
#include "widgets/widgets.hpp"

namespace attnscope::gui {

namespace {

// The PyTorch platform caveat, with the why in a tooltip.
void draw_dropout_caveat(AppState& state) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.4f, 1.0f));
  text_wrapped(state,
               "Your PyTorch may drop other cells than these: PyTorch installed with "
               "pip on an Intel or AMD Linux PC draws its random masks another way. "
               "These are the book's, as PyTorch on an Apple-silicon Mac or Debian's "
               "python3-torch draws them.");
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Why: pip's PyTorch for x86 Linux is built with Intel's maths library "
        "(MKL),\nwhich draws dropout's random numbers in another order: the same "
        "seed\ndrops other cells. Averages over many seeds behave the same.");
}

// Train/eval and p, and what they do to the weights (`v` is the view from
// before any change made here this frame).
void draw_dropout_controls(AppState& state, const core::DropoutView& v) {
  bool training = state.config.training;
  if (ImGui::Checkbox("training mode (uncheck: eval)", &training)) {
    state.config.training = training;
    state.mark_dirty();
  }
  ImGui::SameLine();
  float p = static_cast<float>(state.config.dropout);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::SliderFloat("p", &p, 0.0f, 1.0f, "%.2f")) {
    state.config.dropout = p;
    state.mark_dirty();
  }
  if (v.active)
    text_wrapped(state,
                 "Each weight is kept with probability 1 − p and then multiplied by 1/(1 − p) = "
                 "1/(1 − " +
                     num(static_cast<float>(v.p), 2) + ") = " + num(v.scale, 4) +
                     "; the rest become 0. So a row no longer sums to 1 (see the sums), but on "
                     "average each weight is what it was, and the next layer sees the same "
                     "scale in training and in use.");
  else
    text_wrapped(state,
                 "Dropout is inactive (eval mode or p = 0): the keep mask is all ones "
                 "and the weights pass through unchanged, as in a model in use.");
}

// Keep mask, weights before and after, side by side, and the row sums after.
void draw_dropout_masks(AppState& state, const core::Trace& t, const core::DropoutView& v, int h,
                        const ImVec2& box) {
  // A 0/1 mask: the sequential scale (the id picks it), not the signed one.
  teach_heatmap(state, "teach/drop/keep", core::stage_id::dropout_mask, h, v.keep,
                "keep mask (1 kept, 0 dropped)", box);
  ImGui::SameLine();
  if (const core::Stage* s = t.find(core::stage_id::weights, h))
    teach_heatmap(state, "teach/drop/w", s->id, h, s->data(), "weights before dropout", box);
  ImGui::SameLine();
  if (const core::Stage* s = t.find(core::stage_id::dropped_weights, h))
    teach_heatmap(state, "teach/drop/d", s->id, h, s->data(), "weights after dropout", box);
  std::string sums = "row sums after dropout:";
  for (std::size_t r = 0; r < v.row_sums_after.size() && r < 16; ++r)
    sums += "  " + t.tokens[r] + " " + num(v.row_sums_after[r], 3);
  text_wrapped(state, sums);
}

// The dropped weights averaged over many seeds, on demand, and how the
// largest gap to the weights shrinks.
void draw_dropout_average(AppState& state, const core::Trace& t, int h, float w,
                          const ImVec2& box) {
  TeachState& ts = state.teach;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  ImGui::SliderInt("seeds", &ts.average_seeds, 1, core::kDropoutAverageMaxSeeds);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::InputInt("first seed", &ts.average_first_seed))
    ts.average_first_seed = std::max(ts.average_first_seed, 0);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The average runs torch.manual_seed(s) for s = first .. first + n - 1.");
  const core::Stage* weights = t.find(core::stage_id::weights, h);
  const double pa = state.config.dropout;
  const bool trivial = pa <= 0.0 || pa >= 1.0;
  const bool fits = weights && weights->data().rows() <= core::kDropoutAverageMaxTokens;
  ImGui::BeginDisabled(!fits || trivial);
  if (ImGui::Button("Average the dropped weights over these seeds")) {
    ts.average = core::dropout_average(
        weights->data(), pa, static_cast<std::uint64_t>(ts.average_first_seed), ts.average_seeds);
    ts.average_trace_version = state.trace_version;
    ts.average_p = pa;
    ++ts.average_count;
  }
  ImGui::EndDisabled();
  if (!fits) ImGui::TextDisabled("(up to %d tokens)", core::kDropoutAverageMaxTokens);
  if (trivial)
    text_wrapped(state, pa <= 0.0
                            ? "With p = 0 nothing is dropped: every seed gives the weights "
                              "themselves, so the average is the weights from the first seed "
                              "on. Raise p to see the average converge."
                            : "With p = 1 everything is dropped: every seed gives zeros, so the "
                              "average is 0, not the weights (1/(1 − p) is undefined; PyTorch "
                              "returns zeros). Lower p to see the average converge.");
  if (!trivial && ts.average && ts.average_trace_version == state.trace_version) {
    const auto& a = *ts.average;
    const int last = ts.average_first_seed + static_cast<int>(a.max_error.size()) - 1;
    text_wrapped(state, "Seeds " + std::to_string(ts.average_first_seed) + ".." +
                            std::to_string(last) +
                            ", p = " + num(static_cast<float>(ts.average_p), 2) +
                            ": the mean of the dropped weights approaches the weights; the "
                            "largest gap fell from " +
                            num(a.max_error.front()) + " to " + num(a.max_error.back()) + ".");
    teach_heatmap(state, "teach/drop/avg" + std::to_string(ts.average_count),
                  core::stage_id::weights, h, a.mean, "mean over seeds", box);
    ImGui::SameLine();
    ImGui::PlotLines("##err", a.max_error.data(), static_cast<int>(a.max_error.size()), 0,
                     "largest |mean − weights| vs seeds", 0.0f, a.max_error.front(),
                     ImVec2(w * 1.5f, w * 0.6f));
  }
}

// The book's standalone example (§3.5.2), checked against the book.
void draw_dropout_book_example(AppState& state, const core::Trace& t) {
  text_wrapped(state,
               "The book's example (§3.5.2): torch.manual_seed(123), then nn.Dropout(0.5) "
               "on ones(6, 6) and on the causal weights of seed 789.");
  for (const core::BookMatrix& b : core::book_matrices())
    if (b.source == core::BookSource::DropoutOnes) {
      const auto m = core::book_value(b, &t);
      book_badge(b, core::check_book(b, &t));
      if (m)
        teach_heatmap(state, "teach/drop/ones", core::stage_id::dropped_weights, -1, *m,
                      "dropout(ones(6, 6)), seed 123", ImVec2(300, 260));
    }
  for (const core::BookMatrix& b : core::book_matrices())
    if (b.source == core::BookSource::DropoutWeights && core::book_applies(b, t)) {
      ImGui::SameLine();
      ImGui::BeginGroup();
      book_badge(b, core::check_book(b, &t));
      if (const auto m = core::book_value(b, &t))
        teach_heatmap(state, "teach/drop/bookw", core::stage_id::dropped_weights, -1, *m,
                      "dropout(causal weights), seed 123", ImVec2(300, 240));
      ImGui::EndGroup();
    }
}

}  // namespace

void draw_dropout_lab(AppState& state) {
  TeachState& ts = state.teach;
  if (!begin_learn_window(state.teach, "Dropout lab", &ts.show_dropout, ImVec2(940, 760)) ||
      !state.trace) {
    ImGui::End();
    return;
  }
  const core::Trace& t = *state.trace;
  // The platform caveat first: it decides whether the masks below are the
  // ones a learner's PyTorch draws.
  draw_dropout_caveat(state);
  const auto v = core::dropout_view(t, state.head);
  if (!v) {
    text_wrapped(state,
                 "Dropout belongs to the causal variants (CausalAttention and the two "
                 "multi-head modules). Pick one in the controls.");
  } else {
    draw_dropout_controls(state, *v);
    const float w = (ImGui::GetContentRegionAvail().x - 20) / 3.0f;
    const ImVec2 box(w, w * 0.85f);
    const int h = core::stage_head(t, state.head);
    draw_dropout_masks(state, t, *v, h, box);

    ImGui::Separator();
    draw_dropout_average(state, t, h, w, box);
  }

  ImGui::Separator();
  draw_dropout_book_example(state, t);
  ImGui::End();
}

}  // namespace attnscope::gui
